"""Snapped node states: MLP-LDRU (and PR-LSTM) whose every node state is one of k learned codes.

A continuous tree model carries its error from level to level, and nothing pulls a state back
to its class (docs/models.md, "depth-exact models"). Here every state the tree computes, the
leaves and every node after the operator and its post-level block, is replaced by its nearest
code of a learned codebook (Zeng, Goodman & Smyth 1993; Wang & Niepert 2019). Forward uses the
code; the gradient passes to the state (the rotation trick of vector-quantize-pytorch, or a
plain straight-through estimate), a commitment term pulls states toward their codes, and codes
no state chose lately are re-seeded from the step's node states (the library's dead-code
restart). Identity padding stays outside the codebook: a node with an all-padding child is its
other child, already a code.

In eval mode the model is a finite table (:class:`~monoidlab.models.finite.FiniteTable`):
letter → code, code × code → code, code → class, exposed by :meth:`SnappedMLPLDRU.finite_table`;
its eval forward equals that table's fold (a test checks it on random strings), and
:func:`monoidlab.certify` decides whether it is right at every length.

:class:`SnappedPRLSTM` (``pr-lstm-snap``) does the same to PR-LSTM: every binary cell's output
state [h; c] (after its refinements) snaps to one of k codes in 2H dimensions (the V leaf
states stay as they are: see the class); its table has the prefix scan's layout (``layout="scan"``: a string is the left
fold of its length's aligned blocks, no padding).

Two quantisers, both from vector-quantize-pytorch: ``vq`` (``VectorQuantize``: k explicit codes,
EMA codebook, dead-code restarts) and ``fsq`` (``FSQ``: a fixed grid in a few projected
dimensions, no codebook to collapse; k is rounded up to a grid of ``levels**3`` codes).

Example
-------
>>> import torch
>>> _ = torch.manual_seed(0)
>>> model = SnappedMLPLDRU(vocab_size=2, n_classes=2, d=8, codes=6).eval()
>>> tokens, lengths = torch.tensor([[0, 1, 1, 0, 1]]), torch.tensor([5])
>>> table = model.finite_table()
>>> table.n_codes, bool(model(tokens, lengths).argmax(1) == torch.as_tensor(
...     table.fold(tokens.numpy(), lengths.numpy())))
(6, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Self

import torch
from torch import Tensor, nn

from monoidlab.errors import InputError
from monoidlab.geometry import Padding
from monoidlab.models.mlp_ldru import MLPLDRU, MLPLDRUOptions
from monoidlab.models.options import ModelOptions, one_of, positive_int
from monoidlab.models.pr_lstm import PRLSTM, PRLSTMOptions, _PrefixScanModel

__all__ = ["SnappedMLPLDRU", "SnappedMLPLDRUOptions", "SnappedPRLSTM", "SnappedPRLSTMOptions",
           "Snapper", "CODES_PER_ELEMENT", "MAX_CODES", "auto_codes"]

QUANTISERS = ("vq", "fsq")
GRADIENTS = ("rotation", "straight-through")
#: ``codes = 0`` (auto) gives this many codes per element of the language's syntactic monoid:
#: a tree model needs at least one code per element its nodes meet, and spare codes let
#: training split a code that serves two elements before the dead-code restart finds it.
CODES_PER_ELEMENT = 2
MIN_CODES, MAX_CODES = 16, 2048
STANDALONE_CODES = 64
#: the codebook's EMA update and dead-code restarts run every UPDATE_EVERY training steps, on
#: a random sample of at most UPDATE_SAMPLE of those steps' node states. Measured on parity
#: (recipe 'languages', 2000 steps): every step on up to 4096 states learns it by step 500;
#: every 4 steps (1024 states, the EMA decay compounded), or every step on 256 states, never
#: leaves chance. Handed the snaps' own code indices, the library's update costs ~2 ms a step
#: on CPU (its own forward pass, recomputing the distances, cost ~7 ms: bench_exact_speed).
UPDATE_EVERY, UPDATE_SAMPLE = 1, 4096
#: the EMA decay per training step (the library's default), compounded over UPDATE_EVERY
DECAY = 0.8


def auto_codes(monoid_size: int) -> int:
    """The default codebook size for a monoid of ``monoid_size`` elements.

    >>> auto_codes(2), auto_codes(141), auto_codes(10_000)
    (16, 282, 2048)
    """
    return max(MIN_CODES, min(MAX_CODES, CODES_PER_ELEMENT * int(monoid_size)))


@dataclass(frozen=True)
class CodebookOptions(ModelOptions):
    """The codebook's options, shared by the snapped models (mixed in before the model's own
    options):

    codes : k, the number of codes; 0 (the default) = auto: ``CODES_PER_ELEMENT`` (2) × |M| of
        the run's language, at least 16 and at most 2048, set by the trainer (64 for a model
        built without a language).
    quantizer : ``"vq"`` (VectorQuantize) or ``"fsq"`` (finite scalar quantisation).
    commitment : weight of ``‖s − sg(q(s))‖²`` (vq only).
    dead_code : a code chosen fewer than this many times (EMA) is re-seeded (vq only).
    gradient : ``"rotation"`` (the rotation trick) or ``"straight-through"`` (vq only).
    """

    codes: int = 0
    quantizer: str = "vq"
    commitment: float = 0.25
    dead_code: int = 2
    gradient: str = "straight-through"

    def check(self) -> None:
        super().check()
        positive_int(self, "codes", minimum=0)
        if self.codes > MAX_CODES or self.codes == 1:
            raise InputError(f"option 'codes': 0 (auto) or 2..{MAX_CODES}, got {self.codes}")
        one_of(self, "quantizer", QUANTISERS)
        one_of(self, "gradient", GRADIENTS)
        c = self.commitment
        if isinstance(c, bool) or not isinstance(c, int | float) or not (
                math.isfinite(c) and c >= 0):
            raise InputError(f"option 'commitment': a number >= 0, got {c!r}")
        positive_int(self, "dead_code", minimum=0)

    def for_language(self, lang: Any) -> Self:
        """These options with ``codes = 0`` (auto) sized for ``lang``'s syntactic monoid."""
        if self.codes:
            return self
        import dataclasses

        return dataclasses.replace(self, codes=auto_codes(lang.monoid().size))


