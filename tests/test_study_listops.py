"""monoidlab.studies.listops (the study that was bench/bench_listops.py, run as ``monoidlab study
listops``): the fixed cells, the baselines, the ledger, the resume and the table; the committed
table regenerated from its ledger."""

from __future__ import annotations

import re
import tomllib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import monoidlab.studies.listops as mod
from monoidlab.errors import ConfigError
from monoidlab.studies.ledger import read_ledger, write_ledger
from monoidlab.studies.runner import read_config, run_study, study_sections

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ROOT = Path(__file__).resolve().parent.parent


def _committed(name: str) -> str:
    doc = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    m = re.search(re.escape(f"<!-- begin {name} -->") + r"\n(.*?)\n"
                  + re.escape(f"<!-- end {name} -->"), doc, re.S)
    assert m, f"docs/results.md has no section {name!r}"
    return m.group(1)


def _tiny_listops_config(tmp_path: Path) -> Path:
    text = (ROOT / "configs" / "listops-table.toml").read_text()
    for a, b in (("steps = 3000", "steps = 3"), ("per_length = 16", "per_length = 3"),
                 ("baseline_strings = 20000", "baseline_strings = 300"),
                 ('ledger = "docs/data/listops-table.jsonl"',
                  f'ledger = "{(tmp_path / "ledger.jsonl").as_posix()}"'),
                 ('out = "runs/listops-table"', f'out = "{(tmp_path / "runs").as_posix()}"')):
        assert a in text, a
        text = text.replace(a, b)
    path = tmp_path / "listops.toml"
    path.write_text(text)
    return path


def test_listops_table_scores_fixed_cells_resumes_and_tabulates(tmp_path):
    from monoidlab.tasks import ListOps, listops_depth

    cfg = _tiny_listops_config(tmp_path)
    table = tomllib.loads(cfg.read_text())["table"]
    cells = mod.cells_of(table)
    again = mod.cells_of(table)  # the same strings every time (every model sees them)
    assert [c["name"] for c in cells] == [c["name"] for c in again]
    for c, d in zip(cells, again):
        lo, hi = c["depth"]
        for b, b2 in zip(c["batches"], d["batches"]):
            assert np.array_equal(b.inputs, b2.inputs)
            n = b.inputs.shape[1]
            assert c["bucket"][0] <= n <= c["bucket"][1]
            assert all(lo <= listops_depth(row) <= hi for row in b.inputs)
    # depth <= 3 with <= 5 arguments cannot reach 201 tokens: those cells are left out
    assert "L 201-300, depth 1-3" not in [c["name"] for c in cells]
    assert not ListOps(min_depth=1, max_depth=3).feasible_depths(201)
    counts = mod.token_counts(np.array([[0, 1, 1], [2, 2, 2]]), 4)
    assert counts.tolist() == [[1, 2, 0, 0], [0, 0, 3, 0]]
    config = read_config(mod.STUDY, cfg)
    run_study(mod.STUDY, config, echo=None, only="lstm,rir-grc")
    ledger = read_ledger(tmp_path / "ledger.jsonl")
    assert sorted(ledger) == ["_baselines", "lstm", "rir-grc"]
    for name in ("lstm", "rir-grc"):
        assert set(ledger[name]["accuracy"]) == {c["name"] for c in cells}
        assert all(0 <= v <= 1 for v in ledger[name]["accuracy"].values())
    for c in cells:  # the best constant on a cell's own strings
        labels = np.concatenate([b.targets[:, 0] for b in c["batches"]])
        assert ledger["_baselines"]["cells"][c["name"]]["constant"] == pytest.approx(
            np.bincount(labels).max() / len(labels))
    before = (tmp_path / "runs" / "lstm" / "results.json").stat().st_mtime_ns
    said: list[str] = []
    run_study(mod.STUDY, config, echo=said.append, only="lstm")  # in the ledger: skipped
    assert said[0] == "0 runs to do (3 in the ledger)"
    assert (tmp_path / "runs" / "lstm" / "results.json").stat().st_mtime_ns == before
    out = study_sections(mod.STUDY, config)["listops table"]
    assert "| lstm |" in out and "| rir-grc |" in out and "best constant" in out
    assert "| mlp-ldru |" not in out  # not trained: no row
    with pytest.raises(ConfigError, match=r"unknown model entries \['no-such-model'\]"):
        run_study(mod.STUDY, config, echo=None, only="no-such-model")


def test_the_committed_listops_table_regenerates_from_its_ledger():
    config = read_config(mod.STUDY, ROOT / "configs" / "listops-table.toml")
    assert config.ledger == ROOT / "docs" / "data" / "listops-table.jsonl"
    made = study_sections(mod.STUDY, config)
    assert list(made) == ["listops table"]
    assert made["listops table"].rstrip() == _committed("listops table"), (
        "docs/results.md section 'listops table' is not what its ledger gives: run "
        "`monoidlab study listops --write-docs`")


def test_a_changed_listops_row_changes_the_table(tmp_path):
    """The comparison above can fail: one accuracy of the ledger changed, the table moves."""
    config = read_config(mod.STUDY, ROOT / "configs" / "listops-table.toml")
    rows = read_ledger(config.ledger)
    cell = "L 4-100, depth 1-3"
    flipped = tmp_path / "listops.jsonl"
    write_ledger(flipped, {**rows, "lstm": {**rows["lstm"], "accuracy": {
        **rows["lstm"]["accuracy"], cell: 0.999}}})
    text = study_sections(mod.STUDY, replace(config, ledger=flipped))["listops table"]
    assert text.rstrip() != _committed("listops table") and "| lstm | 0.999 |" in text


def test_a_listops_config_without_its_tables_is_named(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[table]\nledger = 'x.jsonl'\n[base]\n[models]\n")
    with pytest.raises(ConfigError, match=r"bad.toml: \[table\] is missing out, seed"):
        read_config(mod.STUDY, bad)
