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

The minimum training length built on these supports is in :mod:`monoidlab.coverage.min_length`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from monoidlab._checks import (
    OFFSETS_NOW,
    check_bool,
    check_count,
    check_record,
    removed_keywords,
    scalar_args,
)
from monoidlab._util import MAX_LENGTH, check_limits_flag, limit_error, longest_length
from monoidlab.algebra.languages import as_language, as_monoid
from monoidlab.errors import InputError
from monoidlab.geometry import LengthsLike, Offsets, OffsetsLike, Padding, length_array, range_text
from monoidlab.laws import backward_laws, forward_laws
from monoidlab.strings.samplers import REGISTRY as SAMPLER_REGISTRY
from monoidlab.strings.samplers import SamplerSpec
from monoidlab.strings.sampling import DEFAULT_SAMPLER, Batch, check_batch_language
from monoidlab.strings.schedules import check_schedule
from monoidlab.strings.schedules import schedule as get_schedule
from monoidlab.sublanguage import Within, class_mask, resolve_within

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from monoidlab.algebra.automaton import Automaton
    from monoidlab.algebra.monoid import SyntacticMonoid

__all__ = ["Coverage", "CoverageGap", "exact_coverage", "sampled_coverage", "coverage_gap",
           "compare", "node_table", "ec_laws", "EXACT_SAMPLERS", "layout_bounds",
           "check_exact_layouts", "exact_work", "MAX_LAYOUTS", "MAX_NODE_ROWS", "MAX_LAW_CELLS",
           "MAX_EXACT_WORK"]

#: the samplers whose string law exact coverage computes (their specs' ``exact``)
EXACT_SAMPLERS = tuple(n for n, s in SAMPLER_REGISTRY.items() if s.exact)

# Work limits of the exact recursions (docs/reliability.md), checked before any work;
# ``limits=False`` lifts them. The cost of exact coverage is not the longest length itself but
# (1) the (length, offset) layouts whose schedules are built, (2) the nodes of the node table
# (about one per symbol of every layout, held at once), (3) the length laws ((longest + 1) x
# (|M| + states) floats) and (4) the products of the recursion: one |M| x |M| pass per group
# of nodes that share (level, child lengths) and per class of the law.
MAX_LAYOUTS = 2**16  # (length, offset) pairs
MAX_NODE_ROWS = 2**23  # rows of the node table (7 floats each: 448 MiB)
MAX_LAW_CELLS = 2**25  # cells of each length law (256 MiB of float64)
MAX_EXACT_WORK = 2**32  # see exact_work: about 5-11 ns each, so at most about 50 s
SUMMARY_MISSING = 5  # missing compositions a summary lists (missing_list() has them all)


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

    def __post_init__(self) -> None:
        check_record(self)

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

    def _repr_html_(self) -> str:
        """The summary line and the most frequent compositions (``heatmap()`` draws them all)."""
        from monoidlab._html import html_table, html_view

        labels = self.monoid.labels()
        p = np.asarray(self.probabilities)
        top = np.argsort(-p, axis=None)[: min(10, int(self.support.sum()))]
        rows = [{"left": labels[i], "right": labels[j], "probability": float(p[i, j])}
                for i, j in zip(*np.unravel_index(top, p.shape), strict=True)]
        return html_view(repr(self), html_table(rows, ["left", "right", "probability"]),
                         "<p>the most frequent compositions; <code>.heatmap()</code> draws "
                         "every one</p>")


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

    def summary(self, first: int | None = SUMMARY_MISSING) -> dict[str, Any]:
        """Plain data: the lengths, the needed / covered / missing counts and the ``first``
        missing compositions, most probable at test first (``missing_first``); with
        ``first=None`` every one of them (``missing_list``, as :meth:`missing_list`).

        >>> import monoidlab as ml
        >>> lang = ml.load_language("dyck-2")
        >>> s = CoverageGap(exact_coverage(lang, range(1, 4)), exact_coverage(lang, range(9, 13))).summary()
        >>> s["missing"], len(s["missing_first"]), sorted(s["missing_first"][0])
        (116, 5, ['left', 'left_word', 'right', 'right_word', 'test_probability'])
        """
        if first is not None:
            first = check_count(first, "first", minimum=0)
        rows = self.missing_list()
        out = {"schedule": self.test.schedule, "monoid_size": self.test.monoid.size,
               "train_lengths": range_text(self.train.lengths),
               "test_lengths": range_text(self.test.lengths), "needed": int(self.needed.sum()),
               "covered": int((self.needed & self.train.support).sum()),
               "missing": int(self.missing.sum())}
        if first is None:
            out["missing_list"] = rows
        else:
            out["missing_first"] = rows[:first]
        return out

    def heatmap(self, **kw: Any) -> Figure:
        from monoidlab.viz.coverage import gap_heatmaps

        return gap_heatmaps(self, **kw)

    def _repr_html_(self) -> str:
        """The summary line and the first missing compositions (``heatmap()`` draws them)."""
        from monoidlab._html import html_table, html_view

        s = self.summary()
        return html_view(repr(self), html_table(
            s["missing_first"], ["left_word", "right_word", "test_probability"]),
            f"<p>{s['missing']} of {s['needed']} needed compositions missing"
            + (f" (the first {len(s['missing_first'])})" if s["missing"] else "") + "</p>",
            colour="#b3261e" if s["missing"] else "#1a7f37")


