"""Test kinds: the strings an evaluation scores, three kinds per length of a language, all drawn
exactly from the automaton (tasks without one have a single kind, ``task``).

``paper``
    The papers' protocol, kept for comparison: for a recogniser half uniform members and half
    uniform strings (labels recomputed), for other languages an equal share of every class.
    It is easy: uniform strings of a Dyck language are rejected by any model that watches the
    first few symbols. (0.1.0 called this kind ``balanced``, which is also a sampler's name.)
``near_miss``
    Strings one substitution or adjacent swap away from a string of another class
    (:mod:`monoidlab.strings.near_miss`), an equal share of every class that has them.
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
from typing import TYPE_CHECKING, Any

import numpy as np

from monoidlab._checks import check_count, scalar_args
from monoidlab._suggest import did_you_mean
from monoidlab.errors import UnknownName
from monoidlab.strings.near_miss import NearMissTooLarge, near_miss_classes, near_misses
from monoidlab.strings.sampling import Batch, path_counts, sample
from monoidlab.sublanguage import Within, class_mask

__all__ = ["KINDS", "kind_batch", "classes_at", "check_kinds", "TaskKinds"]

KINDS = ("paper", "near_miss", "ec_stratified")
_WARNED: set = set()  # languages whose near misses were refused (warned once per process)


def check_kinds(kinds: Any) -> tuple[str, ...]:
    """``kinds`` as a tuple of known kind names (``"all"`` or None: every kind)."""
    if kinds is None or kinds == "all":
        return KINDS
    kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        hint = did_you_mean(bad[0], KINDS) if bad else ""
        if bad and bad[0] == "balanced":
            hint = " (the papers' protocol is the kind 'paper'; 'balanced' is a sampler)"
        raise UnknownName(f"unknown test kind(s) {bad or kinds}{hint}; kinds: "
                          f"{', '.join(KINDS)}")
    return kinds


def classes_at(lang: Any, L: int, within: Within = None) -> np.ndarray:
    """Indices of the classes (of the sub-language ``within``) that have strings of length L."""
    L = check_count(L, "L", minimum=0)
    keep = class_mask(lang, within)
    out = np.asarray(lang.output)
    C = path_counts(np.asarray(lang.delta, np.int64), np.where(keep[out], out, -1),
                    lang.n_classes, int(L))
    return np.flatnonzero(C[int(L), lang.start] > 0)


@scalar_args
def kind_batch(lang: Any, kind: str, L: int, n: int, rng: np.random.Generator,
               within: Within = None) -> Batch:
    """``n`` test strings of length ``L`` of one kind (a :class:`~monoidlab.strings.sampling.Batch`).

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
    # paper: the papers' protocol
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


class TaskKinds:
    """Test kinds of a problem without an automaton: one kind, ``task`` (its own sampler).
    A problem class mixes it in beside its ``name``, ``n_classes`` and ``batch``."""

    kinds: tuple[str, ...] = ("task",)

    if TYPE_CHECKING:  # provided by the problem class that mixes this in
        name: str
        n_classes: int

        def batch(self, rng: np.random.Generator, length: int, batch_size: int,
                  train: bool, step: int = 0) -> dict: ...

    def check_kinds(self, kinds: Any) -> tuple[str, ...]:
        if kinds is None or kinds == "all" or tuple(np.atleast_1d(kinds)) == ("task",):
            return self.kinds
        raise UnknownName(f"{self.name}: this task has one test kind, 'task' (the near-miss "
                          f"and EC-stratified kinds need an automaton); got {kinds!r}")

    def kind_batch(self, rng: np.random.Generator, length: int, n: int, kind: str) -> dict:
        return self.batch(rng, length, n, train=False)

    def eval_rng(self, seed: int, kind: str, length: int) -> np.random.Generator:
        return np.random.default_rng([seed, 7_777_777, int(length)])

    def n_classes_at(self, length: int) -> int:
        return self.n_classes  # no automaton: every length counts
