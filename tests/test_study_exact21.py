"""monoidlab.studies.exact21 (the study that was bench/bench_exact21.py, run as ``monoidlab study
exact21``): the depth-exact models' 21-task table, its ledger and its resume."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest

import monoidlab.studies.exact21 as mod
from monoidlab.studies import get_study, read_config, run_study, study_sections
from monoidlab.studies.ledger import read_ledger

SWEEP = """
[sweep]
languages = ["parity", "tomita-4"]
models = ["transform-tree"]
seeds = [0]
out = "runs/tiny"
[base]
steps = 60
batch_size = 16
lr = 0.05
sampler = "uniform"
test_lengths = "41:45"
test_samples = 8
threads = 1
"""

#: the study's config beside its sweep file: the study's repository is their folder
STUDY = """
[study]
sweeps = ["tiny.toml"]
ledger = "exact21.jsonl"
"""


@pytest.fixture
def config(tmp_path, monkeypatch):
    """The tiny study's config; run from another folder (its paths are the config folder's)."""
    (tmp_path / "tiny.toml").write_text(SWEEP)
    (tmp_path / "exact21.toml").write_text(STUDY)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    config = read_config(get_study("exact21"), tmp_path / "exact21.toml")
    assert config.root == tmp_path and config.ledger == tmp_path / "exact21.jsonl"
    return config


def test_trains_records_and_never_trains_a_recorded_run_again(config, tmp_path, monkeypatch):
    study = get_study("exact21")
    run_study(study, config, echo=None)
    ledger = read_ledger(config.ledger)
    # a config other than the first three keys its rows by its name (a second recipe of a
    # model never overwrites the first one's rows)
    assert sorted(ledger) == ["tiny:parity__transform-tree__s0",
                              "tiny:tomita-4__transform-tree__s0"]
    row = ledger["tiny:parity__transform-tree__s0"]
    # the certificate of each run, beside its strict verdict and its baselines
    assert isinstance(row["certified"], bool) and row["certificate"].startswith("certificate of")
    assert {s["kind"] for s in row["summary"]} >= {"paper", "near_miss"}
    # a later session: the run folders are gone, the ledger stays; nothing is trained again
    for run in (tmp_path / "runs" / "tiny").iterdir():
        for f in run.iterdir():
            if f.is_file():
                os.remove(f)
    untrained = dataclasses.replace(study, run=lambda *a, **k: pytest.fail("trained again"))
    assert run_study(untrained, config, echo=None) == ledger
    assert not any((tmp_path / "runs" / "tiny" / r.split(":")[1] / "results.json").exists()
                   for r in ledger)
    # the table, from the ledger alone, in the plan's order
    section = study_sections(study, config)["exact21"]
    lines = [x for x in section.splitlines() if x.startswith("| parity |")
             or x.startswith("| tomita-4 |")]
    assert [x.split(" | ")[0] for x in lines] == ["| parity", "| tomita-4"]
    rows = list(read_ledger(config.ledger).values())
    assert sorted(r["id"] for r in rows) == sorted(ledger)
    text = mod.table(rows, {"parity": True}, mod.GOAL, mod.BUDGET_S)
    assert "| parity | transform-tree |" in text and "certified correct at every length" in \
        text.lower().replace("**", "")


def test_a_certificate_is_computed_once_and_cached(config, tmp_path):
    run_study(get_study("exact21"), config, echo=None)
    run = tmp_path / "runs" / "tiny" / "parity__transform-tree__s0"
    cached = json.loads((run / "certificate.json").read_text())
    cached["verdict"] = "planted"
    (run / "certificate.json").write_text(json.dumps(cached))
    assert mod.certificate_of(run)["verdict"] == "planted"
    # cached before certificates took the run's sub-language (no "within"): computed again
    del cached["certificate"]["within"]
    (run / "certificate.json").write_text(json.dumps(cached))
    again = mod.certificate_of(run)
    assert again["verdict"] != "planted" and "within" in again["certificate"]


def test_the_table_says_which_tasks_are_certified_on_their_sub_language_only():
    """A row proved on its run's sub-language and refuted over every string counts as
    certified and is named; a row from before the field (over every string) counts as both."""
    def row(task, certified, every=None):
        r = {"task": task, "model": "transform-tree", "model_options": {}, "solved": True,
             "summary": [], "certified": certified, "certificate": "certificate of x (y): z",
             "train_seconds": 10.0}
        return r if every is None else r | {"certified_all_strings": every}

    text = mod.table([row("parity", True), row("modular-arithmetic", True, False),
                      row("dyck-6", False, False)], {}, 18, 900)
    assert "2 of 3 tasks with a finished run" in text
    assert "Of these, modular-arithmetic on the run's sub-language only" in text
    assert "over every string 1 of 3." in text
    assert "sub-language only" not in mod.table([row("parity", True)], {}, 18, 900)


def test_ledger_keys_and_labels(function_doctests):
    assert function_doctests(mod, mod.ledger_id) == (0, 2)
    assert function_doctests(mod, mod.label_of) == (0, 4)
    assert mod.label_of({"model": "transform-tree", "model_options": {"state_factor": 1}}) == \
        "transform-tree"


def test_a_row_keeps_the_run_s_curriculum_and_the_table_names_it(tmp_path):
    """A pass with a length curriculum is told apart from the same model without one."""
    import json as _json

    cert = {"certificate": {"within": None}, "correct": True, "verdict": "certificate of "
            "transform-tree (8 states): correct at every length (proved)", "seconds": 0.1}
    (tmp_path / "certificate.json").write_text(_json.dumps(cert))
    results = {"problem": "dyck-2", "solved": True, "steps": 4000, "train_seconds": 12.0,
               "evaluation": {"summary": []}}
    cfg = {"model": "transform-tree", "model_options": {"state_factor": 2}, "seed": 0,
           "train_lengths": "1:40", "curriculum_start": 8}
    with_it = mod.row_of("x:dyck-2__transform-tree__s0", tmp_path, results, cfg)
    without = mod.row_of("dyck-2__transform-tree__s0", tmp_path, results,
                         {**cfg, "curriculum_start": 0})
    assert with_it["curriculum_start"] == 8 and "curriculum_start" not in without
    assert mod.label_of(with_it) != mod.label_of(without)
    text = mod.table([with_it, without], {}, 18, 900)
    assert "| dyck-2 | transform-tree (n = 2 x minimal, length curriculum from 8) |" in text
