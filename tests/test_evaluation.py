"""Tests for the strict evaluation (monoidlab.evalsets, monoidlab.evaluation): the test
kinds are what they claim (EC-stratified is uniform over ECs, paper is the papers' protocol),
trivial models are *not* solved on dyck-4 while the automaton itself is, single-class lengths
are never scored, and every accuracy comes with its baselines."""

import warnings

import numpy as np
import pytest
import torch
from scipy.stats import chisquare

import monoidlab as ml
from monoidlab.evaluation import (
    KINDS,
    Evaluation,
    classes_at,
    count_baseline,
    evaluate_kinds,
    kind_batch,
    majority_baseline,
    min_beside_baselines,
)
from monoidlab.training.problems import LanguageProblem

pytestmark = pytest.mark.usefixtures("one_torch_thread")


class Stub(torch.nn.Module):
    """A 'model' answering by a rule on the token batch (for baselines and oracles)."""

    def __init__(self, rule, n_classes=2):
        super().__init__()
        self.rule, self.n_classes = rule, n_classes
        self.dummy = torch.nn.Parameter(torch.zeros(1))

    def forward(self, tokens, lengths):
        pred = torch.as_tensor(self.rule(tokens.numpy(), lengths.numpy()), dtype=torch.long)
        return torch.nn.functional.one_hot(pred, self.n_classes).float() + 0 * self.dummy


def always(c):
    return Stub(lambda t, n: np.full(len(n), c))


def count_only(t, n):
    """Accept iff the string has as many 0s as 1s (the best Dyck rule from counts alone)."""
    valid = np.arange(t.shape[1])[None, :] < n[:, None]
    ones = ((t == 1) & valid).sum(1)
    return (2 * ones == n).astype(int)


def automaton_model(lang):
    return Stub(lambda t, n: lang.classify(t, n), lang.n_classes)


@pytest.fixture(scope="module")
def dyck4():
    return LanguageProblem(ml.load_language("dyck-4"))


LENGTHS = range(24, 41)  # both parities; every even length has members


def test_the_automaton_is_solved_on_every_kind(dyck4):
    ev = evaluate_kinds(automaton_model(dyck4.language), dyck4, LENGTHS, 48, seed=0)
    assert ev.solved and ev.scored_kinds == list(KINDS)
    assert all(a == 1.0 for k in KINDS for a in ev.accuracy[k].values())
    assert ev.verdict().startswith("solved")


@pytest.mark.parametrize("stub", ["reject", "accept", "count"])
def test_trivial_models_are_not_solved_on_dyck4(dyck4, stub):
    model = {"reject": always(0), "accept": always(1), "count": Stub(count_only)}[stub]
    ev = evaluate_kinds(model, dyck4, LENGTHS, 48, seed=0)
    assert not ev.solved, ev.verdict()
    assert ev.verdict().startswith("not solved")
    if stub == "reject":  # a constant gets exactly the majority baseline on every kind
        for k in KINDS:
            for L, acc in ev.accuracy[k].items():
                assert acc == pytest.approx(1 - ev.class_mix[k][L].get("accept", 0.0), abs=1e-4)
                assert acc <= ev.majority[k][L] + 1e-6
    if stub == "count":  # and a count rule never beats the count-only baseline
        for k in KINDS:
            for L, acc in ev.accuracy[k].items():
                assert acc <= ev.count_only[k][L] + 1e-6  # float32 means
        assert ev.min_accuracy("ec_stratified") < 0.9  # ECs with balanced counts fool it


def test_min_beside_baselines_is_the_cell_of_every_results_table(dyck4):
    # a kind's minimum, then the majority and count-only means, all from one evaluation's JSON
    ev = evaluate_kinds(always(0), dyck4, LENGTHS, 48, seed=0)
    data = ev.as_dict()
    for k in KINDS:
        row = next(r for r in ev.summary_rows() if r["kind"] == k)
        assert min_beside_baselines(data, k) == \
            f"{ev.min_accuracy(k):.3f} ({row['majority']:.2f} / {row['count_only']:.2f})"
    missing = {**data, "summary": [{**r, "count_only": float("nan")} for r in data["summary"]]}
    assert min_beside_baselines(missing, "balanced").endswith(" / –)")
    unavailable = {**data, "summary": [{**r, "min": float("nan")} for r in data["summary"]]}
    assert min_beside_baselines(unavailable, "near_miss") == "n/a"
    assert min_beside_baselines(data, "no-such-kind") == "n/a"


def test_single_class_lengths_are_reported_but_never_scored(dyck4):
    ev = evaluate_kinds(always(0), dyck4, range(30, 34), 16, seed=0)
    assert set(ev.single_class["paper"]) == {31, 33}  # odd: every string is rejected
    assert set(ev.accuracy["paper"]) == {30, 32}
    assert ev.unavailable["near_miss"] == [31, 33]  # no near miss at odd lengths
    assert ev.single_class["paper"][31] == 1.0  # right, but it counts for nothing
    with pytest.warns(UserWarning, match="single class"):
        odd = evaluate_kinds(always(0), dyck4, range(41, 62, 2), 8, seed=0)
    assert not odd.solved and "nothing could be scored" in odd.verdict()


def test_ec_stratified_is_uniform_over_reachable_ecs():
    lang = ml.load_language("dyck-2")
    m = lang.monoid()
    L = 10
    b = kind_batch(lang, "ec_stratified", L, 6000, np.random.default_rng(0))
    ecs = m.element_of(b.tokens, b.lengths)
    from monoidlab.laws import forward_laws

    reachable = np.flatnonzero(forward_laws(m.right, 0, L, indicator=True)[L] > 0)
    counts = np.bincount(ecs, minlength=m.size)
    assert set(np.flatnonzero(counts)) == set(reachable.tolist())
    assert chisquare(counts[reachable]).pvalue > 1e-3
    # uniform EC is far from uniform strings: the rarest EC is not rare any more
    uni = ml.sample(lang, [L], 6000, seed=1)
    assert np.bincount(m.element_of(uni.tokens, uni.lengths), minlength=m.size)[
        reachable].min() < counts[reachable].min() / 3


