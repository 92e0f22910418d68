"""monoidlab.studies.fresh_test (the study that was bench/bench_fresh_test.py, run as
``monoidlab study fresh-test``): the same weights on fresh test sets.

Re-scoring a run on its own seed must give its results.json exactly (the reference); another
seed must give what evaluate_kinds gives on that seed; the study records a row per run, prints
its table from the ledger and restores the process's settings; bad input is one line naming it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import monoidlab.studies.fresh_test as mod
from monoidlab.errors import ConfigError
from monoidlab.studies.ledger import read_ledger
from monoidlab.studies.runner import read_config, run_study, study_sections
from monoidlab.training import evaluate_kinds, load_checkpoint

ROOT = Path(__file__).resolve().parent.parent


def _config(tmp_path: Path, runs: list[Path], seeds: str = "[5, 6]", extra: str = "") -> Path:
    (tmp_path / "configs").mkdir(exist_ok=True)
    path = tmp_path / "configs" / "fresh.toml"
    path.write_text('[study]\nledger = "docs/data/fresh.jsonl"\n'
                    f"runs = {json.dumps([r.as_posix() for r in runs])}\nseeds = {seeds}\n"
                    + extra)
    return path


def test_own_seed_reproduces_the_results_and_a_fresh_seed_is_evaluate_kinds(tiny_ldru_run):
    res = mod.fresh_scores(tiny_ldru_run, [0, 5])
    results = json.loads((tiny_ldru_run / "results.json").read_text())
    assert res[0] == res["own"]  # seed 0 is the run's own test set
    assert res["own"][2] == results["solved"]
    model, cfg, problem, _ = load_checkpoint(tiny_ldru_run)
    with torch.no_grad():
        ev = evaluate_kinds(model.eval(), problem, cfg.test_lengths, cfg.test_samples, 5,
                            cfg.eval_kinds, cfg.solved_threshold).as_dict()
    n = ev["n_per_length"]
    wrong = sum(round((1 - a) * n) for kind in ev["accuracy"].values() for a in kind.values())
    assert res[5][0] == wrong and res[5][1] == res["own"][1] and res[5][2] == ev["solved"]


def test_a_row_per_run_its_table_and_the_settings_restored(tiny_ldru_run, tmp_path):
    config = read_config(mod.STUDY, _config(tmp_path, [tiny_ldru_run.parent]))
    threads = torch.get_num_threads()
    torch.set_num_threads(2)  # not the study's 1, so that a thread count left behind shows
    try:
        run_study(mod.STUDY, config, echo=None)  # the folder above a run stands for its runs
        assert torch.is_grad_enabled() and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(threads)
    ledger = read_ledger(tmp_path / "docs" / "data" / "fresh.jsonl")
    assert list(ledger) == [tiny_ldru_run.as_posix()]  # outside the repository: its full path
    row = ledger[tiny_ldru_run.as_posix()]
    assert row["run"] == "parity" and set(row["fresh"]) == {"5", "6"}
    text = study_sections(mod.STUDY, config)["fresh test sets"]
    assert "| parity | " in text and "fresh set, seed 6" in text
    assert "1 runs: " in text and "on every fresh set (seeds 5,6" in text
    assert "`monoidlab study fresh-test --config " in text
    said: list[str] = []
    run_study(mod.STUDY, config, echo=said.append)
    assert said[0] == "0 runs to do (1 in the ledger)"


def test_solved_only_keeps_the_solved_runs(tiny_ldru_run, tmp_path):
    solved = json.loads((tiny_ldru_run / "results.json").read_text())["solved"]
    config = read_config(mod.STUDY, _config(tmp_path, [tiny_ldru_run.parent],
                                            extra="solved_only = true\n"))
    assert len(mod.STUDY.plan(config, {})) == (1 if solved else 0)


def test_bad_input_is_one_line(tmp_path, tiny_ldru_run):
    with pytest.raises(ConfigError, match="seeds, a list of integers"):
        read_config(mod.STUDY, _config(tmp_path, [tiny_ldru_run], seeds='["a", "b"]'))
    config = read_config(mod.STUDY, _config(tmp_path, [tmp_path / "none"]))
    with pytest.raises(ConfigError, match=r"no finished run folder .* in .*none"):
        mod.STUDY.plan(config, {})
    with pytest.raises(ConfigError, match="no run scored on the fresh sets"):
        study_sections(mod.STUDY, config)


def test_the_study_config_names_the_committed_section():
    config = read_config(mod.STUDY, ROOT / "configs" / "fresh-test.toml")
    assert config.ledger == ROOT / "docs" / "data" / "fresh-test.jsonl"
    assert config.data["study"]["section"] == "fresh test sets"
    doc = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    assert "`monoidlab study fresh-test --write-docs`" in doc.split(
        "<!-- begin fresh test sets -->")[1].split("<!-- end fresh test sets -->")[0]


def test_the_section_is_written_as_the_committed_one():
    """The committed table, read back into rows (for this check only: its run folders are gone
    and the study's ledger starts empty), comes out of the study's section text unchanged."""
    doc = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    body = doc.split("<!-- begin fresh test sets -->\n")[1].split(
        "\n<!-- end fresh test sets -->")[0]

    def cell(text):
        wrong, _, scored, verdict = text.split(" ", 3)
        return [int(wrong), int(scored), verdict == "(**solved**)"]

    rows = []
    for line in body.splitlines():
        if line.startswith("| ") and not line.startswith("| run "):
            name, own, *fresh = [c.strip() for c in line.strip("|").split("|")]
            rows.append({"run": name, "own": cell(own), "wall_s": 0.0,
                         "fresh": {s: cell(c) for s, c in zip(("1000", "1001"), fresh)}})
    rows[0]["wall_s"] = 1443.0
    assert len(rows) == 16
    made = mod.section(rows, [1000, 1001], "`monoidlab study fresh-test --write-docs`")
    assert made == body
