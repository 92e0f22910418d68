"""Which strings a certificate is about: every string, or a sub-language given by its classes.

A sub-language given by classes (training's ``within``: modular arithmetic's well-formed
expressions) is a union of ECs, so the certifiers track the same reachable pairs and check only
the roots whose EC (or language state) has a kept class: :func:`misread` is that check, shared
by the balanced, the prefix-scan and the automaton certificates.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["kept_classes", "misread"]


def kept_classes(lang: Any, within: Any) -> tuple[np.ndarray | None, tuple[str, ...] | None]:
    """``(mask over lang's classes, their names)`` that ``within`` keeps, or ``(None, None)``
    for every string (``within`` as :func:`~monoidlab.sublanguage.resolve_within` takes it).

    >>> import monoidlab as ml
    >>> kept_classes(ml.load_language("modular-arithmetic"), "auto")[1]
    ('0', '1', '2', '3', '4')
    """
    from monoidlab.sublanguage import class_mask, resolve_within

    names = resolve_within(lang, within)
    if names is None:
        return None, None
    return class_mask(lang, names), tuple(names)


def misread(head: np.ndarray, outs: np.ndarray, pairs: np.ndarray, M: int,
            kept: np.ndarray | None = None) -> np.ndarray:
    """Which root pairs ``code * M + EC`` the head reads as another class than their EC's,
    among those whose class ``kept`` marks (None: all).

    >>> misread(np.array([0, 1]), np.array([1, 1]), np.array([0, 1, 2, 3]), 2).tolist()
    [True, True, False, False]
    """
    truth = outs[pairs % M]
    bad = head[pairs // M] != truth
    return bad if kept is None else bad & kept[truth]
