"""Tests for the ``monoidlab coverage`` and ``monoidlab min-length`` commands (in process)."""

import json

import numpy as np
import pytest

import monoidlab as ml
from monoidlab.cli import main
from monoidlab.coverage.exact import compare, exact_coverage
from monoidlab.coverage.min_length import min_training_length


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv):
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


# ------------------------------------------------------------------ coverage
def test_coverage_exact_json(capsys):
    data = run_json(capsys, "coverage", "dyck-2", "--train", "1:8", "--test", "30:34", "--exact")
    assert {"needed", "covered", "missing", "missing_list", "train_lengths", "test_lengths",
            "schedule", "language", "exact"} <= set(data)
    lang = ml.load_language("dyck-2")
    gap = compare(exact_coverage(lang, range(1, 9)), exact_coverage(lang, range(30, 35)))
    assert data["needed"] == gap.needed.sum() == 122
    assert data["covered"] + data["missing"] == data["needed"]
    assert data["missing"] == 0 and data["missing_list"] == []
    assert (data["train_lengths"], data["test_lengths"], data["exact"]) == ("1:8", "30:34", True)


def test_coverage_missing_list_and_table(capsys):
    data = run_json(capsys, "coverage", "dyck-2", "--train", "1:5", "--test", "30:34", "--exact",
                    "--schedule", "scan")
    assert data["missing"] == len(data["missing_list"]) > 0
    row = data["missing_list"][0]
    assert {"left", "right", "left_word", "right_word", "test_probability"} <= set(row)
    code, out, _ = run(capsys, "coverage", "dyck-2", "--train", "1:5", "--test", "30:34",
                       "--exact", "--schedule", "scan")
    assert code == 0
    assert f"missing {data['missing']}" in out and "left_word" in out


