"""Do node embeddings cluster by the true ECs? Clustering agreement and a linear probe.

* :class:`ClusterAgreement` (any sklearn clusterer; KMeans with k = #ECs present by default)
  and :func:`cluster_agreement` (KMeans, agglomerative, HDBSCAN; overall and per level);
  :func:`agreement_scores` (ARI, NMI, homogeneity, completeness, V-measure, purity);
* :func:`linear_probe`: logistic regression fit on part of the held-out strings' nodes,
  scored on the others.

Example
-------
>>> agreement_scores([0, 0, 1, 1], [5, 5, 3, 3])["ari"]
1.0
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator

from monoidlab._checks import scalar_args
from monoidlab.errors import InputError
from monoidlab.probing.embeddings import NodeEmbeddings

if TYPE_CHECKING:
    import pandas

__all__ = ["METRICS", "CLUSTERERS", "purity_score", "agreement_scores", "chance_scores",
           "ClusterAgreement", "Agreement", "cluster_agreement", "linear_probe"]

METRICS = ("ari", "nmi", "homogeneity", "completeness", "v_measure", "purity")
CLUSTERERS = ("kmeans", "agglomerative", "hdbscan")


# --------------------------------------------------------------------------- cluster agreement


def _paired(labels_true: ArrayLike, labels_pred: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Two label vectors of one non-empty set of points (one label per point each)."""
    t, p = np.asarray(labels_true), np.asarray(labels_pred)
    if t.ndim != 1 or t.shape != p.shape or not len(t):
        raise InputError(f"labels_true and labels_pred: one label per point, the same non-empty "
                         f"number of each, got shapes {t.shape} and {p.shape}")
    return t, p


def purity_score(labels_true: ArrayLike, labels_pred: ArrayLike) -> float:
    """Fraction of points whose cluster's majority EC is their own EC.

    >>> purity_score([0, 0, 1, 1], [0, 0, 0, 1])
    0.75
    """
    from sklearn.metrics.cluster import contingency_matrix

    labels_true, labels_pred = _paired(labels_true, labels_pred)
    c = contingency_matrix(labels_true, labels_pred)
    return float(c.max(axis=0).sum() / c.sum())


def agreement_scores(labels_true: ArrayLike, labels_pred: ArrayLike) -> dict[str, float]:
    """ARI, NMI, homogeneity, completeness, V-measure and purity of a clustering against the
    true ECs (HDBSCAN's noise label -1 counts as one more cluster)."""
    from sklearn import metrics

    t, p = _paired(labels_true, labels_pred)
    h, c, v = metrics.homogeneity_completeness_v_measure(t, p)
    return {"ari": float(metrics.adjusted_rand_score(t, p)),
            "nmi": float(metrics.normalized_mutual_info_score(t, p)),
            "homogeneity": float(h), "completeness": float(c), "v_measure": float(v),
            "purity": purity_score(t, p)}


