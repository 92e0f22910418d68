"""Probing figures as a reader meets them: the UMAP's class legend in the language's class order
and large enough to read, the associativity histograms one model per panel (a trained spike
cannot flatten the initial distribution), and the exact nearest neighbours handed to UMAP
against a brute-force reference. No UMAP is fitted here (coordinates are given)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import monoidlab as ml
from monoidlab.probing.embeddings import NodeEmbeddings
from monoidlab.viz import probing as viz_probing


@pytest.fixture(scope="module")
def counter():
    """Classes named out of alphabetical order: zero, one, two, three."""
    return ml.Automaton(alphabet=["a", "b"], delta=[[1, 0], [2, 0], [3, 1], [3, 2]], start=0,
                        output=[0, 1, 2, 3], classes=["zero", "one", "two", "three"],
                        name="counter")


def _embeddings(lang, n=200, seed=0):
    m = lang.monoid()
    rng = np.random.default_rng(seed)
    ecs = rng.integers(0, m.size, n)
    cls = np.asarray(m.outputs)[ecs]
    meta = pd.DataFrame({"ec": ecs, "cls": cls,
                         "class_name": [lang.classes[c] for c in cls],
                         "level": rng.integers(1, 4, n)})
    return NodeEmbeddings(rng.normal(size=(n, 3)), meta, "tree", "balanced", m), rng


def test_umap_class_legend_follows_the_class_order_and_is_readable(counter):
    emb, rng = _embeddings(counter)
    fig = viz_probing.umap_figure(emb, coords=rng.normal(size=(len(emb.meta), 2)))
    legend = fig.axes[1].get_legend()
    names = [t.get_text().split(" (")[0] for t in legend.get_texts()]
    present = set(emb.meta["class_name"])
    assert names == [c for c in counter.classes if c in present]
    assert names != sorted(names)  # alphabetical would be "one, three, two, zero"
    for ax in fig.axes:
        assert min(t.get_fontsize() for t in ax.get_legend().get_texts()) >= 9


def _histogram_heights(ax):
    """The densities a seaborn step histogram drew (its filled polygon's top edge)."""
    ys = np.concatenate([path.vertices[:, 1] for c in ax.collections for path in c.get_paths()])
    return ys.max()


def test_associativity_histograms_give_each_model_its_own_panel_and_scale():
    rng = np.random.default_rng(0)
    trained = pd.DataFrame({"cos": rng.random(200) * 1e-3, "rel_l2": rng.random(200) * 1e-3})
    init = pd.DataFrame({"cos": rng.random(200), "rel_l2": rng.random(200)})
    fig = viz_probing.associativity_histograms(trained, init)
    axes = np.asarray(fig.axes).reshape(2, 2)
    for row, frame in zip(axes, (trained, init)):
        for ax, col in zip(row, ("cos", "rel_l2")):
            top = _histogram_heights(ax)
            # the panel's density axis fits its own histogram: the initial one is not a flat
            # line under a trained spike ~1000 times higher
            assert ax.get_ylim()[1] == pytest.approx(top * 1.05, rel=0.05)
            counts, edges = np.histogram(frame[col], bins=30, density=True)
            assert top == pytest.approx(counts.max(), rel=1e-6)
    assert axes[0, 0].get_shared_x_axes().joined(axes[0, 0], axes[1, 0])  # one x scale
    assert axes[0, 0].get_title().startswith("trained") and \
        axes[1, 0].get_title().startswith("at initialisation")


def test_nearest_neighbours_match_a_brute_force_reference():
    rng = np.random.default_rng(1)
    for n, d, k in ((30, 2, 5), (200, 8, 15), (64, 16, 10)):
        X = rng.normal(size=(n, d)).astype(np.float32)
        idx, dist = viz_probing.nearest_neighbours(X, k)
        full = np.sqrt(((X[:, None, :].astype(np.float64) - X[None]) ** 2).sum(-1))
        ref = np.argsort(full, axis=1, kind="stable")[:, :k]  # reference: sort every row
        np.testing.assert_array_equal(idx, ref)
        np.testing.assert_allclose(dist, np.take_along_axis(full, ref, 1), atol=1e-5)
        assert (idx[:, 0] == np.arange(n)).all() and (dist[:, 0] == 0).all()
