"""The HTML report: self-contained, every figure a decodable PNG, renders in headless Chromium."""

from __future__ import annotations

import base64
import html
import importlib.util
import io
import re
from pathlib import Path

import numpy as np
import pytest

from monoidlab.cli import main
from monoidlab.report import build_report

ROOT = Path(__file__).resolve().parent.parent


def _images(page: str) -> list[bytes]:
    return [base64.b64decode(m) for m in re.findall(r'src="data:image/png;base64,([^"]+)"', page)]


def _tables(page: str) -> dict[str, list[dict[str, str]]]:
    """Every table of the report under the ``<h2>`` heading it follows: rows as {header: cell}."""
    out: dict[str, list[dict[str, str]]] = {}
    for section in re.split(r"<h2>", page)[1:]:
        title = html.unescape(section.split("</h2>", 1)[0])
        for table in re.findall(r"<table>(.*?)</table>", section, re.S):
            rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)
            head = [html.unescape(h) for h in re.findall(r"<th>(.*?)</th>", rows[0])]
            out.setdefault(title, []).extend(
                dict(zip(head, (html.unescape(c) for c in re.findall(r"<td>(.*?)</td>", r))))
                for r in rows[1:])
    return out


@pytest.fixture(scope="module")
def dyck2_report(tmp_path_factory):
    """dyck-2: states (4), monoid size (15), support lengths (12, 8 with offsets) all differ, so
    a number in the wrong cell is caught."""
    out = tmp_path_factory.mktemp("report")
    return build_report("dyck-2", out, train_lengths=range(1, 9), test_lengths=range(30, 41))


def test_report_is_self_contained_with_decodable_figures(dyck2_report):
    from PIL import Image

    page = dyck2_report.read_text()
    for section in ("Language", "Syntactic monoid", "EC-composition coverage",
                    "Minimum training length"):
        assert f"<h2>{section}" in page
    assert "http://" not in page and "https://" not in page  # opens offline
    imgs = _images(page)
    assert len(imgs) >= 6  # automaton, egg-box, table, heatmaps, missing, shift
    for data in imgs:
        im = Image.open(io.BytesIO(data))
        assert im.format == "PNG" and im.size[0] > 50 and im.size[1] > 50


def test_report_numbers_match_the_api(dyck2_report):
    import monoidlab as ml
    from monoidlab.coverage.exact import compare, exact_coverage

    tables = _tables(dyck2_report.read_text())
    lang = ml.load_language("dyck-2")
    m = lang.monoid()
    (language,) = tables["Language"]
    assert language == {"states (minimal)": str(lang.n_states), "alphabet": "0 1",
                        "classes": "reject, accept"}
    (monoid,) = tables["Syntactic monoid"]
    s = m.summary()
    for key in ("size", "idempotents", "r_classes", "l_classes", "h_classes", "j_classes"):
        assert monoid[key] == str(s[key]), key
    assert monoid["size"] == "15" and monoid["aperiodic"] == "yes" and monoid["group"] == "no"
    # no checkpoint: the layout of the recipe the report recommends (identity padding)
    (cov,) = tables["EC-composition coverage (balanced schedule, exact, padding identity)"]
    pad = {"padding": "identity"}
    gap = compare(exact_coverage(lang, range(1, 9), **pad),
                  exact_coverage(lang, range(30, 41), **pad)).summary()
    assert {k: cov[k] for k in ("needed", "covered", "missing")} == \
        {k: str(gap[k]) for k in ("needed", "covered", "missing")}
    assert int(cov["needed"]) > 0 and int(cov["missing"]) == 0  # 1..8 reaches s = 8
    rows = {r["training offsets"]: r for r in tables["Minimum training length"]}
    for off in ("0", "random"):
        res = ml.min_training_length(lang, range(30, 41), offsets=None if off == "0" else off,
                                     **pad)
        assert rows[off]["support length"] == str(res.support_length)
        assert rows[off]["needed"] == str(res.needed)
    assert (rows["0"]["support length"], rows["random"]["support length"]) == ("8", "8")


