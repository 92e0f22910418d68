"""monoidlab.studies.refine (the study that was bench/bench_refine.py, run as ``monoidlab study
refine``): finished runs found under the roots, refined with the config's settings, one appended
ledger line each, never refined again; the committed table regenerated from its ledger."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

import monoidlab.studies.refine as mod
from monoidlab.errors import ConfigError
from monoidlab.studies.ledger import read_ledger
from monoidlab.studies.runner import read_config, run_study, study_sections

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ROOT = Path(__file__).resolve().parent.parent


def _committed(name: str) -> str:
    doc = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    m = re.search(re.escape(f"<!-- begin {name} -->") + r"\n(.*?)\n"
                  + re.escape(f"<!-- end {name} -->"), doc, re.S)
    assert m, f"docs/results.md has no section {name!r}"
    return m.group(1)


def test_the_committed_refinement_table_regenerates_from_its_ledger():
    config = read_config(mod.STUDY, ROOT / "configs" / "refine-exact21.toml")
    assert config.ledger == ROOT / "docs" / "data" / "refine-exact21.jsonl"
    made = study_sections(mod.STUDY, config)
    assert list(made) == ["refinement"]
    assert made["refinement"].rstrip() == _committed("refinement"), (
        "docs/results.md section 'refinement' is not what its ledger gives: run "
        "`monoidlab study refine --write-docs`")


def test_a_changed_refinement_row_changes_the_table(tmp_path):
    """The comparison above can fail: one row's refinement time changed, the table moves."""
    config = read_config(mod.STUDY, ROOT / "configs" / "refine-exact21.toml")
    lines = config.ledger.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[0])
    changed = tmp_path / "refine.jsonl"
    changed.write_text("\n".join(lines) + "\n" + json.dumps({**row, "refine_s": 9999.0}) + "\n")
    text = study_sections(mod.STUDY, replace(config, ledger=changed))["refinement"]
    assert text.rstrip() != _committed("refinement") and "| 9999 |" in text


def test_a_refuted_run_is_refined_once_recorded_and_tabulated(tmp_path, capsys):
    """A tiny snapped parity run (wrong after 100 steps) under a root folder: the study finds
    it, refines it into a proof, checks the proof on the run's strict test, appends its row;
    a task with no run folder is named and left out; run again, nothing is refined."""
    from monoidlab.training import RunConfig, train

    cfg = RunConfig(language="parity", model="mlp-ldru-snap", steps=100, batch_size=32,
                    train_lengths="1:16", test_lengths="17:24", test_samples=8,
                    model_options={"d": 16}, seed=2)
    roots = tmp_path / "elsewhere"
    result = train(cfg, roots / "runs" / "snap" / "parity__mlp-ldru-snap__s0", progress=False)
    (tmp_path / "configs").mkdir()
    study = tmp_path / "configs" / "refine.toml"
    study.write_text('[study]\nledger = "docs/data/refine.jsonl"\n'
                     "[refine]\nrounds = 6\nsteps = 100\nshare = 0.25\n"
                     "variants = { certificate = 0 }\n"
                     '[sources]\nsnap = "runs/snap"\n'
                     '[tasks]\nnames = ["parity", "dyck-2"]\n')
    config = read_config(mod.STUDY, study)
    run_study(mod.STUDY, config, echo=None, roots="elsewhere")
    assert "dyck-2__snap__certificate: no finished run under" in capsys.readouterr().err
    ledger = read_ledger(tmp_path / "docs" / "data" / "refine.jsonl")
    assert list(ledger) == ["parity__snap__certificate"]
    row = ledger["parity__snap__certificate"]
    assert row["train_s"] == result["train_seconds"] and row["solved_before"] == result["solved"]
    assert row["refinement"]["kept"] == "refined" and row["solved_after"]
    said: list[str] = []
    run_study(mod.STUDY, config, echo=said.append, roots="elsewhere")
    assert said[0] == "0 runs to do (1 in the ledger)"
    text = study_sections(mod.STUDY, config)["refinement"]
    assert "| parity | snap | certificate |" in text and "| **proved** | solved |" in text
    assert "Tasks proved by a refinement within 15 minutes: 1 (parity), of 1 refined." in text


def test_a_refinement_config_without_its_tables_is_named(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[refine]\nrounds = 8\n")
    with pytest.raises(ConfigError, match=r"bad.toml: a refinement study needs the tables"):
        read_config(mod.STUDY, bad)
