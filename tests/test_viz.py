"""Tests for the figures of monoidlab.viz that the probing tests do not cover: EC tick labels on
the heatmaps (every EC up to the limit, every k-th past it, said in the title), the zero of the
multiplication table, and the one-line reprs of Coverage / CoverageGap."""

import numpy as np
import pytest

import monoidlab as ml
from monoidlab.coverage.exact import CoverageGap, exact_coverage
from monoidlab.viz import (
    coverage_heatmap,
    gap_heatmaps,
    kind_accuracy_figure,
    multiplication_heatmap,
)
from monoidlab.viz._common import (
    LABEL_LIMIT,
    TICK_FONT,
    label_step,
    texts_outside,
    trim,
    zero_element,
)


def _ticks(ax, axis="y"):
    labels = ax.get_yticklabels() if axis == "y" else ax.get_xticklabels()
    return [t.get_text() for t in labels]


@pytest.fixture(scope="module")
def dyck4():
    return ml.load_language("dyck-4")


def test_label_step_keeps_at_most_the_limit():
    for n in range(1, 300):
        k = label_step(n)
        assert len(range(0, n, k)) <= LABEL_LIMIT and (k == 1 or len(range(0, n, k - 1)) > LABEL_LIMIT)


def test_multiplication_table_small_monoid_has_words_everywhere():
    m = ml.load_language("tomita-5").monoid()
    fig = multiplication_heatmap(m)
    ax = fig.axes[0]
    words = m.labels()
    assert _ticks(ax, "x") == words and _ticks(ax, "y") == words
    cells = [t.get_text() for t in ax.texts]
    assert cells == [words[m.table[i, j]] for i in range(m.size) for j in range(m.size)]
    assert "every" not in ax.get_title()


def test_multiplication_table_large_monoid_labels_every_kth_and_greys_the_zero(dyck4):
    m = dyck4.monoid()  # 56 ECs: every 2nd labelled
    ax = multiplication_heatmap(m).axes[0]
    words = m.labels()
    assert _ticks(ax, "y") == [f"{i}: {words[i]}" for i in range(0, m.size, 2)]
    assert _ticks(ax, "x") == _ticks(ax, "y")
    z = zero_element(m)
    assert z is not None and (m.table[z] == z).all() and (m.table[:, z] == z).all()
    title = ax.get_title()
    assert "every 2nd EC labelled" in title and f"grey: the zero '{words[z]}'" in title
    data = np.ma.getdata(ax.collections[0].get_array()).reshape(m.size, m.size)
    assert np.isnan(data[m.table == z]).all()  # the zero is masked (grey)
    np.testing.assert_array_equal(data[m.table != z], m.word_lengths[m.table[m.table != z]])
    assert zero_element(ml.load_language("parity").monoid()) is None


def test_coverage_heatmaps_carry_ec_labels():
    lang = ml.load_language("dyck-2")
    cov = exact_coverage(lang, range(9, 13))
    ax = coverage_heatmap(cov).axes[0]
    words = cov.monoid.labels()
    # rows and columns the same ECs: every EC that holds a composition on either side
    used = np.flatnonzero(cov.support.any(axis=1) | cov.support.any(axis=0))
    assert not cov.support.any(axis=1).all() or not cov.support.any(axis=0).all()
    assert _ticks(ax, "y") == [f"{i}: {words[i]}" for i in used]
    assert _ticks(ax, "x") == _ticks(ax, "y")
    big = ml.load_language("dyck-6")
    gap = CoverageGap(exact_coverage(big, range(1, 13)), exact_coverage(big, range(41, 49)))
    fig = gap_heatmaps(gap)
    for ax in fig.axes[:3]:  # the three heatmaps (their colour bars come after)
        ticks = _ticks(ax, "y")
        assert 0 < len(ticks) <= LABEL_LIMIT and all(": " in t for t in ticks)
        assert "EC labelled" in ax.get_title()


