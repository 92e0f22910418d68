"""Suggestions for a misspelt name: the closest known one first (``--stpes`` → ``steps``).

>>> did_you_mean("stpes", ["steps", "seed", "lr"])
" (did you mean 'steps'?)"
>>> did_you_mean("zzz", ["steps"]), closest_first("dyk-6", ["parity", "dyck-6", "dyck-8"])[:2]
('', ['dyck-6', 'dyck-8'])
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["did_you_mean", "closest_first"]


def did_you_mean(name: object, choices: Iterable[str]) -> str:
    """``" (did you mean 'X'?)"`` for the closest of ``choices`` to ``name``, else ``""``."""
    if not isinstance(name, str):
        return ""
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def closest_first(name: object, choices: Iterable[str]) -> list[str]:
    """``choices`` ordered by similarity to ``name`` (the most similar first)."""
    choices = list(choices)
    if not isinstance(name, str):
        return choices
    return sorted(choices, key=lambda c: -difflib.SequenceMatcher(None, name, c).ratio())
