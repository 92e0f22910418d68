"""The public Python API checks its arguments and never lets a caller corrupt a cache.

* Cached results are immutable: every array a cached monoid, its Green structure, an automaton
  or a batch's cached ECs hands out is read-only, word lists are frozen, attributes cannot be
  reassigned, and a fresh ``load_language`` sees the original values.
* Element indices are integers in range (no truncated floats, no wrapped negatives).
* A batch is analysed only with its own language (equal automata); ``Batch.concat`` refuses
  mixed or empty lists.
* Every function that takes a language accepts a suite name too; anything else is refused.
* Work is bounded before it starts (the command line's limits; ``limits=False`` lifts them).
* Seeds, counts and thread numbers are checked in one place (``monoidlab._checks``).
* Figures show user text literally (no mathtext from a ``$`` in a language's name).
"""

from __future__ import annotations

import copy
import pickle
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import monoidlab as ml
from monoidlab import _util
from monoidlab._checks import FrozenList, ReadOnlyError, check_index, check_seed
from monoidlab.algebra import families
from monoidlab.coverage import exact as coverage
from monoidlab.coverage.compositions import composition_counts, node_labels
from monoidlab.coverage.covering import CoveringPlan, covering_sample
from monoidlab.coverage.levels import level_coverage
from monoidlab.errors import InputError, MonoidlabError, UnknownName
from monoidlab.strings.near_miss import near_miss_classes, near_misses
from monoidlab.strings.sampling import Batch, length_batches

MONOID_ARRAYS = ["elements", "right", "left", "table", "outputs", "letters", "word_lengths",
                 "word_matrix", "identity_letter_right", "idempotents"]
GREEN_ARRAYS = ["r", "l", "h", "j"]


def one_line_error(call, error=InputError, match=None):
    with pytest.raises(error, match=match) as info:
        call()
    assert isinstance(info.value, MonoidlabError), type(info.value)
    assert "\n" not in str(info.value)
    return str(info.value)


# ----------------------------------------------------------------------- immutable caches
@pytest.mark.parametrize("name", MONOID_ARRAYS)
def test_monoid_arrays_are_read_only_and_the_cache_stays_intact(name):
    m = ml.load_language("tomita-3").monoid()
    before = np.array(getattr(m, name))
    with pytest.raises(ValueError, match="assignment destination is read-only"):
        getattr(m, name)[...] = 0
    with pytest.raises(ValueError, match="assignment destination is read-only"):
        getattr(m, name).reshape(-1)[0] = 1  # a view of a read-only array is read-only too
    assert np.array_equal(getattr(ml.load_language("tomita-3").monoid(), name), before)


def test_the_hostile_review_mutations_raise_and_leave_the_next_load_unaffected():
    m = ml.load_language("parity").monoid()
    outputs, words, idem, r = m.outputs.copy(), list(m.words), m.idempotents.copy(), m.green.r.copy()
    with pytest.raises(ValueError, match="assignment destination is read-only"):
        ml.load_language("parity").monoid().outputs[:] = 0
    with pytest.raises(ReadOnlyError):
        m.words[1] = "HACKED"
    with pytest.raises(ValueError, match="assignment destination is read-only"):
        m.idempotents[0] = 1
    with pytest.raises(ValueError, match="assignment destination is read-only"):
        m.green.r[0] = 99
    fresh = ml.load_language("parity").monoid()
    assert np.array_equal(fresh.outputs, outputs) and fresh.words == words == ["", "1"]
    assert np.array_equal(fresh.idempotents, idem) and np.array_equal(fresh.green.r, r)
    assert fresh.outputs[fresh.element_of(*ml.load_language("parity").encode(["1"]))][0] == 1


@pytest.mark.parametrize("name", GREEN_ARRAYS)
def test_green_arrays_are_read_only(name):
    g = ml.load_language("dyck-2").monoid().green
    with pytest.raises(ValueError, match="assignment destination is read-only"):
        getattr(g, name)[0] = 7