@dataclass(frozen=True)
class SnappedMLPLDRUOptions(CodebookOptions, MLPLDRUOptions):
    """MLP-LDRU's options (:class:`~monoidlab.models.mlp_ldru.MLPLDRUOptions`; here ``d`` 32,
    dropout 0 and identity padding by default), plus the codebook's
    (:class:`CodebookOptions`)."""

    d: int = 32
    dropout: float = 0.0
    padding: Padding = Padding.IDENTITY


@dataclass(frozen=True)
class SnappedPRLSTMOptions(CodebookOptions, PRLSTMOptions):
    """PR-LSTM's options (:class:`~monoidlab.models.pr_lstm.PRLSTMOptions`; here ``hidden``
    32), plus the codebook's (:class:`CodebookOptions`; codes live in 2 × hidden dimensions:
    a state is [h; c])."""

    hidden: int = 32


def _sized(o: Any, lang: Any) -> Any:
    if o.codes:
        return o
    import dataclasses

    return dataclasses.replace(o, codes=auto_codes(lang.monoid().size))


def fsq_levels(codes: int) -> list[int]:
    """FSQ's grid for at least ``codes`` codes: three equal dimensions (fewer for tiny k).

    >>> fsq_levels(6), fsq_levels(64), fsq_levels(282)
    ([2, 3], [4, 4, 4], [7, 7, 7])
    """
    if codes <= 8:
        return [2, math.ceil(codes / 2)] if codes > 2 else [codes]
    side = math.ceil(codes ** (1 / 3) - 1e-9)
    return [side] * 3


