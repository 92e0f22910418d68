"""The config's vocabulary: the allowed values of its choice keys, its limits, and how a key
is declared (:func:`_key`: default, meaning, section), below both the schema
(:mod:`monoidlab.training.config`) and its checks (:mod:`monoidlab.training.config_checks`).

>>> "cosine" in LR_SCHEDULES, MAX_STEP_SYMBOLS == 2**24
(True, True)
"""

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Any

__all__ = ["MAX_STEP_SYMBOLS", "OPTIMIZERS", "RECIPES", "PROTOCOLS", "LR_SCHEDULES", "SECTIONS",
           "MAX_SEED", "FrozenDict"]

MAX_STEP_SYMBOLS = 2**24  # batch_size x longest training length: one step's tokens
OPTIMIZERS = ("adam", "adamw", "amsgrad", "amsgrad-optax")
RECIPES = ("default", "authors", "languages", "distilled")
PROTOCOLS = ("monoidlab", "paper")
LR_SCHEDULES = ("constant", "cosine")
SECTIONS = ("problem", "model", "data", "optimisation", "evaluation", "run")
MAX_SEED = 2**63 - 1


class FrozenDict(dict):
    """A read-only dict (a config's tables): reading works as for a dict, changing raises.

    >>> d = FrozenDict(a=1)
    >>> d["a"], d == {"a": 1}
    (1, True)
    >>> d["b"] = 2
    Traceback (most recent call last):
    ...
    TypeError: a config is frozen: use cfg.replace(...) for a changed copy
    """

    def _frozen(self, *a: Any, **k: Any) -> None:
        raise TypeError("a config is frozen: use cfg.replace(...) for a changed copy")

    __setitem__ = __delitem__ = _frozen
    clear = pop = popitem = setdefault = update = _frozen  # type: ignore[assignment]
    __ior__ = _frozen  # type: ignore[assignment]

    def __reduce__(self) -> tuple:
        return (FrozenDict, (dict(self),))

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items(), key=repr)))


def _key(default: Any = dataclasses.MISSING, meaning: str = "", section: str = "run") -> Any:
    """A config key: its default, its one-line meaning and its section, the single source of
    ``monoidlab train --help`` and of the key table of docs/training.md (:func:`~monoidlab.training.config_docs.config_keys`)."""
    assert section in SECTIONS, section
    return field(default=default, metadata={"meaning": meaning, "section": section})