def test_word_lists_are_frozen_but_still_lists():
    m = ml.load_language("tomita-7").monoid()
    for words in (m.words, m.word_tokens):
        assert isinstance(words, list) and words == list(words)
        for change in (lambda w: w.__setitem__(0, "x"), lambda w: w.append("x"),
                       lambda w: w.extend(["x"]), lambda w: w.pop(), lambda w: w.sort(),
                       lambda w: w.reverse(), lambda w: w.clear(), lambda w: w.remove(w[0]),
                       lambda w: w.insert(0, "x"), lambda w: w.__delitem__(0)):
            with pytest.raises(TypeError, match="read-only"):
                change(words)
        with pytest.raises(TypeError):
            words += ["x"]
    assert m.words == ml.load_language("tomita-7").monoid().words and m.words[0] == ""
    # copies are the caller's; pickling and deep copies keep the list
    mine = list(m.words)
    mine[0] = "changed"
    assert m.words[0] == ""
    assert pickle.loads(pickle.dumps(m.words)) == m.words
    assert copy.deepcopy(m.word_tokens) == m.word_tokens
    labels = m.labels()
    labels[0] = "mine"  # a new list at every call
    assert m.labels()[0] == "ε"


def test_monoid_and_green_attributes_cannot_be_reassigned():
    lang = ml.load_language("dyck-2")
    m = lang.monoid()
    for obj, key in ((m, "right"), (m, "automaton"), (m, "outputs"), (m.green, "r"),
                     (m.green, "monoid")):
        with pytest.raises(AttributeError, match="immutable"):
            setattr(obj, key, None)
        with pytest.raises(MonoidlabError):
            delattr(obj, key)
    assert ml.load_language("dyck-2").monoid().automaton is lang
    for name in ("delta", "output"):  # the automaton's own arrays (frozen before)
        with pytest.raises(ValueError, match="read-only"):
            getattr(lang, name)[0] = 0


def test_batch_elements_are_read_only_the_strings_stay_the_callers():
    b = ml.sample("dyck-2", [6], 20, seed=0)
    el = b.elements()
    with pytest.raises(ValueError, match="assignment destination is read-only"):
        el[0] = 3
    assert b.elements() is el and not b[:5].elements().flags.writeable
    b.tokens[0, 0] = b.tokens[0, 0]  # the caller's arrays stay writable
    given = np.zeros(len(b), np.int64)
    mine = Batch(b.tokens, b.lengths, b.labels, b.automaton, given)
    assert not mine.elements().flags.writeable and given.flags.writeable
    plan = CoveringPlan(ml.load_language("parity"), range(1, 9), [30], padding="identity")
    with pytest.raises(ValueError, match="read-only"):
        plan.targets[0, 0] = 5


# ----------------------------------------------------------------------- element indices
@pytest.mark.parametrize("a, b", [(-1, 0), (0, -1), (0.7, 1), (1, 1.9), (5, 0), (0, 2),
                                  (True, 0), ("0", 1), ([0, -1], 0), (np.array([0.5]), 0),
                                  (2**70, 0), (np.uint64(2**63), 0), (None, 0), ([[0], [0, 1]], 0)])
def test_multiply_refuses_bad_indices(a, b):
    m = ml.load_language("parity").monoid()
    one_line_error(lambda: m.multiply(a, b), match=r"element [ab]")


def test_multiply_beyond_the_table_checks_indices_too(monkeypatch):
    from monoidlab.algebra import monoid as monoid_module

    m = families.full_transformation(3).monoid()
    want = int(m.table[1, 2])
    monkeypatch.setattr(monoid_module, "TABLE_LIMIT", 4)  # the on-demand path
    assert int(m.multiply(1, 2)) == want
    one_line_error(lambda: m.multiply(-1, 0), match="element a")
    one_line_error(lambda: m.multiply(0, m.size), match="element b")
    one_line_error(lambda: m.multiply([0, 1], [0, 1, 2]), match="broadcast")


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.integers(-4, 20), st.floats(-3, 20), st.just(float("nan")), st.booleans()),
       st.one_of(st.integers(-4, 20), st.floats(-3, 20), st.just(float("nan")), st.booleans()))
def test_multiply_is_the_table_or_a_clean_error(a, b):
    m = ml.load_language("tomita-7").monoid()  # 9 elements
    valid = all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < m.size
                for x in (a, b))
    if valid:
        assert int(m.multiply(a, b)) == int(m.table[a, b])
    else:
        one_line_error(lambda: m.multiply(a, b))


