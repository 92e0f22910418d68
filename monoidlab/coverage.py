"""Coverage of EC compositions: exact (no sampling) and from samples, gaps, minimum training length.

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
>>> min_training_length(lang, test_lengths=range(41, 501)).support_length
12
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from monoidlab.sampling import as_lengths
from monoidlab.trees import schedule as get_schedule

__all__ = ["Coverage", "CoverageGap", "exact_coverage", "sampled_coverage", "coverage_gap",
           "compare", "min_training_length", "MinLength", "node_table", "offsets_for"]


# ---------------------------------------------------------------------- data classes
@dataclass
class Coverage:
    """Composition statistics of one string distribution under one schedule.

    ``counts[x, y]``: expected (exact) or observed-per-string (sampled) number of nodes with
    composition (x, y) per string; ``support``: compositions that occur at all (exact booleans);
    ``per_level``: the same counts split by tree level (index = level), when requested.
    """

    monoid: object = field(repr=False)
    schedule: str
    lengths: np.ndarray
    counts: np.ndarray
    support: np.ndarray
    exact: bool
    distribution: str = "uniform"
    n_strings: int | None = None
    per_level: np.ndarray | None = field(default=None, repr=False)

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
        return [tuple(p) for p in np.argwhere(self.support).tolist()]

    def heatmap(self, **kw):
        from monoidlab.plots import coverage_heatmap

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

    def missing_list(self) -> list[dict]:
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

    def summary(self) -> dict:
        return {"schedule": self.test.schedule, "monoid_size": self.test.monoid.size,
                "train_lengths": _range_text(self.train.lengths),
                "test_lengths": _range_text(self.test.lengths),
                "needed": int(self.needed.sum()), "covered": int((self.needed & self.train.support).sum()),
                "missing": int(self.missing.sum()), "missing_list": self.missing_list()}

    def heatmap(self, **kw):
        from monoidlab.plots import gap_heatmaps

        return gap_heatmaps(self, **kw)


def _range_text(lengths) -> str:
    lengths = np.asarray(lengths)
    if len(lengths) and np.array_equal(lengths, np.arange(lengths[0], lengths[-1] + 1)):
        return f"{lengths[0]}:{lengths[-1]}"
    return ",".join(map(str, lengths.tolist()))


# ---------------------------------------------------------------------- node tables
def offsets_for(length: int, offsets, max_buffer: int | None = None) -> np.ndarray:
    """Offsets used for one training length: 0, a list, or ``"random"`` (uniform over 0..2^K−L).

    ``random`` draws r uniformly from 0..B−L with B = ``max_buffer`` (default: the next power of
    two ≥ 2·L, so that every string can move inside one doubled buffer).
    """
    if offsets is None or (isinstance(offsets, int | np.integer) and offsets == 0):
        return np.zeros(1, np.int64)
    if isinstance(offsets, str):
        if offsets != "random":
            raise ValueError(f"offsets: expected 'random', an int or a list, got {offsets!r}")
        B = max_buffer or 1 << (2 * length - 1).bit_length()
        if B < length:
            raise ValueError(f"max_buffer {B} < length {length}")
        return np.arange(0, B - length + 1)
    return np.atleast_1d(np.asarray(offsets, np.int64))


def node_table(schedule: str, lengths, offsets=None, max_buffer: int | None = None) -> np.ndarray:
    """Rows ``(L, level, m1, m2, prefix, suffix, weight)`` for every composition-carrying node.

    ``weight`` = probability of that (length, offset) under the length law (uniform over
    ``lengths``) × the offset law (uniform over :func:`offsets_for`).
    """
    lens = as_lengths(lengths)
    lens = lens[lens >= 1]
    rows = []
    for L in lens:
        offs = offsets_for(int(L), offsets, max_buffer)
        for off in offs:
            s = get_schedule(schedule, int(L), int(off))
            if not s.n_nodes:
                continue
            m1 = s.left_span[:, 1] - s.left_span[:, 0]
            m2 = s.right_span[:, 1] - s.right_span[:, 0]
            keep = (m1 + m2) > 0
            w = 1.0 / (len(lens) * len(offs))
            rows.append(np.stack([np.full(keep.sum(), L), s.level[keep], m1[keep], m2[keep],
                                  s.span[keep, 0], L - s.span[keep, 1],
                                  np.full(keep.sum(), w)], axis=1))
    if not rows:
        return np.zeros((0, 7))
    return np.concatenate(rows)


# ---------------------------------------------------------------------- recursions
def ec_laws(monoid, max_len: int, indicator: bool = False) -> np.ndarray:
    """``P[m, e]``: probability (or 0/1 reachability) that a uniform word of length m has EC e."""
    M, k = monoid.size, monoid.n_symbols
    P = np.zeros((max_len + 1, M))
    P[0, 0] = 1.0
    dst = monoid.right.ravel()
    for m in range(1, max_len + 1):
        nxt = np.bincount(dst, weights=np.repeat(P[m - 1], k), minlength=M)
        P[m] = (nxt > 0) if indicator else nxt / k
    return P


def _state_prefix(a, max_len: int, indicator: bool) -> np.ndarray:
    n, k = a.delta.shape
    pi = np.zeros((max_len + 1, n))
    pi[0, a.start] = 1.0
    dst = np.asarray(a.delta, np.int64).ravel()
    for p in range(1, max_len + 1):
        nxt = np.bincount(dst, weights=np.repeat(pi[p - 1], k), minlength=n)
        pi[p] = (nxt > 0) if indicator else nxt / k
    return pi


def _state_suffix(a, target: np.ndarray, max_len: int, indicator: bool) -> np.ndarray:
    """``g[s, q]``: probability (or 0/1) that a uniform suffix of length s leads q into ``target``."""
    delta = np.asarray(a.delta, np.int64)
    g = np.zeros((max_len + 1, a.n_states))
    g[0] = target[np.asarray(a.output)]
    for s in range(1, max_len + 1):
        g[s] = g[s - 1][delta].max(axis=1) if indicator else g[s - 1][delta].mean(axis=1)
    return g


def _class_targets(lang, distribution: str, within) -> list[np.ndarray]:
    keep = np.ones(lang.n_classes, bool)
    if within is not None:
        names = [within] if isinstance(within, str) else list(within)
        bad = [c for c in names if c not in lang.classes]
        if bad:
            raise ValueError(f"{lang.name}: within: unknown class(es) {bad}")
        keep = np.isin(lang.classes, names)
    if distribution == "uniform":
        return [keep]
    if distribution == "balanced":
        return [np.eye(lang.n_classes, dtype=bool)[c] for c in np.flatnonzero(keep)]
    raise ValueError(f"distribution must be 'uniform' or 'balanced', got {distribution!r}")


# ---------------------------------------------------------------------- exact coverage
def exact_coverage(lang, lengths, *, schedule: str = "balanced", distribution: str = "uniform",
                   within=None, offsets=None, max_buffer: int | None = None,
                   per_level: bool = False) -> Coverage:
    """Exact expected composition counts per string (no sampling).

    Parameters
    ----------
    lang : the :class:`~monoidlab.automaton.Automaton` (its monoid must have ≤ 4096 elements).
    lengths : lengths drawn uniformly (int, range or list).
    distribution : ``uniform`` (uniform over the strings of each length, or of the sub-language
        ``within``) or ``balanced`` (each class available at that length equally likely,
        uniform inside the class).
    within : class names of ``lang`` that define a sub-language (e.g. well-formed expressions).
    offsets : ``balanced`` schedule only: 0, ``"random"`` or a list (left padding, see
        :func:`offsets_for`).
    """
    monoid = lang.monoid()
    M = monoid.size
    table = monoid.table
    rows = node_table(schedule, lengths, offsets, max_buffer)
    lens = as_lengths(lengths)
    n_levels = int(rows[:, 1].max(initial=0)) + 1 if len(rows) else 1
    max_len = int(lens.max())
    P = ec_laws(monoid, max_len)
    R = ec_laws(monoid, max_len, indicator=True)
    targets = _class_targets(lang, distribution, within)
    plain = distribution == "uniform" and within is None
    counts = np.zeros((n_levels, M, M))
    support = np.zeros((M, M), bool)
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
            support |= (R[keys[:, 0]].T @ R[keys[:, 1]]) > 0
    else:
        pi = _state_prefix(lang, max_len, False)
        pi_r = _state_prefix(lang, max_len, True)
        elements = monoid.elements.astype(np.int64)
        n = lang.n_states
        # Lengths without any string of the wanted classes (even lengths of well-formed
        # expressions) cannot be drawn: the length law is uniform over the others.
        # avail[t, L]: target t has strings of length L
        avail = np.array([(pi_r * t[np.asarray(lang.output)][None, :]).sum(axis=1) > 0
                          for t in targets])
        has = avail.any(axis=0)
        # balanced: the classes available at a length share it equally
        share = (1.0 / np.maximum(avail.sum(axis=0), 1) if distribution == "balanced"
                 else np.ones(max_len + 1))
        tl = lens[lens >= 1]
        rescale = len(tl) / max(int(has[tl].sum()), 1)
        for target in targets:
            g = _state_suffix(lang, target, max_len, False)
            g_r = _state_suffix(lang, target, max_len, True)
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
                support |= np.outer(R[m1], R[m2]).astype(bool) & Tr[table]
    return Coverage(monoid, schedule, lens, counts.sum(axis=0), support, True,
                    distribution if within is None else f"{distribution} within {within}",
                    None, counts if per_level else None)


def sampled_coverage(batch, schedule: str = "balanced", offsets=None,
                     per_level: bool = False) -> Coverage:
    """Observed composition counts of a :class:`~monoidlab.sampling.Batch`, per string."""
    from monoidlab.compositions import composition_counts

    monoid = batch.automaton.monoid()
    c = composition_counts(monoid, batch.tokens, batch.lengths, schedule, offsets, per_level=True)
    n = max(len(batch), 1)
    return Coverage(monoid, schedule, np.unique(batch.lengths), c.sum(axis=0) / n,
                    c.sum(axis=0) > 0, False, "sampled", len(batch), c / n if per_level else None)


def compare(train: Coverage, test: Coverage) -> CoverageGap:
    if train.monoid is not test.monoid and train.monoid.size != test.monoid.size:
        raise ValueError("train and test coverages come from different monoids")
    return CoverageGap(train, test)


def coverage_gap(monoid_or_lang, train, test, schedule: str = "balanced") -> CoverageGap:
    """Gap between two batches (sampled) — the STYLE.md happy path.

    >>> import monoidlab as ml
    >>> lang = ml.load_language("parity")
    >>> tr = ml.sample(lang, range(1, 5), 200, seed=0); te = ml.sample(lang, [64], 50, seed=1)
    >>> coverage_gap(lang.monoid(), tr, te).summary()["missing"]
    0
    """
    return compare(sampled_coverage(train, schedule), sampled_coverage(test, schedule))


# ---------------------------------------------------------------------- minimum training length
@dataclass
class MinLength:
    """Minimum-training-length estimates for one language."""

    name: str
    schedule: str
    test_lengths: str
    needed: int
    support_length: int | None  # None: no training length up to the search limit covers
    uncovered_at_limit: int
    samples_needed: dict = field(default_factory=dict)  # train range -> N for 1 - delta

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _support_at(lang, L: int, schedule, offsets, max_buffer, R, within) -> np.ndarray:
    if within is None:
        rows = node_table(schedule, [L], offsets, max_buffer)
        if not len(rows):
            return np.zeros((lang.monoid().size,) * 2, bool)
        keys = np.unique(rows[:, 2:4].astype(np.int64), axis=0)
        return (R[keys[:, 0]].T @ R[keys[:, 1]]) > 0
    return exact_coverage(lang, [L], schedule=schedule, within=within, offsets=offsets,
                          max_buffer=max_buffer).support


def min_training_length(lang, test_lengths, *, schedule: str = "balanced", train_min: int = 1,
                        max_search: int | None = None, within=None, train_offsets=None,
                        delta: float | None = None, r: int = 1,
                        sample_ranges=()) -> MinLength:
    """(a) Smallest L such that training lengths [train_min, L] show every composition that the
    test lengths need (test side: offset 0); (b) optionally, for each training range in
    ``sample_ranges``, the number of samples N for which all needed compositions are seen at
    least ``r`` times with probability ≥ 1 − ``delta`` (see :func:`samples_needed`).
    """
    monoid = lang.monoid()
    test = exact_coverage(lang, test_lengths, schedule=schedule, within=within)
    needed = test.support
    max_search = max_search or int(as_lengths(test_lengths).max())
    R = ec_laws(monoid, max_search, indicator=True)
    have = np.zeros_like(needed)
    found = None
    for L in range(max(train_min, 1), max_search + 1):
        have |= _support_at(lang, L, schedule, train_offsets, None, R, within)
        if not (needed & ~have).any():
            found = L
            break
    out = MinLength(lang.name, schedule, _range_text(as_lengths(test_lengths)), int(needed.sum()),
                    found, int((needed & ~have).sum()))
    if delta is not None:
        for rng_ in sample_ranges:
            cov = exact_coverage(lang, rng_, schedule=schedule, within=within, offsets=train_offsets)
            out.samples_needed[_range_text(as_lengths(rng_))] = samples_needed(cov, needed, delta, r)
    return out


def coverage_probability(cov: Coverage, needed: np.ndarray, n_samples: int, r: int = 1) -> float:
    """P(every needed composition is seen ≥ r times in ``n_samples`` strings), Poisson model.

    Approximation: the count of composition (x, y) in N independent strings is taken as
    Poisson(N·μ_xy), μ the exact expected count per string, and counts of different pairs as
    independent. Both are exact in the limit of rare pairs, which are the ones that matter;
    the simulation test checks the approximation on small languages.
    """
    from scipy.stats import poisson

    mu = cov.counts[needed]
    if (mu <= 0).any():
        return 0.0
    logp = np.log(np.clip(poisson.sf(r - 1, n_samples * mu), 1e-300, 1.0)).sum()
    return float(np.exp(logp))


def samples_needed(cov: Coverage, needed: np.ndarray, delta: float = 0.01, r: int = 1,
                   n_max: int = 10**12) -> float:
    """Smallest N with :func:`coverage_probability` ≥ 1 − delta (inf when out of reach)."""
    if not needed.any():
        return 0
    if coverage_probability(cov, needed, n_max, r) < 1 - delta:
        return float("inf")
    lo, hi = 0, 1
    while coverage_probability(cov, needed, hi, r) < 1 - delta:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if coverage_probability(cov, needed, mid, r) >= 1 - delta:
            hi = mid
        else:
            lo = mid
    return hi
