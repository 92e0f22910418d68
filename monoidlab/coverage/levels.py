"""Coverage by tree level: which compositions the test lengths need at each level, which the
training layout can show at each level, and how often the strings a run actually trains on
show them there.

A node's *level* is its height above the leaves (level 1 pairs two symbols). The level-free
coverage (:mod:`monoidlab.coverage.exact`) counts a composition as covered whatever the level; but a
tree model's operator takes, at level ℓ, its own outputs from level ℓ − 1, so a composition seen
only near the leaves is a different lesson from the same composition at the depth where test
strings need it. Training at lengths ≤ 40 reaches level 6 (with identity padding and random
offsets in a larger buffer, deeper); test lengths 257..500 need level 9.

* :func:`level_coverage`: exact supports per level (no sampling): ``needed[ℓ]`` over the test
  lengths (strings at offset 0), ``shown[ℓ]`` over the training layout (its offsets and
  padding). :meth:`LevelCoverage.targets` lists (level, left EC, right EC) for every needed
  composition at every level where training can show it: what a sampler must show.
* :meth:`LevelCoverage.sampled`: the same against composition counts of real training strings
  (:func:`~monoidlab.coverage.compositions.composition_counts` per level): per level the fewest
  occurrences of a needed composition and how many occur fewer than ``k`` times.

Example
-------
>>> import monoidlab as ml
>>> lc = level_coverage(ml.load_language("dyck-2"), range(1, 9), range(41, 61),
...                     padding="identity")
>>> lc.max_train_level, lc.max_test_level, int(lc.uncovered().sum())
(3, 6, 0)
>>> [r["level"] for r in lc.table()][:3]
[1, 2, 3]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from monoidlab._checks import check_count
from monoidlab.algebra.languages import as_language
from monoidlab.coverage.exact import check_exact_layouts, exact_coverage
from monoidlab.errors import InputError
from monoidlab.geometry import (
    LengthsLike,
    Offsets,
    OffsetsLike,
    Padding,
    length_array,
    range_text,
)
from monoidlab.sublanguage import Within

if TYPE_CHECKING:
    from monoidlab.algebra.automaton import Automaton

__all__ = ["LevelCoverage", "SampledLevels", "level_coverage"]


def _pad(a: np.ndarray, levels: int) -> np.ndarray:
    """``a`` (levels', M, M) with zero levels appended up to ``levels``."""
    if a.shape[0] >= levels:
        return a
    return np.concatenate([a, np.zeros((levels - a.shape[0], *a.shape[1:]), a.dtype)])


@dataclass
class SampledLevels:
    """A set of training strings against what the test lengths need, per level.

    ``rows``: one dict per training level ℓ (``targets``: needed compositions the layout can
    show at ℓ; ``min_count`` of them in the strings at ℓ; ``below_k``: how many occur fewer
    than ``k`` times there), plus ``level`` = ``"any"`` for the level-free count (every needed
    composition, anywhere in the trees). ``worst``: the needed compositions seen least at the
    deepest training level, with their EC words."""

    n_strings: int
    k: int
    rows: list[dict[str, Any]]
    worst: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"n_strings": self.n_strings, "k": self.k, "rows": self.rows,
                "worst": self.worst}

    def text(self) -> str:
        """A few lines for the terminal."""
        parts = [f"sampled coverage of {self.n_strings} training strings (needed compositions "
                 f"seen fewer than k = {self.k} times, per tree level):"]
        for r in self.rows:
            parts.append(f"  level {r['level']}: {r['targets']} needed and showable, fewest "
                         f"seen {r['min_count']}, {r['below_k']} below k")
        return "\n".join(parts)


