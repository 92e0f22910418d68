"""Tests for monoidlab.probing (and the probe figures / CLI): node bookkeeping against a slow
per-node reference, metrics of perfect and random labellings, exact associativity of the sum
ablation, held-out selection against the trainer's real batches, triples whose class of xyz is
balanced, tables that tell an exact model from a constant one, the Hungarian ordering of the
contingency map, the CLI on a 5-step run."""

import json

import numpy as np
import pytest
import references
import torch

import monoidlab as ml
from monoidlab.models.mlp_ldru import MLPLDRU
from monoidlab.models.pr_lstm import PRLSTM
from monoidlab.models.recurrent import LSTMClassifier
from monoidlab.probing import (
    ClusterAgreement,
    NodeEmbeddings,
    agreement_scores,
    associativity,
    chance_scores,
    cluster_agreement,
    draw_triples,
    heldout_strings,
    linear_probe,
    model_at_init,
    node_embeddings,
    probe_checkpoint,
    purity_score,
    root_states,
    summarise_associativity,
    summary_tables,
    training_strings,
)
from monoidlab.strings import schedules

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
    sub = emb.subsample(60, "level", seed=1)
    counts = sub.meta.level.value_counts()
    assert len(sub) <= 60 and counts.max() - counts[counts.index.max()] <= 15
    assert sub.meta.equals(emb.subsample(60, "level", seed=1).meta)


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
    from monoidlab.training import RunConfig

    base = dict(language="parity", model="mlp-ldru", steps=30, batch_size=8,
                train_lengths="1:6", test_lengths="41:42", test_samples=4,
                model_options={"d": 8}, sampler="uniform")
    return RunConfig(**{**base, **kw})


def test_heldout_excludes_the_strings_training_really_saw(monkeypatch):
    from monoidlab.training import loop, train
    from monoidlab.training.problems import LanguageProblem, make_problem

    cfg = _tiny_cfg()
    seen, built = set(), []
    real_batch, real_build = LanguageProblem.batch, loop.build_for

    def spy(self, rng, length, batch_size, train, step=0):
        b = real_batch(self, rng, length, batch_size, train, step)
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
        mp.setattr(loop, "build_for", build)
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
                 "--model_options.d=16", "--recipe=default"]) == 0
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
    assert fig.axes[0].get_xlabel().startswith("cluster")
    x, yy, z = _triples(tomita7, n=10)
    model = _model("mlp-ldru", tomita7)
    df = associativity(model, tomita7, x, yy, z)
    fig = plots_probe.associativity_histograms(df, df.assign(cos=df.cos * 2))
    assert len(fig.axes) >= 3


def test_umap_figure_colours_ecs_categorically(tomita7):
    """The one UMAP test (its first fit in a process costs ~20-30 s): ECs get distinct
    categorical colours with a legend, at most COLOUR_LIMIT of them, the rest grey as "other"."""
    from matplotlib.colors import to_hex

    from monoidlab.viz import probing as plots_probe
    from monoidlab.viz._common import COLOUR_LIMIT

    lang = ml.load_language("tomita-3")  # 26 ECs: more than the colour limit
    model = _model("mlp-ldru", lang)
    emb = node_embeddings(model, lang, *lang.encode(_strings(lang, [16] * 12)))
    fig = plots_probe.umap_figure(emb, max_points=150, seed=0)
    ax = fig.axes[0]
    n_ecs = emb.subsample(150, "level", 0).meta.ec.nunique()
    assert n_ecs > COLOUR_LIMIT
    assert ax.get_title() == (f"true EC: the {COLOUR_LIMIT} most frequent of {n_ecs}; "
                              f"{n_ecs - COLOUR_LIMIT} rarer ECs grey")
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(labels) == COLOUR_LIMIT + 1 and labels[0].startswith(f"other: {n_ecs - COLOUR_LIMIT} ECs")
    words = lang.monoid().labels()
    assert all(lab.split(": ")[1].split(" (")[0] == words[int(lab.split(":")[0])]
               for lab in labels[1:])  # "index: word (share)"
    # one colour per EC, all distinct, from the categorical palette (not a colormap ramp)
    colours = [to_hex(c.get_facecolor()[0]) for c in ax.collections[1:]]
    tab10 = [to_hex(c) for c in __import__("matplotlib").colormaps["tab10"].colors]
    assert colours == tab10[:COLOUR_LIMIT]
    pts = np.concatenate([c.get_offsets() for c in ax.collections])
    assert len(pts) == 150 and np.isfinite(pts).all()
    assert [a.get_title() for a in fig.axes[1:]] == ["class the EC maps to",
                                                      "level (height above the leaves)"]


