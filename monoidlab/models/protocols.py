"""What a model can do, as Protocols: the names of the capabilities a model declares in its
registry entry (:mod:`monoidlab.models.registry`), and the method signatures the trainer, the
evaluator and the probes call.

Every model is a ``torch.nn.Module``; most are a :class:`Classifier`. A config asks the
registry, not the class, which capabilities a model has: a runtime Protocol only checks method
names (any module with ``forward`` passes as a :class:`Classifier`), so the declarations are
the truth and a test checks that each declared capability's methods exist. The table of who
declares what is generated from the registry (docs/architecture.md,
:func:`~monoidlab.models.registry.capability_table_markdown`); :func:`capabilities` lists the
Protocols a class implements.

Example
-------
>>> from monoidlab.models import model_class
>>> sorted(capabilities(model_class("mlp-ldru")))
['Classifier', 'ConsistentModel', 'NodeStateModel', 'OffsetModel', 'OperatorModel', 'PrefixModel', 'RegularisedModel']
>>> issubclass(model_class("lstm"), OperatorModel)
False
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # torch stays out of `import monoidlab`
    from torch import Tensor

    from monoidlab.models.common import NodeStates

__all__ = ["Classifier", "PrefixModel", "TapeModel", "NodeStateModel", "PrefixStateModel",
           "OperatorModel", "OffsetModel", "RegularisedModel", "ConsistentModel", "GenerativeModel",
           "FiniteModel", "AuxiliaryLossModel", "capabilities", "PROTOCOLS"]


@runtime_checkable
class Classifier(Protocol):
    """``forward(tokens (B, T), lengths (B,)) -> logits (B, n_classes)`` read at each string's end."""

    def forward(self, tokens: Tensor, lengths: Tensor) -> Tensor: ...


@runtime_checkable
class PrefixModel(Protocol):
    """``forward_all(tokens, lengths) -> logits (B, T, n_classes)``: one prediction per position;
    position t depends on tokens 0..t only."""

    def forward_all(self, tokens: Tensor, lengths: Tensor) -> Tensor: ...


@runtime_checkable
class TapeModel(Protocol):
    """``forward_tape(tokens, lengths, input_lengths) -> logits (B, T, n_classes)``: predictions
    on Delétang's tape that also use the length of its input part (Tape-RNN's jumps move by it,
    as the reference passes the input length to its core). The tape problem calls it instead of
    ``forward_all``."""

    def forward_tape(self, tokens: Tensor, lengths: Tensor, input_lengths: Tensor) -> Tensor: ...


@runtime_checkable
class NodeStateModel(Protocol):
    """``node_states(tokens, lengths) -> NodeStates``: every internal node's state with its level
    and spans, in the node order of :func:`monoidlab.strings.schedules.schedule`."""

    def node_states(self, tokens: Tensor, lengths: Tensor) -> NodeStates: ...


@runtime_checkable
class PrefixStateModel(Protocol):
    """``prefix_states(tokens, lengths) -> (B, T, hidden)``: the state after every position."""

    def prefix_states(self, tokens: Tensor, lengths: Tensor) -> Tensor: ...


@runtime_checkable
class OperatorModel(Protocol):
    """A learned binary operator ``x ⊙ y`` on flat state vectors, which the associativity and
    identity checks apply to the roots of held-out strings.

    * ``root_states(tokens, lengths) -> (B, D)``: each string's root, as the operator sees it
      (PR-LSTM: ``[h; c]``);
    * ``apply_operator(a, b) -> (B, D)``: one application of the learned operator;
    * ``padding_state() -> (D,) or None``: the state of a padding leaf, when the model has one;
    * ``state_logits(s) -> (B, n_classes)``: what the head decodes from a state;
    * ``visible_state(s) -> (B, d)``: the part of a state that node embeddings show (``h``).
    """

    def root_states(self, tokens: Tensor, lengths: Tensor) -> Tensor: ...

    def apply_operator(self, a: Tensor, b: Tensor) -> Tensor: ...

    def padding_state(self) -> Tensor | None: ...

    def state_logits(self, state: Tensor) -> Tensor: ...

    def visible_state(self, state: Tensor) -> Tensor: ...


@runtime_checkable
class OffsetModel(Protocol):
    """Balanced-tree models that can place each string at a left offset inside its buffer
    (training with random offsets, ``offsets = "random"``)."""

    def forward_at_offsets(self, tokens: Tensor, lengths: Tensor, offsets: Tensor) -> Tensor: ...


@runtime_checkable
class RegularisedModel(Protocol):
    """``regulariser(tokens, lengths, offsets=None) -> scalar``: an extra loss term the trainer
    adds with weight ``assoc_weight`` (MLP-LDRU: 1 − cos((a⊙b)⊙c, a⊙(b⊙c)))."""

    def regulariser(self, tokens: Tensor, lengths: Tensor,
                    offsets: Tensor | None = None) -> Tensor: ...


@runtime_checkable
class ConsistentModel(Protocol):
    """``consistency_loss(tokens, lengths, offsets) -> scalar``: how far each string's root
    state at its offset is from its root at offset 0, the same string under two bracketings
    (the trainer adds it with weight ``offset_consistency``; MLP-LDRU: mean of 1 − cos)."""

    def consistency_loss(self, tokens: Tensor, lengths: Tensor, offsets: Tensor) -> Tensor: ...


@runtime_checkable
class GenerativeModel(Protocol):
    """``generate(prompt, prompt_lengths, max_new_tokens, ...) -> (B, max_new_tokens)`` tokens by
    greedy decoding (decoder language models; exact match of prompt → answer tasks)."""

    def generate(self, prompt: Tensor, prompt_lengths: Tensor | None = None,
                 max_new_tokens: int = 16, **kw: Any) -> Tensor: ...


@runtime_checkable
class FiniteModel(Protocol):
    """``finite_table() -> FiniteTable``: in eval mode the model is a finite table (letter →
    code, code × code → code, code → class; :mod:`monoidlab.models.finite`) whose fold over the
    balanced tree (or the prefix scan's blocks) equals its forward pass, so
    :func:`monoidlab.certify` can decide its correctness at every length (the snapped MLP-LDRU
    and PR-LSTM, the transformation tree model)."""

    def finite_table(self) -> Any: ...


@runtime_checkable
class AuxiliaryLossModel(Protocol):
    """``auxiliary_loss() -> scalar or None``: a loss the model computed during the training
    step's forward pass (the snapped model's commitment term), which the trainer adds once per
    step after the forward pass."""

    def auxiliary_loss(self) -> Tensor | None: ...


PROTOCOLS = (Classifier, PrefixModel, TapeModel, NodeStateModel, PrefixStateModel,
             OperatorModel, OffsetModel, RegularisedModel, ConsistentModel, GenerativeModel,
             FiniteModel, AuxiliaryLossModel)


def capabilities(model: Any) -> set[str]:
    """Names of the protocols a model (or a model class) satisfies."""
    check = issubclass if isinstance(model, type) else isinstance
    return {p.__name__ for p in PROTOCOLS if check(model, p)}