def test_other_element_arguments_are_checked():
    m = ml.load_language("dyck-2").monoid()
    n = m.elements.shape[1]
    assert m.index_of(m.elements[3]).tolist() == [3]
    assert m.index_of([[0] * (n - 1) + [n + 5]]).tolist() == [-1]  # not a member: -1
    one_line_error(lambda: m.index_of(m.elements[:2].astype(float) + 0.5), match="integer rows")
    one_line_error(lambda: m.index_of([[0, 1]]), match=f"rows of {n} states")
    one_line_error(lambda: m.green.egg_box(-1), match="no J-class")
    one_line_error(lambda: m.green.egg_box(0.0), match="no J-class")
    one_line_error(lambda: m.green.egg_box(True), match="no J-class")
    assert m.green.egg_box(0).j_class == 0
    t, lens = ml.load_language("dyck-2").encode(["0101"])
    for bad in (-1, 1.5, True, 10**6, "2"):
        one_line_error(lambda bad=bad: m.element_of(t, lens, threads=bad), match="threads")
    for bad in (0, True, 1.5, -3):
        one_line_error(lambda bad=bad: ml.load_language("dyck-2").monoid(max_elements=bad),
                       match="max_elements")
    one_line_error(lambda: m.labels(empty=3), match="empty")
    one_line_error(lambda: m.cayley_graph(["right"]), match="side")
    one_line_error(lambda: ml.load_language("dyck-2").decode([[0, 7]], [2]), match="token ids")
    one_line_error(lambda: ml.Automaton(alphabet=["a"], delta=[[1], [0]], start=True,
                                        output=[0, 1]), ml.SpecError, "start")


def test_check_index_refuses_what_numpy_would_wrap_or_truncate():
    assert check_index(np.array([0, 2], np.uint8), 3).tolist() == [0, 2]
    for bad in (-1, 3, 0.0, np.float32(1), np.array([], float), [1, None]):
        one_line_error(lambda bad=bad: check_index(bad, 3))


# ----------------------------------------------------------------------- one language per batch
def test_concat_refuses_mixed_languages_and_empty_lists():
    a = ml.sample("parity", [3], 4, seed=0)
    b = ml.sample("tomita-1", [3], 4, seed=0)
    msg = one_line_error(lambda: Batch.concat([a, b]), match="'tomita-1'.*'parity'")
    assert "batches[1]" in msg
    one_line_error(lambda: Batch.concat([]), match="empty")
    one_line_error(lambda: Batch.concat([a, "x"]), match=r"batches\[1\]: a Batch")
    one_line_error(lambda: Batch.concat(a), match="a list of Batch")
    # an equal machine under another name is the same language
    twin = ml.load_language("parity").replace(name="xor")
    c = Batch.concat([a, ml.sample(twin, [5], 2, seed=1)])
    assert len(c) == 6 and c.automaton is a.automaton and c.tokens.shape == (6, 5)


def test_batch_and_language_functions_refuse_a_batch_of_another_language():
    dyck, parity = ml.load_language("dyck-2"), ml.load_language("parity")
    tr, other = ml.sample(dyck, [4], 20, seed=0), ml.sample(parity, [4], 20, seed=0)
    for call in (lambda: coverage.sampled_coverage(other, monoid=dyck),
                 lambda: coverage.sampled_coverage(other, monoid=dyck.monoid()),
                 lambda: coverage.sampled_coverage(other, monoid="dyck-2"),
                 lambda: coverage.coverage_gap(dyck, tr, other),
                 lambda: coverage.coverage_gap("dyck-2", other, tr)):
        one_line_error(call, match="'parity'.*'dyck-2'")
    plan = CoveringPlan(parity, range(1, 9), [30], padding="identity")
    one_line_error(lambda: plan.shown_counts(tr), match="'dyck-2'.*'parity'")
    one_line_error(lambda: plan.shown_counts(other), match="CoveringBatch")
    one_line_error(lambda: coverage.sampled_coverage(tr.tokens), match="a Batch")
    one_line_error(lambda: ml.compare(tr, tr), match="train: a Coverage")
    # equal automata are the same language
    twin = dyck.replace(name="twin")
    assert coverage.sampled_coverage(tr, monoid=twin).support.sum() > 0


