"""docs/architecture.md's "Where to add" table holds: each row names at most two files, the
registries' entries live in them, everything that lists samplers, test kinds or scores (the
command line's choices, the config, the docs' tables) reads the registry, and a sampler, a test
kind or a score added to its registry alone reaches the outputs that name it."""

from __future__ import annotations

import inspect
import math
import re
from pathlib import Path

import numpy as np

import monoidlab as ml
from monoidlab.evaluation import kinds as test_kinds
from monoidlab.evaluation import scores as run_scores
from monoidlab.evaluation.result import Evaluation
from monoidlab.strings import samplers
from monoidlab.training import RunConfig

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def where_to_add() -> dict[str, list[str]]:
    """``{"a model": [file, ...], ...}``: the files of the table's "edit" column."""
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Where to add", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (a [^|]+?) \| ([^|]+) \|", section, re.M)
    return {what: re.findall(r"`(monoidlab/[\w/<>]+\.py)`", edit) for what, edit in rows}


TABLE = where_to_add()


def source_file(obj) -> str:
    return Path(inspect.getsourcefile(obj)).resolve().relative_to(ROOT).as_posix()


def test_each_row_names_at_most_two_files_that_exist():
    assert set(TABLE) == {"a model", "a sampler", "a test kind", "a run-level metric", "a study"}
    for what, files in TABLE.items():
        assert 1 <= len(files) <= 2, (what, files)
        for f in files:
            assert "<name>" in f or (ROOT / f).is_file(), (what, f)


def test_models_live_where_the_table_says():
    from monoidlab.models import registry

    model_file, registry_file = TABLE["a model"]
    assert source_file(registry) == registry_file
    folder = model_file.split("<name>")[0]
    for spec in registry.REGISTRY.values():
        module = spec.target.split(":")[0].replace(".", "/") + ".py"
        assert module.startswith(folder) and module != registry_file, spec.name


def test_studies_live_where_the_table_says():
    """Every study is the module the table names, found by its file name."""
    from monoidlab import studies

    (module_file,) = TABLE["a study"]
    folder = module_file.split("<name>")[0]
    for name, module in studies.STUDIES.items():
        path = module.replace(".", "/") + ".py"
        assert path.startswith(folder) and (ROOT / path).is_file(), name
        assert studies.get_study(name).name == name
    assert "runner" not in studies.STUDIES and "ledger" not in studies.STUDIES
    # the registry is the folder: a module dropped into it is a study without any other edit
    files = {p.stem for p in (ROOT / folder).glob("*.py")
             if not p.stem.startswith("_")} - {"runner", "ledger"}
    assert set(studies.STUDIES) == {f.replace("_", "-") for f in files}


def test_samplers_live_where_the_table_says():
    draws, registry_file = TABLE["a sampler"]
    assert source_file(samplers) == registry_file
    for spec in samplers.REGISTRY.values():
        fn = spec.function()
        if spec.tree:  # its run plan, in its own module, loaded by the trainer only
            assert spec.stand_in in samplers.sampler_names(), spec.name
            assert spec.function_target.startswith("monoidlab.coverage."), spec.name
        else:
            assert source_file(fn) == draws and fn.__name__ == f"draw_{spec.name}", spec.name
        if spec.settings_target:
            assert callable(spec.check_settings), spec.name
            assert spec.config_key in RunConfig.__dataclass_fields__, spec.name
        assert spec.exact in (None, "strings", "classes"), spec.name


def test_sampler_choices_and_docs_are_the_registry():
    from monoidlab.cli import build_parser
    from monoidlab.coverage.exact import EXACT_SAMPLERS
    from monoidlab.strings.sampling import SAMPLERS, TRAINING_SAMPLERS

    plain, every = samplers.sampler_names(), samplers.sampler_names(tree=True)
    assert SAMPLERS == plain and TRAINING_SAMPLERS == every == tuple(samplers.REGISTRY)
    assert EXACT_SAMPLERS == tuple(n for n, s in samplers.REGISTRY.items() if s.exact)
    assert _choices(build_parser(), "coverage", "--sampler") == list(plain)
    assert _choices(build_parser(), "min-length", "--sampler") == list(every)
    doc = (DOCS / "coverage.md").read_text(encoding="utf-8")
    begin = doc.index("-->\n", doc.index("<!-- begin samplers")) + 4
    assert doc[begin:doc.index("<!-- end samplers -->")] == samplers.sampler_table_markdown() + "\n", (
        "docs/coverage.md's samplers table is stale: python -c \"from monoidlab.strings.samplers "
        "import sampler_table_markdown as t; print(t())\" and paste it between the markers")


def test_kinds_live_where_the_table_says_and_docs_are_the_registry():
    (kinds_file,) = TABLE["a test kind"]
    assert source_file(test_kinds) == kinds_file
    assert test_kinds.KINDS == tuple(test_kinds.REGISTRY)
    for spec in test_kinds.REGISTRY.values():
        assert source_file(spec.draw) == kinds_file, spec.name
    doc = (DOCS / "evaluation.md").read_text(encoding="utf-8")
    begin = doc.index("-->\n", doc.index("<!-- begin kinds")) + 4
    assert doc[begin:doc.index("<!-- end kinds -->")] == test_kinds.kind_table_markdown() + "\n", (
        "docs/evaluation.md's kinds table is stale: python -c \"from monoidlab.evaluation.kinds "
        "import kind_table_markdown as t; print(t())\" and paste it between the markers")


