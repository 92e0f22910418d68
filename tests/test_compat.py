"""Run folders written by monoidlab 0.1.0 before the run configuration was renovated still load,
evaluate and resume (tests/data/runs-v0.1.0, made by tests/data/make_v010_runs.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from monoidlab.evaluation import upgrade_results
from monoidlab.evaluation.kinds import KINDS
from monoidlab.training import evaluate_kinds, load_checkpoint, train
from monoidlab.training.parse import config_from_dict

pytestmark = pytest.mark.usefixtures("one_torch_thread")

OLD = Path(__file__).parent / "data" / "runs-v0.1.0"


def _copy(name: str, tmp_path: Path) -> Path:
    dst = tmp_path / name
    shutil.copytree(OLD / name, dst)
    return dst


def _as_saved(accuracy: dict, saved: dict) -> dict:
    """``accuracy`` (JSON-normalised) on the kinds the old run saved: its config says
    ``eval_kinds = "all"``, which today includes any kind added after it (a new kind goes last
    in the registry, so the saved kinds' test strings, and scores, are unchanged)."""
    accuracy = json.loads(json.dumps(accuracy))
    assert set(saved["accuracy"]) <= set(accuracy), (sorted(saved["accuracy"]), sorted(accuracy))
    return {k: accuracy[k] for k in saved["accuracy"]}


@pytest.mark.parametrize("name", ["parity-ldru-finished", "reverse-rnn-finished"])
def test_an_old_run_folder_loads_and_evaluates_to_its_own_results(name, tmp_path):
    run = _copy(name, tmp_path)
    model, cfg, problem, ckpt = load_checkpoint(run)
    saved = upgrade_results(json.loads((run / "results.json").read_text()))
    assert ckpt["step"] == saved.get("best_step", saved["steps"])
    ev = evaluate_kinds(model, problem, cfg.test_lengths, cfg.test_samples, cfg.seed,
                        cfg.eval_kinds, cfg.solved_threshold)
    assert _as_saved(ev.accuracy, saved) == saved["accuracy"]
    # a kind added since it was saved can only fail it ("all" means every kind of today)
    assert ev.solved == saved["solved"] if set(ev.accuracy) == set(saved["accuracy"]) \
        else ev.solved <= saved["solved"]


def test_an_old_interrupted_run_resumes_to_its_finished_twin(tmp_path):
    run = _copy("parity-ldru-interrupted", tmp_path)
    cfg = config_from_dict(json.loads((run / "config.json").read_text()), "config.json",
                           saved=True)
    res = train(cfg, run, resume=True, progress=False)
    done = upgrade_results(json.loads((OLD / "parity-ldru-finished" / "results.json")
                                      .read_text()))
    assert res["steps"] == done["steps"] and res["best_step"] == done["best_step"]
    assert _as_saved(res["accuracy"], done) == done["accuracy"]
    a = torch.load(OLD / "parity-ldru-finished" / "checkpoint.pt", weights_only=True)
    b = torch.load(run / "checkpoint.pt", weights_only=True)
    assert a["step"] == b["step"] == 12
    # The committed checkpoints were written on another CPU: float32 kernels there and here may
    # round the last bits differently (1.5e-7 at most, measured on an Intel Xeon against the
    # machine that wrote them), so the weights match bit for bit only on a machine like that
    # one; anywhere else within 1e-6, far below what a resume fault (other batches, another
    # schedule step, a lost optimizer state) moves them.
    for k in a["model"]:
        torch.testing.assert_close(b["model"][k], a["model"][k], rtol=0, atol=1e-6, msg=k)


def test_the_command_line_evaluates_and_resumes_an_old_run_folder(tmp_path, capsys):
    """`monoidlab evaluate OLD` and `monoidlab train --resume --out OLD` (the run's own config,
    read in the spelling 0.1.0 wrote)."""
    from monoidlab.cli import main

    run = _copy("parity-ldru-finished", tmp_path)
    assert main(["evaluate", str(run), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    done = upgrade_results(json.loads((run / "results.json").read_text()))
    assert data["kinds"] == list(KINDS)
    assert _as_saved(data["accuracy"], done) == done["accuracy"]
    assert data["paper_score"] == done["paper_score"]
    paused = _copy("parity-ldru-interrupted", tmp_path)
    assert main(["train", "--out", str(paused), "--resume", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["steps"] == 12 and _as_saved(res["accuracy"], done) == done["accuracy"]


def test_old_spellings_are_refused_in_what_a_user_writes_with_the_new_name():
    from monoidlab.errors import ConfigError

    for key, new in (("model_kwargs", "model_options"), ("task_kwargs", "task_options"),
                     ("pad_offset", "offsets")):
        with pytest.raises(ConfigError, match=f"key '{key}' is now '{new}'"):
            config_from_dict({"language": "parity", key: {}}, "mine.toml")
    saved = config_from_dict({"language": "parity", "model_kwargs": {"d": 8},
                              "eval_kinds": ["balanced"]}, "config.json", saved=True)
    assert saved.model_options.d == 8 and saved.eval_kinds == ("paper",)


def test_a_saved_config_takes_defaults_for_what_it_lacks_never_todays_recipe():
    """A transformation tree run saved before ``state_factor`` existed (its recipe
    'languages' then meant n = the minimal count) loads with n = the minimal count, though the
    recipe now doubles it; the same keys written by a user get the recipe's value."""
    old = {"language": "dyck-2", "model": "transform-tree", "recipe": "languages",
           "model_options": {"states": 0, "temperature": 1.0, "init_scale": 1.0,
                             "start": "fixed"}}
    assert config_from_dict(old, "config.json", saved=True).model_options.state_factor == 1
    assert config_from_dict(old, "mine.toml").model_options.state_factor == 2
    # a saved config keeps every value it has, recipe or not
    saved = config_from_dict({**old, "lr": 0.5, "steps": 7}, "config.json", saved=True)
    assert (saved.lr, saved.steps) == (0.5, 7)
