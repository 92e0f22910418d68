"""Certificates on a sub-language (``within``): the balanced table, the prefix scan and the
automaton certifiers, each against an exhaustive search over the strings of the kept classes
only, and ``monoidlab.certify`` on a modular-arithmetic model that is right on every
well-formed expression and wrong on an incomplete one (both verdicts shown)."""

from __future__ import annotations

import itertools
import json
from types import SimpleNamespace

import numpy as np
import pytest

import monoidlab as ml
from monoidlab.algebra.random_languages import counter_with_reset
from monoidlab.evaluation.automaton_certificate import certify_automaton
from monoidlab.evaluation.certificate import certify_table
from monoidlab.evaluation.model_certificate import certify_finite_model
from monoidlab.models.finite import FiniteTable, monoid_table
from monoidlab.models.transform_tree import TransformTree

LANGS = {"cycle-navigation": ml.load_language("cycle-navigation"),
         "dyck-2": ml.load_language("dyck-2"),
         "counter": counter_with_reset(3, alphabet=("a", "r"))}


def _strings(lang, n):
    """Every string of length n, in shortlex (lexicographic) order."""
    return np.array(list(itertools.product(range(lang.n_symbols), repeat=n)), np.int64)


def _brute(said_of, lang, kept, max_length):
    """The shortlex-least shortest string of a kept class that ``said_of`` misreads."""
    for n in range(1, max_length + 1):
        tokens = _strings(lang, n)
        lengths = np.full(len(tokens), n)
        truth = lang.classify(tokens, lengths)
        names = np.array([lang.classes[c] for c in truth], dtype=object)
        bad = np.flatnonzero((said_of(tokens, lengths) != truth) & np.isin(names, list(kept)))
        if bad.size:
            return "".join(str(lang.alphabet[a]) for a in tokens[bad[0]])
    return None


def _planted(exact: FiniteTable, rng, lang) -> FiniteTable:
    table, head = exact.table.copy(), exact.head.copy()
    k = exact.n_codes
    for _ in range(int(rng.integers(1, 3))):
        table[tuple(rng.integers(k, size=2))] = rng.integers(k)
    if rng.random() < 0.5:
        head[rng.integers(k)] = rng.integers(lang.n_classes)
    return FiniteTable(exact.leaf, table, head, exact.padding, exact.pad_leaf,
                       layout=exact.layout)


@pytest.mark.parametrize("layout", ["balanced", "scan"])
def test_table_verdicts_on_a_class_equal_brute_force(layout):
    """Planted tables, each certified on one class and on every string: the verdict and the
    shortest counterexample on the class equal an exhaustive search over its strings, and a
    table wrong only outside the class is proved correct on it."""
    rng = np.random.default_rng(20261205)
    outcomes = {"correct only on the class": 0, "refuted on the class": 0}
    for trial in range(60):
        name = sorted(LANGS)[trial % 3]
        lang = LANGS[name]
        exact = monoid_table(lang, layout=layout) if layout == "scan" else monoid_table(lang)
        t = _planted(exact, rng, lang)
        kept = [lang.classes[int(rng.integers(lang.n_classes))]]
        cert = certify_table(t, lang, within=kept)
        every = certify_table(t, lang)
        assert cert.within == tuple(kept) and every.within is None
        want = _brute(t.fold, lang, kept, 9)
        if cert.correct:
            assert want is None, (name, kept, want)
            if not every.correct:
                outcomes["correct only on the class"] += 1
                assert lang.classes[every.expected] not in kept
        else:
            outcomes["refuted on the class"] += 1
            assert cert.confirmed and lang.classes[cert.expected] in kept
            if cert.counterexample_length <= 9:
                assert cert.counterexample == want, (name, kept, cert, want)
            # a proof over every string is at least as hard to get
            assert not every.correct
            assert every.counterexample_length <= cert.counterexample_length
    assert outcomes["correct only on the class"] >= 3 and outcomes["refuted on the class"] >= 10, \
        outcomes