# ----------------------------------------------------------------------- names for languages
NAMED = [
    ("sample", lambda lang: ml.sample(lang, [6], 8, seed=3).tokens),
    ("length_batches", lambda lang: next(length_batches(lang, [5], 4, seed=1)).tokens),
    ("exact_coverage", lambda lang: ml.exact_coverage(lang, range(1, 9)).counts),
    ("min_training_length", lambda lang: ml.min_training_length(lang, [40]).support_length),
    ("level_coverage", lambda lang: level_coverage(lang, range(1, 9), [20]).shown),
    ("covering_sample", lambda lang: covering_sample(lang, range(1, 9), 6, test_lengths=[20],
                                                     padding="identity", seed=2).tokens),
    ("near_misses", lambda lang: near_misses(4, lang, 6, 5).tokens),
    ("near_miss_classes", lambda lang: near_miss_classes(lang, 6)),
    ("node_labels", lambda lang: node_labels(lang, [[0, 1, 1]], [3]).node),
    ("composition_counts", lambda lang: composition_counts(lang, [[0, 1, 1]], [3])),
    ("sampled_coverage", lambda lang: coverage.sampled_coverage(
        ml.sample("dyck-2", [4], 6, seed=0), monoid=lang).counts),
]


@pytest.mark.parametrize("name, call", NAMED, ids=[n for n, _ in NAMED])
def test_every_language_argument_takes_a_suite_name(name, call):
    by_name = call("dyck-2")
    by_object = call(ml.load_language("dyck-2"))
    assert np.array_equal(np.asarray(by_name), np.asarray(by_object))
    for bad in (3, None, ["dyck-2"], 2.5):
        if bad is None and name == "sampled_coverage":
            continue  # monoid=None: the batch's own
        msg = one_line_error(lambda bad=bad: call(bad))
        assert "name" in msg and ("Automaton" in msg or "SyntacticMonoid" in msg)
    one_line_error(lambda: call("no-such-language"), UnknownName, "no-such-language")


def test_load_language_and_suite_refuse_non_names():
    one_line_error(lambda: ml.load_language(3), match="suite name or the path")
    one_line_error(lambda: ml.suite(["ldru21"]), match="suite name")


# ----------------------------------------------------------------------- work limits
WORK = [
    (lambda L: ml.sample(L, range(1, 41), 10**9), "10000000"),
    (lambda L: ml.sample(L, [10**9], 1), "at most 100000"),
    (lambda L: ml.sample(L, range(1, 10**12), 1), "at most 100000"),
    (lambda L: ml.sample(L, [100_000], 2000), "symbols in one array"),
    (lambda L: ml.exact_coverage(L, range(1, 10**6)), "at most 100000"),
    (lambda L: ml.exact_coverage(L, range(1, 10**5)), "layouts"),
    (lambda L: ml.exact_coverage(L, range(1, 5000)), "nodes"),
    (lambda L: ml.exact_coverage(L, [90_000], schedule="scan"), "nodes"),
    (lambda L: ml.exact_coverage(L, range(1, 500), offsets="random"), "layouts"),
    (lambda L: ml.min_training_length(L, [10**6]), "test_lengths"),
    (lambda L: ml.min_training_length(L, [40], max_search=200_000), "max_search"),
    (lambda L: ml.min_training_length(L, [40], max_search=5000, offsets="random"),
     "max_search"),
    (lambda L: ml.min_training_length(L, [40], delta=0.1, sample_ranges=[range(1, 10**5)]),
     "sample_ranges"),
    (lambda L: level_coverage(L, range(1, 500), [50], offsets="random"), "train_lengths"),
    (lambda L: covering_sample(L, range(1, 9), 10**9, test_lengths=[20]), "10000000"),
    (lambda L: near_misses(0, L, 10**6, 1), "at most 100000"),
    (lambda L: near_misses(0, L, 1000, 10**6), "symbols in one array"),
    (lambda L: near_miss_classes(L, 10**9), "at most 100000"),
    (lambda L: next(length_batches(L, [5], 10**8)), "10000000"),
]
WORK_IDS = ["sample-n", "sample-length", "sample-range", "sample-symbols", "exact-length",
            "exact-layouts", "exact-nodes", "exact-scan-nodes", "exact-offset-layouts",
            "min_length-test",
            "min_length-search", "min_length-search-step", "min_length-sample_ranges", "level_coverage-train",
            "covering-n", "near_misses-L", "near_misses-symbols", "near_miss_classes-L",
            "length_batches-n"]


