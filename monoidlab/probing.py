"""Probing trained models: do node embeddings cluster by the true monoid classes, and does the
learned operator behave like the monoid product?

Four instruments, each a plain function (or a scikit-learn-style estimator) on plain data:

* :func:`node_embeddings`: every internal tree node's state (MLP-LDRU, PR-LSTM, PR-RNN) or
  every prefix state (RNN, LSTM), with a pandas metadata frame: string, node, level, span,
  true EC (from the monoid), the automaton state and class the EC maps to.
* :func:`heldout_strings`: probing strings the checkpoint never trained on: *beyond the
  training lengths* (default), or *disjoint by content* (the checkpoint's training batches are
  regenerated exactly from ``default_rng([seed, step])`` and excluded). The result says which.
* :class:`ClusterAgreement` (any sklearn clusterer; KMeans with k = #ECs present by default)
  and :func:`cluster_agreement` (KMeans, agglomerative, HDBSCAN; overall and per level);
  :func:`agreement_scores` (ARI, NMI, homogeneity, completeness, V-measure, purity);
  :func:`linear_probe` (logistic regression fit on part of the held-out strings' nodes,
  scored on the others).
* :func:`associativity`: on triples (x, y, z), the roots' (x⊙y)⊙z against x⊙(y⊙z) (cosine
  distance, relative L2), whether the head / the probe decode both alike and to the class of
  xyz, and the identity check x⊙pad, pad⊙x (pad = the model's padding leaf).

:func:`probe_model` runs them all on one model; :func:`probe_checkpoint` on a checkpoint and
on the same model at initialisation (the baseline).

Example
-------
>>> import numpy as np, torch, monoidlab as ml
>>> from monoidlab.models.mlp_ldru import MLPLDRU
>>> lang = ml.load_language("parity")
>>> _ = torch.manual_seed(0)
>>> model = MLPLDRU(2, 2, d=8, operator="sum", post_block=False)
>>> emb = node_embeddings(model, lang, *lang.encode(["1101", "011"]))
>>> emb.meta[["string", "level", "span_start", "span_end", "ec"]].values.tolist()
[[0, 1, 0, 2, 0], [0, 1, 2, 4, 1], [0, 2, 0, 4, 1], [1, 1, 0, 2, 1], [1, 1, 2, 3, 1], [1, 2, 0, 3, 0]]
>>> agreement_scores([0, 0, 1, 1], [5, 5, 3, 3])["ari"]
1.0
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from sklearn.base import BaseEstimator

from monoidlab.associativity import _Operator, associativity, root_states, summarise_associativity

__all__ = ["NodeEmbeddings", "node_embeddings", "HeldOut", "training_strings",
           "heldout_strings", "purity_score", "agreement_scores", "ClusterAgreement",
           "cluster_agreement", "linear_probe", "root_states", "associativity",
           "summarise_associativity", "model_at_init", "probe_model", "probe_checkpoint"]

METRICS = ("ari", "nmi", "homogeneity", "completeness", "v_measure", "purity")
CLUSTERERS = ("kmeans", "agglomerative", "hdbscan")


# --------------------------------------------------------------------------- node embeddings


@dataclass
class NodeEmbeddings:
    """Node (or prefix) states ``X`` (n, d) with one metadata row per node in ``meta``.

    ``meta`` columns: ``string`` (index in the probed batch), ``node`` (index in the string's
    schedule, or the position for prefix models), ``level`` (height above the leaves; for
    prefix models ⌊log2 prefix length⌋), ``span_start``, ``span_end``, ``span_length``,
    ``string_length``, ``ec`` (true EC of the span), ``state`` (automaton state f_ec(start)),
    ``cls`` / ``class_name`` (the class the EC maps to), ``padding`` (an all-padding node:
    empty span, identity EC; dropped unless ``include_empty``).
    """

    X: np.ndarray
    meta: object  # pandas.DataFrame
    kind: str  # "tree" | "prefix"
    schedule: str  # "balanced" | "scan" | "chain"
    monoid: object = field(repr=False)

    def __len__(self) -> int:
        return len(self.X)

    @property
    def ec(self) -> np.ndarray:
        return self.meta["ec"].to_numpy()

    def subset(self, idx) -> NodeEmbeddings:
        idx = np.flatnonzero(idx) if np.asarray(idx).dtype == bool else np.asarray(idx)
        return NodeEmbeddings(self.X[idx], self.meta.iloc[idx].reset_index(drop=True),
                              self.kind, self.schedule, self.monoid)

    def subsample(self, n: int | None, by: str | None = "level", random_state=0) -> NodeEmbeddings:
        """At most ``n`` rows, seeded; with ``by``, the same cap for every group (small groups,
        e.g. the top tree levels, are kept whole)."""
        if n is None or len(self) <= n:
            return self
        rng = np.random.default_rng(random_state)
        if by is None:
            return self.subset(np.sort(rng.choice(len(self), n, replace=False)))
        groups = self.meta[by].to_numpy()
        keys, counts = np.unique(groups, return_counts=True)
        cap = _water_fill(counts, n)
        keep = [rng.choice(np.flatnonzero(groups == k), c, replace=False)
                for k, c in zip(keys, cap)]
        return self.subset(np.sort(np.concatenate(keep)))


def _water_fill(counts: np.ndarray, n: int) -> np.ndarray:
    """Largest per-group cap c with sum(min(count, c)) <= n; returns each group's take."""
    lo, hi = 0, int(counts.max())
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if np.minimum(counts, mid).sum() <= n else (lo, mid - 1)
    return np.minimum(counts, lo)