@dataclass
class LevelCoverage:
    """Needed (test) and shown (training) compositions per tree level, exactly.

    ``needed[ℓ, x, y]``: some test string has a level-ℓ node with children of ECs x, y;
    ``shown[ℓ, x, y]``: some training string (in the training layout: offsets, padding) has
    one. Both are indexed by level (level 0, the leaves, is empty)."""

    language: str
    schedule: str
    padding: Padding
    offsets: Offsets
    train_lengths: np.ndarray
    test_lengths: np.ndarray
    needed: np.ndarray
    shown: np.ndarray
    words: list[str] = field(repr=False)

    def __repr__(self) -> str:
        """One line (never the arrays).

        >>> level_coverage("parity", range(1, 9), [30])
        LevelCoverage(parity, balanced schedule, train 1:8 vs test 30:30; 4 compositions needed, 0 uncovered, levels 1..3 at training, 1..5 at test)
        """
        return (f"LevelCoverage({self.language}, {self.schedule} schedule, train "
                f"{range_text(self.train_lengths)} vs test {range_text(self.test_lengths)}; "
                f"{int(self.needed_any().sum())} compositions needed, "
                f"{int(self.uncovered().sum())} uncovered, levels 1..{self.max_train_level} at "
                f"training, 1..{self.max_test_level} at test)")

    @property
    def max_train_level(self) -> int:
        levels = np.flatnonzero(self.shown.any(axis=(1, 2)))
        return int(levels.max()) if len(levels) else 0

    @property
    def max_test_level(self) -> int:
        levels = np.flatnonzero(self.needed.any(axis=(1, 2)))
        return int(levels.max()) if len(levels) else 0

    def needed_any(self) -> np.ndarray:
        """Needed at some level (the level-free set)."""
        return np.asarray(self.needed.any(axis=0))

    def shown_any(self) -> np.ndarray:
        return np.asarray(self.shown.any(axis=0))

    def uncovered(self) -> np.ndarray:
        """Needed somewhere, shown nowhere: the level-free gap (|M|, |M|) bool."""
        return self.needed_any() & ~self.shown_any()

    def targets(self) -> np.ndarray:
        """``(T, 3)`` rows ``(level, x, y)``: every needed composition at every training level
        where the layout can show it (what a covering sampler must show)."""
        need = self.needed_any()
        rows = [np.column_stack([np.full(len(xy), lev), xy])
                for lev in range(self.shown.shape[0])
                for xy in [np.argwhere(need & self.shown[lev])] if len(xy)]
        return np.concatenate(rows).astype(np.int64) if rows else np.zeros((0, 3), np.int64)

    def table(self) -> list[dict[str, Any]]:
        """One row per level: needed there, shown there, needed and shown there (the same
        lesson), and showable there of the compositions needed at any level."""
        levels = max(self.needed.shape[0], self.shown.shape[0])
        needed, shown = _pad(self.needed, levels), _pad(self.shown, levels)
        need_any = self.needed_any()
        return [{"level": lev, "needed": int(needed[lev].sum()), "shown": int(shown[lev].sum()),
                 "needed_and_shown": int((needed[lev] & shown[lev]).sum()),
                 "targets": int((need_any & shown[lev]).sum())}
                for lev in range(1, levels) if needed[lev].any() or shown[lev].any()]

    def sampled(self, counts: np.ndarray, n_strings: int, k: int = 1) -> SampledLevels:
        """Composition counts of training strings per level ``(levels, M, M)`` (e.g.
        ``composition_counts(m, tokens, lengths, offsets=..., per_level=True, padding=...)``)
        against this coverage: per training level, the targets there and how often each is
        seen; then the level-free row."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InputError(f"k: an integer >= 1, got {k!r}")
        n_strings = check_count(n_strings, "n_strings", minimum=0)
        counts = np.asarray(counts)
        M = self.shown.shape[1]
        if counts.ndim != 3 or counts.shape[1:] != (M, M) or (
                counts.size and not np.issubdtype(counts.dtype, np.number)):
            raise InputError(f"counts: per-level composition counts (levels, {M}, {M}) "
                             "(composition_counts(..., per_level=True)), got shape "
                             f"{counts.shape}")
        levels = max(counts.shape[0], self.shown.shape[0])
        counts, shown = _pad(counts, levels), _pad(self.shown, levels)
        need = self.needed_any()
        rows: list[dict[str, Any]] = []
        for lev in range(1, levels):
            t = need & shown[lev]
            if not t.any():
                continue
            c = counts[lev][t]
            rows.append({"level": lev, "targets": int(t.sum()), "min_count": int(c.min()),
                         "below_k": int((c < k).sum())})
        total = counts.sum(axis=0)[need]
        rows.append({"level": "any", "targets": int(need.sum()),
                     "min_count": int(total.min()) if total.size else 0,
                     "below_k": int((total < k).sum())})
        worst = []
        deep = self.max_train_level
        if deep:
            t = need & shown[deep]
            idx = np.argwhere(t)
            order = np.argsort(counts[deep][t], kind="stable")[:5]
            worst = [{"level": deep, "left": self.words[x], "right": self.words[y],
                      "count": int(counts[deep][x, y])} for x, y in idx[order]]
        return SampledLevels(int(n_strings), k, rows, worst)

    def summary(self) -> dict[str, Any]:
        return {"language": self.language, "schedule": self.schedule,
                "padding": self.padding.value, "offsets": str(self.offsets),
                "train_lengths": range_text(self.train_lengths),
                "test_lengths": range_text(self.test_lengths),
                "max_train_level": self.max_train_level, "max_test_level": self.max_test_level,
                "needed": int(self.needed_any().sum()),
                "uncovered": int(self.uncovered().sum()), "targets": len(self.targets()),
                "levels": self.table()}


def level_coverage(lang: Automaton | str, train_lengths: LengthsLike,
                   test_lengths: LengthsLike, *, schedule: str = "balanced",
                   padding: Padding | str = Padding.LEARNED, offsets: OffsetsLike = None,
                   within: Within = "auto", limits: bool = True) -> LevelCoverage:
    """The exact per-level coverage of a training layout against test lengths (strings at
    offset 0), for a schedule and padding. Supports do not depend on the string law, so they
    hold for every sampler (uniform is the fast one to compute them with).

    ``lang`` may be a suite name; ``limits=False`` lifts the work limits of
    :func:`~monoidlab.coverage.exact.exact_coverage` (checked on both ranges before any work)."""
    lang = as_language(lang)
    padding = Padding.parse(padding)
    offsets = Offsets.parse(offsets)
    if limits is True:  # both ranges before the first (a bad second one wastes no work)
        check_exact_layouts(schedule, train_lengths, offsets, 1, "train_lengths")
        check_exact_layouts(schedule, test_lengths, None, 1, "test_lengths")
    test = exact_coverage(lang, test_lengths, schedule=schedule, sampler="uniform",
                          within=within, padding=padding, per_level=True, limits=limits)
    train = exact_coverage(lang, train_lengths, schedule=schedule, sampler="uniform",
                           within=within, offsets=offsets, padding=padding, per_level=True,
                           limits=limits)
    assert test.level_support is not None and train.level_support is not None
    return LevelCoverage(lang.name, schedule, padding, offsets, length_array(train_lengths),
                         length_array(test_lengths), test.level_support, train.level_support,
                         lang.monoid().labels())
