"""The HTML report: self-contained, every figure a decodable PNG, renders in headless Chromium."""

from __future__ import annotations

import base64
import html
import importlib.util
import io
import re
import shutil
from pathlib import Path

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
    from monoidlab.coverage import compare, exact_coverage

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
    (cov,) = tables["EC-composition coverage (balanced schedule, exact)"]
    gap = compare(exact_coverage(lang, range(1, 9)), exact_coverage(lang, range(30, 41))).summary()
    assert {k: cov[k] for k in ("needed", "covered", "missing")} == \
        {k: str(gap[k]) for k in ("needed", "covered", "missing")}
    assert int(cov["missing"]) > 0
    rows = {r["training offsets"]: r for r in tables["Minimum training length"]}
    for off in ("0", "random"):
        res = ml.min_training_length(lang, range(30, 41), offsets=None if off == "0" else off)
        assert rows[off]["support length"] == str(res.support_length)
        assert rows[off]["needed"] == str(res.needed)
    assert (rows["0"]["support length"], rows["random"]["support length"]) == ("12", "8")


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


@pytest.mark.skipif(not (shutil.which("chromium") or shutil.which("chromium-browser")),
                    reason="Debian's chromium is not installed")
def test_report_renders_in_headless_chromium(dyck2_report, tmp_path):
    spec = importlib.util.spec_from_file_location("crb", ROOT / "bench" / "check_report_browser.py")
    crb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(crb)
    res = crb.check(dyck2_report, tmp_path / "shot.png")
    assert res["images"] == res["rendered"] and res["images"] >= 6
    assert res["console_errors"] == []
    assert res["screenshot"] and Path(res["screenshot"]).stat().st_size > 10_000
