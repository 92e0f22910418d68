"""monoidlab.studies.probing (the study that was bench/bench_probing.py, run as ``monoidlab study
probing``): a model trained once, probed against its initialisation per held-out mode, one
ledger row each, the tables."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import monoidlab.studies.probing as mod
from monoidlab.errors import ConfigError
from monoidlab.studies.ledger import read_ledger
from monoidlab.studies.runner import read_config, run_study, study_sections

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ROOT = Path(__file__).resolve().parent.parent


def test_a_tiny_model_probed_both_ways(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(mod, "RUNS", {("parity", "mlp-ldru"): (
        30, {"d": 8}, {"train_lengths": "1:8", "test_lengths": "9:12"})})
    (tmp_path / "configs").mkdir()
    path = tmp_path / "configs" / "probing.toml"
    path.write_text('[study]\nledger = "docs/data/probing.jsonl"\nout = "runs/probing"\n'
                    'languages = ["parity"]\nmodels = ["mlp-ldru"]\nheldout = "lengths"\n'
                    "n_strings = 20\nn_triples = 10\ntest_samples = 4\n")
    config = read_config(mod.STUDY, path)
    run_study(mod.STUDY, config, echo=None)
    out = capsys.readouterr().out
    assert out.startswith("== mlp-ldru on parity: 30 steps, score ") and ", trained in " in out
    run_study(mod.STUDY, config, echo=None, heldout="disjoint")  # the same model, reused
    assert " [reused]; probed in " in capsys.readouterr().out
    ledger = read_ledger(tmp_path / "docs" / "data" / "probing.jsonl")
    assert sorted(ledger) == ["parity__mlp-ldru__disjoint", "parity__mlp-ldru__lengths"]
    row = ledger["parity__mlp-ldru__lengths"]
    assert set(row["trained"]) == set(row["init"]) and "kmeans_ari" in row["trained"]
    assert 0 <= row["trained"]["probe_acc"] <= 1 and not math.isnan(row["init"]["probe_acc"])
    text = study_sections(mod.STUDY, config)["probing"]
    parts = text.strip("`\n").split("\n\n")
    assert len(parts) == 2 and all(p.startswith("== mlp-ldru on parity") for p in parts)
    assert (tmp_path / "runs" / "probing" / "parity-mlp-ldru" / "results.json").is_file()


def test_choices_outside_the_runs_and_bad_configs_are_named(tmp_path):
    config = read_config(mod.STUDY, ROOT / "configs" / "probing.toml")
    assert [r["id"] for r in mod.STUDY.plan(config, {})] == [
        "parity__mlp-ldru__lengths", "cycle-navigation__mlp-ldru__lengths"]
    assert len(mod.STUDY.plan(config, {}, models="mlp-ldru,pr-lstm", heldout="disjoint")) == 4
    with pytest.raises(ConfigError, match="no probing run for dyck-2/mlp-ldru"):
        mod.STUDY.plan(config, {}, languages="dyck-2")
    with pytest.raises(ConfigError, match="--heldout: one of lengths, disjoint"):
        mod.STUDY.plan(config, {}, heldout="content")
    bad = tmp_path / "bad.toml"
    bad.write_text("[study]\nlanguages = []\n")
    with pytest.raises(ConfigError, match="probing study is missing models, heldout"):
        read_config(mod.STUDY, bad)
