"""Coverage by tree level (exact and sampled) and the covering sampler, against brute force.

The references read each node's children off the top-down trees of tests/references.py
(``reference_spans``, independent of the schedules), label each child's substring with
``element_of``, and count per level."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest
from references import reference_spans

import monoidlab as ml
from monoidlab.coverage.compositions import composition_counts
from monoidlab.coverage.covering import CoveringPlan, covering_sample
from monoidlab.coverage.levels import level_coverage
from monoidlab.errors import InputError
from monoidlab.geometry import Offsets

LANGS = ["parity", "dyck-2", "tomita-3"]

#: a short covering run on dyck-2: 8 covering strings a step, 40 steps
COVERING_RUN = dict(language="dyck-2", sampler="covering", steps=40, batch_size=16,
                    train_lengths="1:8", test_lengths="30:31", test_samples=4,
                    covering={"share": 0.5, "k": 1},
                    model_options={"d": 8, "padding": "identity"}, device="cpu")


#: the references memoised (the brute-force tests label the same substrings and read the same
#: trees tens of thousands of times): the balanced trees' spans per (length, offset), and the
#: EC of a substring, each still computed as before on its first use
_spans = functools.lru_cache(maxsize=None)(reference_spans)
_ECS: dict[tuple[str, str], int] = {}


def substring_ec(lang, word: str) -> int:
    """The EC of ``word`` (a substring) by ``element_of`` on it alone; 0 for the empty word."""
    key = (lang.name, word)
    if key not in _ECS:
        _ECS[key] = int(lang.monoid().element_of(*lang.encode([word]))[0]) if word else 0
    return _ECS[key]


def brute_counts(lang, tokens, lengths, offsets, padding, levels=12):
    """Per-level composition counts by reading every node's children off the reference trees."""
    m = lang.monoid()
    out = np.zeros((levels, m.size, m.size), np.int64)
    for t, L, r in zip(tokens, lengths, offsets):
        w = lang.decode(t[None, :L], np.array([L]))[0]
        for level, ls, rs in _spans("balanced", int(L), int(r)):
            m1, m2 = ls[1] - ls[0], rs[1] - rs[0]
            if (m1 == 0 and m2 == 0) or (padding == "identity" and (m1 == 0 or m2 == 0)):
                continue
            ec = [substring_ec(lang, w[a:b]) for a, b in (ls, rs)]
            out[level, ec[0], ec[1]] += 1
    return out


def _pad(a, levels=12):
    return np.concatenate([a, np.zeros((levels - len(a), *a.shape[1:]), a.dtype)])


@pytest.mark.parametrize("name", LANGS)
@pytest.mark.parametrize("padding", ["learned", "identity"])
@pytest.mark.parametrize("with_offsets", [False, True])
def test_sampled_per_level_counts_equal_brute_force(name, padding, with_offsets):
    lang = ml.load_language(name)
    b = ml.sample(lang, range(1, 14), 60, seed=7)
    rng = np.random.default_rng(8)
    offsets = (np.array([rng.integers(0, 2 * L + 1) for L in b.lengths]) if with_offsets
               else np.zeros(len(b), np.int64))
    fast = composition_counts(lang.monoid(), b.tokens, b.lengths, "balanced",
                              offsets if with_offsets else None, per_level=True, padding=padding)
    want = brute_counts(lang, b.tokens, b.lengths, offsets, padding)
    np.testing.assert_array_equal(_pad(fast), want)
    # the level-free count is their sum, and LevelCoverage.sampled reads the same counts
    np.testing.assert_array_equal(fast.sum(0), want.sum(0))


@pytest.mark.parametrize("name", LANGS)
@pytest.mark.parametrize("padding", ["learned", "identity"])
@pytest.mark.parametrize("offsets", [None, "random"])
def test_exact_level_supports_equal_every_string_of_the_lengths(name, padding, offsets):
    """``needed`` / ``shown`` per level = the union over every string of the lengths (and every
    offset of the law) of what its trees compose at each level."""
    lang = ml.load_language(name)
    train, test = range(1, 7), [9, 10]
    lc = level_coverage(lang, train, test, padding=padding, offsets=offsets)
    law = Offsets.parse(offsets)

    def union(lengths, law):
        seen = np.zeros((12, lang.monoid().size, lang.monoid().size), bool)
        for L in lengths:
            strings = np.array(list(itertools.product(range(lang.n_symbols), repeat=L)))
            for r in law.for_length(L):
                n = len(strings)
                seen |= brute_counts(lang, strings, np.full(n, L), np.full(n, r), padding) > 0
        return seen

    np.testing.assert_array_equal(_pad(lc.needed), union(test, Offsets()))
    np.testing.assert_array_equal(_pad(lc.shown), union(train, law))
    assert lc.uncovered().sum() == (lc.needed.any(0) & ~lc.shown.any(0)).sum()
    targets = lc.targets()
    assert all(lc.shown[lev, x, y] and lc.needed.any(0)[x, y] for lev, x, y in targets)