@pytest.mark.parametrize("call, match", WORK, ids=WORK_IDS)
def test_work_beyond_the_limits_is_refused_at_once(call, match):
    start = time.perf_counter()
    msg = one_line_error(lambda: call(ml.load_language("parity")), match=match)
    assert "limits=False" in msg
    assert time.perf_counter() - start < 5  # before any work (the old calls ran out of memory)


def test_length_tables_beyond_the_limit_are_refused():
    lang = ml.load_language("prefix-4-4")  # 341 states, 257 classes
    start = time.perf_counter()
    one_line_error(lambda: ml.sample(lang, [60_000], 1), match="path counts")
    assert time.perf_counter() - start < 10
    assert len(ml.sample(lang, [60_000], 1, sampler="uniform")) == 1  # no tables needed


def test_the_recursion_work_is_bounded_after_the_node_table(monkeypatch):
    lang = ml.load_language("dyck-2")
    monkeypatch.setattr(coverage, "MAX_EXACT_WORK", 10**6)
    one_line_error(lambda: ml.exact_coverage(lang, range(1, 30)), match="passes over")
    one_line_error(lambda: ml.exact_coverage(lang, range(1, 30), sampler="uniform"),
                   match="passes over")
    assert ml.exact_coverage(lang, range(1, 30), limits=False).support.sum() > 0
    assert ml.exact_coverage(lang, range(1, 5)).support.sum() > 0  # small calls still run


def test_the_search_for_the_support_length_is_bounded(monkeypatch):
    """A search stops at the support length; one that goes on too long is refused (its
    largest step was checked before it started)."""
    from monoidlab.coverage import min_length

    lang = ml.load_language("dyck-2")
    assert ml.min_training_length(lang, range(41, 501)).support_length == 12
    monkeypatch.setattr(min_length, "MAX_SEARCH_WORK", 10**6)
    one_line_error(lambda: ml.min_training_length(lang, range(41, 501)),
                   match="max_search: no training length up to")
    assert ml.min_training_length(lang, range(41, 501), limits=False).support_length == 12


def test_limits_false_lifts_the_limits(monkeypatch):
    lang = ml.load_language("parity")
    monkeypatch.setattr(_util, "MAX_STRINGS", 10)
    monkeypatch.setattr(_util, "MAX_LENGTH", 20)
    monkeypatch.setattr(coverage, "MAX_LENGTH", 20)
    monkeypatch.setattr(coverage, "MAX_NODE_ROWS", 50)
    one_line_error(lambda: ml.sample(lang, [3], 11), match="limits=False")
    assert len(ml.sample(lang, [3], 11, limits=False)) == 11
    one_line_error(lambda: ml.sample(lang, [21], 1), match="limits=False")
    assert ml.sample(lang, [21], 1, limits=False).tokens.shape == (1, 21)
    one_line_error(lambda: ml.exact_coverage(lang, range(1, 20)), match="nodes")
    full = ml.exact_coverage(lang, range(1, 20), limits=False)
    monkeypatch.setattr(coverage, "MAX_NODE_ROWS", 10**6)
    monkeypatch.setattr(coverage, "MAX_LAW_CELLS", 40)  # (19 + 1) x (2 ECs + 2 states)
    one_line_error(lambda: ml.exact_coverage(lang, range(1, 20)), match="length laws")
    assert ml.exact_coverage(lang, range(1, 10)).support.any()  # 10 x 4 cells: allowed
    monkeypatch.undo()
    assert np.array_equal(full.counts, ml.exact_coverage(lang, range(1, 20)).counts)
    for bad in ("no", 0, None):
        one_line_error(lambda bad=bad: ml.sample(lang, [3], 2, limits=bad), match="limits")


