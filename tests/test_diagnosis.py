"""monoidlab.training.diagnosis: a failed run is attributed to budget, data, depth or training,
and a planted missing composition is found and named."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from monoidlab.coverage.compositions import composition_counts
from monoidlab.evaluation import evaluate_kinds
from monoidlab.training import RunConfig
from monoidlab.training.diagnosis import depth_of, diagnose, string_compositions, tally_sets
from monoidlab.training.problems import make_problem

pytestmark = pytest.mark.usefixtures("one_torch_thread")


class PlantedModel(torch.nn.Module):
    """The language's own answer, except on strings of ``min_length`` or more whose tree has
    the planted composition (level, x, y): there, the next class (a wrong answer). Shorter
    strings (the training lengths) are always right, so the model fits them."""

    def __init__(self, lang, planted, padding="identity", min_length=9):
        super().__init__()
        self.lang, self.planted, self.padding = lang, planted, padding
        self.min_length = min_length
        self.dummy = torch.nn.Parameter(torch.zeros(1))

    def has(self, tokens, lengths):
        lev, x, y = self.planted
        m = self.lang.monoid()
        out = np.zeros(len(lengths), bool)
        for i in range(len(lengths)):
            c = composition_counts(m, tokens[i:i + 1], lengths[i:i + 1], "balanced",
                                   per_level=True, padding=self.padding)
            out[i] = lengths[i] >= self.min_length and lev < len(c) and c[lev, x, y] > 0
        return out

    def forward(self, tokens, lengths):
        t, n = tokens.numpy(), lengths.numpy()
        cls = self.lang.classify(t, n)
        cls = np.where(self.has(t, n), (cls + 1) % self.lang.n_classes, cls)
        return torch.nn.functional.one_hot(torch.as_tensor(cls), self.lang.n_classes).float()


def setup(lang_name="parity", train="1:8", test="9:16"):
    cfg = RunConfig(language=lang_name, model="mlp-ldru", steps=1, train_lengths=train,
                    test_lengths=test, test_samples=32,
                    model_options={"d": 8, "padding": "identity"})
    return cfg, make_problem(cfg)


def reference_tally(monoid, sets, shown, schedule="balanced", padding="learned"):
    """The per-string loop that :func:`diagnose` ran before :func:`tally_sets` (kept as the
    reference): one ``composition_counts`` call per string, a dict of wrong hits in the order
    first met, sorted stably by count."""
    shown_any = shown.any(axis=0)
    wrong_hits: dict = {}
    tally = dict.fromkeys(("wrong", "right", "wrong_level", "right_level", "wrong_free",
                           "right_free"), 0)
    for tokens, lengths, correct in sets:
        for i in range(len(correct)):
            c = composition_counts(monoid, tokens[i:i + 1], lengths[i:i + 1], schedule,
                                   per_level=True, padding=padding) > 0
            levels = min(len(c), len(shown))
            missing = c[:levels] & ~shown[:levels]
            free = c.any(axis=0) & ~shown_any
            side = "right" if correct[i] else "wrong"
            tally[side] += 1
            tally[f"{side}_level"] += bool(missing.any())
            tally[f"{side}_free"] += bool(free.any())
            if not correct[i]:
                for lev, x, y in np.argwhere(missing):
                    key = (int(lev), int(x), int(y))
                    wrong_hits[key] = wrong_hits.get(key, 0) + 1
    return tally, sorted(wrong_hits.items(), key=lambda kv: -kv[1])


def reference_compositions(monoid, tokens, lengths, padding, schedule="balanced"):
    rows = []
    for i in range(len(lengths)):
        c = composition_counts(monoid, tokens[i:i + 1], lengths[i:i + 1], schedule,
                               per_level=True, padding=padding)
        rows += [(i, int(lev), int(x) * monoid.size + int(y)) for lev, x, y in np.argwhere(c)]
    return np.array(rows, np.int64).reshape(-1, 3)


@pytest.mark.parametrize("name", ["parity", "dyck-2", "tomita-3", "cycle-navigation", "dyck-4"])
@pytest.mark.parametrize("padding", ["learned", "identity"])
def test_the_batched_tally_equals_the_per_string_loop(name, padding):
    """Sets of near-miss strings (one length per set, as diagnose draws them, and one set of
    mixed lengths 1..20), random correctness and a random training layout with fewer levels
    than the longest strings need: the same tally and the same ordered wrong hits."""
    import monoidlab as ml

    lang = ml.load_language(name)
    m = lang.monoid()
    rng = np.random.default_rng(7)
    sets = []
    for L in (1, 5, 8, 13):
        b = ml.sample(lang, [L], 30, sampler="near_miss", seed=L)
        sets.append((b.tokens, b.lengths, rng.random(len(b.lengths)) < 0.4))
    b = ml.sample(lang, range(1, 21), 80, sampler="near_miss", seed=0)
    sets.append((b.tokens, b.lengths, rng.random(len(b.lengths)) < 0.4))
    shown = rng.random((4, m.size, m.size)) < 0.8  # levels 4..: never shown
    shown[:, 0, 0] = False  # a composition unshown at every level
    rows = string_compositions(m, b.tokens, b.lengths, padding=padding)
    assert np.array_equal(rows, reference_compositions(m, b.tokens, b.lengths, padding))
    tally, hits = tally_sets(m, sets, shown, padding=padding)
    ref_tally, ref_hits = reference_tally(m, sets, shown, padding=padding)
    assert tally == ref_tally and hits == ref_hits
    assert tally["wrong"] + tally["right"] == sum(len(c) for _, _, c in sets)
    assert hits and tally["wrong_level"] > 0  # the comparison saw missing compositions


@pytest.mark.parametrize("schedule", ["chain", "scan"])
def test_the_compositions_of_other_schedules_equal_the_per_string_counts(schedule):
    import monoidlab as ml

    lang = ml.load_language("tomita-3")
    b = ml.sample(lang, range(1, 15), 60, sampler="near_miss", seed=3)
    rows = string_compositions(lang.monoid(), b.tokens, b.lengths, schedule)
    ref = reference_compositions(lang.monoid(), b.tokens, b.lengths, "learned", schedule)
    assert len(rows) > 60 and np.array_equal(rows, ref)


def test_the_tally_of_no_string_is_empty():
    import monoidlab as ml

    m = ml.load_language("parity").monoid()
    empty = (np.zeros((0, 3), np.int64), np.zeros(0, np.int64), np.zeros(0, bool))
    tally, hits = tally_sets(m, [empty], np.ones((2, 2, 2), bool))
    assert hits == [] and set(tally.values()) == {0}


def test_depth_of_matches_the_balanced_tree():
    for L in range(2, 300):
        assert 2 ** (depth_of(L) - 1) < L <= 2 ** depth_of(L)


def test_a_planted_unseen_composition_is_named_and_blamed_on_the_data():
    """The run's sampled strings showed every composition but one at level 2 (planted zero);
    the model errs exactly on the strings whose tree holds it: cause data, and it is named."""
    cfg, problem = setup("tomita-3", "1:8", "9:16")
    lang = problem.language
    m = lang.monoid()
    # a level-2 composition that the test strings meet
    rng = np.random.default_rng(0)
    b = problem.kind_batch(problem.eval_rng(0, "near_miss", 12), 12, 32, "near_miss")
    c = composition_counts(m, b["tokens"], b["lengths"], "balanced", per_level=True,
                           padding="identity")
    lev = 2
    xs, ys = np.nonzero(c[lev])
    pick = int(rng.integers(len(xs)))
    x, y = int(xs[pick]), int(ys[pick])
    model = PlantedModel(lang, (lev, x, y))
    ev = evaluate_kinds(model, problem, cfg.test_lengths, 32, 0, "all", 0.99, progress=False)
    assert not ev.solved
    sampled = np.full((4, m.size, m.size), 50)
    sampled[lev, x, y] = 0  # the planted gap: shown by the layout, never by these strings
    d = diagnose(model, cfg, problem, ev, seed=0, sampled=sampled, k=1)
    assert d.cause == "data", d.text()
    words = m.labels()
    assert d.uncovered[0] == {"level": lev, "left": words[x], "right": words[y],
                              "wrong_strings": d.wrong_strings}
    assert d.wrong_with_uncovered == d.wrong_strings > 0 and d.right_with_uncovered == 0
    assert f"level {lev}: {words[x]} · {words[y]}" in d.text()
    # without the sampled counts the layout shows it: no longer the data's fault
    d2 = diagnose(model, cfg, problem, ev, seed=0)
    assert d2.cause != "data" and d2.wrong_with_uncovered == 0


def test_a_model_that_does_not_fit_its_training_lengths_is_a_budget_problem():
    cfg, problem = setup("parity", "1:8", "9:12")
    torch.manual_seed(0)
    from monoidlab.models import build_model

    model = build_model("mlp-ldru", 2, 2, d=8, padding="identity")  # untrained
    ev = evaluate_kinds(model, problem, cfg.test_lengths, 16, 0, "all", 0.99, progress=False)
    d = diagnose(model, cfg, problem, ev, seed=0, fit_samples=8)
    assert d.cause == "budget" and not d.fit["fits"]
    assert "does NOT fit" in d.text()


def test_a_solved_evaluation_needs_no_diagnosis():
    cfg, problem = setup("parity", "1:8", "9:12")
    lang = problem.language
    model = PlantedModel(lang, (50, 0, 0))  # a level no string has: always right
    ev = evaluate_kinds(model, problem, cfg.test_lengths, 16, 0, "all", 0.99, progress=False)
    assert ev.solved and diagnose(model, cfg, problem, ev).cause == "solved"


@pytest.mark.parametrize("accuracy, majority, says", [
    ({9: 1.0, 10: 0.995}, {9: 1.0, 10: 0.995}, "a majority-class model also scores"),
    ({}, {}, "nothing could be scored")])
def test_a_failure_with_no_failing_length_is_untestable_not_a_crash(accuracy, majority, says):
    """Not solved although no length is below the threshold (test strings a constant answer
    passes, or none scored): there is no failing set to re-draw, and the diagnosis says why."""
    from monoidlab.evaluation import Evaluation

    cfg, problem = setup("dyck-2", "1:8", "9:10")
    model = PlantedModel(problem.language, (50, 0, 0))
    ev = Evaluation("dyck-2", ("paper",), 0.99, 16, accuracy={"paper": accuracy},
                    baselines={"majority": {"paper": majority}})
    assert not ev.solved
    d = diagnose(model, cfg, problem, ev)
    assert d.cause == "untestable" and says in d.text(), d.text()


def test_evaluate_prints_the_diagnosis_of_a_failed_run(tmp_path, capsys):
    """`monoidlab evaluate RUN` of a run that fails: the diagnosis before the table (the
    verdict stays the last line), and in the JSON; `--no-diagnosis` leaves it out."""
    import json

    from monoidlab.cli import main

    run = tmp_path / "run"
    # one attempt validated on the test lengths (the recipe's restarts, each validated at
    # 42..500, cost most of the time and change nothing here: the run fails either way)
    assert main(["train", "--language", "tomita-3", "--model", "mlp-ldru", "--out", str(run),
                 "--steps=20",
                 "--train_lengths=1:8", "--test_lengths=9:12", "--test_samples=16",
                 "--restarts=0", "--val_lengths=9:12",
                 "--model_options={d = 4, padding = \"identity\"}", "--json"]) in (0, None)
    capsys.readouterr()
    main(["evaluate", str(run)])
    out = capsys.readouterr().out
    assert "diagnosis: " in out and out.strip().splitlines()[-1].startswith("not solved")
    main(["evaluate", str(run), "--json"])
    res = json.loads(capsys.readouterr().out)
    assert res["diagnosis"]["cause"] in ("budget", "data", "depth", "training")
    assert res["diagnosis"]["fit"]["lengths"] == "1:8"
    main(["evaluate", str(run), "--json", "--no-diagnosis"])
    assert "diagnosis" not in json.loads(capsys.readouterr().out)
