"""Position encodings for the Transformer baselines, chosen by name.

Every encoding is driven by an explicit integer **positions** tensor, shape ``(B, T)`` or
``(1, T)`` (int64). ``(1, T)`` means "the same positions for every row"; it is what the default
``0..T-1`` produces and it lets attention biases be computed once for the whole batch instead
of once per row (FIRE's MLP over ``B x T x T`` pairs would not fit at test length 500
otherwise). Randomized positions and index-hint tasks pass their own tensors through the same
argument.

An encoding contributes up to three things, each behind a flag so the Transformer can skip it:

(a) ``embed(positions) -> (B|1, T, d_model)``, added to the token embeddings
    (``has_embedding``: sinusoidal, learned);
(b) ``rotate(q, k, q_positions, k_positions) -> (q, k)`` on ``(B, H, T, d_head)`` queries and
    keys (``has_rotation``: RoPE);
(c) ``attention_bias(q_positions, k_positions, causal) -> (B|1, H, Tq, Tk)``, added to the
    attention logits after the ``1/sqrt(d_head)`` scaling (``has_bias``: ALiBi, FIRE).

Names (see :func:`available_position_encodings`): ``none`` (NoPE), ``sinusoidal``,
``learned``, ``alibi``, ``rope``, ``fire``, and ``randomized-<base>`` for any base but
``none`` (e.g. ``randomized-rope``), which samples training positions as Ruoss et al. (2023).

Example
-------
>>> import torch
>>> pe = make_position_encoding("alibi", d_model=64, n_heads=8)
>>> pos = pe.make_positions(batch_size=2, length=5, device="cpu")
>>> tuple(pos.shape), tuple(pe.attention_bias(pos, pos, causal=True).shape)
((1, 5), (1, 8, 5, 5))
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from monoidlab._checks import check_count, check_seed
from monoidlab.errors import InputError

__all__ = [
    "PositionEncoding",
    "NoPositions",
    "SinusoidalPositions",
    "LearnedPositions",
    "ALiBi",
    "RoPE",
    "FIRE",
    "RandomizedPositions",
    "make_position_encoding",
    "available_position_encodings",
    "sinusoid_table",
    "alibi_slopes",
]

DEFAULT_MAX_LEN = 1024  # learned table size; test lengths go to 500, index-hinted addition ~600
DEFAULT_MAX_RANDOMIZED_LEN = 2048  # Ruoss et al.'s L: must exceed the longest test length


def _pairwise_offsets(q_positions: Tensor, k_positions: Tensor) -> Tensor:
    """``d[b, i, j] = q_pos[b, i] - k_pos[b, j]`` as float, shape ``(B|1, Tq, Tk)``."""
    return (q_positions[:, :, None] - k_positions[:, None, :]).float()


class PositionEncoding(nn.Module):
    """Base class: no contribution at all (NoPE). Subclasses override the hooks they use."""

    has_embedding = False
    has_rotation = False
    has_bias = False

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.d_model = d_model
        self.n_heads = n_heads

    def make_positions(self, batch_size: int, length: int,
                       device: torch.device | str) -> Tensor:
        """Default positions ``0..T-1``, shape ``(1, T)`` (shared by all rows)."""
        return torch.arange(length, device=device, dtype=torch.long).unsqueeze(0)

    def embed(self, positions: Tensor) -> Tensor | None:
        return None

    def rotate(self, q: Tensor, k: Tensor, q_positions: Tensor,
               k_positions: Tensor) -> tuple[Tensor, Tensor]:
        return q, k

    def attention_bias(self, q_positions: Tensor, k_positions: Tensor,
                       causal: bool) -> Tensor | None:
        return None


class NoPositions(PositionEncoding):
    """NoPE: no position information (a causal mask still breaks permutation symmetry)."""

    def __init__(self, d_model: int, n_heads: int, *, max_len: int = DEFAULT_MAX_LEN) -> None:
        super().__init__(d_model, n_heads)


def sinusoid_table(positions: Tensor, dim: int, max_timescale: float = 1e4) -> Tensor:
    """Sinusoids ``[sin(p w_0), .., sin(p w_{D/2-1}), cos(p w_0), ..]``, ``w_k = s^(-2k/D)``.

    The concatenated (not interleaved) layout is Delétang's/Ruoss's; it is a fixed permutation
    of Vaswani's interleaved one, which the learned token embedding absorbs.

    >>> sinusoid_table(torch.tensor([[0, 1]]), 4).shape
    torch.Size([1, 2, 4])
    """
    if dim % 2:
        raise InputError(f"sinusoidal encodings need an even dimension, got {dim}")
    inv_freq = max_timescale ** (
        -torch.arange(0, dim, 2, device=positions.device, dtype=torch.float32) / dim
    )
    angles = positions.float()[..., None] * inv_freq  # (B|1, T, D/2)
    return torch.cat([angles.sin(), angles.cos()], dim=-1)


class SinusoidalPositions(PositionEncoding):
    """Fixed sinusoidal absolute positions (Vaswani et al. 2017), defined for any position.

    Positions are ascending ``0..T-1`` as in Ruoss et al.'s code. (Delétang et al.'s original
    code used *descending* positions ``T..1`` for the encoder, so that the last token, where
    the classifier reads, always sat at position 1; we do not reproduce that quirk.)
    """

    has_embedding = True

    def __init__(
        self, d_model: int, n_heads: int, *, max_len: int = DEFAULT_MAX_LEN,
        max_timescale: float = 1e4,
    ) -> None:
        super().__init__(d_model, n_heads)
        self.max_timescale = max_timescale

    def embed(self, positions: Tensor) -> Tensor:
        return sinusoid_table(positions, self.d_model, self.max_timescale)


class LearnedPositions(PositionEncoding):
    """A learned vector per absolute position ``0..max_len-1``.

    Initialised truncated-normal with std 1 (Haiku's ``hk.Embed`` default, used by Ruoss et
    al.), i.e. on the scale of the sinusoids. A position ``>= max_len`` raises ``ValueError``
    rather than an opaque index error.
    """

    has_embedding = True

    def __init__(self, d_model: int, n_heads: int, *, max_len: int = DEFAULT_MAX_LEN) -> None:
        super().__init__(d_model, n_heads)
        self.max_len = max_len
        self.table = nn.Embedding(max_len, d_model)
        nn.init.trunc_normal_(self.table.weight, std=1.0, a=-2.0, b=2.0)

    def embed(self, positions: Tensor) -> Tensor:
        # One host sync per forward; worth it for a message that names the fix.
        lo, hi = int(positions.min()), int(positions.max())
        if lo < 0 or hi >= self.max_len:
            raise InputError(
                f"learned position encoding covers positions 0..{self.max_len - 1}, got "
                f"position {hi if hi >= self.max_len else lo}; build the model with a larger "
                f"max_len (or use a relative encoding such as rope, alibi or fire)"
            )
        return self.table(positions)


def alibi_slopes(n_heads: int) -> Tensor:
    """ALiBi slopes ``2^(-8i/H)`` for ``i = 1..H`` (equal to Press et al.'s for H a power of 2).

    >>> alibi_slopes(8)[:2].tolist()
    [0.5, 0.25]
    """
    i = torch.arange(1, n_heads + 1, dtype=torch.float64)
    return (2.0 ** (-8.0 * i / n_heads)).float()


class ALiBi(PositionEncoding):
    """Attention with linear biases (Press et al. 2022), not scaled by ``1/sqrt(d_head)``.

    Causal: ``b(i, j) = -m_h (p_i - p_j)``. Bidirectional (Delétang et al.'s encoder):
    ``b(i, j) = -m_h (|p_i - p_j| - 0.5 [p_j < p_i])``: symmetric distances, plus half a slope
    for keys on the left so that the model can tell left from right.
    """

    has_bias = True
    slopes: Tensor  # a buffer

    def __init__(self, d_model: int, n_heads: int, *, max_len: int = DEFAULT_MAX_LEN) -> None:
        super().__init__(d_model, n_heads)
        self.register_buffer("slopes", alibi_slopes(n_heads), persistent=False)

    def attention_bias(self, q_positions: Tensor, k_positions: Tensor, causal: bool) -> Tensor:
        d = _pairwise_offsets(q_positions, k_positions)  # (B|1, Tq, Tk)
        dist = d if causal else d.abs() - 0.5 * (d > 0).float()
        return -self.slopes.to(d.device)[None, :, None, None] * dist[:, None]


class RoPE(PositionEncoding):
    """Rotary position embedding (Su et al. 2021) on queries and keys.

    Dimension pairs ``(2k, 2k+1)`` of each head rotate by ``p * s^(-k/(d_head/2))`` with
    ``s = max_timescale`` (10 000), exactly as Delétang/Ruoss's ``apply_rotary_encoding``, so
    ``<rot(q, p_i), rot(k, p_j)>`` depends on ``p_i - p_j`` only.
    """

    has_rotation = True
    inv_freq: Tensor  # a buffer

    def __init__(
        self, d_model: int, n_heads: int, *, max_len: int = DEFAULT_MAX_LEN,
        max_timescale: float = 1e4,
    ) -> None:
        super().__init__(d_model, n_heads)
        d_head = d_model // n_heads
        if d_head % 2:
            raise InputError(f"RoPE needs an even head dimension, got {d_head}")
        k = torch.arange(d_head // 2, dtype=torch.float32)
        self.register_buffer("inv_freq", max_timescale ** (-k / (d_head // 2)), persistent=False)

    def _rotate_one(self, x: Tensor, positions: Tensor) -> Tensor:
        # x (B, H, T, d_head); positions (B|1, T)
        angles = positions.float()[:, None, :, None] * self.inv_freq  # (B|1, 1, T, d_head/2)
        cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
        x_even, x_odd = x[..., 0::2], x[..., 1::2]
        out = torch.stack([x_even * cos - x_odd * sin, x_even * sin + x_odd * cos], dim=-1)
        return out.flatten(-2)

    def rotate(self, q: Tensor, k: Tensor, q_positions: Tensor,
               k_positions: Tensor) -> tuple[Tensor, Tensor]:
        return self._rotate_one(q, q_positions), self._rotate_one(k, k_positions)


class FIRE(PositionEncoding):
    """Functional interpolation for relative positions (Li et al. 2024); docs/models.md.

    ``b(i, j) = f_theta(psi(i - j) / psi(max(L, i)))`` with ``psi(x) = log(|c x| + 1)``,
    ``c`` learnable (init 0.1), ``L = |L_mult * 512|`` with ``L_mult`` learnable (init 1),
    ``f_theta = Linear(1 -> 32) -> ReLU -> Linear(32 -> heads)``; ``i, j`` are the query and
    key *positions* (so randomized positions and index hints flow through).

    Causal attention only sees ``i >= j``, where this is exactly the formula. For the
    bidirectional encoder (``i < j`` visible) we feed the **signed** normalised distance
    ``sign(i - j) psi(i - j) / psi(max(L, i))`` to the same MLP: it equals the formula for
    ``i >= j``, is continuous at ``i = j`` (``psi(0) = 0``) and, unlike ``|i - j|``, lets the
    MLP tell left keys from right keys without a second MLP.
    """

    has_bias = True

    def __init__(
        self, d_model: int, n_heads: int, *, max_len: int = DEFAULT_MAX_LEN,
        mlp_hidden: int = 32, c_init: float = 0.1, L_base: float = 512.0, L_mult_init: float = 1.0,
    ) -> None:
        super().__init__(d_model, n_heads)
        self.mlp = nn.Sequential(nn.Linear(1, mlp_hidden), nn.ReLU(), nn.Linear(mlp_hidden, n_heads))
        self.c = nn.Parameter(torch.tensor(float(c_init)))
        self.L_mult = nn.Parameter(torch.tensor(float(L_mult_init)))
        self.L_base = float(L_base)

    def psi(self, x: Tensor) -> Tensor:
        return torch.log(torch.abs(self.c * x) + 1.0)

    def normalised_offsets(self, q_positions: Tensor, k_positions: Tensor) -> Tensor:
        """The MLP input ``sign(i-j) psi(i-j) / psi(max(L, i))``, shape ``(B|1, Tq, Tk)``."""
        dtype = self.c.dtype  # follow the parameters (model.double() must work)
        d = _pairwise_offsets(q_positions, k_positions).to(dtype)
        threshold = torch.abs(self.L_mult * self.L_base)
        denom = self.psi(torch.maximum(threshold, q_positions.to(dtype)))  # (B|1, Tq)
        # clamp: psi(max(L, i)) is 0 only if c or L collapses to 0; avoid inf/NaN then.
        return torch.sign(d) * self.psi(d) / denom.clamp_min(1e-6)[..., None]

    def attention_bias(self, q_positions: Tensor, k_positions: Tensor, causal: bool) -> Tensor:
        x = self.normalised_offsets(q_positions, k_positions)
        return self.mlp(x.unsqueeze(-1)).permute(0, 3, 1, 2)  # (B|1, H, Tq, Tk)


class RandomizedPositions(PositionEncoding):
    """Randomized positional encodings (Ruoss et al. 2023) around any base encoding.

    In training mode, positions are a sorted random subset of ``0..max_randomized_len-1``
    (distinct, increasing), so that a model trained on length <= 40 has seen the position
    values (and, for relative encodings, the offsets) that length-500 inputs will use.

    In eval mode, ``eval_positions="arange"`` (default) uses ``0..T-1``; ``"random"`` keeps
    sampling, which is what Ruoss et al.'s code does (its Haiku modules sample whenever they
    run, training or test). Beware: ``0..T-1`` is off the training distribution (a random
    subset of 40 out of 2048 positions rarely contains 0, 1, 2, ...; its gaps average ~50,
    not 1), so a tiny model that memorised its training set with random positions can miss
    examples under ``arange``. Use ``"random"`` to reproduce Ruoss et al.; ``"arange"`` keeps
    evaluation deterministic.

    ``share_across_batch=True`` (default, as Ruoss et al.) draws one subset per call, shape
    ``(1, T)``; ``False`` draws one per row, ``(B, T)`` (more diverse, but biases are then per
    row: memory ``B x T x T``). ``seed`` makes the draws reproducible (a private generator per
    device); ``seed=None`` uses torch's global RNG.
    """

    def __init__(
        self, base: PositionEncoding, *, max_randomized_len: int = DEFAULT_MAX_RANDOMIZED_LEN,
        eval_positions: str = "arange", share_across_batch: bool = True, seed: int | None = None,
    ) -> None:
        super().__init__(base.d_model, base.n_heads)
        if eval_positions not in ("arange", "random"):
            raise InputError(f"eval_positions must be 'arange' or 'random', got {eval_positions!r}")
        self.base = base
        self.max_randomized_len = check_count(max_randomized_len, "max_randomized_len")
        self.eval_positions = eval_positions
        self.share_across_batch = share_across_batch
        self.seed = check_seed(seed, generator=False)
        self.has_embedding = base.has_embedding
        self.has_rotation = base.has_rotation
        self.has_bias = base.has_bias
        self._generators: dict[str, torch.Generator] = {}

    def _generator(self, device: torch.device) -> torch.Generator | None:
        if self.seed is None:
            return None
        key = str(device)
        if key not in self._generators:
            gen = torch.Generator(device=device)
            gen.manual_seed(self.seed)
            self._generators[key] = gen
        return self._generators[key]

    def make_positions(self, batch_size: int, length: int,
                       device: torch.device | str) -> Tensor:
        if not self.training and self.eval_positions == "arange":
            return super().make_positions(batch_size, length, device)
        n = self.max_randomized_len
        if length > n:
            raise InputError(
                f"cannot draw {length} distinct positions from 0..{n - 1}; raise "
                f"max_randomized_len above the longest sequence"
            )
        device = torch.device(device)
        rows = 1 if self.share_across_batch else batch_size
        scores = torch.rand(rows, n, device=device, generator=self._generator(device))
        # top-k of i.i.d. uniforms = a uniform random subset of size T, then sort it
        return scores.topk(length, dim=1).indices.sort(dim=1).values

    def embed(self, positions: Tensor) -> Tensor | None:
        return self.base.embed(positions)

    def rotate(self, q: Tensor, k: Tensor, q_positions: Tensor,
               k_positions: Tensor) -> tuple[Tensor, Tensor]:
        return self.base.rotate(q, k, q_positions, k_positions)

    def attention_bias(self, q_positions: Tensor, k_positions: Tensor,
                       causal: bool) -> Tensor | None:
        return self.base.attention_bias(q_positions, k_positions, causal)


# every registered encoding also takes the keyword max_len (the base class does not)
_BASES: dict[str, Callable[..., PositionEncoding]] = {
    "none": NoPositions,
    "sinusoidal": SinusoidalPositions,
    "learned": LearnedPositions,
    "alibi": ALiBi,
    "rope": RoPE,
    "fire": FIRE,
}
_RANDOMIZED_PREFIX = "randomized-"
_RANDOMIZED_OPTIONS = tuple(
    p for p in inspect.signature(RandomizedPositions.__init__).parameters
    if p not in ("self", "base")
)


def available_position_encodings() -> list[str]:
    """All accepted names.

    >>> available_position_encodings()[:3]
    ['alibi', 'fire', 'learned']
    """
    base = sorted(_BASES)
    return base + [_RANDOMIZED_PREFIX + b for b in base if b != "none"]


def _options(cls: Callable[..., Any]) -> list[str]:
    return [
        p for p in inspect.signature(cls.__init__).parameters
        if p not in ("self", "d_model", "n_heads")
    ]


def position_option_names(name: str) -> list[str]:
    """The options an encoding accepts besides ``max_len`` (a randomized one: its own and its
    base's); an unknown name fails listing the known ones.

    >>> position_option_names("fire")
    ['mlp_hidden', 'c_init', 'L_base', 'L_mult_init']
    """
    if name.startswith(_RANDOMIZED_PREFIX) and name[len(_RANDOMIZED_PREFIX):] in _BASES:
        base = name[len(_RANDOMIZED_PREFIX):]
        return list(_RANDOMIZED_OPTIONS) + position_option_names(base)
    if name not in _BASES:
        raise InputError(f"unknown position encoding {name!r}; known: "
                         f"{', '.join(available_position_encodings())}")
    return [o for o in _options(_BASES[name]) if o != "max_len"]


def make_position_encoding(
    name: str, d_model: int, n_heads: int, max_len: int = DEFAULT_MAX_LEN, **kw: Any
) -> PositionEncoding:
    """Build the encoding called ``name``; ``kw`` are that encoding's own options.

    ``randomized-<base>`` takes ``max_randomized_len`` (2048), ``eval_positions``
    (``"arange"``), ``share_across_batch`` (True) and ``seed`` (None); the remaining options go
    to the base. A randomized learned table covers ``max(max_len, max_randomized_len)``.

    >>> make_position_encoding("randomized-rope", 64, 8, seed=0).base.__class__.__name__
    'RoPE'
    """
    if name.startswith(_RANDOMIZED_PREFIX):
        base_name = name[len(_RANDOMIZED_PREFIX):]
        if base_name == "none":
            raise InputError("'randomized-none' has no positions to randomize; use 'none'")
        rkw = {k: kw.pop(k) for k in _RANDOMIZED_OPTIONS if k in kw}
        n = rkw.get("max_randomized_len", DEFAULT_MAX_RANDOMIZED_LEN)
        base = make_position_encoding(base_name, d_model, n_heads, max(max_len, n), **kw)
        return RandomizedPositions(base, **rkw)
    try:
        cls = _BASES[name]
    except KeyError:
        raise InputError(
            f"unknown position encoding {name!r}; known: {', '.join(available_position_encodings())}"
        ) from None
    unknown = sorted(set(kw) - set(_options(cls)))
    if unknown:
        raise InputError(
            f"position encoding {name!r} got unknown option(s) {unknown}; it accepts "
            f"{_options(cls)}"
        )
    if d_model % n_heads:
        raise InputError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
    return cls(d_model, n_heads, max_len=max_len, **kw)