def test_coverage_reprs_summarise(dyck4):
    tr, te = exact_coverage(dyck4, range(1, 21)), exact_coverage(dyck4, range(41, 61))
    r = repr(tr)
    assert r.startswith("Coverage(dyck-4, balanced schedule, lengths 1:20, exact balanced; ")
    assert "array" not in r and len(r) < 160 and f"{int(tr.support.sum())} of 3136" in r
    g = CoverageGap(tr, te)
    s = g.summary()
    assert repr(g) == (f"CoverageGap(dyck-4, balanced schedule, train 1:20 vs test 41:60; "
                       f"{s['needed']} compositions needed at test, {s['covered']} covered, "
                       f"{s['missing']} missing)")
    sampled = ml.sample(dyck4, range(5, 9), 50, seed=0)
    from monoidlab.coverage.exact import sampled_coverage

    assert "sampled, 50 strings" in repr(sampled_coverage(sampled))


def test_trim_keeps_the_same_ecs_on_both_axes():
    rng = np.random.default_rng(0)
    for _ in range(50):
        support = rng.random((9, 9)) < 0.08
        rows, cols = trim(support)
        want = [i for i in range(9) if support[i].any() or support[:, i].any()]  # reference
        assert rows.tolist() == cols.tolist() == want


def test_large_heatmaps_label_fewer_ecs_large_enough_and_apart():
    """141 ECs (dyck-6): every tick label at TICK_FONT points or more, and no two labels of an
    axis overlap as the figure's renderer draws them."""
    import matplotlib.pyplot as plt

    big = ml.load_language("dyck-6")
    gap = CoverageGap(exact_coverage(big, range(1, 13)), exact_coverage(big, range(41, 49)))
    for fig in (gap_heatmaps(gap), multiplication_heatmap(big.monoid())):
        fig.canvas.draw()
        r = fig.canvas.get_renderer()
        for ax in [a for a in fig.axes if a.get_xlabel()]:  # not the colour bars
            for labels, axis in ((ax.get_xticklabels(), 0), (ax.get_yticklabels(), 1)):
                labels = [t for t in labels if t.get_text()]
                assert labels and min(t.get_fontsize() for t in labels) >= TICK_FONT
                boxes = sorted((t.get_window_extent(r) for t in labels),
                               key=lambda b: (b.x0, b.y0)[axis])
                gaps = [(b.x0, b.y0)[axis] - (a.x1, a.y1)[axis] for a, b in zip(boxes, boxes[1:])]
                assert min(gaps) > 0, (ax.get_title(), axis, min(gaps))
        plt.close(fig)


def test_multiplication_table_axes_name_no_letter_of_the_alphabet():
    import re

    lang = ml.Automaton.from_regex("(a|b|c)*a", ["a", "b", "c"], name="ends")
    ax = multiplication_heatmap(lang.monoid()).axes[0]
    for text in (ax.get_xlabel(), ax.get_ylabel(), re.sub(r"'[^']*'", "", ax.get_title())):
        assert set(re.findall(r"\b\w\b", text)) & set(lang.alphabet) == set(), text
    assert "left factor" in ax.get_ylabel() and "right factor" in ax.get_xlabel()


def test_accuracy_figure_draws_every_baseline_and_keeps_its_title():
    from monoidlab.evaluation import Evaluation

    name = "a-language-with-a-rather-long-name-" * 3
    acc = {L: 0.8 for L in range(41, 60)}
    ev = Evaluation(name, ("paper", "near_miss"), 0.99, 8,
                    accuracy={"paper": acc, "near_miss": dict(acc)},
                    baselines={"majority": {k: {L: 0.5 for L in acc} for k in ("paper", "near_miss")},
                               "count_only": {k: {L: 0.97 for L in acc}
                                              for k in ("paper", "near_miss")}})
    fig = kind_accuracy_figure(ev)
    assert texts_outside(fig) == []
    assert name in fig._suptitle.get_text().replace("\n", "")  # whole, wrapped, not cut
    for ax, kind in zip(fig.axes, ev.kinds):
        lines = {ln.get_label(): ln for ln in ax.get_lines()}
        drawn = lines[f"{kind}: count_only baseline"]
        assert list(drawn.get_ydata()) == [0.97] * len(acc)
        assert f"{kind}: majority baseline" in lines and "count_only 0.970" in ax.get_title()


@pytest.mark.parametrize("name", ["_common", "algebra", "coverage", "probing", "training"])
def test_doctests(name):
    import doctest
    import importlib

    mod = importlib.import_module(f"monoidlab.viz.{name}")
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert res.attempted > 0 and res.failed == 0
