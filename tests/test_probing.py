"""Tests for monoidlab.probing (and the probe figures / CLI): node bookkeeping against a slow
per-node reference, metrics of perfect and random labellings, exact associativity of the sum
ablation, held-out selection against the trainer's real batches, the CLI on a 5-step run."""

import json

import numpy as np
import pytest
import references
import torch

from monoidlab import schedules
from monoidlab.models.mlp_ldru import MLPLDRU
from monoidlab.models.pr_lstm import PRLSTM
from monoidlab.models.recurrent import LSTMClassifier
from monoidlab.probing import (
    ClusterAgreement,
    NodeEmbeddings,
    agreement_scores,
    associativity,
    cluster_agreement,
    heldout_strings,
    linear_probe,
    model_at_init,
    node_embeddings,
    purity_score,
    root_states,
    summarise_associativity,
    training_strings,
)

LENGTHS = [1, 2, 3, 5, 7, 8, 9, 13, 4, 16, 11, 6]


def _model(kind, lang, **kw):
    torch.manual_seed(0)
    V, C = lang.n_symbols, lang.n_classes
    if kind == "mlp-ldru":
        return MLPLDRU(V, C, d=8, **kw).eval()
    if kind == "pr-lstm":
        return PRLSTM(V, C, hidden=6).eval()
    return LSTMClassifier(V, C, hidden=6).eval()


def _strings(lang, lengths, seed=0):
    rng = np.random.default_rng(seed)
    return ["".join(rng.choice(lang.alphabet, L)) for L in lengths]


# --------------------------------------------------------------------------- slow references


def _ref_tree_states(model, kind, tokens):
    """{(height, span): state} of every internal node, by recursion over references.reference_trees."""
    L = len(tokens)
    name = "balanced" if kind == "mlp-ldru" else "scan"
    out = {}
    with torch.no_grad():
        if kind == "mlp-ldru":
            buf = schedules.schedule("balanced", L).buffer
            tok = torch.tensor([tokens + [0] * (buf - L)])
            leaves = model.embed(tok, torch.arange(buf)[None] < L)[0]
            leaf = lambda p: leaves[p]  # noqa: E731
            op = model.combine
        else:
            tok = torch.tensor([tokens])
            st = model.leaf(tok)
            leaf = lambda p: tuple(s[0, p] for s in st)  # noqa: E731
            op = model.cell

        def ev(t):
            if not isinstance(t, tuple):
                return leaf(t), 0, [t]
            a, ha, la = ev(t[0])
            b, hb, lb = ev(t[1])
            v, h, ls = op(a, b), 1 + max(ha, hb), la + lb
            real = [p for p in ls if p < L]
            span = (min(real), max(real) + 1) if real else (L, L)
            out[(h, span)] = v if kind == "mlp-ldru" else v[0]
            return v, h, ls

        for root in references.reference_trees(name, L):
            ev(root)
    return out


@pytest.mark.parametrize("kind", ["mlp-ldru", "pr-lstm", "lstm"])
def test_node_rows_match_slow_reference(kind, tomita7):
    """Every node's span, level, EC, automaton state, class and state vector agree with a
    per-node evaluation and with element_of on the substring itself."""
    lang, monoid = tomita7, tomita7.monoid()
    model = _model(kind, lang)
    words = _strings(lang, LENGTHS)
    tokens, lengths = lang.encode(words)
    emb = node_embeddings(model, lang, tokens, lengths, batch_size=5)  # several batches
    meta = emb.meta
    assert len(emb.X) == len(meta) and not meta["padding"].any()
    for i, w in enumerate(words):
        rows = meta[meta.string == i]
        L = len(w)
        if kind == "lstm":
            assert rows.span_end.tolist() == list(range(1, L + 1))
            with torch.no_grad():
                ref = model.prefix_states(torch.as_tensor(tokens[i: i + 1, :L]), torch.tensor([L]))[0]
            np.testing.assert_allclose(emb.X[rows.index], ref.numpy(), atol=1e-5)
        else:
            ref = _ref_tree_states(model, kind, tokens[i, :L].tolist())
            ref = {k: v for k, v in ref.items() if k[1][1] > k[1][0]}  # drop all-padding nodes
            got = {(int(r.level), (int(r.span_start), int(r.span_end))): j
                   for j, r in rows.iterrows()}
            assert sorted(got) == sorted(ref)
            want_spans = sorted((lv, (ls[0], rs[1])) for lv, ls, rs in
                                references.reference_spans(emb.schedule, L) if rs[1] > ls[0])
            assert sorted(got) == want_spans
            for k, j in got.items():
                np.testing.assert_allclose(emb.X[j], ref[k].numpy(), atol=1e-5)
        for _, r in rows.iterrows():
            sub = w[r.span_start: r.span_end]
            ec = int(monoid.element_of(*lang.encode([sub]))[0])
            assert r.ec == ec
            assert r.state == lang.run([sub])[0] and r.cls == lang.classify([sub])[0]
            assert r.class_name == lang.classes[r.cls] and r.string_length == L


