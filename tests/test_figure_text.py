"""Every text of every report figure is at least 9 px where the report shows it: figures are
saved at 100 dpi and shown at most 1100 px wide (the page's column), so a point is 100/72 px
times the scale the browser applies to a wider image."""

from __future__ import annotations

from types import SimpleNamespace

import matplotlib
import matplotlib.pyplot
import numpy as np
import pytest

matplotlib.use("Agg")

pytestmark = pytest.mark.usefixtures("one_torch_thread")

COLUMN_PX, DPI, MIN_PX = 1100, 100, 9.0


def small_texts(fig) -> tuple[float, list[tuple[float, str]]]:
    """(the scale the report applies, the texts below MIN_PX as (px, text))."""
    from matplotlib.text import Text

    fig.canvas.draw()
    width = fig.get_tightbbox(fig.canvas.get_renderer()).width * DPI
    scale = min(1.0, COLUMN_PX / width)
    small = [(round(t.get_fontsize() * DPI / 72 * scale, 1), t.get_text()[:30])
             for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()
             and t.get_fontsize() * DPI / 72 * scale < MIN_PX]
    return scale, small


@pytest.fixture
def report_figures(monkeypatch):
    import monoidlab.report.sections as sections

    seen = []
    real = sections.png

    def spy(fig):
        title = fig.axes[0].get_title() if fig.axes else ""
        seen.append((title, *small_texts(fig)))
        return real(fig)

    monkeypatch.setattr(sections, "png", spy)
    return seen


def test_report_figures_without_a_model(report_figures, tmp_path):
    from monoidlab.report import build_report

    build_report("dyck-2", tmp_path, train_lengths=range(1, 9), test_lengths=range(30, 41))
    assert len(report_figures) >= 5
    bad = [(t, scale, small) for t, scale, small in report_figures if small]
    assert not bad, bad


def test_report_figures_with_a_model(report_figures, tmp_path, tiny_ldru_run):
    from monoidlab.report import build_report

    build_report(None, tmp_path, checkpoint=tiny_ldru_run, umap=False, n_probe=40)
    titles = [t for t, _, _ in report_figures]
    assert any("extracted" in t for t in titles), titles  # the extraction's table is drawn
    bad = [(t, scale, small) for t, scale, small in report_figures if small]
    assert not bad, bad


def test_the_umap_figure_fits_the_column(tiny_ldru_run):
    """UMAP's three panels (coordinates given: no fit) fit the column unscaled."""
    import monoidlab as ml
    from monoidlab.probing import node_embeddings
    from monoidlab.training import load_checkpoint
    from monoidlab.viz.probing import umap_figure

    model, _, _, _ = load_checkpoint(tiny_ldru_run)
    lang = ml.load_language("parity")
    b = ml.sample(lang, [9, 10, 11], 30, seed=0)
    emb = node_embeddings(model, lang, b.tokens, b.lengths)
    coords = np.random.default_rng(0).normal(size=(len(emb), 2))
    fig = umap_figure(emb, coords=coords, max_points=None)
    scale, small = small_texts(fig)
    matplotlib.pyplot.close(fig)
    assert scale == 1.0 and not small, (scale, small)


@pytest.mark.parametrize("k", [6, 40, 150])
def test_the_extracted_table_fits_the_column_at_any_size(k):
    from monoidlab.probing.extraction_report import table_figure

    rng = np.random.default_rng(0)
    table = rng.integers(0, k, (k, k))
    # the monoid's products agree but for a few cells (about 3 %, blank or other elements),
    # as for an extraction worth a table: each differing cell is one outlined patch, and
    # k² of them (a random table) cost a minute of drawing without changing a text
    predicted = np.where(rng.random((k, k)) < 0.03, rng.integers(-1, k, (k, k)), table)
    result = SimpleNamespace(k=k, table=table, names=[f"e{i}" for i in range(k)],
                             comparison=SimpleNamespace(predicted=predicted))
    fig = table_figure(result)
    scale, small = small_texts(fig)
    matplotlib.pyplot.close(fig)
    assert scale == 1.0 and not small, (k, scale, small)
