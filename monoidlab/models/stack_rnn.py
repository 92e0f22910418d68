"""Stack-RNN (Joulin & Mikolov 2015) as configured by Delétang et al. (2023).

A tanh RNN reads, at every step, the one-hot token and the top cell of a differentiable stack;
from its new state ``h`` it emits a value to push and a softmax over three actions, and the
stack becomes their mixture::

    x_t   = [onehot(token_t); stack[0]]
    h_t   = tanh(W_x x_t + b_x + W_h h_{t-1} + b_h)         # haiku's VanillaRNN
    v_t   = W_v h_t + b_v                                   # value to push (stack_cell dims)
    a_t   = softmax(W_a h_t + b_a)                          # (push, pop, no-op)
    top'  = a_push v_t        + a_pop stack[1]     + a_noop stack[0]
    s'[i] = a_push stack[i-1] + a_pop stack[i+1]   + a_noop stack[i]     (i >= 1; stack[size] = 0)

The head is ``Linear(ReLU(h_t))`` at every position, as for the other recurrent baselines. The
stack starts at zero, holds ``stack_size`` cells (the released code's default, 30) of
``stack_cell`` dimensions (8, the paper's), and a value pushed past the bottom is lost. The
controller has ``hidden`` units (256 in the paper). Weights are initialised as haiku's
``Linear`` (truncated normal, std 1/sqrt(fan_in), zero biases). One stack only: the released
code's ``n_stacks`` > 1 takes one softmax over all stacks' actions together, and the paper uses
one.

The recurrence runs one step per position (a Python loop over time, vectorised over the
batch); :func:`tests.references.stack_rnn_reference` recomputes it with explicit loops.

Example
-------
>>> import torch
>>> model = StackRNN(vocab_size=3, n_classes=2, hidden=8, stack_size=5, stack_cell=2)
>>> tokens = torch.tensor([[0, 1, 2, 1], [2, 2, 0, 0]])
>>> model.forward_all(tokens, torch.tensor([4, 4])).shape, model(tokens, torch.tensor([4, 2])).shape
(torch.Size([2, 4, 2]), torch.Size([2, 2]))
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from monoidlab.models.common import check_inputs, gather_last, length_mask
from monoidlab.models.options import ModelOptions, positive_int

__all__ = ["StackRNN", "haiku_linear_init", "one_hot_inputs"]

N_ACTIONS = 3  # push, pop, no-op (the released code's order)


def haiku_linear_init(module: nn.Module) -> None:
    """Initialise every ``nn.Linear`` / ``nn.RNNCell`` of ``module`` as haiku's ``Linear``:
    weights truncated normal (two standard deviations) with std 1/sqrt(fan_in), biases 0."""
    for m in module.modules():
        if isinstance(m, nn.Linear):
            pairs = [(m.weight, m.bias)]
        elif isinstance(m, nn.RNNCell):
            pairs = [(m.weight_ih, m.bias_ih), (m.weight_hh, m.bias_hh)]
        else:
            continue
        for w, b in pairs:
            std = 1.0 / math.sqrt(w.shape[1])
            nn.init.trunc_normal_(w, std=std, a=-2 * std, b=2 * std)
            if b is not None:
                nn.init.zeros_(b)


def one_hot_inputs(tokens: Tensor, lengths: Tensor, vocab_size: int,
                   dtype: torch.dtype) -> Tensor:
    """One-hot tokens ``(B, T, vocab)``; padding (positions >= length) reads as token 0: it
    comes after every real position, so it cannot change a real state."""
    pad = ~length_mask(lengths, tokens.shape[1])
    return F.one_hot(tokens.masked_fill(pad, 0), vocab_size).to(dtype)


@dataclass(frozen=True)
class StackRNNOptions(ModelOptions):
    """The Stack-RNN's hyper-parameters: ``hidden`` controller units (the paper: 256),
    ``stack_size`` cells (the released code: 30; at least 2, a top and a cell below it) of
    ``stack_cell`` dimensions (the paper: 8)."""

    hidden: int = 256
    stack_size: int = 30
    stack_cell: int = 8

    def check(self) -> None:
        positive_int(self, "hidden")
        positive_int(self, "stack_size", 2)
        positive_int(self, "stack_cell")


class StackRNN(nn.Module):
    """The Stack-RNN of Delétang et al. (2023): a tanh RNN controlling one soft stack.

    Args:
        vocab_size, n_classes: input tokens and output classes.
        hidden: controller units (the paper: 256).
        stack_size: number of stack cells (the released code's default: 30).
        stack_cell: dimension of a stack cell (the paper: 8).
    """

    def __init__(self, vocab_size: int, n_classes: int, options: StackRNNOptions | None = None,
                 **kw: Any) -> None:
        super().__init__()
        o = self.options = StackRNNOptions.build(options if options is not None else kw,
                                                 "stack-rnn")
        hidden, stack_size, stack_cell = o.hidden, o.stack_size, o.stack_cell
        self.vocab_size, self.n_classes, self.hidden = vocab_size, n_classes, hidden
        self.stack_size, self.stack_cell = stack_size, stack_cell
        self.core = nn.RNNCell(vocab_size + stack_cell, hidden, nonlinearity="tanh")
        self.push = nn.Linear(hidden, stack_cell)
        self.actions = nn.Linear(hidden, N_ACTIONS)
        self.head = nn.Linear(hidden, n_classes)
        haiku_linear_init(self)

    def eval_group(self, length: int) -> int:
        """Test strings of every length may share one padded evaluation call
        (:mod:`monoidlab.evaluation.packing`): the recurrence is causal and each string is read
        at its own last position."""
        return 0

    def step(self, x: Tensor, h: Tensor, stack: Tensor) -> tuple[Tensor, Tensor]:
        """One step: input ``x`` (B, vocab), state ``h`` (B, hidden), stack (B, size, cell)
        → new ``h`` and new stack."""
        h = self.core(torch.cat([x, stack[:, 0]], dim=-1), h)
        a = torch.softmax(self.actions(h), dim=-1)[:, :, None, None]  # (B, 3, 1, 1)
        # push: the new value on top, every cell one down; pop: every cell one up, zero at
        # the bottom; no-op: unchanged. The bottom cell is lost on a push.
        pushed = torch.cat([self.push(h)[:, None], stack[:, :-1]], dim=1)
        popped = torch.cat([stack[:, 1:], torch.zeros_like(stack[:, :1])], dim=1)
        stack = a[:, 0] * pushed + a[:, 1] * popped + a[:, 2] * stack
        return h, stack

    def prefix_states(self, tokens: Tensor, lengths: Tensor | None = None) -> Tensor:
        """Controller state ``h_t`` after every position, ``(B, T, hidden)``."""
        tokens, lengths = check_inputs(tokens, lengths)
        x = one_hot_inputs(tokens, lengths, self.vocab_size, self.head.weight.dtype)
        B, T = tokens.shape
        h = x.new_zeros(B, self.hidden)
        stack = x.new_zeros(B, self.stack_size, self.stack_cell)
        states = []
        for t in range(T):
            h, stack = self.step(x[:, t], h, stack)
            states.append(h)
        # no step at width 0 (an empty batch): no state to stack
        return torch.stack(states, dim=1) if states else h.new_zeros(B, 0, self.hidden)

    def forward_all(self, tokens: Tensor, lengths: Tensor | None = None) -> Tensor:
        """Logits ``(B, T, n_classes)`` at every position."""
        return self.head(F.relu(self.prefix_states(tokens, lengths)))

    def forward(self, tokens: Tensor, lengths: Tensor | None = None) -> Tensor:
        """Logits ``(B, n_classes)`` read at position ``length - 1``."""
        tokens, lengths = check_inputs(tokens, lengths)
        return self.head(F.relu(gather_last(self.prefix_states(tokens, lengths), lengths)))