def _make_clusterer(clusterer: Any, k: int | None, n: int, seed: int | None) -> Any:
    from sklearn.base import clone

    if isinstance(clusterer, str):
        from sklearn.cluster import HDBSCAN, AgglomerativeClustering, KMeans

        if clusterer == "kmeans":
            return KMeans(n_clusters=k, n_init=10, random_state=seed)
        if clusterer == "agglomerative":
            return AgglomerativeClustering(n_clusters=k)
        if clusterer == "hdbscan":
            return HDBSCAN(min_cluster_size=max(5, n // 50), copy=True)
        raise InputError(f"unknown clusterer {clusterer!r}; use one of {CLUSTERERS} or an "
                         "sklearn estimator")
    est = clone(clusterer)
    if k is not None:
        names = [p for p in est.get_params() if p == "n_clusters" or p.endswith("__n_clusters")]
        if names:
            est.set_params(**{names[-1]: k})
    return est


@scalar_args
def chance_scores(labels_true: ArrayLike, labels_pred: ArrayLike, n_shuffles: int = 3,
                  seed: int | None = 0) -> dict[str, float]:
    """The scores of :func:`agreement_scores` for the same clusters shuffled across the points
    (same cluster sizes, no relation to the ECs), averaged over ``n_shuffles`` seeded
    permutations: the chance reference every agreement is read against (ARI ≈ 0, NMI and
    purity above 0 by the cluster sizes alone).

    >>> round(chance_scores([0] * 50 + [1] * 50, [0] * 50 + [1] * 50)["ari"], 1)
    0.0
    """
    rng = np.random.default_rng(seed)
    labels_true, p = _paired(labels_true, labels_pred)
    runs = [agreement_scores(labels_true, rng.permutation(p)) for _ in range(n_shuffles)]
    return {k: float(np.mean([r[k] for r in runs])) for k in METRICS}


class ClusterAgreement(BaseEstimator):
    """Cluster embeddings and compare the clusters with the true ECs (sklearn conventions).

    Parameters
    ----------
    clusterer : "kmeans", "agglomerative", "hdbscan" or any unfitted sklearn clusterer (or
        pipeline) with ``fit_predict``; it is cloned, never modified.
    n_clusters : "n_ecs" (the number of distinct ECs in ``y``, set on the clusterer's
        ``n_clusters`` parameter when it has one), an int, or None (leave the clusterer as is).
    seed : seed of KMeans (sklearn's random_state).

    Attributes after ``fit(X, y)``: ``labels_``, ``clusterer_``, ``scores_`` (see
    :func:`agreement_scores`), ``chance_scores_`` (the same clusters shuffled across the
    points, :func:`chance_scores`), ``classes_`` (ECs present), ``clusters_``, ``contingency_``
    (``classes_`` × ``clusters_`` counts), ``n_clusters_`` (noise excluded),
    ``noise_fraction_``.

    >>> import numpy as np
    >>> X = np.array([[0.0], [0.1], [5.0], [5.1]])
    >>> ClusterAgreement("kmeans").fit(X, [3, 3, 7, 7]).scores_["nmi"]
    1.0
    """

    def __init__(self, clusterer: Any = "kmeans", n_clusters: int | str | None = "n_ecs",
                 seed: int | None = 0) -> None:
        from monoidlab._checks import check_seed

        check_seed(seed, generator=False)  # kept as given (sklearn's get_params contract)
        self.clusterer = clusterer
        self.n_clusters = n_clusters
        self.seed = seed

    def fit(self, X: ArrayLike, y: ArrayLike) -> ClusterAgreement:
        from sklearn.metrics.cluster import contingency_matrix

        X, y = np.asarray(X, dtype=np.float64), np.asarray(y)
        if X.ndim != 2 or len(X) != len(y):
            raise InputError(f"expected X (n, d) and y (n,), got {X.shape} and {y.shape}")
        self.classes_ = np.unique(y)
        k = len(self.classes_) if self.n_clusters == "n_ecs" else self.n_clusters
        k = None if k is None else min(int(k), len(X))
        self.clusterer_ = _make_clusterer(self.clusterer, k, len(X), self.seed)
        from threadpoolctl import threadpool_limits

        # small fits run single-threaded: on a busy machine OpenMP start-up costs more than
        # it saves (KMeans on 500 points: 0.1 s per init with 2 threads under load)
        with threadpool_limits(limits=1 if len(X) <= 20_000 else None):
            self.labels_ = np.asarray(self.clusterer_.fit_predict(X))
        self.clusters_ = np.unique(self.labels_)
        self.contingency_ = contingency_matrix(y, self.labels_)
        self.n_clusters_ = int((self.clusters_ >= 0).sum())
        self.noise_fraction_ = float((self.labels_ < 0).mean())
        self.scores_ = agreement_scores(y, self.labels_)
        self.chance_scores_ = chance_scores(y, self.labels_, seed=self.seed)
        return self

    def fit_predict(self, X: ArrayLike, y: ArrayLike) -> np.ndarray:
        return self.fit(X, y).labels_

    def score(self, X: ArrayLike, y: ArrayLike) -> float:
        """ARI of the clusters of ``X`` (``predict`` when the clusterer has it, else a refit of
        a clone) against ``y``."""
        from sklearn.metrics import adjusted_rand_score

        pred = (self.clusterer_.predict(X) if hasattr(self.clusterer_, "predict") else
                ClusterAgreement(self.clusterer, self.n_clusters, self.seed)
                .fit(X, y).labels_)
        return float(adjusted_rand_score(y, pred))


@dataclass
class Agreement:
    """:func:`cluster_agreement`'s result: one table row per (method, level) and the fitted
    overall :class:`ClusterAgreement` of each method."""

    table: pandas.DataFrame
    fitted: dict[str, ClusterAgreement]


@scalar_args
def cluster_agreement(emb: NodeEmbeddings, clusterers: Any = CLUSTERERS,
                      by: str | None = "level", max_nodes: int | None = 3000,
                      min_group: int = 20, seed: int | None = 0) -> Agreement:
    """Cluster agreement overall (``level`` = "all") and per ``by`` group (each group clustered
    on its own, k = #ECs present in it); groups with fewer than ``min_group`` nodes or a single
    EC are skipped. At most ``max_nodes`` nodes per fit (stratified by ``by``, seeded). Each
    row has the scores and their chance reference ``chance_<metric>`` (:func:`chance_scores`)."""
    import pandas as pd

    if isinstance(clusterers, str) or not isinstance(clusterers, list | tuple):
        clusterers = [clusterers]
    groups: list[tuple[str | int, NodeEmbeddings]] = [
        ("all", emb.subsample(max_nodes, by, seed))]
    if by is not None:
        for g in sorted(emb.meta[by].unique()):
            sub = emb.subset(emb.meta[by].to_numpy() == g)
            if len(sub) >= min_group and sub.meta["ec"].nunique() > 1:
                groups.append((int(g), sub.subsample(max_nodes, None, seed)))
    rows, fitted = [], {}
    for c in clusterers:
        name = c if isinstance(c, str) else type(c).__name__
        for g, sub in groups:
            est = ClusterAgreement(c, seed=seed).fit(sub.X, sub.ec)
            if g == "all":
                fitted[name] = est
            rows.append({"method": name, by or "group": g, "n": len(sub),
                         "n_ecs": len(est.classes_), "n_clusters": est.n_clusters_,
                         **est.scores_, "noise": est.noise_fraction_,
                         **{f"chance_{k}": v for k, v in est.chance_scores_.items()}})
    return Agreement(pd.DataFrame(rows), fitted)


# --------------------------------------------------------------------------- linear probe


@scalar_args
def linear_probe(emb: NodeEmbeddings, test_size: float = 0.5, max_nodes: int | None = 20000,
                 C: float = 1.0, seed: int | None = 0) -> dict[str, Any]:
    """Logistic regression (after standardisation) predicting the EC from the embedding.

    Fit on the nodes of one part of the strings and scored on the nodes of the others (split by
    string, so no string contributes to both). Returns ``accuracy`` (test), ``train_accuracy``,
    ``chance`` (majority EC of the test part), ``by_level`` (test accuracy per level), sizes,
    and the fitted ``model`` (a Pipeline; not JSON).
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupShuffleSplit
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from monoidlab._checks import check_probability

    check_probability(test_size, "test_size")
    if C <= 0:
        raise InputError(f"C: the inverse regularisation strength, a number above 0, got {C}")
    emb = emb.subsample(max_nodes, "level", seed)
    X, y, groups = emb.X, emb.ec, emb.meta["string"].to_numpy()
    if len(np.unique(groups)) < 2:
        raise InputError("the linear probe needs nodes from at least two strings")
    tr, te = next(GroupShuffleSplit(1, test_size=test_size, random_state=seed)
                  .split(X, y, groups))
    if len(np.unique(y[tr])) < 2:
        raise InputError("the probe's training part holds a single EC; probe more strings")
    model = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=2000))
    model.fit(X[tr], y[tr])
    hit = model.predict(X[te]) == y[te]
    lv = emb.meta["level"].to_numpy()[te]
    return {"accuracy": float(hit.mean()), "train_accuracy": float(model.score(X[tr], y[tr])),
            "chance": float(np.bincount(y[te]).max() / len(te)), "n_train": int(len(tr)),
            "n_test": int(len(te)), "n_ecs": int(len(np.unique(y))),
            "by_level": {int(v): float(hit[lv == v].mean()) for v in np.unique(lv)},
            "model": model}