def test_report_cli_json(tmp_path, capsys):
    rc = main(["report", "tomita-5", "--out", str(tmp_path), "--train", "1:6", "--test",
               "20:24", "--json"])
    assert rc == 0
    assert (tmp_path / "tomita-5.html").is_file()
    assert '"report"' in capsys.readouterr().out


def test_report_cli_rejects_checkpoint_and_train_together(tmp_path, capsys):
    rc = main(["report", "parity", "--checkpoint", "x.pt", "--train-model", "--out", str(tmp_path)])
    assert rc == 2
    assert "either --checkpoint or --train" in capsys.readouterr().err


def _browser_check():
    """tools/check_report_browser.py as a module (it is a script, not part of the package)."""
    spec = importlib.util.spec_from_file_location("crb", ROOT / "tools" / "check_report_browser.py")
    crb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(crb)
    return crb


CRB = _browser_check()


@pytest.mark.skipif(CRB.find_chromium() is None,
                    reason="no chromium on PATH: the HTML report was not opened in a browser "
                           "(`make test` installs Debian's chromium as root; else "
                           "apt-get install chromium)")
def test_report_renders_in_headless_chromium(dyck2_report, tmp_path):
    """Real headless Chromium: every image decodes, the console shows no error, and the
    screenshot is a page with content (not blank: many colours, few pixels of the background)."""
    from PIL import Image

    res = CRB.check(dyck2_report, tmp_path / "shot.png")
    assert res["images"] == res["rendered"] and res["images"] >= 6
    assert res["console_errors"] == []
    assert res["ok"]
    assert res["screenshot"] and Path(res["screenshot"]).stat().st_size > 10_000
    shot = Image.open(res["screenshot"]).convert("RGB")
    assert shot.size == (1200, 2400)
    pixels = np.asarray(shot.resize((300, 600))).reshape(-1, 3)
    colours, counts = np.unique(pixels, axis=0, return_counts=True)
    assert len(colours) > 200  # figures, not a blank page
    assert counts.max() < 0.9 * len(pixels)  # the background leaves room for content


@pytest.mark.skipif(CRB.find_chromium() is None, reason="no chromium on PATH (see above)")
def test_the_verdict_is_on_the_first_screen_in_chromium(parity_run, tmp_path):
    """Real headless Chromium at 1280×800: the summary box and its verdict end within the
    first screen, and every figure lies inside the page's width (none cut at an edge)."""
    path = build_report(None, tmp_path, checkpoint=parity_run[0], umap=False, n_probe=40)
    res = CRB.check(path, window=(1280, 800))
    assert res["ok"] and res["viewport"][0] == 1280
    screen = res["viewport"][1]  # a 1280×800 window's page area: ~660 px in headless Chromium
    box, verdict = res["boxes"]["summary"], res["boxes"]["verdict"]
    assert 0 <= box["top"] < verdict["bottom"] <= min(screen, 800), (box, verdict, screen)
    assert "SOLVED" in path.read_text().split('id="verdict"', 1)[1][:300]
    width = res["viewport"][2]
    assert len(res["figures"]) >= 9
    for fig in res["figures"]:
        assert 0 <= fig["left"] and fig["right"] <= width and fig["natural"] > 0, fig


@pytest.mark.skipif(CRB.find_chromium() is None, reason="no chromium on PATH (see above)")
def test_browser_check_sees_broken_images_and_console_errors(dyck2_report, tmp_path):
    """The check itself: a report with an undecodable image and a console.error fails it."""
    page = dyck2_report.read_text().replace(
        "</body>", '<img src="data:image/png;base64,iVBORw0KGgoAAAA">'
                   "<script>console.error('boom')</script></body>")
    bad = tmp_path / "bad.html"
    bad.write_text(page)
    res = CRB.check(bad)
    assert not res["ok"]
    assert res["rendered"] == res["images"] - 1
    assert any("boom" in e for e in res["console_errors"])