def test_include_empty_keeps_padding_nodes(parity):
    model = _model("mlp-ldru", parity)
    t, n = parity.encode(["10110"])  # buffer 8: 7 nodes, of which (∅.∅) is all padding
    full = node_embeddings(model, parity, t, n, include_empty=True)
    assert len(full) == 7 and full.meta["padding"].sum() == 1
    assert full.meta.loc[full.meta.padding, "ec"].tolist() == [0]  # the identity
    assert len(node_embeddings(model, parity, t, n)) == 6


def test_subsample_is_stratified_and_seeded(tomita7):
    model = _model("mlp-ldru", tomita7)
    emb = node_embeddings(model, tomita7, *tomita7.encode(_strings(tomita7, [16] * 20)))
    sub = emb.subsample(60, "level", random_state=1)
    counts = sub.meta.level.value_counts()
    assert len(sub) <= 60 and counts.max() - counts[counts.index.max()] <= 15
    assert sub.meta.equals(emb.subsample(60, "level", random_state=1).meta)


# --------------------------------------------------------------------------- metrics


def test_perfect_labelling_scores_one_and_random_low():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 5, 2000)
    perfect = agreement_scores(y, (y * 7 + 3) % 11)  # relabelled clusters
    assert all(v == pytest.approx(1.0) for v in perfect.values())
    rand = agreement_scores(y, rng.integers(0, 5, 2000))
    assert abs(rand["ari"]) < 0.02 and rand["purity"] < 0.3 and rand["nmi"] < 0.02
    assert purity_score([0, 0, 1, 1], [0, 0, 0, 1]) == 0.75


