"""Figures of :mod:`monoidlab.probing` (seaborn/matplotlib); every function returns the figure.

* :func:`contingency_heatmap`: true EC × cluster counts of a
  :class:`~monoidlab.probing.ClusterAgreement`, clusters ordered by a Hungarian matching so
  that the diagonal shows agreement.
* :func:`umap_figure`: a 2-D UMAP (umap-learn, fixed seed) of node embeddings coloured by true
  EC (categorical: the most frequent ECs in colour, the rest grey as "other"), by class and by
  level.
* :func:`associativity_histograms`: distributions of the bracketing distances (and of the
  identity check), trained against initialisation.

Example
-------
>>> import numpy as np
>>> from monoidlab.probing import ClusterAgreement
>>> est = ClusterAgreement("kmeans").fit(np.array([[0.0], [0.1], [5.0]]), [0, 0, 1])
>>> type(contingency_heatmap(est)).__name__
'Figure'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from monoidlab._checks import check_count, check_seed
from monoidlab.errors import InputError, MissingDependency
from monoidlab.viz._common import (
    COLOUR_LIMIT,
    LABEL_LIMIT,
    ec_names,
    label_note,
    label_step,
    legend_label,
    literal,
    set_ec_ticks,
)
from monoidlab.viz._common import pyplot as _plt

if TYPE_CHECKING:
    import pandas
    from matplotlib.figure import Figure

    from monoidlab.algebra.monoid import SyntacticMonoid
    from monoidlab.probing.clustering import ClusterAgreement
    from monoidlab.probing.embeddings import NodeEmbeddings

__all__ = ["contingency_heatmap", "matched_order", "nearest_neighbours", "umap_coordinates",
           "ec_colour_groups", "umap_figure", "associativity_histograms", "LEGEND_FONT"]

LEGEND_FONT = 10  # points: the UMAP legends (the figure is at most 11 inches wide: shown unscaled)


def matched_order(contingency: ArrayLike) -> tuple[np.ndarray, np.ndarray, int]:
    """Row and column orders that put a maximum matching of ECs to clusters on the diagonal.

    The matching is the Hungarian assignment (``scipy.optimize.linear_sum_assignment``) that
    maximises the nodes on matched (EC, cluster) cells. Matched rows come first in their
    original order, each followed on the diagonal by its cluster; unmatched rows and columns
    (more ECs than clusters or the reverse) follow, largest first. Returns ``(rows, cols,
    matched_nodes)``.

    >>> c = np.array([[0, 5, 1], [4, 0, 0]])
    >>> rows, cols, hit = matched_order(c)
    >>> c[np.ix_(rows, cols)].tolist(), hit
    ([[5, 0, 1], [0, 4, 0]], 9)
    """
    from scipy.optimize import linear_sum_assignment

    c = np.asarray(contingency)
    r, k = linear_sum_assignment(c, maximize=True)
    order = np.argsort(r)
    r, k = r[order], k[order]
    used_r, used_c = set(r.tolist()), set(k.tolist())
    rest_r = [i for i in np.argsort(-c.sum(1), kind="stable") if i not in used_r]
    rest_c = [j for j in np.argsort(-c.sum(0), kind="stable") if j not in used_c]
    rows = np.concatenate([r, rest_r]).astype(np.int64)
    cols = np.concatenate([k, rest_c]).astype(np.int64)
    return rows, cols, int(c[r, k].sum())


def contingency_heatmap(agreement: ClusterAgreement, monoid: SyntacticMonoid | None = None,
                        ax: Any = None, normalize: bool = True, title: str | None = None,
                        limit: int = LABEL_LIMIT) -> Figure:
    """EC × cluster heatmap of a fitted :class:`~monoidlab.probing.ClusterAgreement`, its
    clusters ordered by a Hungarian matching (:func:`matched_order`) so that the diagonal (thin
    frames) shows agreement; the title gives the share of nodes on the diagonal. HDBSCAN's
    noise is the last column.

    With ``normalize`` each EC row sums to 1 (colour) while cells show counts when few;
    rows are labelled by EC index and representative word when ``monoid`` is given (every k-th
    past ``limit`` ECs).
    """
    import seaborn as sns

    plt = _plt()
    c = np.asarray(agreement.contingency_, dtype=float)
    clusters = np.asarray(agreement.clusters_)
    real = np.flatnonzero(clusters >= 0)
    rows, sub, hit = matched_order(c[:, real])
    cols = np.concatenate([real[sub], np.flatnonzero(clusters < 0)])
    c = c[np.ix_(rows, cols)]
    ecs = np.asarray(agreement.classes_)[rows]
    data = c / np.maximum(c.sum(axis=1, keepdims=True), 1) if normalize else c
    fig = None
    if ax is None:
        cell = 0.42 if max(c.shape) <= 12 else 0.2
        fig, ax = plt.subplots(figsize=(float(np.clip(cell * c.shape[1] + 3.5, 5, 13)),
                                        float(np.clip(cell * c.shape[0] + 2, 3.5, 12))))
    small = c.size <= 150
    sns.heatmap(data, ax=ax, cmap="Blues", vmin=0, annot=c.astype(int) if small else False,
                fmt="d", annot_kws={"fontsize": 7}, xticklabels=False, yticklabels=False,
                cbar_kws={"label": "fraction of the EC" if normalize else "nodes",
                          "shrink": 0.6})
    from matplotlib.patches import Rectangle

    for i in range(min(len(rows), len(real))):  # frame the matched diagonal
        ax.add_patch(Rectangle((i, i), 1, 1, fill=False, edgecolor="0.35", lw=0.5))
    step = set_ec_ticks(ax, monoid, ecs, "y", limit)
    kstep = label_step(len(cols), limit)
    pos = np.arange(0, len(cols), kstep)
    ax.set_xticks(pos + 0.5)
    ax.set_xticklabels(["noise" if clusters[j] < 0 else str(int(clusters[j])) for j in cols[pos]],
                       rotation=90, fontsize=8 if len(pos) <= 20 else 6)
    ax.set_xlabel("cluster (ordered by a Hungarian matching to the ECs)")
    ax.set_ylabel("true EC")
    s = agreement.scores_
    head = title or _name(agreement)
    ax.set_title(f"{literal(head)}: ARI {s['ari']:.2f}, NMI {s['nmi']:.2f}, purity {s['purity']:.2f}; "
                 f"{hit / max(c.sum(), 1):.0%} of nodes on the matched diagonal"
                 f"{label_note(step)}", fontsize=9)
    return fig or ax.figure


def _name(agreement: ClusterAgreement) -> str:
    c = agreement.clusterer
    return c if isinstance(c, str) else type(c).__name__


def nearest_neighbours(X: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` nearest neighbours of every row of ``X`` among the rows (itself included, at
    distance 0), Euclidean and exact (scikit-learn): ``(indices, distances)``, nearest first.

    >>> idx, dist = nearest_neighbours(np.array([[0.0], [1.0], [3.0]]), 2)
    >>> idx.tolist(), dist.tolist()
    ([[0, 1], [1, 0], [2, 1]], [[0.0, 1.0], [0.0, 1.0], [0.0, 2.0]])
    """
    from sklearn.neighbors import NearestNeighbors

    X = np.asarray(X, dtype=np.float64)
    idx = NearestNeighbors(n_neighbors=k).fit(X).kneighbors(X, return_distance=False)
    # distances recomputed directly: scikit-learn's (|x|^2 + |y|^2 - 2xy) leaves a point ~1e-7
    # from itself, which UMAP would take as its nearest non-zero distance
    dist = np.sqrt(((X[:, None, :] - X[idx]) ** 2).sum(-1))
    return idx.astype(np.int32), dist.astype(np.float32)


