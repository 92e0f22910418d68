"""Tests for monoidlab.coverage.exact against brute force over every string, and against simulation.

The brute force enumerates Σ^L, weighs each string by its probability under the distribution,
and labels each tree node's children by ``element_of`` on the child's substring, with the tree
taken from ``references.reference_spans`` (a top-down recursion independent of the schedules and of
the dynamic programming under test).
"""

import itertools

import numpy as np
import pytest
from references import reference_spans

import monoidlab as ml
from monoidlab.coverage.compositions import composition_counts
from monoidlab.coverage.exact import (
    compare,
    coverage_gap,
    exact_coverage,
    node_table,
    sampled_coverage,
)
from monoidlab.coverage.min_length import coverage_probability, min_training_length, samples_needed
from monoidlab.geometry import Offsets
from monoidlab.strings.sampling import sample


def all_strings(lang, L: int) -> np.ndarray:
    return np.array(list(itertools.product(range(lang.n_symbols), repeat=L)),
                    np.int64).reshape(-1, L)


def string_weights(lang, strings, distribution, within) -> np.ndarray:
    """Probability of each string of one length (all zero when no string qualifies)."""
    L = strings.shape[1]
    cls = lang.classify(strings, np.full(len(strings), L))
    keep = np.ones(len(strings), bool) if within is None else \
        np.isin(cls, [lang.classes.index(c) for c in within])
    w = np.zeros(len(strings))
    if not keep.any():
        return w
    if distribution == "uniform":
        w[keep] = 1.0 / keep.sum()
    else:  # each class present at this length equally likely, uniform inside it
        present = np.unique(cls[keep])
        for c in present:
            sel = keep & (cls == c)
            w[sel] = 1.0 / (len(present) * sel.sum())
    return w


def brute_coverage(lang, lengths, schedule="balanced", distribution="uniform", within=None,
                   offsets=None, padding="learned"):
    """Expected counts per level ``(levels, M, M)`` and support, by enumeration.

    ``padding="identity"``: a node with an all-padding child passes the other through, so it
    is not a composition."""
    m = lang.monoid()
    M = m.size
    lengths = list(lengths)
    counts = np.zeros((64, M, M))
    support = np.zeros((M, M), bool)
    for L in lengths:
        strings = all_strings(lang, L)
        w = string_weights(lang, strings, distribution, within) / len(lengths)
        offs = Offsets.parse(offsets).for_length(L)
        for off in offs:
            for level, ls, rs in reference_spans(schedule, L, int(off)):
                if ls[0] == ls[1] and rs[0] == rs[1]:
                    continue  # both children padding: no composition
                if padding == "identity" and (ls[0] == ls[1] or rs[0] == rs[1]):
                    continue  # one child padding: the node passes the other one through
                x, y = (m.element_of(strings[:, a:b], np.full(len(strings), b - a))
                        for a, b in (ls, rs))
                np.add.at(counts[level], (x, y), w / len(offs))
                support[x[w > 0], y[w > 0]] = True
    top = int(np.flatnonzero(counts.reshape(64, -1).any(axis=1)).max(initial=0)) + 1
    return counts[:top], support