def _blobs(k=3, n=40, d=6, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(k) * 2 + 1, n)  # EC ids need not be 0..k-1
    centres = rng.normal(0, 20, (k, d))
    return centres[y // 2] + rng.normal(0, 0.3, (k * n, d)), y


@pytest.mark.parametrize("clusterer", ["kmeans", "agglomerative", "hdbscan", "pipeline"])
def test_cluster_agreement_recovers_separated_blobs(clusterer):
    from sklearn.base import clone
    from sklearn.cluster import KMeans
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = _blobs()
    c = make_pipeline(StandardScaler(), KMeans(n_clusters=9, n_init=3, random_state=0)) \
        if clusterer == "pipeline" else clusterer
    est = clone(ClusterAgreement(c)).fit(X, y)  # sklearn's clone works on it
    assert est.scores_["ari"] == pytest.approx(1.0) and est.n_clusters_ == 3
    assert est.contingency_.shape == (3, len(est.clusters_)) and est.contingency_.sum() == len(y)
    assert est.score(X, y) == pytest.approx(1.0)
    if clusterer == "pipeline":
        assert c.get_params()["kmeans__n_clusters"] == 9  # the caller's estimator is untouched


def _onehot_embeddings(lang, n_strings=30):
    """A perfect embedding: the one-hot of each node's true EC (plus tiny noise)."""
    model = _model("mlp-ldru", lang)
    emb = node_embeddings(model, lang, *lang.encode(_strings(lang, [12] * n_strings)))
    X = np.eye(lang.monoid().size)[emb.ec] + np.random.default_rng(0).normal(0, 1e-3, (len(emb), lang.monoid().size))
    return NodeEmbeddings(X, emb.meta, emb.kind, emb.schedule, emb.monoid), emb


def test_cluster_agreement_table_and_linear_probe(tomita7):
    perfect, raw = _onehot_embeddings(tomita7)
    agr = cluster_agreement(perfect, ("kmeans", "agglomerative"), max_nodes=400)
    tab = agr.table
    assert set(tab.method) == {"kmeans", "agglomerative"} and "all" in set(tab.level)
    levels = {lv for lv in tab.level if lv != "all"}
    assert levels and levels <= set(perfect.meta.level)
    overall = tab[tab.level == "all"]
    assert (overall.ari > 0.999).all() and (overall.purity > 0.999).all()
    assert (overall.n_ecs == perfect.meta.ec.nunique()).all()
    assert set(agr.fitted) == {"kmeans", "agglomerative"}
    probe = linear_probe(perfect)
    assert probe["accuracy"] == 1.0 and probe["n_train"] + probe["n_test"] == len(perfect)
    assert set(probe["by_level"]) <= set(perfect.meta.level)
    # random features: the probe is no better than a little above chance
    noise = NodeEmbeddings(np.random.default_rng(1).normal(size=raw.X.shape), raw.meta,
                           raw.kind, raw.schedule, raw.monoid)
    assert linear_probe(noise)["accuracy"] < probe["accuracy"] - 0.2


# --------------------------------------------------------------------------- associativity


def _triples(lang, n=24, lengths=(1, 2, 3, 5, 8, 13), seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(3):
        out.append(lang.encode(_strings(lang, rng.choice(lengths, n), seed=int(rng.integers(1e6)))))
    return out


def test_roots_are_what_the_head_reads(tomita7):
    t, n = tomita7.encode(_strings(tomita7, LENGTHS))
    for kind in ("mlp-ldru", "pr-lstm"):
        model = _model(kind, tomita7)
        r = torch.as_tensor(root_states(model, t, n), dtype=torch.float32)
        with torch.no_grad():
            logits = model.state_logits(r)
            torch.testing.assert_close(logits, model(torch.as_tensor(t), torch.as_tensor(n)),
                                       atol=1e-5, rtol=1e-5)


def test_sum_operator_is_exactly_associative_with_padding_identity(tomita7):
    model = _model("mlp-ldru", tomita7, operator="sum", post_block=False).double()
    x, y, z = _triples(tomita7)
    df = associativity(model, tomita7, x, y, z)
    assert df["cos"].max() < 1e-12 and df["rel_l2"].max() < 1e-12
    assert df["head_same"].all()
    # the padding leaf LN(0) + FFN(LN(0)) is 0 at init (zero biases): x ⊙ pad = pad ⊙ x = x
    for c in ("id_right_cos", "id_right_rel", "id_left_cos", "id_left_rel"):
        assert df[c].max() < 1e-12
    assert df["id_head_same"].all()
    # the root of the sum model is the sum of the leaves: check one against the embeddings
    t, n = x
    with torch.no_grad():
        leaves = model.embed(torch.as_tensor(t[:1, : n[0]]))[0]
    np.testing.assert_allclose(root_states(model, t[:1], n[:1])[0], leaves.sum(0).numpy(),
                               atol=1e-12)
    s = summarise_associativity(df)
    assert s["overall"]["n"] == len(df) and s["overall"]["cos_mean"] < 1e-12
    assert sum(b["n"] for b in s["by_length"]) == len(df)


def test_nonassociative_operators_and_semantic_columns(tomita7):
    x, y, z = _triples(tomita7)
    mlp = _model("mlp-ldru", tomita7)
    df = associativity(mlp, tomita7, x, y, z)
    assert df["rel_l2"].mean() > 1e-3 and df["id_right_rel"].mean() > 1e-3
    # true class of xyz: its EC is the product of the three ECs
    m = tomita7.monoid()
    xyz = [a + b + c for a, b, c in zip(*(tomita7.decode(*s) for s in (x, y, z)))]
    assert df["ec_xyz"].tolist() == m.element_of_words(xyz).tolist()
    assert (df["length"] == [len(w) for w in xyz]).all()
    emb = node_embeddings(mlp, tomita7, *tomita7.encode(_strings(tomita7, [16] * 20)))
    probe = linear_probe(emb)["model"]
    lstm_df = associativity(_model("pr-lstm", tomita7), tomita7, x, y, z, probe=None)
    assert "id_right_rel" not in lstm_df and lstm_df["cos"].mean() > 0  # no padding leaf
    with_probe = associativity(mlp, tomita7, x, y, z, probe=probe)
    assert with_probe["probe_same"].dtype == bool and "probe_true" in with_probe
    with pytest.raises(ValueError, match="no binary operator"):
        associativity(_model("lstm", tomita7), tomita7, x, y, z)


# --------------------------------------------------------------------------- held-out strings


def _tiny_cfg(**kw):
    from monoidlab.training import TrainConfig

    base = dict(language="parity", model="mlp-ldru", steps=30, batch_size=8,
                train_lengths="1:6", test_lengths="41:42", test_samples=4,
                model_kwargs={"d": 8}, sampler="uniform")
    return TrainConfig(**{**base, **kw})


def test_heldout_excludes_the_strings_training_really_saw(monkeypatch):
    from monoidlab.training import train, trainer
    from monoidlab.training.problems import LanguageProblem, make_problem

    cfg = _tiny_cfg()
    seen, built = set(), []
    real_batch, real_build = LanguageProblem.batch, trainer.build_for

    def spy(self, rng, length, batch_size, train):
        b = real_batch(self, rng, length, batch_size, train)
        if train:
            seen.update("".join(map(str, b["tokens"][i, : b["lengths"][i]]))
                        for i in range(len(b["lengths"])))
        return b

    def build(cfg_, problem):
        model = real_build(cfg_, problem)
        built.append({k: v.clone() for k, v in model.state_dict().items()})
        return model

    with monkeypatch.context() as mp:
        mp.setattr(LanguageProblem, "batch", spy)
        mp.setattr(trainer, "build_for", build)
        train(cfg, progress=False, evaluate_at_end=False)
    problem = make_problem(cfg)
    regen = training_strings(cfg, problem)
    assert len(regen) == len(seen) and len(seen) > 30
    held = heldout_strings(cfg, problem, 20, mode="disjoint", seed=3)
    words = {"".join(map(str, held.tokens[i, : L])) for i, L in enumerate(held.lengths)}
    assert len(words) == len(held) == 20 and not words & seen
    assert held.info["rejected"] > 0 and held.info["training_strings"] == len(seen)
    assert "by content" in held.description
    # model_at_init rebuilds exactly the weights training started from
    init = model_at_init(cfg, problem).state_dict()
    assert all(torch.equal(init[k], v) for k, v in built[0].items())


def test_heldout_by_length():
    from monoidlab.training.problems import make_problem

    cfg = _tiny_cfg()
    problem = make_problem(cfg)
    held = heldout_strings(cfg, problem, 15, seed=1)
    assert held.mode == "lengths" and held.lengths.min() > 6 and held.lengths.max() <= 12
    assert "beyond the training lengths 1–6" in held.description
    assert (held.tokens[np.arange(12)[None, :] >= held.lengths[:, None]] == 0).all()
    with pytest.raises(ValueError, match="overlap the training lengths"):
        heldout_strings(cfg, problem, 5, lengths=range(4, 10))


# --------------------------------------------------------------------------- CLI and figures


def test_cli_probe_on_a_five_step_run(tmp_path, capsys):
    from monoidlab.cli import main

    run = tmp_path / "run"
    assert main(["train", "--language", "parity", "--steps", "5", "--out", str(run), "--json",
                 "--batch_size=8", "--test_lengths=41:42", "--test_samples=4",
                 "--model_kwargs.d=16"]) == 0
    capsys.readouterr()
    assert main(["probe", str(run), "--json", "--no-umap", "--n-strings", "16",
                 "--n-triples", "12", "--max-nodes", "400"]) == 0
    m = json.loads(capsys.readouterr().out)
    assert m["steps"] == 5 and m["heldout"]["mode"] == "lengths"
    assert "beyond the training lengths 1–40" in m["heldout"]["description"]
    for which in ("trained", "init"):
        r = m[which]
        assert r["n_ecs"] == 2 and {a["method"] for a in r["agreement"]} == \
            {"kmeans", "agglomerative", "hdbscan"}
        assert 0 <= r["probe"]["accuracy"] <= 1
        assert r["associativity"]["overall"]["n"] == 12
    out = run / "probe"
    assert json.loads((out / "probe.json").read_text())["language"] == "parity"
    assert {"contingency_kmeans.png", "contingency_kmeans_init.png", "associativity.png"} <= \
        {p.name for p in out.iterdir()}
    assert not any(p.name.startswith("umap") for p in out.iterdir())
    # by content, text output, no baseline
    assert main(["probe", str(run), "--heldout", "disjoint", "--lengths", "5:9", "--no-umap",
                 "--no-init", "--n-strings", "10", "--n-triples", "4", "--clusterers", "kmeans", "--out",
                 str(tmp_path / "p2")]) == 0
    text = capsys.readouterr().out
    assert "held out by content" in text and "linear probe" in text and "kmeans" in text


def test_contingency_and_histogram_figures(tomita7):
    from monoidlab.viz import probing as plots_probe

    X, y = _blobs()
    fig = plots_probe.contingency_heatmap(ClusterAgreement("kmeans").fit(X, y), tomita7.monoid())
    assert fig.axes[0].get_xlabel() == "cluster"
    x, yy, z = _triples(tomita7, n=10)
    model = _model("mlp-ldru", tomita7)
    df = associativity(model, tomita7, x, yy, z)
    fig = plots_probe.associativity_histograms(df, df.assign(cos=df.cos * 2))
    assert len(fig.axes) >= 3


def test_umap_figure(tomita7):
    """The one UMAP test (its first fit in a process costs ~20-28 s)."""
    from monoidlab.viz import probing as plots_probe

    model = _model("mlp-ldru", tomita7)
    emb = node_embeddings(model, tomita7, *tomita7.encode(_strings(tomita7, [16] * 10)))
    fig = plots_probe.umap_figure(emb, max_points=120, random_state=0)
    assert [ax.get_title() for ax in fig.axes[:2]] == ["coloured by true EC", "coloured by level"]
    pts = fig.axes[0].collections[0].get_offsets()
    assert len(pts) == 120 and np.isfinite(pts).all()