class Snapper(nn.Module):
    """Nearest-code snapping of (..., d) states with one of vector-quantize-pytorch's quantisers.

    ``vq``: the library's ``VectorQuantize`` owns the codebook and its learning (EMA updates,
    dead-code restarts), applied once per training step by :meth:`update` on every state the
    step snapped; each snap in between is a nearest-code gather with the library's rotation
    trick (or a straight-through estimate) and a commitment term. The tree snaps once per
    level and per block of the leaves, many small calls a step, where the library's own forward
    pass costs more than the model (measured: 2.4× the plain step against 1.2×).
    ``fsq``: the library's ``FSQ`` forward on every call (no codebook to learn).

    In eval mode the value is exactly ``codebook()[nearest(x)]`` (a gather), so a state is
    bit-for-bit one of the k codes and the model is a finite table.
    """

    def __init__(self, d: int, codes: int, quantizer: str = "vq", commitment: float = 0.25,
                 dead_code: int = 2, gradient: str = "straight-through") -> None:
        super().__init__()
        from vector_quantize_pytorch import FSQ, VectorQuantize

        self.kind, self.commitment, self.rotation = quantizer, commitment, gradient == "rotation"
        if quantizer == "fsq":
            self.fsq = FSQ(levels=fsq_levels(codes), dim=d)
            self.k = int(self.fsq.codebook_size)
        else:
            self.vq = VectorQuantize(dim=d, codebook_size=codes, decay=DECAY ** UPDATE_EVERY,
                                     commitment_weight=commitment,
                                     threshold_ema_dead_code=dead_code)
            self.k = codes
        # this step's snapped states (detached) and the index of each one's code, and the sum
        # over its snap calls of each call's mean squared distance to its codes (with grad)
        self._pending: list[tuple[Tensor, Tensor]] = []
        self._commit: Tensor | None = None
        self._sample: list[tuple[Tensor, Tensor]] = []  # kept for the next codebook update
        # training steps so far, saved with the weights so that a resumed run updates the
        # codebook at the same steps (checkpoints fall on multiples of UPDATE_EVERY, where
        # the sample is empty)
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))
        self._register_load_state_dict_pre_hook(_default_steps)

    def codebook(self) -> Tensor:
        """The k codes (k, d), as the forward pass uses them."""
        if self.kind == "fsq":
            return self.fsq.indices_to_codes(torch.arange(self.k, device=self._device()))
        return self.vq.codebook

    def _device(self) -> torch.device:
        return next(self.parameters(), torch.zeros(0)).device if self.kind == "fsq" \
            else self.vq.codebook.device

    def nearest(self, x: Tensor) -> Tensor:
        """The index of each state's code, (...,)."""
        flat = x.reshape(-1, x.shape[-1])
        if self.kind == "fsq":
            _, idx = self.fsq(flat[None])
            return idx[0].reshape(x.shape[:-1])
        return _nearest(flat, self.codebook()).reshape(x.shape[:-1])

    def forward(self, x: Tensor) -> Tensor:
        if not self.training:
            return self.codebook()[self.nearest(x)]
        if self.kind == "fsq":
            out, _ = self.fsq(x.reshape(1, -1, x.shape[-1]))
            return out.reshape(x.shape)
        from vector_quantize_pytorch.vector_quantize_pytorch import rotate_to

        flat = x.reshape(-1, x.shape[-1])
        codes = self.codebook().detach()
        idx = _nearest(flat.detach(), codes)
        q = codes[idx]
        # the commitment term of this snap (each call weighs alike), and the states with their
        # codes' indices: the codebook learns from them once per step, in update()
        term = nn.functional.mse_loss(flat, q)
        self._commit = term if self._commit is None else self._commit + term
        self._pending.append((flat.detach(), idx))
        out = rotate_to(flat, q) if self.rotation else flat + (q - flat).detach()
        return out.reshape(x.shape)

    def train(self, mode: bool = True) -> Snapper:
        self._pending, self._commit = [], None  # a step's states never outlive a change of mode
        return super().train(mode)

    def update(self) -> Tensor | None:
        """End of a training step: the step's commitment loss, β · the sum over the step's
        snap calls of each call's mean ‖s − sg(q(s))‖² (None for fsq, or when nothing was
        snapped). Every ``UPDATE_EVERY`` steps, the codebook's EMA update and dead-code
        restarts run on one sample of the states those steps snapped (all levels together, so
        that a code used at one level only is not expired by the calls of the other levels).
        The library is handed each state's code index, which the snap has already computed
        (``update_indices``: its EMA and restarts without recomputing the distances)."""
        pending, commit = self._pending, self._commit
        self._pending, self._commit = [], None
        if self.kind != "vq" or commit is None:
            return None
        loss = self.commitment * commit
        if self.training:
            with torch.no_grad():
                states = torch.cat([s for s, _ in pending])
                idx = torch.cat([i for _, i in pending])
                if len(states) > UPDATE_SAMPLE:  # torch's seeded generator: reproducible
                    keep = torch.randperm(len(states), device=states.device)[:UPDATE_SAMPLE]
                    states, idx = states[keep], idx[keep]
                self._sample.append((states, idx))
                steps = self.get_buffer("steps")
                steps += 1
                if int(steps) % UPDATE_EVERY == 0:
                    states = torch.cat([s for s, _ in self._sample])
                    idx = torch.cat([i for _, i in self._sample])
                    self._sample = []
                    if len(states) > UPDATE_SAMPLE:
                        keep = torch.randperm(len(states), device=states.device)[:UPDATE_SAMPLE]
                        states, idx = states[keep], idx[keep]
                    self.vq._codebook.update_indices(states[None], idx[None])
        return loss