# ---------------------------------------------------------------------- node tables
@removed_keywords(offset_buffer=OFFSETS_NOW)
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


def layout_bounds(schedule: str, lengths: LengthsLike, offsets: OffsetsLike = None
                  ) -> tuple[int, int]:
    """Upper bounds ``(layouts, node rows)`` of :func:`node_table`, computed arithmetically
    (nothing is built): a layout is one (length, offset) pair; a balanced tree over a buffer
    of B positions has at most L + 2 log2 B + 2 nodes above a string of length L, a scan
    2L and a chain L.

    >>> layout_bounds("balanced", range(1, 9))
    (8, 94)
    """
    check_schedule(schedule)
    law = Offsets.parse(offsets)
    lens = length_array(lengths).astype(np.float64)
    lens = lens[lens >= 1]
    if law.mode == "random":
        buf = (np.full(len(lens), float(law.buffer)) if law.buffer is not None
               else 2.0 ** np.ceil(np.log2(2 * lens)))
        n_off = np.maximum(buf - lens + 1, 1)
        end = np.maximum(buf, lens)
    elif law.mode == "fixed":
        n_off = np.full(len(lens), float(len(law.values)))
        end = lens + max(law.values)
    else:
        n_off, end = np.ones(len(lens)), lens
    if schedule == "balanced":
        per = lens + 2 * np.ceil(np.log2(end + 1)) + 2
    else:
        per = 2 * lens if schedule == "scan" else lens
    return int(n_off.sum()), int((n_off * per).sum())


def check_exact_layouts(schedule: str, lengths: LengthsLike, offsets: OffsetsLike = None,
                        nodes: int = 1, what: str = "lengths", limits: bool = True) -> None:
    """Refuse, before any work, exact coverage over ``lengths`` (``nodes``: |M| + states,
    the width of the length laws) beyond the limits: the longest length, the layouts, the node
    rows and the law cells (:data:`MAX_LAYOUTS`, :data:`MAX_NODE_ROWS`, :data:`MAX_LAW_CELLS`).

    >>> check_exact_layouts("balanced", range(1, 10**4))
    Traceback (most recent call last):
    ...
    monoidlab.errors.InputError: lengths: the balanced trees of lengths 1:9999 hold 5.03e+07 nodes; at most 8.39e+06 per call (fewer or shorter lengths, a step A:B:STEP); pass limits=False to lift the work limits
    """
    longest = longest_length(lengths, what)
    if not check_limits_flag(limits):
        return
    if longest > MAX_LENGTH:
        raise limit_error(f"{what}: lengths up to {longest} requested; at most {MAX_LENGTH}")
    layouts, rows = layout_bounds(schedule, lengths, offsets)
    text = range_text(length_array(lengths))
    text = text if len(text) <= 40 else text[:37] + "..."
    if layouts > MAX_LAYOUTS:
        raise limit_error(f"{what}: {layouts} (length, offset) layouts of lengths {text}; at "
                          f"most {MAX_LAYOUTS} per call (fewer lengths or offsets)")
    if rows > MAX_NODE_ROWS:
        raise limit_error(f"{what}: the {schedule} trees of lengths {text} hold {rows:.3g} "
                          f"nodes; at most {MAX_NODE_ROWS:.3g} per call (fewer or shorter "
                          "lengths, a step A:B:STEP)")
    if (longest + 1) * nodes > MAX_LAW_CELLS:
        raise limit_error(f"{what}: length laws up to length {longest} over {nodes} ECs and "
                          f"states need {(longest + 1) * nodes:.3g} cells; at most "
                          f"{MAX_LAW_CELLS:.3g} per call (shorter lengths)")