def test_the_largest_allowed_exact_coverage_finishes_in_about_a_minute():
    """The node-table limit binds first for a small monoid: parity at 1..4071 is allowed (about
    20 s on a 2-core machine), 1..4072 refused at once. Timed here on a quarter of it."""
    lang = ml.load_language("parity")
    one_line_error(lambda: ml.exact_coverage(lang, range(1, 4073)), match="nodes")
    layouts, rows = coverage.layout_bounds("balanced", range(1, 4072))
    assert rows <= coverage.MAX_NODE_ROWS < coverage.layout_bounds("balanced", range(1, 4073))[1]
    start = time.perf_counter()
    ml.exact_coverage(lang, range(1, 1001))
    assert time.perf_counter() - start < 30


def test_layout_bounds_bound_the_node_table():
    for schedule, lengths, offsets in (("balanced", range(1, 200), None),
                                       ("balanced", range(1, 40), "random"),
                                       ("balanced", [5, 17], [0, 3, 9]), ("scan", range(1, 90), None),
                                       ("chain", range(1, 90), None)):
        layouts, rows = coverage.layout_bounds(schedule, lengths, offsets)
        table = coverage.node_table(schedule, lengths, offsets)
        assert len(table) <= rows <= 2 * len(table) + 200, (schedule, offsets)


# ----------------------------------------------------------------------- seeds, counts, threads
BAD_SEEDS = [-1, "abc", 99999999999999999999, 1.5, True, 2**63]


@pytest.mark.parametrize("seed", BAD_SEEDS)
def test_every_seed_argument_is_checked(seed):
    from monoidlab.models.positions import make_position_encoding
    from monoidlab.tasks.base import as_generator, get_task
    from monoidlab.viz.probing import umap_coordinates

    lang = ml.load_language("parity")
    calls = [lambda: ml.sample(lang, [3], 2, seed=seed),
             lambda: length_batches(lang, [3], 2, seed=seed),
             lambda: covering_sample(lang, range(1, 9), 4, test_lengths=[20], seed=seed),
             lambda: CoveringPlan(lang, range(1, 9), [20], seed=seed),
             lambda: CoveringPlan(lang, range(1, 9), [20]).sample(3, seed=seed),
             lambda: near_misses(seed, "dyck-2", 4, 2),
             lambda: as_generator(seed),
             lambda: get_task("parity_check").sample(seed, 2, 4),
             lambda: umap_coordinates(np.zeros((5, 2)), seed=seed),
             lambda: make_position_encoding("randomized-rope", 8, 2, seed=seed)]
    for call in calls:
        one_line_error(call, match="seed|rng")


def test_valid_seeds_give_the_same_strings_as_before():
    lang = ml.load_language("dyck-2")
    a = ml.sample(lang, [8], 5, seed=7)
    b = ml.sample(lang, [8], 5, seed=np.random.default_rng(7))
    assert np.array_equal(a.tokens, b.tokens)
    assert ml.sample(lang, [4], 2, seed=2**63 - 1).tokens.shape == (2, 4)
    assert ml.sample(lang, [4], 2, seed=np.int64(5)).tokens.tolist() == \
        ml.sample(lang, [4], 2, seed=5).tokens.tolist()
    assert ml.sample("tomita-1", [4], 2, seed=0).strings() == ["0000", "0111"]  # as before
    nm = near_misses(np.random.default_rng(5), lang, 10, 32)
    assert np.array_equal(nm.tokens, near_misses(5, lang, 10, 32).tokens)
    assert check_seed(None) is None


