"""monoidlab.studies.ldru21 and ldru21_choices (the studies that were bench/bench_ldru21.py and
bench/bench_ldru21_choices.py, run as ``monoidlab study ldru21 --config SWEEP`` and ``monoidlab
study ldru21-choices``): a sweep's runs trained or read in the sweep's own run folders, the
table from those folders, the wall time per invocation, the comparison with another section.

Neither study has a ledger: their rows are run folders, which the repository does not hold, so
the committed sections cannot be rebuilt from repository data. What the repository does hold is
checked against them: the settings sentence, the notes and headers, the comparison (from the
committed tables), the support lengths, and rows rendered from the numbers the tables show."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import monoidlab.studies.ldru21 as mod
import monoidlab.studies.ldru21_choices as choices
from monoidlab.errors import ConfigError
from monoidlab.evaluation.kinds import KINDS
from monoidlab.studies.runner import (
    read_config,
    run_study,
    solved_in_section,
    study_sections,
    write_study_docs,
)

pytestmark = [pytest.mark.usefixtures("one_torch_thread"),
              pytest.mark.filterwarnings("ignore::UserWarning")]

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = ROOT / "monoidlab" / "configs"


def _committed(name: str) -> str:
    doc = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    m = re.search(re.escape(f"<!-- begin {name} -->") + r"\n(.*?)\n"
                  + re.escape(f"<!-- end {name} -->"), doc, re.S)
    assert m, f"docs/results.md has no section {name!r}"
    return m.group(1)


# ------------------------------------------------------------------ a tiny sweep, end to end
SWEEP = """[sweep]
title = "Tiny"
conditions = ["parity", "dyck-2-covering"]
models = ["mlp-ldru"]
out = "runs/tiny"
notes = \"\"\"Two
   runs.\"\"\"
[base]
steps = 30
batch_size = 16
train_lengths = "1:8"
test_lengths = "41:43"
test_samples = 8
eval_every = 30
val_lengths = "42:43"
val_samples = 4
early_stop = 1
threads = 1
model_options = { d = 8, padding = "identity" }
[conditions.parity]
language = "parity"
[conditions.dyck-2-covering]
language = "dyck-2"
sampler = "covering"
covering = { share = 0.5, k = 1, uncovered = "skip" }
steps = 2
batch_size = 4
"""

CPU = """# Results

