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

from monoidlab.coverage import Coverage, ec_laws, exact_coverage, node_table
from monoidlab.errors import InputError
from monoidlab.geometry import LengthsLike, OffsetsLike, Padding, length_array, range_text
from monoidlab.sampling import DEFAULT_SAMPLER
from monoidlab.sublanguage import Within, resolve_within

if TYPE_CHECKING:
    from monoidlab.automaton import Automaton

__all__ = ["MinLength", "min_training_length", "coverage_probability", "samples_needed"]


@dataclass
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

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _support_at(lang: Automaton, L: int, schedule: str, offsets: OffsetsLike, R: np.ndarray,
                within: Within, padding: Padding | str) -> np.ndarray:
    if resolve_within(lang, within) is None:
        rows = node_table(schedule, [L], offsets, padding)
        if not len(rows):
            return np.zeros((lang.monoid().size,) * 2, bool)
        keys = np.unique(rows[:, 2:4].astype(np.int64), axis=0)
        return (R[keys[:, 0]].T @ R[keys[:, 1]]) > 0
    return exact_coverage(lang, [L], schedule=schedule, within=within, offsets=offsets,
                          padding=padding, sampler="uniform").support


def min_training_length(lang: Automaton, test_lengths: LengthsLike, *,
                        schedule: str = "balanced", train_min: int = 1,
                        max_search: int | None = None, within: Within = None,
                        offsets: OffsetsLike = None, padding: Padding | str = Padding.LEARNED,
                        delta: float | None = None, r: int = 1,
                        sample_ranges: Iterable[LengthsLike] = (),
                        sampler: str = DEFAULT_SAMPLER) -> MinLength:
    """(a) Smallest L such that training lengths [train_min, L] show every composition that the
    test lengths need; (b) optionally, for each training range in ``sample_ranges``, the number
    of samples N for which all needed compositions are seen at least ``r`` times with
    probability ≥ 1 − ``delta`` (see :func:`samples_needed`), for training strings drawn by
    ``sampler`` (``uniform`` or ``balanced``, the default as everywhere; the support does not
    depend on it).

    ``offsets`` (balanced schedule: an :class:`~monoidlab.geometry.Offsets`, ``"random"``,
    an int or a list) place the *training* strings; test strings sit at offset 0.
    ``padding = "identity"``: nodes with an all-padding child compose nothing, on both sides
    (see :func:`monoidlab.coverage.exact_coverage`).
    """
    if delta is not None and not 0 < delta < 1:
        raise InputError(f"delta must lie in (0, 1), got {delta}")
    if isinstance(r, bool) or not isinstance(r, int) or r < 1:
        raise InputError(f"r (times each composition is seen) must be an integer >= 1, got {r!r}")
    if max_search is not None and max_search < 1:
        raise InputError(f"max_search must be >= 1, got {max_search}")
    monoid = lang.monoid()
    # supports do not depend on the string law (every string of the sub-language has a class);
    # the uniform law is the fast one
    test = exact_coverage(lang, test_lengths, schedule=schedule, within=within, padding=padding,
                          sampler="uniform")
    needed = test.support
    max_search = max_search or int(length_array(test_lengths).max())
    R = ec_laws(monoid, max_search, indicator=True)
    have = np.zeros_like(needed)
    found = None
    for L in range(max(train_min, 1), max_search + 1):
        have |= _support_at(lang, L, schedule, offsets, R, within, padding)
        if not (needed & ~have).any():
            found = L
            break
    out = MinLength(lang.name, schedule, range_text(length_array(test_lengths)), int(needed.sum()),
                    found, int((needed & ~have).sum()), sampler=sampler)
    if delta is not None:
        for rng_ in sample_ranges:
            cov = exact_coverage(lang, rng_, schedule=schedule, within=within, offsets=offsets,
                                 padding=padding, sampler=sampler)
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