def unique_rows(a: ArrayLike, return_inverse: bool = False) -> Any:
    """``np.unique(a, axis=0)`` (and the inverse, flat) for a 2-D array of integers, through
    one packed int64 key per row: the same rows in the same (lexicographic) order, without
    np.unique's sort of row views, several times slower on the node tables.

    >>> unique_rows([[1, 2], [0, 5], [1, 2]], return_inverse=True)
    (array([[0, 5],
           [1, 2]]), array([1, 0, 1]))
    """
    a = np.asarray(a, dtype=np.int64)
    low = a.min(axis=0) if a.size else np.zeros(a.shape[1:], np.int64)
    span = (a.max(axis=0) - low + 1) if a.size else np.ones(a.shape[1:], np.int64)
    if not a.size or float(np.prod(span.astype(float))) >= 2.0**62:  # np.unique's own way
        keys, inv = np.unique(a, axis=0, return_inverse=True)
        return (keys, inv.ravel()) if return_inverse else keys
    # the first column most significant: the packed order is the rows' lexicographic order
    stride = np.concatenate([np.cumprod(span[::-1])[::-1][1:], [1]]).astype(np.int64)
    packed, inv = np.unique((a - low) @ stride, return_inverse=True)
    keys = (packed[:, None] // stride) % span + low
    return (keys, inv.ravel()) if return_inverse else keys


def exact_work(n_targets: int, n_groups: int, n_rows: int, M: int, n: int) -> int:
    """The work units of the exact recursion once its node table is built: per class of the
    law (``n_targets``) and per node group, one pass over the |M| x |M| compositions, one over
    |M| x n and a fixed cost; per node row, one n x n outer product. Measured (2 cores, shared):
    5 to 11 ns per unit, so :data:`MAX_EXACT_WORK` (2^32) takes at most about 50 s.

    >>> exact_work(2, 754, 125666, 820, 14)   # dyck-12 at test lengths 41..500: about 5 s
    1195465648
    """
    return n_targets * (n_groups * (M * M + M * n + 2**16) + n_rows * (n * n + 64))


def _check_products(n_targets: int, n_groups: int, n_rows: int, M: int, n: int,
                    limits: bool, name: str) -> None:
    """Refuse the recursion beyond :data:`MAX_EXACT_WORK` (only the node table is built)."""
    work = exact_work(n_targets, n_groups, n_rows, M, n)
    if limits and work > MAX_EXACT_WORK:
        raise limit_error(f"{name}: exact coverage needs {n_targets} x {n_groups} passes over "
                          f"the {M} x {M} compositions and {n_rows} tree nodes ({work:.3g} "
                          f"units); at most {MAX_EXACT_WORK:.3g} per call (fewer lengths, the "
                          "uniform sampler, or sampled_coverage)")


# ---------------------------------------------------------------------- recursions
def ec_laws(monoid: SyntacticMonoid, max_len: int, indicator: bool = False) -> np.ndarray:
    """``P[m, e]``: probability (or 0/1 reachability) that a uniform word of length m has EC e."""
    return forward_laws(monoid.right, 0, max_len, indicator)


def _exact_spec(sampler: str | SamplerSpec) -> SamplerSpec:
    """The spec of a sampler whose law exact coverage computes (its ``exact``)."""
    spec = sampler if isinstance(sampler, SamplerSpec) else (
        SAMPLER_REGISTRY.get(sampler) if isinstance(sampler, str) else None)
    if spec is None or spec.exact is None:
        raise InputError(f"sampler: exact coverage computes the samplers "
                         f"{', '.join(EXACT_SAMPLERS)}, not "
                         f"{sampler!r} (sample it instead: sampled_coverage(ml.sample(...)))")
    return spec


def _class_targets(lang: Automaton, spec: SamplerSpec, within: Within) -> list[np.ndarray]:
    """The class groups of the law: the kept classes together (``exact = "strings"``: uniform
    over the strings) or each kept class apart (``"classes"``: an equal share of each)."""
    keep = class_mask(lang, within)
    if spec.exact == "strings":
        return [keep]
    return [np.eye(lang.n_classes, dtype=bool)[c] for c in np.flatnonzero(keep)]


# ---------------------------------------------------------------------- exact coverage
@removed_keywords(offset_buffer=OFFSETS_NOW, distribution="sampler=")
def exact_coverage(lang: Automaton | str, lengths: LengthsLike, *, schedule: str = "balanced",
                   sampler: str | SamplerSpec = DEFAULT_SAMPLER, within: Within = None,
                   offsets: OffsetsLike = None,
                   padding: Padding | str = Padding.LEARNED,
                   per_level: bool = False, limits: bool = True) -> Coverage:
    """Exact expected composition counts per string (no sampling).

    Parameters
    ----------
    lang : the :class:`~monoidlab.algebra.automaton.Automaton` or a suite name (its monoid must have
        ≤ 4096 elements).
    lengths : lengths drawn uniformly (int, range or list).
    sampler : the string law, as the samplers of :mod:`monoidlab.strings.sampling` draw it:
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
    limits : ``True`` (the default) refuses, before any work, calls beyond the work limits:
        lengths above ``MAX_LENGTH``, more than :data:`MAX_LAYOUTS` (length, offset) layouts,
        :data:`MAX_NODE_ROWS` tree nodes, :data:`MAX_LAW_CELLS` law cells or
        :data:`MAX_EXACT_WORK` products (the largest allowed call takes about a minute);
        ``False`` lifts them.

    >>> exact_coverage("parity", range(1, 5)).support.sum()
    np.int64(4)
    """
    lang = as_language(lang)
    check_schedule(schedule)
    spec = _exact_spec(sampler)
    sampler = spec.name
    targets = _class_targets(lang, spec, within)
    padding = Padding.parse(padding)
    offsets = Offsets.parse(offsets)
    longest_length(lengths)  # validates lengths without expanding a range
    check_limits_flag(limits)
    per_level = check_bool(per_level, "per_level")
    if limits:  # the longest length and the layouts before the monoid (enumeration is work)
        check_exact_layouts(schedule, lengths, offsets, 1, "lengths", limits)
    monoid = lang.monoid()
    M = monoid.size
    table = monoid.table
    lens = length_array(lengths)
    max_len = int(lens.max())
    if limits:
        check_exact_layouts(schedule, lens, offsets, M + lang.n_states, "lengths", limits)
    rows = node_table(schedule, lens, offsets, padding)
    n_levels = int(rows[:, 1].max(initial=0)) + 1 if len(rows) else 1
    plain = spec.exact == "strings" and bool(targets[0].all())
    if plain:
        # each level's node groups (m1, m2), their rows' group and weight: counted for the
        # work check, then used by the products below
        levels = []
        for lev in range(1, n_levels):
            sel = rows[rows[:, 1] == lev]
            if len(sel):
                keys, inv = unique_rows(sel[:, 2:4], return_inverse=True)
                levels.append((lev, keys, np.bincount(inv, weights=sel[:, 6])))
        _check_products(1, sum(len(k) for _, k, _ in levels), len(rows), M, 0, limits,
                        lang.name)
    else:
        keys, inv = unique_rows(rows[:, 1:4], return_inverse=True)
        _check_products(len(targets), len(keys), len(rows), M, lang.n_states, limits,
                        lang.name)
    P = ec_laws(monoid, max_len)
    R = ec_laws(monoid, max_len, indicator=True)
    counts = np.zeros((n_levels, M, M))
    support = np.zeros((n_levels, M, M), bool) if per_level else np.zeros((1, M, M), bool)
    if plain:
        # Context is irrelevant: Σ over node groups of weight · P_m1 ⊗ P_m2, one matmul per level.
        for lev, keys, w in levels:
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
        share = (1.0 / np.maximum(avail.sum(axis=0), 1) if spec.exact == "classes"
                 else np.ones(max_len + 1))
        tl = lens[lens >= 1]
        rescale = len(tl) / max(int(has[tl].sum()), 1)
        L_col = rows[:, 0].astype(np.int64)
        pre, suf = rows[:, 4].astype(np.int64), rows[:, 5].astype(np.int64)
        # rows of each node group (level, m1, m2), ascending: one sort, not a scan per group
        order = np.argsort(inv, kind="stable")
        bounds = np.searchsorted(inv[order], np.arange(len(keys) + 1))
        for target in targets:
            final = target[np.asarray(lang.output)].astype(float)
            g = backward_laws(lang.delta, final, max_len)
            g_r = backward_laws(lang.delta, final, max_len, indicator=True)
            # Z[L] = P(a uniform string of length L is in the target classes)
            Z = (pi * g[0][None, :]).sum(axis=1)
            Zr = (pi_r * g_r[0][None, :]).sum(axis=1) > 0
            live = Zr[L_col]
            if not live.any():
                continue
            w = rescale * rows[:, 6] * share[L_col] / np.maximum(Z[L_col], 1e-300)
            for gi, (lev, m1, m2) in enumerate(keys):
                idx = order[bounds[gi]:bounds[gi + 1]]
                idx = idx[live[idx]]
                if not len(idx):
                    continue
                Bm = (pi[pre[idx]] * w[idx, None]).T @ g[suf[idx]]  # (n, n) Σ π_p ⊗ g_s
                Br = (pi_r[pre[idx]].T @ g_r[suf[idx]]) > 0
                T = Bm[np.arange(n)[None, :], elements].sum(axis=1)  # T[z] = Σ_q B[q, f_z(q)]
                Tr = Br[np.arange(n)[None, :], elements].any(axis=1)
                counts[lev] += np.outer(P[m1], P[m2]) * T[table]
                support[lev if per_level else 0] |= np.outer(R[m1], R[m2]).astype(bool) & Tr[table]
    return Coverage(monoid, schedule, lens, counts.sum(axis=0), np.asarray(support.any(axis=0)), True,
                    sampler if resolve_within(lang, within) is None else f"{sampler} within {within}",
                    None, counts if per_level else None, support if per_level else None)


@scalar_args
def sampled_coverage(batch: Batch, schedule: str = "balanced", offsets: ArrayLike | None = None,
                     per_level: bool = False,
                     monoid: SyntacticMonoid | Automaton | str | None = None,
                     padding: Padding | str = Padding.LEARNED) -> Coverage:
    """Observed composition counts of a :class:`~monoidlab.strings.sampling.Batch`, per string.

    ``offsets``: the offset of each string in its buffer, (B,) ints (none: all at 0).
    ``monoid`` defaults to the batch language's monoid; a given one (a monoid, a language or
    a suite name) must belong to the same language (equal automata), else ``InputError``.

    >>> import monoidlab as ml
    >>> sampled_coverage(ml.sample("parity", [4], 10, seed=0)).support.sum()
    np.int64(4)
    """
    from monoidlab.coverage.compositions import composition_counts

    check_batch_language(batch, None, "batch")
    _not_empty(batch, "sampled_coverage: the batch")
    check_schedule(schedule)
    monoid = _monoid_for(monoid, batch)
    c = composition_counts(monoid, batch.tokens, batch.lengths, schedule, offsets, per_level=True,
                           padding=padding)
    n = max(len(batch), 1)
    return Coverage(monoid, schedule, np.unique(batch.lengths), c.sum(axis=0) / n,
                    c.sum(axis=0) > 0, False, "sampled", len(batch), c / n if per_level else None,
                    c > 0 if per_level else None)


def _not_empty(batch: Batch, what: str) -> None:
    """An empty batch shows no composition: a clear error, not numpy's on an empty array."""
    if not len(batch):
        raise InputError(f"{what} is empty (0 strings): there is nothing to count; sample at "
                         "least one string")


def _monoid_for(monoid_or_lang: SyntacticMonoid | Automaton | str | None,
                batch: Batch | None = None, what: str = "batch") -> SyntacticMonoid:
    """The monoid of a language or the monoid itself; checks that ``batch`` belongs to it."""
    if monoid_or_lang is None:
        assert batch is not None, "give a monoid, a language or a batch"
        return batch.automaton.monoid()
    monoid = as_monoid(monoid_or_lang, "monoid")
    if batch is not None:
        check_batch_language(batch, monoid.automaton, what)
    return monoid


def compare(train: Coverage, test: Coverage) -> CoverageGap:
    """The gap between a training and a test coverage of the same language and schedule."""
    for what, cov in (("train", train), ("test", test)):
        if not isinstance(cov, Coverage):
            raise InputError(f"{what}: a Coverage (exact_coverage or sampled_coverage), got "
                             f"{type(cov).__name__}")
    if train.monoid is not test.monoid and train.monoid.automaton != test.monoid.automaton:
        raise InputError(f"train and test coverages come from different languages "
                         f"({train.monoid.automaton.name!r}, {test.monoid.automaton.name!r})")
    if train.schedule != test.schedule:
        raise InputError(f"train and test coverages use different schedules "
                         f"({train.schedule!r}, {test.schedule!r})")
    return CoverageGap(train, test)


def coverage_gap(monoid_or_lang: SyntacticMonoid | Automaton | str, train: Batch, test: Batch,
                 schedule: str = "balanced") -> CoverageGap:
    """Gap between two sampled batches of the language of ``monoid_or_lang``.

    >>> import monoidlab as ml
    >>> lang = ml.load_language("parity")
    >>> tr = ml.sample(lang, range(1, 5), 200, seed=0); te = ml.sample(lang, [64], 50, seed=1)
    >>> coverage_gap(lang.monoid(), tr, te).summary()["missing"]
    0
    """
    monoid = _monoid_for(monoid_or_lang)
    _not_empty(train, "coverage_gap: the train batch")
    _not_empty(test, "coverage_gap: the test batch")
    return compare(sampled_coverage(train, schedule, monoid=_monoid_for(monoid, train, "train")),
                   sampled_coverage(test, schedule, monoid=_monoid_for(monoid, test, "test")))
