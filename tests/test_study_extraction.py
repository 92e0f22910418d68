"""monoidlab.studies.extraction (the study that was bench/bench_extraction.py, run as ``monoidlab
study extraction``): the models trained once (reused while their config holds) and extracted,
or every finished run folder under ``--runs``; one ledger row each; the table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import monoidlab.studies.extraction as mod
from monoidlab.errors import ConfigError
from monoidlab.studies.ledger import read_ledger
from monoidlab.studies.runner import read_config, run_study, study_sections

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ROOT = Path(__file__).resolve().parent.parent
TINY = dict(language="parity", steps=30, batch_size=16, train_lengths="1:8",
            test_lengths="9:12", test_samples=4, checkpoint_every=30, log_every=10,
            model_options={"d": 8, "dropout": 0.0, "padding": "identity"})


def _config(tmp_path: Path, extra: str = "") -> Path:
    (tmp_path / "configs").mkdir(exist_ok=True)
    path = tmp_path / "configs" / "extraction.toml"
    path.write_text('[study]\nledger = "docs/data/extraction.jsonl"\nout = "runs/extraction"\n'
                    "max_states = 2\n" + extra)
    return path


def test_the_models_are_trained_once_extracted_and_tabulated(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(mod, "MODELS", {"parity (tiny)": TINY})
    config = read_config(mod.STUDY, _config(tmp_path))
    run_study(mod.STUDY, config, echo=None)
    assert "  trained parity (tiny) in " in capsys.readouterr().out
    row = read_ledger(tmp_path / "docs" / "data" / "extraction.jsonl")["parity-tiny"]
    assert row["name"] == "parity (tiny)" and row["automaton"]["n_states"] <= 2 * 2  # the budget, doubled at most
    assert row["automaton_s"] >= 0 and row["monoid"]["true_size"] == 2
    folder, solved = mod.trained("parity (tiny)", TINY, config.out)  # reused: same config
    assert solved == row["solved"] and "trained" not in capsys.readouterr().out
    text = study_sections(mod.STUDY, config)["extraction"]
    assert text.startswith(mod.HEADER) and "\n| parity (tiny) | " in text
    assert "\nstrictly solved: " in text
    if not row["solved"]:
        assert "\nunsolved: parity (tiny)\n" in text


def test_every_finished_run_folder_under_runs(tmp_path, tiny_ldru_run):
    config = read_config(mod.STUDY, _config(tmp_path))
    plan = mod.STUDY.plan(config, {}, runs=str(tiny_ldru_run.parent))
    assert [r["id"] for r in plan] == ["parity__mlp-ldru__s0"]
    solved = json.loads((tiny_ldru_run / "results.json").read_text())["solved"]
    only = read_config(mod.STUDY, _config(tmp_path, "solved_only = true\n"))
    if not solved:
        with pytest.raises(ConfigError, match="no finished run folder"):
            mod.STUDY.plan(only, {}, runs=str(tiny_ldru_run.parent))
    also = read_config(mod.STUDY, _config(
        tmp_path, 'solved_only = true\nalso = ["parity__mlp-ldru__s0"]\n'))
    assert len(mod.STUDY.plan(also, {}, runs=str(tiny_ldru_run.parent))) == 1
    row = mod.run_one(plan[0], config)
    assert row["solved"] == solved and row["automaton"]["comparison"]["true_states"] == 2


def test_the_study_config_and_a_bad_one(tmp_path):
    config = read_config(mod.STUDY, ROOT / "configs" / "extraction.toml")
    assert [r["name"] for r in mod.STUDY.plan(config, {})] == list(mod.MODELS)
    with pytest.raises(ConfigError, match="no model extracted yet"):
        mod.STUDY.sections(config, {})
    bad = tmp_path / "bad.toml"
    bad.write_text("[study]\nout = 'x'\n")
    with pytest.raises(ConfigError, match="needs \\[study\\] max_states"):
        read_config(mod.STUDY, bad)