# --------------------------------------------------------------------------- baselines


def test_chance_scores_keep_cluster_sizes_and_lose_the_ecs():
    X, y = _blobs(k=4, n=50)
    est = ClusterAgreement("kmeans").fit(X, y)
    assert est.scores_["ari"] == pytest.approx(1.0)
    assert abs(est.chance_scores_["ari"]) < 0.05 and est.chance_scores_["purity"] < 0.4
    assert est.chance_scores_ == chance_scores(y, est.labels_, seed=0)
    tab = cluster_agreement(NodeEmbeddings(X, __import__("pandas").DataFrame(
        {"ec": y, "level": np.ones(len(y), int), "string": np.arange(len(y))}), "tree",
        "balanced", None), "kmeans", by=None).table
    assert {"chance_ari", "chance_nmi", "chance_purity"} <= set(tab.columns)


def test_contingency_is_ordered_by_a_hungarian_matching(tomita7):
    """The reordered diagonal holds the maximum over all EC→cluster matchings (brute force)."""
    from itertools import permutations

    from monoidlab.viz import probing as plots_probe

    rng = np.random.default_rng(3)
    for shape in [(4, 4), (3, 5), (5, 3)]:
        c = rng.integers(0, 20, shape)
        rows, cols, hit = plots_probe.matched_order(c)
        assert sorted(rows) == list(range(shape[0])) and sorted(cols) == list(range(shape[1]))
        k = min(shape)
        best = max(sum(c[i, j] for i, j in zip(r, q)) for r in permutations(range(shape[0]), k)
                   for q in [tuple(range(shape[1]))[:k]] for q in permutations(range(shape[1]), k)
                   if list(r) == sorted(r))
        assert hit == best == np.trace(c[np.ix_(rows, cols)][:k, :k])
    # blobs whose cluster ids are a shuffle of the ECs: the figure shows a clean diagonal
    X, y = _blobs(k=4, n=30)
    est = ClusterAgreement("kmeans").fit(X, y)
    fig = plots_probe.contingency_heatmap(est, tomita7.monoid(), normalize=False)
    ax = fig.axes[0]
    grid = np.asarray(ax.collections[0].get_array()).reshape(4, 4)
    assert (np.diag(grid) == 30).all() and grid.sum() == 120
    assert len(ax.patches) == 4  # the matched diagonal is framed
    assert "100% of nodes on the matched diagonal" in ax.get_title()
    words = tomita7.monoid().labels()
    assert [t.get_text() for t in ax.get_yticklabels()] == [f"{e}: {words[e]}" for e in (1, 3, 5, 7)]


class MonoidModel(torch.nn.Module):
    """The exact model of a language as a probe-able model: a state is the one-hot of the EC,
    the operator is the monoid product, the head reads the class of the EC. With ``constant``
    the head answers that class whatever the state (a model that learned nothing)."""

    def __init__(self, lang, constant=None):
        super().__init__()
        m = lang.monoid()
        self.m, self.n, self.n_classes, self.constant = m, m.size, lang.n_classes, constant
        self.table = torch.as_tensor(np.array(m.table))
        self.out = torch.as_tensor(np.array(m.outputs))
        self.dummy = torch.nn.Parameter(torch.zeros(1))

    def _hot(self, e):
        return torch.nn.functional.one_hot(torch.as_tensor(e).long(), self.n).float() + 0 * self.dummy

    def root_states(self, tokens, lengths):
        return self._hot(self.m.element_of(tokens.numpy(), lengths.numpy()))

    def apply_operator(self, a, b):
        return self._hot(self.table[a.argmax(-1), b.argmax(-1)])

    def padding_state(self):
        return self._hot(0)

    def state_logits(self, s):
        cls = self.out[s.argmax(-1)] if self.constant is None else \
            torch.full(s.shape[:-1], self.constant)
        return torch.nn.functional.one_hot(cls.long(), self.n_classes).float()

    def visible_state(self, s):
        return s

    def prefix_states(self, tokens, lengths):
        return self._hot(np.maximum(self.m.prefix_elements(tokens.numpy(), lengths.numpy()), 0))

    def forward(self, tokens, lengths):
        return self.state_logits(self.root_states(tokens, lengths))


