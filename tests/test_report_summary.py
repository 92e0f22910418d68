"""The report leads with its verdict: a summary box first (language, monoid size, support length
and sample size with the sampler named, a recommended length only when given, the strict
verdict per kind beside its baselines, the probing headline), the coverage read at the run's own
lengths, a progress bar that says what each step does, and figures whose titles fit."""

from __future__ import annotations

import contextlib
import html
import io
import json
import re

import numpy as np
import pytest

import monoidlab as ml
from monoidlab.errors import InputError
from monoidlab.report import build_report
from monoidlab.report import sections as report_sections
from monoidlab.viz._common import texts_outside

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# a 3-symbol clamped counter with a reset: its letters a, b, c are what a figure must not use
# as axis names
SPEC = """name = "counter-abc"
description = "a counts up to 2 (clamped), b counts down (clamped at 0), c resets."
alphabet = ["a", "b", "c"]
start = "zero"
classes = ["zero", "one", "two"]
[output]
zero = "zero"
one = "one"
two = "two"
[transitions]
zero = { "a" = "one", "b" = "zero", "c" = "zero" }
one = { "a" = "two", "b" = "zero", "c" = "zero" }
two = { "a" = "two", "b" = "one", "c" = "zero" }
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A 60-step run on lengths 1:6 with near-miss strings (a sampler exact coverage does not
    compute), tested on 7:12: a run folder with results.json."""
    from monoidlab.training import RunConfig, train

    root = tmp_path_factory.mktemp("summary")
    spec = root / "counter.toml"
    spec.write_text(SPEC)
    cfg = RunConfig(language=str(spec), model="mlp-ldru", steps=60, batch_size=16, lr=3e-3,
                    model_options={"d": 8, "dropout": 0.0, "padding": "identity"},
                    train_lengths="1:6", test_lengths="7:12", test_samples=8,
                    sampler="near_miss", eval_every=60, checkpoint_every=1000,
                    log_every=1000, seed=0, threads=1)
    res = train(cfg, root / "run", progress=False)
    return root / "run", res, ml.load_language(spec)


def _fake_umap(X, seed=0, n_neighbors=15, min_dist=0.1):
    import sys

    print("<<umap now>>", file=sys.stderr, flush=True)
    return np.random.default_rng(seed).normal(size=(len(X), 2))


@pytest.fixture(scope="module")
def page(run, tmp_path_factory):
    """The run's report (its own lengths: none given), every figure checked for titles that
    reach past its edges as it is drawn; UMAP replaced by random coordinates (its numba
    compile costs ~20 s; the layout is not what is tested here)."""
    mp = pytest.MonkeyPatch()
    from monoidlab.viz import probing as viz_probing

    cut: dict[str, list[str]] = {}
    real_img = report_sections.img

    def checked_img(fig, alt):
        cut[alt] = texts_outside(fig)
        return real_img(fig, alt)

    mp.setattr(viz_probing, "umap_coordinates", _fake_umap)
    mp.setattr(report_sections, "img", checked_img)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):  # the progress bar writes there
            path = build_report(None, tmp_path_factory.mktemp("rep"), checkpoint=run[0],
                                n_probe=30, progress=True)
    finally:
        mp.undo()
    return path, json.loads(path.with_suffix(".json").read_text()), cut, err.getvalue()


def _box(text: str) -> str:
    return text[text.index('<section id="summary"'):text.index("</section>")]


def _cells(box: str) -> dict[str, str]:
    return {html.unescape(k): html.unescape(re.sub("<[^>]+>", "", v)) for k, v in
            re.findall(r"<tr><th>(.*?)</th><td>(.*?)</td></tr>", box)}


def test_the_summary_box_comes_first_with_the_verdict(run, page):
    path, key = page[:2]
    text = path.read_text()
    res = run[1]
    # right after the title, before every section
    assert re.search(r"</h1>\s*<section id=\"summary\"", text)
    assert text.index('id="summary"') < text.index("<h2>")
    box = _box(text)
    assert ("NOT SOLVED" in box) == (not res["solved"]) and 'id="verdict"' in box
    for kind, low in res["min_accuracy"].items():  # each kind beside its baselines
        row = re.search(rf"<tr><td>{kind}</td>(.*?)</tr>", box).group(1)
        cells = re.findall(r"<td>(.*?)</td>", row)
        assert cells[0].startswith(f"{low:.3f}")
        r = next(r for r in key["model"]["kinds"] if r["kind"] == kind)
        assert re.sub("<[^>]+>", "", cells[2]) == f"{r['majority']:.3f}"
        assert re.sub("<[^>]+>", "", cells[3]) == f"{r['count_only']:.3f}"
    assert "KMeans ARI" in box and "linear probe accuracy" in box  # the probing headline


