"""PR-LSTM (and the PR-RNN ablation): an LSTM cell reduced along a parallel prefix scan.

Every token becomes an LSTM state (h, c); a binary N-ary LSTM cell (N = 2, one forget gate
per child) followed by ``num_layers − 1`` unary refinement cells combines two states; the
combinations follow ``jax.lax.associative_scan``'s recursion (the ``scan`` schedule of
:mod:`monoidlab.schedules`), so every prefix gets a state in O(log T) batched steps. Because the
cell is not associative, the particular trees of that recursion are part of the model.

Example
-------
>>> import torch
>>> _ = torch.manual_seed(0)
>>> model = PRLSTM(vocab_size=2, n_classes=2, hidden=8)
>>> tokens = torch.tensor([[0, 1, 1, 0, 1], [1, 1, 0, 0, 0]])
>>> model(tokens, torch.tensor([5, 2])).shape, model.forward_all(tokens).shape
(torch.Size([2, 2]), torch.Size([2, 5, 2]))
>>> model.node_states(tokens, torch.tensor([5, 2])).valid.sum(1).tolist()  # 5 and 1 nodes
[5, 1]
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from monoidlab import schedules
from monoidlab.errors import InputError
from monoidlab.models.common import (
    NodeStates,
    State,
    associative_scan,
    check_inputs,
    collect_nodes,
    gather_last,
)


class _PrefixScanModel(nn.Module):
    """Shared machinery: leaf states, a binary ``cell``, the scan, the per-position head.

    Subclasses define ``leaf(tokens) -> State`` (tensors (B, T, ·)) and
    ``cell(a, b) -> State``; the first tensor of a state is ``h``, what the head reads.
    Init is PyTorch's ``nn.Linear`` default (uniform ±1/sqrt(fan_in)) throughout.
    """

    def __init__(self, vocab_size: int, n_classes: int, hidden: int) -> None:
        super().__init__()
        self.vocab_size, self.n_classes, self.hidden = vocab_size, n_classes, hidden
        self.head = nn.Linear(hidden, n_classes)

    def leaf(self, tokens: Tensor) -> State:
        raise NotImplementedError

    def cell(self, a: State, b: State) -> State:
        raise NotImplementedError

    def _scan(self, tokens: Tensor, record: list | None = None) -> State:
        return associative_scan(self.cell, self.leaf(tokens), record)

    def forward_all(self, tokens: Tensor, lengths: Tensor | None = None) -> Tensor:
        """Logits (B, T, n_classes) at every prefix, W ReLU(h_t) + b. Position t depends on
        tokens 0..t only, so right padding never changes a string's predictions."""
        tokens, lengths = check_inputs(tokens, lengths)
        return self.head(torch.relu(self._scan(tokens)[0]))

    def forward(self, tokens: Tensor, lengths: Tensor | None = None) -> Tensor:
        """Logits (B, n_classes) read at position length − 1."""
        tokens, lengths = check_inputs(tokens, lengths)
        tokens = tokens[:, : int(lengths.max())]  # the scan over padding is wasted work
        h = self._scan(tokens)[0]
        return self.head(torch.relu(gather_last(h, lengths)))

    def node_states(self, tokens: Tensor, lengths: Tensor | None = None) -> NodeStates:
        """Every internal node's ``h``, in the order of ``schedules.schedule("scan", L)``."""
        tokens, lengths = check_inputs(tokens, lengths)
        tokens = tokens[:, : int(lengths.max())]
        record: list[State] = []
        self._scan(tokens, record)
        B, T = tokens.shape
        h = [s[0] for s in record]
        all_nodes = (torch.cat(h, dim=1) if h else
                     tokens.new_zeros((B, 0, self.hidden), dtype=self.head.weight.dtype))
        return collect_nodes(all_nodes, schedules.schedule("scan", T), "scan", lengths)

    # ------------------------------------------------------------------ OperatorModel
    # A state is the cell's tuple concatenated on the last axis ([h; c] for PR-LSTM).
    def _split(self, state: Tensor) -> State:
        return tuple(state.chunk(self._state_parts, dim=-1))

    @property
    def _state_parts(self) -> int:
        return 2 if isinstance(self, PRLSTM) else 1

    def root_states(self, tokens: Tensor, lengths: Tensor) -> Tensor:
        """Each string's final scan state, ``[h; c]`` (or ``h``), (B, parts × hidden)."""
        tokens, lengths = check_inputs(tokens, lengths)
        tokens = tokens[:, : int(lengths.max())]
        return torch.cat([gather_last(s, lengths) for s in self._scan(tokens)], dim=-1)

    def apply_operator(self, a: Tensor, b: Tensor) -> Tensor:
        """The binary cell (with its refinements) on flat states."""
        return torch.cat(self.cell(self._split(a), self._split(b)), dim=-1)

    def padding_state(self) -> None:
        """Prefix-scan models have no padding leaf."""
        return None

    def state_logits(self, state: Tensor) -> Tensor:
        return self.head(torch.relu(self._split(state)[0]))

    def visible_state(self, state: Tensor) -> Tensor:
        return self._split(state)[0]