def node_embeddings(model, lang, tokens, lengths, *, include_empty: bool = False,
                    batch_size: int = 128, device=None) -> NodeEmbeddings:
    """Every internal node's state (tree models) or every prefix state (recurrent models).

    Nodes are listed per string in the order of ``trees.schedule(schedule, L)`` (that of
    :func:`monoidlab.compositions.node_labels`); ``include_empty`` keeps the all-padding nodes
    of the balanced schedule (their EC is the identity, their state a constant per level).
    """
    import pandas as pd
    import torch

    monoid = lang.monoid()
    tokens, lengths = np.asarray(tokens), np.asarray(lengths)
    device = device or next(model.parameters()).device
    was_training = model.training
    model.eval()
    xs, rows = [], []
    tree = hasattr(model, "node_states")
    if not tree and not hasattr(model, "prefix_states"):
        raise ValueError(f"{type(model).__name__} has neither node_states nor prefix_states; "
                         "probing needs a tree model (mlp-ldru, pr-lstm) or an rnn/lstm")
    sched = None
    with torch.no_grad():
        for s in range(0, len(lengths), batch_size):
            ln = lengths[s: s + batch_size]
            tk = torch.as_tensor(tokens[s: s + batch_size, : int(ln.max())], device=device)
            lt = torch.as_tensor(ln, device=device)
            if tree:
                ns = model.node_states(tk, lt)
                sched = ns.schedule
                f = ns.flat()
                xs.append(f["states"].float().cpu().numpy())
                rows.append(np.column_stack([f["row"].cpu().numpy() + s,
                                             f["span"].cpu().numpy(), f["level"].cpu().numpy()]))
            else:
                st = model.prefix_states(tk, lt)
                valid = (torch.arange(st.shape[1], device=device)[None] < lt[:, None])
                xs.append(st[valid].float().cpu().numpy())
                r, t = np.nonzero(valid.cpu().numpy())
                rows.append(np.column_stack([r + s, np.zeros_like(t), t + 1,
                                             np.floor(np.log2(t + 1)).astype(np.int64)]))
    model.train(was_training)
    d = xs[0].shape[1] if xs else 0
    X = np.concatenate(xs) if xs else np.zeros((0, d), np.float32)
    info = np.concatenate(rows) if rows else np.zeros((0, 4), np.int64)
    string, start, end, level = info.T.astype(np.int64)
    if tree:
        from monoidlab.compositions import node_labels

        lab = node_labels(monoid, tokens, lengths, sched)
        if not (np.array_equal(lab.string, string) and np.array_equal(lab.span[:, 0], start)
                and np.array_equal(lab.span[:, 1], end)):
            raise RuntimeError("node states and node labels disagree on the node order")
        ec, node = lab.node, lab.node_index
    else:
        sched = "chain"
        pref = monoid.prefix_elements(tokens, lengths)
        ec = pref[pref >= 0]
        node = end - 1
    state = monoid.elements[ec, lang.start].astype(np.int64)
    cls = np.asarray(lang.output)[state]
    meta = pd.DataFrame({"string": string, "node": node, "level": level, "span_start": start,
                         "span_end": end, "span_length": end - start,
                         "string_length": lengths[string], "ec": ec, "state": state, "cls": cls,
                         "class_name": np.asarray(lang.classes, dtype=object)[cls],
                         "padding": end == start})
    emb = NodeEmbeddings(X, meta, "tree" if tree else "prefix", sched, monoid)
    return emb if include_empty else emb.subset(~meta["padding"].to_numpy())


