"""Pieces shared by the tree models: input checks, masks, the parallel prefix scan, node states.

The parallel scan here is ``jax.lax.associative_scan`` transcribed to torch (strided slices
along the sequence axis, one batched ``fn`` call per recursion step). Its ``fn`` calls happen
in exactly the node order of :func:`monoidlab.strings.schedules.schedule` ``("scan", n)``, which is what
lets :class:`NodeStates` attach spans and levels to the recorded states.

Example
-------
>>> import torch
>>> x = torch.arange(1.0, 6.0).view(1, 5, 1)
>>> (out,) = associative_scan(lambda a, b: (a[0] + b[0],), (x,))
>>> out.flatten().tolist()
[1.0, 3.0, 6.0, 10.0, 15.0]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn

from monoidlab.errors import InputError
from monoidlab.strings import schedules

State = tuple[Tensor, ...]  # a scan element: tensors of shape (B, n, ...) sharing B and n


# --------------------------------------------------------------------------- inputs, masks


def check_inputs(tokens: Tensor, lengths: Tensor | Sequence[int] | None) -> tuple[Tensor, Tensor]:
    """Validate ``tokens`` (B, T) int and ``lengths`` (B,), 1 <= length <= T.

    ``lengths=None`` means every string fills the row. Returns int64 tensors on the tokens'
    device.
    """
    tokens, lengths, _ = read_inputs(tokens, lengths)
    return tokens, lengths


def read_offsets(tokens: Tensor, lengths: Tensor, longest: int, offsets: Tensor | None
                 ) -> tuple[Tensor, int]:
    """``(offsets, end)`` of a balanced-tree batch: each string's left offset on the tokens'
    device (zeros when None) and the furthest string end, checked (a (B,) tensor of
    non-negative ints) with one look at the offsets (a synchronisation only on a device)."""
    import torch

    from monoidlab.errors import InputError

    B = tokens.shape[0]
    if offsets is None:
        return torch.zeros_like(lengths), longest
    offsets = torch.as_tensor(offsets, dtype=torch.long)
    if offsets.shape != lengths.shape:
        raise InputError(f"offsets must be a ({B},) tensor of non-negative ints")
    lo, end = torch.stack([offsets.min(), (offsets.to(lengths.device) + lengths).max()]
                          ).tolist() if B else (0, 1)
    if lo < 0:
        raise InputError(f"offsets must be a ({B},) tensor of non-negative ints")
    return offsets.to(tokens.device, non_blocking=True), int(end)


def read_inputs(tokens: Tensor, lengths: Tensor | Sequence[int] | None
                ) -> tuple[Tensor, Tensor, int]:
    """:func:`check_inputs` plus the longest length as a host int.

    Lengths given on the host (a sequence, a numpy array, a CPU tensor) are checked there and
    then copied to the tokens' device, so that a model on an accelerator never waits for them;
    lengths already on the device cost one synchronisation (the check), no more.

    >>> import torch
    >>> read_inputs(torch.zeros(2, 5, dtype=torch.long), [3, 4])[2]
    4
    """
    if tokens.dim() != 2:
        raise InputError(f"tokens must have shape (B, T), got {tuple(tokens.shape)}")
    if tokens.dtype.is_floating_point or tokens.dtype == torch.bool:
        raise InputError(f"tokens must be integers, got {tokens.dtype}")
    tokens = tokens.long()
    B, T = tokens.shape
    if lengths is None:
        return tokens, torch.full((B,), T, dtype=torch.long, device=tokens.device), T
    lengths = torch.as_tensor(lengths, dtype=torch.long)
    if lengths.shape != (B,):
        raise InputError(f"lengths must have shape ({B},), got {tuple(lengths.shape)}")
    longest = T
    if B:
        lo, hi = torch.stack(torch.aminmax(lengths)).tolist()  # one sync if on a device
        if lo < 1 or hi > T:
            raise InputError(f"lengths must lie in [1, {T}], got {lengths.tolist()}")
        longest = hi
    return tokens, lengths.to(tokens.device, non_blocking=True), longest


def length_mask(lengths: Tensor, T: int) -> Tensor:
    """(B, T) bool, True at the positions < length (the real tokens; ``~`` it for padding).

    >>> length_mask(torch.tensor([1, 3]), 3).int().tolist()
    [[1, 0, 0], [1, 1, 1]]
    """
    return torch.arange(T, device=lengths.device)[None, :] < lengths[:, None]


def gather_last(x: Tensor, lengths: Tensor) -> Tensor:
    """``x[b, lengths[b] - 1]`` for x of shape (B, T, ...): the state at each string's end
    (the one definition; every model reads its output through it)."""
    idx = (lengths - 1).clamp_min(0).view(-1, *([1] * (x.dim() - 1)))
    return x.gather(1, idx.expand(-1, 1, *x.shape[2:])).squeeze(1)


def ceil_log2(n: Tensor) -> Tensor:
    """Elementwise ceil(log2 n) of a positive int tensor (0 for n = 1), exactly, in ints.

    ``bit_length(n - 1)`` = the number of powers of two <= n - 1: one comparison against a
    fixed table, no loop and no host synchronisation.

    >>> import torch
    >>> ceil_log2(torch.tensor([1, 2, 3, 4, 5, 1024, 1025])).tolist()
    [0, 1, 2, 2, 3, 10, 11]
    """
    powers = torch.ones(62, dtype=n.dtype, device=n.device) << torch.arange(62, device=n.device)
    return ((n - 1)[..., None] >= powers).sum(-1)


# --------------------------------------------------------------------------- init helpers


def trunc_normal_(t: Tensor, std: float) -> Tensor:
    """Normal(0, std) truncated at two standard deviations (haiku's TruncatedNormal)."""
    # torch's default bounds a=-2, b=2 are absolute, not in units of std
    return nn.init.trunc_normal_(t, std=std, a=-2 * std, b=2 * std)


TRUNC_STD = 0.87962566103423978  # std of a unit normal truncated to [-2, 2]
INITS = ("default", "haiku")  # a model's `init` option: monoidlab's scales, or the authors' exactly


def variance_scaling_(weight: Tensor, scale: float = 1.0, mode: str = "fan_in") -> Tensor:
    """haiku ``VarianceScaling(scale, mode, "truncated_normal")`` for a torch (out, in) weight.

    The samples have std sqrt(scale / fan) exactly: haiku divides the truncation out.
    ``mode``: ``"fan_in"`` or ``"fan_avg"`` ((fan_in + fan_out) / 2).
    """
    fan_out, fan_in = weight.shape
    fan = fan_in if mode == "fan_in" else (fan_in + fan_out) / 2
    return trunc_normal_(weight, math.sqrt(scale / fan) / TRUNC_STD)


def linear(d_in: int, d_out: int, scale: float = 1.0, mode: str = "fan_in") -> nn.Linear:
    """A Linear with VarianceScaling(scale, mode) weights and zero bias."""
    layer = nn.Linear(d_in, d_out)
    with torch.no_grad():
        variance_scaling_(layer.weight, scale, mode)
        layer.bias.zero_()
    return layer


def haiku_linear_(layer: nn.Linear) -> nn.Linear:
    """``hk.Linear``'s default init in place: truncated normal with stddev 1/sqrt(fan_in) (no
    truncation correction, so the samples' std is 0.88/sqrt(fan_in)), zero bias.

    >>> import torch
    >>> _ = torch.manual_seed(0)
    >>> w = haiku_linear_(nn.Linear(400, 300)).weight
    >>> round(float(w.std() * 20 / TRUNC_STD), 2), float(w.abs().max() * 20) <= 2
    (1.0, True)
    """
    with torch.no_grad():
        trunc_normal_(layer.weight, 1 / math.sqrt(layer.weight.shape[1]))
        if layer.bias is not None:
            layer.bias.zero_()
    return layer


def check_init(init: str) -> str:
    if init not in INITS:
        raise InputError(f"unknown init {init!r}; expected one of {INITS}")
    return init


# --------------------------------------------------------------------------- parallel scan


def associative_scan(
    fn: Callable[[State, State], State],
    elems: State,
    record: list[State] | None = None,
    pairs: Callable[[State], State] | None = None,
) -> State:
    """Inclusive scan of ``fn`` along dim 1, by ``jax.lax.associative_scan``'s recursion.

    ``elems`` is a tuple of tensors (B, n, ...); ``fn(a, b)`` takes two such tuples of equal n
    and returns one. Prefix t of the result is the tree ``schedules.schedule("scan", n)`` assigns
    to it, which is *not* a left fold: for a non-associative ``fn`` this matters. When
    ``record`` is a list, every ``fn`` output is appended to it, in the schedule's node order
    (concatenate along dim 1 to get one state per node). Cost: O(n) calls to ``fn`` in
    O(log n) batched steps. ``pairs`` (optional) computes the same as ``fn`` on adjacent
    elements, given tensors (B, m, 2·width) (element 2i next to element 2i + 1): the first
    call of each recursion step then reads its inputs as one contiguous view.
    """
    n = elems[0].shape[1]
    if n < 2:
        return elems

    def call(a: State, b: State) -> State:
        out = fn(a, b)
        if record is not None and out[0].shape[1]:
            record.append(out)
        return out

    if pairs is None:
        reduced = call(tuple(e[:, 0:-1:2] for e in elems), tuple(e[:, 1::2] for e in elems))
    else:
        m = n // 2
        reduced = pairs(tuple(e[:, : 2 * m].reshape(e.shape[0], m, 2 * e.shape[2]) for e in elems))
        if record is not None:
            record.append(reduced)
    odd = associative_scan(fn, reduced, record, pairs)
    if n % 2 == 0:
        even = call(tuple(o[:, :-1] for o in odd), tuple(e[:, 2::2] for e in elems))
    else:
        even = call(odd, tuple(e[:, 2::2] for e in elems))
    # interleave into one preallocated buffer: out[0] = e_0, out[2i+1] = odd_i, out[2i+2] = even_i
    out = []
    for e, o, v in zip(elems, odd, even):
        buf = o.new_empty((o.shape[0], n, *o.shape[2:]))
        buf[:, :1] = e[:, :1]
        buf[:, 1::2] = o
        buf[:, 2::2] = v
        out.append(buf)
    return tuple(out)


# --------------------------------------------------------------------------- node states


@dataclass
class NodeStates:
    """Every internal node's state for a batch, each string under its own schedule.

    Row b lists the nodes of ``schedules.schedule(schedule, lengths[b], offsets[b])`` in that
    schedule's order, then padding rows (``valid`` False, zero state, zero spans).

    Attributes
    ----------
    states : (B, N_max, d) float; the node vectors (``h`` for the LSTM-type models).
    level : (B, N_max) int64, height above the leaves.
    span, left_span, right_span : (B, N_max, 2) int64 half-open string intervals.
    valid : (B, N_max) bool.
    schedule : the schedule name.
    """

    states: Tensor
    level: Tensor
    span: Tensor
    left_span: Tensor
    right_span: Tensor
    valid: Tensor
    schedule: str

    def flat(self) -> dict[str, Tensor]:
        """The valid nodes only, as flat arrays plus ``row`` (the batch index of each node)."""
        rows = torch.nonzero(self.valid, as_tuple=True)
        return dict(
            row=rows[0], states=self.states[rows], level=self.level[rows],
            span=self.span[rows], left_span=self.left_span[rows],
            right_span=self.right_span[rows],
        )


def collect_nodes(
    all_nodes: Tensor,
    big: schedules.Schedule,
    name: str,
    lengths: Tensor,
    offsets: Tensor | None = None,
) -> NodeStates:
    """Pick each string's own nodes out of states computed for the batch's schedule ``big``.

    ``all_nodes`` (B, big.n_nodes, d) holds one state per node of ``big`` for every row; row b
    keeps the nodes of ``schedules.schedule(name, lengths[b], offsets[b])`` (found through
    :func:`schedules.node_index_map`), which is how a string's spans stay its own in a batch of
    longer strings.
    """
    B, _, d = all_nodes.shape
    device = all_nodes.device
    L = lengths.cpu().numpy()
    R = np.zeros_like(L) if offsets is None else offsets.cpu().numpy()
    scheds = {}
    for key in set(zip(L.tolist(), R.tolist())):  # one schedule per distinct (L, r)
        s = schedules.schedule(name, key[0], key[1])
        scheds[key] = (s, schedules.node_index_map(s, big))
    n_max = max((s.n_nodes for s, _ in scheds.values()), default=0)
    index = np.zeros((B, n_max), np.int64)
    valid = np.zeros((B, n_max), bool)
    level = np.zeros((B, n_max), np.int64)
    spans = np.zeros((3, B, n_max, 2), np.int64)
    for b, key in enumerate(zip(L.tolist(), R.tolist())):
        s, idx = scheds[key]
        n = s.n_nodes
        index[b, :n], valid[b, :n], level[b, :n] = idx, True, s.level
        spans[:, b, :n] = s.span, s.left_span, s.right_span
    t = lambda a: torch.as_tensor(a, device=device)  # noqa: E731
    states = all_nodes.gather(1, t(index)[..., None].expand(-1, -1, d))
    states = states * t(valid)[..., None].to(states.dtype)
    return NodeStates(states=states, level=t(level), span=t(spans[0]), left_span=t(spans[1]),
                      right_span=t(spans[2]), valid=t(valid), schedule=name)
