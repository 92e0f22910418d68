"""PR-LSTM (and the PR-RNN ablation): an LSTM cell reduced along a parallel prefix scan.

Every token becomes an LSTM state (h, c); a binary N-ary LSTM cell (N = 2, one forget gate
per child) followed by ``num_layers − 1`` unary refinement cells combines two states; the
combinations follow ``jax.lax.associative_scan``'s recursion (the ``scan`` schedule of
:mod:`monoidlab.strings.schedules`), so every prefix gets a state in O(log T) batched steps. Because the
cell is not associative, the particular trees of that recursion are part of the model.

How it is computed (same function, less work; tests/test_speed_equivalence.py compares it with
the previous implementation):

* the gate rows are read in the order [i, o, f_1, .., f_N, g], so one ``sigmoid`` covers every
  gate and one ``tanh`` the candidate; the binary weight is used as W₁h₁ + W₂h₂ (two products
  into one buffer, no concatenation) or, for adjacent pairs, as one product on the pair view;
  the elementwise tail runs in place when no gradient is needed. The parameters keep the
  documented layout ([i; g; o; f₁; f₂] rows, one ``binary`` Linear): checkpoints load as-is.
* a leaf state depends only on its token: the V leaf states are computed once and gathered.
* :meth:`forward` (one prediction per string) needs only the state of each string's full
  prefix, which the scan defines as the left fold, most significant first, over the balanced
  trees of the aligned power-of-two blocks of the length's binary expansion: it reduces the
  blocks level by level (T − 1 nodes instead of the scan's ≈ 2T) and folds each string's
  blocks. :meth:`forward_all` runs the scan.
* on the CPU without gradients, PR-LSTM's scan and its levels built from a table run in row
  blocks into one buffer of every prefix (:mod:`monoidlab.models.pr_lstm_rows`; its reference,
  the general scan that gradients take, is in tests/references.py).

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

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from monoidlab.models import pr_lstm_rows
from monoidlab.models.common import (
    INITS,
    NodeStates,
    State,
    collect_nodes,
    haiku_linear_,
    read_inputs,
)
from monoidlab.models.options import ModelOptions, boolean, one_of, positive_int
from monoidlab.strings import schedules

ACTIVATIONS = ("tanh", "relu")


@dataclass(frozen=True)
class PRLSTMOptions(ModelOptions):
    """PR-LSTM's hyper-parameters.

    hidden : H (the paper: 256).
    num_layers : 1 = the binary cell only ("0R"), 2 = one unary refinement ("1R", default),
        3 = two ("2R"); each cell has its own weights, shared across nodes and levels.
    init : ``"default"`` (PyTorch's ``nn.Linear`` default, uniform ±1/sqrt(fan_in) weights and
        biases) or ``"haiku"`` (the authors': ``hk.Linear``'s truncated normal with stddev
        1/sqrt(fan_in), zero biases, for every layer including the head).
    """

    hidden: int = 256
    num_layers: int = 2
    init: str = "default"

    def check(self) -> None:
        positive_int(self, "hidden")
        positive_int(self, "num_layers")
        one_of(self, "init", INITS)


@dataclass(frozen=True)
class PRRNNOptions(ModelOptions):
    """PR-RNN's hyper-parameters: ``hidden``, ``num_layers`` (1: no unary refinement) and
    ``init`` as :class:`PRLSTMOptions`; ``activation`` ``"tanh"`` or ``"relu"``;
    ``leaf_activation=False`` leaves the leaf linear (the authors': relu, no leaf activation,
    haiku init)."""

    hidden: int = 256
    num_layers: int = 1
    init: str = "default"
    activation: str = "tanh"
    leaf_activation: bool = True

    def check(self) -> None:
        positive_int(self, "hidden")
        positive_int(self, "num_layers")
        one_of(self, "init", INITS)
        one_of(self, "activation", ACTIVATIONS)
        boolean(self, "leaf_activation")


def _g_last(n_chunks: int, hidden: int) -> Tensor:
    """Row order that moves chunk 1 (the candidate g) of [i; g; o; ...] to the end."""
    H = hidden
    return torch.cat([torch.arange(0, H), torch.arange(2 * H, n_chunks * H), torch.arange(H, 2 * H)])


@dataclass
class _Level:
    """Level k of the block reduction: ``state`` is dense (tensors (B, n, ·)) when ``ids`` is
    None, else a table (tensors (rows, ·)) and ``ids`` (B, n) holds each block's row."""

    state: State
    ids: Tensor | None = None

    def values(self, cols: slice = slice(None)) -> State:
        if self.ids is None:
            return tuple(x[:, cols] for x in self.state)
        ids = self.ids[:, cols]
        return tuple(t[ids] for t in self.state)