def umap_coordinates(X: np.ndarray, seed: int = 0, n_neighbors: int = 15,
                     min_dist: float = 0.1) -> np.ndarray:
    """2-D UMAP coordinates of ``X`` (seeded; umap-learn is imported here). ``seed``: an
    integer in 0 .. 2^32 - 1 (what umap's ``random_state`` takes).

    The exact nearest neighbours come from :func:`nearest_neighbours` (scikit-learn), handed to
    UMAP as ``precomputed_knn``: umap-learn's own exact search is compiled by numba on its
    first call in every process (about 12 s of the ~25 s a first UMAP took; docs/report.md)."""
    seed = _umap_seed(seed)
    n_neighbors = check_count(n_neighbors, "n_neighbors", minimum=2)
    try:
        import umap
    except ImportError:  # pragma: no cover - umap-learn is a core dependency
        raise MissingDependency("the UMAP view needs umap-learn: pip install umap-learn") from None
    import warnings

    with warnings.catch_warnings():  # "n_jobs overridden by random_state" is expected
        warnings.simplefilter("ignore", UserWarning)
        k = min(n_neighbors, len(X) - 1)
        reducer = umap.UMAP(n_components=2, n_neighbors=k, min_dist=min_dist,
                            random_state=seed, precomputed_knn=(*nearest_neighbours(X, k), None))
        return reducer.fit_transform(np.asarray(X, dtype=np.float32))