def test_the_box_shows_the_runs_support_length_and_names_the_sampler(run, page):
    path, key = page[:2]
    _, res, lang = run
    cells = _cells(_box(path.read_text()))
    support = ml.min_training_length(lang, range(7, 13), padding="identity").support_length
    assert cells["support length"].startswith(f"{support} ")
    assert "padding identity" in cells["support length"]
    # near_miss has no exact law: the estimate is for the balanced sampler, and says so
    from monoidlab.coverage.exact import exact_coverage
    from monoidlab.coverage.min_length import samples_needed

    need = exact_coverage(lang, range(7, 13), padding="identity", sampler="uniform").support
    n = samples_needed(exact_coverage(lang, range(1, 7), padding="identity",
                                      sampler="balanced"), need, 0.01)
    assert cells["sample size"].startswith(f"{n:,} strings")
    assert "balanced sampler" in cells["sample size"]
    assert "the run drew near_miss strings" in cells["sample size"]
    assert cells["monoid"] == f"{lang.monoid().size} elements"
    # the run's layout (identity padding, lengths from 1, near_miss): the study's rule for it
    from monoidlab.coverage.length_rules import recommend

    rec = recommend(support, "near_miss", padding="identity")
    assert rec.length is not None
    assert cells["recommended length"].startswith(f"{rec.length} (model mlp-ldru, near_miss sampler, ")
    assert rec.basis in cells["recommended length"]
    assert key["recommendation"]["length"] == rec.length


def test_the_coverage_uses_the_runs_training_lengths(page):
    path, key = page[:2]
    assert key["coverage"] == {"train_lengths": "1:6", "test_lengths": "7:12",
                               "lengths_from": "the run's", "padding": "identity"}
    section = path.read_text().split("<h2>EC-composition coverage", 1)[1].split("<h2>", 1)[0]
    assert "<td>1:6</td><td>7:12</td>" in section  # not the default 1:40
    assert "padding identity" in section


def test_no_figure_title_reaches_past_its_figure(page):
    cut = page[2]
    assert len(cut) >= 9  # automaton ... associativity: every figure was checked
    assert {alt: t for alt, t in cut.items() if t} == {}


def test_the_associativity_table_says_cosine_distance(page):
    text = page[0].read_text()
    assert "<th>cosine distance</th>" in text and "<th>cos</th>" not in text


def test_a_recommended_length_is_shown_only_when_given(run, tmp_path):
    path = build_report(None, tmp_path, checkpoint=run[0], probe=False, recommended_length=9,
                        recommended_sampler="balanced")
    cells = _cells(_box(path.read_text()))
    assert cells["recommended length"] == "9 (balanced sampler)"
    assert json.loads(path.with_suffix(".json").read_text())["recommended_length"] == 9
    with pytest.raises(InputError, match="recommended_length"):
        build_report(None, tmp_path / "b", checkpoint=run[0], recommended_length=0)


def test_the_progress_bar_says_what_each_step_does(page):
    err = page[3]
    assert "report: exact coverage at training lengths 1:6 and test lengths 7:12" in err
    assert "report: probing: node embeddings of 30 held-out strings" in err
    # the UMAP (the step that sat silent for minutes) is named before it starts
    label = err.rfind("report: UMAP of ", 0, err.index("<<umap now>>"))
    assert label >= 0 and "compiles numba" in err[label:err.index("<<umap now>>")]


def test_a_report_without_a_model_says_so_in_the_box(tmp_path):
    path = build_report("parity", tmp_path, train_lengths=range(1, 5), test_lengths=range(9, 11))
    box = _box(path.read_text())
    assert "no model" in box and "balanced sampler" in box
    key = json.loads(path.with_suffix(".json").read_text())
    assert key["coverage"]["lengths_from"] == "given"


@pytest.mark.parametrize("name", ["summary", "sections"])
def test_doctests(name):
    import doctest
    import importlib

    mod = importlib.import_module(f"monoidlab.report.{name}")
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert res.attempted > 0 and res.failed == 0


def test_the_report_shows_what_the_model_computes(run, page):
    """The extraction section (L* on the model; the operator's table for MLP-LDRU), and its
    headline in the box, agree with the key figures; the extracted machine is compared with the
    run's own language."""
    path, key = page[:2]
    text = path.read_text()
    assert "What the model computes: extracted automaton and monoid" in text
    x = key["extraction"]
    assert x["automaton_states"] >= 1 and isinstance(x["automaton_isomorphic"], bool)
    assert {"monoid_k", "monoid_closed", "monoid_isomorphic"} <= set(x)
    box = html.unescape(_box(text))
    assert f"extracted automaton: {x['automaton_states']} states" in box
    assert ("isomorphic to the true one" in box) is x["automaton_isomorphic"]
    assert "report: extraction: L* with the model as membership oracle" in page[3]


def test_a_failed_run_is_diagnosed_in_the_report_and_its_box(page):
    """The 60-step run fails: the model section says why (budget, data, depth or training),
    and the box names the cause."""
    path, key = page[:2]
    d = key["model"]["diagnosis"]
    assert d["cause"] in ("budget", "data", "depth", "training") and d["reasons"]
    text = path.read_text()
    assert "Why it fails: budget, data, depth or training" in text
    assert f"<b>diagnosis: {d['cause']}</b>" in _box(text)


def test_the_json_has_one_recommended_length(page):
    """Without a given length, the JSON's recommended_length is the tool's recommendation the
    box shows (never null beside a recommendation that names a length)."""
    key = page[1]  # the run's report, built without a recommended length
    rec = key.get("recommendation") or {}
    assert key["recommended_length"] == rec.get("length")
