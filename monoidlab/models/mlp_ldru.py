"""MLP-LDRU: a learned binary operator reduced over a balanced binary tree (docs/models.md).

The string is embedded, right-padded with zero vectors to a power of two, and reduced by one
shared operator ``x ⊙ y`` level by level, pairing (0,1), (2,3), ... up to a single root (the
``balanced`` schedule of :mod:`monoidlab.schedules`); a linear head reads the root.

Padding order (a choice the papers leave open): the zero vectors are put in first and the input
block (LN, FFN, dropout) runs on *every* buffer position afterwards, exactly as docs/models.md
lists the steps. A padding leaf therefore enters the tree as one learned constant vector
``LN(0) + FFN(LN(0))`` (LN's bias through the FFN), the same for every padding position, which
the model can learn to treat as the identity element.

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

from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from monoidlab import schedules
from monoidlab.errors import InputError
from monoidlab.models.common import (
    NodeStates,
    associative_scan,
    ceil_log2,
    check_inputs,
    collect_nodes,
    linear,
    trunc_normal_,
)

OPERATORS = ("mlp", "sum", "linear", "gated-sum")


class MLPLDRU(nn.Module):
    """MLP-LDRU classifier.

    Parameters
    ----------
    vocab_size, n_classes : alphabet size (tokens 0..vocab_size-1) and number of classes.
    d : width (64 in the paper).
    dropout : after the input block and after every level (0.25; 0.1 for the Delétang tasks).
    operator : ``"mlp"`` (the paper's input-gated operator), or an ablation: ``"sum"``
        (x + y), ``"linear"`` (W[x; y] + b), ``"gated-sum"`` (g⊙x + (1−g)⊙y, g = σ(W[x; y] + b)).
    post_block : apply ``h = LN(h + FFN'(h))`` after the operator at every level (the
        paper: yes). With ``operator="sum", post_block=False`` the reduction is exactly associative
        (and commutative): the root is the sum of the leaves.

    Init follows haiku defaults (the authors' code): Linear weights VarianceScaling(1.0), i.e.
    truncated normal with std 1/sqrt(fan_in), biases 0; embedding truncated normal std 0.02;
    FFN' VarianceScaling(0.02); V_x, V_y, W_o identity; the ``linear`` ablation starts as
    [I I] (a sum) and ``gated-sum`` with g ≈ 1/2, so that every operator starts as a sum-like
    map.
    """

    def __init__(self, vocab_size: int, n_classes: int, d: int = 64, dropout: float = 0.25,
                 operator: str = "mlp", post_block: bool = True) -> None:
        super().__init__()
        if operator not in OPERATORS:
            raise InputError(f"unknown operator {operator!r}; expected one of {OPERATORS}")
        self.vocab_size, self.n_classes, self.d = vocab_size, n_classes, d
        self.operator, self.post_block = operator, post_block

        self.embedding = nn.Parameter(trunc_normal_(torch.empty(vocab_size, d), std=0.02))
        self.in_norm = nn.LayerNorm(d)
        self.in_ffn = nn.Sequential(linear(d, 4 * d), nn.ReLU(), linear(4 * d, d))
        self.drop = nn.Dropout(dropout)

        if operator == "mlp":
            # [w_x; w_y] = A3 ReLU(A2 ReLU(A1 [x; y] + a1) + a2) + a3   (2d -> 2d -> 4d -> 2d)
            self.gates = nn.Sequential(linear(2 * d, 2 * d), nn.ReLU(), linear(2 * d, 4 * d),
                                       nn.ReLU(), linear(4 * d, 2 * d))
            self.v_x, self.v_y, self.w_o = (_identity(d) for _ in range(3))
        elif operator == "linear":
            self.mix = nn.Linear(2 * d, d)
            with torch.no_grad():
                self.mix.weight.copy_(torch.cat([torch.eye(d), torch.eye(d)], dim=1))
                self.mix.bias.zero_()
        elif operator == "gated-sum":
            self.gate = linear(2 * d, d, scale=0.02)
        if post_block:
            self.post_ffn = nn.Sequential(linear(d, 4 * d, scale=0.02), nn.ReLU(),
                                          linear(4 * d, d, scale=0.02))
            self.post_norm = nn.LayerNorm(d)
        self.head = linear(d, n_classes)

    # ------------------------------------------------------------------ building blocks

    def operate(self, x: Tensor, y: Tensor) -> Tensor:
        """The bare operator x ⊙ y on (..., d) tensors (no post-level block)."""
        if self.operator == "sum":
            return x + y
        xy = torch.cat([x, y], dim=-1)
        if self.operator == "linear":
            return self.mix(xy)
        if self.operator == "gated-sum":
            g = torch.sigmoid(self.gate(xy))
            return g * x + (1 - g) * y
        w_x, w_y = self.gates(xy).chunk(2, dim=-1)
        return self.w_o(self.v_x(w_x * x) + self.v_y(w_y * y))

    def combine(self, x: Tensor, y: Tensor) -> Tensor:
        """One tree node: operator then ``LN(h + FFN'(h))`` (no dropout; for probing)."""
        h = self.operate(x, y)
        if self.post_block:
            h = self.post_norm(h + self.post_ffn(h))
        return h

    def embed(self, tokens: Tensor, valid: Tensor | None = None) -> Tensor:
        """Input block: (B, T) tokens -> (B, T, d); positions where ``valid`` is False get a
        zero embedding before the block (the padding leaves)."""
        e = self.embedding[tokens]
        if valid is not None:
            e = e * valid[..., None].to(e.dtype)
        h = self.in_norm(e)
        return self.drop(h + self.in_ffn(h))

    def _buffer(self, tokens: Tensor, lengths: Tensor,
                offsets: Tensor | None) -> tuple[Tensor, Tensor, Tensor]:
        """Embedded leaves (B, M, d) and each string's root level ceil(log2(r + L))."""
        T = tokens.shape[1]
        if offsets is None:
            offsets = torch.zeros_like(lengths)
        else:
            offsets = torch.as_tensor(offsets, dtype=torch.long, device=tokens.device)
            if offsets.shape != lengths.shape or bool((offsets < 0).any()):
                raise InputError("offsets must be a (B,) tensor of non-negative ints")
        ends = offsets + lengths
        top = ceil_log2(ends)  # (B,)
        M = 1 << int(top.max())
        src = torch.arange(M, device=tokens.device) - offsets[:, None]  # string position
        valid = (src >= 0) & (src < lengths[:, None])
        leaves = self.embed(tokens.gather(1, src.clamp(0, T - 1)), valid)  # (B, M, d)
        return leaves, top, offsets

    def _levels(self, h: Tensor) -> Iterator[Tensor]:
        """Yield the buffer of each level 1, 2, ...: (B, M/2), (B, M/4), ..., (B, 1)."""
        while h.shape[1] > 1:
            h = self.drop(self.combine(h[:, 0::2], h[:, 1::2]))
            yield h

    # ------------------------------------------------------------------ public API

    def forward(self, tokens: Tensor, lengths: Tensor | None = None,
                offsets: Tensor | None = None) -> Tensor:
        """Logits (B, n_classes) at each string's root.

        ``offsets`` (B,) puts string b at buffer positions [r_b, r_b + L_b) (left padding,
        for pad-offset training). Each string's root is read at its own level
        ceil(log2(r_b + L_b)), so its tree never depends on the other strings of the batch.
        """
        return self.head(self._roots(tokens, lengths, offsets))

    def forward_at_offsets(self, tokens: Tensor, lengths: Tensor, offsets: Tensor) -> Tensor:
        """:meth:`forward` with every string at its left offset (:class:`OffsetModel`)."""
        return self.forward(tokens, lengths, offsets)

    def _roots(self, tokens: Tensor, lengths: Tensor | None, offsets: Tensor | None) -> Tensor:
        tokens, lengths = check_inputs(tokens, lengths)
        if not self.training and offsets is None:
            return self._memo_roots(tokens, lengths)
        leaves, top, _ = self._buffer(tokens, lengths, offsets)
        root = leaves[:, 0]  # strings of length 1 (no offset) are their own root
        for k, h in enumerate(self._levels(leaves), start=1):
            root = torch.where((top == k)[:, None], h[:, 0], root)
        return root

    def _memo_roots(self, tokens: Tensor, lengths: Tensor) -> Tensor:
        """Eval mode: the same roots, every distinct subtree computed once (models/memo.py).

        Without dropout a node depends only on the tokens (and padding) under it; on a test
        batch the low levels repeat a handful of subtrees, so this is 10-20x faster at length
        500 and equal up to float summation order.
        """
        from monoidlab.models.memo import memo_roots

        B, T = tokens.shape
        top = ceil_log2(lengths)
        M = 1 << int(top.max())
        pos = torch.arange(M, device=tokens.device)
        valid = pos[None, :] < lengths[:, None]
        pad = self.vocab_size  # table row of the padding leaf
        ids = torch.where(valid, tokens.gather(1, pos.clamp(max=T - 1).expand(B, M)),
                          torch.full_like(tokens[:, :1], pad))
        rows = torch.arange(pad + 1, device=tokens.device)[None, :]
        table = self.embed(rows.clamp(max=pad - 1), rows < pad)[0]  # tokens, then padding
        (root,) = memo_roots((table,), ids, top, lambda a, b: (self.combine(a[0], b[0]),))
        return root

    # ------------------------------------------------------------------ OperatorModel
    def root_states(self, tokens: Tensor, lengths: Tensor) -> Tensor:
        """Each string's root vector (B, d), before the head (no dropout in eval mode)."""
        return self._roots(tokens, lengths, None)

    def apply_operator(self, a: Tensor, b: Tensor) -> Tensor:
        """One tree node on flat vectors: :meth:`combine`."""
        return self.combine(a, b)

    def padding_state(self) -> Tensor:
        """The padding leaf: a zero vector through the input block, LN(0) + FFN(LN(0))."""
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

    def node_states(self, tokens: Tensor, lengths: Tensor | None = None,
                    offsets: Tensor | None = None) -> NodeStates:
        """Every internal node's vector, in the order of ``schedules.schedule("balanced", L, r)``."""
        tokens, lengths = check_inputs(tokens, lengths)
        h, _, offsets = self._buffer(tokens, lengths, offsets)
        M = h.shape[1]
        # levels concatenated = the node order of the full buffer's balanced schedule
        all_nodes = torch.cat([h[:, :0], *self._levels(h)], dim=1)
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
        tokens, lengths = check_inputs(tokens, lengths)
        (h,) = associative_scan(lambda a, b: (self.drop(self.combine(a[0], b[0])),),
                                (self.embed(tokens),))
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
        tokens, lengths = check_inputs(tokens, lengths)
        h, _, offsets = self._buffer(tokens, lengths, offsets)
        levels = [h, *self._levels(h)]
        device = h.device
        # number of valid triple starts per (row, level): nodes first..last have real tokens
        ks = torch.arange(len(levels), device=device)
        first = offsets[:, None] >> ks
        last = (offsets + lengths - 1)[:, None] >> ks
        count = (last - first - 1).clamp(min=0)  # (B, K)
        total = count.sum()
        if int(total) == 0:
            return h.sum() * 0.0
        pick = torch.multinomial(count.flatten().float(), n_triples, replacement=True,
                                 generator=generator)
        rows, lv = pick // len(levels), pick % len(levels)
        u = torch.rand(n_triples, generator=generator, device=device)
        j = first[rows, lv] + (u * count[rows, lv]).long().clamp(max=count[rows, lv] - 1)
        a = torch.empty(n_triples, self.d, device=device, dtype=h.dtype)
        b, c = torch.empty_like(a), torch.empty_like(a)
        for k, hk in enumerate(levels):  # gather per level (levels have different widths)
            sel = lv == k
            if bool(sel.any()):
                r, jj = rows[sel], j[sel]
                a[sel], b[sel], c[sel] = hk[r, jj], hk[r, jj + 1], hk[r, jj + 2]
        left = self.combine(self.combine(a, b), c)
        right = self.combine(a, self.combine(b, c))
        return (1 - F.cosine_similarity(left, right, dim=-1)).mean()


def _identity(d: int) -> nn.Linear:
    layer = nn.Linear(d, d)
    with torch.no_grad():
        layer.weight.copy_(torch.eye(d))
        layer.bias.zero_()
    return layer