# --------------------------------------------------------------------------- held-out strings


@dataclass
class HeldOut:
    """Probing strings and how they are held out (``mode``: "lengths" or "disjoint")."""

    tokens: np.ndarray
    lengths: np.ndarray
    mode: str
    description: str
    info: dict

    def __len__(self) -> int:
        return len(self.lengths)


def _train_lengths(cfg, problem) -> np.ndarray:
    from monoidlab.cli import parse_range

    return problem.lengths(parse_range(cfg.train_lengths))


def _keys(tokens: np.ndarray, lengths: np.ndarray) -> list[bytes]:
    """One hashable key per string (its length and tokens)."""
    return [bytes([int(L) & 255, int(L) >> 8 & 255]) + tokens[i, :L].astype(np.int16).tobytes()
            for i, L in enumerate(lengths)]


def training_strings(cfg, problem, steps: int | None = None) -> set[bytes]:
    """The distinct strings of a run's first ``steps`` training batches (default ``cfg.steps``),
    regenerated exactly as the trainer draws them (``default_rng([seed, step])``)."""
    lens = _train_lengths(cfg, problem)
    seen: set[bytes] = set()
    for step in range(cfg.steps if steps is None else int(steps)):
        rng = np.random.default_rng([cfg.seed, step])
        L = int(rng.choice(lens))
        b = problem.batch(rng, L, cfg.batch_size, train=True)
        seen.update(_keys(np.asarray(b["tokens"]), np.asarray(b["lengths"])))
    return seen


def heldout_strings(cfg, problem, n: int, lengths=None, mode: str = "lengths", seed: int = 0,
                    steps: int | None = None) -> HeldOut:
    """``n`` seeded strings the run of ``cfg`` never trained on.

    ``mode="lengths"``: every length lies beyond the training lengths (default lengths
    max+1 .. 2·max). ``mode="disjoint"``: any lengths (default: the training lengths), and the
    strings of the first ``steps`` training batches are regenerated and excluded (duplicates
    too); fewer than ``n`` strings come back when the lengths hold too few unseen strings.
    """
    from monoidlab.sampling import as_lengths, sample

    lang = getattr(problem, "lang", None)
    if lang is None:
        raise ValueError(f"probing needs a language (a monoid); {problem.name} is a tape task")
    train_lens = _train_lengths(cfg, problem)
    tmin, tmax = int(train_lens.min()), int(train_lens.max())
    if lengths is None:
        lengths = range(tmax + 1, 2 * tmax + 1) if mode == "lengths" else train_lens
    lens = problem.lengths(as_lengths(lengths))
    rng = np.random.default_rng([seed, 424_242])
    draw = lambda k: sample(lang, lens, k, method=problem.test_sampler, seed=rng,  # noqa: E731
                            within=problem.within)
    span = f"{lens.min()}–{lens.max()}"
    if mode == "lengths":
        if lens.min() <= tmax:
            raise ValueError(f"lengths {span} overlap the training lengths {tmin}–{tmax}; "
                             "use lengths beyond them or mode='disjoint'")
        b = draw(n)
        return HeldOut(b.tokens, b.lengths, mode,
                       f"held out by length: {n} strings of lengths {span}, beyond the "
                       f"training lengths {tmin}–{tmax}",
                       {"mode": mode, "lengths": [int(lens.min()), int(lens.max())],
                        "train_lengths": [tmin, tmax], "n": int(n)})
    if mode != "disjoint":
        raise ValueError(f"mode must be 'lengths' or 'disjoint', got {mode!r}")
    steps = cfg.steps if steps is None else int(steps)
    seen = training_strings(cfg, problem, steps)
    n_train = len(seen)
    toks, lns, rejected = [], [], 0
    for _ in range(50):
        b = draw(2 * n)
        for i, k in enumerate(_keys(b.tokens, b.lengths)):
            if k in seen:
                rejected += 1
                continue
            seen.add(k)  # no duplicates among the held-out strings either
            toks.append(b.tokens[i, : b.lengths[i]])
            lns.append(int(b.lengths[i]))
        if len(lns) >= n:
            break
    toks, lns = toks[:n], lns[:n]
    if not lns:
        raise ValueError(f"no string of lengths {span} is unseen in training; use longer lengths")
    tokens = np.zeros((len(lns), max(lns)), np.int64)
    for i, t in enumerate(toks):
        tokens[i, : len(t)] = t
    return HeldOut(tokens, np.asarray(lns, np.int64), mode,
                   f"held out by content: {len(lns)} strings of lengths {span}, none among the "
                   f"{n_train} distinct training strings of steps 0–{steps - 1} (regenerated "
                   f"from seed {cfg.seed})",
                   {"mode": mode, "lengths": [int(lens.min()), int(lens.max())],
                    "train_lengths": [tmin, tmax], "n": len(lns), "requested": int(n),
                    "training_strings": n_train, "steps": steps, "rejected": rejected})


