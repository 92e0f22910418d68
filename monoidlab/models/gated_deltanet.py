"""Gated DeltaNet (Yang, Kautz and Hatamizadeh 2024, "Gated Delta Networks: Improving Mamba2
with Delta Rule"): a causal classifier whose layers run the gated delta rule.

The rule, per head, with an L2-normalised key ``k_t``, a decay ``alpha_t = exp(g_t)`` in (0, 1)
and a writing strength ``beta_t`` in (0, 1) (the paper's form, state ``S`` of shape
``(d_v, d_k)``)::

    S_t = alpha_t S_{t-1} (I - beta_t k_t k_t^T) + beta_t v_t k_t^T,   o_t = S_t q_t

the output scaled by ``1 / sqrt(d_k)`` here, as fla does by default.

Here the state is stored transposed, ``h = S^T`` of shape ``(d_k, d_v)``, the layout of
flash-linear-attention (fla), so that ``h_t = alpha_t (I - beta_t k_t k_t^T) h_{t-1} +
beta_t k_t v_t^T`` and ``o_t = h_t^T q_t``; ``g_t = log alpha_t`` as in fla's arguments.

Two forms compute the same outputs: :func:`recurrent_gated_delta_rule` (a loop over positions:
the reference) and :func:`chunked_gated_delta_rule` (chunks of ``chunk_size`` positions, the
WY/UT form: each chunk's corrections solve one unit lower-triangular system, a loop over chunks
carries the state; what training uses). Where fla imports and the tensors are on CUDA,
``kernel = "auto"`` calls fla's chunk kernel instead (fla needs triton, so never on a CPU).

The layer follows fla's ``GatedDeltaNet``: q, k, v projections, each through a short causal
depthwise convolution (``conv_size``, 0 to leave it out) and SiLU; q and k L2-normalised per
head; ``beta = sigmoid(W_b x)``; ``g = -exp(A_log) * softplus(W_a x + dt_bias)`` (Mamba2's
decay, ``A`` from U(0, 16), ``dt`` log-uniform in [1e-3, 0.1]); the output RMS-normalised per
head, gated by ``SiLU(W_g x)``, projected back. Blocks are pre-norm: ``h = h + mix(RMSNorm(h))``,
``h = h + MLP(RMSNorm(h))`` with a SwiGLU MLP; a final RMSNorm and a linear head read per
position. Every part is causal, so right padding never reaches a real position.

Example
-------
>>> import torch
>>> model = GatedDeltaNet(vocab_size=2, n_classes=2, d_model=16, n_heads=2, n_layers=1)
>>> tokens, lengths = torch.tensor([[0, 1, 1, 0]]), torch.tensor([3])
>>> model(tokens, lengths).shape, model.forward_all(tokens, lengths).shape
(torch.Size([1, 2]), torch.Size([1, 4, 2]))
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from monoidlab.errors import InputError, MissingDependency
from monoidlab.models.common import gather_last, length_mask
from monoidlab.models.options import ModelOptions, boolean, one_of, positive_int, probability

__all__ = ["GatedDeltaNet", "GatedDeltaNetOptions", "GatedDeltaLayer",
           "recurrent_gated_delta_rule", "chunked_gated_delta_rule", "fla_chunk_kernel"]

KERNELS = ("auto", "chunk", "recurrent", "fla")


# --------------------------------------------------------------------------- the rule


def recurrent_gated_delta_rule(q: Tensor, k: Tensor, v: Tensor, g: Tensor, beta: Tensor,
                               scale: float | None = None, initial_state: Tensor | None = None
                               ) -> tuple[Tensor, Tensor]:
    """The gated delta rule one position at a time (the reference).

    ``q, k`` (B, H, T, d_k), ``v`` (B, H, T, d_v), ``g = log alpha`` and ``beta`` (B, H, T);
    ``scale`` multiplies q (default ``d_k ** -0.5``). Returns the outputs (B, H, T, d_v) and the
    last state ``h`` (B, H, d_k, d_v). Keys are used as given (the layer normalises them).

    >>> q = k = torch.tensor([[[[1.0, 0.0]]]]); v = torch.tensor([[[[2.0]]]])
    >>> o, h = recurrent_gated_delta_rule(q, k, v, torch.zeros(1, 1, 1), torch.full((1, 1, 1), 0.5),
    ...                                   scale=1.0)
    >>> o.flatten().tolist(), h.flatten().tolist()
    ([1.0], [1.0, 0.0])
    """
    B, H, T, dk = k.shape
    scale = dk ** -0.5 if scale is None else scale
    h = (q.new_zeros(B, H, dk, v.shape[-1]) if initial_state is None else initial_state)
    alpha = g.exp()
    outs = []
    for t in range(T):
        kt, bt = k[:, :, t], beta[:, :, t, None]
        h = alpha[:, :, t, None, None] * h
        # the delta: write beta (v - h^T k) along k, i.e. replace what h recalls for k
        u = bt * (v[:, :, t] - torch.einsum("bhkv,bhk->bhv", h, kt))
        h = h + kt[..., :, None] * u[..., None, :]
        outs.append(torch.einsum("bhkv,bhk->bhv", h, q[:, :, t] * scale))
    o = torch.stack(outs, dim=2) if outs else v.new_zeros(B, H, 0, v.shape[-1])
    return o, h


def chunked_gated_delta_rule(q: Tensor, k: Tensor, v: Tensor, g: Tensor, beta: Tensor,
                             chunk_size: int = 64, scale: float | None = None,
                             initial_state: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """The gated delta rule by chunks (the WY/UT form); same arguments and results as
    :func:`recurrent_gated_delta_rule`.

    Within a chunk, with ``G_t`` the cumulative log decay from the chunk's start and ``h0`` the
    state entering it, ``h_t = e^{G_t} h0 + sum_{s<=t} e^{G_t - G_s} k_s u_s^T``, where the
    corrections ``u_t = beta_t (v_t - alpha_t h_{t-1}^T k_t)`` satisfy ``(I + A) U = beta V -
    (beta e^{G} K) h0`` with ``A[t, s] = beta_t e^{G_t - G_s} k_t . k_s`` (s < t): one unit
    lower-triangular solve per chunk for every chunk at once, then a loop over chunks.

    >>> _ = torch.manual_seed(0); shape = (1, 1, 70, 4)
    >>> q, v = torch.randn(shape), torch.randn(shape)
    >>> k = F.normalize(torch.randn(shape), dim=-1)
    >>> g, beta = -torch.rand(1, 1, 70), torch.rand(1, 1, 70)
    >>> a = chunked_gated_delta_rule(q, k, v, g, beta, chunk_size=16)
    >>> b = recurrent_gated_delta_rule(q, k, v, g, beta)
    >>> all(torch.allclose(x, y, atol=1e-5) for x, y in zip(a, b))
    True
    """
    B, H, T, dk = k.shape
    dv = v.shape[-1]
    scale = dk ** -0.5 if scale is None else scale
    C = max(1, min(chunk_size, T))  # a short sequence is one chunk of its own length
    pad = (-T) % C
    if pad:  # padded positions: no decay (g 0), no write (beta 0, k 0): the state passes
        q, k, v = (F.pad(x, (0, 0, 0, pad)) for x in (q, k, v))
        g, beta = F.pad(g, (0, pad)), F.pad(beta, (0, pad))
    N = (T + pad) // C
    q, k, v = (x.reshape(B, H, N, C, -1) for x in (q * scale, k, v))
    G = g.reshape(B, H, N, C).cumsum(-1)
    beta = beta.reshape(B, H, N, C, 1)
    causal = torch.ones(C, C, dtype=torch.bool, device=q.device).tril()
    # e^{G_t - G_s} for s <= t (masked before exp: above the diagonal it could overflow)
    decay = (G[..., :, None] - G[..., None, :]).masked_fill(~causal, -math.inf).exp()
    # A below the diagonal; its diagonal is never read: the solve takes I + A as unitriangular
    # (and its gradient leaves the diagonal out too), so no mask or identity is added
    A = beta * (k @ k.transpose(-1, -2)) * decay
    # the UT transform: U0 = (I + A)^-1 beta V and W = (I + A)^-1 beta e^G K, in one solve
    rhs = torch.cat([beta * v, beta * G.exp()[..., None] * k], dim=-1)
    UW = torch.linalg.solve_triangular(A, rhs, upper=False, unitriangular=True)
    U0, W = UW[..., :dv], UW[..., dv:]
    inner = (q @ k.transpose(-1, -2)) * decay  # (B, H, N, C, C), zero above the diagonal
    q_decayed = q * G.exp()[..., None]
    k_to_end = k * (G[..., -1:] - G).exp()[..., None]  # e^{G_C - G_s} k_s
    h = q.new_zeros(B, H, dk, dv) if initial_state is None else initial_state
    outs = []
    for n in range(N):
        u = U0[:, :, n] - W[:, :, n] @ h
        outs.append(q_decayed[:, :, n] @ h + inner[:, :, n] @ u)
        h = G[:, :, n, -1, None, None].exp() * h + k_to_end[:, :, n].transpose(-1, -2) @ u
    o = torch.cat(outs, dim=2)[:, :, :T]
    return o, h


@functools.cache
def fla_chunk_kernel() -> Callable[..., Any] | None:
    """fla's ``chunk_gated_delta_rule`` when fla imports (it needs triton), else None."""
    import importlib

    try:
        module = importlib.import_module("fla.ops.gated_delta_rule")
    except Exception:  # fla absent, or present without triton (every CPU-only install)
        return None
    return module.chunk_gated_delta_rule


