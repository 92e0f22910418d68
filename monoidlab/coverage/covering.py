"""The covering sampler: training strings built so that every composition the test lengths need
occurs at every tree level where the training layout can show it, each a fixed number of times
per window of strings.

What the coverage analysis prescribes (:mod:`monoidlab.coverage.levels`), as a sampler. For one
language, training lengths, test lengths, schedule, padding and offsets, :class:`CoveringPlan`
lists the *targets*: ``(level ℓ, left EC x, right EC y)`` for every composition (x, y) needed
by some test string and showable at level ℓ by some training string. Target i of a fixed,
seeded cycle is shown by covering string i, i + T, i + 2T, ... (T targets), so every window of
T consecutive covering strings shows each target once at its level: exactly, with no rejection
loop. A string is built around its target: a training length, an offset and a level-ℓ node of
the layout whose child spans can hold words of ECs x and y (reachability of the monoid's right
Cayley graph), then a word of EC x, a word of EC y (each uniform among the words of its EC and
length, by path counts), a prefix and a suffix (uniform among those that complete a string of
a class chosen uniformly among the feasible ones, and of the sub-language ``within``).

A language whose needed compositions cannot all occur within the training lengths is refused
with the compositions named (train longer, or add random offsets), unless
``allow_uncovered=True``: then the plan shows what the layout can show and lists the rest
(a training range below the support length, studied on purpose).

Example
-------
>>> import monoidlab as ml
>>> plan = CoveringPlan(ml.load_language("dyck-2"), range(1, 13), range(41, 61),
...                     padding="identity")
>>> b = plan.sample(2 * len(plan.targets), seed=0)
>>> bool((plan.shown_counts(b)[0] >= 2).all())   # every target twice at its level
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from monoidlab._checks import check_count, check_seed, read_only
from monoidlab._util import check_batch_workload, check_limits_flag, length_mask
from monoidlab.algebra.languages import as_language
from monoidlab.coverage.levels import LevelCoverage, level_coverage
from monoidlab.errors import InputError, MonoidTooLarge
from monoidlab.geometry import LengthsLike, Offsets, OffsetsLike, Padding, length_array, range_text
from monoidlab.laws import draw_walks, forward_laws
from monoidlab.strings.sampling import Batch, check_batch_language, path_counts
from monoidlab.strings.schedules import schedule as get_schedule
from monoidlab.sublanguage import Within, class_mask, resolve_within

if TYPE_CHECKING:
    from monoidlab.algebra.automaton import Automaton

__all__ = ["CoveringPlan", "CoveringBatch", "covering_sample", "MAX_TABLE", "CoveringRun",
           "covering_run", "covering_settings", "covering_per_step"]

#: Largest path-count table (lengths × ECs × ECs) the sampler holds (float32: 1 GiB).
MAX_TABLE = 2**28


@dataclass
class CoveringBatch(Batch):
    """A :class:`~monoidlab.strings.sampling.Batch` of covering strings, with the left ``offsets`` at
    which each must be placed (the layout that shows its target) and its ``targets`` (B, 3):
    ``(level, left EC, right EC)``."""

    offsets: np.ndarray = None  # type: ignore[assignment]
    targets: np.ndarray = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        """One line (never the arrays): language, strings, lengths, targets.

        >>> import monoidlab as ml
        >>> covering_sample(ml.load_language("parity"), range(1, 9), 12, test_lengths=[30],
        ...                 padding="identity", seed=1)
        CoveringBatch(parity: 12 strings of lengths 4..8, targets at levels 1..3)
        """
        name = getattr(self.automaton, "name", "?")
        if not len(self):
            return f"CoveringBatch({name}: 0 strings)"
        lens, levels = np.asarray(self.lengths), np.asarray(self.targets)[:, 0]
        return (f"CoveringBatch({name}: {len(self)} strings of lengths {lens.min()}..{lens.max()}"
                f", targets at levels {levels.min()}..{levels.max()})")


class CoveringPlan:
    """The targets of a training layout and how to build a string around each (see the module
    docstring). Build it once per run; :meth:`draw` is vectorised over a batch.

    ``lang``: an Automaton or a suite name; ``seed``: an integer 0 .. 2^63 - 1; ``limits=False``
    lifts the work limits (of the level coverage, and of :meth:`sample`)."""

    def __init__(self, lang: Automaton | str, train_lengths: LengthsLike,
                 test_lengths: LengthsLike, *, schedule: str = "balanced",
                 padding: Padding | str = Padding.LEARNED, offsets: OffsetsLike = None,
                 within: Within = "auto", seed: int = 0, coverage: LevelCoverage | None = None,
                 allow_uncovered: bool = False, limits: bool = True) -> None:
        lang = as_language(lang)
        seed = check_seed(seed, generator=False, none=False)
        if coverage is not None and not isinstance(coverage, LevelCoverage):
            raise InputError(f"coverage: a LevelCoverage (level_coverage(...)), got "
                             f"{type(coverage).__name__}")
        self.limits = check_limits_flag(limits)
        self.lang = lang
        self.schedule = schedule
        self.padding = Padding.parse(padding)
        self.offsets = Offsets.parse(offsets)
        self.train_lengths = length_array(train_lengths, "train_lengths")
        self.within = resolve_within(lang, within)
        self.coverage = coverage or level_coverage(
            lang, self.train_lengths, test_lengths, schedule=schedule, padding=self.padding,
            offsets=self.offsets, within=within, limits=limits)
        self.uncovered = int(self.coverage.uncovered().sum())
        if not allow_uncovered:
            self._refuse_uncovered()
        targets = self.coverage.targets()
        order = np.random.default_rng([int(seed), 0x636F76]).permutation(len(targets))
        self.targets = read_only(targets[order])  # the cycle: string i shows target i mod T
        self._rows = self._layout_rows()
        self._tables()

    def __repr__(self) -> str:
        """One line: the layout and how many targets it builds strings for.

        >>> import monoidlab as ml
        >>> CoveringPlan("parity", range(1, 9), [30], padding="identity")
        CoveringPlan(parity: balanced schedule, train 1:8, 12 targets, 0 uncovered)
        """
        return (f"CoveringPlan({self.lang.name}: {self.schedule} schedule, train "
                f"{range_text(self.train_lengths)}, {len(self.targets)} targets, "
                f"{self.uncovered} uncovered)")

    # ------------------------------------------------------------------ set-up
    def _refuse_uncovered(self) -> None:
        bad = np.argwhere(self.coverage.uncovered())
        if not len(bad):
            return
        words = self.coverage.words
        named = ", ".join(f"({words[x]}, {words[y]})" for x, y in bad[:5])
        raise InputError(
            f"{self.lang.name}: {len(bad)} composition(s) the test lengths "
            f"{range_text(self.coverage.test_lengths)} need cannot occur in training strings "
            f"of lengths {range_text(self.train_lengths)} ({self.schedule} schedule, "
            f"{self.padding.value} padding, offsets {self.offsets}): {named}"
            f"{' ...' if len(bad) > 5 else ''}; train on longer strings or at random offsets")

    def _layout_rows(self) -> dict[int, np.ndarray]:
        """Per level: rows ``(L, offset, m1, m2, prefix, suffix)`` of every composing node of
        the training layout (identity padding: both children hold string)."""
        identity = self.padding is Padding.IDENTITY
        per: dict[int, list[np.ndarray]] = {}
        for L in self.train_lengths[self.train_lengths >= 1]:
            for off in self.offsets.for_length(int(L)):
                s = get_schedule(self.schedule, int(L), int(off))
                if not s.n_nodes:
                    continue
                m1 = s.left_span[:, 1] - s.left_span[:, 0]
                m2 = s.right_span[:, 1] - s.right_span[:, 0]
                keep = ((m1 > 0) & (m2 > 0)) if identity else (m1 + m2) > 0
                start = np.where(m1 > 0, s.left_span[:, 0], s.right_span[:, 0])
                rows = np.stack([np.full(len(m1), L), np.full(len(m1), off), m1, m2, start,
                                 L - start - m1 - m2], axis=1)[keep]
                for lev in np.unique(s.level[keep]):
                    per.setdefault(int(lev), []).append(rows[s.level[keep] == lev])
        return {lev: np.concatenate(r).astype(np.int64) for lev, r in per.items()}

    def _tables(self) -> None:
        lang, monoid = self.lang, self.lang.monoid()
        L = int(self.train_lengths.max())
        M, n = monoid.size, lang.n_states
        if (L + 1) * M * M > MAX_TABLE:
            raise MonoidTooLarge(f"{lang.name}: the covering sampler holds a table of "
                                 f"{(L + 1) * M * M:.3g} path counts (lengths × ECs²), more than "
                                 f"{MAX_TABLE:.3g}")
        self._right = monoid.right
        self._reach = forward_laws(monoid.right, 0, L, indicator=True) > 0  # (L + 1, M)
        self._words = path_counts(monoid.right, np.arange(M), M, L).astype(np.float32)
        self._maps = np.asarray(monoid.elements, np.int64)  # f_m: state -> state
        self._delta = np.asarray(lang.delta, np.int64)
        keep = class_mask(lang, self.within)
        out = np.asarray(lang.output)
        self._ends = path_counts(self._delta, np.where(keep[out], out, -1), lang.n_classes, L)
        self._into = path_counts(self._delta, np.arange(n), n, L)  # prefixes into each state
        self._start = forward_laws(self._delta, lang.start, L)  # (L + 1, n) state laws
        self._classes = lang.n_classes

    # ------------------------------------------------------------------ drawing
    def draw(self, rng: np.random.Generator, index: np.ndarray) -> CoveringBatch:
        """The covering strings of global indices ``index`` (string i shows target i mod T)."""
        if not isinstance(rng, np.random.Generator):
            raise InputError(f"rng: a numpy Generator, got {type(rng).__name__}")
        index = np.asarray(index)
        if index.ndim != 1 or (index.size and (not np.issubdtype(index.dtype, np.integer)
                                               or index.dtype == bool or index.min() < 0)):
            raise InputError(f"index: non-negative integer indices (B,), got {index.dtype} of "
                             f"shape {index.shape}")
        index = index.astype(np.int64)
        T = len(self.targets)
        tg = self.targets[index % T] if T else np.zeros((0, 3), np.int64)
        n = len(tg)
        rows = np.zeros((n, 6), np.int64)
        for lev in np.unique(tg[:, 0]):
            sel = np.flatnonzero(tg[:, 0] == lev)
            rows[sel] = self._pick_rows(rng, int(lev), tg[sel, 1], tg[sel, 2])
        L, off, m1, m2, p, s = rows.T
        xy = monoid_product(self._maps, self.lang.monoid().table, tg[:, 1], tg[:, 2])
        q, c = self._prefix_state_and_class(rng, p, s, xy)
        prefix = draw_walks(rng, self._delta, self._into, self.lang.start, p, q)
        u = draw_walks(rng, self._right, self._words, 0, m1, tg[:, 1])
        v = draw_walks(rng, self._right, self._words, 0, m2, tg[:, 2])
        after = self._maps[xy, q]  # the state after prefix u v
        suffix = draw_walks(rng, self._delta, self._ends, after, s, c)
        tokens = np.zeros((n, int(L.max(initial=0))), np.int64)
        col = np.arange(tokens.shape[1])[None, :]
        for part, start, length in ((prefix, np.zeros_like(p), p), (u, p, m1),
                                    (v, p + m1, m2), (suffix, p + m1 + m2, s)):
            if not part.shape[1]:
                continue
            j = np.clip(col - start[:, None], 0, part.shape[1] - 1)
            here = (col >= start[:, None]) & (col < (start + length)[:, None])
            tokens = np.where(here, np.take_along_axis(part, j, axis=1), tokens)
        tokens[~length_mask(L, tokens.shape[1])] = 0
        labels = self.lang.classify(tokens, L)
        return CoveringBatch(tokens, L, labels, self.lang, offsets=off, targets=tg)

    def _pick_rows(self, rng: np.random.Generator, level: int, x: np.ndarray,
                   y: np.ndarray) -> np.ndarray:
        """A uniformly chosen layout row per target (level, x_j, y_j) whose children can hold
        words of ECs x_j and y_j (and, in a sub-language, that a prefix and a suffix can
        complete into a kept class)."""
        rows = self._rows[level]
        out = np.zeros((len(x), 6), np.int64)
        for a in range(0, len(x), 1024):  # (rows × strings) masks, a chunk at a time
            xs, ys = x[a: a + 1024], y[a: a + 1024]
            ok = self._reach[rows[:, 2]][:, xs] & self._reach[rows[:, 3]][:, ys]
            if self.within is not None:
                ok &= self._completes(rows, xs, ys)
            score = rng.random(ok.shape) * ok
            if not ok.any(axis=0).all():  # the level coverage said it is showable
                raise AssertionError("a covering target without a layout row")
            out[a: a + len(xs)] = rows[score.argmax(axis=0)]
        return out

    def _completes(self, rows: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """(rows, targets): some prefix state q (reachable in ``prefix`` letters) leads, after
        words of x and y, to a state from which ``suffix`` letters reach a kept class."""
        xy = monoid_product(self._maps, self.lang.monoid().table, x, y)
        fq = self._maps[xy]  # (targets, states)
        reach = self._start[rows[:, 4]] > 0  # (rows, states)
        ends = self._ends.max(axis=2) > 0  # (L + 1, states)
        good = ends[rows[:, 5][:, None, None], fq[None, :, :]]  # (rows, targets, states)
        return (good & reach[:, None, :]).any(axis=2)

    def _prefix_state_and_class(self, rng: np.random.Generator, p: np.ndarray, s: np.ndarray,
                                xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The state after the prefix and the class of the string: a class uniformly among the
        feasible ones, then the state in proportion to its prefixes times its completions."""
        fq = self._maps[xy]  # (B, states): where the node's words send each state
        w = self._start[p][:, :, None] * self._ends[s[:, None], fq, :]  # (B, states, classes)
        feasible = w.sum(axis=1) > 0  # (B, classes)
        pick = rng.random(feasible.shape) * feasible
        c = pick.argmax(axis=1)
        wq = w[np.arange(len(c)), :, c]
        cum = np.cumsum(wq, axis=1)
        q = (rng.random(len(c))[:, None] * cum[:, -1:] >= cum).sum(axis=1)
        return np.minimum(q, wq.shape[1] - 1), c

    def sample(self, n: int, seed: int | np.random.Generator | None = None,
               start: int = 0) -> CoveringBatch:
        """``n`` covering strings, indices ``start .. start + n - 1`` of the cycle (``n``
        within the work limits of the plan, see :func:`covering_sample`)."""
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
            raise InputError(f"n must be a non-negative integer, got {n!r}"[:200])
        seed = check_seed(seed)
        start = check_count(start, "start", minimum=0)
        check_batch_workload([int(self.train_lengths.max())], int(n), "train_lengths",
                             self.limits)
        return self.draw(np.random.default_rng(seed), np.arange(start, start + int(n)))

    # ------------------------------------------------------------------ checking
    def shown_counts(self, batch: CoveringBatch) -> tuple[np.ndarray, np.ndarray]:
        """``(counts per target, per-level composition counts)`` of a batch: how often each
        target (level, x, y) occurs at its level in the batch's trees (at their offsets)."""
        from monoidlab.coverage.compositions import composition_counts

        check_batch_language(batch, self.lang, "batch")
        if getattr(batch, "offsets", None) is None:
            raise InputError("batch: a CoveringBatch (plan.sample(...)): its strings' offsets "
                             "are needed")
        c = composition_counts(self.lang.monoid(), batch.tokens, batch.lengths, self.schedule,
                               batch.offsets, per_level=True, padding=self.padding)
        t = self.targets
        levels = c.shape[0]
        per = np.array([c[lev, x, y] if lev < levels else 0 for lev, x, y in t], np.int64)
        return per, c

    def summary(self) -> dict[str, Any]:
        return {**self.coverage.summary(), "targets": len(self.targets),
                "uncovered": self.uncovered,
                "targets_per_level": {int(lev): int((self.targets[:, 0] == lev).sum())
                                      for lev in np.unique(self.targets[:, 0])}}


