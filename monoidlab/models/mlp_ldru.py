"""MLP-LDRU: a learned binary operator reduced over a balanced binary tree (docs/models.md).

The string is embedded, right-padded with zero vectors to a power of two, and reduced by one
shared operator ``x ⊙ y`` level by level, pairing (0,1), (2,3), ... up to a single root (the
``balanced`` schedule of :mod:`monoidlab.strings.schedules`); a linear head reads the root.

Padding order (a choice the papers leave open): the zero vectors are put in first and the input
block (LN, FFN, dropout) runs on *every* buffer position afterwards, exactly as docs/models.md
lists the steps. A padding leaf therefore enters the tree as one learned constant vector
``LN(0) + FFN(LN(0))`` (LN's bias through the FFN), the same for every padding position, which
the model can learn to treat as the identity element. ``padding="identity"`` makes it the
identity exactly: a node with an all-padding child returns its other child unchanged (no
operator, no post-level block, no dropout), so compositions (x, ε) never occur.

How it is computed (same function, less work; tests/test_speed_equivalence.py compares it with
the previous implementation): the input block runs once on the V + 1 distinct leaf rows (the
V tokens and the zero padding vector) and is gathered (dropout stays per position); a level's
operator pairs are a reshape (B, n, 2d) of the level, with one linear for V_x and V_y. When
padding is a constant (eval mode, or dropout 0), a node made only of padding is one constant
per level, computed once: each level is computed only up to the last node that holds a token.
And then (eval, or training without dropout; with or without offsets) every distinct subtree
is computed once (hash-consing): a level is a table of distinct blocks plus each node's row in
it, the table holding every possible pair of the level below while that is at most
``memo_limit`` rows and a quarter of the level's nodes, else the pairs present
(``torch.unique``) while they are at most half the nodes; above that the levels are plain (the
same values either way, gradients equal up to float32 summation order; ``memo_limit = 0``:
never shared).

Example
-------
>>> import torch
>>> _ = torch.manual_seed(0)
>>> model = MLPLDRU(vocab_size=2, n_classes=2, d=8).eval()
>>> tokens = torch.tensor([[0, 1, 1, 0, 1], [1, 1, 0, 0, 0]])
>>> model(tokens, torch.tensor([5, 2])).shape
torch.Size([2, 2])
>>> model.node_states(tokens, torch.tensor([5, 2])).valid.sum(1).tolist()  # 8 - 1 and 2 - 1
[7, 1]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from monoidlab.geometry import Padding, buffer_size
from monoidlab.models.common import (
    INITS,
    NodeStates,
    associative_scan,
    ceil_log2,
    collect_nodes,
    haiku_linear_,
    linear,
    read_inputs,
    read_offsets,
    trunc_normal_,
)
from monoidlab.models.options import ModelOptions, boolean, one_of, positive_int, probability
from monoidlab.strings import schedules

OPERATORS = ("mlp", "sum", "linear", "gated-sum")


@dataclass(frozen=True)
class MLPLDRUOptions(ModelOptions):
    """MLP-LDRU's hyper-parameters.

    d : width (64 in the paper).
    dropout : after the input block and after every level (0.25; 0.1 for the Delétang tasks).
    operator : ``"mlp"`` (the paper's input-gated operator), or an ablation: ``"sum"``
        (x + y), ``"linear"`` (W[x; y] + b), ``"gated-sum"`` (g⊙x + (1−g)⊙y, g = σ(W[x; y] + b)).
    post_block : apply ``h = LN(h + FFN'(h))`` after the operator at every level (the paper:
        yes). With ``operator="sum", post_block=False`` the reduction is exactly associative
        (and commutative): the root is the sum of the leaves.
    init : ``"default"`` or ``"haiku"`` (see :class:`MLPLDRU`).
    padding : :class:`~monoidlab.geometry.Padding`: ``learned`` (a padding leaf is the zero
        vector through the input block, and (x, ε) nodes are real compositions: the papers')
        or ``identity`` (a node with an all-padding child passes the other child through).

    >>> MLPLDRUOptions(d=32, padding="identity").padding
    <Padding.IDENTITY: 'identity'>
    """

    d: int = 64
    dropout: float = 0.25
    operator: str = "mlp"
    post_block: bool = True
    init: str = "default"
    padding: Padding = Padding.LEARNED

    def check(self) -> None:
        positive_int(self, "d")
        probability(self, "dropout")
        one_of(self, "operator", OPERATORS)
        boolean(self, "post_block")
        one_of(self, "init", INITS)
        object.__setattr__(self, "padding", Padding.parse(self.padding, "option 'padding'"))


@dataclass
class _Level:
    """One level of the reduction: ``h`` is dense, (B, w, d), when ``ids`` is None; else a
    table (rows, d) and ``ids`` (B, w) holds each node's row in it. Nodes at index >= w hold
    only padding; their value is ``pad`` (d,) (None when the level covers the whole buffer).
    ``pad_id``: the row of the all-padding block in a table."""

    h: Tensor
    ids: Tensor | None = None
    pad: Tensor | None = None
    pad_id: Tensor | None = None

    @property
    def width(self) -> int:
        return (self.h if self.ids is None else self.ids).shape[1]

    def values(self) -> Tensor:
        return self.h if self.ids is None else self.h[self.ids]

    def column0(self) -> Tensor:
        return self.h[:, 0] if self.ids is None else self.h[self.ids[:, 0]]

    def full(self, width: int) -> Tensor:
        """The level over ``width`` nodes, padding nodes included."""
        h = self.values()
        if h.shape[1] == width:
            return h
        assert self.pad is not None  # narrower than the buffer only when padding is constant
        B, w, d = h.shape
        return torch.cat([h, self.pad.expand(B, width - w, d)], dim=1)


class MLPLDRU(nn.Module):
    """MLP-LDRU classifier.

    Parameters
    ----------
    vocab_size, n_classes : alphabet size (tokens 0..vocab_size-1) and number of classes.
    options : :class:`MLPLDRUOptions` (or its fields as keywords: ``MLPLDRU(2, 2, d=8)``).

    Init ``"default"``: Linear weights VarianceScaling(1.0) (truncated normal, std 1/sqrt(fan_in)
    after haiku's truncation correction), biases 0; embedding truncated normal std 0.02; FFN'
    VarianceScaling(0.02); V_x, V_y, W_o identity; the ``linear`` ablation starts as [I I] (a
    sum) and ``gated-sum`` with g ≈ 1/2, so that every operator starts as a sum-like map.
    Init ``"haiku"``, exactly the authors' code: input-block FFN and head ``hk.Linear``'s
    default (truncated normal with stddev 1/sqrt(fan_in), no correction); gate MLP
    VarianceScaling(1.0, fan_avg); FFN' VarianceScaling(0.02, fan_avg); the rest as above.
    """

    memo_limit = 4096  # most rows of a table of distinct blocks (0: never share; benchmarks)

    def __init__(self, vocab_size: int, n_classes: int, options: MLPLDRUOptions | None = None,
                 **kw: Any) -> None:
        super().__init__()
        o = self.options = MLPLDRUOptions.build(options if options is not None else kw,
                                                "mlp-ldru")
        d, dropout, operator, post_block, init = o.d, o.dropout, o.operator, o.post_block, o.init
        self.vocab_size, self.n_classes, self.d = vocab_size, n_classes, d
        self.operator, self.post_block = operator, post_block
        self.init, self.padding = init, o.padding
        haiku = init == "haiku"
        mode = "fan_avg" if haiku else "fan_in"

        self.embedding = nn.Parameter(trunc_normal_(torch.empty(vocab_size, d), std=0.02))
        self.in_norm = nn.LayerNorm(d)
        self.in_ffn = nn.Sequential(linear(d, 4 * d), nn.ReLU(), linear(4 * d, d))
        self.drop = nn.Dropout(dropout)

        if operator == "mlp":
            # [w_x; w_y] = A3 ReLU(A2 ReLU(A1 [x; y] + a1) + a2) + a3   (2d -> 2d -> 4d -> 2d)
            self.gates = nn.Sequential(linear(2 * d, 2 * d, mode=mode), nn.ReLU(),
                                       linear(2 * d, 4 * d, mode=mode), nn.ReLU(),
                                       linear(4 * d, 2 * d, mode=mode))
            self.v_x, self.v_y, self.w_o = (_identity(d) for _ in range(3))
        elif operator == "linear":
            self.mix = nn.Linear(2 * d, d)
            with torch.no_grad():
                self.mix.weight.copy_(torch.cat([torch.eye(d), torch.eye(d)], dim=1))
                self.mix.bias.zero_()
        elif operator == "gated-sum":
            self.gate = linear(2 * d, d, scale=0.02)
        if post_block:
            self.post_ffn = nn.Sequential(linear(d, 4 * d, scale=0.02, mode=mode), nn.ReLU(),
                                          linear(4 * d, d, scale=0.02, mode=mode))
            self.post_norm = nn.LayerNorm(d)
        self.head = linear(d, n_classes)
        if haiku:
            for layer in (*self.in_ffn, self.head):
                if isinstance(layer, nn.Linear):
                    haiku_linear_(layer)

    # ------------------------------------------------------------------ building blocks

    def _operate_pairs(self, xy: Tensor) -> Tensor:
        """The bare operator on (..., 2d) pairs [x; y] -> (..., d)."""
        d = self.d
        if self.operator == "sum":
            return xy[..., :d] + xy[..., d:]
        if self.operator == "linear":
            return self.mix(xy)
        if self.operator == "gated-sum":
            g = torch.sigmoid(self.gate(xy))
            return g * xy[..., :d] + (1 - g) * xy[..., d:]
        u = self.gates(xy) * xy  # [w_x ⊙ x; w_y ⊙ y]
        vxy = torch.cat([self.v_x.weight, self.v_y.weight], dim=1)  # V_x a + V_y b in one
        return self.w_o(F.linear(u, vxy, self.v_x.bias + self.v_y.bias))

    def _post(self, h: Tensor) -> Tensor:
        return self.post_norm(h + self.post_ffn(h)) if self.post_block else h

    def operate(self, x: Tensor, y: Tensor) -> Tensor:
        """The bare operator x ⊙ y on (..., d) tensors (no post-level block)."""
        return self._operate_pairs(torch.cat([x, y], dim=-1))

    def combine(self, x: Tensor, y: Tensor) -> Tensor:
        """One tree node: operator then ``LN(h + FFN'(h))`` (no dropout; for probing).

        With ``padding="identity"`` this is the operator of two non-empty children; the tree
        passes a child with an empty sibling through without calling it."""
        return self._post(self.operate(x, y))

    def _leaf_table(self) -> Tensor:
        """The input block on the V + 1 distinct leaf rows: tokens 0..V-1, then padding (the
        zero vector), (V + 1, d), before dropout."""
        rows = torch.cat([self.embedding, self.embedding.new_zeros(1, self.d)])
        h = self.in_norm(rows)
        return h + self.in_ffn(h)

    def embed(self, tokens: Tensor, valid: Tensor | None = None) -> Tensor:
        """Input block: (B, T) tokens -> (B, T, d); positions where ``valid`` is False get a
        zero embedding before the block (the padding leaves)."""
        ids = tokens if valid is None else torch.where(valid, tokens, self.vocab_size)
        return self.drop(self._leaf_table()[ids])

    def _node(self, xy: Tensor, lpad: Tensor | bool, rpad: Tensor | bool,
              dropout: bool) -> Tensor:
        """Tree nodes from (..., 2d) children pairs: operator, post block (and dropout); with
        identity padding a node whose left (right) child is all padding is its right (left)
        child. ``lpad``/``rpad``: (...,) bools, or python bools for every node alike."""
        h = self._post(self._operate_pairs(xy))
        if dropout:
            h = self.drop(h)
        if self.padding != "identity":
            return h
        x, y = xy[..., : self.d], xy[..., self.d:]
        if isinstance(lpad, Tensor) and isinstance(rpad, Tensor):
            return torch.where(lpad[..., None], y, torch.where(rpad[..., None], x, h))
        return y if lpad else x if rpad else h

    def _tree(self, tokens: Tensor, lengths: Tensor, longest: int,
              offsets: Tensor | None) -> tuple[list[_Level], Tensor, Tensor, int]:
        """Every level of the reduction, each string's root level ceil(log2(r + L)), the
        offsets and the buffer size M."""
        B, T = tokens.shape
        device = tokens.device
        offsets, end = read_offsets(tokens, lengths, longest, offsets)
        M = buffer_size(end)
        top = ceil_log2(offsets + lengths)
        first, last = offsets, offsets + lengths - 1  # real leaves of each row
        V = self.vocab_size
        # padding is a constant unless dropout draws a different mask per position
        constant = not (self.training and self.drop.p > 0)
        # distinct blocks shared whenever padding is a constant (eval, or training without
        # dropout), with or without offsets: a padding block has its own id, on either side
        share = constant and self.memo_limit > 0
        width = end if constant else M
        src = torch.arange(width, device=device) - offsets[:, None]
        valid = (src >= 0) & (src < lengths[:, None])
        ids = torch.where(valid, tokens.gather(1, src.clamp(0, T - 1)), V)
        table = self._leaf_table()
        if constant:
            level = _Level(table, ids=ids, pad=table[V], pad_id=ids.new_tensor(V))
        else:
            level = _Level(self.drop(table[ids]))
        levels = [level]
        for k in range(1, M.bit_length()):
            levels.append(level := self._next_level(level, k, first, last, constant, share))
        return levels, top, offsets, M

    def _next_level(self, level: _Level, k: int, first: Tensor, last: Tensor,
                    constant: bool, share: bool) -> _Level:
        """Level k from level k - 1 (``share``: as a table of distinct blocks when it pays)."""
        B = first.shape[0]
        w = level.width
        n = (w + 1) // 2
        pad = None
        if constant:
            assert level.pad is not None
            pad = self._node(torch.cat([level.pad, level.pad]), True, True, dropout=False)
        if level.ids is not None and share:
            assert level.pad_id is not None
            rows = level.h.shape[0]
            ids = level.ids
            if w % 2:
                ids = torch.cat([ids, level.pad_id.expand(B, 1)], dim=1)
            key = ids[:, 0::2] * rows + ids[:, 1::2]
            pad_key = level.pad_id * rows + level.pad_id
            if rows * rows <= min(self.memo_limit, B * n // 4):  # every pair: no sort needed
                ab, new_ids, pad_id = torch.arange(rows * rows, device=key.device), key, pad_key
            else:  # the pairs present (and the all-padding one), each once
                ab, inverse = torch.unique(torch.cat([key.flatten(), pad_key.view(1)]),
                                           return_inverse=True)
                new_ids, pad_id = inverse[:-1].view(B, n), inverse[-1]
            if len(ab) <= B * n // 2:  # else mostly distinct: plain levels from here on
                a, b = ab.div(rows, rounding_mode="floor"), ab % rows
                pairs = torch.cat([level.h[a], level.h[b]], dim=-1)
                table = self._node(pairs, a == level.pad_id, b == level.pad_id, dropout=False)
                return _Level(table, ids=new_ids, pad=pad, pad_id=pad_id)
        h = level.values()
        if w % 2:
            assert level.pad is not None  # an odd width only when padding is constant
            h = torch.cat([h, level.pad.expand(B, 1, -1)], dim=1)
        lpad: Tensor | bool = False
        rpad: Tensor | bool = False
        if self.padding == "identity":  # child j of level k - 1 is real iff first <= j <= last
            j = torch.arange(0, 2 * n, 2, device=first.device)
            fk, lk = (first >> (k - 1))[:, None], (last >> (k - 1))[:, None]
            lpad, rpad = (j < fk) | (j > lk), (j + 1 < fk) | (j + 1 > lk)
        dense = self._node(h.view(B, n, 2 * self.d), lpad, rpad, dropout=not constant)
        return _Level(dense, pad=pad)

    # ------------------------------------------------------------------ public API

    def forward(self, tokens: Tensor, lengths: Tensor | None = None,
                offsets: Tensor | None = None) -> Tensor:
        """Logits (B, n_classes).

        ``offsets`` (optional, (B,) ints >= 0) places string b at buffer positions r_b..r_b+L_b-1
        with padding on both sides (the training-side augmentation: random offsets
        for pad-offset training). Each string's root is read at its own level
        ceil(log2(r_b + L_b)), so its tree never depends on the other strings of the batch.
        """
        return self.head(self._roots(tokens, lengths, offsets))

    def forward_at_offsets(self, tokens: Tensor, lengths: Tensor, offsets: Tensor) -> Tensor:
        """:meth:`forward` with every string at its left offset (:class:`OffsetModel`)."""
        return self.forward(tokens, lengths, offsets)

    def _roots(self, tokens: Tensor, lengths: Tensor | None, offsets: Tensor | None) -> Tensor:
        tokens, lengths, longest = read_inputs(tokens, lengths)
        if not len(lengths):  # an empty batch (any width): no tree to read a root from
            return self.embedding.new_zeros(0, self.d)
        levels, top, _, _ = self._tree(tokens, lengths, longest, offsets)
        root = levels[0].column0()  # strings of length 1 (no offset) are their own root
        for k, level in enumerate(levels[1:], start=1):
            root = torch.where((top == k)[:, None], level.column0(), root)
        return root

    def eval_group(self, length: int) -> int:
        """Test strings of lengths with one balanced buffer (:func:`~monoidlab.geometry.
        buffer_size`) may share an evaluation call (:mod:`monoidlab.evaluation.packing`): each
        is read at its own root level, whose subtree is its own buffer, and strings of one
        buffer pad each other by less than a factor of two."""
        return buffer_size(length)

    # ------------------------------------------------------------------ OperatorModel
    def root_states(self, tokens: Tensor, lengths: Tensor) -> Tensor:
        """Each string's root vector (B, d), before the head (no dropout in eval mode)."""
        return self._roots(tokens, lengths, None)

    def apply_operator(self, a: Tensor, b: Tensor) -> Tensor:
        """One tree node on flat vectors: :meth:`combine`."""
        return self.combine(a, b)

    def padding_state(self) -> Tensor | None:
        """The padding leaf: a zero vector through the input block, LN(0) + FFN(LN(0)); None
        with identity padding (no padding state: the tree skips it)."""
        if self.padding == "identity":
            return None
        t = torch.zeros((1, 1), dtype=torch.long, device=self.embedding.device)
        return self.embed(t, t != 0)[0, 0]

    def state_logits(self, state: Tensor) -> Tensor:
        return self.head(state)

    def visible_state(self, state: Tensor) -> Tensor:
        return state

    def regulariser(self, tokens: Tensor, lengths: Tensor,
                    offsets: Tensor | None = None) -> Tensor:
        """The associativity regulariser :meth:`assoc_loss` (:class:`RegularisedModel`)."""
        return self.assoc_loss(tokens, lengths, offsets)

    def consistency_loss(self, tokens: Tensor, lengths: Tensor, offsets: Tensor) -> Tensor:
        """Offset consistency (:class:`ConsistentModel`): mean over the batch of
        1 − cos(root at ``offsets``, root at offset 0).

        With identity padding a string at another left offset is the same string under
        another bracketing, and a model whose states stand for the string's monoid element
        has the same root under both. The term reads no label. Trained with
        ``offset_consistency`` (docs/models.md).

        >>> m = MLPLDRU(2, 2, d=8, dropout=0.0, padding="identity")
        >>> t, n = torch.tensor([[0, 1, 1]]), torch.tensor([3])
        >>> round(m.consistency_loss(t, n, torch.tensor([0])).item(), 6)
        0.0
        """
        at_offsets = self._roots(tokens, lengths, offsets)
        at_zero = self._roots(tokens, lengths, None)
        return (1 - F.cosine_similarity(at_offsets, at_zero, dim=-1)).mean()

    def node_states(self, tokens: Tensor, lengths: Tensor | None = None,
                    offsets: Tensor | None = None) -> NodeStates:
        """Every internal node's vector, in the order of ``schedules.schedule("balanced", L, r)``.

        With identity padding a node with an all-padding child holds its other child's vector."""
        tokens, lengths, longest = read_inputs(tokens, lengths)
        levels, _, offsets, M = self._tree(tokens, lengths, longest, offsets)
        # levels concatenated = the node order of the full buffer's balanced schedule
        all_nodes = torch.cat([lv.full(M >> k) for k, lv in enumerate(levels)][1:]
                              or [levels[0].values()[:, :0]], dim=1)
        big = schedules.schedule("balanced", M)
        return collect_nodes(all_nodes, big, "balanced", lengths, offsets)

    def forward_all(self, tokens: Tensor, lengths: Tensor | None = None) -> Tensor:
        """Logits (B, T, n_classes) for every prefix: the prefix-scan variant.

        The same input block and operator (with its post-level block and dropout) are applied
        along the ``scan`` schedule (``jax.lax.associative_scan``'s trees, as in PR-LSTM)
        instead of the padded balanced tree, so that every prefix has a state; this is the
        variant used for Delétang's sequence tasks. No padding leaves are involved, and
        position t depends on tokens 0..t only (positions >= length are to be masked).
        """
        tokens, lengths, _ = read_inputs(tokens, lengths)
        (h,) = associative_scan(
            lambda a, b: (self.drop(self.combine(a[0], b[0])),), (self.embed(tokens),),
            pairs=lambda ab: (self.drop(self._post(self._operate_pairs(ab[0]))),))
        return self.head(h)

    def assoc_loss(self, tokens: Tensor, lengths: Tensor | None = None,
                   offsets: Tensor | None = None, n_triples: int = 64,
                   generator: torch.Generator | None = None) -> Tensor:
        """Associativity regulariser: mean of 1 − cos((a⊙b)⊙c, a⊙(b⊙c)).

        Triples (a, b, c) are three adjacent nodes of one level (leaves = level 0) of this
        batch's trees, all three over real tokens (non-empty spans), drawn uniformly with
        replacement over all such triples of the batch. ⊙ is :meth:`combine`. This runs its
        own pass over the batch (with dropout in training mode). Returns 0 when no string has
        three nodes on a level (all lengths < 3).
        """
        tokens, lengths, longest = read_inputs(tokens, lengths)
        levels, _, offsets, _ = self._tree(tokens, lengths, longest, offsets)
        values = [lv.values() for lv in levels]
        if longest < 3:  # no level has three real nodes in a row
            return values[0].sum() * 0.0
        device = values[0].device
        # number of valid triple starts per (row, level): nodes first..last have real tokens
        ks = torch.arange(len(levels), device=device)
        first = offsets[:, None] >> ks
        last = (offsets + lengths - 1)[:, None] >> ks
        count = (last - first - 1).clamp(min=0)  # (B, K)
        pick = torch.multinomial(count.flatten().float(), n_triples, replacement=True,
                                 generator=generator)
        rows, lv = pick // len(levels), pick % len(levels)
        u = torch.rand(n_triples, generator=generator, device=device)
        j = first[rows, lv] + (u * count[rows, lv]).long().clamp(max=count[rows, lv] - 1)
        # every level side by side: node j of level k is column base[k] + j
        flat = torch.cat(values, dim=1)
        base = torch.tensor([0] + [v.shape[1] for v in values[:-1]], device=device).cumsum(0)
        col = base[lv] + j
        a, b, c = flat[rows, col], flat[rows, col + 1], flat[rows, col + 2]
        left = self.combine(self.combine(a, b), c)
        right = self.combine(a, self.combine(b, c))
        return (1 - F.cosine_similarity(left, right, dim=-1)).mean()


def _identity(d: int) -> nn.Linear:
    layer = nn.Linear(d, d)
    with torch.no_grad():
        layer.weight.copy_(torch.eye(d))
        layer.bias.zero_()
    return layer