def gated_delta_rule(q: Tensor, k: Tensor, v: Tensor, g: Tensor, beta: Tensor, kernel: str,
                     chunk_size: int) -> Tensor:
    """The outputs (B, H, T, d_v) by the form ``kernel`` names (:data:`KERNELS`)."""
    fla = fla_chunk_kernel() if kernel in ("auto", "fla") and q.is_cuda else None
    if kernel == "fla" and fla is None:
        raise MissingDependency("option 'kernel': 'fla' needs flash-linear-attention with triton "
                                "and CUDA tensors (pip install fla-core); use 'chunk' elsewhere")
    if fla is not None:
        # fla's layout is (B, T, H, d); q and k are normalised already, beta is post-sigmoid
        o, _ = fla(*(x.transpose(1, 2) for x in (q, k, v, g, beta)), scale=q.shape[-1] ** -0.5)
        return o.transpose(1, 2)
    if kernel == "recurrent":
        return recurrent_gated_delta_rule(q, k, v, g, beta)[0]
    return chunked_gated_delta_rule(q, k, v, g, beta, chunk_size)[0]


# --------------------------------------------------------------------------- the model


@dataclass(frozen=True)
class GatedDeltaNetOptions(ModelOptions):
    """Gated DeltaNet's options.

    d_model, n_layers, n_heads : sizes (``d_model`` divisible by ``n_heads``; a head's key
        width is ``d_model // n_heads``). expand_v : value width = ``expand_v`` x key width
        (fla: 2; 1 here, half the state, for CPU budgets).
    conv_size : the short causal convolution on q, k, v (fla: 4); 0 leaves it out.
    ff_mult : the SwiGLU MLP's hidden width, ``ff_mult * d_model``. dropout : after each mix
        and MLP. output_gate : gate the normalised output by ``SiLU(W_g x)`` (fla: yes).
    chunk_size : positions per chunk of the chunked form (fla: 64).
    kernel : ``"auto"`` (fla's kernel on CUDA where fla imports, else ``"chunk"``), ``"chunk"``,
        ``"recurrent"`` (the loop over positions), ``"fla"`` (fla's, or an error).
    negative_eigenvalues : ``beta = 2 sigmoid(.)`` in (0, 2), so ``I - beta k k^T`` can reflect
        (Grazzi et al. 2024, fla's ``allow_neg_eigval``): with beta in (0, 1), the paper's form,
        every transition has eigenvalues in [0, 1] and parity is out of reach.
    """

    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    expand_v: int = 1
    conv_size: int = 4
    ff_mult: int = 4
    dropout: float = 0.0
    output_gate: bool = True
    chunk_size: int = 64
    kernel: str = "auto"
    negative_eigenvalues: bool = False

    def check(self) -> None:
        for name in ("d_model", "n_layers", "n_heads", "expand_v", "ff_mult", "chunk_size"):
            positive_int(self, name)
        positive_int(self, "conv_size", minimum=0)
        probability(self, "dropout")
        boolean(self, "output_gate")
        boolean(self, "negative_eigenvalues")
        one_of(self, "kernel", KERNELS)
        if self.d_model % self.n_heads:
            raise InputError(f"option 'd_model': {self.d_model} is not divisible by n_heads "
                             f"= {self.n_heads}")