def _umap_seed(seed: Any) -> int:
    seed = check_seed(seed, generator=False, none=False)
    if seed > 2**32 - 1:
        raise InputError(f"seed: an integer in 0 .. 2^32 - 1 for UMAP, got {seed}")
    return int(seed)


def ec_colour_groups(ecs: ArrayLike,
                     max_colours: int = COLOUR_LIMIT) -> tuple[np.ndarray, list[int]]:
    """The ``max_colours`` most frequent ECs keep their own colour, the rest are grouped as
    "other" (-1). Returns the grouped labels and the kept ECs, most frequent first (ties by
    index).

    >>> ec_colour_groups([5, 5, 5, 2, 2, 7], max_colours=2)
    (array([ 5,  5,  5,  2,  2, -1]), [5, 2])
    """
    ecs = np.asarray(ecs)
    vals, counts = np.unique(ecs, return_counts=True)
    kept = vals[np.lexsort((vals, -counts))][:max_colours]
    return np.where(np.isin(ecs, kept), ecs, -1), [int(e) for e in kept]


def _class_order(emb: NodeEmbeddings, present: set) -> list:
    """The classes present, in the language's own class order (not alphabetical: "zero, one,
    two" stays so); classes the language does not name (none, normally) last, sorted."""
    known = list(emb.monoid.automaton.classes) if emb.monoid is not None else []
    return [c for c in known if c in present] + sorted(present - set(known), key=str)


def umap_figure(emb: NodeEmbeddings, max_points: int | None = 2000, seed: int = 0,
                title: str | None = None, coords: np.ndarray | None = None,
                max_colours: int = COLOUR_LIMIT) -> Figure:
    """UMAP of node embeddings in up to three panels: coloured by true EC, by the class the EC
    maps to (when the language has 2..8 classes), and by level (or ⌊log2 prefix length⌋ for
    prefix models). At most ``max_points`` nodes (stratified by level, seeded). ``coords``
    reuses precomputed coordinates for ``emb`` as given (no subsampling).

    ECs are categorical: the ``max_colours`` most frequent ECs get distinct colours (tab10 /
    tab20) and a legend entry ("index: word", share of nodes); the rarer ones are drawn
    underneath in grey as "other" (their count and share in the legend and the panel title).
    """
    seed = _umap_seed(seed)
    max_colours = check_count(max_colours, "max_colours")
    if max_points is not None:
        max_points = check_count(max_points, "max_points")
    plt = _plt()
    if coords is None:
        emb = emb.subsample(max_points, "level", seed)
        coords = umap_coordinates(emb.X, seed)
    meta = emb.meta
    n = len(meta)
    grouped, kept = ec_colour_groups(meta["ec"].to_numpy(), max_colours)
    n_ecs = int(meta["ec"].nunique())
    classes = meta["class_name"].to_numpy()
    class_names = _class_order(emb, set(classes.tolist()))
    show_class = 2 <= len(class_names) <= 8
    panels = 3 if show_class else 2
    # 11 inches at most: the report shows it unscaled at 100 dpi (every label >= 9 px)
    fig, axes = plt.subplots(1, panels, figsize=(min(11.0, 5.5 * panels), 5.6))
    pal = plt.get_cmap("tab10" if len(kept) <= 10 else "tab20")
    names = ec_names(emb.monoid, kept)
    ax = axes[0]
    other = grouped < 0
    if other.any():
        ax.scatter(coords[other, 0], coords[other, 1], s=5, color="0.78", linewidths=0,
                   label=f"other: {n_ecs - len(kept)} ECs ({other.mean():.0%})")
    for i, (e, name) in enumerate(zip(kept, names)):
        on = grouped == e
        ax.scatter(coords[on, 0], coords[on, 1], s=7, color=pal(i), linewidths=0,
                   label=f"{name} ({on.mean():.0%})")  # ec_names: literal already
    ax.set_title(f"true EC: the {len(kept)} most frequent of {n_ecs}"
                 + ("" if not other.any() else f"; {n_ecs - len(kept)} rarer ECs grey"),
                 fontsize=9)
    j = 1
    if show_class:
        cpal = plt.get_cmap("Dark2")  # not tab10: a class is not the EC of the same colour
        for i, c in enumerate(class_names):
            on = classes == c
            axes[j].scatter(coords[on, 0], coords[on, 1], s=6, color=cpal(i % 8), linewidths=0,
                            label=legend_label(f"{c} ({on.mean():.0%})"))
        axes[j].set_title("class the EC maps to", fontsize=9)
        j += 1
    level = meta["level"].to_numpy()
    levels = np.unique(level)
    vpal = plt.get_cmap("viridis")
    for i, v in enumerate(levels):
        on = level == v
        axes[j].scatter(coords[on, 0], coords[on, 1], s=6, linewidths=0,
                        color=vpal(i / max(1, len(levels) - 1)), label=str(int(v)))
    axes[j].set_title("level (height above the leaves)" if emb.kind == "tree"
                      else "⌊log2 prefix length⌋", fontsize=9)
    for ax in axes:
        ax.set_xticks([])
        ax.set_yticks([])
        handles = ax.get_legend_handles_labels()[0]
        ax.legend(fontsize=LEGEND_FONT, markerscale=2.5, loc="upper center",
                  bbox_to_anchor=(0.5, -0.01), ncol=2 if len(handles) > 4 else len(handles),
                  frameon=False, handletextpad=0.2, columnspacing=0.8)
    fig.suptitle(literal(title or f"UMAP of {n} node embeddings (seed {seed})"), fontsize=10)
    fig.tight_layout()
    return fig


