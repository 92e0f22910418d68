"""Tests for monoidlab.strings.sampling: reproducibility, shapes, and the law of every sampler.

Laws are checked against full enumeration of Σ^L on tiny languages: counts of each string (or
EC, or class) against their exact expectation with a chi-square test at a small p-value. Every
draw is seeded, so the tests are deterministic; the p-value threshold only guards against an
unlucky choice of seed when the code changes.
"""

import itertools

import numpy as np
import pytest
from scipy.stats import chisquare

import monoidlab as ml
from monoidlab.geometry import length_array as as_lengths
from monoidlab.strings.samplers import sampler_spec
from monoidlab.strings.sampling import SAMPLERS, Batch, length_batches, path_counts, sample

P_MIN = 1e-4  # chi-square p-value below which a law is rejected


def all_strings(lang, L: int) -> np.ndarray:
    """Every string of length L as a (k^L, L) token array, in lexicographic order."""
    k = lang.n_symbols
    return np.array(list(itertools.product(range(k), repeat=L)), np.int64).reshape(-1, L)


def codes(tokens: np.ndarray, k: int) -> np.ndarray:
    """Index of each string in :func:`all_strings` order (base-k number)."""
    L = tokens.shape[1]
    return tokens @ (k ** np.arange(L - 1, -1, -1, dtype=np.int64))


def assert_uniform(observed: np.ndarray, what: str):
    """Counts over equally likely outcomes: chi-square and a loose max relative deviation."""
    observed = np.asarray(observed, float)
    p = chisquare(observed).pvalue
    assert p > P_MIN, f"{what}: not uniform (chi-square p = {p:.2e}): {observed}"
    mean = observed.mean()
    assert np.abs(observed - mean).max() < 6 * np.sqrt(mean) + 1, what


@pytest.fixture(scope="module")
def modarith():
    return ml.load_language("modular-arithmetic")


def well_formed(lang):
    return [c for c in lang.classes if c != "incomplete"]


# ------------------------------------------------------------------ shapes and reproducibility
@pytest.mark.parametrize("method", SAMPLERS)
@pytest.mark.parametrize("name", ["dyck-2", "tomita-3", "prefix-1-2"])
def test_reproducible_shapes_and_padding(name, method):
    lang = ml.load_language(name)
    lengths = [2, 3, 5, 8, 11]
    a = sample(lang, lengths, 300, sampler=method, seed=7)
    b = sample(lang, lengths, 300, sampler=method, seed=7)
    c = sample(lang, lengths, 300, sampler=method, seed=np.random.default_rng(7))
    for x in (b, c):
        np.testing.assert_array_equal(a.tokens, x.tokens)
        np.testing.assert_array_equal(a.lengths, x.lengths)
        np.testing.assert_array_equal(a.labels, x.labels)
    other = sample(lang, lengths, 300, sampler=method, seed=8)
    assert not np.array_equal(a.tokens, other.tokens)

    assert a.tokens.ndim == 2 and a.tokens.shape == (300, a.lengths.max())
    assert np.issubdtype(a.tokens.dtype, np.integer)
    assert set(a.lengths.tolist()) <= set(lengths)
    assert len(set(a.lengths.tolist())) == len(lengths)  # 300 draws hit all five lengths
    pad = np.arange(a.tokens.shape[1])[None, :] >= a.lengths[:, None]
    assert (a.tokens[pad] == 0).all()
    assert a.tokens.min() >= 0 and a.tokens.max() < lang.n_symbols
    # labels are the automaton's, and elements() the monoid's EC of each string
    np.testing.assert_array_equal(a.labels, lang.classify(a.tokens, a.lengths))
    m = lang.monoid()
    np.testing.assert_array_equal(m.outputs[a.elements()], a.labels)


def test_lengths_are_uniform_over_the_set(dyck2):
    b = sample(dyck2, range(1, 11), 20_000, seed=0)
    assert_uniform(np.bincount(b.lengths, minlength=11)[1:], "lengths")
    assert sample(dyck2, 7, 50, seed=0).lengths.tolist() == [7] * 50  # an int = one length


