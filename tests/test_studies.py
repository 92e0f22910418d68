"""monoidlab.studies: the one runner (plan → run → ledger → tables → docs), its ledgers, the
command line, and every committed study table regenerated from its ledger."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from monoidlab.cli import main
from monoidlab.errors import ConfigError, UnknownName
from monoidlab.studies import STUDIES, Study, get_study, read_config, run_study, study_sections
from monoidlab.studies.ledger import add_row, read_ledger, write_ledger
from monoidlab.studies.runner import write_study_docs

ROOT = Path(__file__).resolve().parent.parent


# ------------------------------------------------------------------ a study of plain functions
def _read(path, data):
    return data["study"]["ledger"], data["study"]["out"]


def _plan(config, ledger, upto="4"):
    return [{"id": f"r{i}", "x": i} for i in range(int(upto))]


def _run(run, config):
    if run["x"] == int(config.data["study"].get("fail_at", -1)):
        raise RuntimeError(f"run {run['id']} failed")
    (config.out / run["id"]).mkdir(parents=True, exist_ok=True)  # its folder, like a training
    return {"id": run["id"], "square": run["x"] ** 2, "status": "done", "solved": True}


def _sections(config, ledger):
    rows = sorted(ledger.values(), key=lambda r: r["id"])
    return {"toy": "## Toy\n\n" + "".join(f"- {r['id']}: {r['square']}\n" for r in rows)}


TOY = Study(name="toy", plan=_plan, run=_run, sections=_sections, read=_read,
            options=("upto",))


def _toy_config(tmp_path: Path, **study) -> Path:
    (tmp_path / "configs").mkdir(parents=True, exist_ok=True)
    cfg = tmp_path / "configs" / "toy.toml"
    extra = "".join(f"{k} = {json.dumps(v)}\n" for k, v in study.items())
    cfg.write_text('[study]\nledger = "docs/data/toy.jsonl"\nout = "runs/toy"\n' + extra)
    return cfg


def test_a_study_records_each_run_in_its_ledger_and_never_trains_it_again(tmp_path):
    config = read_config(TOY, _toy_config(tmp_path))
    assert config.root == tmp_path  # the repository above configs/: its paths resolve there
    said: list[str] = []
    ledger = run_study(TOY, config, echo=said.append, upto="3")
    assert [ledger[f"r{i}"]["square"] for i in range(3)] == [0, 1, 4]
    assert read_ledger(tmp_path / "docs" / "data" / "toy.jsonl") == ledger
    assert said[0] == "3 runs to do (0 in the ledger)" and (tmp_path / "runs/toy/r2").is_dir()
    said.clear()
    run_study(TOY, config, echo=said.append, upto="4")  # one new run: only it is trained
    assert said[0] == "1 runs to do (3 in the ledger)" and '"id": "r3"' in said[1]


def test_a_run_that_fails_leaves_the_finished_rows_and_the_study_resumes(tmp_path):
    config = read_config(TOY, _toy_config(tmp_path, fail_at=2))
    with pytest.raises(RuntimeError, match="run r2 failed"):
        run_study(TOY, config, echo=None)
    assert sorted(read_ledger(config.ledger)) == ["r0", "r1"]  # written as each run ended
    fixed = read_config(TOY, _toy_config(tmp_path))
    said: list[str] = []
    run_study(TOY, fixed, echo=said.append)
    assert said[0] == "2 runs to do (2 in the ledger)" and len(read_ledger(config.ledger)) == 4


def test_runs_side_by_side_write_the_same_ledger(tmp_path):
    config = read_config(TOY, _toy_config(tmp_path))
    ledger = run_study(TOY, config, workers=2, echo=None)
    alone = read_config(TOY, _toy_config(tmp_path / "alone"))
    assert ledger == run_study(TOY, alone, echo=None) and len(ledger) == 4


def test_the_tables_come_from_the_ledger_and_only_their_section_is_rewritten(tmp_path):
    config = read_config(TOY, _toy_config(tmp_path))
    run_study(TOY, config, echo=None, upto="2")
    page = tmp_path / "docs" / "results.md"
    page.write_text("# Results\n\nkept by hand\n")
    write_study_docs(TOY, config)
    text = page.read_text()
    assert "kept by hand" in text and "<!-- begin toy -->\n## Toy\n\n- r0: 0\n- r1: 1\n" in text
    (tmp_path / "runs").rename(tmp_path / "gone")  # the run folders gone: the same table
    assert study_sections(TOY, config)["toy"] in page.read_text()


def test_an_unknown_option_or_study_is_named():
    with pytest.raises(ConfigError, match=r"unknown option\(s\) \['uptoo'\]; it takes upto"):
        run_study(TOY, None, uptoo="2")  # type: ignore[arg-type]  # checked before any read
    with pytest.raises(UnknownName, match="did you mean 'threshold'"):
        get_study("thresold")
    assert {"threshold", "random-languages", "exact21", "refine", "long", "identity-padding",
            "listops", "ldru21"} <= set(STUDIES)
    for name in STUDIES:  # each names itself and imports
        assert get_study(name).name == name


def test_a_missing_or_broken_study_config_names_the_file(tmp_path):
    with pytest.raises(ConfigError, match="no such study config"):
        read_config(TOY, tmp_path / "none.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[study\n")
    with pytest.raises(ConfigError, match="bad.toml: cannot read the study config"):
        read_config(TOY, bad)
    empty = tmp_path / "empty.toml"
    empty.write_text("[study]\nlanguages = []\n")
    with pytest.raises(ConfigError, match=r"empty.toml: a threshold study needs the tables"):
        read_config(get_study("threshold"), empty)


# ------------------------------------------------------------------ the ledgers
def test_ledgers_keep_both_layouts_and_read_the_last_row_of_a_run(tmp_path):
    p = tmp_path / "sorted.jsonl"
    add_row(p, {"id": "b", "z": 1, "a": 2})
    add_row(p, {"id": "a", "x": 1})
    assert p.read_text() == '{"id": "a", "x": 1}\n{"a": 2, "id": "b", "z": 1}\n'
    q = tmp_path / "appended.jsonl"
    add_row(q, {"id": "b", "z": 1, "a": 2}, layout="appended")
    add_row(q, {"id": "b", "z": 3}, layout="appended")
    assert q.read_text().splitlines()[0] == '{"id": "b", "z": 1, "a": 2}'  # as written
    assert read_ledger(q) == {"b": {"id": "b", "z": 3}}
    write_ledger(p, read_ledger(p))  # an unchanged ledger is rewritten byte for byte
    assert p.read_text() == '{"id": "a", "x": 1}\n{"a": 2, "id": "b", "z": 1}\n'
    with pytest.raises(ConfigError, match="ledger layout"):
        add_row(p, {"id": "c"}, layout="zipped")


def test_a_line_cut_by_a_crash_is_left_out_and_any_other_bad_line_is_named(tmp_path):
    p = tmp_path / "l.jsonl"
    p.write_text('{"id": "a"}\n{"id": "b", "x"')  # the last append never finished
    assert list(read_ledger(p)) == ["a"]
    p.write_text('{"id": "a"}\nnot json\n{"id": "c"}\n')
    with pytest.raises(ConfigError, match=r"l.jsonl, line 2: not a JSON line"):
        read_ledger(p)
    p.write_text('{"run": "a"}\n')
    with pytest.raises(ConfigError, match=r"line 1: a ledger row needs a string 'id'"):
        read_ledger(p)
    assert read_ledger(tmp_path / "none.jsonl") == {}


# ------------------------------------------------------------------ the committed tables
#: (study, config, docs sections it writes): every committed table of a study
COMMITTED = [("threshold", "configs/threshold-study.toml", ["threshold study"]),
             ("random-languages", "configs/random-languages.toml", ["random languages runs"]),
             ("random-languages", "configs/random-languages-2.toml",
              ["random languages rl2 runs"]),
             ("exact21", "configs/exact21.toml", ["exact21"]),
             ("listops", "configs/listops-table.toml", ["listops table"]),
             ("refine", "configs/refine-exact21.toml", ["refinement"])]


def _committed(name: str) -> str:
    doc = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    m = re.search(re.escape(f"<!-- begin {name} -->") + r"\n(.*?)\n"
                  + re.escape(f"<!-- end {name} -->"), doc, re.S)
    assert m, f"docs/results.md has no section {name!r}"
    return m.group(1)


@pytest.mark.parametrize(("study", "config", "sections"), COMMITTED,
                         ids=[Path(c[1]).stem for c in COMMITTED])
def test_every_committed_study_table_regenerates_identically_from_its_ledger(study, config,
                                                                            sections):
    s = get_study(study)
    made = study_sections(s, read_config(s, ROOT / config))
    assert list(made) == sections
    for name, text in made.items():
        assert text.rstrip() == _committed(name), (
            f"docs/results.md section {name!r} is not what {config}'s ledger gives: run "
            f"`monoidlab study {study} --config {config} --write-docs`")


def test_a_changed_ledger_row_changes_the_table(tmp_path):
    """The comparison above can fail: one row of the 21-task ledger flipped, the table moves."""
    s = get_study("exact21")
    config = read_config(s, ROOT / "configs" / "exact21.toml")
    rows = read_ledger(config.ledger)
    key = next(k for k, r in rows.items() if r["certified"])
    flipped = tmp_path / "exact21.jsonl"
    write_ledger(flipped, {**rows, key: {**rows[key], "certified": False,
                                         "certificate": "not certified: flipped"}})
    from dataclasses import replace

    text = study_sections(s, replace(config, ledger=flipped))["exact21"]
    assert text.rstrip() != _committed("exact21") and "not certified: flipped" in text


@pytest.mark.parametrize("which, config", [("FROZEN", "random-languages.toml"),
                                           ("DEFAULT_RECIPE", "random-languages-2.toml")])
def test_the_shipped_frozen_recipes_are_the_benchmark_configs_own(tmp_path, which, config):
    """MLP-LDRU's recipe 'languages' is round 1's frozen block, the command line's default is
    round 2's, each verbatim; the freeze action writes them so (a recipe for another model
    becomes the default only)."""
    import tomllib

    import monoidlab.recipes as recipes
    from monoidlab.studies.random_languages import frozen_block, write_frozen_recipe

    text = (ROOT / "configs" / config).read_text(encoding="utf-8")
    shipped = getattr(recipes, which).read_text(encoding="utf-8")
    assert shipped.endswith(frozen_block(text))
    assert tomllib.loads(shipped)["recipes"] == {
        n: r for n, r in tomllib.loads(text)["recipes"].items() if r.get("frozen")}
    written = write_frozen_recipe(ROOT / "configs" / config, target=tmp_path / "ldru.toml",
                                  default=tmp_path / "default.toml")
    model = next(iter(tomllib.loads(frozen_block(text))["recipes"].values()))["model"]
    assert written == [tmp_path / "default.toml"] + (
        [tmp_path / "ldru.toml"] if model == "mlp-ldru" else [])
    mine = tmp_path / ("default.toml" if which == "DEFAULT_RECIPE" else "ldru.toml")
    assert mine.read_text() == shipped


# ------------------------------------------------------------------ the command line
def test_the_command_line_prints_a_studys_tables_and_names_bad_options(capsys):
    code = main(["study", "exact21", "--config", str(ROOT / "configs" / "exact21.toml"),
                 "--table"])
    out = capsys.readouterr().out
    assert code == 0 and out.startswith("## The depth-exact models on the 21 tasks")
    assert main(["study", "exact21", "--config", str(ROOT / "configs" / "exact21.toml"),
                 "--languages", "parity"]) == 2
    assert ("study exact21: unknown option --languages; its options: --reverse"
            in capsys.readouterr().err)
    assert main(["study", "random-languages", "--config",
                 str(ROOT / "configs" / "random-languages.toml"), "--action", "drw"]) == 2
    assert "unknown action 'drw'; its actions: draw, info, freeze" in capsys.readouterr().err
    # an action's own options (freeze --name) reach it; the round-1 recipe is frozen already
    assert main(["study", "random-languages", "--config",
                 str(ROOT / "configs" / "random-languages.toml"), "--action", "freeze",
                 "--name", "languages-v1"]) == 2
    assert "frozen already" in capsys.readouterr().err
    assert main(["study", "random-languages", "--config",
                 str(ROOT / "configs" / "random-languages.toml"), "--action", "freeze",
                 "--recipe", "x"]) == 2
    assert ("study random-languages --action freeze: unknown option --recipe; its options: "
            "--name" in capsys.readouterr().err)


def test_the_command_line_runs_a_study_from_its_config(tmp_path, capsys, monkeypatch):
    """A threshold study of one language, one length, one seed, a few steps: trained once,
    recorded, its table printed from the ledger; run again, nothing is trained."""
    (tmp_path / "configs").mkdir()
    text = (ROOT / "configs" / "threshold-study.toml").read_text(encoding="utf-8")
    study = re.sub(r"(?s)\[study\].*?\n\[", "[study]\n" + "\n".join([
        'languages = ["parity"]', "offsets_from_support = [0]", "multiples_of_support = []",
        "also = []", "seeds = [0]", 'samplers = ["near_miss"]', "fresh_seeds = [1000]",
        'ledger = "ledger.jsonl"', 'out = "runs"']) + "\n\n[", text, count=1)
    study = re.sub(r"(?m)^steps = \d+", "steps = 30", study)
    study = re.sub(r"(?s)\n\[recommend\].*", "\n", study)
    cfg = tmp_path / "configs" / "t.toml"
    cfg.write_text(study)
    assert main(["study", "threshold", "--config", str(cfg), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rows"] == 1 and Path(out["ledger"]) == tmp_path / "ledger.jsonl"
    row = read_ledger(tmp_path / "ledger.jsonl")["parity__L2__near_miss__s0"]
    assert row["status"] == "done" and row["s"] == 2 and row["baselines"]
    assert main(["study", "threshold", "--config", str(cfg)]) == 0
    assert capsys.readouterr().out.startswith("0 runs to do (1 in the ledger)")
    assert main(["study", "threshold", "--config", str(cfg), "--table"]) == 0
    assert "| parity | 2 | 2 / 2 |" in capsys.readouterr().out


# ------------------------------------------------------------------ docs/studies.md's claims
def _studies_table() -> dict[str, list[str]]:
    """{study: the configs/*.toml its row of docs/studies.md's "configs it has run" names}."""
    text = (ROOT / "docs" / "studies.md").read_text(encoding="utf-8")
    table = text.split("| study | configs it has run |", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for line in table.splitlines()[2:]:
        cells = line.split(" | ")
        name = re.fullmatch(r"\| `([\w-]+)`", cells[0].strip())
        assert name, line
        rows[name.group(1)] = re.findall(r"`(configs/[\w.-]+\.toml)`", cells[1])
    return rows


def test_docs_studies_table_is_the_registry():
    """The table of studies is generated from each STUDY: every study, and nothing else."""
    from monoidlab.studies import study_table_markdown

    doc = (ROOT / "docs" / "studies.md").read_text(encoding="utf-8")
    begin = doc.index("-->\n", doc.index("<!-- begin studies")) + 4
    assert doc[begin:doc.index("<!-- end studies -->")] == study_table_markdown() + "\n", (
        "docs/studies.md's table of studies is stale: python -c \"from monoidlab.studies import "
        "study_table_markdown as t; print(t())\" and paste it between the markers")
    names = re.findall(r"^\| `([\w-]+)` \|", doc[begin:doc.index("<!-- end studies -->")], re.M)
    assert names == list(STUDIES)


def test_docs_studies_names_every_study_and_every_config_reads_with_its_study():
    """Each config docs/studies.md names for a study exists and is read by that study; every
    file of configs/ is named there (as a study's config, a sweep of one, or a development
    sweep)."""
    rows = _studies_table()
    assert set(rows) <= set(STUDIES) and rows
    named = set()
    for name, configs in rows.items():
        for c in configs:
            config = read_config(get_study(name), ROOT / c)
            assert config.root == ROOT, c
            named.add(Path(c).name)
    text = (ROOT / "docs" / "studies.md").read_text(encoding="utf-8")
    for path in (ROOT / "configs").glob("*.toml"):
        sweeps = [s for s in (ROOT / "configs").glob("*.toml")
                  if f'"configs/{path.name}"' in s.read_text(encoding="utf-8")]
        assert path.name in named or sweeps or f"`configs/{path.name}`" in text, (
            f"{path.name}: not in docs/studies.md")


def test_an_exact21_run_refused_before_training_is_a_row_not_the_end(tmp_path):
    """prefix-4-4 with the soft relaxation (682 states) is refused by the memory check: the
    study records it as a row (not certified, the message as its certificate) and the table
    shows it, instead of stopping the other runs."""
    from monoidlab.studies.exact21 import label_of, run_one, table
    from monoidlab.training import RunConfig

    cfg = RunConfig.for_language("prefix-4-4", "transform-tree", recipe="distilled",
                                 sampler="ec_stratified")
    row = run_one({"id": "exact21-x:prefix-4-4", "folder": str(tmp_path / "run"),
                   "config": cfg}, None)
    assert row["task"] == "prefix-4-4" and not row["certified"] and not row["solved"]
    assert "GiB" in row["refused"] and row["certificate"].startswith("refused before training")
    assert label_of(row) == ("transform-tree (n = 2 x minimal, length curriculum from 8, soft "
                             "relaxation, distilled by L*)")
    text = table([row], {})
    assert "refused before training" in text and "0 of 1 tasks" in text