class ShortConv(nn.Module):
    """Causal depthwise convolution over positions, then SiLU: ``(B, T, C) -> (B, T, C)``."""

    def __init__(self, channels: int, size: int) -> None:
        super().__init__()
        self.size = size
        self.conv = nn.Conv1d(channels, channels, size, groups=channels, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        # left padding only: position t sees t - size + 1 .. t
        y = self.conv(F.pad(x.transpose(1, 2), (self.size - 1, 0)))
        return F.silu(y.transpose(1, 2))


class GatedDeltaLayer(nn.Module):
    """One gated-delta-rule token mixer, ``(B, T, d_model) -> (B, T, d_model)`` (causal)."""

    def __init__(self, o: GatedDeltaNetOptions) -> None:
        super().__init__()
        self.o = o
        H, dk = o.n_heads, o.d_model // o.n_heads
        dv = dk * o.expand_v
        self.H, self.dk, self.dv = H, dk, dv
        self.q_proj = nn.Linear(o.d_model, H * dk, bias=False)
        self.k_proj = nn.Linear(o.d_model, H * dk, bias=False)
        self.v_proj = nn.Linear(o.d_model, H * dv, bias=False)
        self.a_proj = nn.Linear(o.d_model, H, bias=False)
        self.b_proj = nn.Linear(o.d_model, H, bias=False)
        self.convs = nn.ModuleList(ShortConv(c, o.conv_size) for c in (H * dk, H * dk, H * dv)) \
            if o.conv_size else None
        # Mamba2's decay parameters (fla's init): A ~ U(0, 16), dt log-uniform in [1e-3, 0.1]
        self.A_log = nn.Parameter(torch.empty(H).uniform_(0, 16).clamp_min(1e-4).log())
        dt = torch.exp(torch.rand(H) * (math.log(0.1) - math.log(1e-3)) + math.log(1e-3))
        dt = dt.clamp_min(1e-4)
        self.dt_bias = nn.Parameter(dt + torch.log(-torch.expm1(-dt)))  # softplus^-1(dt)
        self.g_proj = nn.Linear(o.d_model, H * dv, bias=False) if o.output_gate else None
        self.o_norm = nn.RMSNorm(dv, eps=1e-5)
        self.o_proj = nn.Linear(H * dv, o.d_model, bias=False)

    def heads(self, x: Tensor, d: int, unit: bool = False) -> Tensor:
        """``(B, T, H * d) -> (B, H, T, d)``, L2-normalised per head if ``unit``."""
        B, T, _ = x.shape
        x = x.view(B, T, self.H, d)
        # normalised before the transpose: a reduction over contiguous memory is ~4x faster
        return (F.normalize(x, dim=-1) if unit else x).transpose(1, 2)

    def forward(self, x: Tensor) -> Tensor:
        B, T, _ = x.shape
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        if self.convs is not None:
            q, k, v = (conv(y) for conv, y in zip(self.convs, (q, k, v)))
        q, k = self.heads(q, self.dk, unit=True), self.heads(k, self.dk, unit=True)
        v = self.heads(v, self.dv)
        beta = torch.sigmoid(self.b_proj(x)).transpose(1, 2)  # (B, H, T)
        if self.o.negative_eigenvalues:
            beta = 2 * beta
        g = (-self.A_log.exp() * F.softplus(self.a_proj(x) + self.dt_bias)).transpose(1, 2)
        o = gated_delta_rule(q, k, v, g, beta, self.o.kernel, self.o.chunk_size)
        o = self.o_norm(o.transpose(1, 2))  # (B, T, H, dv)
        if self.g_proj is not None:
            o = o * F.silu(self.g_proj(x).view(B, T, self.H, self.dv))
        return self.o_proj(o.reshape(B, T, self.H * self.dv))


class SwiGLU(nn.Module):
    """``W_down (SiLU(W_gate x) * W_up x)``: the MLP of fla's models."""

    def __init__(self, d: int, hidden: int) -> None:
        super().__init__()
        self.gate_up = nn.Linear(d, 2 * hidden, bias=False)
        self.down = nn.Linear(hidden, d, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        gate, up = self.gate_up(x).chunk(2, dim=-1)
        return self.down(F.silu(gate) * up)


class Block(nn.Module):
    """Pre-norm: ``h + drop(mix(RMSNorm h))``, then ``h + drop(MLP(RMSNorm h))``."""

    def __init__(self, o: GatedDeltaNetOptions) -> None:
        super().__init__()
        self.mix_norm = nn.RMSNorm(o.d_model, eps=1e-5)
        self.mlp_norm = nn.RMSNorm(o.d_model, eps=1e-5)
        self.mix, self.mlp = GatedDeltaLayer(o), SwiGLU(o.d_model, o.ff_mult * o.d_model)
        self.drop = nn.Dropout(o.dropout)

    def forward(self, h: Tensor) -> Tensor:
        h = h + self.drop(self.mix(self.mix_norm(h)))
        return h + self.drop(self.mlp(self.mlp_norm(h)))


class GatedDeltaNet(nn.Module):
    """Gated DeltaNet classifier: embedding, pre-norm gated-delta blocks, a final RMSNorm and a
    linear head at every position (``forward`` reads it at ``length - 1``).

    >>> m = GatedDeltaNet(3, 5, d_model=8, n_heads=2, n_layers=1, conv_size=0)
    >>> m.prefix_states(torch.zeros(2, 6, dtype=torch.long), torch.tensor([6, 1])).shape
    torch.Size([2, 6, 8])
    """

    def __init__(self, vocab_size: int, n_classes: int,
                 options: GatedDeltaNetOptions | None = None, **kw: Any) -> None:
        super().__init__()
        o = self.options = GatedDeltaNetOptions.build(options if options is not None else kw,
                                                      "gated-deltanet")
        self.vocab_size, self.n_classes = vocab_size, n_classes
        self.embedding = nn.Embedding(vocab_size, o.d_model)
        nn.init.normal_(self.embedding.weight, std=0.02)  # fla's initializer_range
        self.blocks = nn.ModuleList(Block(o) for _ in range(o.n_layers))
        self.norm = nn.RMSNorm(o.d_model, eps=1e-5)
        self.head = nn.Linear(o.d_model, n_classes)

    def prefix_states(self, tokens: Tensor, lengths: Tensor) -> Tensor:
        """``(B, T, d_model)``: the normalised state after each position (rows at ``t >=
        length`` are states over padding: mask them)."""
        # padding ids may be anything (even out of vocabulary); every part is causal, so what
        # stands after a string's end never reaches its positions
        pad = ~length_mask(lengths, tokens.shape[1])
        h = self.embedding(tokens.masked_fill(pad, 0))
        if not h.numel():  # an empty batch: the convolution and the chunking need a position
            return h
        for block in self.blocks:
            h = block(h)
        return self.norm(h)

    def forward_all(self, tokens: Tensor, lengths: Tensor) -> Tensor:
        """Logits ``(B, T, n_classes)`` at every position."""
        return self.head(self.prefix_states(tokens, lengths))

    def forward(self, tokens: Tensor, lengths: Tensor) -> Tensor:
        """Logits ``(B, n_classes)`` read at position ``length - 1``."""
        return self.head(gather_last(self.prefix_states(tokens, lengths), lengths))

    def eval_group(self, length: int) -> int:
        """Test strings of every length may share one padded evaluation call
        (:mod:`monoidlab.evaluation.packing`): the layer is causal (the short convolution and
        the delta rule read only earlier positions), and each string is read at its own last
        position."""
        return 0
