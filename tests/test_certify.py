"""ml.certify on models and runs: the finite model itself, or a continuous model's surrogate."""

import numpy as np
import torch

import monoidlab as ml
from monoidlab.evaluation.model_certificate import _test_strings
from monoidlab.models.transform_tree import TransformTree


def test_the_agreement_strings_show_both_classes_of_a_dyck_language():
    """Agreement is measured on test lengths of both parities: at odd lengths a Dyck language
    has one class, and a spread of odd lengths only would let a constant model agree."""
    lang = ml.load_language("dyck-4")
    tokens, lengths = _test_strings(lang, None, 0)
    truth = lang.classify(tokens, lengths)
    assert set(np.unique(lengths % 2)) == {0, 1} and set(np.unique(truth)) == {0, 1}


def test_a_finite_model_is_certified_itself_and_its_counterexample_confirmed():
    torch.manual_seed(1)
    model = TransformTree(2, 2, states=3)
    c = ml.certify(model, "dyck-2")
    assert c.subject == "model" and not c.correct and c.confirmed
    assert c.agreement == 1.0  # the table is the model on every test string
    assert c.text().startswith("certificate of TransformTree")
    assert "CORRECT" not in c._repr_html_() and "not certified" in c._repr_html_()


def test_a_continuous_model_gets_a_surrogate_said_plainly(tiny_ldru_run):
    c = ml.certify(tiny_ldru_run, n_strings=100)
    assert c.subject == "surrogate" and not c.correct  # never a proof about the model
    assert "SURROGATE" in c.text() and "not of the model" in c.text()
    assert 0.0 <= c.agreement <= 1.0 and c.agreement_strings > 0
    assert c.to_dict()["subject"] == "surrogate"


def test_certifying_a_finite_model_imports_no_scikit_learn():
    """monoidlab.probing loads each name's module on first use: certifying a transformation
    tree reaches neither scikit-learn nor umap (clustering.py's), and every name of
    ``monoidlab.probing.__all__`` still imports."""
    import subprocess
    import sys

    code = ("import sys, monoidlab as ml; from monoidlab.models.transform_tree import "
            "TransformTree; c = ml.certify(TransformTree(2, 2, states=2), 'parity'); "
            "assert not any(m.split('.')[0] in ('sklearn', 'umap') for m in sys.modules), "
            "sorted(m for m in sys.modules if m.startswith(('sklearn', 'umap')))[:3]; "
            "import monoidlab.probing as p; [getattr(p, n) for n in p.__all__]; "
            "assert sorted(p.__all__) == sorted(p._MODULE_OF), 'lazy names != __all__'; "
            "assert 'sklearn' in sys.modules; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