def test_paper_kind_is_the_papers_protocol():
    lang = ml.load_language("dyck-4")
    b = kind_batch(lang, "paper", 20, 400, np.random.default_rng(0))
    # half uniform members, half uniform strings (almost all rejected at length 20)
    assert 0.5 <= b.labels.mean() <= 0.53
    odd = kind_batch(lang, "paper", 21, 40, np.random.default_rng(0))
    assert (odd.labels == 0).all()  # no member: uniform strings only
    cyc = kind_batch(ml.load_language("cycle-navigation"), "paper", 20, 500,
                     np.random.default_rng(0))
    assert np.bincount(cyc.labels).tolist() == [100] * 5  # class-balanced otherwise
    assert classes_at(lang, 20).tolist() == [0, 1] and classes_at(lang, 21).tolist() == [0]
    with pytest.raises(ValueError, match="unknown test kind"):
        kind_batch(lang, "hard", 20, 4, np.random.default_rng(0))


def test_sub_language_kinds_stay_inside_it():
    lang = ml.load_language("modular-arithmetic")
    for kind in KINDS:
        b = kind_batch(lang, kind, 9, 60, np.random.default_rng(0), within="auto")
        assert "incomplete" not in {lang.classes[c] for c in b.labels}, kind


def test_baselines():
    assert majority_baseline(np.array([0, 0, 1])) == pytest.approx(2 / 3)
    t = np.array([[0, 1, 0], [1, 0, 0], [1, 1, 0], [0, 0, 0]])
    n = np.array([2, 2, 2, 3])
    # "01" and "10" share counts (labels 1, 0): one of them is lost; "11" and "000" are alone
    assert count_baseline(t, n, np.array([1, 0, 1, 1]), 2) == 0.75
    assert np.isnan(majority_baseline(np.array([], int)))


def test_evaluation_round_trips_through_json():
    import json

    ev = Evaluation("p", ("paper", "near_miss"), 0.99, 8,
                    accuracy={"paper": {4: 1.0}, "near_miss": {4: 0.5}},
                    single_class={"paper": {5: 1.0}, "near_miss": {}},
                    unavailable={"paper": [], "near_miss": [5]},
                    baselines={"majority": {"paper": {4: 0.5, 5: 1.0}, "near_miss": {4: 0.5}},
                               "count_only": {"paper": {4: 1.0}, "near_miss": {4: 0.5}}},
                    class_mix={"paper": {4: {"a": 0.5, "b": 0.5}}, "near_miss": {}})
    back = Evaluation.from_dict(json.loads(json.dumps(ev.as_dict())))
    assert back == ev and not back.solved and back.failing_lengths("near_miss") == [4]
    assert "near_miss 0.500 at length 4" in back.verdict()


def test_evaluation_is_seeded_and_model_independent(dyck4):
    a = evaluate_kinds(always(0), dyck4, [30], 16, seed=1)
    b = evaluate_kinds(always(0), dyck4, [30], 16, seed=1)
    c = evaluate_kinds(always(0), dyck4, [30], 16, seed=2)
    assert a == b
    assert a.class_mix != c.class_mix or a.accuracy != c.accuracy  # other strings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # both parities: no warning
        evaluate_kinds(always(0), dyck4, [30, 31], 4, seed=0)


def test_solved_needs_every_kind_and_every_scored_length():
    perfect = {4: 1.0, 6: 1.0}
    ev = Evaluation("p", KINDS, 0.99, 8, accuracy={"paper": perfect, "near_miss": perfect,
                                                  "ec_stratified": {4: 1.0, 6: 0.985}})
    assert not ev.solved and ev.failing_lengths("ec_stratified") == [6]
    ev.accuracy["ec_stratified"][6] = 0.99
    assert ev.solved
    ev.accuracy["near_miss"] = {}  # a kind without scored lengths does not count
    assert ev.solved and ev.scored_kinds == ["paper", "ec_stratified"]
    assert "paper, ec_stratified" in ev.verdict()


def test_a_new_baseline_is_one_entry_and_reaches_every_output(monkeypatch):
    """The one place to add a metric: a Baseline in BASELINES is computed on every test set and
    shows up in the summary rows, the JSON (and back), the text table and the report's table."""
    import json

    from monoidlab.evaluation import baselines, evaluation_text, result, run
    from monoidlab.evaluation.baselines import Baseline

    always_zero = Baseline("always_reject", "answers class 0 to every string",
                           lambda s: None if s.labels is None else float(np.mean(s.labels == 0)))
    extended = (*baselines.BASELINES, always_zero)
    for module in (baselines, result, run):  # text.py shows result.shown_baselines()
        monkeypatch.setattr(module, "BASELINES", extended)
    problem = LanguageProblem(ml.load_language("dyck-2"))
    model = __import__("monoidlab.models", fromlist=["build_model"]).build_model(
        "mlp-ldru", 2, 2, d=8)
    ev = evaluate_kinds(model, problem, [10, 12], n_per_length=16, seed=0)
    assert set(ev.baselines["always_reject"]) == set(ev.kinds)
    row = ev.summary_rows()[0]
    assert 0 < row["always_reject"] <= 1
    back = Evaluation.from_dict(json.loads(json.dumps(ev.as_dict())))
    assert back.baselines["always_reject"] == ev.baselines["always_reject"]
    assert "always_reject" in evaluation_text(ev, lengths=False).splitlines()[1]
