"""monoidlab.studies.strict_evaluation (the study that was bench/bench_strict_evaluation.py, run
as ``monoidlab study strict-evaluation``): each run trained once, evaluated strictly, one ledger
row each, the table in the committed section's form."""

from __future__ import annotations

from pathlib import Path

import pytest

import monoidlab.studies.strict_evaluation as mod
from monoidlab.errors import ConfigError
from monoidlab.evaluation.kinds import KINDS
from monoidlab.studies.ledger import read_ledger
from monoidlab.studies.runner import read_config, run_study, study_sections

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ROOT = Path(__file__).resolve().parent.parent
TINY = dict(language="parity", model="mlp-ldru", steps=20, batch_size=16, lr=1e-3,
            model_options={"d": 8, "dropout": 0.0}, train_lengths="1:8", test_lengths="9:12",
            test_samples=4, checkpoint_every=10, log_every=10, seed=0, threads=1)


def _committed(name: str) -> str:
    doc = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    return doc.split(f"<!-- begin {name} -->\n")[1].split(f"\n<!-- end {name} -->")[0]


def test_runs_train_once_evaluate_strictly_and_tabulate(tmp_path, monkeypatch, capsys):
    tiny = [("demo (600 steps, balanced sampler)", {**TINY, "sampler": "balanced"}, "before"),
            ("dyck-4, 3000 steps, near_miss sampler", {**TINY, "sampler": "near_miss"}, "new")]
    monkeypatch.setattr(mod, "runs", lambda: tiny)
    (tmp_path / "configs").mkdir()
    path = tmp_path / "configs" / "strict.toml"
    path.write_text('[study]\nledger = "docs/data/strict.jsonl"\nout = "runs/strict"\n'
                    "samples = 4\n")
    config = read_config(mod.STUDY, path)
    run_study(mod.STUDY, config, echo=None)
    out = capsys.readouterr().out
    assert "=== demo (600 steps, balanced sampler) (train " in out
    assert f"$ monoidlab evaluate {tmp_path / 'runs' / 'strict' / 'demo' / 'balanced'}" in out
    ledger = read_ledger(tmp_path / "docs" / "data" / "strict.jsonl")
    assert sorted(ledger) == ["demo__balanced", "dyck-4__near_miss"]
    row = ledger["dyck-4__near_miss"]
    assert set(row["summary"]) == set(KINDS)
    assert 0 <= row["summary"]["near_miss"]["min"] <= row["summary"]["near_miss"]["mean"] <= 1
    assert (tmp_path / "runs" / "strict" / "dyck-4" / "near_miss" / "checkpoint.pt").is_file()
    text = study_sections(mod.STUDY, config)["strict evaluation"]
    lines = text.splitlines()
    assert lines[0] == "## Strict evaluation of earlier figures (issue 13)"
    assert lines[-2].startswith("| demo (600 steps, balanced sampler) | before | ")
    assert lines[-1].startswith("| dyck-4, 3000 steps, near_miss sampler | new | ")
    assert "Produced by `monoidlab study strict-evaluation --config configs/strict.toml " \
        "--write-docs`." in text
    said: list[str] = []
    run_study(mod.STUDY, config, echo=said.append)  # recorded: nothing trained again
    assert said[0] == "0 runs to do (2 in the ledger)"


def test_the_section_is_written_as_the_committed_one():
    """The committed table, read back into rows (for this check only: its run folders are gone
    and the study's ledger starts empty), comes out of the study's table text unchanged."""
    body = _committed("strict evaluation")
    rows = []
    for line in body.splitlines()[6:]:
        label, before, verdict, bal, nm, ec, maj, co, score = \
            [c.strip() for c in line.strip("|").split("|")]

        def mm(text):
            lo, hi = text.split(" / ")
            return {"min": float(lo), "mean": float(hi)}

        co_nm, co_ec = co.split(" / ")
        rows.append({"label": label, "before": before, "solved": verdict == "**solved**",
                     "paper_score": float(score),
                     "summary": {"paper": mm(bal),
                                 "near_miss": {**mm(nm), "majority": float(maj),
                                               "count_only": float(co_nm)},
                                 "ec_stratified": {**mm(ec), "count_only": float(co_ec)}}})
    assert [r["label"] for r in rows] == [label for label, _, _ in mod.runs()]
    assert [r["before"] for r in rows] == [before for _, _, before in mod.runs()]
    made = mod.table(rows, "`monoidlab study strict-evaluation --write-docs`")
    assert made.rstrip("\n") == body


def test_a_config_without_samples_is_named(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("[study]\nout = 'runs/x'\n")
    with pytest.raises(ConfigError, match="needs \\[study\\] samples"):
        read_config(mod.STUDY, path)
    config = read_config(mod.STUDY, ROOT / "configs" / "strict-evaluation.toml")
    assert config.data["study"]["samples"] == 64
    with pytest.raises(ConfigError, match="no run evaluated yet"):
        mod.STUDY.sections(config, {})
