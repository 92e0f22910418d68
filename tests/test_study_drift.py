"""monoidlab.studies.drift (the study that was bench/bench_drift.py, run as ``monoidlab study
drift``): per-level drift of each EC's centroid."""

from __future__ import annotations

import doctest
from pathlib import Path

import numpy as np
import pytest
import torch

import monoidlab.studies.drift as mod
from monoidlab.errors import ConfigError
from monoidlab.studies.ledger import read_ledger
from monoidlab.studies.runner import read_config, run_study, study_sections

ROOT = Path(__file__).resolve().parent.parent


def test_the_docstring_examples():
    assert doctest.testmod(mod).failed == 0


def test_states_that_stay_put_do_not_drift_and_moved_ones_do():
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(3, 4)) * 5
    ec = np.repeat(np.arange(3), 40)
    level = np.tile(np.repeat([2, 4, 6], 40 // 3 + 1)[:40], 3)
    X = centres[ec] + rng.normal(scale=0.01, size=(len(ec), 4))
    still, gap = mod.drift_table(X, ec, level, 4, 5)
    assert all(med < 0.05 for med, _, _, _ in still.values())
    assert gap == pytest.approx(min(np.linalg.norm(centres[a] - centres[b])
                                    for a in range(3) for b in range(a)), rel=0.05)
    moved = X + (level[:, None] - 4) * np.array([0.5, 0, 0, 0])  # every EC shifts per level
    table, _ = mod.drift_table(moved, ec, level, 4, 5)
    assert table[6][0] == pytest.approx(1.0, abs=0.05) and table[2][0] == pytest.approx(1.0, abs=0.05)
    assert table[4][0] == 0.0
    with pytest.raises(ConfigError, match="fewer than two ECs with 500 full nodes at level 4"):
        mod.drift_table(X, ec, level, 4, 500)


def test_a_run_folder(tiny_ldru_run):
    table, gap = mod.run_drift(tiny_ldru_run, 3, 4, 5)
    assert table[3][:2] == (0.0, 0.0) and gap > 0 and max(table) >= 7
    assert all(med > 0 for k, (med, _, _, _) in table.items() if k != 3)


def test_the_study_records_prints_and_predicts(tiny_ldru_run, tmp_path, capsys):
    (tmp_path / "configs").mkdir()
    path = tmp_path / "configs" / "drift.toml"
    path.write_text(f'[study]\nledger = "docs/data/drift.jsonl"\n'
                    f'runs = ["{tiny_ldru_run.as_posix()}"]\n'
                    "[drift]\nref_level = 3\nstrings = 4\nmin_nodes = 5\n")
    config = read_config(mod.STUDY, path)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)  # not the study's 1, so that a thread count left behind shows
    try:
        run_study(mod.STUDY, config, echo=None)
        assert torch.is_grad_enabled() and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    assert f"{tiny_ldru_run.as_posix()} (parity): smallest gap between EC centroids at level 3" \
        in out and "  level  drift median / max  spread  ECs" in out
    row = read_ledger(tmp_path / "docs" / "data" / "drift.jsonl")[tiny_ldru_run.as_posix()]
    table, gap = mod.run_drift(tiny_ldru_run, 3, 4, 5)
    assert row["gap"] == pytest.approx(gap) and [r[0] for r in row["levels"]] == list(table)
    assert mod.report(row) in study_sections(mod.STUDY, config)["drift"]
    text = mod.STUDY.actions["predict"](config)
    assert text.startswith(f"{tiny_ldru_run.as_posix()}:\n")
    assert "error rate by depth (results.json, every kind): 4: " in text
    assert "predicted failure level" in text


def test_the_study_config_reads():
    config = read_config(mod.STUDY, ROOT / "configs" / "drift.toml")
    assert config.data["drift"] == {"ref_level": 4, "strings": 16, "min_nodes": 20}
    assert len(config.data["study"]["runs"]) == 3