# --------------------------------------------------------------------------- cluster agreement


def purity_score(labels_true, labels_pred) -> float:
    """Fraction of points whose cluster's majority EC is their own EC.

    >>> purity_score([0, 0, 1, 1], [0, 0, 0, 1])
    0.75
    """
    from sklearn.metrics.cluster import contingency_matrix

    c = contingency_matrix(labels_true, labels_pred)
    return float(c.max(axis=0).sum() / c.sum())


def agreement_scores(labels_true, labels_pred) -> dict:
    """ARI, NMI, homogeneity, completeness, V-measure and purity of a clustering against the
    true ECs (HDBSCAN's noise label -1 counts as one more cluster)."""
    from sklearn import metrics

    t, p = np.asarray(labels_true), np.asarray(labels_pred)
    h, c, v = metrics.homogeneity_completeness_v_measure(t, p)
    return {"ari": float(metrics.adjusted_rand_score(t, p)),
            "nmi": float(metrics.normalized_mutual_info_score(t, p)),
            "homogeneity": float(h), "completeness": float(c), "v_measure": float(v),
            "purity": purity_score(t, p)}


def _make_clusterer(clusterer, k: int | None, n: int, random_state):
    from sklearn.base import clone

    if isinstance(clusterer, str):
        from sklearn.cluster import HDBSCAN, AgglomerativeClustering, KMeans

        if clusterer == "kmeans":
            return KMeans(n_clusters=k, n_init=10, random_state=random_state)
        if clusterer == "agglomerative":
            return AgglomerativeClustering(n_clusters=k)
        if clusterer == "hdbscan":
            return HDBSCAN(min_cluster_size=max(5, n // 50), copy=True)
        raise ValueError(f"unknown clusterer {clusterer!r}; use one of {CLUSTERERS} or an "
                         "sklearn estimator")
    est = clone(clusterer)
    if k is not None:
        names = [p for p in est.get_params() if p == "n_clusters" or p.endswith("__n_clusters")]
        if names:
            est.set_params(**{names[-1]: k})
    return est


class ClusterAgreement(BaseEstimator):
    """Cluster embeddings and compare the clusters with the true ECs (sklearn conventions).

    Parameters
    ----------
    clusterer : "kmeans", "agglomerative", "hdbscan" or any unfitted sklearn clusterer (or
        pipeline) with ``fit_predict``; it is cloned, never modified.
    n_clusters : "n_ecs" (the number of distinct ECs in ``y``, set on the clusterer's
        ``n_clusters`` parameter when it has one), an int, or None (leave the clusterer as is).
    random_state : seed of KMeans.

    Attributes after ``fit(X, y)``: ``labels_``, ``clusterer_``, ``scores_`` (see
    :func:`agreement_scores`), ``classes_`` (ECs present), ``clusters_``, ``contingency_``
    (``classes_`` × ``clusters_`` counts), ``n_clusters_`` (noise excluded),
    ``noise_fraction_``.

    >>> import numpy as np
    >>> X = np.array([[0.0], [0.1], [5.0], [5.1]])
    >>> ClusterAgreement("kmeans").fit(X, [3, 3, 7, 7]).scores_["nmi"]
    1.0
    """

    def __init__(self, clusterer="kmeans", n_clusters="n_ecs", random_state=0):
        self.clusterer = clusterer
        self.n_clusters = n_clusters
        self.random_state = random_state

    def fit(self, X, y) -> ClusterAgreement:
        from sklearn.metrics.cluster import contingency_matrix

        X, y = np.asarray(X, dtype=np.float64), np.asarray(y)
        if X.ndim != 2 or len(X) != len(y):
            raise ValueError(f"expected X (n, d) and y (n,), got {X.shape} and {y.shape}")
        self.classes_ = np.unique(y)
        k = len(self.classes_) if self.n_clusters == "n_ecs" else self.n_clusters
        k = None if k is None else min(int(k), len(X))
        self.clusterer_ = _make_clusterer(self.clusterer, k, len(X), self.random_state)
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
        return self

    def fit_predict(self, X, y) -> np.ndarray:
        return self.fit(X, y).labels_

    def score(self, X, y) -> float:
        """ARI of the clusters of ``X`` (``predict`` when the clusterer has it, else a refit of
        a clone) against ``y``."""
        from sklearn.metrics import adjusted_rand_score

        pred = (self.clusterer_.predict(X) if hasattr(self.clusterer_, "predict") else
                ClusterAgreement(self.clusterer, self.n_clusters, self.random_state)
                .fit(X, y).labels_)
        return float(adjusted_rand_score(y, pred))


@dataclass
class Agreement:
    """:func:`cluster_agreement`'s result: one table row per (method, level) and the fitted
    overall :class:`ClusterAgreement` of each method."""

    table: object  # pandas.DataFrame
    fitted: dict


def cluster_agreement(emb: NodeEmbeddings, clusterers=CLUSTERERS, by: str | None = "level",
                      max_nodes: int | None = 3000, min_group: int = 20,
                      random_state=0) -> Agreement:
    """Cluster agreement overall (``level`` = "all") and per ``by`` group (each group clustered
    on its own, k = #ECs present in it); groups with fewer than ``min_group`` nodes or a single
    EC are skipped. At most ``max_nodes`` nodes per fit (stratified by ``by``, seeded)."""
    import pandas as pd

    if isinstance(clusterers, str) or not isinstance(clusterers, list | tuple):
        clusterers = [clusterers]
    groups = [("all", emb.subsample(max_nodes, by, random_state))]
    if by is not None:
        for g in sorted(emb.meta[by].unique()):
            sub = emb.subset(emb.meta[by].to_numpy() == g)
            if len(sub) >= min_group and sub.meta["ec"].nunique() > 1:
                groups.append((int(g), sub.subsample(max_nodes, None, random_state)))
    rows, fitted = [], {}
    for c in clusterers:
        name = c if isinstance(c, str) else type(c).__name__
        for g, sub in groups:
            est = ClusterAgreement(c, random_state=random_state).fit(sub.X, sub.ec)
            if g == "all":
                fitted[name] = est
            rows.append({"method": name, by or "group": g, "n": len(sub),
                         "n_ecs": len(est.classes_), "n_clusters": est.n_clusters_,
                         **est.scores_, "noise": est.noise_fraction_})
    return Agreement(pd.DataFrame(rows), fitted)


# --------------------------------------------------------------------------- linear probe


def linear_probe(emb: NodeEmbeddings, test_size: float = 0.5, max_nodes: int | None = 20000,
                 C: float = 1.0, random_state=0) -> dict:
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

    emb = emb.subsample(max_nodes, "level", random_state)
    X, y, groups = emb.X, emb.ec, emb.meta["string"].to_numpy()
    if len(np.unique(groups)) < 2:
        raise ValueError("the linear probe needs nodes from at least two strings")
    tr, te = next(GroupShuffleSplit(1, test_size=test_size, random_state=random_state)
                  .split(X, y, groups))
    if len(np.unique(y[tr])) < 2:
        raise ValueError("the probe's training part holds a single EC; probe more strings")
    model = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=2000))
    model.fit(X[tr], y[tr])
    hit = model.predict(X[te]) == y[te]
    lv = emb.meta["level"].to_numpy()[te]
    return {"accuracy": float(hit.mean()), "train_accuracy": float(model.score(X[tr], y[tr])),
            "chance": float(np.bincount(y[te]).max() / len(te)), "n_train": int(len(tr)),
            "n_test": int(len(te)), "n_ecs": int(len(np.unique(y))),
            "by_level": {int(v): float(hit[lv == v].mean()) for v in np.unique(lv)},
            "model": model}


