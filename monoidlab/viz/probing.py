"""Figures of :mod:`monoidlab.probing` (seaborn/matplotlib); every function returns the figure.

* :func:`contingency_heatmap`: true EC × cluster counts of a :class:`~monoidlab.probing.ClusterAgreement`.
* :func:`umap_figure`: a 2-D UMAP (umap-learn, fixed seed) of node embeddings coloured by true
  EC and by level.
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

from monoidlab.viz._common import LABEL_LIMIT
from monoidlab.viz._common import pyplot as _plt

if TYPE_CHECKING:
    import pandas
    from matplotlib.figure import Figure

    from monoidlab.monoid import SyntacticMonoid
    from monoidlab.probing.clustering import ClusterAgreement
    from monoidlab.probing.embeddings import NodeEmbeddings

__all__ = ["contingency_heatmap", "umap_coordinates", "umap_figure", "associativity_histograms"]


def _ec_labels(monoid: SyntacticMonoid | None, ecs: np.ndarray) -> list[str] | bool:
    if len(ecs) > LABEL_LIMIT:
        return False
    if monoid is None:
        return [str(int(e)) for e in ecs]
    words = monoid.labels()
    return [f"{int(e)}: {words[int(e)]}" for e in ecs]


def contingency_heatmap(agreement: ClusterAgreement, monoid: SyntacticMonoid | None = None,
                        ax: Any = None, normalize: bool = True,
                        title: str | None = None) -> Figure:
    """EC × cluster heatmap of a fitted :class:`~monoidlab.probing.ClusterAgreement`.

    With ``normalize`` each EC row sums to 1 (colour) while cells show counts when few;
    rows are labelled by EC index and representative word when ``monoid`` is given.
    """
    import seaborn as sns

    plt = _plt()
    c = np.asarray(agreement.contingency_, dtype=float)
    data = c / np.maximum(c.sum(axis=1, keepdims=True), 1) if normalize else c
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(max(4.5, 0.45 * c.shape[1] + 2.5),
                                        max(3.5, 0.35 * c.shape[0] + 1.5)))
    small = c.size <= 150
    cols = ["noise" if k < 0 else str(int(k)) for k in agreement.clusters_]
    sns.heatmap(data, ax=ax, cmap="Blues", vmin=0, annot=c.astype(int) if small else False,
                fmt="d", annot_kws={"fontsize": 7}, xticklabels=cols,
                yticklabels=_ec_labels(monoid, agreement.classes_),
                cbar_kws={"label": "fraction of the EC" if normalize else "nodes"})
    ax.set_xlabel("cluster")
    ax.set_ylabel("true EC")
    s = agreement.scores_
    ax.set_title(title or f"{_name(agreement)}: ARI {s['ari']:.2f}, NMI {s['nmi']:.2f}, "
                 f"purity {s['purity']:.2f}", fontsize=9)
    return fig or ax.figure


def _name(agreement: ClusterAgreement) -> str:
    c = agreement.clusterer
    return c if isinstance(c, str) else type(c).__name__


def umap_coordinates(X: np.ndarray, random_state: int = 0, n_neighbors: int = 15,
                     min_dist: float = 0.1) -> np.ndarray:
    """2-D UMAP coordinates of ``X`` (seeded; umap-learn is imported here)."""
    try:
        import umap
    except ImportError:  # pragma: no cover - umap-learn is a core dependency
        raise ImportError("the UMAP view needs umap-learn: pip install umap-learn") from None
    import warnings

    with warnings.catch_warnings():  # "n_jobs overridden by random_state" is expected
        warnings.simplefilter("ignore", UserWarning)
        reducer = umap.UMAP(n_components=2, n_neighbors=min(n_neighbors, len(X) - 1),
                            min_dist=min_dist, random_state=random_state)
        return reducer.fit_transform(np.asarray(X, dtype=np.float32))


def umap_figure(emb: NodeEmbeddings, max_points: int | None = 2000, random_state: int = 0,
                title: str | None = None, coords: np.ndarray | None = None) -> Figure:
    """UMAP of node embeddings, two panels: coloured by true EC and by level (or ⌊log2 prefix
    length⌋ for prefix models). At most ``max_points`` nodes (stratified by level, seeded).
    ``coords`` reuses precomputed coordinates for ``emb`` as given (no subsampling)."""
    import seaborn as sns

    plt = _plt()
    if coords is None:
        emb = emb.subsample(max_points, "level", random_state)
        coords = umap_coordinates(emb.X, random_state)
    meta = emb.meta
    fig, axes = plt.subplots(1, 2, figsize=(12, 5))
    words = emb.monoid.labels()
    ecs = np.sort(meta["ec"].unique())
    ec_lab = [f"{e}: {words[e]}" if len(ecs) <= LABEL_LIMIT else str(e) for e in ecs]
    name = dict(zip(ecs, ec_lab))
    pal = "tab10" if len(ecs) <= 10 else "tab20" if len(ecs) <= 20 else "viridis"
    sns.scatterplot(x=coords[:, 0], y=coords[:, 1], hue=meta["ec"].map(name).to_numpy(),
                    hue_order=ec_lab, palette=pal, s=8, linewidth=0, ax=axes[0],
                    legend=len(ecs) <= 20)
    axes[0].set_title("coloured by true EC")
    sns.scatterplot(x=coords[:, 0], y=coords[:, 1], hue=meta["level"].to_numpy(), palette="viridis",
                    s=8, linewidth=0, ax=axes[1])
    axes[1].set_title("coloured by level" if emb.kind == "tree" else "coloured by ⌊log2 prefix⌋")
    for ax in axes:
        ax.set_xticks([])
        ax.set_yticks([])
        if ax.get_legend():
            ax.legend(fontsize=7, markerscale=2, loc="best")
    fig.suptitle(title or f"UMAP of {len(meta)} node embeddings (seed {random_state})")
    fig.tight_layout()
    return fig


def associativity_histograms(trained: pandas.DataFrame, init: pandas.DataFrame | None = None,
                             title: str | None = None) -> Figure:
    """Histograms of the cosine distance and relative L2 between (x⊙y)⊙z and x⊙(y⊙z), and of
    the identity check (x⊙pad vs x) when present; ``trained`` / ``init`` are the frames of
    :func:`monoidlab.probing.associativity`."""
    import pandas as pd
    import seaborn as sns

    plt = _plt()
    frames = {"trained": trained} if init is None else {"trained": trained, "init": init}
    cols = [("cos", "cosine distance, (x⊙y)⊙z vs x⊙(y⊙z)"),
            ("rel_l2", "relative L2, (x⊙y)⊙z vs x⊙(y⊙z)")]
    if "id_right_rel" in trained:
        cols.append(("id_right_rel", "relative L2, x⊙pad vs x"))
    fig, axes = plt.subplots(1, len(cols), figsize=(5 * len(cols), 4))
    long = pd.concat([pd.DataFrame({c: d[c] for c, _ in cols}).assign(model=k)
                      for k, d in frames.items()], ignore_index=True)
    for ax, (c, label) in zip(np.atleast_1d(axes), cols):
        sns.histplot(long, x=c, hue="model", ax=ax, bins=30, element="step", stat="density",
                     common_norm=False, common_bins=False)
        ax.set_xlabel(label)
    fig.suptitle(title or f"associativity on {len(trained)} held-out triples")
    fig.tight_layout()
    return fig