def test_uniform_letter_frequencies(modarith):
    b = sample(modarith, [12], 20_000, sampler="uniform", seed=1)
    assert_uniform(np.bincount(b.tokens.ravel(), minlength=8), "letters")
    # and the strings themselves (length 3: 512 strings, ~39 draws each)
    s = sample(modarith, [3], 20_000, sampler="uniform", seed=2)
    assert_uniform(np.bincount(codes(s.tokens, 8), minlength=8**3), "strings")


# ------------------------------------------------------------------ balanced
def test_balanced_equal_class_shares_per_length(dyck2):
    lang = ml.load_language("prefix-1-4")  # 4 classes at every length >= 1
    for lg, lengths in ((dyck2, range(1, 13)), (lang, range(1, 7))):
        b = sample(lg, lengths, 1001, sampler="balanced", seed=3)
        for L in np.unique(b.lengths):
            lab = b.labels[b.lengths == L]
            present = np.bincount(lab, minlength=lg.n_classes)
            present = present[present > 0]
            assert present.max() - present.min() <= 1, (lg.name, L, present)
    # dyck-2: both classes at even lengths, only reject at odd ones
    b = sample(dyck2, range(1, 13), 2000, sampler="balanced", seed=4)
    even = b.lengths % 2 == 0
    assert (b.labels[~even] == 0).all()
    assert abs(b.labels[even].mean() - 0.5) < 0.01


def test_balanced_is_exactly_uniform_inside_each_class(dyck2):
    L = 8
    strings = all_strings(dyck2, L)
    cls = dyck2.classify(strings, np.full(len(strings), L))
    b = sample(dyck2, [L], 20_000, sampler="balanced", seed=5)
    freq = np.bincount(codes(b.tokens, 2), minlength=2**L)
    assert np.bincount(b.labels).tolist() == [10_000, 10_000]
    for c in (0, 1):
        members = np.flatnonzero(cls == c)
        assert_uniform(freq[members], f"class {c}")
    # the rare positives (8 of 256 strings) each come out ~1/8 of the positive half
    pos = np.flatnonzero(cls == 1)
    assert len(pos) == 8
    np.testing.assert_allclose(freq[pos] / 10_000, 1 / 8, atol=0.02)


def test_balanced_long_rare_class_is_fast(dyck2):
    # P(positive) at length 400 is ~1e-50 for uniform strings: no rejection loop can do this
    b = sample(ml.load_language("dyck-6"), [400], 200, sampler="balanced", seed=6)
    assert b.labels.sum() == 100


def test_balanced_classes_argument(dyck2):
    b = sample(dyck2, [4, 6], 100, sampler="balanced", classes=["accept"], seed=0)
    assert (b.labels == 1).all()
    with pytest.raises(ValueError, match="'accept' has no string of length 3"):
        sample(dyck2, [3], 10, sampler="balanced", classes=["accept"], seed=0)
    with pytest.raises(ValueError, match="'accept' has no string of length 3"):
        sample(dyck2, [2, 3, 4], 100, sampler="balanced", classes=["accept"], seed=0)
    with pytest.raises(ValueError, match="unknown class"):
        sample(dyck2, [4], 10, sampler="balanced", classes=["maybe"])


# ------------------------------------------------------------------ ec_stratified
def test_ec_stratified_uniform_over_ecs_then_inside_each(dyck2):
    L = 6
    m = dyck2.monoid()
    strings = all_strings(dyck2, L)
    ecs = m.element_of(strings, np.full(len(strings), L))
    reachable = np.unique(ecs)
    b = sample(dyck2, [L], 20_000, sampler="ec_stratified", seed=9)
    got = b.elements()
    assert set(np.unique(got).tolist()) == set(reachable.tolist())
    assert_uniform(np.bincount(got, minlength=m.size)[reachable], "ECs")
    freq = np.bincount(codes(b.tokens, 2), minlength=2**L)
    for e in reachable:
        members = np.flatnonzero(ecs == e)
        if len(members) > 1:
            assert_uniform(freq[members], f"strings of EC {e}")