def _nearest(flat: Tensor, codes: Tensor) -> Tensor:
    """The index of each row's nearest code: argmin of ‖c‖² − 2 x·c (‖x − c‖² less ‖x‖², one
    matrix product; the same function in training, in eval and in the finite table)."""
    return torch.addmm((codes * codes).sum(1), flat, codes.T, alpha=-2).argmin(-1)


def _default_steps(state: dict, prefix: str, *args: Any) -> None:
    """Weights saved before the step counter existed load with it at 0."""
    state.setdefault(prefix + "steps", torch.zeros((), dtype=torch.long))


class SnappedMLPLDRU(MLPLDRU):
    """MLP-LDRU with snapped node states (see the module docstring).

    ``SnappedMLPLDRU(vocab_size, n_classes, codes=64)``; ``codes=0`` (auto) is sized by the
    trainer from the language (:meth:`SnappedMLPLDRUOptions.for_language`), else 64."""

    def __init__(self, vocab_size: int, n_classes: int,
                 options: SnappedMLPLDRUOptions | None = None, **kw: Any) -> None:
        o = SnappedMLPLDRUOptions.build(options if options is not None else kw,
                                        "mlp-ldru-snap")
        super().__init__(vocab_size, n_classes, o)
        # codes = 0 (auto) is sized from the language by a run; a model built without one
        # (a test, a notebook) gets STANDALONE_CODES
        self.snapper = Snapper(o.d, o.codes or STANDALONE_CODES, o.quantizer, o.commitment,
                               o.dead_code, o.gradient)

    # the two places MLP-LDRU makes a state: the leaf table and a node's post-level block
    def _leaf_table(self) -> Tensor:
        rows = super()._leaf_table()
        if self.padding == Padding.IDENTITY:  # the padding row is never a state: keep it out
            return torch.cat([self.snapper(rows[:-1]), rows[-1:]])
        return self.snapper(rows)

    def _post(self, h: Tensor) -> Tensor:
        return self.snapper(super()._post(h))

    def auxiliary_loss(self) -> Tensor | None:
        """The commitment loss of the training step just computed (the trainer adds it), after
        the codebook's update; None when there is none (fsq)."""
        return self.snapper.update()

    @torch.no_grad()
    def finite_table(self) -> Any:
        """The eval-mode model as tables: :class:`~monoidlab.models.finite.FiniteTable`.

        Codes are the codebook's rows; ``table[i, j]`` is the code of a node whose children
        hold codes i and j (the operator, the post-level block, the snap), ``head[i]`` the
        head's class at code i, ``leaf[a]`` letter a's code.
        """
        from monoidlab.models.finite import FiniteTable

        was = self.training
        self.eval()
        try:
            C = self.snapper.codebook()
            k = C.shape[0]
            leaf_rows = MLPLDRU._leaf_table(self)
            codes_of = self.snapper.nearest
            leaf = codes_of(leaf_rows[: self.vocab_size])
            pad_leaf = None if self.padding == Padding.IDENTITY else int(
                codes_of(leaf_rows[-1:])[0])
            table = torch.empty(k, k, dtype=torch.long, device=C.device)
            step = max(1, 65_536 // k)
            for i in range(0, k, step):  # every pair (i, j), a block of left codes at a time
                left = C[i:i + step, None, :].expand(-1, k, -1)
                pairs = torch.cat([left, C[None].expand(left.shape[0], -1, -1)], -1)
                table[i:i + step] = codes_of(MLPLDRU._post(self, self._operate_pairs(pairs)))
            head = self.head(C).argmax(-1)
        finally:
            self.train(was)
        return FiniteTable(leaf.cpu().numpy(), table.cpu().numpy(), head.cpu().numpy(),
                           self.padding, pad_leaf)


class SnappedPRLSTM(PRLSTM):
    """PR-LSTM with snapped states (see the module docstring): ``SnappedPRLSTM(vocab_size,
    n_classes, hidden=32, codes=64)``; ``codes=0`` (auto) as :class:`SnappedMLPLDRU`.

    Every state a binary cell makes (after its refinements) is [h; c] snapped to the nearest of
    k codes (2 × hidden dimensions). The V leaf states are not snapped: each letter's state is
    already one fixed vector, and PR-LSTM's leaf states start close together (σ(o)⊙tanh(σ(i)⊙
    tanh(g)) of a small linear map), so snapping them put every letter on one code at
    initialisation, after which every state of every string was the same and nothing could
    separate them (measured: parity's loss stayed at 0.69 for 12,000 steps; without the leaf
    snap it reaches 0.002 by step 300). In the finite table the leaves are V codes of their
    own, after the k codebook rows. Every combination goes through
    :meth:`_combine` (one arithmetic for the table and every forward path: a different order of
    the same sums could pick another code at a near tie), and the CPU row-block path of the
    plain model, which computes cells internally, is not taken.

    >>> import torch
    >>> _ = torch.manual_seed(0)
    >>> model = SnappedPRLSTM(2, 2, hidden=8, codes=6).eval()
    >>> tokens, lengths = torch.tensor([[0, 1, 1, 0, 1, 1, 1]]), torch.tensor([7])
    >>> table = model.finite_table()
    >>> table.layout, bool(model(tokens, lengths).argmax(1) == torch.as_tensor(
    ...     table.fold(tokens.numpy(), lengths.numpy())))
    ('scan', True)
    """

    def __init__(self, vocab_size: int, n_classes: int,
                 options: SnappedPRLSTMOptions | None = None, **kw: Any) -> None:
        o = SnappedPRLSTMOptions.build(options if options is not None else kw, "pr-lstm-snap")
        super().__init__(vocab_size, n_classes, o)
        self.snapper = Snapper(2 * o.hidden, o.codes or STANDALONE_CODES, o.quantizer,
                               o.commitment, o.dead_code, o.gradient)

    def _snap(self, state: Any) -> Any:
        h, c = state
        return tuple(self.snapper(torch.cat([h, c], -1)).split(self.hidden, -1))

    def _combine(self, W: dict, a: Any, b: Any, zb: Tensor | None = None) -> Any:
        return self._snap(super()._combine(W, a, b))  # zb unused: one arithmetic (docstring)

    def _pairs(self, W: dict, state: Any) -> Any:
        (h12, c12), H = state, self.hidden
        return self._combine(W, (h12[:, :H], c12[:, :H]), (h12[:, H:], c12[:, H:]))

    def _table_pairs(self, W: dict, table: Any, left: Tensor, right: Tensor) -> Any:
        return self._combine(W, tuple(t[left] for t in table), tuple(t[right] for t in table))

    def forward_all(self, tokens: Tensor, lengths: Tensor | None = None) -> Tensor:
        return _PrefixScanModel.forward_all(self, tokens, lengths)

    forward_all.__doc__ = _PrefixScanModel.forward_all.__doc__

    def auxiliary_loss(self) -> Tensor | None:
        """As :meth:`SnappedMLPLDRU.auxiliary_loss`."""
        return self.snapper.update()

    @torch.no_grad()
    def finite_table(self) -> Any:
        """The eval-mode model as a scan-layout :class:`~monoidlab.models.finite.FiniteTable`:
        codes 0..k-1 are the codebook's rows and k + a letter a's (unsnapped) leaf state;
        ``table[i, j]`` is the code of the cell on codes i and j (always a codebook row),
        ``head[i]`` the head's class on code i's h, ``leaf[a] = k + a``."""
        from monoidlab.models.finite import FiniteTable

        was = self.training
        self.eval()
        try:
            W = self._weights()
            codebook = self.snapper.codebook()
            C = torch.cat([codebook, torch.cat(self._leaf_table(W), -1)])
            k, H = C.shape[0], self.hidden
            leaf = torch.arange(codebook.shape[0], k)
            table = torch.empty(k, k, dtype=torch.long, device=C.device)
            step = max(1, 65_536 // k)
            right = (C[:, :H], C[:, H:])
            for i in range(0, k, step):  # every pair (i, j), a block of left codes at a time
                rows = C[i:i + step]
                n = rows.shape[0]
                a = tuple(x.repeat_interleave(k, 0) for x in (rows[:, :H], rows[:, H:]))
                b = tuple(x.repeat(n, 1) for x in right)
                raw = PRLSTM._combine(self, W, a, b)
                table[i:i + step] = self.snapper.nearest(torch.cat(raw, -1)).view(n, k)
            head = self.head(torch.relu(C[:, :H])).argmax(-1)
        finally:
            self.train(was)
        return FiniteTable(leaf.cpu().numpy(), table.cpu().numpy(), head.cpu().numpy(),
                           layout="scan")