class PRLSTM(_PrefixScanModel):
    """PR-LSTM classifier (docs/models.md).

    Parameters
    ----------
    vocab_size, n_classes : alphabet size and number of output classes.
    hidden : H (256 in the paper).
    num_layers : 1 = the binary cell only ("0R"), 2 = one unary refinement ("1R", default),
        3 = two ("2R"); each cell has its own weights, shared across nodes and levels.

    Equations: leaf [i; g; o] = W onehot(x) + b, c = σ(i)⊙tanh(g), h = σ(o)⊙tanh(c).
    Binary cell: [i; g; o; f1; f2] = W [h1; h2] + b,
    c = σ(i)⊙tanh(g) + σ(f1)⊙c1 + σ(f2)⊙c2, h = σ(o)⊙tanh(c). Unary refinement on (h, c):
    [i; g; o; f] = W h + b, c' = σ(i)⊙tanh(g) + σ(f)⊙c, h' = σ(o)⊙tanh(c').
    """

    def __init__(self, vocab_size: int, n_classes: int, hidden: int = 256,
                 num_layers: int = 2) -> None:
        super().__init__(vocab_size, n_classes, hidden)
        if num_layers < 1:
            raise InputError(f"num_layers must be >= 1, got {num_layers}")
        self.num_layers = num_layers
        # W onehot + b is a Linear on the one-hot, stored as a lookup table plus bias
        self.embed = nn.Linear(vocab_size, 3 * hidden)
        self.binary = nn.Linear(2 * hidden, 5 * hidden)
        self.refine = nn.ModuleList(nn.Linear(hidden, 4 * hidden) for _ in range(num_layers - 1))

    def leaf(self, tokens: Tensor) -> State:
        z = self.embed.weight.t()[tokens] + self.embed.bias  # (B, T, 3H) = W onehot + b
        i, g, o = z.chunk(3, dim=-1)
        c = torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c), c

    def cell(self, a: State, b: State) -> State:
        (h1, c1), (h2, c2) = a, b
        i, g, o, f1, f2 = self.binary(torch.cat([h1, h2], dim=-1)).chunk(5, dim=-1)
        c = torch.sigmoid(i) * torch.tanh(g) + torch.sigmoid(f1) * c1 + torch.sigmoid(f2) * c2
        h = torch.sigmoid(o) * torch.tanh(c)
        for layer in self.refine:
            i, g, o, f = layer(h).chunk(4, dim=-1)
            c = torch.sigmoid(i) * torch.tanh(g) + torch.sigmoid(f) * c
            h = torch.sigmoid(o) * torch.tanh(c)
        return h, c


class PRRNN(_PrefixScanModel):
    """PR-RNN ablation: the same scan with a tanh cell and no cell state.

    Leaf h = tanh(W onehot(x) + b); binary cell h = tanh(W [h1; h2] + b); then
    ``num_layers − 1`` unary refinements h' = tanh(U h + b') (default none).
    """

    def __init__(self, vocab_size: int, n_classes: int, hidden: int = 256,
                 num_layers: int = 1) -> None:
        super().__init__(vocab_size, n_classes, hidden)
        if num_layers < 1:
            raise InputError(f"num_layers must be >= 1, got {num_layers}")
        self.num_layers = num_layers
        self.embed = nn.Linear(vocab_size, hidden)
        self.binary = nn.Linear(2 * hidden, hidden)
        self.refine = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(num_layers - 1))

    def leaf(self, tokens: Tensor) -> State:
        return (torch.tanh(self.embed.weight.t()[tokens] + self.embed.bias),)

    def cell(self, a: State, b: State) -> State:
        h = torch.tanh(self.binary(torch.cat([a[0], b[0]], dim=-1)))
        for layer in self.refine:
            h = torch.tanh(layer(h))
        return (h,)