@pytest.fixture(scope="module")
def parity_run(tmp_path_factory):
    """A tiny parity run with early stopping: a run folder with best.pt and results.json."""
    from monoidlab.training import RunConfig, train

    run = tmp_path_factory.mktemp("run") / "parity"
    cfg = RunConfig(language="parity", model="mlp-ldru", steps=120, batch_size=32, lr=3e-3,
                      model_options={"d": 16, "dropout": 0.0, "padding": "identity"},
                      train_lengths="1:8", test_lengths="9:16", test_samples=16,
                      sampler="near_miss", eval_every=30, val_lengths="9:12", early_stop=2,
                      checkpoint_every=1000, log_every=1000, seed=0)
    return run, train(cfg, run, progress=False)


def test_run_folder_loads_the_evaluated_weights(parity_run):
    """A run folder loads best.pt (the weights results.json was measured on); the file
    checkpoint.pt loads the last weights."""
    from monoidlab.training import load_checkpoint

    run, res = parity_run
    assert (run / "best.pt").is_file() and res["best_step"] is not None
    _, _, _, ck_dir = load_checkpoint(run)
    _, _, _, ck_file = load_checkpoint(run / "checkpoint.pt")
    assert ck_dir["step"] == res["best_step"] and ck_dir["last_step"] == res["steps"]
    assert ck_file["step"] == res["steps"]


def test_report_of_a_run_reuses_its_evaluation_and_writes_key_figures(parity_run, tmp_path):
    import json

    import monoidlab as ml
    from monoidlab.cli.report import key_figures_text

    run, res = parity_run
    path = build_report("parity", tmp_path, checkpoint=run, train_lengths=range(1, 9),
                        test_lengths=range(9, 17), umap=False, n_probe=40)
    key = json.loads(path.with_suffix(".json").read_text())
    m = key["model"]
    assert m["verdict"] == res["verdict"] and m["paper_score"] == res["paper_score"]
    assert "results.json" in m["evaluation_source"]
    assert {r["kind"]: r["min"] for r in m["kinds"]} == res["min_accuracy"]
    want = ml.min_training_length(ml.load_language("parity"), range(9, 17), within="auto",
                                  padding="identity").support_length
    assert m["support_length"] == want and m["padding"] == "identity"
    assert key["monoid_size"] == ml.load_language("parity").monoid().size
    models = [r["model"] for r in key["probing"]["agreement"]]
    assert "trained" in models and "init" in models
    text = key_figures_text(key)
    assert res["verdict"] in text and f"length {want} for this padding" in text
    # other test lengths than the run's: evaluated afresh, and said so
    key2 = build_report("parity", tmp_path / "b", checkpoint=run, train_lengths=range(1, 9),
                        test_lengths=range(9, 13), probe=False)
    m2 = json.loads(key2.with_suffix(".json").read_text())["model"]
    assert "evaluated now" in m2["evaluation_source"]


def test_demo_cli_trains_reports_and_prints_the_verdict(tmp_path, capsys, monkeypatch):
    from monoidlab.cli import report as cli_report
    from monoidlab.geometry import Lengths

    small = dict(cli_report.DEMO_TRAINING, steps=60, eval_every=20, val_lengths=Lengths(9, 12),
                 test_lengths=Lengths(9, 16), test_samples=8, model_options={"d": 8})
    monkeypatch.setattr(cli_report, "DEMO_TRAINING", small)
    args = ["demo", "--language", "parity", "--out", str(tmp_path), "--train", "1:8",
            "--test", "9:16", "--no-umap"]
    assert main(args) == 0
    out = capsys.readouterr().out
    res = __import__("json").loads((tmp_path / "parity-mlp-ldru" / "results.json").read_text())
    assert res["verdict"] in out and "support  length" in out and "KMeans ARI" in out
    assert "report written to" in out
    # a second call reuses the finished run (no training: same results.json) and replaces its
    # own report (without probing this time: the probing section was checked above)
    stamp = (tmp_path / "parity-mlp-ldru" / "results.json").stat().st_mtime_ns
    assert main([*args, "--no-probe"]) == 0
    assert "KMeans ARI" not in capsys.readouterr().out  # the report was written again
    assert (tmp_path / "parity-mlp-ldru" / "results.json").stat().st_mtime_ns == stamp
