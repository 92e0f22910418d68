"""Extraction of the automaton (L*) and of the operator's monoid from a model
(monoidlab.probing.extract_automaton, monoidlab.probing.extract_monoid).

Exact models (an automaton, a symbol counter, the monoid itself) must extract to what they
are; hand-built tables with a planted error must be caught and named; the fast product BFS
and the vectorised associativity count are checked against slow references.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import numpy as np
import pytest
import torch

import monoidlab as ml
from monoidlab.errors import InputError, MissingDependency, UsageError
from monoidlab.probing.extract_automaton import (
    Membership,
    compare_automata,
    extract_automaton,
    oracle_strings,
)
from monoidlab.probing.extract_monoid import (
    associativity_failures,
    compare_with_monoid,
    extract_monoid,
    identities,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")
FIVE = ("parity", "dyck-2", "tomita-4", "tomita-7", "cycle-navigation")
pytest.importorskip("aalpy")


class AutomatonModel(torch.nn.Module):
    """An automaton answering as a classifier (one-hot logits of its class)."""

    def __init__(self, lang):
        super().__init__()
        self.lang, self.calls = lang, 0
        self.dummy = torch.nn.Parameter(torch.zeros(1))

    def forward(self, tokens, lengths):
        self.calls += 1
        cls = self.lang.classify(tokens.numpy(), lengths.numpy())
        return torch.nn.functional.one_hot(torch.as_tensor(cls), self.lang.n_classes).float()


class CountModel(torch.nn.Module):
    """Answers from the symbol counts alone: accept iff ``rule(#0, #1)``."""

    def __init__(self, rule):
        super().__init__()
        self.rule = rule
        self.dummy = torch.nn.Parameter(torch.zeros(1))

    def forward(self, tokens, lengths):
        valid = torch.arange(tokens.shape[1])[None] < lengths[:, None]
        ones = ((tokens == 1) & valid).sum(1)
        zeros = lengths - ones
        return torch.nn.functional.one_hot(self.rule(zeros, ones).long(), 2).float()


def _brute_distinguishing(a, b, max_len=8):
    """Slow reference: the first string in shortlex order on which a and b differ."""
    for L in range(max_len + 1):
        for w in itertools.product(range(a.n_symbols), repeat=L):
            tok, n = np.array([w], np.int64).reshape(1, L), np.array([L])
            ca = a.classes[int(a.classify(tok, n)[0])]
            cb = b.classes[int(b.classify(tok, n)[0])]
            if ca != cb:
                return "".join(a.alphabet[t] for t in w), (ca, cb)
    return None, None


# --------------------------------------------------------------------------- automata


@pytest.mark.parametrize("name", FIVE)
def test_an_automaton_as_a_model_extracts_to_itself(name):
    lang = ml.load_language(name)
    model = AutomatonModel(lang)
    r = extract_automaton(model, lang, max_length=60, n_per_length=4)
    assert r.status == "converged" and r.comparison.isomorphic
    assert r.automaton.n_states == lang.n_states == r.comparison.true_states
    # the state map is an isomorphism: it commutes with every transition and keeps classes
    smap = np.array(r.comparison.state_map)
    assert sorted(smap.tolist()) == list(range(lang.n_states))
    assert smap[r.automaton.start] == lang.start
    np.testing.assert_array_equal(smap[np.asarray(r.automaton.delta)],
                                  np.asarray(lang.delta)[smap])
    np.testing.assert_array_equal(np.asarray(lang.output)[smap], r.automaton.output)
    assert r.agreement["all"]["extracted_model"] == 1.0 == r.agreement["all"]["model_language"]
    # batched: far fewer forward passes than strings the model answered
    assert model.calls == r.forwards < (r.oracle_strings + r.model_queries) / 50


def test_the_learner_asks_the_model_in_batches():
    # a small oracle of long strings leaves the learner's own queries to the model: each update
    # of the observation table is one forward pass, not one per cell
    lang = ml.load_language("prefix-2-4")
    b = ml.sample(lang, [30, 60], 8, sampler="ec_stratified", seed=0)
    model = AutomatonModel(lang)
    r = extract_automaton(model, lang, oracle=(b.tokens, b.lengths))
    assert r.status == "converged" and r.comparison.isomorphic
    assert r.model_queries > 100 and model.calls == r.forwards < r.model_queries / 10


def test_a_symbol_counter_extracts_to_the_counting_automaton():
    # (#1 - #0) mod 3 == 0 is tomita-6, the counting automaton of three states
    t6 = ml.load_language("tomita-6")
    r = extract_automaton(CountModel(lambda z, o: (o - z) % 3 == 0), t6, max_length=60,
                          n_per_length=4)
    assert r.status == "converged" and r.comparison.isomorphic and r.automaton.n_states == 3
    # #0 == #1 is no regular language: measured against dyck-2, the extraction is not the
    # minimal automaton, and the first string they part on is "10" (balanced counts)
    d2 = ml.load_language("dyck-2")
    r = extract_automaton(CountModel(lambda z, o: z == o), d2, max_states=12, max_length=60,
                          n_per_length=4)
    assert not r.comparison.isomorphic and r.status in ("max_states", "converged")
    assert (r.comparison.string, r.comparison.classes) == ("10", ("accept", "reject"))
    assert r.comparison.ec == "10"


@pytest.mark.parametrize("pair", [("tomita-4", "tomita-7"), ("dyck-2", "dyck-3"),
                                  ("parity", "tomita-5"), ("tomita-3", "tomita-6"),
                                  ("even-pairs", "parity"), ("tomita-6", "tomita-6")])
def test_shortest_distinguishing_string_matches_brute_force(pair):
    a, b = (ml.load_language(n) for n in pair)
    c = compare_automata(a, b)
    want, classes = _brute_distinguishing(a, b)
    assert c.string == want and c.classes == classes
    assert c.isomorphic == (want is None)
    if want is not None:  # the EC named is the class of that very string
        m = b.monoid()
        assert c.ec == m.labels()[int(m.element_of_words([want])[0])]


def test_membership_caches_and_batches(parity):
    model = AutomatonModel(parity)
    m = Membership(model, parity, batch_size=4)
    tok, n = parity.encode(["1", "10", "1", "110", "0", "1"])
    np.testing.assert_array_equal(m.classify(tok, n), parity.classify(tok, n))
    assert m.queries == 4 and model.calls == 1
    m.prefetch([(1,), (1, 1), (0, 0, 0)])
    assert m.queries == 6 and model.calls == 2 and len(m.asked) == 3
    assert m.word((1, 1)) == 0 and m.word(()) == int(parity.output[parity.start])
    assert model.calls == 2  # cached


def test_oracle_strings_are_seeded_and_reach_the_longest_length(dyck2):
    a = oracle_strings(dyck2, max_length=80, n_per_length=3, seed=0)
    b = oracle_strings(dyck2, max_length=80, n_per_length=3, seed=0)
    c = oracle_strings(dyck2, max_length=80, n_per_length=3, seed=1)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not np.array_equal(a[0], c[0])
    assert int(a[1].max()) == 80 and (a[2] == "all").sum() == 2 + 4 + 8 + 16 + 32 + 64 + 128 + 256 + 512 + 1024
    assert {"paper", "near_miss", "ec_stratified", "uniform"} <= set(a[2].tolist())


def test_extraction_is_reproducible(tomita7):
    model = CountModel(lambda z, o: (o % 2 == 0))
    r1, r2 = (extract_automaton(model, tomita7, max_length=40, n_per_length=3, seed=5)
              for _ in range(2))
    assert r1.to_dict()["automaton"] == r2.to_dict()["automaton"]
    assert r1.counterexamples == r2.counterexamples and r1.queries == r2.queries


def test_bad_arguments_and_a_missing_aalpy(parity, monkeypatch):
    with pytest.raises(InputError, match="language"):
        extract_automaton(AutomatonModel(parity))
    with pytest.raises(InputError, match="oracle"):
        extract_automaton(AutomatonModel(parity), parity, oracle="random")
    with pytest.raises(InputError, match="no binary operator"):
        extract_monoid(AutomatonModel(parity), parity)
    for name in [m for m in sys.modules if m == "aalpy" or m.startswith("aalpy.")]:
        monkeypatch.setitem(sys.modules, name, None)  # as if AALpy were not installed
    monkeypatch.delitem(sys.modules, "monoidlab.probing._lstar", raising=False)
    import monoidlab.probing

    monkeypatch.delattr(monoidlab.probing, "_lstar", raising=False)
    with pytest.raises(MissingDependency, match="pip install 'aalpy"):
        extract_automaton(AutomatonModel(parity), parity)


def test_import_monoidlab_loads_neither_aalpy_nor_torch():
    code = ("import sys, monoidlab as ml; assert 'extract_monoid' in dir(ml); "
            "print([m for m in ('aalpy', 'torch') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert ml.extract_automaton is extract_automaton and ml.extract_monoid is extract_monoid


# --------------------------------------------------------------------------- monoids


def _slow_failures(t):
    k = len(t)
    return sum(t[t[a][b]][c] != t[a][t[b][c]] for a in range(k) for b in range(k)
               for c in range(k))


def test_associativity_is_exact_on_the_syntactic_monoid_and_catches_a_perturbation(rng):
    for name in ("tomita-3", "dyck-2", "cycle-navigation"):
        m = ml.load_language(name).monoid()
        assert associativity_failures(m.table)["failing"] == 0
        bad = np.array(m.table)
        bad[3, 4] = (bad[3, 4] + 1) % m.size
        res = associativity_failures(bad)
        assert res["failing"] == _slow_failures(bad.tolist()) > 0
        a, b, c = res["examples"][0]
        assert bad[bad[a, b], c] != bad[a, bad[b, c]]
    for _ in range(5):  # reference comparison on random tables
        t = rng.integers(0, 5, size=(5, 5))
        assert associativity_failures(t)["failing"] == _slow_failures(t.tolist())


def test_identities():
    m = ml.load_language("tomita-7").monoid()
    assert identities(m.table) == [0]
    assert identities([[1, 1], [1, 1]]) == []
    with pytest.raises(InputError, match="square"):
        identities([[0, 2], [1, 1]])


def test_a_planted_composition_error_is_found_and_named():
    lang = ml.load_language("tomita-4")
    m = lang.monoid()
    assert compare_with_monoid(m.table, m.letters, m).isomorphic
    words = m.labels()
    # a product the letters' map never uses: neither side a letter, nor the identity
    letters = set(np.asarray(m.letters).tolist()) | {0}
    i, j = next((i, j) for i in range(m.size) for j in range(m.size)
                if i not in letters and j not in letters and m.table[i, j] != j)
    bad = np.array(m.table)
    bad[i, j] = j
    c = compare_with_monoid(bad, m.letters, m)
    assert not c.isomorphic and c.n_differences == 1
    assert c.differences == [{"left": words[i], "right": words[j],
                              "true": words[int(m.table[i, j])], "extracted": words[j]}]
    # a wrong letter image breaks the map itself: merged ECs, unreached elements
    c = compare_with_monoid(m.table, [m.letters[0], m.letters[0]], m)
    assert not c.isomorphic and c.merged and c.unreached


def test_an_exact_operator_model_extracts_to_its_monoid():
    from monoidlab.probing.extract_monoid import _MonoidModel

    for name in ("parity", "tomita-4", "cycle-navigation"):
        lang = ml.load_language(name)
        r = extract_monoid(_MonoidModel(lang), lang, n_strings=300, seed=1)
        assert r.closed and r.comparison.isomorphic and r.associativity["failing"] == 0
        # k comes from the model alone; the identity's class holds ε alone in tomita-4, so no
        # node state holds it and the table is M without its identity
        assert r.k == r.ecs_seen == (r.true_size - (name == "tomita-4"))
        assert r.comparison.semigroup == (name == "tomita-4")
        again = extract_monoid(_MonoidModel(lang), lang, n_strings=300, seed=1)
        np.testing.assert_array_equal(r.table, again.table)


def test_a_table_right_only_consistent_is_not_called_closed():
    """An operator that is exact when its right argument is a letter (so every wa lands where
    the table says) but ignores a left letter (a·y = y): right extensions alone would accept
    this table at k = |M|; the left extensions aw expose it."""
    from monoidlab.probing.extract_monoid import _MonoidModel

    lang = ml.load_language("tomita-5")
    m = lang.monoid()
    model = _MonoidModel(lang)
    tab = torch.as_tensor(np.array(m.table))
    letters = torch.as_tensor(np.array(m.letters))

    def skewed(a, b):
        x, y = a.argmax(-1), b.argmax(-1)
        left_letter = (x[:, None] == letters).any(-1) & ~(y[:, None] == letters).any(-1)
        return model._hot(torch.where(left_letter, y, tab[x, y]))

    model.apply_operator = skewed
    r = extract_monoid(model, lang, n_strings=300, seed=1)
    assert not r.closed
    assert all(s["consistency"] < 0.98 for s in r.k_scan if s["purity"] == 1.0
               and s["closure"] == 1.0)
    exact = extract_monoid(_MonoidModel(lang), lang, n_strings=300, seed=1)
    assert exact.closed and exact.comparison.isomorphic


# --------------------------------------------------------------------------- a trained model


@pytest.fixture(scope="module")
def parity_run(tmp_path_factory):
    from monoidlab.training import RunConfig, train

    cfg = RunConfig(language="parity", model="mlp-ldru", steps=100, batch_size=32,
                    train_lengths="1:8", test_lengths="41:42", test_samples=4, seed=0,
                    model_options={"d": 16, "dropout": 0.0, "padding": "identity"},
                    sampler="uniform", lr=3e-3, optimizer="adam", device="cpu", threads=1)
    out = tmp_path_factory.mktemp("extract") / "run"
    train(cfg, out, progress=False, evaluate_at_end=False)
    return out


def test_a_tiny_trained_mlp_ldru(parity_run):
    a = extract_automaton(parity_run, max_length=120, n_per_length=4)
    assert a.status == "converged" and a.agreement["all"]["extracted_model"] == 1.0
    assert a.comparison.isomorphic == (a.agreement["all"]["model_language"] == 1.0)
    assert a.comparison.isomorphic
    r = extract_monoid(parity_run, n_strings=300)
    assert r.k_scan[0]["purity"] < 1  # one cluster cannot hold both classes
    assert r.closed and r.k == 2 and r.comparison.isomorphic and r.identity
    assert r.true_size == 2


def test_a_tiny_trained_pr_lstm_and_its_untrained_twin(tmp_path):
    """PR-LSTM's binary cell is an operator too (not associative by construction): trained on
    parity it extracts to Z2 with an exact table; the same model untrained does not."""
    from monoidlab.models import build_model
    from monoidlab.training import RunConfig, train

    cfg = RunConfig(language="parity", model="pr-lstm", model_options={"hidden": 16},
                    steps=400, batch_size=32, train_lengths="1:16", test_lengths="41:42",
                    test_samples=4, seed=0, lr=3e-3, device="cpu", threads=1)
    train(cfg, tmp_path / "run", progress=False, evaluate_at_end=False)
    r = extract_monoid(tmp_path / "run", n_strings=500)
    assert r.closed and r.k == 2 and r.comparison.isomorphic and r.true_size == 2
    assert r.associativity["failing"] == 0 and r.associativity["triples"] == 8
    a = extract_automaton(tmp_path / "run", max_length=120, n_per_length=4)
    assert a.comparison.isomorphic
    torch.manual_seed(0)
    lang = ml.load_language("parity")
    untrained = build_model("pr-lstm", 2, 2, hidden=16)
    u = extract_monoid(untrained, lang, lengths=range(1, 17), n_strings=500)
    assert not u.comparison.isomorphic


def test_cli_probe_extract(parity_run, tmp_path, capsys):
    from monoidlab.cli import main

    with pytest.raises(UsageError, match="did you mean 'monoid'"):
        from monoidlab.cli.probe import _extractions

        _extractions("automaton,monoit")
    main(["probe", str(parity_run), "--extract", "automaton,monoid", "--no-init", "--no-umap",
          "--n-strings", "20", "--n-triples", "0", "--clusterers", "kmeans",
          "--out", str(tmp_path / "p")])
    text = capsys.readouterr().out
    assert "extracted automaton: 2 states" in text and "extracted monoid: k = 2" in text
    data = json.loads((tmp_path / "p" / "probe.json").read_text())
    assert data["extraction"]["automaton"]["comparison"]["isomorphic"] is True
    assert data["extraction"]["monoid"]["comparison"]["isomorphic"] is True


def test_report_section_names_the_differences():
    import matplotlib

    matplotlib.use("Agg")
    from monoidlab.probing.extract_monoid import _MonoidModel
    from monoidlab.probing.extraction_report import extraction_section

    lang = ml.load_language("tomita-4")
    r = extract_monoid(_MonoidModel(lang), lang, n_strings=200)
    t = np.array(r.table)
    i, j = 3, 5
    t[i, j] = (t[i, j] + 1) % r.k
    planted = compare_with_monoid(t, r.letters, lang.monoid(), r.names)
    assert planted.n_differences >= 1
    r.table, r.comparison = t, planted
    parts, figures = extraction_section(None, r)
    html = "".join(parts)
    d = planted.differences[0]
    assert f"<td>{d['left']}</td><td>{d['right']}</td>" in html and len(figures) == 1
    ax = figures[0][0].axes[0]
    assert len(ax.patches) == planted.n_differences  # each differing cell outlined


@pytest.mark.parametrize("name", ["extract_automaton", "extract_monoid", "extraction_report"])
def test_doctests(name):
    import doctest
    import importlib

    mod = importlib.import_module(f"monoidlab.probing.{name}")
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert res.attempted > 0 and res.failed == 0


# --------------------------------------------------------------------------- every classifier

def _registry_classifiers() -> list[str]:
    from monoidlab.models import REGISTRY
    from monoidlab.models.protocols import Classifier

    return sorted(n for n, s in REGISTRY.items() if s.can(Classifier))


@pytest.mark.parametrize("name", _registry_classifiers())
def test_every_classifier_of_the_registry_extracts(name):
    """An untrained tiny model of each family: L* runs to a verdict, every answer it used is
    the model's own (one forward of the oracle strings agrees with the cache), and the
    agreement figures are what a direct forward gives."""
    from tests.test_empty_batch import tiny

    lang = ml.load_language("parity")
    model = tiny(name, lang.n_symbols, 2)
    r = extract_automaton(model, lang, max_states=6, max_length=24, n_per_length=2)
    assert r.status in ("converged", "max_states", "max_queries", "max_rounds")
    assert r.oracle_strings > 0 and r.forwards >= 1
    tokens, lengths, _ = oracle_strings(lang, 24, 2, 0)
    # a direct forward of the strings of each length together (no padding: each batch is one
    # length), and of the first string of each length alone, which must give the same answer
    direct = np.empty(len(lengths), np.int64)
    with torch.no_grad():
        for L in np.unique(lengths).tolist():
            rows = np.flatnonzero(lengths == L)
            direct[rows] = model(torch.as_tensor(tokens[rows, :L]),
                                 torch.full((len(rows),), L)).argmax(-1).numpy()
            alone = model(torch.as_tensor(tokens[rows[:1], :L]), torch.as_tensor([L]))
            assert int(alone.argmax(-1)) == direct[rows[0]], (L, "batched != alone")
    agree = float((direct == lang.classify(tokens, lengths)).mean())
    assert r.agreement["all"]["model_language"] == pytest.approx(agree)


def test_extract_monoid_says_each_k_it_tries():
    """The report's longest stretch narrates: ``progress`` hears every k as it is tried."""
    import monoidlab as ml
    from monoidlab.probing.extract_monoid import _MonoidModel, extract_monoid

    lang = ml.load_language("tomita-4")
    heard = []
    r = extract_monoid(_MonoidModel(lang), lang, n_strings=300, progress=heard.append)
    assert len(heard) >= r.k and all("k = " in h for h in heard)
    assert [int(h.split("k = ")[1].split()[0]) for h in heard] == list(range(1, len(heard) + 1))
