"""monoidlab.studies.blame (the study that was bench/bench_blame.py, run as ``monoidlab study
blame``) and the row of tools/bench_run_errors.py (``row_of``, in the blame module): the
pieces their figures rest on.

The blame recomputes a string's tree node by node with the model's own operator: its root must
be the model's root (both paddings), and a node replaced by its own state must change nothing.
The error count of a run folder (monoidlab.studies.runner.wrong_strings, which row_of uses) must
count the strings its results.json scored wrong.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import monoidlab as ml
import monoidlab.studies.blame as mod
from monoidlab.errors import ConfigError
from monoidlab.models.mlp_ldru import MLPLDRU
from monoidlab.studies.ledger import read_ledger
from monoidlab.studies.runner import read_config, run_study, study_sections, wrong_strings

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("padding", ["identity", "learned"])
def test_tree_states_root_is_the_model_root(padding):
    torch.manual_seed(0)
    model = MLPLDRU(2, 2, d=8, dropout=0.0, padding=padding).eval()
    rng = np.random.default_rng(0)
    with torch.no_grad():
        for L in (1, 2, 5, 8, 13, 33):
            tokens = rng.integers(0, 2, L)
            states, top = mod.tree_states(model, tokens)
            root = model.root_states(torch.as_tensor(tokens)[None], torch.tensor([L]))[0]
            torch.testing.assert_close(states[(top, 0)], root, atol=1e-5, rtol=1e-5)


def test_a_node_replaced_by_its_own_state_changes_nothing():
    torch.manual_seed(1)
    lang = ml.load_language("tomita-3")
    model = MLPLDRU(2, 2, d=8, dropout=0.0, padding="identity").eval()
    tokens = np.random.default_rng(1).integers(0, 2, 45)
    with torch.no_grad():
        states, _ = mod.tree_states(model, tokens)
        from monoidlab.coverage.compositions import node_labels

        lab = node_labels(lang.monoid(), tokens[None], np.array([45]))
        ec_of = {(int(s), int(e)): int(ec) for (s, e), ec in zip(lab.span, lab.node)}
        own = {}  # (EC, level) -> the state of the last such node
        for (k, j), v in states.items():
            span = (j << k, min((j + 1) << k, 45))
            if k and span in ec_of:
                own[(ec_of[span], k)] = v
        ranks = mod.blame(model, tokens, 1, own, lang.monoid())
    same = [r for r in ranks if torch.equal(own[(r[3], r[1])],
                                            states[(r[1], r[2][0] >> r[1])])]
    assert len(same) >= len(own) and len(ranks) > len(same)  # others get another node's state
    assert all(abs(r[0]) < 1e-5 for r in same)


def test_run_errors_counts_the_wrong_strings(tmp_path):
    acc = {"paper": {"41": 1.0, "42": 63 / 64}, "near_miss": {"41": 62 / 64, "42": 1.0}}
    results = {"evaluation": {"n_per_length": 64, "accuracy": acc}, "solved": False,
               "train_seconds": 12.5}
    run = tmp_path / "r"
    run.mkdir()
    (run / "results.json").write_text(json.dumps(results))
    (run / "metrics.jsonl").write_text(json.dumps({"step": 10, "val_min_accuracy": 0.5}) + "\n")
    assert wrong_strings(results) == (3, 256)
    row = mod.row_of(run)
    assert row["wrong"] == 3 and row["val_min"] == [0.5] and row["variant"] == ""


def test_blame_runs_on_a_trained_run_folder(tmp_path, capsys):
    """The study end to end on a run folder as `monoidlab train` writes it (the model built
    from the run's own saved config and weights): printed as it ends, one ledger row, the same
    report from the ledger, never blamed again."""
    from monoidlab.training import RunConfig, train

    cfg = RunConfig(language="tomita-3", steps=20, batch_size=8, train_lengths="1:8",
                    test_lengths="41:43", test_samples=4, device="cpu",
                    model_options={"d": 8, "padding": "identity"})
    train(cfg, tmp_path / "run", progress=False)
    (tmp_path / "configs").mkdir()
    path = tmp_path / "configs" / "blame.toml"
    path.write_text('[study]\nledger = "docs/data/blame.jsonl"\nruns = ["run"]\n'
                    "[blame]\nmargin = 50\nbatches = 3\ntop = 3\necs = 6\n")
    config = read_config(mod.STUDY, path)
    run_study(mod.STUDY, config, echo=None)
    assert torch.is_grad_enabled()  # the study leaves the test process as it found it
    out = capsys.readouterr().out
    assert out.startswith("tomita-3, ") and "largest gains:" in out
    assert "Share of the nodes of each tree level in an EC" in out
    row = read_ledger(tmp_path / "docs" / "data" / "blame.jsonl")["run"]
    assert row["margin"] == 50 and len(row["listed"]) == row["strings"]  # margin 50: all listed
    text = study_sections(mod.STUDY, config)["blame"]
    assert mod.report(row) in text and text.startswith("```\nrun (")
    said: list[str] = []
    run_study(mod.STUDY, config, echo=said.append)
    assert said[0] == "0 runs to do (1 in the ledger)"


def test_a_foreign_run_or_a_config_without_settings_is_named(tmp_path, tiny_ldru_run):
    (tmp_path / "configs").mkdir()
    path = tmp_path / "configs" / "blame.toml"
    path.write_text("[study]\nruns = []\n[blame]\nmargin = 1\n")
    with pytest.raises(ConfigError, match="needs \\[blame\\] with margin, batches, top, ecs"):
        read_config(mod.STUDY, path)
    path.write_text(f'[study]\nruns = ["{tiny_ldru_run.as_posix()}"]\n'
                    "[blame]\nmargin = 1\nbatches = 1\ntop = 1\necs = 1\n")
    assert read_config(mod.STUDY, path).ledger == tmp_path / "docs" / "data" / "blame.jsonl"
    cfg = json.loads((tiny_ldru_run / "config.json").read_text())
    assert cfg["model"] == "mlp-ldru"  # accepted; a run of another model is refused
    run = tmp_path / "lstm"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({**cfg, "model": "lstm", "model_options": {}}))
    with pytest.raises(ConfigError, match="blame needs an mlp-ldru run on a language"):
        mod.blame_run(run)


def test_the_study_config_reads():
    config = read_config(mod.STUDY, ROOT / "configs" / "blame.toml")
    assert config.data["blame"]["margin"] == 1.0 and config.data["blame"]["batches"] == 400
