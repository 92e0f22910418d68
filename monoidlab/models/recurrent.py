"""Recurrent baselines (Delétang et al. 2023): tanh RNN and LSTM, hidden 256.

Input is the one-hot token (as in the original, where the core reads one-hot vectors
directly: ``nn.RNN(input_size=vocab_size)`` on ``one_hot(x)`` is exactly that); the head is
``Linear(ReLU(h_t))``. The recurrence is causal, so right padding cannot change any state at
a real position: :meth:`forward` simply reads the state at ``length - 1``.

Example
-------
>>> import torch
>>> model = LSTMClassifier(vocab_size=2, n_classes=2, hidden=8)
>>> tokens, lengths = torch.tensor([[0, 1, 1, 0]]), torch.tensor([3])
>>> model(tokens, lengths).shape, model.prefix_states(tokens, lengths).shape
(torch.Size([1, 2]), torch.Size([1, 4, 8]))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch.nn.functional as F
from torch import Tensor, nn

from monoidlab.models.common import gather_last, length_mask
from monoidlab.models.options import ModelOptions, positive_int

__all__ = ["RNNClassifier", "LSTMClassifier", "RecurrentOptions"]


@dataclass(frozen=True)
class RecurrentOptions(ModelOptions):
    """The RNN's and the LSTM's one option: ``hidden`` units (Delétang et al.: 256)."""

    hidden: int = 256

    def check(self) -> None:
        positive_int(self, "hidden")


class _RecurrentClassifier(nn.Module):
    core_class: type[nn.Module]
    core_kw: dict = {}

    def __init__(self, vocab_size: int, n_classes: int, options: RecurrentOptions | None = None,
                 **kw: Any) -> None:
        super().__init__()
        o = self.options = RecurrentOptions.build(options if options is not None else kw,
                                                  type(self).__name__)
        hidden = o.hidden
        self.vocab_size, self.n_classes, self.hidden = vocab_size, n_classes, hidden
        self.core = self.core_class(vocab_size, hidden, batch_first=True, **self.core_kw)
        self.head = nn.Linear(hidden, n_classes)

    def eval_group(self, length: int) -> int:
        """Test strings of one length (every kind) share one evaluation call
        (:mod:`monoidlab.evaluation.packing`): torch's fused RNN/LSTM kernel already amortises a
        call over a (64, T) batch, and on one CPU thread padded calls of several lengths cost
        more per token than they save (bench/bench_eval.py)."""
        return length

    def prefix_states(self, tokens: Tensor, lengths: Tensor) -> Tensor:
        """Hidden state ``h_t`` after each position, ``(B, T, hidden)`` (LSTM: ``h`` only, not
        the cell). Values at ``t >= length`` are states over padding: mask them."""
        pad = ~length_mask(lengths, tokens.shape[1])
        # padding ids may be anything (even out of vocabulary); they come after every real
        # position, so replacing them cannot change a real state
        x = F.one_hot(tokens.masked_fill(pad, 0), self.vocab_size).to(self.head.weight.dtype)
        if not x.shape[1]:  # an empty batch of width 0: torch's RNN refuses a 0-step sequence
            return x.new_zeros(x.shape[0], 0, self.hidden)
        states, _ = self.core(x)  # (B, T, hidden)
        return states

    def forward_all(self, tokens: Tensor, lengths: Tensor) -> Tensor:
        """Logits ``(B, T, n_classes)`` at every position."""
        return self.head(F.relu(self.prefix_states(tokens, lengths)))

    def forward(self, tokens: Tensor, lengths: Tensor) -> Tensor:
        """Logits ``(B, n_classes)`` read at position ``length - 1``."""
        return self.head(F.relu(gather_last(self.prefix_states(tokens, lengths), lengths)))


class RNNClassifier(_RecurrentClassifier):
    """Elman RNN, ``h_t = tanh(W_x x_t + W_h h_{t-1} + b)``; PyTorch's default init.

    >>> import torch
    >>> RNNClassifier(3, 5, hidden=4)(torch.zeros(2, 6, dtype=torch.long), torch.tensor([6, 1])).shape
    torch.Size([2, 5])
    """

    core_class = nn.RNN
    core_kw = {"nonlinearity": "tanh"}


class LSTMClassifier(_RecurrentClassifier):
    """LSTM (``nn.LSTM``, one layer); PyTorch's default init (forget-gate bias 0).

    >>> import torch
    >>> LSTMClassifier(3, 5, hidden=4).forward_all(torch.zeros(2, 6, dtype=torch.long),
    ...                                            torch.tensor([6, 1])).shape
    torch.Size([2, 6, 5])
    """

    core_class = nn.LSTM