<!-- begin ldru21 cpu -->
| task | model | solved |
|---|---|---|
| parity | mlp-ldru | **yes** |
| dyck-2-covering | mlp-ldru | **yes** |
<!-- end ldru21 cpu -->
"""


def test_a_sweep_study_trains_once_and_tabulates_its_run_folders(tmp_path, monkeypatch):
    """A sweep named like ldru21-languages (so compared with section 'ldru21 cpu'): one run
    trained, one refused before training; no ledger row; the table from the run folders, with
    the wall time of each invocation; a rerun reuses the finished run."""
    monkeypatch.chdir(tmp_path)  # the sweep's out is relative to the current folder
    (tmp_path / "ldru21-languages.toml").write_text(SWEEP)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "results.md").write_text(CPU)
    config = read_config(mod.STUDY, tmp_path / "ldru21-languages.toml")
    with pytest.raises(ConfigError, match="no finished run of this sweep yet"):
        study_sections(mod.STUDY, config)  # nothing to tabulate: an error, not an empty table
    assert run_study(mod.STUDY, config, echo=None) == {}  # no ledger: the rows are the folders
    runs = tmp_path / "runs" / "tiny"
    done = runs / "parity__mlp-ldru__s0" / "results.json"
    assert done.is_file() and (runs / "dyck-2-covering__mlp-ldru__s0" / "refused.json").is_file()
    walls = json.loads((runs / "bench_wall.json").read_text())
    assert len(walls) == 1 and walls[0] > 0
    text = study_sections(mod.STUDY, config)["ldru21-languages"]
    assert text.startswith("## Tiny\n\n`monoidlab study ldru21 --config "
                           "configs/ldru21-languages.toml --write-docs` (one sweep): ")
    assert "over 1 invocation(s)" in text and "at most 30 steps, d = 8;" in text
    assert "| parity | mlp-ldru | 2 / 2 (identity) |" in text
    dashes = " | ".join(["—"] * (len(KINDS) + 1))  # a column per kind, and the paper score
    assert ("| dyck-2-covering | mlp-ldru | 12 / 8 (identity) | no | — (0) | 0 | " + dashes +
            " | 0 | refused before training: key 'covering':") in text
    assert "**Strictly solved: " in text and text.endswith("\n\nTwo runs.\n")
    assert "on the 2 tasks both have: solved there 2, here " in text
    before = done.stat().st_mtime_ns
    run_study(mod.STUDY, config, echo=None)  # finished: read, not trained again
    assert done.stat().st_mtime_ns == before
    assert len(json.loads((runs / "bench_wall.json").read_text())) == 2
    write_study_docs(mod.STUDY, config)  # the page of the config's repository
    page = (tmp_path / "docs" / "results.md").read_text()
    assert "<!-- begin ldru21 cpu -->" in page and "over 2 invocation(s)" in page
    (runs / "dyck-2-covering__mlp-ldru__s0" / "refused.json").unlink()
    assert study_sections(mod.STUDY, config)["ldru21-languages"].startswith(
        "## Tiny (partial: 1 of 2 runs finished)\n")


def test_the_ldru21_studys_config_is_a_sweep_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[study]\nledger = 'x.jsonl'\n")
    with pytest.raises(ConfigError, match=r"bad.toml: the ldru21 study's config is a sweep file"):
        read_config(mod.STUDY, bad)
    assert mod.section_of(BUNDLED / "ldru21-cpu.toml") == "ldru21 cpu"
    config = read_config(mod.STUDY, BUNDLED / "ldru21-cpu.toml")
    assert mod.repository(config) == Path.cwd()  # a bundled sweep: the repository is here


def test_the_21_task_comparison_reads_the_committed_cpu_table():
    """The ldru21-languages section compares with the table another config's sweep wrote into
    results.md (monoidlab.studies.runner.solved_in_section): the CPU recipe's 16 of 21, and
    which five it misses."""
    cpu = solved_in_section((ROOT / "docs" / "results.md").read_text(), "ldru21 cpu")
    assert len(cpu) == 21 and sum(cpu.values()) == 16
    assert {t for t, ok in cpu.items() if not ok} == {"modular-arithmetic", "dyck-4", "dyck-6",
                                                      "dyck-8", "dyck-12"}
    here = {**cpu, "tomita-3": False, "dyck-4": True}
    assert mod.compare_text(here, cpu, "ldru21 cpu").endswith(
        "solved there 16, here 16; lost here: tomita-3; gained here: dyck-4.")
    with pytest.raises(ConfigError, match="no generated section 'nope'"):
        solved_in_section("text", "nope")


# ------------------------------------------------------------------ the committed sections
def _summary(cells: dict[str, tuple[float, float, float]]) -> list[dict]:
    return [{"kind": k, "min": m, "majority": a, "count_only": c}
            for k, (m, a, c) in cells.items()]


def test_the_committed_languages_section_renders_from_what_the_repository_holds():
    """ldru21-languages, the section in today's format: given the wall time it shows and two of
    its runs' numbers (a solved one and a refused one), the study writes its heading, command
    and settings sentence, header, those two rows (support lengths computed here), the
    comparison with the committed 'ldru21 cpu' table and the notes, character for character."""
    from monoidlab.training.sweep import load_sweep, refused_row

    committed = _committed("ldru21-languages")
    config = read_config(mod.STUDY, BUNDLED / "ldru21-languages.toml")
    sweep = load_sweep(config.path)
    runs = {r["problem"]: r for r in sweep["runs"]}
    parity = {"problem": "parity", "solved": True, "first_solved_step": 4000, "steps": 4000,
              "attempts": 1, "paper_score": 1.0, "train_seconds": 66,
              "evaluation": {"verdict": "solved", "summary": _summary({
                  "paper": (1.0, 0.5, 1.0), "near_miss": (1.0, 0.5, 1.0),
                  "ec_stratified": (1.0, 0.55, 1.0)})}}
    message = re.search(r"\| modular-arithmetic \| .*?refused before training: (.*?) \| 100% \|",
                        committed).group(1)
    refused = refused_row(runs["modular-arithmetic"], message)
    rows = [mod.table_row(parity, runs["parity"]["config"].as_dict()),
            mod.table_row(refused, runs["modular-arithmetic"]["config"].as_dict())]
    doc = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    there = solved_in_section(doc, "ldru21 cpu")
    made = mod.table_text({**sweep, "runs": sweep["runs"][:2]}, config.path.name, rows,
                          [39 * 60], there, "ldru21 cpu").rstrip().splitlines()
    lines = committed.splitlines()
    assert made[:6] == lines[:6]  # heading, command and settings, header
    assert made[6:8] == [x for x in lines if x.startswith(("| parity |",
                                                             "| modular-arithmetic |"))]
    # the comparison: of the committed tables' own solved columns
    here = solved_in_section(doc, "ldru21-languages")
    assert mod.compare_text(here, there, "ldru21 cpu") in lines
    assert made[-1] == lines[-1] == " ".join(sweep["notes"].split())


@pytest.mark.parametrize("name", ["ldru21-cpu", "regular4-seq-cpu"])
def test_the_older_sweep_sections_keep_their_configs_notes_and_command(name):
    """The two older sections predate today's column names ('min balanced', now the 'paper'
    kind) and titles; their notes and the command line still come from the configs."""
    from monoidlab.training.sweep import load_sweep

    committed = _committed(mod.section_of(name))
    sweep = load_sweep(BUNDLED / f"{name}.toml")
    assert committed.splitlines()[-1] == " ".join(sweep["notes"].split())
    assert (f"`monoidlab study ldru21 --config configs/{name}.toml --write-docs` (one sweep)"
            in committed)
    if name == "regular4-seq-cpu":
        assert mod.settings_text(sweep["runs"][0]["config"].as_dict()) in committed


# ------------------------------------------------------------------ the choices
def test_the_choices_table_renders_the_committed_rows_and_prose(tmp_path, monkeypatch):
    """A run folder holding the numbers of the committed even-pairs 'annealed' row: the study
    writes that row, the prose and the header as committed."""
    monkeypatch.chdir(tmp_path)
    folder = choices.folder_of("even-pairs", "annealed")
    folder.mkdir(parents=True)
    cfg = choices.config_of("even-pairs", "annealed")
    (folder / "config.json").write_text(json.dumps(cfg.as_dict()))
    ev = {"summary": _summary({"paper": (1.0, 0.5, 0.75), "near_miss": (1.0, 0.5, 0.75),
                               "ec_stratified": (1.0, 0.55, 0.76)})}
    (folder / "results.json").write_text(json.dumps({
        "solved": True, "steps": 4000, "train_seconds": 59, "evaluation": ev,
        "verdict": "solved"}))
    config = read_config(choices.STUDY, BUNDLED / "ldru21-cpu.toml")
    made = study_sections(choices.STUDY, config)["ldru21 choices"].rstrip().splitlines()
    lines = _committed("ldru21 choices").splitlines()
    prose = "workers (finished runs are reused). "
    assert made[2].split(prose)[1] == lines[2].split(prose)[1]
    assert made[2].startswith("`monoidlab study ldru21-choices`: 1 runs, 1 min of training")
    assert lines[2].startswith("`monoidlab study ldru21-choices`: 13 runs")
    assert made[4:6] == lines[4:6] and made[-1] == lines[-1]
    assert made[6] == next(x for x in lines if x.startswith("| even-pairs | annealed |"))
    # asked for with other settings now: not the run the table shows
    (folder / "config.json").write_text(json.dumps({**cfg.as_dict(), "steps": 5}))
    with pytest.raises(ConfigError, match="no finished run of the ldru21 choices"):
        study_sections(choices.STUDY, config)


def test_the_choices_train_once_and_record_the_last_invocation(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(choices, "VARIANTS", {"tiny": dict(steps=5, test_lengths="41:42",
                                                           test_samples=4)})
    monkeypatch.setattr(choices, "RUNS", [("parity", "tiny")])
    config = read_config(choices.STUDY, BUNDLED / "ldru21-cpu.toml")
    assert run_study(choices.STUDY, config, echo=None) == {}
    done = tmp_path / "runs" / "ldru21-choices" / "parity__tiny" / "results.json"
    before = done.stat().st_mtime_ns
    wall = json.loads((tmp_path / "runs" / "ldru21-choices" / "study_wall.json").read_text())
    assert wall["wall"] > 0 and len(wall["pids"]) == 1
    run_study(choices.STUDY, config, echo=None)
    assert done.stat().st_mtime_ns == before  # the same config: reused
    text = study_sections(choices.STUDY, config)["ldru21 choices"]
    assert "| parity | tiny |" in text and "with 1 workers" in text


FINITE = """[sweep]
title = "Tiny tree"
languages = ["parity", "tomita-3"]
models = ["transform-tree"]
out = "runs/tiny-tree"
[base]
recipe = "languages"
steps = 40
restarts = 0
test_lengths = "41:43"
test_samples = 8
val_lengths = "42:43"
val_samples = 4
threads = 1
"""


def test_a_finite_models_sweep_has_a_certificate_column(tmp_path, monkeypatch):
    """The transformation tree's rows carry their certificate (proved, or the shortest string
    it gets wrong), counted beside the strict count; the model's recipe is named."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tasks21-languages-v2.toml").write_text(FINITE)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "results.md").write_text(CPU)
    config = read_config(mod.STUDY, tmp_path / "tasks21-languages-v2.toml")
    run_study(mod.STUDY, config, echo=None)
    text = study_sections(mod.STUDY, config)["tasks21-languages-v2"]
    rows = {}
    for f in (tmp_path / "runs" / "tiny-tree").glob("*/results.json"):
        rows[f.parent.name.split("__")[0]] = json.loads(f.read_text())["certificate"]
    assert set(rows) == {"parity", "tomita-3"}
    header = next(ln for ln in text.splitlines() if ln.startswith("| task |"))
    assert "| where it fails | certificate | paper |" in header
    for task, cert in rows.items():
        line = next(ln for ln in text.splitlines() if ln.startswith(f"| {task} |"))
        cell = line.split(" | ")[-2]
        assert cell == ("**proved**" if cert["correct"] else
                        "refuted: " + cert["verdict"].split("counterexample ")[1].split(" ")[0])
    proved = sum(c["correct"] for c in rows.values())
    assert f"Proved correct at every length by the certificate: {proved} of 2." in text
    assert "Settings: model transform-tree, recipe 'languages' (" in text
    assert "on the 1 tasks both have" in text  # parity, compared with section "ldru21 cpu"
