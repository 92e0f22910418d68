"""monoidlab.studies.offsets (the study that was bench/bench_offsets.py, run as ``monoidlab study
offsets``): the support table computed from the languages (checked against the committed
sections), the conditions, a tiny study run end to end, and the section's text."""

from __future__ import annotations

from pathlib import Path

import pytest

import monoidlab.studies.offsets as mod
from monoidlab.errors import ConfigError
from monoidlab.evaluation.kinds import KINDS
from monoidlab.studies.ledger import read_ledger
from monoidlab.studies.runner import read_config, run_study, study_sections

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ROOT = Path(__file__).resolve().parent.parent
SECTIONS = {"offsets 1000 steps": "offsets-1000.toml", "offsets 3000 steps": "offsets-3000.toml"}


def _committed(name: str) -> str:
    doc = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    return doc.split(f"<!-- begin {name} -->\n")[1].split(f"\n<!-- end {name} -->")[0]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


@pytest.mark.parametrize("name", ["parity", "dyck-2", "dyck-6", "tomita-3"])
def test_the_committed_support_rows_regenerate_from_the_languages(name):
    """The support part is the repository's own data: recomputed, it is the committed row of
    both sections (all 21 rows take ~35 s; these four stand for them)."""
    r = mod.support_row(name)
    line = (f"| {r['name']} | {r['needed']} | {r['support_length']} | "
            f"{r['support_length_offsets']} |")
    for section in SECTIONS:
        assert line in _committed(section).splitlines(), (section, line)


@pytest.mark.parametrize("section", list(SECTIONS))
def test_the_section_is_written_as_the_committed_one(section):
    """The committed tables, read back (for this check only: the training runs' folders are
    gone and the study's ledgers start empty), come out of the study's section text unchanged;
    only the closing line says how the wall time was taken (the runs' own times, summed)."""
    body = _committed(section)
    config = read_config(mod.STUDY, ROOT / "configs" / SECTIONS[section])
    assert config.data["study"]["section"] == section
    lines = body.splitlines()
    support = {"table": [], "seconds": float(next(
        ln for ln in lines if ln.startswith("(table computed in")).split()[3])}
    rows = []
    for ln in lines:
        c = _cells(ln)
        if ln.startswith("| ") and len(c) == 4 and c[0] != "language":
            support["table"].append({"name": c[0], "needed": int(c[1]),
                                     "support_length": int(c[2]),
                                     "support_length_offsets": int(c[3])})
        elif ln.startswith("| ") and len(c) == 9 and c[0] != "language":
            rows.append({"language": c[0], "condition": c[1], "seed": int(c[2]),
                         "solved": c[3] == "**yes**", "min_paper": float(c[4]),
                         "min_near_miss": float(c[5]), "min_ec_stratified": float(c[6]),
                         "paper_score": float(c[7]), "wall_s": float(c[8])})
    assert len(support["table"]) == 21 and rows
    study = config.data["study"]
    ordered = sorted(rows, key=lambda r: mod._order(config, r))
    assert ordered == rows  # the plan's order: languages, conditions, seeds
    made = mod.section(support, rows, config.data["train"], study["seeds"],
                       mod.command_line("offsets", config, "offsets-1000.toml"))
    keep = [ln for ln in body.splitlines() if not ln.startswith("(training wall time")]
    made_lines = made.splitlines()
    assert made_lines[-1].startswith("(training wall time ") and made_lines[-1].endswith(
        "s, the runs' own times summed, on `auto`)")
    assert [ln for ln in made_lines if not ln.startswith("(training wall time")] == keep


def test_conditions_and_a_tiny_study_end_to_end(tmp_path, monkeypatch):
    assert [c[1:] for c in mod.conditions(44)] == [(40, "none"), (40, "random"), (44, "none")]
    assert len(mod.conditions(12)) == len(mod.conditions(None)) == 2
    # the support row over two languages, not the whole suite (the test's budget)
    monkeypatch.setattr(mod, "support_table", lambda test="41:500", languages=None: [
        mod.support_row(n, test) for n in (languages or ["parity", "dyck-2"])])
    (tmp_path / "configs").mkdir()
    path = tmp_path / "configs" / "offsets.toml"
    path.write_text('[study]\nledger = "docs/data/offsets.jsonl"\nout = "runs/offsets"\n'
                    'section = "offsets tiny"\nlanguages = ["dyck-2"]\nseeds = [0]\n'
                    '[train]\nsteps = 10\nbatch_size = 8\nlr = 1e-3\nd = 8\ndropout = 0.0\n'
                    'test_lengths = "14:16"\ntest_samples = 4\ndevice = "cpu"\n')
    config = read_config(mod.STUDY, path)
    plan = mod.STUDY.plan(config, {})
    assert [r["id"] for r in plan] == ["_support", "dyck-2__L40__s0", "dyck-2__off__s0"]
    run_study(mod.STUDY, config, echo=None)
    ledger = read_ledger(tmp_path / "docs" / "data" / "offsets.jsonl")
    assert sorted(ledger) == ["_support", "dyck-2__L40__s0", "dyck-2__off__s0"]
    assert [r["name"] for r in ledger["_support"]["table"]] == ["parity", "dyck-2"]
    row = ledger["dyck-2__off__s0"]
    assert row["condition"] == "L<=40, random offsets" and row["predicted"] == \
        ledger["_support"]["table"][1]["support_length"]
    assert set(row["acc_500"]) == set(KINDS)
    assert (tmp_path / "runs" / "offsets" / "dyck-2__off__s0" / "results.json").is_file()
    text = study_sections(mod.STUDY, config)["offsets tiny"]
    assert "| dyck-2 | L<=40, offset 0 | 0 | " in text and "test lengths 14..16 need" in text
    assert "`monoidlab study offsets --config configs/offsets.toml --write-docs`" in text
    said: list[str] = []
    run_study(mod.STUDY, config, echo=said.append)  # the plan reads its support row back
    assert said[0] == "0 runs to do (3 in the ledger)"


def test_a_config_without_its_keys_is_named(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[study]\nledger = "l.jsonl"\n[train]\nsteps = 1\n')
    with pytest.raises(ConfigError, match="offsets study is missing languages, seeds, out"):
        read_config(mod.STUDY, path)
    config = read_config(mod.STUDY, ROOT / "configs" / "offsets-1000.toml")
    with pytest.raises(ConfigError, match="no support table yet"):
        mod.STUDY.sections(config, {})
