"""Sequence models behind one interface, looked up by name.

Every model is a ``torch.nn.Module`` built as ``Model(vocab_size, n_classes, **hyper)``; what it
can do beyond ``forward(tokens, lengths) -> logits (B, n_classes)`` is stated by the Protocols
of :mod:`monoidlab.models.protocols` (per-position predictions, node states, a learned
operator, offsets, a regulariser), which the trainer and the probes ask.

Example
-------
>>> from monoidlab.models import build_model
>>> model = build_model("rnn", vocab_size=2, n_classes=2, hidden=8)
>>> type(model).__name__
'RNNClassifier'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from monoidlab.errors import UnknownName

if TYPE_CHECKING:
    from torch import nn

# name -> "module:Class"; imported lazily so that `import monoidlab` stays fast (torch is ~3 s).
REGISTRY: dict[str, str] = {
    "mlp-ldru": "monoidlab.models.mlp_ldru:MLPLDRU",
    "pr-lstm": "monoidlab.models.pr_lstm:PRLSTM",
    "pr-rnn": "monoidlab.models.pr_lstm:PRRNN",
    "rnn": "monoidlab.models.recurrent:RNNClassifier",
    "lstm": "monoidlab.models.recurrent:LSTMClassifier",
    "stack-rnn": "monoidlab.models.stack_rnn:StackRNN",
    "tape-rnn": "monoidlab.models.tape_rnn:TapeRNN",
    "transformer": "monoidlab.models.transformer:TransformerClassifier",
    "decoder-lm": "monoidlab.models.decoder:DecoderLM",
}


def model_class(name: str) -> type[nn.Module]:
    """Return the class registered under ``name`` (clear error for an unknown name)."""
    try:
        target = REGISTRY[name]
    except KeyError:
        raise UnknownName(
            f"unknown model {name!r}; known models: {', '.join(sorted(REGISTRY))}"
        ) from None
    module, cls = target.split(":")
    return getattr(importlib.import_module(module), cls)


def build_model(name: str, vocab_size: int, n_classes: int, **hyper: Any) -> nn.Module:
    """Build the model registered under ``name``."""
    return model_class(name)(vocab_size=vocab_size, n_classes=n_classes, **hyper)


def available_models() -> list[str]:
    return sorted(REGISTRY)