def monoid_product(maps: np.ndarray, table: np.ndarray, x: np.ndarray, y: np.ndarray
                   ) -> np.ndarray:
    """EC of the words x·y (reading x then y), vectorised."""
    return table[np.asarray(x), np.asarray(y)]


def covering_sample(lang: Automaton | str, train_lengths: LengthsLike, n: int, *,
                    test_lengths: LengthsLike = range(41, 501), schedule: str = "balanced",
                    padding: Padding | str = Padding.LEARNED, offsets: OffsetsLike = None,
                    within: Within = "auto", seed: int = 0, start: int = 0,
                    limits: bool = True) -> CoveringBatch:
    """``n`` covering strings (see :class:`CoveringPlan`): with ``n >= k × len(targets)``,
    every target (level, x, y) occurs at least k times at its level.

    ``seed``: an integer 0 .. 2^63 - 1 (it seeds the plan's cycle and the strings).
    ``limits`` (default ``True``) refuses, before any work, more than ``MAX_STRINGS`` strings,
    more than ``MAX_BATCH_SYMBOLS`` symbols, and the level coverage beyond the limits of
    :func:`~monoidlab.coverage.exact.exact_coverage`; ``limits=False`` lifts them.

    >>> import monoidlab as ml
    >>> b = covering_sample(ml.load_language("parity"), range(1, 9), 12, test_lengths=[30],
    ...                     padding="identity", seed=1)
    >>> len(b), b.targets.shape
    (12, (12, 3))
    """
    seed = check_seed(seed, generator=False, none=False)
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
        raise InputError(f"n must be a non-negative integer, got {n!r}"[:200])
    check_batch_workload(train_lengths, int(n), "train_lengths", limits)
    plan = CoveringPlan(lang, train_lengths, test_lengths, schedule=schedule, padding=padding,
                        offsets=offsets, within=within, seed=seed, limits=limits)
    return plan.sample(n, seed=seed, start=start)


