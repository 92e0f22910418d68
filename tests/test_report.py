"""The HTML report: self-contained, every figure a decodable PNG, renders in headless Chromium."""

from __future__ import annotations

import base64
import importlib.util
import io
import re
import shutil
from pathlib import Path

import pytest

from monoidlab.cli import main
from monoidlab.report import build_report

ROOT = Path(__file__).resolve().parent.parent


def _images(html: str) -> list[bytes]:
    return [base64.b64decode(m) for m in re.findall(r'src="data:image/png;base64,([^"]+)"', html)]


@pytest.fixture(scope="module")
def parity_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    return build_report("parity", out, train_lengths=range(1, 9), test_lengths=range(30, 41))


def test_report_is_self_contained_with_decodable_figures(parity_report):
    from PIL import Image

    html = parity_report.read_text()
    for section in ("Language", "Syntactic monoid", "EC-composition coverage",
                    "Minimum training length"):
        assert f"<h2>{section}" in html
    assert "http://" not in html and "https://" not in html  # opens offline
    imgs = _images(html)
    assert len(imgs) >= 6  # automaton, egg-box, table, heatmaps, missing, shift
    for data in imgs:
        im = Image.open(io.BytesIO(data))
        assert im.format == "PNG" and im.size[0] > 50 and im.size[1] > 50


def test_report_numbers_match_the_api(parity_report):
    import monoidlab as ml

    html = parity_report.read_text()
    size = ml.load_language("parity").monoid().size
    assert f"<td>{size}</td>" in html
    support = ml.min_training_length(ml.load_language("parity"), range(30, 41)).support_length
    assert f"<td>{support}</td>" in html


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
def test_report_renders_in_headless_chromium(parity_report, tmp_path):
    spec = importlib.util.spec_from_file_location("crb", ROOT / "bench" / "check_report_browser.py")
    crb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(crb)
    res = crb.check(parity_report, tmp_path / "shot.png")
    assert res["images"] == res["rendered"] and res["images"] >= 6
    assert res["console_errors"] == []
    assert res["screenshot"] and Path(res["screenshot"]).stat().st_size > 10_000
