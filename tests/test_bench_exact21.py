"""bench/bench_exact21.py: the depth-exact models' 21-task table, its ledger and its resume."""

from __future__ import annotations

import json
import os

import pytest

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


@pytest.fixture
def mod(bench_script, tmp_path, monkeypatch):
    m = bench_script("bench_exact21")
    monkeypatch.setattr(m, "LEDGER", tmp_path / "exact21.jsonl")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny.toml").write_text(SWEEP)
    return m


def test_trains_records_and_never_trains_a_recorded_run_again(mod, tmp_path):
    mod.train_pending(str(tmp_path / "tiny.toml"))
    ledger = mod.read_ledger(mod.LEDGER)
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
    mod.train_pending(str(tmp_path / "tiny.toml"))
    assert not any((tmp_path / "runs" / "tiny" / r.split(":")[1] / "results.json").exists()
                   for r in ledger)
    rows = mod.collect([str(tmp_path / "tiny.toml")])
    assert [r["id"] for r in rows] == sorted(ledger)  # from the ledger alone
    text = mod.table(rows, {"parity": True})
    assert "| parity | transform-tree |" in text and "certified correct at every length" in \
        text.lower().replace("**", "")


def test_a_certificate_is_computed_once_and_cached(mod, tmp_path):
    mod.train_pending(str(tmp_path / "tiny.toml"))
    run = tmp_path / "runs" / "tiny" / "parity__transform-tree__s0"
    cached = json.loads((run / "certificate.json").read_text())
    cached["verdict"] = "planted"
    (run / "certificate.json").write_text(json.dumps(cached))
    assert mod.certificate_of(run)["verdict"] == "planted"


def test_ledger_keys_and_labels(mod, function_doctests):
    assert function_doctests(mod, mod.ledger_id) == (0, 2)
    assert mod.label_of({"model": "transform-tree", "model_options": {"state_factor": 1}}) == \
        "transform-tree"