def test_sampled_rows_count_the_needed_compositions_per_level():
    lang = ml.load_language("dyck-2")
    lc = level_coverage(lang, range(1, 9), range(30, 34), padding="identity")
    b = ml.sample(lang, range(1, 9), 400, seed=3)
    counts = composition_counts(lang.monoid(), b.tokens, b.lengths, per_level=True,
                                padding="identity")
    rep = lc.sampled(counts, len(b), k=3)
    need = lc.needed.any(0)
    for row in rep.rows[:-1]:
        t = need & lc.shown[row["level"]]
        assert row["targets"] == t.sum() and row["min_count"] == counts[row["level"]][t].min()
        assert row["below_k"] == (counts[row["level"]][t] < 3).sum()
    assert rep.rows[-1] == {"level": "any", "targets": int(need.sum()),
                            "min_count": int(counts.sum(0)[need].min()),
                            "below_k": int((counts.sum(0)[need] < 3).sum())}


@pytest.mark.parametrize("name, padding, offsets", [("parity", "learned", None),
                                                    ("dyck-2", "identity", None),
                                                    ("tomita-3", "identity", "random")])
def test_the_covering_sampler_shows_every_target_k_times_at_its_level(name, padding, offsets):
    """Brute force: each string's node at its target level, read off the reference trees at
    the string's offset, composes the target's ECs; in k cycles every target occurs k times."""
    from monoidlab.geometry import buffer_size

    lang = ml.load_language(name)
    train = range(1, 13)
    plan = CoveringPlan(lang, train, range(30, 35), padding=padding, offsets=offsets, seed=2)
    k = 2
    b = plan.sample(k * len(plan.targets), seed=5)
    assert b.lengths.min() >= 1 and b.lengths.max() <= 12  # the training lengths
    assert set(map(tuple, b.targets)) == set(map(tuple, plan.targets))
    hits = {}
    for t, L, r, (lev, x, y) in zip(b.tokens, b.lengths, b.offsets, b.targets):
        assert r == 0 if offsets is None else 0 <= r and r + L <= buffer_size(2 * L)
        w = lang.decode(t[None, :L], np.array([L]))[0]
        found = False
        for level, ls, rs in _spans("balanced", int(L), int(r)):
            ec = [substring_ec(lang, w[a:c]) for a, c in (ls, rs)]
            if level == lev and ec == [x, y] and (padding == "learned" or (
                    ls[1] > ls[0] and rs[1] > rs[0])):
                found = True
        assert found, (w, r, lev, x, y)
        hits[(lev, x, y)] = hits.get((lev, x, y), 0) + 1
    assert min(hits.values()) == k and len(hits) == len(plan.targets)
    per, _ = plan.shown_counts(b)
    assert (per >= k).all()
    # labels are the language's, every class that can be shown is
    np.testing.assert_array_equal(b.labels, lang.classify(b.tokens, b.lengths))


def test_the_covering_sampler_is_seeded_and_the_cycle_advances():
    lang = ml.load_language("dyck-2")
    a = covering_sample(lang, range(1, 9), 50, test_lengths=[30], padding="identity", seed=4)
    b = covering_sample(lang, range(1, 9), 50, test_lengths=[30], padding="identity", seed=4)
    c = covering_sample(lang, range(1, 9), 50, test_lengths=[30], padding="identity", seed=5)
    assert np.array_equal(a.tokens, b.tokens) and np.array_equal(a.targets, b.targets)
    assert not np.array_equal(a.tokens, c.tokens)
    plan = CoveringPlan(lang, range(1, 9), [30], padding="identity", seed=4)
    T = len(plan.targets)
    nxt = plan.sample(T, seed=0, start=T)  # the next cycle shows the same targets again
    assert np.array_equal(nxt.targets, plan.targets)


def test_needed_compositions_beyond_the_training_lengths_are_named():
    lang = ml.load_language("dyck-6")
    with pytest.raises(InputError) as info:
        CoveringPlan(lang, range(1, 41), range(41, 501), padding="learned")
    msg = str(info.value)
    assert "53 composition(s)" in msg and "(000000111, ε)" in msg and "train on longer" in msg
    assert "\n" not in msg


