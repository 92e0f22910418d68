"""Suggestions for a misspelt name: the closest known one first (``--stpes`` → ``steps``).

Every error that lists choices ends with :func:`known_choices`: the suggestion, then the
nearest few names (never the whole list when it is long; ``where`` says where all of them
are listed).

>>> did_you_mean("stpes", ["steps", "seed", "lr"])
" (did you mean 'steps'?)"
>>> did_you_mean("zzz", ["steps"]), closest_first("dyk-6", ["parity", "dyck-6", "dyck-8"])[:2]
('', ['dyck-6', 'dyck-8'])
>>> "unknown key 'stpes'" + known_choices("stpes", ["lr", "seed", "steps"], "known keys")
"unknown key 'stpes' (did you mean 'steps'?); known keys: steps, seed, lr"
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["did_you_mean", "closest_first", "known_choices", "SHOWN"]

#: How many names an error lists at most (the nearest first); a longer list hides the one
#: name that matters among dozens.
SHOWN = 8


def did_you_mean(name: object, choices: Iterable[str]) -> str:
    """``" (did you mean 'X'?)"`` for the closest of ``choices`` to ``name``, else ``""``."""
    best = _closest(name, choices)
    return f" (did you mean {best!r}?)" if best is not None else ""


def _closest(name: object, choices: Iterable[str]) -> str | None:
    if not isinstance(name, str):
        return None
    close = difflib.get_close_matches(name, sorted(set(choices)), n=1, cutoff=0.6)
    return close[0] if close else None


def closest_first(name: object, choices: Iterable[str]) -> list[str]:
    """``choices`` ordered by similarity to ``name`` (the most similar first; ties in the
    given order)."""
    choices = list(choices)
    if not isinstance(name, str):
        return choices
    return sorted(choices, key=lambda c: -difflib.SequenceMatcher(None, name, c).ratio())


def known_choices(name: object, choices: Iterable[str], label: str = "known",
                  where: str = "", limit: int = SHOWN) -> str:
    """The tail of an unknown-name error: ``" (did you mean 'X'?); LABEL: X, Y, ..."``.

    The suggestion comes first, then at most ``limit`` names nearest first (the suggestion
    among them); when some are left out, ``(N in all[: where])`` says how many and where
    they are listed.

    >>> known_choices("dyk-6", [f"dyck-{n}" for n in (1, 2, 3, 4, 6, 8, 12)] + ["parity"],
    ...               where="monoidlab languages", limit=3)
    " (did you mean 'dyck-6'?); known: dyck-6, dyck-1, dyck-2, ... (8 in all: monoidlab languages)"
    """
    names = sorted(set(choices))
    hint = did_you_mean(name, names)
    ordered = closest_first(name, names)
    best = _closest(name, names)
    if best is not None:  # the suggestion leads the list even where two names tie with it
        ordered = [best] + [c for c in ordered if c != best]
    if len(ordered) <= limit:
        return f"{hint}; {label}: {', '.join(ordered)}"
    rest = f"{len(names)} in all" + (f": {where}" if where else "")
    return f"{hint}; {label}: {', '.join(ordered[:limit])}, ... ({rest})"
