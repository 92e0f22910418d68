"""Tape-RNN as configured by Delétang et al. (2023) (their ``TapeInputLengthJumpCore``).

A tanh RNN reads, at every step, the one-hot token and the tape cell under its head; from its
new state ``h`` it writes a value (a small MLP of ``h``) into that cell and moves the head by a
softmax mixture of five actions::

    x_t = [onehot(token_t); tape[0]]                     # the head is always at cell 0
    h_t = tanh(W_x x_t + b_x + W_h h_{t-1} + b_h)        # haiku's VanillaRNN
    w_t = MLP(h_t)                                       # Linear-ReLU-Linear-ReLU-Linear (64, 64, cell)
    a_t = softmax(W_a h_t + b_a)                         # stay, left, right, jump left, jump right
    W   = tape with cell 0 replaced by w_t               # write, then move:
    tape'[i] = a_stay W[i] + a_left W[i+1] + a_right W[i-1] + a_jl W[i+n] + a_jr W[i-n]

Indices are modulo ``memory_size`` (the tape is circular: the released code rolls an identity
matrix) and ``n`` is the length of the *input* part of Delétang's tape (the reference passes
the input length to the core; ``n`` may exceed the tape and then wraps). Moving "left" shifts
the tape so that the head reads the old cell 1, as in the released code's ``roll(eye, -1)``.

Defaults are the released example's: tape of 40 cells of 8 dimensions, readout MLP (64, 64),
controller of 256 units. Weights are initialised as haiku's ``Linear`` (truncated normal, std
1/sqrt(fan_in), zero biases); the head is ``Linear(ReLU(h_t))`` at every position.

The tape problem calls :meth:`TapeRNN.forward_tape` with the input lengths
(:class:`~monoidlab.models.protocols.TapeModel`); :meth:`forward_all` and :meth:`forward`
(a language, no output part) jump by the whole string length.
:func:`tests.references.tape_rnn_reference` recomputes the recurrence with explicit loops.

Example
-------
>>> import torch
>>> model = TapeRNN(vocab_size=3, n_classes=2, hidden=8, memory_size=6, memory_cell=2)
>>> tokens = torch.tensor([[0, 1, 2, 2], [1, 0, 2, 2]])   # 2 input tokens, 2 empty ones
>>> model.forward_tape(tokens, torch.tensor([4, 4]), torch.tensor([2, 2])).shape
torch.Size([2, 4, 2])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from monoidlab.errors import InputError
from monoidlab.models.common import check_inputs, gather_last
from monoidlab.models.options import ModelOptions, positive_int
from monoidlab.models.stack_rnn import haiku_linear_init, one_hot_inputs

__all__ = ["TapeRNN"]

ACTIONS = ("stay", "left", "right", "jump_left", "jump_right")  # the released code's order


@dataclass(frozen=True)
class TapeRNNOptions(ModelOptions):
    """The Tape-RNN's hyper-parameters: ``hidden`` controller units (the paper: 256),
    ``memory_size`` tape cells (the released example: 40) of ``memory_cell`` dimensions (8),
    ``mlp``: the hidden sizes of the write MLP (the released code: (64, 64))."""

    hidden: int = 256
    memory_size: int = 40
    memory_cell: int = 8
    mlp: tuple[int, ...] = (64, 64)

    def check(self) -> None:
        positive_int(self, "hidden")
        positive_int(self, "memory_size")
        positive_int(self, "memory_cell")
        mlp = self.mlp
        if not isinstance(mlp, list | tuple) or not all(
                isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in mlp):
            raise InputError(f"option 'mlp': a list of sizes >= 1, got {mlp!r}")
        object.__setattr__(self, "mlp", tuple(mlp))


class TapeRNN(nn.Module):
    """The Tape-RNN of Delétang et al. (2023): a tanh RNN writing to and moving on a soft tape.

    Args:
        vocab_size, n_classes: input tokens and output classes.
        hidden: controller units (the paper: 256).
        memory_size: tape cells (the released example: 40).
        memory_cell: dimension of a cell (the released example: 8).
        mlp: hidden sizes of the write MLP (the released code: (64, 64)).
    """

    def __init__(self, vocab_size: int, n_classes: int, options: TapeRNNOptions | None = None,
                 **kw: Any) -> None:
        super().__init__()
        o = self.options = TapeRNNOptions.build(options if options is not None else kw,
                                                "tape-rnn")
        hidden, memory_size, memory_cell, mlp = o.hidden, o.memory_size, o.memory_cell, o.mlp
        self.vocab_size, self.n_classes, self.hidden = vocab_size, n_classes, hidden
        self.memory_size, self.memory_cell = memory_size, memory_cell
        self.core = nn.RNNCell(vocab_size + memory_cell, hidden, nonlinearity="tanh")
        sizes = [hidden, *mlp, memory_cell]
        layers: list[nn.Module] = []
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            layers += [nn.Linear(a, b)] + ([nn.ReLU()] if i < len(sizes) - 2 else [])
        self.write = nn.Sequential(*layers)
        self.actions = nn.Linear(hidden, len(ACTIONS))
        self.head = nn.Linear(hidden, n_classes)
        haiku_linear_init(self)

    def eval_group(self, length: int) -> int:
        """Test strings of every length may share one padded evaluation call
        (:mod:`monoidlab.evaluation.packing`): the recurrence is causal, jumps move by each
        row's own input length and each string is read at its own last position."""
        return 0

    def _moves(self, input_lengths: Tensor) -> Tensor:
        """Gather indices (B, 5, M): new cell i of action k reads old cell ``idx[b, k, i]``."""
        M = self.memory_size
        n = (input_lengths % M)[:, None]  # (B, 1)
        i = torch.arange(M, device=n.device)[None, :] + torch.zeros_like(n)  # (B, M)
        return torch.stack([i, i + 1, i - 1, i + n, i - n], dim=1) % M

    def step(self, x: Tensor, h: Tensor, tape: Tensor, moves: Tensor) -> tuple[Tensor, Tensor]:
        """One step: input ``x`` (B, vocab), state ``h`` (B, hidden), tape (B, M, cell),
        gather indices ``moves`` (B, 5, M) → new ``h`` and new tape."""
        h = self.core(torch.cat([x, tape[:, 0]], dim=-1), h)
        written = torch.cat([self.write(h)[:, None], tape[:, 1:]], dim=1)  # (B, M, cell)
        a = torch.softmax(self.actions(h), dim=-1)  # (B, 5)
        B, M, C = written.shape
        # moved[b, k, i] = written[b, moves[b, k, i]]: the tape after action k
        # sizes spelled out: -1 is ambiguous when the batch is empty (B = 0)
        moved = written.gather(1, moves.reshape(B, 5 * M, 1).expand(-1, -1, C)).view(B, 5, M, C)
        return h, torch.einsum("bk,bkmc->bmc", a, moved)

    def prefix_states(self, tokens: Tensor, lengths: Tensor | None = None,
                      input_lengths: Tensor | None = None) -> Tensor:
        """Controller state ``h_t`` after every position, ``(B, T, hidden)``; jumps move by
        ``input_lengths`` (default: the string lengths)."""
        tokens, lengths = check_inputs(tokens, lengths)
        n = lengths if input_lengths is None else torch.as_tensor(
            input_lengths, dtype=torch.long, device=tokens.device)
        x = one_hot_inputs(tokens, lengths, self.vocab_size, self.head.weight.dtype)
        B, T = tokens.shape
        moves = self._moves(n)
        h = x.new_zeros(B, self.hidden)
        tape = x.new_zeros(B, self.memory_size, self.memory_cell)
        states = []
        for t in range(T):
            h, tape = self.step(x[:, t], h, tape, moves)
            states.append(h)
        # no step at width 0 (an empty batch): no state to stack
        return torch.stack(states, dim=1) if states else h.new_zeros(B, 0, self.hidden)

    def forward_tape(self, tokens: Tensor, lengths: Tensor, input_lengths: Tensor) -> Tensor:
        """Logits ``(B, T, n_classes)`` on Delétang's tape whose input part has
        ``input_lengths`` tokens (the jump distance)."""
        return self.head(F.relu(self.prefix_states(tokens, lengths, input_lengths)))

    def forward_all(self, tokens: Tensor, lengths: Tensor | None = None) -> Tensor:
        """Logits ``(B, T, n_classes)`` at every position; jumps move by the string length."""
        return self.head(F.relu(self.prefix_states(tokens, lengths)))

    def forward(self, tokens: Tensor, lengths: Tensor | None = None) -> Tensor:
        """Logits ``(B, n_classes)`` read at position ``length - 1``."""
        tokens, lengths = check_inputs(tokens, lengths)
        return self.head(F.relu(gather_last(self.prefix_states(tokens, lengths), lengths)))