COUNTS = {
    "sample n": lambda lang, bad: ml.sample(lang, [3], bad),
    "length_batches batch_size": lambda lang, bad: length_batches(lang, [3], bad),
    "covering_sample n": lambda lang, bad: covering_sample(lang, range(1, 9), bad,
                                                           test_lengths=[20]),
    "near_misses n": lambda lang, bad: near_misses(0, lang, 4, bad),
    "near_misses L": lambda lang, bad: near_misses(0, lang, bad, 2),
    "near_miss_classes L": lambda lang, bad: near_miss_classes(lang, bad),
    "min_training_length r": lambda lang, bad: ml.min_training_length(lang, [40], r=bad),
    "min_training_length train_min": lambda lang, bad: ml.min_training_length(
        lang, [40], train_min=bad),
    "min_training_length max_search": lambda lang, bad: ml.min_training_length(
        lang, [40], max_search=bad if bad is not None else "x"),
    "min_training_length delta": lambda lang, bad: ml.min_training_length(
        lang, [40], delta=bad if bad is not None else "x", sample_ranges=[[4]]),
    "composition_counts chunk": lambda lang, bad: composition_counts(lang.monoid(), [[0, 1]],
                                                                     [2], chunk=bad),
}


@pytest.mark.parametrize("what", sorted(COUNTS))
@pytest.mark.parametrize("bad", [True, 2.5, -1, "3", None])
def test_counts_are_checked(what, bad):
    one_line_error(lambda: COUNTS[what](ml.load_language("parity"), bad))


def test_coverage_helpers_check_their_arguments():
    from monoidlab.coverage.min_length import coverage_probability, samples_needed

    cov = ml.exact_coverage("dyck-2", range(1, 9))
    need = cov.support
    assert coverage_probability(cov, need, 10**6) > 0.99
    for call in (lambda: coverage_probability(cov, need, -5),
                 lambda: coverage_probability(cov, need, 2.5),
                 lambda: coverage_probability(cov, need.astype(int), 10),
                 lambda: coverage_probability("cov", need, 10),
                 lambda: samples_needed(cov, need, delta=1.5),
                 lambda: samples_needed(cov, need, delta=float("nan")),
                 lambda: samples_needed(cov, need, r=0),
                 lambda: ml.exact_coverage("dyck-2", [4], schedule="nope"),
                 lambda: ml.exact_coverage("dyck-2", [4], schedule=3),
                 lambda: level_coverage("dyck-2", [4], [8]).sampled(np.zeros((2, 3, 3)), 5)):
        one_line_error(call)


# ----------------------------------------------------------------------- literal text in figures
MATH_SPEC = r'''
name = "$\\frac{$"
description = "mathtext everywhere: $x$"
alphabet = ["$x$", "_^", "\\frac{", "$"]
start = "$a$"
classes = ["$\\frac{$", "_b^"]
[output]
"$a$" = "$\\frac{$"
"b_$" = "_b^"
[transitions]
"$a$" = { "$x$" = "b_$", "_^" = "$a$", "\\frac{" = "$a$", "$" = "b_$" }
"b_$" = { "$x$" = "$a$", "_^" = "b_$", "\\frac{" = "$a$", "$" = "b_$" }
'''


def all_texts(fig) -> list:
    """Every Text of a figure, table cells included (``findobj`` does not reach them)."""
    import matplotlib

    texts = list(fig.findobj(matplotlib.text.Text))
    for ax in fig.axes:
        for table in ax.tables:
            texts += [cell.get_text() for cell in table.get_celld().values()]
    return texts


def drawn(text_artist) -> str:
    """The string matplotlib draws for a Text (after its mathtext / escape handling)."""
    shown, is_math = text_artist._preprocess_math(text_artist.get_text())
    assert is_math is False, text_artist.get_text()
    return shown