def _linears(model: _PrefixScanModel) -> list[nn.Linear]:
    """The refinement cells' Linears (typed)."""
    return [r for r in model.refine if isinstance(r, nn.Linear)]


def _rows(x: Tensor) -> Tensor:
    """(..., k) -> (N, k) (a view when the layout allows one)."""
    return x.reshape(-1, x.shape[-1])


class _PrefixScanModel(nn.Module):
    """Shared machinery: leaf states, a binary cell, the scan, the final-prefix reduction and the
    per-position head.

    Subclasses define ``_weights()`` (the parameters in the order the fast cells read them),
    ``_leaf_table(W)`` (the V leaf states), ``_pairs(W, state)`` (combine adjacent elements of a
    state whose tensors are (N, 2·width)) and ``_combine(W, a, b)`` (combine two states of
    (N, width) tensors). The first tensor of a state is ``h``, what the head reads.
    """

    memo_limit = 4096  # most rows of a table of distinct blocks (0: never share; benchmarks)
    refine: nn.ModuleList  # the unary refinement cells (subclasses)

    def __init__(self, vocab_size: int, n_classes: int, hidden: int) -> None:
        super().__init__()
        self.vocab_size, self.n_classes, self.hidden = vocab_size, n_classes, hidden
        self.head = nn.Linear(hidden, n_classes)

    def eval_group(self, length: int) -> int:
        """Test strings of every length may share one padded evaluation call
        (:mod:`monoidlab.evaluation.packing`): a prefix depends on its own tokens only, and each
        string is read at its own last prefix."""
        return 0

    # ------------------------------------------------------------------ subclass hooks
    def _weights(self) -> dict:
        raise NotImplementedError

    def _leaf_table(self, W: dict) -> State:
        raise NotImplementedError

    def _pairs(self, W: dict, state: State) -> State:
        raise NotImplementedError

    def _combine(self, W: dict, a: State, b: State, zb: Tensor | None = None) -> State:
        """Combine two states; ``zb`` (optional) = W₂h₂ of ``b``, already computed."""
        raise NotImplementedError

    def _table_pairs(self, W: dict, table: State, left: Tensor, right: Tensor) -> State:
        """Combine table rows ``left`` with rows ``right`` ((N,) ids): N states."""
        return self._pairs(W, tuple(torch.cat([t[left], t[right]], dim=-1) for t in table))

    # ------------------------------------------------------------------ building blocks
    def leaf(self, tokens: Tensor) -> State:
        """Leaf states (tensors (B, T, H)) of a (B, T) token tensor."""
        return tuple(t[tokens] for t in self._leaf_table(self._weights()))

    def cell(self, a: State, b: State) -> State:
        """The binary cell (with its refinements) on two states of equal leading shape."""
        W = self._weights()
        shape = a[0].shape[:-1]
        out = self._combine(W, tuple(map(_rows, a)), tuple(map(_rows, b)))
        return tuple(x.view(*shape, x.shape[-1]) for x in out)

    def _levels(self, W: dict, tokens: Tensor, dense: bool = False) -> list:
        """Level k = the balanced tree of every aligned block of 2^k tokens, k = 0 (the leaves)
        .. log2 T, each a :class:`_Level`.

        Unless ``dense``, a level is a table of distinct blocks plus each block's row in it
        (the same values, each computed once): every pair of the level below while that is at
        most ``memo_limit`` rows and a quarter of the nodes, else the pairs present
        (``torch.unique``) while they are at most half the nodes; then plain levels."""
        B, T = tokens.shape
        level = _Level(self._leaf_table(W), ids=tokens)
        levels = [level]
        for k in range(1, T.bit_length()):
            n = T >> k
            if level.ids is not None and not dense and self.memo_limit > 0:
                V = level.state[0].shape[0]
                key = level.ids[:, 0 : 2 * n : 2] * V + level.ids[:, 1 : 2 * n : 2]
                if V * V <= min(self.memo_limit, B * n // 4):  # every pair: no sort needed
                    ab, ids, share = torch.arange(V * V, device=tokens.device), key, True
                else:  # the pairs present, each once, while they are at most half the nodes
                    ab, ids = torch.unique(key, return_inverse=True)
                    share = len(ab) <= B * n // 2
                if share:
                    a, b = ab.div(V, rounding_mode="floor"), ab % V
                    pairs = tuple(torch.cat([t[a], t[b]], dim=-1) for t in level.state)
                    level = _Level(self._pairs(W, pairs), ids=ids)
                    levels.append(level)
                    continue
            if level.ids is not None:  # a table (the leaves): pairs of its rows
                ids = level.ids
                out = self._table_pairs(W, level.state, ids[:, 0: 2 * n: 2].reshape(-1),
                                        ids[:, 1: 2 * n: 2].reshape(-1))
            else:
                x = level.state
                out = self._pairs(W, tuple(_rows(t[:, : 2 * n].reshape(B, n, 2 * t.shape[-1]))
                                           for t in x))
            level = _Level(tuple(t.view(B, n, t.shape[-1]) for t in out))
            levels.append(level)
        if dense:
            levels[0] = _Level(levels[0].values())
        return levels

    def _scan(self, tokens: Tensor, record: list | None = None) -> State:
        """Every prefix state, by ``jax.lax.associative_scan``'s recursion (as
        :func:`~monoidlab.models.common.associative_scan`): at depth k the recursion's elements
        are the blocks of level k, so the first call of each step is :meth:`_levels`; the
        second combines each prefix of depth k + 1 with a block of level k (its W₂h₂ gathered
        from the level's table when there is one). ``record`` gets every node's state in the
        schedule's node order."""
        W = self._weights()
        B, T = tokens.shape
        levels = self._levels(W, tokens, dense=record is not None)
        if record is not None:
            record.extend(lv.state for lv in levels[1:])

        def prefixes(k: int) -> State:
            lv = levels[k]
            n = T >> k
            if n < 2:
                return lv.values()
            odd = prefixes(k + 1)  # prefix states of the pairs: positions 1, 3, 5, ...
            m = (n - 1) // 2  # even positions 2, 4, ... that combine a prefix with a block
            if m:
                even = self._combine_right(W, tuple(_rows(o[:, :m]) for o in odd), lv,
                                           slice(2, 2 * m + 1, 2))
                even = tuple(x.view(B, m, x.shape[-1]) for x in even)
                if record is not None:
                    record.append(even)
            out = []
            first = lv.values(slice(0, 1))
            for j, o in enumerate(odd):
                buf = o.new_empty((B, n, o.shape[-1]))
                buf[:, :1] = first[j]
                buf[:, 1::2] = o
                if m:
                    buf[:, 2::2] = even[j]
                out.append(buf)
            return tuple(out)

        return prefixes(0)

    def _combine_right(self, W: dict, a: State, lv: _Level, cols: slice) -> State:
        """Combine states ``a`` (N, ·) with the blocks ``cols`` of level ``lv`` (row-major)."""
        if lv.ids is None:
            return self._combine(W, a, tuple(_rows(x[:, cols]) for x in lv.state))
        ids = lv.ids[:, cols].reshape(-1)
        zb = (lv.state[0] @ W["binary"][2])[ids]  # W₂h₂ of every table row, gathered
        return self._combine(W, a, tuple(t[ids] for t in lv.state), zb)

    def _final_state(self, tokens: Tensor, lengths: Tensor) -> State:
        """The state of each string's whole prefix (tensors (B, H)), as the scan defines it: the
        left fold, most significant block first, over the balanced trees of the aligned blocks
        of length's binary expansion (``schedules.schedule("scan", L)``, last prefix), over the
        blocks of :meth:`_levels`."""
        W = self._weights()
        B, T = tokens.shape
        levels = self._levels(W, tokens)
        acc: State | None = None
        start = torch.zeros_like(lengths)  # tokens consumed by the blocks folded so far
        have = torch.zeros_like(lengths, dtype=torch.bool)
        for k in reversed(range(len(levels))):
            bit = (lengths >> k) & 1
            idx = (start >> k).clamp(max=(T >> k) - 1)[:, None]
            lv = levels[k]
            if lv.ids is not None:
                row = lv.ids.gather(1, idx)[:, 0]
                block = tuple(t[row] for t in lv.state)
            else:
                block = tuple(x.gather(1, idx[..., None].expand(B, 1, x.shape[-1]))[:, 0]
                              for x in lv.state)
            if acc is None:
                acc = block
            else:
                folded = self._combine(W, acc, block)
                take_fold, take_block = (bit.bool() & have)[:, None], bit.bool()[:, None]
                acc = tuple(torch.where(take_fold, f, torch.where(take_block, b, a))
                            for f, b, a in zip(folded, block, acc))
            have = have | bit.bool()
            start = start + (bit << k)
        assert acc is not None  # T >= 1: there is a level 0
        return acc

    # ------------------------------------------------------------------ public API
    def forward_all(self, tokens: Tensor, lengths: Tensor | None = None) -> Tensor:
        """Logits (B, T, n_classes) at every prefix, W ReLU(h_t) + b. Position t depends on
        tokens 0..t only, so right padding never changes a string's predictions."""
        tokens, lengths, _ = read_inputs(tokens, lengths)
        return self.head(torch.relu(self._scan(tokens)[0]))

    def forward(self, tokens: Tensor, lengths: Tensor | None = None) -> Tensor:
        """Logits (B, n_classes) read at position length − 1."""
        tokens, lengths, longest = read_inputs(tokens, lengths)
        h = self._final_state(tokens[:, :longest], lengths)[0]
        return self.head(torch.relu(h))

    def node_states(self, tokens: Tensor, lengths: Tensor | None = None) -> NodeStates:
        """Every internal node's ``h``, in the order of ``schedules.schedule("scan", L)``."""
        tokens, lengths, longest = read_inputs(tokens, lengths)
        tokens = tokens[:, :longest]
        record: list[State] = []
        self._scan(tokens, record)
        B, T = tokens.shape
        h = [s[0] for s in record]
        all_nodes = (torch.cat(h, dim=1) if h else
                     tokens.new_zeros((B, 0, self.hidden), dtype=self.head.weight.dtype))
        return collect_nodes(all_nodes, schedules.schedule("scan", max(T, 1)), "scan", lengths)

    # ------------------------------------------------------------------ OperatorModel
    # A state is the cell's tuple concatenated on the last axis ([h; c] for PR-LSTM).
    def _split(self, state: Tensor) -> State:
        return tuple(state.chunk(self._state_parts, dim=-1))

    @property
    def _state_parts(self) -> int:
        return 2 if isinstance(self, PRLSTM) else 1

    def root_states(self, tokens: Tensor, lengths: Tensor) -> Tensor:
        """Each string's final scan state, ``[h; c]`` (or ``h``), (B, parts × hidden)."""
        tokens, lengths, longest = read_inputs(tokens, lengths)
        return torch.cat(self._final_state(tokens[:, :longest], lengths), dim=-1)

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


def _lstm_tail(z: Tensor, cells: list[Tensor], H: int) -> tuple[Tensor, Tensor]:
    """h, c from gate pre-activations ``z`` (N, (2 + k + 1)·H) = [i, o, f_1..f_k, g] and the k
    children's cells: c = σ(i)⊙tanh(g) + Σ σ(f_j)⊙c_j, h = σ(o)⊙tanh(c). In place on ``z`` when
    no gradient is recorded."""
    k = len(cells)
    if torch.is_grad_enabled():
        s, g = torch.sigmoid(z[:, : (2 + k) * H]), torch.tanh(z[:, (2 + k) * H:])
        c = s[:, :H] * g
        for j, cj in enumerate(cells):
            c = torch.addcmul(c, s[:, (2 + j) * H: (3 + j) * H], cj)
        return s[:, H: 2 * H] * torch.tanh(c), c
    s = z[:, : (2 + k) * H].sigmoid_()
    c = torch.mul(s[:, :H], z[:, (2 + k) * H:].tanh_())
    for j, cj in enumerate(cells):
        c.addcmul_(s[:, (2 + j) * H: (3 + j) * H], cj)
    return torch.tanh(c).mul_(s[:, H: 2 * H]), c


def _rows_path(x: Tensor) -> bool:
    """Whether PR-LSTM takes :mod:`~monoidlab.models.pr_lstm_rows`: no gradient is recorded
    and ``x`` is on the CPU (on an accelerator whole-level kernels beat many small blocks)."""
    return not torch.is_grad_enabled() and x.device.type == "cpu"


def _addmm(bias: Tensor, x: Tensor, wt: Tensor) -> Tensor:
    return torch.addmm(bias, x, wt)


class PRLSTM(_PrefixScanModel):
    """PR-LSTM classifier (docs/models.md).

    Parameters
    ----------
    vocab_size, n_classes : alphabet size and number of output classes.
    hidden : H (256 in the paper).
    Options: :class:`PRLSTMOptions` (or its fields as keywords).

    Equations: leaf [i; g; o] = W onehot(x) + b, c = σ(i)⊙tanh(g), h = σ(o)⊙tanh(c).
    Binary cell: [i; g; o; f1; f2] = W [h1; h2] + b,
    c = σ(i)⊙tanh(g) + σ(f1)⊙c1 + σ(f2)⊙c2, h = σ(o)⊙tanh(c). Unary refinement on (h, c):
    [i; g; o; f] = W h + b, c' = σ(i)⊙tanh(g) + σ(f)⊙c, h' = σ(o)⊙tanh(c').
    """

    def __init__(self, vocab_size: int, n_classes: int, options: PRLSTMOptions | None = None,
                 **kw: Any) -> None:
        o = PRLSTMOptions.build(options if options is not None else kw, "pr-lstm")
        super().__init__(vocab_size, n_classes, o.hidden)
        self.options = o
        hidden, num_layers, init = o.hidden, o.num_layers, o.init
        self.num_layers, self.init = num_layers, init
        # W onehot + b is a Linear on the one-hot, stored as a lookup table plus bias
        self.embed = nn.Linear(vocab_size, 3 * hidden)
        self.binary = nn.Linear(2 * hidden, 5 * hidden)
        self.refine = nn.ModuleList(nn.Linear(hidden, 4 * hidden) for _ in range(num_layers - 1))
        if init == "haiku":
            for layer in (self.embed, self.binary, *self.refine, self.head):
                haiku_linear_(layer)
        # row orders with g last, as buffers (they follow .to(device)), not in the state_dict
        self._perm3: Tensor
        self._perm4: Tensor
        self._perm5: Tensor
        for name, n in (("_perm3", 3), ("_perm4", 4), ("_perm5", 5)):
            self.register_buffer(name, _g_last(n, hidden), persistent=False)

    def _weights(self) -> dict:
        """The permuted weights; without gradients kept until a parameter changes (its
        version or storage), which saves the copies on every call of a small batch."""
        if torch.is_grad_enabled():
            return self._permuted_weights()
        key = tuple((id(p), p.data_ptr(), p._version, p.dtype) for p in self.parameters())
        cached = self.__dict__.get("_weights_cache")
        if cached is None or cached[0] != key:
            cached = (key, self._permuted_weights())
            self.__dict__["_weights_cache"] = cached
        return cached[1]

    def _permuted_weights(self) -> dict:
        H = self.hidden
        wb = self.binary.weight[self._perm5]  # (5H, 2H), rows [i, o, f1, f2, g]
        return {
            "embed": (self.embed.weight.t()[:, self._perm3], self.embed.bias[self._perm3]),
            "binary": (wb.t(), wb[:, :H].t(), wb[:, H:].t(), self.binary.bias[self._perm5]),
            "refine": [(r.weight[self._perm4].t(), r.bias[self._perm4]) for r in _linears(self)],
        }

    def _leaf_table(self, W: dict) -> State:
        w, b = W["embed"]
        return _lstm_tail(w + b, [], self.hidden)  # (V, H) each: one state per token

    def _refine(self, W: dict, h: Tensor, c: Tensor) -> State:
        for wt, b in W["refine"]:
            h, c = _lstm_tail(_addmm(b, h, wt), [c], self.hidden)
        return h, c

    def forward_all(self, tokens: Tensor, lengths: Tensor | None = None) -> Tensor:
        if not _rows_path(tokens):
            return super().forward_all(tokens, lengths)
        tokens, lengths, _ = read_inputs(tokens, lengths)
        return self.head(pr_lstm_rows.prefix_h(self, self._weights(), tokens).relu_())

    forward_all.__doc__ = _PrefixScanModel.forward_all.__doc__

    def _table_pairs(self, W: dict, table: State, left: Tensor, right: Tensor) -> State:
        if not _rows_path(left):
            return super()._table_pairs(W, table, left, right)
        return pr_lstm_rows.table_pairs(W, self.hidden, (table[0], table[1]), left, right)

    def _pairs(self, W: dict, state: State) -> State:
        (h12, c12), H = state, self.hidden  # [h1 h2], [c1 c2]: (N, 2H)
        if _rows_path(h12) and h12.shape[0] > pr_lstm_rows.ROWS:
            return pr_lstm_rows.pairs(W, H, h12, c12)
        w, _, _, b = W["binary"]
        h, c = _lstm_tail(_addmm(b, h12, w), [c12[:, :H], c12[:, H:]], H)
        return self._refine(W, h, c)

    def _combine(self, W: dict, a: State, b: State, zb: Tensor | None = None) -> State:
        (h1, c1), (h2, c2) = a, b
        _, w1, w2, bias = W["binary"]
        z = _addmm(bias, h1, w1)
        if zb is not None:
            z = z + zb if torch.is_grad_enabled() else z.add_(zb)
        else:
            z = torch.addmm(z, h2, w2) if torch.is_grad_enabled() else z.addmm_(h2, w2)
        h, c = _lstm_tail(z, [c1, c2], self.hidden)
        return self._refine(W, h, c)


class PRRNN(_PrefixScanModel):
    """PR-RNN ablation: the same scan with a one-vector cell.

    Leaf h = act_leaf(W onehot(x) + b); binary cell h = act(W [h1; h2] + b); then
    ``num_layers − 1`` unary refinements h' = act(U h + b') (default none). ``activation``:
    ``"tanh"`` (default; also on the leaf) or ``"relu"``; ``leaf_activation=False`` leaves the
    leaf linear. The authors' PR-RNN: ``activation="relu", leaf_activation=False``,
    ``init="haiku"`` (see :class:`PRLSTM` for ``init``).
    """

    def __init__(self, vocab_size: int, n_classes: int, options: PRRNNOptions | None = None,
                 **kw: Any) -> None:
        o = PRRNNOptions.build(options if options is not None else kw, "pr-rnn")
        super().__init__(vocab_size, n_classes, o.hidden)
        self.options = o
        hidden, num_layers, init = o.hidden, o.num_layers, o.init
        self.num_layers, self.init = num_layers, init
        self.activation, self.leaf_activation = o.activation, o.leaf_activation
        self.embed = nn.Linear(vocab_size, hidden)
        self.binary = nn.Linear(2 * hidden, hidden)
        self.refine = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(num_layers - 1))
        if init == "haiku":
            for layer in (self.embed, self.binary, *self.refine, self.head):
                haiku_linear_(layer)

    def _act(self, x: Tensor) -> Tensor:
        if torch.is_grad_enabled():
            return torch.tanh(x) if self.activation == "tanh" else torch.relu(x)
        return x.tanh_() if self.activation == "tanh" else x.relu_()

    def _weights(self) -> dict:
        H = self.hidden
        w = self.binary.weight
        return {"embed": (self.embed.weight.t(), self.embed.bias),
                "binary": (w.t(), w[:, :H].t(), w[:, H:].t(), self.binary.bias),
                "refine": [(r.weight.t(), r.bias) for r in _linears(self)]}

    def _leaf_table(self, W: dict) -> State:
        w, b = W["embed"]
        return (self._act(w + b) if self.leaf_activation else w + b,)

    def _refine(self, W: dict, h: Tensor) -> State:
        for wt, b in W["refine"]:
            h = self._act(_addmm(b, h, wt))
        return (h,)

    def _pairs(self, W: dict, state: State) -> State:
        w, _, _, b = W["binary"]
        return self._refine(W, self._act(_addmm(b, state[0], w)))

    def _combine(self, W: dict, a: State, b: State, zb: Tensor | None = None) -> State:
        _, w1, w2, bias = W["binary"]
        z = _addmm(bias, a[0], w1)
        if zb is not None:
            z = z + zb if torch.is_grad_enabled() else z.add_(zb)
        else:
            z = torch.addmm(z, b[0], w2) if torch.is_grad_enabled() else z.addmm_(b[0], w2)
        return self._refine(W, self._act(z))
