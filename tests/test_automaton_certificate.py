"""monoidlab.evaluation.automaton_certificate: a model that is a DFA, certified as that DFA,
against the table certificate and brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import monoidlab as ml
from monoidlab.errors import InputError, MonoidTooLarge
from monoidlab.evaluation.automaton_certificate import certify_automaton
from monoidlab.evaluation.certificate import certify_table
from monoidlab.evaluation.model_certificate import certify_finite_model
from monoidlab.models.transform_tree import TransformTree

LANGUAGES = ["parity", "tomita-3", "tomita-5", "dyck-2", "cycle-navigation", "prefix-1-2"]


def _brute(delta, output, start, lang, max_length):
    """The shortlex-least shortest misread string up to ``max_length`` (None: none)."""
    true_delta, true_out = np.asarray(lang.delta), np.asarray(lang.output)
    for n in range(1, max_length + 1):
        for word in itertools.product(range(lang.n_symbols), repeat=n):
            q, t = start, lang.start
            for a in word:
                q, t = delta[q, a], true_delta[t, a]
            if output[q] != true_out[t]:
                return "".join(str(lang.alphabet[a]) for a in word)
    return None


@given(st.sampled_from(LANGUAGES), st.integers(1, 5), st.integers(0, 2**31 - 1))
def test_the_verdict_and_the_counterexample_are_brute_forces(name, n, seed):
    """Random small automata (often wrong, sometimes the language's own): the certificate's
    verdict and shortest counterexample equal an exhaustive search over every string up to
    n·|Q| letters (a shortest failure, when there is one, is at most that long)."""
    lang = ml.load_language(name)
    rng = np.random.default_rng(seed)
    if rng.random() < 0.3:  # the language's own machine, sometimes with one wrong output
        delta, output = np.asarray(lang.delta).copy(), np.asarray(lang.output).copy()
        start = int(lang.start)
        if rng.random() < 0.5:
            output[rng.integers(len(output))] = rng.integers(lang.n_classes)
    else:
        delta = rng.integers(0, n, (n, lang.n_symbols))
        output = rng.integers(0, lang.n_classes, n)
        start = 0
    cert = certify_automaton(delta, output, start, lang)
    bound = min(len(delta) * np.asarray(lang.delta).shape[0], 9)
    want = _brute(delta, output, start, lang, bound)
    if cert.correct:
        assert want is None
    elif cert.counterexample_length <= bound:
        assert cert.counterexample == want and cert.confirmed
    else:  # too long to search: the brute force saw nothing shorter
        assert want is None


@pytest.mark.parametrize("name", ["parity", "tomita-4", "dyck-2", "prefix-2-2"])
def test_the_transformation_tree_is_certified_alike_as_a_dfa_and_as_a_table(name):
    """The same random transformation trees, certified through their finite table (the
    transformation semigroup) and as automata: the same verdict, the same counterexample."""
    lang = ml.load_language(name)
    for seed in range(6):
        torch.manual_seed(seed)
        model = TransformTree(lang.n_symbols, lang.n_classes, states=3).eval()
        dfa = model.learned_automaton()
        a = certify_automaton(dfa.delta, dfa.output, dfa.start, lang)
        t = certify_table(model.finite_table(), lang)
        assert a.correct == t.correct
        assert a.counterexample == t.counterexample and a.predicted == t.predicted


def test_a_model_whose_table_is_too_large_is_still_certified():
    """A transformation tree of 12 states whose transformation semigroup is far past the
    table's budget: certified as an automaton (a counterexample, confirmed by its forward)."""
    lang = ml.load_language("tomita-5")
    torch.manual_seed(3)
    model = TransformTree(lang.n_symbols, lang.n_classes, states=12).eval()
    with pytest.raises(MonoidTooLarge):
        model.finite_table(max_codes=2000)
    cert = certify_finite_model(model, lang)
    assert cert.certificate.layout == "automaton" and cert.confirmed and cert.agreement == 1.0
    assert cert.text().startswith("certificate of TransformTree (12 states, as an automaton")


def test_the_languages_own_machine_is_proved():
    for name in LANGUAGES:
        lang = ml.load_language(name)
        cert = certify_automaton(lang.delta, lang.output, lang.start, lang)
        assert cert.correct and 1 <= cert.pairs <= lang.n_states
        assert "agree on all" in cert.text()


def test_bad_automata_are_named():
    lang = ml.load_language("parity")
    with pytest.raises(InputError, match="has 3 letters, the language 'parity' 2"):
        certify_automaton(np.zeros((2, 3), int), np.zeros(2, int), 0, lang)
    with pytest.raises(InputError, match="transitions in 0..1"):
        certify_automaton(np.array([[0, 2], [1, 0]]), np.zeros(2, int), 0, lang)
    with pytest.raises(InputError, match=r"integer array"):
        certify_automaton(np.zeros((2, 2)), np.zeros(2, int), 0, lang)
    with pytest.raises(MonoidTooLarge, match="max_pairs=3"):
        certify_automaton(np.zeros((2, 2), int), np.zeros(2, int), 0, lang, max_pairs=3)


def test_refinement_certifies_a_grown_transformation_tree_instead_of_refusing_it():
    """Refinement asks the same exact certificate: a 12-state tree past the table's budget
    gets a verdict and a counterexample to train on, and its mined strings are read by its
    automaton (the table would not build)."""
    from monoidlab.evaluation.certificate import Certificate
    from monoidlab.evaluation.model_certificate import finite_classifier
    from monoidlab.training.refine import _certify

    lang = ml.load_language("tomita-5")
    torch.manual_seed(3)
    model = TransformTree(lang.n_symbols, lang.n_classes, states=12)
    cert = _certify(model, lang)
    assert isinstance(cert, Certificate) and not cert.correct and cert.counterexample
    tokens = np.array([list(cert.counterexample_tokens)])
    got = finite_classifier(model)(tokens, [tokens.shape[1]])
    assert got.tolist() == [cert.predicted] and model.training  # its mode is kept