# --------------------------------------------------------------------------- whole reports


def model_at_init(cfg, problem):
    """The checkpoint's model as the trainer built it before step 0 (same seed, same config);
    the global torch RNG is left untouched."""
    import torch

    from monoidlab.training.trainer import build_for

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        model = build_for(cfg, problem)
    return model.eval()


def probe_model(model, lang, heldout: HeldOut, triples=None, clusterers=CLUSTERERS,
                max_nodes: int | None = 3000, random_state=0) -> dict:
    """Embeddings, cluster agreement, linear probe and (for tree models) associativity of one
    model. Returns plain data under ``metrics`` plus the objects for the figures."""
    emb = node_embeddings(model, lang, heldout.tokens, heldout.lengths)
    agr = cluster_agreement(emb, clusterers, max_nodes=max_nodes, random_state=random_state)
    probe = linear_probe(emb, random_state=random_state)
    metrics = {"n_strings": len(heldout), "n_nodes": len(emb), "schedule": emb.schedule,
               "n_ecs": int(emb.meta["ec"].nunique()), "levels": int(emb.meta["level"].max()),
               "agreement": agr.table.to_dict("records"),
               "probe": {k: v for k, v in probe.items() if k != "model"}}
    out = {"metrics": metrics, "embeddings": emb, "agreement": agr, "probe": probe,
           "associativity": None}
    try:
        _Operator(model)
    except ValueError as exc:
        metrics["associativity"] = {"skipped": str(exc)}
        return out
    if triples is not None:
        df = associativity(model, lang, *triples, probe=probe["model"])
        metrics["associativity"] = summarise_associativity(df)
        out["associativity"] = df
    return out