def test_draw_triples_balance_the_class_of_xyz():
    """Three independent dyck-4 strings multiply to the sink almost always; the triples cut
    from class-balanced strings xyz keep both classes, and their parts are what they claim."""
    from monoidlab.training.problems import LanguageProblem

    problem = LanguageProblem(ml.load_language("dyck-4"))
    lang, m = problem.language, problem.language.monoid()
    t = draw_triples(problem, 200, range(41, 81), seed=0)
    share = np.bincount(t.classes, minlength=2) / len(t)
    assert 0.4 <= share[1] <= 0.6, share
    for (tok, ln) in (t.x, t.y, t.z):
        assert ln.min() >= 41 and ln.max() <= 80
        assert (tok[np.arange(tok.shape[1])[None, :] >= ln[:, None]] == 0).all()
    xyz = [a + b + c for a, b, c in zip(*(lang.decode(*p) for p in (t.x, t.y, t.z)))]
    assert xyz == lang.decode(t.tokens, t.lengths)
    assert (lang.classify(t.tokens, t.lengths) == t.classes).all()
    ec = m.multiply(m.multiply(*(m.element_of(*p) for p in (t.x, t.y))), m.element_of(*t.z))
    assert (np.asarray(m.outputs)[ec] == t.classes).all()
    # the old construction: three independent held-out strings
    indep = [ml.sample(lang, range(41, 81), 200, sampler="balanced", seed=s) for s in (1, 2, 3)]
    ec = m.multiply(m.multiply(*(m.element_of(b.tokens, b.lengths) for b in indep[:2])),
                    m.element_of(indep[2].tokens, indep[2].lengths))
    assert (np.asarray(m.outputs)[ec] == 0).mean() > 0.9


def test_probe_tables_tell_an_exact_model_from_a_constant_one(tmp_path, monkeypatch):
    """The demo's mystery: on dyck-4 the associativity table showed head_same 0.96 and
    head_true 0.9067 for the trained and the initial model alike, because 97% of its triples
    were the sink. Through probe_checkpoint, the exact monoid (trained) must now stand far
    from a constant head (init), and the constant head must score the table's baseline."""
    from monoidlab.probing import probe as probe_mod
    from monoidlab.training import RunConfig, train, trainer
    from monoidlab.training.problems import make_problem

    cfg = RunConfig(language="dyck-4", model="mlp-ldru", steps=2, batch_size=8,
                      train_lengths="1:8", test_lengths="9:10", test_samples=4,
                      model_options={"d": 8})
    train(cfg, tmp_path / "run", progress=False, evaluate_at_end=False)
    problem = make_problem(cfg)
    lang = problem.language
    real_load = trainer.load_checkpoint

    def load(path, device="cpu"):
        _, c, p, ckpt = real_load(path, device)
        return MonoidModel(lang), c, p, ckpt

    monkeypatch.setattr(trainer, "load_checkpoint", load)
    monkeypatch.setattr(probe_mod, "model_at_init", lambda c, p: MonoidModel(lang, constant=0))
    res = probe_checkpoint(tmp_path / "run", n_strings=30, n_triples=120, clusterers=("kmeans",),
                           max_nodes=600)
    m = res["metrics"]
    assert 0.4 <= m["triples"]["class_mix"]["accept"] <= 0.6
    rows = {r["model"]: r for r in summary_tables(m)["associativity"]}
    exact, const, base = rows["trained"], rows["init"], rows["constant head (majority class)"]
    assert exact["head_true"] == exact["head_direct"] == exact["head_same"] == 1.0
    assert exact["probe_true"] > 0.95 and exact["cos"] == 0.0 and exact["cos unrelated"] > 0.3
    assert const["head_true"] == pytest.approx(m["triples"]["class_mix"]["reject"], abs=1e-3)
    assert const["head_true"] <= base["head_true"] and base["head_same"] == 1.0
    assert exact["head_true"] - const["head_true"] > 0.35
    # the agreement and probe tables carry the init row and a chance reference
    agr = summary_tables(m)["agreement"]
    assert [r["model"] for r in agr] == ["trained", "init", "chance (shuffled clusters)"]
    assert agr[0]["ARI"] == 1.0 and abs(agr[2]["ARI"]) < 0.05
    probe = summary_tables(m)["probe"]
    assert probe[0]["accuracy"] > probe[0]["chance"] + 0.3 and [r["model"] for r in probe] == \
        ["trained", "init"]


@pytest.mark.parametrize("name", ["triples", "probe", "associativity", "clustering", "embeddings"])
def test_doctests(name):
    import doctest
    import importlib

    mod = importlib.import_module(f"monoidlab.probing.{name}")
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert res.attempted > 0 and res.failed == 0
