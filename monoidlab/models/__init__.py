"""Sequence models behind one interface, looked up by name in the registry.

Every model is a ``torch.nn.Module`` built as ``Model(vocab_size, n_classes, options)`` (or
with the options as keywords); its options are a frozen dataclass beside it
(:mod:`monoidlab.models.options`), and what it can do beyond ``forward(tokens, lengths) ->
logits (B, n_classes)`` is declared in its registry entry (:mod:`monoidlab.models.registry`),
as the Protocols of :mod:`monoidlab.models.protocols`.

Example
-------
>>> from monoidlab.models import build_model, model_spec
>>> type(build_model("rnn", vocab_size=2, n_classes=2, hidden=8)).__name__
'RNNClassifier'
>>> model_spec("mlp-ldru").make_options({"d": 32}).padding
<Padding.LEARNED: 'learned'>
"""

from monoidlab.models.registry import (
    REGISTRY,
    ModelSpec,
    able,
    build_model,
    model_class,
    model_spec,
    require,
)

__all__ = ["REGISTRY", "ModelSpec", "model_spec", "model_class", "build_model", "able",
           "require"]