def _split_triples(h: HeldOut):
    n = len(h) // 3

    def part(i):
        ln = h.lengths[i * n: (i + 1) * n]
        return h.tokens[i * n: (i + 1) * n, : int(ln.max())], ln

    return part(0), part(1), part(2)


def probe_checkpoint(path, n_strings: int = 200, lengths=None, mode: str = "lengths",
                     n_triples: int = 300, seed: int = 0, compare_init: bool = True,
                     clusterers=CLUSTERERS, max_nodes: int | None = 3000,
                     device="cpu") -> dict:
    """Probe a checkpoint (and the same model at initialisation) on held-out strings.

    Returns ``{"metrics": JSON-able dict, "trained": probe_model(...), "init": ... or None}``;
    the metrics say how the strings are held out (``heldout``).
    """
    import torch

    from monoidlab.training.trainer import load_checkpoint

    model, cfg, problem, ckpt = load_checkpoint(path, device)
    lang = getattr(problem, "lang", None)
    if lang is None:
        raise ValueError(f"probing needs a language; {problem.name} is a tape task")
    steps = int(ckpt.get("step", cfg.steps))
    held = heldout_strings(cfg, problem, n_strings, lengths, mode, seed, steps=steps)
    trip = None
    if n_triples:
        t = heldout_strings(cfg, problem, 3 * n_triples, lengths, mode, seed + 1, steps=steps)
        trip = _split_triples(t) if len(t) >= 3 else None
    metrics = {"checkpoint": str(path), "model": cfg.model, "language": problem.name,
               "steps": steps, "seed": seed, "heldout": {"description": held.description,
                                                       **held.info}}
    trained = probe_model(model, lang, held, trip, clusterers, max_nodes, seed)
    metrics["trained"] = trained["metrics"]
    init = None
    if compare_init:
        init = probe_model(model_at_init(cfg, problem).to(torch.device(device)), lang, held,
                           trip, clusterers, max_nodes, seed)
        metrics["init"] = init["metrics"]
    return {"metrics": metrics, "trained": trained, "init": init, "language": lang}