def test_coverage_out_writes_pngs_and_json(capsys, tmp_path):
    out = tmp_path / "d2"
    data = run_json(capsys, "coverage", "dyck-2", "--train", "1:4", "--test", "20:24",
                    "--exact", "--out", str(out))
    files = {p.name for p in out.iterdir()}
    assert {"heatmaps.png", "missing.png", "ec_shift.png", "coverage.json"} <= files
    for name in ("heatmaps.png", "missing.png", "ec_shift.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    saved = json.loads((out / "coverage.json").read_text())
    assert saved["missing"] == data["missing"] > 0
    assert sorted(data["files"]) == sorted(str(out / n) for n in files)


def test_coverage_sampled(capsys):
    """Without --exact: the coverages of the two seeded samples the API draws (seed, seed + 1)."""
    from monoidlab.coverage.exact import sampled_coverage

    data = run_json(capsys, "coverage", "dyck-2", "--train", "1:8", "--test", "30:34",
                    "--sampler", "balanced", "--n-train", "500", "--n-test", "100")
    assert data["exact"] is False and data["sampler"] == "balanced"
    lang = ml.load_language("dyck-2")
    tr = ml.sample(lang, range(1, 9), 500, sampler="balanced", seed=0)
    te = ml.sample(lang, range(30, 35), 100, sampler="balanced", seed=1)
    want = compare(sampled_coverage(tr), sampled_coverage(te)).summary()
    assert (data["needed"], data["covered"], data["missing"]) == \
        (want["needed"], want["covered"], want["missing"])
    exact = exact_coverage(lang, range(30, 35)).support.sum()
    assert 0 < data["needed"] < exact  # 100 strings miss rare compositions
    uniform = run_json(capsys, "coverage", "dyck-2", "--train", "1:8", "--test", "30:34",
                       "--sampler", "uniform", "--n-train", "500", "--n-test", "100")
    assert uniform["needed"] != data["needed"]  # the sampler is used


def test_coverage_train_offsets_random(capsys):
    """--offsets gives the exact coverage with those training offsets (fewer missing pairs)."""
    lang = ml.load_language("dyck-2")
    test = exact_coverage(lang, range(30, 35))
    base = run_json(capsys, "coverage", "dyck-2", "--train", "1:6", "--test", "30:34", "--exact")
    assert base["missing"] == compare(exact_coverage(lang, range(1, 7)), test).missing.sum() == 64
    for flag, offsets, missing in (("random", "random", 27), ("0,1,3", [0, 1, 3], 59)):
        off = run_json(capsys, "coverage", "dyck-2", "--train", "1:6", "--test", "30:34",
                       "--exact", "--offsets", flag)
        assert off["offsets"] == flag and off["needed"] == base["needed"]
        want = compare(exact_coverage(lang, range(1, 7), offsets=offsets, sampler="balanced"),
                       exact_coverage(lang, range(30, 35), sampler="balanced")).summary(first=None)
        assert off["missing"] == want["missing"] == missing < base["missing"]
        assert off["missing_list"] == want["missing_list"]


def test_one_default_sampler_everywhere(capsys):
    """sample(), exact coverage, the minimum length's sample sizes, the trainer and the CLI
    share one default sampler (`balanced`), and every output that depends on it names it;
    --sampler still chooses."""
    import inspect

    from monoidlab.strings.sampling import DEFAULT_SAMPLER
    from monoidlab.training.config import RunConfig

    assert DEFAULT_SAMPLER == "balanced" == RunConfig(language="parity").sampler
    for fn in (ml.sample, exact_coverage, ml.min_training_length):
        assert inspect.signature(fn).parameters["sampler"].default == DEFAULT_SAMPLER, fn
    lang = ml.load_language("dyck-2")
    assert np.array_equal(ml.sample(lang, [6], 50, seed=1).tokens,
                          ml.sample(lang, [6], 50, seed=1, sampler="balanced").tokens)
    argv = ["coverage", "dyck-2", "--train", "1:5", "--test", "30:34", "--exact"]
    default = run_json(capsys, *argv)
    assert (default["sampler"], default["sampler_from"]) == ("balanced", "the default")
    want = {s: compare(exact_coverage(lang, range(1, 6), sampler=s),
                       exact_coverage(lang, range(30, 35), sampler=s)).summary(first=None)
            for s in ("balanced", "uniform")}
    assert default["missing_list"] == want["balanced"]["missing_list"]
    assert default["missing_list"] != want["uniform"]["missing_list"]  # the law matters
    uniform = run_json(capsys, *argv, "--sampler", "uniform")
    assert (uniform["sampler"], uniform["sampler_from"]) == ("uniform", "--sampler")
    assert uniform["missing_list"] == want["uniform"]["missing_list"]
    code, out, _ = run(capsys, *argv)
    assert code == 0
    assert "sampler balanced (the default of monoidlab, training's too; --sampler to choose)" \
        in out.splitlines()[1]
    sampled = run_json(capsys, "coverage", "dyck-2", "--train", "1:8", "--test", "30:34",
                       "--n-train", "300", "--n-test", "60")
    assert (sampled["exact"], sampled["sampler"]) == (False, "balanced")


def test_coverage_within_modular_arithmetic(capsys):
    data = run_json(capsys, "coverage", "modular-arithmetic", "--train", "1:5", "--test", "7:9",
                    "--exact", "--within", "auto")
    lang = ml.load_language("modular-arithmetic")
    wf = [c for c in lang.classes if c != "incomplete"]
    assert data["needed"] == exact_coverage(lang, range(7, 10), within=wf).support.sum()


@pytest.mark.parametrize("argv, message", [
    (["coverage", "dyck-2", "--train", "8:1"], "--train"),
    (["coverage", "dyck-2", "--test", "a:b"], "--test"),
    (["coverage", "dyck-2", "--train=-3:4"], "--train"),
    (["coverage", "dyck-2", "--offsets", "random"], "--exact"),
    (["coverage", "dyck-2", "--exact", "--offsets", "x,y"], "--offsets"),
    (["coverage", "dyck-2", "--exact", "--sampler", "ec_stratified"], "--exact"),
    (["coverage", "no-such-language", "--exact"], "no-such-language"),
    (["min-length"], "--suite"),
    (["min-length", "parity", "--suite", "tomita"], "--suite"),
    (["min-length", "parity", "--test", "9:2"], "--test"),
    (["min-length", "--suite", "nope"], "nope"),
])
def test_errors_exit_2_with_one_line(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("monoidlab: error:"), err
    assert message in lines[0]


# ------------------------------------------------------------------ min-length
def test_min_length_suite_json(capsys):
    from monoidlab.training.config import training_recipe

    rows = run_json(capsys, "min-length", "--suite", "tomita", "--test", "41:60")
    assert [r["name"] for r in rows] == ml.suite("tomita")
    padding = training_recipe()[0]["padding"]  # unset: the training recipe's padding
    for r in rows:
        assert {"support_length", "needed", "uncovered_at_limit", "schedule"} <= set(r)
        assert r["padding"] == padding
        expected = min_training_length(ml.load_language(r["name"]), range(41, 61),
                                       padding=padding)
        assert r["support_length"] == expected.support_length
        assert r["needed"] == expected.needed


def test_min_length_single_language_table_and_json(capsys):
    data = run_json(capsys, "min-length", "parity", "--test", "41:100")
    assert data["support_length"] == 2 and data["name"] == "parity"
    code, out, _ = run(capsys, "min-length", "dyck-2", "--test", "41:100")
    assert code == 0 and "support_length" in out and "dyck-2" in out


def test_min_length_sample_size(capsys):
    data = run_json(capsys, "min-length", "dyck-2", "--test", "30:34", "--delta", "0.01",
                    "--sample-lengths", "1:12", "--padding", "learned", "--sampler", "balanced")
    assert data["samples_needed"] > 0
    lang = ml.load_language("dyck-2")
    res = min_training_length(lang, range(30, 35), delta=0.01, sample_ranges=[range(1, 13)])
    assert data["samples_needed"] == res.samples_needed["1:12"]
    # a range that misses compositions can never reach 1 - delta
    data = run_json(capsys, "min-length", "dyck-2", "--test", "30:34", "--delta", "0.01",
                    "--sample-lengths", "1:4", "--sampler", "balanced")
    assert data["samples_needed"] is None


def test_min_length_train_offsets_and_schedules(capsys):
    """--offsets and --schedule reach min_training_length (values differ between settings)."""
    learned = ("--padding", "learned")
    base = run_json(capsys, "min-length", "dyck-2", "--test", "41:80", *learned)
    off = run_json(capsys, "min-length", "dyck-2", "--test", "41:80", "--offsets", "random",
                   *learned)
    assert off["offsets"] == "random"
    assert (base["support_length"], off["support_length"]) == (12, 8)
    tomita3 = ml.load_language("tomita-3")
    got = {}
    for sched in ("balanced", "scan", "chain"):
        d = run_json(capsys, "min-length", "tomita-3", "--test", "41:60", "--schedule", sched,
                     *learned)
        want = min_training_length(tomita3, range(41, 61), schedule=sched)
        assert d["schedule"] == sched
        assert (d["support_length"], d["needed"]) == (want.support_length, want.needed)
        got[sched] = d["support_length"]
    assert got == {"balanced": 22, "scan": 16, "chain": 7}
    limited = run_json(capsys, "min-length", "dyck-2", "--test", "41:80", "--max-search", "6",
                       *learned)
    assert limited["support_length"] is None and limited["uncovered_at_limit"] > 0
    assert limited["needed"] == base["needed"]


def test_min_length_report_and_train_assume_one_layout(capsys):
    """The layout `monoidlab train --language` trains with (the default model's recipe
    'languages') is the one `min-length` and the report assume when the user sets none: one
    model, one padding, one sampler."""
    import argparse

    from monoidlab.cli.training import _config
    from monoidlab.report.sections import Report
    from monoidlab.training.config import training_recipe

    layout = training_recipe()[0]
    args = argparse.Namespace(config=None, language="tomita-5", task=None, model=None,
                              steps=None, seed=None, resume=False, out=None, data=None)
    cfg = _config(args, [])
    assert (cfg.model, cfg.recipe, cfg.padding.value, cfg.sampler) == (
        layout["model"], "languages", layout["padding"], layout["sampler"])
    row = run_json(capsys, "min-length", "tomita-5", "--test", "41:60")
    assert (row["padding"], row["layout_from"]) == (
        layout["padding"], {"padding": layout["from"], "sampler": layout["from"]})
    lang = ml.load_language("tomita-5")
    rep = Report(lang, lang.monoid(), None, "balanced", np.arange(1, 41), np.arange(41, 61),
                 "default")
    assert rep.padding.value == layout["padding"]
    text = run(capsys, "min-length", "tomita-5", "--test", "41:60")[1]
    assert f"padding {layout['padding']}, recommended length for {layout['sampler']}" in text
    # the sample-size estimate: one sampler for both (the recipe's has no exact law: the
    # default one), and the recommendation for the recipe's sampler in both
    from monoidlab.report.sections import min_length_section

    min_length_section(rep)
    sized = run_json(capsys, "min-length", "tomita-5", "--test", "41:60", "--delta", "0.01",
                     "--sample-lengths", "1:40")
    assert sized.get("sample_size_sampler", sized["sampler"]) == rep.key["sample_size"]["sampler"]
    assert sized["recommended_length"] == rep.key["recommendation"]["length"]
