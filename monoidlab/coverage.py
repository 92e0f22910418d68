"""Coverage of EC compositions: exact (no sampling) and from samples, and the gap between two.

**Exact coverage.** For a word drawn uniformly from Σ^L the EC of a length-m substring has law
P_m = P_{m-1}·U (U the uniform letter law, pushed through the right Cayley table); disjoint
substrings are independent, so a node whose children have lengths (m1, m2) has composition law
P_m1 ⊗ P_m2. Conditioning on the label (class-balanced data, or a sub-language such as
well-formed expressions) only needs the automaton *state* reached by the prefix before the node
(law π_p) and the probability g_s(q) that a suffix of length s leads state q into the wanted
classes: a node with prefix p, children (x, y) and suffix s has weight
P_m1(x) P_m2(y) Σ_q π_p(q) g_s(f_xy(q)). Summing the outer products π_p ⊗ g_s of all nodes that
share (m1, m2) first keeps the cost at O(|M|² + |M|·n) per group of nodes.

Supports (which compositions occur at all) are computed with the same recursions on 0/1
indicators, so they stay exact where probabilities underflow (8^-500).

Example
-------
>>> import monoidlab as ml
>>> lang = ml.load_language("dyck-2")
>>> cov = exact_coverage(lang, range(1, 9), schedule="balanced")
>>> round(float(cov.counts.sum()), 3)      # expected compositions per string
4.125

The minimum training length built on these supports is in :mod:`monoidlab.min_length`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from monoidlab.errors import InputError
from monoidlab.geometry import LengthsLike, Offsets, OffsetsLike, Padding, length_array, range_text
from monoidlab.laws import backward_laws, forward_laws
from monoidlab.sampling import DEFAULT_SAMPLER
from monoidlab.schedules import schedule as get_schedule
from monoidlab.sublanguage import Within, class_mask, resolve_within

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from monoidlab.automaton import Automaton
    from monoidlab.monoid import SyntacticMonoid
    from monoidlab.sampling import Batch

__all__ = ["Coverage", "CoverageGap", "exact_coverage", "sampled_coverage", "coverage_gap",
           "compare", "node_table", "ec_laws", "EXACT_SAMPLERS"]

EXACT_SAMPLERS = ("uniform", "balanced")  # the string laws exact coverage computes


# ---------------------------------------------------------------------- data classes
@dataclass
class Coverage:
    """Composition statistics of one string distribution under one schedule.

    ``counts[x, y]``: expected (exact) or observed-per-string (sampled) number of nodes with
    composition (x, y) per string; ``support``: compositions that occur at all (exact booleans);
    ``per_level``: the same counts split by tree level (index = level, a node's height above
    the leaves), when requested, and ``level_support`` the support of each level (exact:
    the compositions that can occur there at all; sampled: those seen there).
    """

    monoid: SyntacticMonoid = field(repr=False)
    schedule: str
    lengths: np.ndarray
    counts: np.ndarray
    support: np.ndarray
    exact: bool
    sampler: str = "uniform"  # the string law: uniform, balanced (exact) or "sampled"
    n_strings: int | None = None
    per_level: np.ndarray | None = field(default=None, repr=False)
    level_support: np.ndarray | None = field(default=None, repr=False)

    @property
    def probabilities(self) -> np.ndarray:
        """Counts normalised to a distribution over compositions."""
        tot = self.counts.sum()
        return self.counts / tot if tot > 0 else self.counts

    @property
    def node_ec_distribution(self) -> np.ndarray:
        """Law of the EC at a node (x·y), from the composition law."""
        m = self.monoid
        return np.bincount(m.table.ravel(), weights=self.probabilities.ravel(), minlength=m.size)

    def pairs(self) -> list[tuple[int, int]]:
        return [(x, y) for x, y in np.argwhere(self.support).tolist()]

    def __repr__(self) -> str:
        """A one-line summary (never the arrays).

        >>> import monoidlab as ml
        >>> exact_coverage(ml.load_language("parity"), range(1, 5))
        Coverage(parity, balanced schedule, lengths 1:4, exact balanced; 4 of 4 compositions, 1.75 nodes per string)
        """
        name = getattr(getattr(self.monoid, "automaton", None), "name", "?")
        law = f"exact {self.sampler}" if self.exact else (
            f"sampled, {self.n_strings} strings" if self.n_strings else "sampled")
        nodes = float(np.asarray(self.counts).sum())
        return (f"Coverage({name}, {self.schedule} schedule, lengths "
                f"{range_text(np.asarray(self.lengths))}, {law}; {int(self.support.sum())} of "
                f"{self.support.size} compositions, {nodes:.3g} nodes per string"
                + (f", {len(self.per_level)} levels" if self.per_level is not None else "") + ")")

    def heatmap(self, **kw: Any) -> Figure:
        from monoidlab.viz.coverage import coverage_heatmap

        return coverage_heatmap(self, **kw)


@dataclass
class CoverageGap:
    """A training coverage against a test coverage."""

    train: Coverage
    test: Coverage

    @property
    def needed(self) -> np.ndarray:
        return self.test.support

    @property
    def missing(self) -> np.ndarray:
        """Compositions the test strings need and training never shows (boolean |M|×|M|)."""
        return self.test.support & ~self.train.support

    def missing_list(self) -> list[dict[str, Any]]:
        """Missing compositions with their representative words and test probability."""
        labels = self.test.monoid.labels()
        p = self.test.probabilities
        rows = [{"left": int(x), "right": int(y), "left_word": labels[x], "right_word": labels[y],
                 "test_probability": float(p[x, y])} for x, y in np.argwhere(self.missing)]
        return sorted(rows, key=lambda r: -r["test_probability"])

    @property
    def ratio(self) -> np.ndarray:
        """test / train probability where both are positive (NaN elsewhere)."""
        a, b = self.test.probabilities, self.train.probabilities
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where((a > 0) & (b > 0), a / np.where(b > 0, b, 1), np.nan)

    @property
    def ec_shift(self) -> dict[str, np.ndarray]:
        """Node-EC law at train and at test, and their difference."""
        tr, te = self.train.node_ec_distribution, self.test.node_ec_distribution
        return {"train": tr, "test": te, "shift": te - tr}

    def __repr__(self) -> str:
        """A one-line summary: the two length ranges and the needed / covered / missing counts.

        >>> import monoidlab as ml
        >>> lang = ml.load_language("dyck-2")
        >>> CoverageGap(exact_coverage(lang, range(1, 4)), exact_coverage(lang, range(9, 13)))
        CoverageGap(dyck-2, balanced schedule, train 1:3 vs test 9:12; 130 compositions needed at test, 14 covered, 116 missing)
        """
        name = getattr(getattr(self.test.monoid, "automaton", None), "name", "?")
        return (f"CoverageGap({name}, {self.test.schedule} schedule, train "
                f"{range_text(np.asarray(self.train.lengths))} vs test "
                f"{range_text(np.asarray(self.test.lengths))}; {int(self.needed.sum())} "
                f"compositions needed at test, {int((self.needed & self.train.support).sum())} "
                f"covered, {int(self.missing.sum())} missing)")

    def summary(self) -> dict[str, Any]:
        return {"schedule": self.test.schedule, "monoid_size": self.test.monoid.size,
                "train_lengths": range_text(self.train.lengths),
                "test_lengths": range_text(self.test.lengths),
                "needed": int(self.needed.sum()), "covered": int((self.needed & self.train.support).sum()),
                "missing": int(self.missing.sum()), "missing_list": self.missing_list()}

    def heatmap(self, **kw: Any) -> Figure:
        from monoidlab.viz.coverage import gap_heatmaps

        return gap_heatmaps(self, **kw)


# ---------------------------------------------------------------------- node tables
def node_table(schedule: str, lengths: LengthsLike, offsets: OffsetsLike = None,
               padding: Padding | str = Padding.LEARNED) -> np.ndarray:
    """Rows ``(L, level, m1, m2, prefix, suffix, weight)`` for every composition-carrying node.

    ``weight`` = probability of that (length, offset) under the length law (uniform over
    ``lengths``) × the offset law (uniform over :meth:`Offsets.for_length
    <monoidlab.geometry.Offsets.for_length>`). With ``padding = "identity"`` a node with an
    all-padding child carries no composition (it passes the other child through), so only
    nodes with string on both sides are listed.
    """
    identity = Padding.parse(padding) is Padding.IDENTITY
    law = Offsets.parse(offsets)
    lens = length_array(lengths)
    lens = lens[lens >= 1]
    rows = []
    for L in lens:
        offs = law.for_length(int(L))
        for off in offs:
            s = get_schedule(schedule, int(L), int(off))
            if not s.n_nodes:
                continue
            m1 = s.left_span[:, 1] - s.left_span[:, 0]
            m2 = s.right_span[:, 1] - s.right_span[:, 0]
            keep = ((m1 > 0) & (m2 > 0)) if identity else (m1 + m2) > 0
            w = 1.0 / (len(lens) * len(offs))
            rows.append(np.stack([np.full(keep.sum(), L), s.level[keep], m1[keep], m2[keep],
                                  s.span[keep, 0], L - s.span[keep, 1],
                                  np.full(keep.sum(), w)], axis=1))
    if not rows:
        return np.zeros((0, 7))
    return np.concatenate(rows)


# ---------------------------------------------------------------------- recursions
def ec_laws(monoid: SyntacticMonoid, max_len: int, indicator: bool = False) -> np.ndarray:
    """``P[m, e]``: probability (or 0/1 reachability) that a uniform word of length m has EC e."""
    return forward_laws(monoid.right, 0, max_len, indicator)


def _class_targets(lang: Automaton, sampler: str, within: Within) -> list[np.ndarray]:
    keep = class_mask(lang, within)
    if sampler == "uniform":
        return [keep]
    if sampler == "balanced":
        return [np.eye(lang.n_classes, dtype=bool)[c] for c in np.flatnonzero(keep)]
    raise InputError(f"exact coverage computes the samplers {', '.join(EXACT_SAMPLERS)}, not "
                     f"{sampler!r} (sample it instead: sampled_coverage(ml.sample(...)))")


# ---------------------------------------------------------------------- exact coverage
def exact_coverage(lang: Automaton, lengths: LengthsLike, *, schedule: str = "balanced",
                   sampler: str = DEFAULT_SAMPLER, within: Within = None,
                   offsets: OffsetsLike = None,
                   padding: Padding | str = Padding.LEARNED,
                   per_level: bool = False) -> Coverage:
    """Exact expected composition counts per string (no sampling).

    Parameters
    ----------
    lang : the :class:`~monoidlab.automaton.Automaton` (its monoid must have ≤ 4096 elements).
    lengths : lengths drawn uniformly (int, range or list).
    sampler : the string law, as the samplers of :mod:`monoidlab.sampling` draw it:
        ``uniform`` (uniform over the strings of each length, or of the sub-language
        ``within``) or ``balanced`` (the default, as everywhere in monoidlab: each class
        available at that length equally likely, uniform inside the class).
    within : a sub-language (:mod:`monoidlab.sublanguage`, e.g. ``"auto"``).
    offsets : ``balanced`` schedule only: where the strings sit in their buffer, an
        :class:`~monoidlab.geometry.Offsets` or what :meth:`Offsets.parse
        <monoidlab.geometry.Offsets.parse>` reads (0, ``"random"``, a list).
    padding : ``learned`` (a node with one all-padding child composes (x, ε), as MLP-LDRU's
        learned padding leaf does) or ``identity`` (such a node passes the other child through:
        no composition; see docs/coverage.md).
    """
    monoid = lang.monoid()
    M = monoid.size
    table = monoid.table
    rows = node_table(schedule, lengths, offsets, padding)
    lens = length_array(lengths)
    n_levels = int(rows[:, 1].max(initial=0)) + 1 if len(rows) else 1
    max_len = int(lens.max())
    P = ec_laws(monoid, max_len)
    R = ec_laws(monoid, max_len, indicator=True)
    targets = _class_targets(lang, sampler, within)
    plain = sampler == "uniform" and bool(targets[0].all())
    counts = np.zeros((n_levels, M, M))
    support = np.zeros((n_levels, M, M), bool) if per_level else np.zeros((1, M, M), bool)
    if plain:
        # Context is irrelevant: Σ over node groups of weight · P_m1 ⊗ P_m2, one matmul per level.
        for lev in range(1, n_levels):
            sel = rows[rows[:, 1] == lev]
            if not len(sel):
                continue
            keys, inv = np.unique(sel[:, 2:4].astype(np.int64), axis=0, return_inverse=True)
            w = np.bincount(inv.ravel(), weights=sel[:, 6])
            A, B = P[keys[:, 0]], P[keys[:, 1]]
            counts[lev] = (A * w[:, None]).T @ B
            support[lev if per_level else 0] |= (R[keys[:, 0]].T @ R[keys[:, 1]]) > 0
    else:
        pi = forward_laws(lang.delta, lang.start, max_len)
        pi_r = forward_laws(lang.delta, lang.start, max_len, indicator=True)
        elements = monoid.elements.astype(np.int64)
        n = lang.n_states
        # Lengths without any string of the wanted classes (even lengths of well-formed
        # expressions) cannot be drawn: the length law is uniform over the others.
        # avail[t, L]: target t has strings of length L
        avail = np.array([(pi_r * t[np.asarray(lang.output)][None, :]).sum(axis=1) > 0
                          for t in targets])
        has = np.any(avail, axis=0)
        # balanced: the classes available at a length share it equally
        share = (1.0 / np.maximum(avail.sum(axis=0), 1) if sampler == "balanced"
                 else np.ones(max_len + 1))
        tl = lens[lens >= 1]
        rescale = len(tl) / max(int(has[tl].sum()), 1)
        for target in targets:
            final = target[np.asarray(lang.output)].astype(float)
            g = backward_laws(lang.delta, final, max_len)
            g_r = backward_laws(lang.delta, final, max_len, indicator=True)
            # Z[L] = P(a uniform string of length L is in the target classes)
            Z = (pi * g[0][None, :]).sum(axis=1)
            Zr = (pi_r * g_r[0][None, :]).sum(axis=1) > 0
            L_col = rows[:, 0].astype(np.int64)
            live = Zr[L_col]
            sel = rows[live]
            if not len(sel):
                continue
            w = rescale * sel[:, 6] * share[sel[:, 0].astype(np.int64)] / np.maximum(Z[sel[:, 0].astype(np.int64)], 1e-300)
            keys, inv = np.unique(sel[:, 1:4].astype(np.int64), axis=0, return_inverse=True)
            inv = inv.ravel()
            pre, suf = sel[:, 4].astype(np.int64), sel[:, 5].astype(np.int64)
            for gi, (lev, m1, m2) in enumerate(keys):
                idx = np.flatnonzero(inv == gi)
                Bm = (pi[pre[idx]] * w[idx, None]).T @ g[suf[idx]]  # (n, n) Σ π_p ⊗ g_s
                Br = (pi_r[pre[idx]].T @ g_r[suf[idx]]) > 0
                T = Bm[np.arange(n)[None, :], elements].sum(axis=1)  # T[z] = Σ_q B[q, f_z(q)]
                Tr = Br[np.arange(n)[None, :], elements].any(axis=1)
                counts[lev] += np.outer(P[m1], P[m2]) * T[table]
                support[lev if per_level else 0] |= np.outer(R[m1], R[m2]).astype(bool) & Tr[table]
    return Coverage(monoid, schedule, lens, counts.sum(axis=0), np.asarray(support.any(axis=0)), True,
                    sampler if resolve_within(lang, within) is None else f"{sampler} within {within}",
                    None, counts if per_level else None, support if per_level else None)


def sampled_coverage(batch: Batch, schedule: str = "balanced", offsets: ArrayLike | None = None,
                     per_level: bool = False, monoid: SyntacticMonoid | Automaton | None = None,
                     padding: Padding | str = Padding.LEARNED) -> Coverage:
    """Observed composition counts of a :class:`~monoidlab.sampling.Batch`, per string.

    ``offsets``: the offset of each string in its buffer, (B,) ints (none: all at 0).
    ``monoid`` defaults to the batch language's monoid; a given one must belong to the same
    language.
    """
    from monoidlab.compositions import composition_counts

    monoid = _monoid_for(monoid, batch)
    c = composition_counts(monoid, batch.tokens, batch.lengths, schedule, offsets, per_level=True,
                           padding=padding)
    n = max(len(batch), 1)
    return Coverage(monoid, schedule, np.unique(batch.lengths), c.sum(axis=0) / n,
                    c.sum(axis=0) > 0, False, "sampled", len(batch), c / n if per_level else None,
                    c > 0 if per_level else None)


def _monoid_for(monoid_or_lang: SyntacticMonoid | Automaton | None,
                batch: Batch | None = None) -> SyntacticMonoid:
    """The monoid of a language or the monoid itself; checks that ``batch`` belongs to it."""
    if monoid_or_lang is None:
        assert batch is not None, "give a monoid, a language or a batch"
        return batch.automaton.monoid()
    from monoidlab.automaton import Automaton

    monoid = monoid_or_lang.monoid() if isinstance(monoid_or_lang, Automaton) else monoid_or_lang
    if batch is not None and batch.automaton != monoid.automaton:
        raise InputError(f"the batch's language {batch.automaton.name!r} is not the monoid's "
                         f"language {monoid.automaton.name!r}")
    return monoid


def compare(train: Coverage, test: Coverage) -> CoverageGap:
    """The gap between a training and a test coverage of the same language and schedule."""
    if train.monoid is not test.monoid and train.monoid.automaton != test.monoid.automaton:
        raise InputError(f"train and test coverages come from different languages "
                         f"({train.monoid.automaton.name!r}, {test.monoid.automaton.name!r})")
    if train.schedule != test.schedule:
        raise InputError(f"train and test coverages use different schedules "
                         f"({train.schedule!r}, {test.schedule!r})")
    return CoverageGap(train, test)


def coverage_gap(monoid_or_lang: SyntacticMonoid | Automaton, train: Batch, test: Batch,
                 schedule: str = "balanced") -> CoverageGap:
    """Gap between two sampled batches of the language of ``monoid_or_lang``.

    >>> import monoidlab as ml
    >>> lang = ml.load_language("parity")
    >>> tr = ml.sample(lang, range(1, 5), 200, seed=0); te = ml.sample(lang, [64], 50, seed=1)
    >>> coverage_gap(lang.monoid(), tr, te).summary()["missing"]
    0
    """
    monoid = _monoid_for(monoid_or_lang)
    return compare(sampled_coverage(train, schedule, monoid=_monoid_for(monoid, train)),
                   sampled_coverage(test, schedule, monoid=_monoid_for(monoid, test)))
