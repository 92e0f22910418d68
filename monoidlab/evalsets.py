"""Test strings that can fail a model: three kinds per length, all drawn exactly from the automaton.

``balanced``
    The papers' protocol, kept for comparison: for a recogniser half uniform members and half
    uniform strings (labels recomputed), for other languages an equal share of every class.
    It is easy: uniform strings of a Dyck language are rejected by any model that watches the
    first few symbols.
``near_miss``
    Strings one substitution or adjacent swap away from a string of another class
    (:mod:`monoidlab.near_miss`), an equal share of every class that has them.
``ec_stratified``
    Uniform over the equivalence classes (monoid elements) reachable at that length, then
    uniform inside the class: every composition the length can produce shows up.

A length at which the language (or sub-language) has strings of a single class only (odd
lengths of a Dyck language) cannot tell a model from a constant: :func:`classes_at` finds
them, and the evaluation reports them apart and never scores them.

Example
-------
>>> import numpy as np, monoidlab as ml
>>> lang = ml.load_language("dyck-4")
>>> b = kind_batch(lang, "near_miss", 12, 8, np.random.default_rng(0))
>>> sorted(set(b.labels.tolist())), b.tokens.shape
([0, 1], (8, 12))
>>> classes_at(lang, 13).tolist()   # odd: every string is rejected
[0]
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from monoidlab.errors import UnknownName
from monoidlab.near_miss import NearMissTooLarge, near_miss_classes, near_misses
from monoidlab.sampling import Batch, path_counts, sample
from monoidlab.sublanguage import Within, class_mask

__all__ = ["KINDS", "kind_batch", "classes_at", "check_kinds", "majority_baseline",
           "count_baseline"]

KINDS = ("balanced", "near_miss", "ec_stratified")
_WARNED: set = set()  # languages whose near misses were refused (warned once per process)


def check_kinds(kinds: Any) -> tuple[str, ...]:
    """``kinds`` as a tuple of known kind names (``"all"`` or None: every kind)."""
    if kinds is None or kinds == "all":
        return KINDS
    kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        raise UnknownName(f"unknown test kind(s) {bad or kinds}; kinds: {', '.join(KINDS)}")
    return kinds


def classes_at(lang: Any, L: int, within: Within = None) -> np.ndarray:
    """Indices of the classes (of the sub-language ``within``) that have strings of length L."""
    keep = class_mask(lang, within)
    out = np.asarray(lang.output)
    C = path_counts(np.asarray(lang.delta, np.int64), np.where(keep[out], out, -1),
                    lang.n_classes, int(L))
    return np.flatnonzero(C[int(L), lang.start] > 0)


def kind_batch(lang: Any, kind: str, L: int, n: int, rng: np.random.Generator,
               within: Within = None) -> Batch:
    """``n`` test strings of length ``L`` of one kind (a :class:`~monoidlab.sampling.Batch`).

    A kind that has no string at ``L`` (no near miss exists) returns an empty batch.
    """
    check_kinds(kind)
    L, n = int(L), int(n)
    if kind == "ec_stratified":
        return sample(lang, [L], n, sampler="ec_stratified", seed=rng, within=within)
    if kind == "near_miss":
        keep = class_mask(lang, within)
        empty = Batch(np.zeros((0, L), np.int64), np.zeros(0, np.int64),
                      np.zeros(0, np.int64), lang)
        try:
            if not len(near_miss_classes(lang, L, keep)):
                return empty
            nm = near_misses(rng, lang, L, n, keep)
        except NearMissTooLarge as exc:  # the kind is unavailable here, said once, not fatal
            if lang.name not in _WARNED:
                _WARNED.add(lang.name)
                warnings.warn(f"near_miss test kind unavailable: {exc}", stacklevel=2)
            return empty
        return Batch(nm.tokens, np.full(n, L, np.int64), nm.labels, lang)
    # balanced: the papers' protocol
    present = classes_at(lang, L, within)
    if lang.is_recogniser and 1 in present:
        members = sample(lang, [L], n - n // 2, sampler="balanced", seed=rng, within=within,
                         classes=["accept"])
        rest = sample(lang, [L], n // 2, sampler="uniform", seed=rng, within=within)
        both = Batch.concat([members, rest])
        order = rng.permutation(n)
        return both[order]
    sampler = "uniform" if lang.is_recogniser else "balanced"
    return sample(lang, [L], n, sampler=sampler, seed=rng, within=within)


def majority_baseline(labels: np.ndarray) -> float:
    """Accuracy of always answering the most frequent label of this test set.

    >>> majority_baseline(np.array([1, 0, 0, 0]))
    0.75
    """
    labels = np.asarray(labels)
    return float(np.bincount(labels).max() / len(labels)) if len(labels) else float("nan")


def count_baseline(tokens: np.ndarray, lengths: np.ndarray, labels: np.ndarray,
                   n_symbols: int) -> float:
    """Accuracy of the best *count-only* model on this test set: strings with equal symbol
    counts (and length) get the majority label of their group. No model that sees only the
    counts can do better on these strings (it is an upper bound for that family).

    >>> count_baseline(np.array([[0, 1], [1, 0], [1, 1]]), np.array([2, 2, 2]),
    ...                np.array([1, 0, 1]), 2)   # "01" and "10" share their counts
    0.6666666666666666
    """
    tokens, lengths, labels = np.asarray(tokens), np.asarray(lengths), np.asarray(labels)
    if not len(labels):
        return float("nan")
    valid = np.arange(tokens.shape[1])[None, :] < lengths[:, None]
    counts = np.stack([((tokens == a) & valid).sum(1) for a in range(n_symbols)], axis=1)
    keys = np.concatenate([lengths[:, None], counts], axis=1)
    _, group = np.unique(keys, axis=0, return_inverse=True)
    group = group.ravel()
    table = np.zeros((group.max() + 1, labels.max() + 1), np.int64)
    np.add.at(table, (group, labels), 1)
    return float(table.max(axis=1).sum() / len(labels))
