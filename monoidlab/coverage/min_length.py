"""Minimum training length: the smallest training range whose compositions cover the test's.

(a) *Support length*: the smallest L such that training lengths ``train_min..L`` show every
EC composition that the test lengths need (test strings at offset 0; training strings at the
given ``offsets``). (b) *Sample size*: for a training range and N strings, the probability that
every needed composition is seen at least r times (Poisson model on the exact expected
counts), and the smallest N reaching 1 − δ. Definitions in docs/coverage.md.

Example
-------
>>> import monoidlab as ml
>>> min_training_length(ml.load_language("dyck-2"), test_lengths=range(41, 501)).support_length
12
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from monoidlab._checks import (
    OFFSETS_NOW,
    check_count,
    check_probability,
    check_record,
    is_int,
    removed_keywords,
)
from monoidlab._util import check_limits_flag, limit_error, longest_length
from monoidlab.algebra.languages import as_language
from monoidlab.coverage.exact import (
    EXACT_SAMPLERS,
    MAX_EXACT_WORK,
    Coverage,
    check_exact_layouts,
    ec_laws,
    exact_coverage,
    exact_work,
    layout_bounds,
    node_table,
    unique_rows,
)
from monoidlab.coverage.length_rules import DEFAULT_MODEL, recommend
from monoidlab.errors import InputError
from monoidlab.geometry import (
    Lengths,
    LengthsLike,
    Offsets,
    OffsetsLike,
    Padding,
    length_array,
    range_text,
)
from monoidlab.strings.samplers import sampler_spec
from monoidlab.strings.sampling import DEFAULT_SAMPLER
from monoidlab.strings.schedules import check_schedule
from monoidlab.sublanguage import Within, resolve_within

if TYPE_CHECKING:
    from monoidlab.algebra.automaton import Automaton

__all__ = ["MinLength", "min_training_length", "coverage_probability", "samples_needed",
           "MAX_SEARCH_WORK"]

#: Work units (:func:`~monoidlab.coverage.exact.exact_work`, plus 2^17 per layout built) the search
#: for the support length may spend before it is refused (``limits=False`` lifts it). The
#: search stops at the support length, so only a long search that finds none gets this far;
#: it is checked after each step (each step is within the limits of exact coverage).
MAX_SEARCH_WORK = 4 * MAX_EXACT_WORK  # 2^34: about 2-3 ns each, so at most about 45 s


@dataclass(repr=False)
class MinLength:
    """Minimum-training-length estimates for one language."""

    name: str
    schedule: str
    test_lengths: str
    needed: int
    support_length: int | None  # None: no training length up to the search limit covers
    uncovered_at_limit: int
    samples_needed: dict[str, float] = field(default_factory=dict)  # train range -> N for 1 - delta
    sampler: str = DEFAULT_SAMPLER  # the training strings the sample sizes are for
    # the threshold study's length for this sampler (monoidlab.coverage.length_rules); None: no rule
    recommended_length: int | None = None
    recommended_samples: int | None = None  # strings per run the rule was measured with
    recommendation: str = ""  # its basis, or why there is none
    model: str = DEFAULT_MODEL  # the model family the recommendation holds for

    def __post_init__(self) -> None:
        check_record(self)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def __repr__(self) -> str:
        """One line: the verdict first, then what it is for.

        >>> min_training_length("parity", [64])
        MinLength(parity: support length 2 for test lengths 64:64, balanced schedule; 4 compositions needed)
        """
        if self.support_length is None:
            head = (f"no support length up to the search limit ({self.uncovered_at_limit} of "
                    f"{self.needed} needed compositions still unseen there)")
        else:
            head = f"support length {self.support_length}"
        sizes = "; ".join(f"train {r}: N = {n:,.0f}" if n == n and n != float("inf")
                          else f"train {r}: N = {n}" for r, n in self.samples_needed.items())
        rec = (f"; recommended length {self.recommended_length} for {self.sampler} strings "
               f"({self.model})" if self.recommended_length is not None else "")
        return (f"MinLength({self.name}: {head} for test lengths {self.test_lengths}, "
                f"{self.schedule} schedule; {self.needed} compositions needed"
                + (f"; samples needed ({self.sampler} strings): {sizes}" if sizes else "")
                + rec + ")")

    def _repr_html_(self) -> str:
        """The summary line and the sample sizes per training range."""
        from monoidlab._html import html_table, html_view

        rows = [{"training lengths": str(r), "strings needed": n if n != n or n == float("inf")
                 else f"{n:,.0f}"} for r, n in self.samples_needed.items()]
        if not rows:
            return html_view(repr(self), "<p>no sample size asked (<code>sample_ranges</code>)"
                                         "</p>")
        return html_view(repr(self), html_table(rows, ["training lengths", "strings needed"]))


def _support_at(lang: Automaton, L: int, schedule: str, offsets: OffsetsLike, R: np.ndarray,
                within: Within, padding: Padding | str) -> tuple[np.ndarray, int]:
    """The support of training length ``L`` and the work units it took: 2^17 per (length,
    offset) layout whose schedule is built, then per node group |M|^2 / 8 (one row of a
    matrix product) or, in a sub-language, :func:`~monoidlab.coverage.exact.exact_work`."""
    M = lang.monoid().size
    rows = node_table(schedule, [L], offsets, padding)
    units = layout_bounds(schedule, [L], offsets)[0] * 2**17 + len(rows) * 64
    if not len(rows):
        return np.zeros((M,) * 2, bool), units
    if resolve_within(lang, within) is None:
        keys = unique_rows(rows[:, 2:4])
        return (R[keys[:, 0]].T @ R[keys[:, 1]]) > 0, units + len(keys) * M * M // 8
    groups = len(unique_rows(rows[:, 1:4]))
    cov = exact_coverage(lang, [L], schedule=schedule, within=within, offsets=offsets,
                         padding=padding, sampler="uniform", limits=False)
    return cov.support, units + exact_work(1, groups, len(rows), M, lang.n_states)


@removed_keywords(offset_buffer=OFFSETS_NOW, train_offsets="offsets=")
def min_training_length(lang: Automaton | str, test_lengths: LengthsLike, *,
                        schedule: str = "balanced", train_min: int = 1,
                        max_search: int | None = None, within: Within = None,
                        offsets: OffsetsLike = None, padding: Padding | str = Padding.LEARNED,
                        delta: float | None = None, r: int = 1,
                        sample_ranges: Iterable[LengthsLike] = (),
                        sampler: str = DEFAULT_SAMPLER, limits: bool = True,
                        model: str = DEFAULT_MODEL) -> MinLength:
    """(a) Smallest L such that training lengths [train_min, L] show every composition that the
    test lengths need; (b) optionally, for each training range in ``sample_ranges``, the number
    of samples N for which all needed compositions are seen at least ``r`` times with
    probability ≥ 1 − ``delta`` (see :func:`samples_needed`), for training strings drawn by
    ``sampler`` (``uniform`` or ``balanced``, the default as everywhere; the support does not
    depend on it).

    ``offsets`` (balanced schedule: an :class:`~monoidlab.geometry.Offsets`, ``"random"``,
    an int or a list) place the *training* strings; test strings sit at offset 0.
    ``padding = "identity"``: nodes with an all-padding child compose nothing, on both sides
    (see :func:`monoidlab.coverage.exact.exact_coverage`).

    ``lang`` may be a suite name. ``limits`` (default ``True``) refuses, before any work, test
    lengths, a search range ``train_min..max_search`` or sample ranges beyond the work limits
    of :func:`~monoidlab.coverage.exact.exact_coverage`; ``limits=False`` lifts them.

    ``sampler`` may be any training sampler (``near_miss``, ``covering``, ...); sample sizes
    need an exact string law (uniform or balanced). The result's ``recommended_length`` is the
    threshold study's rule for that sampler and the ``model`` family (default ``mlp-ldru``, the
    plain study's; ``transform-tree`` has its own) applied to the support length (identity
    padding, no offsets, lengths from 1; see :mod:`monoidlab.coverage.length_rules`),
    ``recommendation`` its basis or why there is none; a family no study measured gets none.

    >>> min_training_length("parity", [64]).support_length
    2
    """
    lang = as_language(lang)
    if delta is not None and (isinstance(delta, bool) or not isinstance(delta, int | float)
                              or not 0 < delta < 1):
        raise InputError(f"delta must lie in (0, 1), got {delta!r}"[:200])
    if not is_int(r) or r < 1:
        raise InputError(f"r (times each composition is seen) must be an integer >= 1, got {r!r}")
    if max_search is not None:
        max_search = check_count(max_search, "max_search")
    train_min = check_count(train_min, "train_min", minimum=0)
    check_schedule(schedule)
    sampler = sampler_spec(sampler, tree=True).name  # an unknown one: named, with the closest
    if sample_ranges and sampler not in EXACT_SAMPLERS:
        raise InputError(f"sampler {sampler!r}: sample-size estimates need an exact string law "
                         f"({', '.join(EXACT_SAMPLERS)}); the recommendation alone takes any "
                         "training sampler")
    padding = Padding.parse(padding)
    offsets = Offsets.parse(offsets)
    if isinstance(sample_ranges, str | Lengths | range):  # one range, not a list of them
        raise InputError(f"sample_ranges: a list of training ranges, e.g. [range(1, 41)], got "
                         f"{sample_ranges!r}"[:200])
    sample_ranges = list(sample_ranges)
    top = max_search or longest_length(test_lengths, "test_lengths")
    if check_limits_flag(limits):
        n = lang.monoid().size + lang.n_states
        check_exact_layouts(schedule, test_lengths, None, n, "test_lengths")
        if top >= max(train_min, 1):  # the largest step of the search (it stops when covered)
            check_exact_layouts(schedule, [top], offsets, n, "max_search")
        for rng_ in sample_ranges:
            check_exact_layouts(schedule, rng_, offsets, n, "sample_ranges")
    monoid = lang.monoid()
    # supports do not depend on the string law (every string of the sub-language has a class);
    # the uniform law is the fast one
    test = exact_coverage(lang, test_lengths, schedule=schedule, within=within, padding=padding,
                          sampler="uniform", limits=limits)
    needed = test.support
    max_search = max_search or int(length_array(test_lengths).max())
    R = ec_laws(monoid, max_search, indicator=True)
    have = np.zeros_like(needed)
    found = None
    spent = 0  # work units of the search so far (it stops at the support length)
    for L in range(max(train_min, 1), max_search + 1):
        if limits and spent > MAX_SEARCH_WORK:
            raise limit_error(f"max_search: no training length up to {L - 1} covers the test "
                              f"lengths, and searching on to {max_search} exceeds the work "
                              f"limit ({MAX_SEARCH_WORK:.3g} units); a smaller max_search, or "
                              "train_min closer to the answer")
        support, units = _support_at(lang, L, schedule, offsets, R, within, padding)
        spent += units
        have |= support
        if not (needed & ~have).any():
            found = L
            break
    rec = recommend(found, sampler, padding=padding.value, schedule=schedule,
                    offsets=offsets.mode != "none",
                    train_min=max(train_min, 1), model=model)
    out = MinLength(lang.name, schedule, range_text(length_array(test_lengths)), int(needed.sum()),
                    found, int((needed & ~have).sum()), sampler=sampler,
                    recommended_length=rec.length, recommended_samples=rec.samples,
                    recommendation=rec.basis, model=rec.model)
    if delta is not None:
        for rng_ in sample_ranges:
            cov = exact_coverage(lang, rng_, schedule=schedule, within=within, offsets=offsets,
                                 padding=padding, sampler=sampler, limits=limits)
            out.samples_needed[range_text(length_array(rng_))] = samples_needed(cov, needed, delta, r)
    return out


def coverage_probability(cov: Coverage, needed: np.ndarray, n_samples: int, r: int = 1) -> float:
    """P(every needed composition is seen ≥ r times in ``n_samples`` strings), Poisson model.

    Approximation: the count of composition (x, y) in N independent strings is taken as
    Poisson(N·μ_xy), μ the exact expected count per string, and counts of different pairs as
    independent. Both are exact in the limit of rare pairs, which are the ones that matter;
    the simulation test checks the approximation on small languages.
    """
    from scipy.stats import poisson

    n_samples = check_count(n_samples, "n_samples", minimum=0)
    r = check_count(r, "r", minimum=1)
    needed = _check_needed(cov, needed)
    mu = cov.counts[needed]
    if (mu <= 0).any():
        return 0.0
    logp = np.log(np.clip(poisson.sf(r - 1, n_samples * mu), 1e-300, 1.0)).sum()
    return float(np.exp(logp))


def samples_needed(cov: Coverage, needed: np.ndarray, delta: float = 0.01, r: int = 1,
                   n_max: int = 10**12) -> float:
    """Smallest N with :func:`coverage_probability` ≥ 1 − delta (inf when out of reach)."""
    delta = check_probability(delta, "delta")
    r = check_count(r, "r", minimum=1)
    n_max = check_count(n_max, "n_max")
    needed = _check_needed(cov, needed)
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


def _check_needed(cov: Coverage, needed: Any) -> np.ndarray:
    """``needed`` as an (|M|, |M|) boolean mask of ``cov``'s monoid."""
    if not isinstance(cov, Coverage):
        raise InputError(f"cov: a Coverage (exact_coverage(...)), got {type(cov).__name__}")
    mask = np.asarray(needed)
    if mask.dtype != bool or mask.shape != cov.counts.shape:
        raise InputError(f"needed: a boolean mask of shape {cov.counts.shape} (e.g. a test "
                         f"coverage's support), got {mask.dtype} of shape {mask.shape}")
    return mask
