"""Transformer baselines: Delétang et al.'s encoder classifier and a reusable stack.

:class:`TransformerStack` is the core (token embedding, position encoding, blocks) with
``encode(tokens, positions, key_padding_mask, causal) -> (B, T, d_model)``; a decoder-only LM
(decimal addition) is a ``TransformerStack(causal=True)`` plus its own output layer.
:class:`TransformerClassifier` adds a linear head read at position ``length - 1``.

Architecture, following Delétang et al.'s ``TransformerEncoder`` (neural_networks_chomsky_
hierarchy, ``models/transformer.py``):

* token embedding, truncated-normal std 0.02, multiplied by ``sqrt(d_model)``; plus the
  position embedding if the encoding has one; dropout;
* **post-LN** blocks (their code: ``h = LN(h + drop(attn(h)))``, ``h = LN(h + drop(ffn(h)))``),
  ``norm="pre"`` for pre-LN (``h = h + drop(attn(LN(h)))``, ... , final LN), which is what
  most decoder-only LMs (and so probably the addition experiments) use;
* attention: bias-free q/k/v/out projections, logits ``q.k / sqrt(d_head)`` plus the position
  bias, no dropout on attention probabilities; FFN ``d -> ff_mult d -> d`` with ReLU.

Padding is on the right: ``key_padding_mask`` (``True`` = padding) hides padded keys, so the
outputs at real positions do not depend on anything at positions ``>= length``.

Example
-------
>>> import torch
>>> model = TransformerClassifier(vocab_size=2, n_classes=2, d_model=16, n_layers=1,
...                               n_heads=2, position="rope")
>>> tokens, lengths = torch.tensor([[0, 1, 1, 0]]), torch.tensor([3])
>>> model(tokens, lengths).shape, model.forward_all(tokens, lengths).shape
(torch.Size([1, 2]), torch.Size([1, 4, 2]))
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from monoidlab.errors import InputError
from monoidlab.models.common import gather_last, length_mask
from monoidlab.models.options import ModelOptions, boolean, one_of, positive_int, probability
from monoidlab.models.positions import (
    DEFAULT_MAX_LEN,
    PositionEncoding,
    make_position_encoding,
    position_option_names,
)

__all__ = [
    "TransformerOptions",
    "StackOptions",
    "MultiHeadAttention",
    "TransformerBlock",
    "TransformerStack",
    "TransformerClassifier",
    "padding_mask",
]


@dataclass(frozen=True)
class StackOptions(ModelOptions):
    """A Transformer stack's hyper-parameters (shared by the encoder classifier and the
    decoder LM, whose defaults differ).

    d_model, n_layers, n_heads, dropout, ff_mult : sizes; ``d_model`` divisible by ``n_heads``.
    position : any name of :func:`~monoidlab.models.positions.available_position_encodings`.
    max_len : the learned position table's size. norm : ``"post"`` (Delétang) or ``"pre"``.
    share_position_bias : one learnable bias (FIRE) for every layer (True) or one per layer.
    position_options : the encoding's own options (``max_randomized_len``, ``eval_positions``,
        ``c_init``, ...), written flat beside the others in a config
        (``{position = "randomized-fire", max_randomized_len = 128}``).
    """

    d_model: int = 64
    n_layers: int = 5
    n_heads: int = 8
    dropout: float = 0.1
    ff_mult: int = 4
    position: str = "sinusoidal"
    max_len: int = DEFAULT_MAX_LEN
    norm: str = "post"
    share_position_bias: bool = True
    position_options: tuple[tuple[str, Any], ...] = ()

    def check(self) -> None:
        for name in ("d_model", "n_layers", "n_heads", "ff_mult", "max_len"):
            positive_int(self, name)
        probability(self, "dropout")
        one_of(self, "norm", ("post", "pre"))
        boolean(self, "share_position_bias")
        if self.d_model % self.n_heads:
            raise InputError(f"option 'd_model': {self.d_model} is not divisible by n_heads "
                             f"= {self.n_heads}")
        allowed = position_option_names(self.position)
        opts = dict(self.position_options)
        bad = sorted(set(opts) - set(allowed))
        if bad:
            raise InputError(f"option {bad[0]!r} does not apply to position encoding "
                             f"{self.position!r}; it takes {', '.join(allowed) or 'no option'}")
        object.__setattr__(self, "position_options", tuple(sorted(opts.items())))

    @classmethod
    def split(cls, values: dict[str, Any]) -> dict[str, Any]:
        """Flat keys that are some position encoding's options go into ``position_options``
        (``check`` then refuses those the chosen encoding does not take)."""
        from monoidlab.models.positions import available_position_encodings

        known = {o for name in available_position_encodings()
                 for o in position_option_names(name)}
        extra = {k: v for k, v in values.items() if k not in cls.names() and k in known}
        if not extra:
            return values
        out = {k: v for k, v in values.items() if k not in extra}
        own = dict(out.get("position_options", ()))
        return {**out, "position_options": tuple(sorted({**own, **extra}.items()))}

    def as_dict(self) -> dict[str, Any]:
        out = super().as_dict()
        out.pop("position_options")
        return {**out, **dict(self.position_options)}

    def stack_kw(self) -> dict[str, Any]:
        """The arguments of :class:`TransformerStack` (the position options flat)."""
        out = {k: getattr(self, k) for k in ("d_model", "n_layers", "n_heads", "dropout",
                                             "ff_mult", "position", "max_len", "norm",
                                             "share_position_bias")}
        return {**out, **dict(self.position_options)}


@dataclass(frozen=True)
class TransformerOptions(StackOptions):
    """The encoder classifier's options: :class:`StackOptions` with Delétang et al.'s defaults
    (d 64, 5 layers, 8 heads, dropout 0.1, FFN x4, post-LN, sinusoidal positions), plus
    ``causal`` (a causal mask) and ``bos`` (a learned beginning-of-string token)."""

    causal: bool = False
    bos: bool = False

    def check(self) -> None:
        super().check()
        boolean(self, "causal")
        boolean(self, "bos")


def padding_mask(lengths: Tensor, length: int) -> Tensor:
    """``(B, T)`` bool, ``True`` at padding positions ``t >= lengths[b]``.

    >>> padding_mask(torch.tensor([1, 3]), 3).tolist()
    [[False, True, True], [False, False, False]]
    """
    return ~length_mask(lengths, length)


class MultiHeadAttention(nn.Module):
    """Multi-head self-attention with position rotations and additive biases injected."""

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        if d_model % n_heads:
            raise InputError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.out = nn.Linear(d_model, d_model, bias=False)

    def forward(
        self, x: Tensor, positions: Tensor, position: PositionEncoding,
        attn_mask: Tensor | None, is_causal: bool,
    ) -> Tensor:
        B, T, D = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, self.d_head).permute(2, 0, 3, 1, 4)
        if position.has_rotation:  # (B, H, T, d_head) each
            q, k = position.rotate(q, k, positions, positions)
        if attn_mask is not None:
            attn_mask = attn_mask.to(q.dtype)  # autocast: SDPA wants the mask in q's dtype
        # SDPA scales q.k by 1/sqrt(d_head) and then adds attn_mask: biases are not scaled,
        # as in Delétang's ALiBi.
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal)
        return self.out(y.transpose(1, 2).reshape(B, T, D))


class TransformerBlock(nn.Module):
    """Attention + FFN with residuals, post-LN (Delétang) or pre-LN."""

    def __init__(self, d_model: int, n_heads: int, ff_mult: int, dropout: float, norm: str) -> None:
        super().__init__()
        if norm not in ("post", "pre"):
            raise InputError(f"norm must be 'post' or 'pre', got {norm!r}")
        self.norm = norm
        self.attn = MultiHeadAttention(d_model, n_heads)
        self.ff = nn.Sequential(
            nn.Linear(d_model, ff_mult * d_model), nn.ReLU(), nn.Linear(ff_mult * d_model, d_model)
        )
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, h: Tensor, positions: Tensor, position: PositionEncoding,
                attn_mask: Tensor | None, is_causal: bool) -> Tensor:
        if self.norm == "post":
            h = self.ln1(h + self.drop(self.attn(h, positions, position, attn_mask, is_causal)))
            return self.ln2(h + self.drop(self.ff(h)))
        h = h + self.drop(self.attn(self.ln1(h), positions, position, attn_mask, is_causal))
        return h + self.drop(self.ff(self.ln2(h)))


class TransformerStack(nn.Module):
    """Embedding + position encoding + ``n_layers`` blocks; no output layer.

    ``share_position_bias=True`` computes a learnable bias (FIRE) once and uses it in every
    layer (as T5's relative bias); ``False`` gives each layer its own FIRE MLP. Encodings
    without learnable biases are unaffected.

    >>> stack = TransformerStack(vocab_size=5, d_model=16, n_layers=2, n_heads=2,
    ...                          position="fire", causal=True)
    >>> stack.encode(torch.zeros(3, 7, dtype=torch.long)).shape
    torch.Size([3, 7, 16])
    """

    def __init__(
        self, vocab_size: int, d_model: int = 64, n_layers: int = 5, n_heads: int = 8,
        dropout: float = 0.1, ff_mult: int = 4, position: str = "sinusoidal",
        causal: bool = False, max_len: int = DEFAULT_MAX_LEN, norm: str = "post",
        share_position_bias: bool = True, **position_kw: Any,
    ) -> None:
        super().__init__()
        self.d_model, self.causal, self.norm = d_model, causal, norm
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        nn.init.trunc_normal_(self.token_embedding.weight, std=0.02, a=-0.04, b=0.04)
        self.embed_scale = math.sqrt(d_model)
        self.position = make_position_encoding(position, d_model, n_heads, max_len, **position_kw)
        learnable_bias = self.position.has_bias and any(
            p.requires_grad for p in self.position.parameters()
        )
        # layer l > 0 takes its bias from extra_biases[l - 1] when not shared
        self.extra_biases = None
        if learnable_bias and not share_position_bias:
            self.extra_biases = nn.ModuleList(
                make_position_encoding(position, d_model, n_heads, max_len, **position_kw)
                for _ in range(n_layers - 1)
            )
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            TransformerBlock(d_model, n_heads, ff_mult, dropout, norm) for _ in range(n_layers)
        )
        self.final_norm = nn.LayerNorm(d_model) if norm == "pre" else nn.Identity()

    def make_positions(self, tokens: Tensor) -> Tensor:
        """Default positions for ``tokens``: ``0..T-1`` ``(1, T)``, or random ones in training
        with a ``randomized-*`` encoding."""
        B, T = tokens.shape
        return self.position.make_positions(B, T, tokens.device)

    def embed(self, tokens: Tensor, positions: Tensor) -> Tensor:
        h = self.token_embedding(tokens) * self.embed_scale  # (B, T, d)
        if self.position.has_embedding:
            h = h + self.position.embed(positions)
        return self.drop(h)

    def _attention_mask(self, layer: int, positions: Tensor, key_padding_mask: Tensor | None,
                        causal: bool, T: int) -> tuple[Tensor | None, bool]:
        """Additive mask ``(B|1, H|1, T, T)`` = position bias, -inf at hidden keys; or None
        with ``is_causal`` when SDPA can build the mask itself (fast path)."""
        source = self.position if layer == 0 or self.extra_biases is None else (
            cast(PositionEncoding, self.extra_biases[layer - 1])  # a ModuleList of encodings
        )
        bias = source.attention_bias(positions, positions, causal) if source.has_bias else None
        if bias is None and key_padding_mask is None:
            return None, causal
        device = positions.device
        mask = bias if bias is not None else torch.zeros(1, 1, T, T, device=device)
        if causal:
            future = torch.ones(T, T, dtype=torch.bool, device=device).triu(1)
            mask = mask.masked_fill(future, float("-inf"))
        if key_padding_mask is not None:
            mask = torch.where(key_padding_mask[:, None, None, :], float("-inf"), mask)
        return mask, False

    def encode(
        self, tokens: Tensor, positions: Tensor | None = None,
        key_padding_mask: Tensor | None = None, causal: bool | None = None,
    ) -> Tensor:
        """Hidden states ``(B, T, d_model)`` after the last block.

        ``tokens`` (B, T) int64 (valid ids everywhere, padding included); ``positions``
        (B|1, T) int64, default :meth:`make_positions`; ``key_padding_mask`` (B, T) bool,
        ``True`` = padding (may be omitted in causal mode with right padding: real positions
        never see later keys); ``causal`` defaults to the constructor's.
        """
        B, T = tokens.shape
        causal = self.causal if causal is None else causal
        if positions is None:
            positions = self.make_positions(tokens)
        h = self.embed(tokens, positions)
        mask = is_causal = None
        for layer, block in enumerate(self.blocks):
            if layer == 0 or self.extra_biases is not None:
                mask, is_causal = self._attention_mask(
                    layer, positions, key_padding_mask, causal, T
                )
            h = block(h, positions, self.position, mask, is_causal)
        return self.final_norm(h)

    forward = encode


class TransformerClassifier(nn.Module):
    """Transformer encoder (or causal decoder) classifier: linear head at ``length - 1``.

    Defaults are Delétang et al.'s: d 64, 5 layers, 8 heads, dropout 0.1, FFN x4, post-LN.
    ``position`` is any name of :func:`~monoidlab.models.positions.available_position_encodings`;
    ``position_kw`` go to it (e.g. ``max_randomized_len=2048, seed=0``).

    Every method takes an optional ``positions`` ``(B|1, T)`` to override the default
    (``(B|1, T + 1)`` with ``bos=True``, the BOS token first).

    ``bos=True`` prepends a learned beginning-of-string token (extra id ``vocab_size``) at
    position 0 and drops its output. Without an anchor like this, an encoder whose positions
    are purely relative (NoPE, RoPE, ALiBi, FIRE) maps ``a``, ``aa``, ``aaa``, ... to the same
    state at every layer (all values are equal, so every attention average is that value): it
    cannot compute parity of ``1^n``. Delétang et al. had no BOS; ``bos=False`` is the default.

    >>> m = TransformerClassifier(3, 5, d_model=16, n_layers=1, n_heads=2, position="fire")
    >>> m.prefix_states(torch.zeros(2, 4, dtype=torch.long), torch.tensor([4, 2])).shape
    torch.Size([2, 4, 16])
    """

    def __init__(self, vocab_size: int, n_classes: int,
                 options: TransformerOptions | None = None, **kw: Any) -> None:
        super().__init__()
        o = self.options = TransformerOptions.build(options if options is not None else kw,
                                                    "transformer")
        self.vocab_size, self.n_classes = vocab_size, n_classes
        self.causal, self.bos = o.causal, o.bos
        self.stack = TransformerStack(vocab_size + int(o.bos), causal=o.causal, **o.stack_kw())
        self.head = nn.Linear(o.d_model, n_classes)

    #: padded tokens of one evaluation call of several lengths: the padding mask is (rows, heads,
    #: T, T), so 2^15 tokens at T = 500 hold what one length of 64 strings holds
    eval_max_tokens = 2**15

    def eval_group(self, length: int) -> int | None:
        """Which test lengths may share an evaluation call (:mod:`monoidlab.evaluation.packing`):
        causal, every length (a real position never sees the later padding); bidirectional,
        one length (every kind): padded keys would need a (rows, heads, T, T) mask, which costs
        more than the calls it saves (bench/bench_eval.py); none with positions drawn at
        random in eval mode (``eval_positions="random"``: one draw per call)."""
        if getattr(self.stack.position, "eval_positions", "arange") == "random":
            return None
        return 0 if self.causal else length

    def _states(self, tokens: Tensor, lengths: Tensor, positions: Tensor | None) -> Tensor:
        B, T = tokens.shape
        pad = padding_mask(lengths, T)
        # padding ids may be anything (even out of vocabulary): they are hidden, so use 0
        tokens = tokens.masked_fill(pad, 0)
        # Causal: real positions never see the (later) padded keys, so no key mask is needed
        # and SDPA may use its fused causal kernel. Bidirectional: drop the mask when no row is
        # padded (one host sync), so that a one-length evaluation batch keeps a (1, H, T, T)
        # bias instead of materialising a (B, H, T, T) mask (4 GB at B 512, T 500).
        key_mask = None if self.causal or not bool(pad.any()) else pad
        if not self.bos:
            return self.stack.encode(tokens, positions, key_mask)
        # BOS = the extra id vocab_size at position 0; outputs are returned without it
        bos = torch.full((B, 1), self.vocab_size, dtype=tokens.dtype, device=tokens.device)
        if key_mask is not None:
            key_mask = torch.cat([torch.zeros_like(key_mask[:, :1]), key_mask], dim=1)
        return self.stack.encode(torch.cat([bos, tokens], dim=1), positions, key_mask)[:, 1:]

    def forward(self, tokens: Tensor, lengths: Tensor, positions: Tensor | None = None) -> Tensor:
        """Logits ``(B, n_classes)`` read at position ``length - 1``."""
        return self.head(gather_last(self._states(tokens, lengths, positions), lengths))

    def forward_all(
        self, tokens: Tensor, lengths: Tensor, positions: Tensor | None = None
    ) -> Tensor:
        """Logits ``(B, T, n_classes)`` at every position of one pass over the whole input
        (Delétang's tapes: the encoder sees the whole tape, outputs read at the end)."""
        return self.head(self._states(tokens, lengths, positions))

    def prefix_states(
        self, tokens: Tensor, lengths: Tensor, positions: Tensor | None = None
    ) -> Tensor:
        """``(B, T, d_model)``: at ``t``, the state the classifier would read after the prefix
        ``x[:t+1]``. Causal: one pass. Bidirectional: one pass per prefix (``T`` passes), since
        an encoder's state at ``t`` on the whole string has seen the future. Rows at ``t >=
        length`` repeat the state at ``length - 1``."""
        if self.causal:
            return self._states(tokens, lengths, positions)
        B, T = tokens.shape
        if positions is None:
            positions = self.stack.position.make_positions(B, T + int(self.bos), tokens.device)
        out = []
        for t in range(T):
            sub_lengths = lengths.clamp(max=t + 1)
            sub_positions = positions[:, : t + 1 + int(self.bos)]
            h = self._states(tokens[:, : t + 1], sub_lengths, sub_positions)
            out.append(gather_last(h, sub_lengths))
        if not out:  # width 0 (an empty batch): no prefix
            return self.head.weight.new_zeros(B, 0, self.head.in_features)
        return torch.stack(out, dim=1)
