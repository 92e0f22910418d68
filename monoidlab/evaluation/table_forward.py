"""A finite model evaluated as its table's fold: integer gathers instead of torch layers.

In eval mode a depth-exact model (the snapped MLP-LDRU and PR-LSTM, the transformation tree
model) *is* its :class:`~monoidlab.models.finite.FiniteTable`; :meth:`FiniteTable.fold` computes
the same classes by integer gathers over the tree, 100x or more faster than the torch forward
at length 4,096 (``bench/bench_table_fold.py``). :func:`table_forward` wraps a finite model as a
module whose forward is that fold (one-hot logits), for ``evaluate`` and the trainer's final
evaluation; it is used only after the fold has been checked equal to the model's own forward
on a spread of the run's test strings (:func:`~monoidlab.evaluation.model_certificate.agreement`),
and never on an accelerator (where the torch forward is already batched).

Example
-------
>>> import torch, monoidlab as ml
>>> from monoidlab.models.snap import SnappedMLPLDRU
>>> _ = torch.manual_seed(0)
>>> model = SnappedMLPLDRU(2, 2, d=8, codes=6).eval()
>>> fast = table_forward(model, ml.load_language("parity"), n_classes=2)
>>> tokens, lengths = torch.tensor([[0, 1, 1, 0, 1]]), torch.tensor([5])
>>> bool((fast(tokens, lengths).argmax(1) == model(tokens, lengths).argmax(1)).all())
True
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

__all__ = ["TableForward", "table_forward"]


class TableForward(nn.Module):
    """``forward(tokens, lengths)`` (and ``forward_at_offsets``): one-hot logits of the finite
    table's fold. ``model`` is the finite model it stands for (kept for its attributes)."""

    def __init__(self, table: Any, n_classes: int, model: nn.Module) -> None:
        super().__init__()
        self.table, self.n_classes = table, n_classes
        self.stands_for = type(model).__name__
        # a parameter-free module still needs a device for the evaluation's tensors
        self.register_buffer("anchor", torch.zeros(1), persistent=False)

    def parameters(self, recurse: bool = True) -> Any:  # the evaluation reads a device
        yield self.anchor

    def eval_group(self, length: int) -> int:
        """Strings of every length may share a call: the fold reads each at its own root."""
        return 0

    def _logits(self, classes: np.ndarray) -> Tensor:
        out = torch.zeros(len(classes), self.n_classes)
        out[torch.arange(len(classes)), torch.as_tensor(classes)] = 1.0
        return out

    def forward(self, tokens: Tensor, lengths: Tensor | None = None) -> Tensor:
        t = tokens.cpu().numpy()
        n = np.full(len(t), t.shape[1]) if lengths is None else lengths.cpu().numpy()
        return self._logits(self.table.fold(t, n))

    def forward_at_offsets(self, tokens: Tensor, lengths: Tensor, offsets: Tensor) -> Tensor:
        return self._logits(self.table.fold(tokens.cpu().numpy(), lengths.cpu().numpy(),
                                            offsets.cpu().numpy()))


def table_forward(model: nn.Module, lang: Any, n_classes: int, config: Any = None
                  ) -> nn.Module:
    """``model`` evaluated as its finite table's fold when that is safe, else ``model`` itself:
    a finite model on the CPU whose table builds within its budget and whose fold agrees with
    its forward on every one of a spread of the run's test strings."""
    from monoidlab.errors import MonoidlabError
    from monoidlab.evaluation.model_certificate import agreement, finite_table_of

    device = next(iter(model.parameters()), torch.zeros(0)).device
    if lang is None or device.type != "cpu":
        return model
    try:
        table = finite_table_of(model)
    except MonoidlabError:  # a table past its budget: the torch forward evaluates
        return model
    if table is None:
        return model
    same, _ = agreement(model, table, lang, config)
    return TableForward(table, n_classes, model) if same == 1.0 else model