def assert_matches(cov, brute):
    counts, support = brute
    per = cov.per_level
    assert per is not None
    n = max(per.shape[0], counts.shape[0])
    pad = lambda a: np.concatenate([a, np.zeros((n - a.shape[0],) + a.shape[1:])])  # noqa: E731
    np.testing.assert_allclose(pad(per), pad(counts), rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(cov.counts, counts.sum(axis=0), rtol=1e-9, atol=1e-13)
    np.testing.assert_array_equal(cov.support, support)


# ------------------------------------------------------------------ exact = brute force
@pytest.mark.parametrize("distribution", ["uniform", "balanced"])
@pytest.mark.parametrize("schedule", ["balanced", "scan", "chain"])
@pytest.mark.parametrize("name", ["dyck-2", "tomita-3", "prefix-1-2", "tomita-5"])
def test_exact_equals_brute_force(name, schedule, distribution):
    lang = ml.load_language(name)
    lengths = range(1, 11)
    cov = exact_coverage(lang, lengths, schedule=schedule, sampler=distribution,
                         per_level=True)
    assert cov.exact
    assert_matches(cov, brute_coverage(lang, lengths, schedule, distribution))


@pytest.mark.parametrize("offsets", [None, [0, 1, 3], "random"])
@pytest.mark.parametrize("distribution", ["uniform", "balanced"])
@pytest.mark.parametrize("name", ["dyck-2", "tomita-3"])
def test_identity_padding_equals_brute_force(name, distribution, offsets):
    lang = ml.load_language(name)
    lengths = range(1, 10)
    cov = exact_coverage(lang, lengths, sampler=distribution, offsets=offsets,
                         padding="identity", per_level=True)
    assert_matches(cov, brute_coverage(lang, lengths, "balanced", distribution,
                                       offsets=offsets, padding="identity"))
    learned = exact_coverage(lang, lengths, sampler=distribution, offsets=offsets)
    assert (learned.support & ~cov.support).any()  # the (x, ε) compositions are gone
    assert not (cov.support & ~learned.support).any()


@pytest.mark.parametrize("padding", ["learned", "identity"])
def test_sampled_counts_follow_the_padding(padding, monkeypatch):
    from monoidlab.coverage import compositions

    lang = ml.load_language("dyck-2")
    m = lang.monoid()
    b = sample(lang, range(1, 14), 300, seed=0)
    lab = compositions.node_labels(m, b.tokens, b.lengths, "balanced")  # per node, any path
    keep = lab.composes(padding)
    ref = np.zeros((m.size, m.size), np.int64)
    np.add.at(ref, (lab.left[keep], lab.right[keep]), 1)
    kernel = composition_counts(m, b.tokens, b.lengths, "balanced", padding=padding)
    monkeypatch.setattr(compositions, "balanced_count_kernel", lambda: None)  # numpy path
    plain = composition_counts(m, b.tokens, b.lengths, "balanced", padding=padding, chunk=7)
    np.testing.assert_array_equal(kernel, ref)
    np.testing.assert_array_equal(plain, ref)
    if padding == "identity":  # fewer compositions than with a learned padding leaf
        assert keep.sum() < lab.has_composition.sum()


@pytest.mark.parametrize("schedule", ["balanced", "scan", "chain"])
def test_exact_equals_brute_force_length_12(schedule):
    lang = ml.load_language("tomita-3")
    cov = exact_coverage(lang, [11, 12], schedule=schedule, sampler="balanced",
                         per_level=True)
    assert_matches(cov, brute_coverage(lang, [11, 12], schedule, "balanced"))


@pytest.mark.parametrize("distribution", ["uniform", "balanced"])
@pytest.mark.parametrize("schedule", ["balanced", "scan", "chain"])
def test_exact_within_sub_language(schedule, distribution):
    lang = ml.load_language("modular-arithmetic")
    wf = [c for c in lang.classes if c != "incomplete"]
    cov = exact_coverage(lang, [1, 3, 5], schedule=schedule, sampler=distribution,
                         within=wf, per_level=True)
    brute = brute_coverage(lang, [1, 3, 5], schedule, distribution, within=wf)
    assert_matches(cov, brute)
    # the sub-language matters: operators never sit where a digit must be
    plain = exact_coverage(lang, [1, 3, 5], schedule=schedule)
    assert (plain.support & ~cov.support).any()


@pytest.mark.parametrize("distribution", ["uniform", "balanced"])
def test_within_lengths_without_strings_are_not_drawn(distribution):
    # well-formed expressions have odd lengths only: 1..7 is the law of 1, 3, 5, 7
    # (counts stay "expected compositions per string", which samples_needed relies on)
    lang = ml.load_language("modular-arithmetic")
    wf = [c for c in lang.classes if c != "incomplete"]
    a = exact_coverage(lang, range(1, 8), within=wf, sampler=distribution)
    b = exact_coverage(lang, [1, 3, 5, 7], within=wf, sampler=distribution)
    np.testing.assert_allclose(a.counts, b.counts, rtol=1e-12, atol=1e-15)
    assert exact_coverage(lang, [2], within=wf).counts.sum() == 0


def test_exact_within_a_single_class(dyck2):
    cov = exact_coverage(dyck2, range(2, 11, 2), within="accept", per_level=True)
    assert_matches(cov, brute_coverage(dyck2, range(2, 11, 2), within=["accept"]))
    odd_too = exact_coverage(dyck2, range(1, 11), within="accept")
    np.testing.assert_allclose(odd_too.counts, cov.counts, rtol=1e-12)


@pytest.mark.parametrize("distribution", ["uniform", "balanced"])
@pytest.mark.parametrize("offsets", [[0, 1, 2], Offsets.random(8), "random"])
def test_exact_with_offsets(offsets, distribution):
    lang = ml.load_language("dyck-2")
    lengths = range(1, 7)
    cov = exact_coverage(lang, lengths, sampler=distribution, offsets=offsets, per_level=True)
    assert_matches(cov, brute_coverage(lang, lengths, "balanced", distribution, None, offsets))


def test_node_table_weights():
    rows = node_table("balanced", [5, 6])
    # weights: each length half the mass; L = 5 has 6 nodes with a composition, L = 6 also 6
    assert len(rows) == 12 and rows[:, 6].sum() == pytest.approx(6.0)
    assert (rows[:, 2] + rows[:, 3] + rows[:, 4] + rows[:, 5] == rows[:, 0]).all()


def test_counts_are_expected_nodes_per_string(dyck2):
    # balanced: L = 1..8 carries 0,1,3,3,6,6,7,7 composition nodes (padding pairs included)
    cov = exact_coverage(dyck2, range(1, 9))
    assert cov.counts.sum() == pytest.approx(33 / 8)
    assert cov.probabilities.sum() == pytest.approx(1.0)
    assert cov.node_ec_distribution.sum() == pytest.approx(1.0)
    # scan: L = 8 has 11 nodes; chain: L - 1
    assert exact_coverage(dyck2, [8], schedule="scan").counts.sum() == pytest.approx(11)
    assert exact_coverage(dyck2, [8], schedule="chain").counts.sum() == pytest.approx(7)


def test_long_lengths_support_does_not_underflow():
    lang = ml.load_language("dyck-6")
    cov = exact_coverage(lang, [500])
    # probabilities underflow for some pairs, supports are exact booleans
    assert cov.support.sum() >= (cov.counts > 0).sum()
    assert np.isfinite(cov.counts).all()


# ------------------------------------------------------------------ Monte Carlo → exact
@pytest.mark.parametrize("method, schedule", [("uniform", "balanced"), ("balanced", "balanced"),
                                              ("uniform", "scan"), ("balanced", "chain")])
def test_sampled_converges_to_exact(dyck2, method, schedule):
    lengths = range(1, 17)
    exact = exact_coverage(dyck2, lengths, schedule=schedule, sampler=method)
    errs = []
    for n in (1_000, 10_000, 100_000):
        b = sample(dyck2, lengths, n, sampler=method, seed=n)
        s = sampled_coverage(b, schedule)
        assert not s.exact and s.n_strings == n
        assert not (s.support & ~exact.support).any()  # nothing outside the exact support
        errs.append(np.abs(s.counts - exact.counts).sum() / exact.counts.sum())
    # total-variation-like error shrinks like 1/sqrt(n)
    assert errs[2] < errs[1] < errs[0]
    assert errs[2] < 0.015 and errs[0] / errs[2] > 4


def test_sampled_converges_with_random_offsets(dyck2):
    lengths = range(1, 9)
    exact = exact_coverage(dyck2, lengths, offsets=Offsets.random(16))
    b = sample(dyck2, lengths, 60_000, seed=21)
    rng = np.random.default_rng(22)
    offsets = np.array([rng.integers(0, 16 - L + 1) for L in b.lengths])
    s = sampled_coverage(b, "balanced", offsets=offsets)
    assert np.abs(s.counts - exact.counts).sum() / exact.counts.sum() < 0.02


def test_sampled_coverage_per_level(dyck2):
    b = sample(dyck2, range(1, 17), 2000, seed=23)
    s = sampled_coverage(b, "balanced", per_level=True)
    np.testing.assert_allclose(s.per_level.sum(axis=0), s.counts)
    exact = exact_coverage(dyck2, range(1, 17), per_level=True)
    assert s.per_level.shape[0] == exact.per_level.shape[0]


# ------------------------------------------------------------------ gaps
def test_gap_summary_and_views(dyck2):
    train = exact_coverage(dyck2, range(1, 7))
    test = exact_coverage(dyck2, range(30, 35))
    gap = compare(train, test)
    assert (gap.missing == (test.support & ~train.support)).all()
    s = gap.summary()
    assert s["needed"] == test.support.sum()
    assert s["covered"] + s["missing"] == s["needed"] and s["missing"] > 0
    assert (s["train_lengths"], s["test_lengths"]) == ("1:6", "30:34")
    rows = gap.missing_list()
    assert len(rows) == s["missing"]
    probs = [r["test_probability"] for r in rows]
    assert probs == sorted(probs, reverse=True)
    labels = dyck2.monoid().labels()
    assert all(labels[r["left"]] == r["left_word"] for r in rows)
    ratio = gap.ratio
    assert np.isnan(ratio[gap.missing]).all()
    both = train.support & test.support & (train.counts > 0) & (test.counts > 0)
    np.testing.assert_allclose(ratio[both], test.probabilities[both] / train.probabilities[both])
    shift = gap.ec_shift
    assert shift["shift"].sum() == pytest.approx(0.0, abs=1e-12)


def test_coverage_gap_from_batches(parity, dyck2):
    """coverage_gap = compare of the two batches' sampled coverages, under the monoid it is given
    (a monoid or its language), and it refuses batches of another language."""
    tr = sample(dyck2, range(1, 5), 200, seed=0)
    te = sample(dyck2, [24], 50, seed=1)
    m = dyck2.monoid()
    for schedule in ("balanced", "scan"):
        gap = coverage_gap(m, tr, te, schedule=schedule)
        assert gap.train.monoid is m and gap.test.schedule == schedule
        want = compare(sampled_coverage(tr, schedule), sampled_coverage(te, schedule))
        np.testing.assert_array_equal(gap.missing, want.missing)
        np.testing.assert_allclose(gap.test.counts, want.test.counts)
        # the missing compositions are the set difference of the observed pairs
        seen_tr = composition_counts(m, tr.tokens, tr.lengths, schedule) > 0
        seen_te = composition_counts(m, te.tokens, te.lengths, schedule) > 0
        np.testing.assert_array_equal(gap.missing, seen_te & ~seen_tr)
        assert gap.summary()["missing"] == int((seen_te & ~seen_tr).sum()) > 0
    # the language itself works as the first argument
    np.testing.assert_array_equal(coverage_gap(dyck2, tr, te).missing,
                                  coverage_gap(m, tr, te).missing)
    # parity: every composition of length 64 already occurs at lengths 1..4
    ptr, pte = sample(parity, range(1, 5), 200, seed=0), sample(parity, [64], 50, seed=1)
    assert coverage_gap(parity.monoid(), ptr, pte).summary()["missing"] == 0
    # the first argument is used: batches of another language are refused, naming both
    with pytest.raises(ml.InputError, match="'parity'.*'dyck-2'"):
        coverage_gap(m, ptr, pte)
    with pytest.raises(ml.InputError, match="'parity'.*'dyck-2'"):
        coverage_gap(dyck2, tr, pte)


def test_d6_paper_gap():
    """D_6, train 10–40 vs test 480–500: the 53 missing compositions (docs/coverage.md) are all
    (x, ε) with x an EC whose shortest words have 9–12 symbols, next to the padding of the
    balanced tree; a half-filled block of a training string (length ≤ 40) holds at most 8."""
    lang = ml.load_language("dyck-6")
    m = lang.monoid()
    train, test = exact_coverage(lang, range(10, 41)), exact_coverage(lang, range(480, 501))
    gap = compare(train, test)
    s = gap.summary()
    assert (s["needed"], s["covered"], s["missing"]) == (10224, 10171, 53)
    rows = gap.missing_list()
    assert len(rows) == 53
    assert {(r["right"], r["right_word"]) for r in rows} == {(0, "ε")}  # the identity
    left = np.array([r["left"] for r in rows])
    assert sorted(set(m.word_lengths[left].tolist())) == [9, 10, 11, 12]
    assert all(len(r["left_word"]) == m.word_lengths[r["left"]] for r in rows)
    # needed at test: each has a positive probability there and none in training
    assert all(r["test_probability"] > 0 for r in rows)
    assert (train.counts[left, 0] == 0).all() and (test.counts[left, 0] > 0).all()
    # training never puts an EC of word length > 8 next to padding
    assert not (train.support[:, 0] & (m.word_lengths > 8)).any()


# ------------------------------------------------------------------ minimum training length
def _brute_support(lang, L, schedule):
    return brute_coverage(lang, [L], schedule)[1]


@pytest.mark.parametrize("schedule", ["balanced", "scan", "chain"])
def test_min_length_support_brute_force(dyck2, schedule):
    test_lengths = range(10, 13)
    needed = brute_coverage(dyck2, test_lengths, schedule)[1]
    have = np.zeros_like(needed)
    expected = None
    for L in range(1, 13):
        have |= _brute_support(dyck2, L, schedule)
        if not (needed & ~have).any():
            expected = L
            break
    res = min_training_length(dyck2, test_lengths, schedule=schedule)
    assert res.needed == needed.sum()
    assert res.support_length == expected and expected is not None
    assert res.uncovered_at_limit == 0


def test_min_length_long_test_range_by_unions(dyck2):
    test_lengths = range(20, 25)
    needed = exact_coverage(dyck2, test_lengths).support

    def by_unions(train_min):
        have = np.zeros_like(needed)
        for L in range(train_min, 25):
            have |= exact_coverage(dyck2, [L]).support
            if not (needed & ~have).any():
                return L
        return None

    expected = by_unions(1)
    assert min_training_length(dyck2, test_lengths).support_length == expected == 12
    # train_min: the union starts there; starting past 12 needs a longer maximum length
    for start in (6, 13):
        later = min_training_length(dyck2, test_lengths, train_min=start).support_length
        assert later == by_unions(start)
    assert min_training_length(dyck2, test_lengths, train_min=13).support_length != 12


def test_min_length_known_values(parity, dyck2):
    assert min_training_length(parity, range(41, 501)).support_length == 2
    # D_2 needs the EC of "0011" (first reachable at length 4) next to padding:
    # ([8, 12) then ∅), so 12
    assert min_training_length(dyck2, range(41, 501)).support_length == 12
    res = min_training_length(dyck2, range(41, 501), max_search=8)
    assert res.support_length is None and res.uncovered_at_limit > 0


def test_min_length_within_and_offsets():
    lang = ml.load_language("modular-arithmetic")
    wf = [c for c in lang.classes if c != "incomplete"]
    res = min_training_length(lang, range(41, 61, 2), within=wf)
    needed = exact_coverage(lang, range(41, 61, 2), within=wf).support
    S = res.support_length
    assert S is not None and res.needed == needed.sum()
    have = np.zeros_like(needed)
    for L in range(1, S):
        have |= exact_coverage(lang, [L], within=wf).support
    assert (needed & ~have).any()  # minimal
    have |= exact_coverage(lang, [S], within=wf).support
    assert not (needed & ~have).any()  # sufficient
    d2 = ml.load_language("dyck-2")
    r0 = min_training_length(d2, range(41, 101)).support_length
    r_off = min_training_length(d2, range(41, 101), offsets="random").support_length
    assert (r0, r_off) == (12, 8)  # random offsets shorten the support


# ------------------------------------------------------------------ sample size (Poisson)
def _simulated_probability(lang, lengths, needed, n, r, reps, seed):
    """Fraction of ``reps`` independent training sets of ``n`` strings that see every needed
    composition at least ``r`` times."""
    m = lang.monoid()
    b = sample(lang, lengths, n * reps, seed=seed)
    hits = 0
    for i in range(reps):
        sl = slice(i * n, (i + 1) * n)
        c = composition_counts(m, b.tokens[sl], b.lengths[sl])
        hits += bool((c[needed] >= r).all())
    return hits / reps


@pytest.mark.parametrize("r, target", [(1, 0.3), (1, 0.8), (2, 0.5)])
def test_coverage_probability_matches_simulation(dyck2, r, target):
    lengths = range(1, 7)  # rarest needed pairs: ~1e-3 per string, N ~ 1000
    train = exact_coverage(dyck2, lengths)
    needed = exact_coverage(dyck2, range(30, 35)).support & train.support
    n = samples_needed(train, needed, delta=1 - target, r=r)
    p = coverage_probability(train, needed, n, r)
    assert 0.2 < p < 0.9
    sim = _simulated_probability(dyck2, lengths, needed, n, r, reps=300, seed=int(100 * target))
    assert abs(sim - p) < 0.1, (n, p, sim)


def test_samples_needed_edges(dyck2):
    train = exact_coverage(dyck2, range(1, 5))
    test = exact_coverage(dyck2, range(30, 35))
    # a needed composition that training never shows: probability 0, N infinite
    assert coverage_probability(train, test.support, 10**6) == 0.0
    assert samples_needed(train, test.support) == float("inf")
    ok = test.support & train.support
    n1 = samples_needed(train, ok, delta=0.01)
    assert coverage_probability(train, ok, n1) >= 0.99 > coverage_probability(train, ok, n1 - 1)
    assert samples_needed(train, ok, delta=0.01, r=3) > n1
    res = min_training_length(dyck2, range(30, 35), delta=0.01, sample_ranges=[range(1, 13)])
    assert set(res.samples_needed) == {"1:12"}
    assert 0 < res.samples_needed["1:12"] < float("inf")


def test_composition_counts_agree_with_sampled_coverage(dyck2):
    b = sample(dyck2, range(1, 30), 300, seed=30)
    c = composition_counts(dyck2.monoid(), b.tokens, b.lengths)
    np.testing.assert_allclose(sampled_coverage(b).counts, c / 300)


def test_doctests():
    import doctest

    import monoidlab.coverage.exact as mod

    assert doctest.testmod(mod, optionflags=doctest.ELLIPSIS).failed == 0


def test_unique_rows_equals_numpys_unique_along_rows():
    """The packed-key unique of the node tables: the same rows, order and inverse as
    np.unique(axis=0), on random tables (negative entries and huge spans included)."""
    from monoidlab.coverage.exact import unique_rows

    rng = np.random.default_rng(0)
    for _ in range(300):
        n, k = int(rng.integers(0, 60)), int(rng.integers(1, 5))
        a = rng.integers(-3, int(rng.integers(1, 50)), (n, k))
        keys, inv = np.unique(a, axis=0, return_inverse=True)
        got, got_inv = unique_rows(a, return_inverse=True)
        assert np.array_equal(got, keys) and np.array_equal(got_inv, inv.ravel())
    huge = np.array([[2**40, 1], [0, 2**40], [2**40, 1]])  # no packed key: numpy's way
    assert np.array_equal(unique_rows(huge), np.unique(huge, axis=0))
