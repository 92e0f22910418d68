"""Validation strings and restarts of the trainer.

Validation draws fresh strings at every check, never the test strings; ``restarts`` trains up to
1 + restarts attempts from fresh seeds and tests the best validated weights over all of them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from monoidlab.errors import ConfigError
from monoidlab.evaluation import Evaluation
from monoidlab.training import RunConfig, train
from monoidlab.training import loop as loop_mod
from monoidlab.training import trainer as trainer_mod
from monoidlab.training.attempts import Validation as _Validation
from monoidlab.training.attempts import attempt_config, validation_seed

# dyck-2 cannot be solved by a d-8 model in 30 steps: every attempt runs to its end
HARD = dict(language="dyck-2", model="mlp-ldru", steps=30, batch_size=8, lr=3e-3,
            model_options={"d": 8, "dropout": 0.0}, train_lengths="1:8", test_lengths="10:14:2",
            val_lengths="10:14:2", val_samples=4, test_samples=4, eval_every=10, early_stop=2,
            checkpoint_every=10, log_every=10, restarts=2, threads=1)


def _validations(out: Path) -> list[dict]:
    rows = [json.loads(ln) for ln in (out / "metrics.jsonl").read_text().splitlines()]
    return [r for r in rows if "val_solved" in r]


def _record_seeds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    seeds: list[int] = []
    real = loop_mod.evaluate_kinds

    def spy(model, problem, lengths, n, seed, *a, **kw):
        seeds.append(seed)
        return real(model, problem, lengths, n, seed, *a, **kw)

    monkeypatch.setattr(trainer_mod, "evaluate_kinds", spy)  # the test
    monkeypatch.setattr(loop_mod, "evaluate_kinds", spy)  # the validations
    return seeds


def test_each_validation_draws_fresh_strings_never_the_test_strings(monkeypatch):
    seeds = _record_seeds(monkeypatch)
    cfg = RunConfig(**{**HARD, "restarts": 0, "seed": 3})
    train(cfg, None, progress=False)
    *val, test = seeds
    assert test == 3  # the test set is the run's seed's
    assert len(val) == 3 and len(set(val)) == 3 and 3 not in val  # steps 10, 20 and the end
    assert val == [validation_seed(3, s) for s in (10, 20, 30)]


def test_restarts_train_every_attempt_from_a_fresh_seed(tmp_path, monkeypatch):
    fresh: list[int] = []
    real = loop_mod._fresh

    def spy(cfg, problem, device):
        fresh.append(cfg.seed)
        return real(cfg, problem, device)

    monkeypatch.setattr(loop_mod, "_fresh", spy)
    res = train(RunConfig(**HARD), tmp_path / "r", progress=False)
    assert res["attempts"] == 3 and res["steps"] == 90 and not res["stopped_early"]
    assert fresh == [attempt_config(RunConfig(**HARD), a).seed for a in range(3)]
    assert fresh[0] == 0 and len(set(fresh)) == 3
    val = _validations(tmp_path / "r")
    # every 10 steps of every attempt, the end of each attempt included
    assert [v["step"] for v in val] == list(range(10, 91, 10))
    assert [v["attempt"] for v in val] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    # the tested weights are the best validated ones over all attempts (later wins ties)
    keys = [(v["val_solved"], v["val_min_accuracy"], v["val_mean_accuracy"]) for v in val]
    assert res["best_step"] == max(zip(keys, [v["step"] for v in val]))[1]
    best = torch.load(tmp_path / "r" / "best.pt", weights_only=True)
    assert best["step"] == res["best_step"]


def test_attempt_zero_is_the_run_without_restarts(tmp_path):
    one = train(RunConfig(**{**HARD, "restarts": 0}), tmp_path / "a", progress=False)
    many = train(RunConfig(**HARD), tmp_path / "b", progress=False)
    rows_a = [json.loads(ln) for ln in (tmp_path / "a" / "metrics.jsonl").read_text().splitlines()]
    rows_b = [json.loads(ln) for ln in (tmp_path / "b" / "metrics.jsonl").read_text().splitlines()]
    strip = [{k: v for k, v in r.items() if k not in ("elapsed_s", "cpu_s", "attempt")} for r in rows_b]
    # the first 30 steps (and their validations) agree, the end-of-attempt validation included
    assert "attempt" not in rows_a[1] and rows_b[1]["attempt"] == 0
    assert [{k: v for k, v in r.items() if k not in ("elapsed_s", "cpu_s")} for r in rows_a] == \
        strip[:len(rows_a)]
    assert one["steps"] == 30 and many["steps"] == 90


def test_a_solved_first_attempt_does_not_restart():
    es = dict(language="parity", model="mlp-ldru", steps=400, batch_size=16, lr=3e-3,
              model_options={"d": 16, "dropout": 0.0}, train_lengths="1:12",
              test_lengths="13:30", val_lengths="13:30:3", test_samples=16, eval_every=20,
              early_stop=2, threads=1)
    plain = train(RunConfig(**es), None, progress=False)
    again = train(RunConfig(**es, restarts=3), None, progress=False)
    assert plain["stopped_early"] and again["attempts"] == 1
    assert again["steps"] == plain["steps"] and again["evaluation"] == plain["evaluation"]


def test_resume_across_an_attempt_boundary_equals_the_uninterrupted_run(tmp_path, monkeypatch):
    cfg = RunConfig(**HARD)
    full = train(cfg, tmp_path / "full", progress=False)
    real = loop_mod._seed_torch
    second = attempt_config(cfg, 1).seed

    def die_in_attempt_1(acfg, step):  # global step 45: attempt 1, after the step-40 checkpoint
        if acfg.seed == second and step == 15:
            raise KeyboardInterrupt("killed")
        real(acfg, step)

    with monkeypatch.context() as m:
        m.setattr(loop_mod, "_seed_torch", die_in_attempt_1)
        with pytest.raises(KeyboardInterrupt):
            train(cfg, tmp_path / "killed", progress=False)
    assert torch.load(tmp_path / "killed" / "checkpoint.pt", weights_only=True)["step"] == 40
    resumed = train(cfg, tmp_path / "killed", resume=True, progress=False)
    a = torch.load(tmp_path / "full" / "checkpoint.pt", weights_only=True)["model"]
    b = torch.load(tmp_path / "killed" / "checkpoint.pt", weights_only=True)["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert resumed["evaluation"] == full["evaluation"]
    assert resumed["best_step"] == full["best_step"] and resumed["attempts"] == 3


def test_restarts_need_early_stopping():
    with pytest.raises(ConfigError, match="restarts.*early_stop"):
        RunConfig(**{**HARD, "early_stop": 0})
    with pytest.raises(ConfigError, match="restarts"):
        RunConfig(**{**HARD, "restarts": -1})


def test_probing_compares_with_the_initial_weights_of_the_attempt_that_won(tmp_path, monkeypatch):
    from monoidlab.probing import probe as probe_mod
    from monoidlab.training.attempts import weights_attempt

    cfg = RunConfig(**HARD)
    res = train(cfg, tmp_path / "r", progress=False)
    attempt = weights_attempt(cfg, res["best_step"])
    seen: list[tuple[int, int | None]] = []
    real_init, real_held = probe_mod.model_at_init, probe_mod.heldout_strings

    def init_spy(c, problem):
        seen.append(("init", c.seed))
        return real_init(c, problem)

    def held_spy(c, problem, n, lengths, mode, seed, steps=None):
        seen.append(("held", c.seed, steps))
        return real_held(c, problem, n, lengths, mode, seed, steps=steps)

    monkeypatch.setattr(probe_mod, "model_at_init", init_spy)
    monkeypatch.setattr(probe_mod, "heldout_strings", held_spy)
    out = probe_mod.probe_checkpoint(tmp_path / "r", n_strings=12, n_triples=0, mode="disjoint",
                                     lengths="1:8", max_nodes=200)
    seed = attempt_config(cfg, attempt).seed
    # held-out strings exclude that attempt's training strings; init = that attempt's init
    assert seen == [("held", seed, res["best_step"] - 30 * attempt), ("init", seed)]
    assert out["metrics"].get("attempt", 0) == attempt


def test_a_run_stopped_at_an_attempt_boundary_resumes_to_the_same_result(tmp_path):
    # the validation at step 200 judges attempt 0's last weights; stopping there is attempt 0
    es = dict(language="parity", model="mlp-ldru", steps=200, batch_size=16, lr=3e-3,
              model_options={"d": 16, "dropout": 0.0}, train_lengths="1:12",
              test_lengths="13:20", val_lengths="13:20", test_samples=8, val_samples=8,
              eval_every=200, early_stop=1, restarts=2, threads=1)
    first = train(RunConfig(**es), tmp_path / "r", progress=False)
    assert first["steps"] == 200 and first["attempts"] == 1 and first["stopped_early"]
    again = train(RunConfig(**es), tmp_path / "r", resume=True, progress=False)
    assert again["attempts"] == 1 and again["steps"] == 200
    assert again["evaluation"] == first["evaluation"]


def _evaluation(accuracies: dict[str, list[float]]) -> Evaluation:
    ev = Evaluation("x", tuple(accuracies), 0.99, 64)
    ev.accuracy = {k: dict(enumerate(a, start=41)) for k, a in accuracies.items()}
    return ev


def test_equal_minima_keep_the_weights_with_fewer_wrong_strings():
    """tomita-3's attempts: both one string short somewhere (minimum 63/64), the first with 2
    wrong strings, the second with 40; the first is kept. Solved beats any mean; later wins
    exact ties."""
    one, many = 63 / 64, 62 / 64
    watch = _Validation(patience=1)
    model = torch.nn.Linear(1, 1)
    watch.update(100, _evaluation({"a": [1, one, 1], "b": [one, 1, 1]}), model, None)
    watch.update(200, _evaluation({"a": [one, one, one], "b": [one] * 3}), model, None)
    assert watch.best_step == 100
    watch.update(300, _evaluation({"a": [1, one, 1], "b": [one, 1, 1]}), model, None)
    assert watch.best_step == 300  # an exact tie: the later weights
    watch.update(400, _evaluation({"a": [many, 1, 1], "b": [1, 1, 1]}), model, None)
    assert watch.best_step == 300  # a lower minimum loses whatever its mean
    assert not watch.stopped
    watch.update(500, _evaluation({"a": [0.99, 0.99, 0.99], "b": [0.99] * 3}), model, None)
    assert watch.best_step == 500 and watch.stopped  # solved, with a lower mean