def associativity_histograms(trained: pandas.DataFrame, init: pandas.DataFrame | None = None,
                             title: str | None = None) -> Figure:
    """Histograms of the cosine distance and relative L2 between (x⊙y)⊙z and x⊙(y⊙z), and of
    the identity check (x⊙pad vs x) when present; ``trained`` / ``init`` are the frames of
    :func:`monoidlab.probing.associativity` (the column ``cos`` holds the cosine distance).

    One row of panels per model (trained, then initialisation), sharing each column's x axis
    so that the two are read on one scale, each with its own density axis: a trained model's
    spike near 0 (density ~1000 on parity) would flatten the initial distribution on a shared
    one. Where the frames hold the distances between unrelated roots (``cos_unrelated``,
    ``rel_l2_unrelated``), their median is a dashed line: the scale a bracketing distance is
    read against."""
    import seaborn as sns

    plt = _plt()
    frames = {"trained": trained} if init is None else {"trained": trained, "init": init}
    cols = [("cos", "cosine distance, (x⊙y)⊙z vs x⊙(y⊙z)"),
            ("rel_l2", "relative L2, (x⊙y)⊙z vs x⊙(y⊙z)")]
    if "id_right_rel" in trained:
        cols.append(("id_right_rel", "relative L2, x⊙pad vs x"))
    fig, axes = plt.subplots(len(frames), len(cols), figsize=(5 * len(cols), 3.2 * len(frames)),
                             sharex="col", squeeze=False)
    colours = dict(zip(frames, sns.color_palette(n_colors=len(frames))))
    names = {"trained": "trained", "init": "at initialisation"}
    for r, (k, d) in enumerate(frames.items()):
        for ax, (c, label) in zip(axes[r], cols):
            if c not in d:
                ax.axis("off")
                continue
            sns.histplot(x=np.asarray(d[c], dtype=float), ax=ax, bins=30, element="step",
                         stat="density", color=colours[k])
            if f"{c}_unrelated" in d:
                ax.axvline(float(np.median(d[f"{c}_unrelated"])), color=colours[k], ls="--",
                           lw=1.1)
            ax.set_title(f"{names[k]}: median {float(np.median(d[c])):.3g}", fontsize=9)
            ax.set_xlabel(label if r == len(frames) - 1 else "")
    if any("cos_unrelated" in d for d in frames.values()):
        axes[0, 0].text(0.98, 0.95, "dashed: median distance\nbetween unrelated roots",
                        transform=axes[0, 0].transAxes, ha="right", va="top", fontsize=7)
    fig.suptitle(literal(title or f"associativity on {len(trained)} held-out triples"))
    fig.tight_layout()
    return fig