def test_the_trainer_trains_on_covering_strings_and_refuses_too_short_runs():
    from monoidlab.errors import ConfigError
    from monoidlab.training import RunConfig, train
    from monoidlab.training.loop import training_batch
    from monoidlab.training.problems import make_problem

    cfg = RunConfig(**COVERING_RUN)
    problem = make_problem(cfg)
    plan = problem.plan.plan
    lens = problem.lengths(cfg.train_lengths)
    _, b0 = training_batch(cfg, problem, lens, 0)
    _, b1 = training_batch(cfg, problem, lens, 1)
    # 8 covering strings a step (targets 0..7 of the cycle at step 0, 8..15 at step 1), then
    # 8 near misses of the step's length
    m = lang = problem.language
    for step, b in ((0, b0), (1, b1)):
        assert len(b["lengths"]) == 16 and "offsets" not in b
        for i in range(8):
            lev, x, y = plan.targets[(8 * step + i) % len(plan.targets)]
            c = composition_counts(m.monoid(), b["tokens"][i:i + 1], b["lengths"][i:i + 1],
                                   per_level=True, padding="identity")
            assert lev < len(c) and c[lev, x, y] >= 1, (step, i)
        assert len(set(b["lengths"][8:].tolist())) == 1  # the near misses: one length
    del lang
    res = train(cfg, None, progress=False)
    assert res["training_coverage"]["sampler"] == "covering"
    with pytest.raises(ConfigError, match=r"key 'covering': \d+ targets shown k = 5 times"
                       r".* or lower k, or train without the plan \(sampler = \"near_miss\""):
        make_problem(cfg.replace(covering={"share": 0.5, "k": 5}, steps=2))
    with pytest.raises(ConfigError) as refused:  # k = 1 cannot be lowered: the way out is named
        make_problem(cfg.replace(steps=1))
    assert "lower k" not in str(refused.value) and 'sampler = "near_miss"' in str(refused.value)


def test_a_covering_runs_sampled_coverage_counts_its_plan_over_all_its_steps():
    """The diagnosis regenerates a run's first batches; a covering run's plan reaches its later
    targets only in later steps, so its targets are counted over the whole run: never more
    than the run's batches really show (brute force over every step), and every target seen."""
    from monoidlab.training.config import RunConfig
    from monoidlab.training.data_coverage import sampled_counts, training_coverage
    from monoidlab.training.loop import training_batch
    from monoidlab.training.problems import make_problem

    cfg = RunConfig(**COVERING_RUN)
    problem = make_problem(cfg)
    plan = problem.plan.plan
    m = problem.language.monoid()
    lens = problem.lengths(cfg.train_lengths)
    every = np.zeros((8, m.size, m.size), np.int64)  # every batch of the run, brute force
    for step in range(cfg.steps):
        _, b = training_batch(cfg, problem, lens, step)
        c = composition_counts(m, b["tokens"], b["lengths"], per_level=True,
                               padding="identity")
        every[: c.shape[0]] += c
    lev, x, y = np.asarray(plan.targets).T
    assert 8 * 2 < len(plan.targets) <= 8 * cfg.steps  # two steps show only some targets
    first, n = sampled_counts(cfg, problem, steps=2)
    assert n == 32 and (first[lev, x, y] >= 1).all()
    whole, _ = sampled_counts(cfg, problem, steps=cfg.steps)
    assert (whole[: every.shape[0]] == every[: whole.shape[0]]).all()  # never above the truth
    rep = training_coverage(cfg, problem, steps=2)
    assert "targets: counted over all 40 steps" in rep["text"]


def test_sampled_counts_in_chunks_equal_the_batches_counted_one_by_one():
    """A run at random offsets over more steps than one chunk: counting batches together
    (the regenerated strings padded to one width) changes nothing."""
    from monoidlab.training.config import RunConfig
    from monoidlab.training.data_coverage import CHUNK, sampled_counts
    from monoidlab.training.loop import training_batch
    from monoidlab.training.problems import make_problem

    cfg = RunConfig(language="tomita-3", steps=2 * CHUNK + 7, batch_size=4,
                    train_lengths="1:12", test_lengths="30:31", offsets="random",
                    offset_buffer=64, model_options={"d": 8, "padding": "identity"},
                    device="cpu")
    problem = make_problem(cfg)
    m = problem.language.monoid()
    lens = problem.lengths(cfg.train_lengths)
    one = np.zeros((8, m.size, m.size), np.int64)
    for step in range(cfg.steps):
        _, b = training_batch(cfg, problem, lens, step)
        assert "offsets" in b
        c = composition_counts(m, b["tokens"], b["lengths"], "balanced", b["offsets"],
                               per_level=True, padding="identity")
        one[: c.shape[0]] += c
    together, n = sampled_counts(cfg, problem)
    assert n == 4 * cfg.steps and together.sum() > 0
    assert (together == one[: together.shape[0]]).all() and not one[together.shape[0]:].any()


def test_below_the_support_the_covering_sampler_shows_what_it_can_when_asked():
    lang = ml.load_language("dyck-6")
    plan = CoveringPlan(lang, range(1, 41), range(41, 501), padding="learned",
                        allow_uncovered=True)
    assert plan.uncovered == 53 and plan.summary()["uncovered"] == 53 and len(plan.targets)
    from monoidlab.training import RunConfig
    from monoidlab.training.problems import make_problem

    cfg = RunConfig(language="dyck-2", sampler="covering", train_lengths="1:4",
                    test_lengths="30:31", steps=2000, batch_size=8,
                    model_options={"padding": "identity"})
    with pytest.raises(Exception, match="cannot occur in training strings"):
        make_problem(cfg)
    problem = make_problem(cfg.replace(covering={"uncovered": "skip"}))
    assert problem.plan.plan.uncovered > 0