def test_automaton_verdicts_on_a_class_equal_brute_force():
    """Random small automata certified on random sets of classes, against the same search."""
    rng = np.random.default_rng(7)
    both = 0
    for trial in range(150):
        lang = ml.load_language(["cycle-navigation", "modular-arithmetic", "tomita-5"][trial % 3])
        n = int(rng.integers(1, 6))
        delta = rng.integers(0, n, (n, lang.n_symbols))
        output = rng.integers(0, lang.n_classes, n)
        kept = list(rng.choice(lang.classes, size=int(rng.integers(1, lang.n_classes)),
                               replace=False))
        cert = certify_automaton(delta, output, 0, lang, within=kept)

        def said(tokens, lengths, delta=delta, output=output):
            q = np.zeros(len(tokens), np.int64)
            for i in range(tokens.shape[1]):
                q = delta[q, tokens[:, i]]
            return output[q]

        bound = 4 if lang.n_symbols > 4 else 8
        want = _brute(said, lang, kept, bound)
        if cert.correct:
            assert want is None
        elif cert.counterexample_length <= bound:
            assert cert.counterexample == want and cert.confirmed
            assert lang.classes[cert.expected] in kept
        both += cert.correct != certify_automaton(delta, output, 0, lang).correct
    assert both >= 3  # some automata are right on the kept classes only


def test_a_model_right_on_the_well_formed_expressions_only(mod_arith_right_on_expressions):
    """Proved on the well-formed expressions (the run's sub-language, the default), refuted
    over every string by '+', both said; ``within=None`` gives the second verdict alone."""
    lang = ml.load_language("modular-arithmetic")
    model = mod_arith_right_on_expressions()
    # a short test set for the agreement check (near-miss expressions of 41..500 cost ~30 s)
    run = SimpleNamespace(test_lengths="41:47", eval_kinds=["paper"], within="auto",
                          model="transform-tree")
    c = certify_finite_model(model, lang, run)
    assert c.correct and c.certificate.within == ("0", "1", "2", "3", "4")
    assert c.agreement == 1.0
    assert c.all_strings is not None and not c.all_strings.correct
    assert c.all_strings.counterexample == "+" and c.all_strings.expected_name == "incomplete"
    assert "on the strings of classes 0, 1, 2, 3, 4" in c.text()
    assert "over every string: WRONG" in c.text()
    d = c.to_dict()
    assert d["correct"] and d["all_strings"]["counterexample"] == "+"
    every = certify_finite_model(model, lang, run, within=None)
    assert not every.correct and every.all_strings is None and every.certificate.within is None
    # on parity, where "auto" keeps every string, nothing is added
    parity = certify_finite_model(TransformTree(2, 2, states=2), ml.load_language("parity"),
                                  run)
    assert parity.all_strings is None and parity.certificate.within is None


def test_a_run_is_certified_on_its_sub_language_from_the_trainer_and_the_cli(tmp_path, capsys):
    """A short modular-arithmetic run: results.json's certificate is about its well-formed
    expressions with the every-string verdict beside it; ``monoidlab certify RUN`` says the
    same, and ``--within none`` certifies every string alone."""
    from monoidlab.cli import main
    from monoidlab.training import train
    from monoidlab.training.parse import config_from_dict

    cfg = config_from_dict({"language": "modular-arithmetic", "model": "transform-tree",
                            "steps": 20, "batch_size": 16, "train_lengths": "1:7",
                            "test_lengths": "41:45", "test_samples": 8, "eval_every": 20,
                            "threads": 1, "seed": 0, "eval_kinds": ["paper"]}, "t")
    result = train(cfg, tmp_path / "run", progress=False)
    cert = result["certificate"]
    assert cert["certificate"]["within"] == ["0", "1", "2", "3", "4"] and "all_strings" in cert
    assert main(["certify", str(tmp_path / "run"), "--json"]) in (0, None)
    out = json.loads(capsys.readouterr().out)
    assert out["certificate"]["within"] == ["0", "1", "2", "3", "4"]
    assert out["all_strings"]["within"] is None and out["correct"] == cert["correct"]
    assert main(["certify", str(tmp_path / "run"), "--within", "none", "--json"]) in (0, None)
    out = json.loads(capsys.readouterr().out)
    assert out["certificate"]["within"] is None and "all_strings" not in out