def test_scores_live_where_the_table_says():
    (scores_file,) = TABLE["a run-level metric"]
    assert source_file(run_scores) == scores_file
    for s in run_scores.SCORES:
        assert source_file(s.of) == scores_file, s.name


def _choices(parser, command: str, option: str) -> list[str]:
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    return list(next(a for a in sub._actions if option in a.option_strings).choices)


# ---------------------------------------------------------------- one registry entry is enough
def draw_repeat(rng, lang, lens, keep, *, within, classes, mix, limits):
    """A toy sampler: one letter repeated."""
    T = int(lens.max(initial=0))
    tokens = np.repeat(rng.integers(0, lang.n_symbols, size=(len(lens), 1)), T, axis=1)
    tokens[np.arange(T)[None, :] >= lens[:, None]] = 0
    return tokens


def draw_uniform_kind(lang, L, n, rng, within):
    return ml.sample(lang, [L], n, sampler="uniform", seed=rng, within=within)


def min_kind_score(ev) -> float:
    return min((ev.min_accuracy(k) for k in ev.scored_kinds), default=math.nan)


def test_a_sampler_added_to_the_registry_alone_is_drawn_trained_on_and_offered(monkeypatch):
    from monoidlab.cli import build_parser
    from monoidlab.training.loop import training_batch
    from monoidlab.training.problems import make_problem

    spec = samplers.SamplerSpec("repeat", f"{__name__}:draw_repeat", "one letter repeated",
                                "a toy")
    monkeypatch.setitem(samplers.REGISTRY, "repeat", spec)
    b = ml.sample("parity", [5], 6, sampler="repeat", seed=0)
    assert all(len(set(s)) == 1 for s in b.strings())
    cfg = RunConfig(language="parity", model="rnn", sampler="repeat", test_sampler="repeat")
    assert cfg.sampler_spec is spec
    problem = make_problem(cfg)
    _, batch = training_batch(cfg, problem, problem.lengths(cfg.train_lengths), 0)
    rows = [t[:n] for t, n in zip(batch["tokens"], batch["lengths"], strict=True)]
    assert all(len(set(r.tolist())) == 1 for r in rows)
    assert "repeat" in _choices(build_parser(), "coverage", "--sampler")
    assert "| `repeat` | one letter repeated | a toy |" in samplers.sampler_table_markdown()


def test_a_kind_added_to_the_registry_alone_is_checked_and_drawn(monkeypatch):
    from monoidlab.training.problems import make_problem

    spec = test_kinds.KindSpec("uniform", draw_uniform_kind, "uniform strings", "nothing",
                               "uniform strings")
    monkeypatch.setitem(test_kinds.REGISTRY, "uniform", spec)
    monkeypatch.setattr(test_kinds, "KINDS", tuple(test_kinds.REGISTRY))
    cfg = RunConfig(language="dyck-2", model="rnn", eval_kinds=["paper", "uniform"])
    problem = make_problem(cfg)
    assert problem.check_kinds("all")[-1] == "uniform"
    b = problem.kind_batch(problem.eval_rng(0, "uniform", 6), 6, 5, "uniform")
    assert b["tokens"].shape == (5, 6)
    assert "uniform = uniform strings" in test_kinds.kinds_sentence()


def test_a_score_added_to_the_registry_alone_reaches_every_output(monkeypatch, tmp_path):
    from monoidlab.cli.report import key_figures_text
    from monoidlab.evaluation.text import evaluation_text
    from monoidlab.report.summary import _verdict_html
    from monoidlab.training.attempts import validation_metrics
    from monoidlab.training.sweep import refused_row, summarise
    from monoidlab.training.trainer import results_of

    new = run_scores.RunScore("min_score", min_kind_score, "worst kind's minimum",
                              "minimum over the kinds")
    monkeypatch.setattr(run_scores, "SCORES", (*run_scores.SCORES, new))
    ev = Evaluation("p", ("paper", "near_miss"), 0.99, 8,
                    accuracy={"paper": {9: 1.0}, "near_miss": {9: 0.875}})
    assert ev.scores()["paper_score"] == 1.0 and list(ev.scores())[-1] == "min_score"
    assert ev.scores()["min_score"] == 0.875
    assert ev.as_dict()["min_score"] == 0.875
    assert "min_score (monoidlab's minimum over the kinds) 0.8750" in evaluation_text(ev, False)
    assert results_of(ev)["min_score"] == 0.875  # the trainer's results.json
    assert validation_metrics(ev)["val_min_score"] == 0.875  # metrics.jsonl
    cfg = RunConfig(language="parity")
    row = refused_row({"id": "r", "problem": "parity", "model": "rnn", "seed": 0,
                       "config": cfg}, "refused")
    assert math.isnan(row["min_score"])
    summarise({"out": str(tmp_path), "title": "t"}, [row])
    assert "min_score" in (tmp_path / "results.csv").read_text().splitlines()[0]
    m = {"model": "rnn", "steps": 1, "solved": False, "threshold": 0.99, "verdict": "v",
         "kinds": [], "evaluation_source": "s", "padding": "learned", "offsets": "none",
         "max_train_length": 4, "support_length": 2, **ev.scores()}
    assert "worst kind's minimum (minimum over the kinds) 0.875" in _verdict_html(m)
    key = {"language": "parity", "monoid_size": 2, "model": m}
    assert "worst kind's minimum 0.875" in key_figures_text(key)
