"""Certify a trained model or run: correct at every length (a proof), or its shortest
counterexample.

A *finite* model (the snapped MLP-LDRU, the transformation tree model) is certified itself
(:func:`~monoidlab.evaluation.model_certificate.certify_finite_model`). A *continuous* tree
model has no finite table; its operator can still be read as one on clusters of its node
states (:func:`~monoidlab.probing.extract_monoid.extract_monoid`). That table is certified
instead, and the result says plainly that the proof is about this surrogate, with how often
the surrogate and the model agree on the run's strict test strings.

Example
-------
>>> import torch; _ = torch.manual_seed(0)
>>> from monoidlab.models.snap import SnappedMLPLDRU
>>> c = certify(SnappedMLPLDRU(2, 2, d=8, codes=4), "parity")   # untrained: wrong somewhere
>>> c.subject, c.correct, c.certificate.counterexample_length is not None
('model', False, True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from monoidlab._checks import scalar_args
from monoidlab.evaluation.certificate import certify_table
from monoidlab.evaluation.model_certificate import (
    ModelCertificate,
    agreement,
    both_scopes,
    certify_finite_model,
    confirm,
    is_finite_model,
    run_within,
)
from monoidlab.probing._target import resolve_target

__all__ = ["certify"]


@scalar_args
def certify(model_or_run: Any, language: Any = None, *, offsets: bool = False,
            within: Any = "run", device: str | None = None, seed: int = 0, **extract: Any
            ) -> ModelCertificate:
    """The certificate of a model (with its ``language``) or of a run folder / checkpoint.

    offsets : also certify every left offset of every string (the strict tests place strings
        at offset 0, which is what the default certifies; a model trained with random
        offsets can be asked for the stronger claim).
    within : the strings the claim is about: ``"run"`` the run's own sub-language (its
        config's ``within``; "auto" for a bare model: modular arithmetic's well-formed
        expressions, every string elsewhere), None every string, or classes as training's
        ``within``. On a sub-language the verdict over every string is given beside it.
    seed : of the test strings on which the table is compared with the model.
    extract : keyword arguments of ``extract_monoid`` for a continuous model.
    """
    target = resolve_target(model_or_run, language, device)
    model, lang = target.model, target.language
    if is_finite_model(model):
        return certify_finite_model(model, lang, target.config, offsets=offsets, within=within,
                                    seed=seed, source=target.source)
    from monoidlab.geometry import Padding
    from monoidlab.models.finite import FiniteTable
    from monoidlab.probing.extract_monoid import extract_monoid

    ex = extract_monoid(model, lang, **extract)
    table = FiniteTable(np.asarray(ex.letters), np.asarray(ex.table), np.asarray(ex.classes),
                        Padding.IDENTITY)
    cert, every = both_scopes(lambda w: certify_table(table, lang, offsets=offsets, within=w),
                              lang, run_within(target.config, within))
    agree, n = agreement(model, table, lang, target.config, seed)
    name = type(model).__name__ if target.config is None else target.config.model
    # a surrogate's counterexample is the table's; whether the model errs on it too is what
    # ``confirmed`` says
    return ModelCertificate("surrogate", cert, confirm(model, cert), agree, n, target.source,
                            name, every)