def test_every_figure_draws_user_text_literally(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import pandas as pd

    from monoidlab import viz
    from monoidlab.evaluation import Evaluation
    from monoidlab.probing import ClusterAgreement
    from monoidlab.probing.embeddings import NodeEmbeddings
    from monoidlab.viz import coverage as viz_coverage
    from monoidlab.viz import probing as viz_probing

    spec = tmp_path / "math.toml"
    spec.write_text(MATH_SPEC, encoding="utf-8")
    lang = ml.load_language(spec)
    name = "$\\frac{$"
    assert lang.name == name and lang.classes == ("$\\frac{$", "_b^")
    m = lang.monoid()
    gap = ml.compare(ml.exact_coverage(lang, range(1, 6)), ml.exact_coverage(lang, range(7, 10)))
    lc = level_coverage(lang, range(1, 5), range(6, 9))
    rng = np.random.default_rng(0)
    ecs = rng.integers(0, m.size, 40)
    agreement = ClusterAgreement("kmeans").fit(np.eye(m.size)[ecs] + rng.normal(0, 0.01, (40, m.size)),
                                               ecs)
    meta = pd.DataFrame({"ec": ecs, "class_name": [lang.classes[c] for c in m.outputs[ecs]],
                         "level": rng.integers(1, 4, 40)})
    emb = NodeEmbeddings(rng.normal(size=(40, 3)), meta, "tree", "balanced", m)
    frame = pd.DataFrame({"cos": rng.random(20), "rel_l2": rng.random(20)})
    ev = Evaluation(name, ("paper", "_hidden$x$"), 0.99, 8,
                    accuracy={"paper": {3: 1.0, 4: 0.5}, "_hidden$x$": {3: 0.5}},
                    baselines={"$maj$": {"paper": {3: 0.5, 4: 0.5}}})
    figures = {
        "automaton_figure": viz.automaton_figure(lang),
        "multiplication_heatmap": viz.multiplication_heatmap(m),
        "egg_box_figure": viz.egg_box_figure(m),
        "coverage_heatmap": viz.coverage_heatmap(gap.train),
        "coverage_heatmap(title)": viz.coverage_heatmap(gap.train, title=name),
        "gap_heatmaps": viz.gap_heatmaps(gap),
        "ratio_heatmap": viz.ratio_heatmap(gap),
        "shift_bars": viz.shift_bars(gap),
        "missing_table": viz.missing_table(gap),
        "level_grid": viz_coverage.level_grid(lc),
        "accuracy_by_length": viz.accuracy_by_length({name: {1: 1.0, 2: 0.5}}, title=name),
        "exact_match_figure": viz.exact_match_figure({name: {0: {1: 1.0}}}, 1, title=name),
        "kind_accuracy_figure": viz.kind_accuracy_figure(ev),
        "contingency_heatmap": viz_probing.contingency_heatmap(agreement, m, title=name),
        "umap_figure": viz_probing.umap_figure(emb, coords=rng.normal(size=(40, 2)), title=name),
        "associativity_histograms": viz_probing.associativity_histograms(frame, title=name),
    }
    for key, fig in figures.items():
        fig.canvas.draw()  # mathtext would raise here
        shown = [drawn(t) for t in all_texts(fig) if t.get_text()]  # none is mathtext
        if key not in ("missing_table", "associativity_histograms", "ratio_heatmap"):
            assert any(name in s or "$" in s for s in shown), key  # user text, as written
        matplotlib.pyplot.close(fig)
    title = figures["automaton_figure"].axes[0].title
    assert drawn(title).startswith(f"{name}: minimal automaton")
    assert drawn(figures["accuracy_by_length"].axes[0].title) == name
    assert drawn(figures["coverage_heatmap(title)"].axes[0].title) == name
    assert figures["exact_match_figure"]._suptitle.get_text() != name  # escaped...
    assert drawn(figures["exact_match_figure"]._suptitle) == name  # ...and shown as written
    legend = [drawn(t) for ax in figures["kind_accuracy_figure"].axes  # one panel per kind
              for t in ax.get_legend().get_texts()]
    assert any(t.lstrip("\u200b").startswith("_hidden$x$") for t in legend)  # not dropped
    assert any("$maj$" in t for t in legend)
    ticks = [drawn(t) for t in figures["multiplication_heatmap"].axes[0].get_xticklabels()]
    assert set(ticks) <= {w if w else "ε" for w in m.words} and any("$" in t for t in ticks)


def test_checks_doctests():
    import doctest

    from monoidlab import _checks
    from monoidlab.algebra import languages
    from monoidlab.strings import sampling
    from monoidlab.viz import _common

    for mod in (_checks, _util, _common, languages, sampling):
        assert doctest.testmod(mod, optionflags=doctest.ELLIPSIS).failed == 0, mod.__name__


def test_frozen_list_is_json_and_equal_to_lists():
    import json

    words = FrozenList(["a", "b"])
    assert json.dumps(words) == '["a", "b"]' and words == ["a", "b"] and words + ["c"] == [
        "a", "b", "c"]
    with pytest.raises(ReadOnlyError):
        words *= 2
