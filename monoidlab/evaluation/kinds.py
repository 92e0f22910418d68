"""Test kinds: the strings an evaluation scores, three kinds per length of a language, all drawn
exactly from the automaton (tasks without one have a single kind, ``task``).

Each kind is a :class:`KindSpec` of :data:`REGISTRY`: its name, the function that draws its
strings (``draw(lang, L, n, rng, within) -> Batch``), what its strings are and what they catch
(docs/evaluation.md's table is generated from these), and whether a regular task draws it too
(relabelled by the task). The order of the registry is the order of the test-set seeds: a new
kind goes last.

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
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from monoidlab._checks import check_count, scalar_args
from monoidlab._suggest import did_you_mean
from monoidlab.errors import UnknownName
from monoidlab.strings.near_miss import NearMissTooLarge, near_miss_classes, near_misses
from monoidlab.strings.sampling import Batch, path_counts, sample
from monoidlab.sublanguage import Within, class_mask

__all__ = ["KINDS", "TASK_KINDS", "kind_batch", "classes_at", "check_kinds", "TaskKinds", "KindSpec",
           "REGISTRY", "kind_table_markdown"]

_WARNED: set = set()  # languages whose near misses were refused (warned once per process)


@dataclass(frozen=True)
class KindSpec:
    """A test kind: ``draw(lang, L, n, rng, within)``, ``n`` strings of length ``L`` (an empty
    batch where the kind has none), ``strings`` and ``catches`` (its row of
    docs/evaluation.md), ``short`` (a few words, for the report) and ``tasks`` (a regular
    task whose strings a suite automaton labels draws it too)."""

    name: str
    draw: Callable[[Any, int, int, np.random.Generator, Within], Batch]
    strings: str
    catches: str
    short: str
    tasks: bool = True


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


def lengths_with_strings(lang: Any, lengths: Any, within: Within = None) -> np.ndarray:
    """The lengths of ``lengths`` (>= 1) at which the sub-language ``within`` has a string:
    the lengths a strict test scores (well-formed expressions have odd lengths only).

    >>> import monoidlab as ml
    >>> lengths_with_strings(ml.load_language("modular-arithmetic"), [1, 2, 3, 4], "auto")
    array([1, 3])
    """
    from monoidlab.geometry import length_array

    lens = length_array(lengths)
    keep = class_mask(lang, within)
    out = np.asarray(lang.output)
    C = path_counts(np.asarray(lang.delta, np.int64), np.where(keep[out], 0, -1), 1,
                    int(lens.max(initial=0)))
    return lens[(C[lens, lang.start, 0] > 0) & (lens >= 1)]


@scalar_args
def kind_batch(lang: Any, kind: str, L: int, n: int, rng: np.random.Generator,
               within: Within = None) -> Batch:
    """``n`` test strings of length ``L`` of one kind (a :class:`~monoidlab.strings.sampling.Batch`).

    A kind that has no string at ``L`` (no near miss exists) returns an empty batch.
    """
    check_kinds(kind)
    return REGISTRY[kind].draw(lang, int(L), int(n), rng, within)


# ------------------------------------------------------------------------ the kinds' draws
def draw_ec_stratified(lang: Any, L: int, n: int, rng: np.random.Generator,
                       within: Within) -> Batch:
    """Uniform over the ECs reachable at ``L``, then uniform inside the EC."""
    return sample(lang, [L], n, sampler="ec_stratified", seed=rng, within=within)


def draw_near_miss(lang: Any, L: int, n: int, rng: np.random.Generator,
                   within: Within) -> Batch:
    """One edit from a string of another class; empty where none exists (or, once said,
    where the language is too large for them)."""
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
            warnings.warn(f"near_miss test kind unavailable: {exc}", stacklevel=3)
        return empty
    return Batch(nm.tokens, np.full(n, L, np.int64), nm.labels, lang)


def draw_paper(lang: Any, L: int, n: int, rng: np.random.Generator, within: Within) -> Batch:
    """The papers' protocol: half uniform members and half uniform strings of a recogniser,
    an equal share of every class otherwise."""
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


# --------------------------------------------------------------------------- the registry
REGISTRY: dict[str, KindSpec] = {s.name: s for s in (
    KindSpec("paper", draw_paper,
             "the papers' protocol: for a recogniser half uniform members and half uniform "
             "strings; for other languages an equal share of every class",
             "kept for comparison with the papers (0.1.0 called this kind `balanced`, the name "
             "of a sampler, which keeps it)", "the papers' protocol",
             tasks=False),  # a task's own sampler (the kind `task`) is its papers' protocol
    KindSpec("near_miss", draw_near_miss,
             "one substitution or adjacent swap away from a string of another class: an equal "
             "share of every class that has them and, inside a class, of each edit type that "
             "reaches it; uniform over the (string, edit) pairs of a (class, edit type)",
             "models that accept \"almost\" members: shortcuts on a few positions; a swap keeps "
             "the symbol counts, so counting alone cannot pass", "one edit away from another class"),
    KindSpec("ec_stratified", draw_ec_stratified,
             "uniform over the equivalence classes (monoid elements) reachable at that length, "
             "then uniform inside the class",
             "rare ECs and rare compositions that uniform strings almost never show",
             "every reachable equivalence class equally"),
)}
#: The test kinds of a language, in the order of their test-set seeds (the registry's).
KINDS = tuple(REGISTRY)
#: The kinds a regular task draws too (after its own kind, ``task``).
TASK_KINDS = tuple(k for k, s in REGISTRY.items() if s.tasks)


def kinds_sentence() -> str:
    """The test kinds of a language in a few words (the report's note).

    >>> kinds_sentence()
    "three kinds of strings drawn exactly from the automaton (paper = the papers' protocol, near_miss = one edit away from another class, ec_stratified = every reachable equivalence class equally)"
    """
    words = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
    n = len(REGISTRY)
    return (f"{words[n] if n < len(words) else n} kinds of strings drawn exactly from the "
            "automaton (" + ", ".join(f"{k.name} = {k.short}" for k in REGISTRY.values()) + ")")


def kind_table_markdown() -> str:
    """docs/evaluation.md's table of test kinds, generated from the registry (a test keeps the
    page fresh).

    >>> kind_table_markdown().splitlines()[2].startswith("| `paper` |")
    True
    """
    lines = ["| kind | strings | what it catches |", "|---|---|---|"]
    lines += [f"| `{k.name}` | {k.strings} | {k.catches} |" for k in REGISTRY.values()]
    return "\n".join(lines)


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
