"""The one definition of ``within``: a sub-language given by the classes it keeps.

Samplers, exact coverage, the minimum training length, the trainer and the command line all
accept the same values:

* ``None`` or ``"none"``: every string (no restriction);
* ``"auto"``: the well-formed strings where the language has a class named ``incomplete``
  (modular arithmetic: expressions ``d (op d)*``), every string otherwise; the default of the
  command line and of training configs;
* ``"all-but:A,B"``: every class except A and B;
* ``"A,B"`` or ``["A", "B"]`` or ``"A"``: exactly these classes.

Example
-------
>>> import monoidlab as ml
>>> lang = ml.load_language("modular-arithmetic")
>>> resolve_within(lang, "auto")
['0', '1', '2', '3', '4']
>>> resolve_within(lang, "all-but:incomplete,0")
['1', '2', '3', '4']
>>> resolve_within(ml.load_language("parity"), "auto") is None
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from monoidlab.errors import UnknownName

__all__ = ["resolve_within", "class_mask", "INCOMPLETE", "Within"]

INCOMPLETE = "incomplete"  # the class name that "auto" leaves out

Within = str | Sequence[str] | None  # what a caller may pass


def resolve_within(lang: Any, within: Within) -> list[str] | None:
    """Class names of ``lang`` that ``within`` keeps, or None for no restriction.

    Unknown class names raise :class:`~monoidlab.errors.UnknownName` naming the language and
    its classes.
    """
    if within is None or within == "none":
        return None
    if within == "auto":
        if INCOMPLETE in lang.classes:
            return [c for c in lang.classes if c != INCOMPLETE]
        return None
    if isinstance(within, str):
        if within.startswith("all-but:"):
            drop = [c.strip() for c in within.split(":", 1)[1].split(",") if c.strip()]
            _check(lang, drop)
            return [c for c in lang.classes if c not in drop]
        names = [c.strip() for c in within.split(",") if c.strip()]
    else:
        names = [str(c) for c in within]
    if not names:
        raise UnknownName(f"{lang.name}: within: no class given; classes: {list(lang.classes)}")
    _check(lang, names)
    return names


def _check(lang: Any, names: Sequence[str]) -> None:
    bad = [c for c in names if c not in lang.classes]
    if bad:
        raise UnknownName(f"{lang.name}: within: unknown class(es) {bad}; classes: "
                          f"{list(lang.classes)}")


def class_mask(lang: Any, within: Within) -> np.ndarray:
    """Boolean mask over ``lang.classes``: True for the classes ``within`` keeps.

    >>> import monoidlab as ml
    >>> class_mask(ml.load_language("parity"), "1").tolist()
    [False, True]
    """
    names = resolve_within(lang, within)
    if names is None:
        return np.ones(lang.n_classes, bool)
    return np.isin(np.asarray(lang.classes, dtype=object), names)
