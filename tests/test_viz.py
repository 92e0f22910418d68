"""Tests for the figures of monoidlab.viz that the probing tests do not cover: EC tick labels on
the heatmaps (every EC up to the limit, every k-th past it, said in the title), the zero of the
multiplication table, and the one-line reprs of Coverage / CoverageGap."""

import numpy as np
import pytest

import monoidlab as ml
from monoidlab.coverage import CoverageGap, exact_coverage
from monoidlab.viz import coverage_heatmap, gap_heatmaps, multiplication_heatmap
from monoidlab.viz._common import LABEL_LIMIT, label_step, zero_element


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
    rows = np.flatnonzero(cov.support.any(axis=1))
    cols = np.flatnonzero(cov.support.any(axis=0))
    assert _ticks(ax, "y") == [f"{i}: {words[i]}" for i in rows]
    assert _ticks(ax, "x") == [f"{i}: {words[i]}" for i in cols]
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
    from monoidlab.coverage import sampled_coverage

    assert "sampled, 50 strings" in repr(sampled_coverage(sampled))


@pytest.mark.parametrize("name", ["_common", "algebra", "coverage", "probing", "training"])
def test_doctests(name):
    import doctest
    import importlib

    mod = importlib.import_module(f"monoidlab.viz.{name}")
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert res.attempted > 0 and res.failed == 0