# ------------------------------------------------------------------ the sampler of a run
def covering_settings(value: Mapping | None) -> dict[str, Any]:
    """The covering sampler's settings (the run config's ``covering`` table) with their
    defaults: ``share`` in (0, 1], ``k`` >= 1, ``uncovered``: ``refuse`` (a needed composition
    the training lengths cannot show is an error) or ``skip`` (show what they can: a range
    below the support length, on purpose); ``too_large``: ``refuse`` (a plan the run's steps
    cannot show k times is an error) or ``near_miss`` (the run trains on near-miss strings
    instead, and says so).

    >>> covering_settings(None), covering_settings({"k": 3})["k"]
    ({'share': 0.5, 'k': 1, 'uncovered': 'refuse', 'too_large': 'refuse'}, 3)
    """
    out = {"share": 0.5, "k": 1, "uncovered": "refuse", "too_large": "refuse",
           **dict(value or {})}
    bad = sorted(set(out) - {"share", "k", "uncovered", "too_large"})
    if bad:
        raise InputError(f"unknown part {bad[0]!r}; parts: share, k, uncovered, too_large")
    if out["uncovered"] not in ("refuse", "skip"):
        raise InputError(f"uncovered must be refuse or skip, got {out['uncovered']!r}")
    if out["too_large"] not in ("refuse", "near_miss"):
        raise InputError(f"too_large must be refuse or near_miss, got {out['too_large']!r}")
    share, k = out["share"], out["k"]
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
        raise InputError(f"share must lie in (0, 1], got {share!r}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InputError(f"k must be an integer >= 1, got {k!r}")
    return {"share": float(share), "k": k, "uncovered": out["uncovered"],
            "too_large": out["too_large"]}


def covering_per_step(share: float, batch_size: int) -> int:
    """Covering strings in each training batch: ``share`` of it, at least one.

    >>> covering_per_step(0.5, 64), covering_per_step(0.001, 64), covering_per_step(1.0, 8)
    (32, 1, 8)
    """
    return min(batch_size, max(1, int(round(share * batch_size))))


class CoveringRun:
    """The covering sampler of one run (a :class:`~monoidlab.strings.samplers.RunPlan`):
    its ``plan`` and the ``share`` of each batch it fills, or, when the run's steps cannot show
    the plan and its config says ``too_large = "near_miss"``, the ``fallback`` that says why
    the run trains on near-miss strings instead."""

    def __init__(self, plan: CoveringPlan | None, share: float, fallback: str | None = None
                 ) -> None:
        self.plan, self.share, self.fallback = plan, float(share), fallback

    def batch(self, problem: Any, rng: np.random.Generator, length: int, batch_size: int,
              step: int) -> dict:
        """Covering strings i = step·n .. step·n + n − 1 of the plan's cycle (n = share ×
        batch), each at the offset that shows its target, then near-miss strings of
        ``length`` (at random offsets when the run has them): the cycle advances with the
        step, so a run shows every target once per cycle, whatever its batches' lengths."""
        from monoidlab.strings.sampling import sample

        assert self.plan is not None, "a fallen-back run draws its stand-in sampler"
        n = covering_per_step(self.share, batch_size)
        c = self.plan.draw(rng, step * n + np.arange(n))
        rest = sample(problem.language, [length], batch_size - n, sampler="near_miss", seed=rng,
                      within=problem.within, mix=problem.mix)
        T = max(c.tokens.shape[1], rest.tokens.shape[1])
        tokens = np.concatenate([np.pad(c.tokens, ((0, 0), (0, T - c.tokens.shape[1]))),
                                 np.pad(rest.tokens, ((0, 0), (0, T - rest.tokens.shape[1])))])
        out = {"tokens": tokens, "lengths": np.concatenate([c.lengths, rest.lengths]),
               "targets": np.concatenate([c.labels, rest.labels])}
        if not problem.offsets.none:
            more = rng.choice(problem.offsets.for_length(length), size=len(rest))
            out["offsets"] = np.concatenate([c.offsets, more])
        elif c.offsets.any():  # a layout without offsets places every string at 0
            raise AssertionError("covering strings off offset 0 in a run without offsets")
        return out

    def floor(self, counts: np.ndarray, steps: int, batch_size: int) -> np.ndarray:
        """``counts`` (levels, |M|, |M|) raised to what the plan shows over ALL ``steps``:
        covering string i shows target i mod T at its level, ``share`` of each batch, so
        target t is shown at least ⌊N/T⌋ (+1 when t < N mod T) times in N = steps × n strings.
        The first batches show only the first targets of the cycle: counting those alone
        would call targets unseen that the run's later steps show."""
        assert self.plan is not None
        targets = np.asarray(self.plan.targets, np.int64).reshape(-1, 3)
        if not len(targets):
            return counts
        n_total = steps * covering_per_step(self.share, batch_size)
        T = len(targets)
        times = n_total // T + (np.arange(T) < n_total % T)
        levels = int(targets[:, 0].max()) + 1
        if levels > counts.shape[0]:
            counts = np.concatenate([counts, np.zeros((levels - counts.shape[0],
                                                       *counts.shape[1:]), counts.dtype)])
        floor = np.zeros_like(counts)
        np.maximum.at(floor, (targets[:, 0], targets[:, 1], targets[:, 2]), times)
        return np.maximum(counts, floor)

    def note(self, steps: int, whose: str) -> str:
        """The line under a run's sampled coverage: the targets were counted over every step."""
        assert self.plan is not None
        return (f"\n  (the covering plan's {len(self.plan.targets)} targets: counted over all "
                f"{steps} steps {whose}, the rest over the strings above)")


def covering_run(cfg: Any, problem: Any, schedule: str) -> CoveringRun:
    """The covering sampler of the run ``cfg`` (the sampler's function in the registry): the
    plan of its training and test lengths, the model's ``schedule`` and padding, its offsets
    and seed; refused (:class:`~monoidlab.errors.ConfigError`) when the run is too short to
    show every target ``k`` times, unless its ``covering.too_large`` falls back to near misses.
    ``problem``: the run's language problem (its language and the lengths that have strings).
    """
    from monoidlab.errors import ConfigError

    settings = covering_settings(cfg.covering)
    try:
        plan = CoveringPlan(problem.language, problem.lengths(cfg.train_lengths),
                            problem.lengths(cfg.test_lengths), schedule=schedule,
                            padding=cfg.padding, offsets=cfg.offsets, within=cfg.within,
                            seed=cfg.seed, allow_uncovered=settings["uncovered"] == "skip")
    except InputError as exc:
        raise ConfigError(f"key 'sampler': covering: {exc}") from None
    per_step = covering_per_step(settings["share"], cfg.batch_size)
    need = settings["k"] * len(plan.targets)
    if per_step * cfg.steps < need and settings["too_large"] == "near_miss":
        # a fallback chosen in the config: the run trains, on near misses, and says why
        return CoveringRun(None, settings["share"], (
            f"the covering plan's {len(plan.targets)} targets shown k = {settings['k']} times "
            f"need {need} covering strings, more than the {per_step * cfg.steps} the run draws "
            "(covering.too_large = \"near_miss\"): trained on near-miss strings instead"))
    if per_step * cfg.steps < need:
        raise ConfigError(f"key 'covering': {len(plan.targets)} targets shown k = "
                          f"{settings['k']} times need {need} covering strings; the run draws "
                          f"{per_step} a step for {cfg.steps} steps ({per_step * cfg.steps}): "
                          f"raise steps, batch_size or share{', or lower k' if settings['k'] > 1 else ''}"
                          ", or train without the plan (sampler = \"near_miss\", the base "
                          "recipe's sampler)")
    return CoveringRun(plan, settings["share"])