def test_ec_stratified_reaches_rare_ecs(dyck2):
    # under uniform sampling the EC of "0011" is rare at length 40; stratified sampling
    # gives it 1/|reachable ECs| of the draws
    m = dyck2.monoid()
    b = sample(dyck2, [40], 4000, sampler="ec_stratified", seed=10)
    share = np.bincount(b.elements(), minlength=m.size)
    n_reach = int((share > 0).sum())
    assert n_reach == 8
    assert share[m.words.index("0011")] > 4000 / n_reach * 0.8


def test_ec_stratified_within(dyck2):
    b = sample(dyck2, [6, 8], 500, sampler="ec_stratified", within="accept", seed=0)
    assert (b.labels == 1).all()


# ------------------------------------------------------------------ ldru
def _never_dead(lang, tokens, lengths) -> np.ndarray:
    """True where the string's run never enters a state that cannot reach acceptance."""
    delta = np.asarray(lang.delta)
    live = np.asarray(lang.output) == 1
    for _ in range(lang.n_states):
        live = live | live[delta].any(axis=1)
    state = np.full(len(lengths), lang.start)
    ok = np.ones(len(lengths), bool)
    for t in range(tokens.shape[1]):
        act = lengths > t
        state = np.where(act, delta[state, tokens[:, t]], state)
        ok &= live[state]
    return ok


def _alive_probability(lang, L: int) -> float:
    """P(a uniform string of length L never enters a dead state), by a DP over states."""
    delta = np.asarray(lang.delta)
    live = np.asarray(lang.output) == 1
    for _ in range(lang.n_states):
        live = live | live[delta].any(axis=1)
    p = np.zeros(lang.n_states)
    p[lang.start] = 1.0
    for _ in range(L):
        p = np.bincount(delta.ravel(), weights=np.repeat(p, lang.n_symbols),
                        minlength=lang.n_states) / lang.n_symbols * live
    return float(p.sum())


def test_ldru_half_random_walks(dyck2):
    L, n = 20, 20_000
    b = sample(dyck2, [L], n, sampler="ldru", seed=11)
    alive = _never_dead(dyck2, b.tokens, b.lengths)
    strings = all_strings(dyck2, 12)  # the helper itself against a DP over states
    dp = _alive_probability(dyck2, 12)
    assert _never_dead(dyck2, strings, np.full(len(strings), 12)).mean() == pytest.approx(dp)
    p_alive = _alive_probability(dyck2, L)
    # exactly n/2 walks (all alive) + n/2 uniform strings (alive with probability p_alive)
    expected = n // 2 + n // 2 * p_alive
    assert abs(alive.sum() - expected) < 5 * np.sqrt(n / 2 * p_alive * (1 - p_alive)) + 1
    # the walks pick uniformly among live letters: from depth 0 only "(" is live
    first_open = (b.tokens[:, 0] == 0).mean()
    assert abs(first_open - 0.75) < 0.015
    # labels are recomputed (a walk can end at any depth)
    assert 0 < b.labels.mean() < 0.5


def test_ldru_is_uniform_for_a_non_recogniser():
    lang = ml.load_language("prefix-1-2")
    b = sample(lang, [5], 8000, sampler="ldru", seed=12)
    assert_uniform(np.bincount(codes(b.tokens, 2), minlength=32), "strings")


# ------------------------------------------------------------------ within (sub-language)
@pytest.mark.parametrize("method", ["uniform", "balanced", "ec_stratified"])
def test_within_well_formed_expressions(modarith, method):
    wf = well_formed(modarith)
    b = sample(modarith, [1, 3, 5], 3000, sampler=method, within=wf, seed=13)
    inc = modarith.classes.index("incomplete")
    assert (b.labels != inc).all()
    assert set(b.lengths.tolist()) == {1, 3, 5}
    if method == "balanced":
        for L in (1, 3, 5):
            shares = np.bincount(b.labels[b.lengths == L], minlength=5)
            assert shares.max() - shares.min() <= 1


def test_within_uniform_over_the_sub_language(modarith):
    wf = well_formed(modarith)
    strings = all_strings(modarith, 3)
    inside = np.flatnonzero(np.isin(modarith.classify(strings, np.full(len(strings), 3)),
                                    [modarith.classes.index(c) for c in wf]))
    assert len(inside) == 5 * 3 * 5  # digit, operator, digit
    b = sample(modarith, [3], 15_000, sampler="uniform", within=wf, seed=14)
    freq = np.bincount(codes(b.tokens, 8), minlength=8**3)
    assert freq[np.setdiff1d(np.arange(8**3), inside)].sum() == 0
    assert_uniform(freq[inside], "well-formed strings")


@pytest.mark.parametrize("within", [None, "well-formed"])
def test_uniform_classes_is_uniform_over_those_classes(modarith, within):
    """``classes=`` with ``uniform``: exactly the strings of those classes (inside ``within``),
    each equally likely, against a brute-force enumeration of every string of length 3."""
    wf = well_formed(modarith)
    picked = wf[:2]
    strings = all_strings(modarith, 3)
    cls = modarith.classify(strings, np.full(len(strings), 3))
    inside = np.flatnonzero(np.isin(cls, [modarith.classes.index(c) for c in picked]))
    assert 0 < len(inside) < 5 * 3 * 5  # some of the well-formed strings (digit, op, digit)
    b = sample(modarith, [3], 6_000, sampler="uniform", classes=picked, seed=15,
               within=wf if within else None)
    freq = np.bincount(codes(b.tokens, 8), minlength=8**3)
    assert freq[np.setdiff1d(np.arange(8**3), inside)].sum() == 0
    assert_uniform(freq[inside], f"strings of classes {picked}")


@pytest.mark.parametrize("method", [m for m in SAMPLERS if not sampler_spec(m).takes_classes])
def test_classes_is_refused_where_the_sampler_draws_its_own_classes(dyck2, method):
    with pytest.raises(ValueError, match=f"only the samplers .*'{method}' draws its own mix"):
        sample(dyck2, [4], 10, sampler=method, classes=["accept"], seed=0)


def test_within_errors(modarith, dyck2):
    wf = well_formed(modarith)
    for method in ("uniform", "balanced", "ec_stratified"):
        with pytest.raises(ValueError, match="no string of length 2"):
            sample(modarith, [1, 2, 3], 100, sampler=method, within=wf, seed=0)
    with pytest.raises(ValueError, match="no string of length 3"):
        sample(dyck2, [3], 10, within="accept")
    with pytest.raises(ValueError, match="unknown class"):
        sample(dyck2, [4], 10, within=["nope"])


# ------------------------------------------------------------------ errors and helpers
def test_argument_errors(dyck2):
    with pytest.raises(ValueError, match="unknown sampler 'bogus'"):
        sample(dyck2, [4], 10, sampler="bogus")
    with pytest.raises(ValueError, match="n must be"):
        sample(dyck2, [4], -1)
    with pytest.raises(ValueError, match="empty"):
        sample(dyck2, [], 10)
    with pytest.raises(ValueError, match="non-negative"):
        sample(dyck2, [-1, 2], 10)
    assert as_lengths(range(3, 0, -1)).tolist() == [1, 2, 3]
    assert len(sample(dyck2, [4], 0, seed=0)) == 0


def test_a_sampler_laid_out_along_a_tree_is_refused_by_sample_and_named(dyck2):
    """``covering`` is a run's sampler: ``sample`` says so instead of calling it unknown."""
    with pytest.raises(ml.errors.UnknownName, match=r"sampler 'covering' lays strings out along "
                                                    r"a model's tree: only a run draws it"):
        sample(dyck2, [4], 10, sampler="covering")
    with pytest.raises(ml.errors.UnknownName, match=r"did you mean 'near_miss'"):
        sample(dyck2, [4], 10, sampler="nearmiss")


def test_a_run_resolves_its_sampler_once(monkeypatch):
    """The config resolves ``sampler`` to its spec; the problem and every training batch pass
    the spec on, so no training step looks the name up again."""
    from monoidlab.strings import sampling
    from monoidlab.training import RunConfig
    from monoidlab.training.loop import training_batch
    from monoidlab.training.problems import make_problem

    cfg = RunConfig(language="dyck-2", model="rnn", sampler="balanced")
    problem = make_problem(cfg)
    assert problem.sampler is cfg.sampler_spec
    names = []
    real = sampling.sampler_spec
    monkeypatch.setattr(sampling, "sampler_spec",
                        lambda s, tree=False: (names.append(s) if isinstance(s, str) else None)
                        or real(s, tree))
    lens = problem.lengths(cfg.train_lengths)
    for step in range(3):
        training_batch(cfg, problem, lens, step)
    assert names == []


def test_path_counts_are_string_counts(dyck2):
    # unscaled check at small r: C[r, start, g] / C[r, start].sum() = class shares
    delta = np.asarray(dyck2.delta)
    out = np.asarray(dyck2.output)
    C = path_counts(delta, out, 2, 10)
    for L in range(1, 11):
        strings = all_strings(dyck2, L)
        n_acc = dyck2.classify(strings, np.full(len(strings), L)).sum()
        c = C[L, dyck2.start]
        if n_acc == 0:
            assert c[1] == 0
        else:
            # ratios between states at the same r and class are ratios of string counts
            states, counts_from = [], []
            for q in range(3):  # after q "(" the run is at depth q
                states.append(_state_after(dyck2, [0] * q))
                pre = np.zeros((len(strings), q), np.int64)
                counts_from.append(dyck2.classify(np.concatenate([pre, strings], axis=1),
                                                  np.full(len(strings), L + q)).sum())
            np.testing.assert_allclose(C[L, states, 1] / C[L, dyck2.start, 1],
                                       np.array(counts_from) / n_acc)


def _state_after(lang, word) -> int:
    q = lang.start
    for a in word:
        q = int(np.asarray(lang.delta)[q, a])
    return q


def test_length_batches_one_length_each(dyck2):
    it = length_batches(dyck2, range(2, 13, 2), 64, sampler="balanced", seed=15)
    batches = [next(it) for _ in range(30)]
    seen = set()
    for b in batches:
        assert len(b) == 64
        ls = set(b.lengths.tolist())
        assert len(ls) == 1 and ls <= set(range(2, 13, 2))
        assert b.tokens.shape == (64, next(iter(ls)))
        assert b.labels.sum() == 32
        seen |= ls
    assert len(seen) > 3
    again = length_batches(dyck2, range(2, 13, 2), 64, sampler="balanced", seed=15)
    for b in batches[:5]:
        np.testing.assert_array_equal(b.tokens, next(again).tokens)


def test_batch_indexing_and_concat(dyck2):
    b = sample(dyck2, [2, 9], 40, seed=16)
    b.elements()
    short = b[b.lengths == 2]
    assert short.tokens.shape == (len(short), 2)
    np.testing.assert_array_equal(short.elements(), b.elements()[b.lengths == 2])
    cat = Batch.concat([short, b])
    assert cat.tokens.shape == (len(short) + 40, 9)
    np.testing.assert_array_equal(cat.tokens[: len(short), 2:], 0)
    assert cat.strings()[: len(short)] == short.strings()
    np.testing.assert_array_equal(cat.elements()[len(short):], b.elements())


def test_balanced_remainder_is_not_biased(dyck2):
    # odd batches of one length: the extra string goes to a random class, not always "reject"
    it = length_batches(dyck2, [6], 15, sampler="balanced", seed=17)
    extra = [int(next(it).labels.sum() == 8) for _ in range(200)]
    assert 0.35 < np.mean(extra) < 0.65


def test_doctests():
    import doctest

    import monoidlab.strings.sampling as mod

    assert doctest.testmod(mod, optionflags=doctest.ELLIPSIS).failed == 0


def test_batch_to_pandas(dyck2):
    b = sample(dyck2, [4, 6], 50, sampler="balanced", seed=0)
    df = b.to_pandas()
    assert df["string"].tolist() == b.strings() and (df["length"] == b.lengths).all()
    assert df["class"].tolist() == [dyck2.classes[c] for c in b.labels]
    assert (df["ec"] == dyck2.monoid().element_of(b.tokens, b.lengths)).all()
