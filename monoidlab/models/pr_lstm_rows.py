"""PR-LSTM on the CPU without gradients: cells in cache-sized row blocks, one prefix buffer.

The same cells in the same recursion as the general scan (``_PrefixScanModel._scan``, which
gradients and accelerators take), with less memory traffic; tests/test_speed_equivalence.py
compares the two.

* Every state the scan's recursion produces is the state of a prefix: element j of depth k is
  the prefix that ends at token (j + 1)·2^k − 1, and depth k's odd elements are depth k + 1's
  elements. So every depth writes into one (B, T, H) buffer of h (and one (B, ⌊T/2⌋, H) of c:
  only the odd positions' c is read again); nothing is interleaved or copied between depths.
* A cell call runs in blocks of about :data:`ROWS` rows, into scratch buffers allocated once
  per call and reused with ``out=``: the 5H-wide gate pre-activations stay in cache, and no
  large temporary is allocated (a fresh 64 MB buffer costs ≈ 30 ms of page faults on these
  machines, as much as the arithmetic that fills it).
* Pairs of table rows (the leaves: one row per token): W [h_a; h_b] + b = (W₁h_a + b) + W₂h_b,
  both terms computed once per table row and gathered, so a level built from a table needs no
  product of its own; a table block on the right of the scan's even step likewise gathers its
  W₂h + b.

Example
-------
>>> import torch
>>> from monoidlab.models.pr_lstm import PRLSTM
>>> _ = torch.manual_seed(0)
>>> model = PRLSTM(vocab_size=3, n_classes=2, hidden=8)
>>> tokens = torch.randint(0, 3, (2, 11))
>>> with torch.no_grad():
...     fast = prefix_h(model, model._weights(), tokens)
>>> slow = model._scan(tokens)[0]  # with gradients: the general path
>>> bool(torch.allclose(fast, slow, atol=1e-6)), tuple(fast.shape)
(True, (2, 11, 8))
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch import Tensor

ROWS = 256  # rows per block: 256 × 5H floats (1.3 MB at H 256) of gates stay in L2


class Scratch:
    """The per-call buffers of :func:`cells` (``rows`` rows each)."""

    def __init__(self, hidden: int, rows: int, like: Tensor) -> None:
        H = hidden
        self.z, self.t = like.new_empty((rows, 5 * H)), like.new_empty((rows, 5 * H))
        self.z2 = like.new_empty((rows, 4 * H))
        self.h, self.c, self.c_next = (like.new_empty((rows, H)) for _ in range(3))
        self.a, self.b, self.ca, self.cb = (like.new_empty((rows, H)) for _ in range(4))


def cells(W: dict, H: int, sc: Scratch, z: Tensor, c1: Tensor, c2: Tensor,
          out_h: Tensor | None = None, out_c: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """The binary cell's tail and the refinements on one block: ``z`` (r, 5H) = pre-activations
    [i, o, f₁, f₂, g] (overwritten), ``c1``/``c2`` the children's cells. Returns h, c: written
    into ``out_h``/``out_c`` ((r, H), any row stride) when given, else views of the scratch
    (valid until the next block)."""
    r = z.shape[0]
    refine = W["refine"]
    s = z[:, : 4 * H].sigmoid_()
    last = not refine
    c = torch.mul(s[:, :H], z[:, 4 * H:].tanh_(),
                  out=out_c if last and out_c is not None else sc.c[:r])
    c.addcmul_(s[:, 2 * H: 3 * H], c1).addcmul_(s[:, 3 * H:], c2)
    h = torch.tanh(c, out=out_h if last and out_h is not None else sc.h[:r])
    h.mul_(s[:, H: 2 * H])
    for n, (wt, b) in enumerate(refine):  # rows [i, o, f, g]
        last = n == len(refine) - 1
        z2 = torch.addmm(b, h, wt, out=sc.z2[:r])
        s = z2[:, : 3 * H].sigmoid_()
        nxt = torch.mul(s[:, :H], z2[:, 3 * H:].tanh_(),
                        out=out_c if last and out_c is not None else sc.c_next[:r])
        c = nxt.addcmul_(s[:, 2 * H:], c)
        if not (last and out_c is not None):
            sc.c, sc.c_next = sc.c_next, sc.c  # c now lives in the other buffer
        h = torch.tanh(c, out=out_h if last and out_h is not None else sc.h[:r])
        h.mul_(s[:, H: 2 * H])
    return h, c


def row_blocks(n: int, rows: int = 0) -> Iterator[slice]:
    rows = rows or ROWS
    for s in range(0, n, rows):
        yield slice(s, min(n, s + rows))


def grid_blocks(B: int, m: int, rows: int = 0) -> Iterator[tuple[Any, slice]]:
    """(batch, position) blocks of a (B, m) grid, about ``rows`` cells each: one string's
    positions (batch an int: the block is a matrix view, no copy) while there are at least
    ``rows // 4`` of them, else several strings' (batch a slice)."""
    rows = rows or ROWS
    if 4 * m >= rows:
        for b in range(B):
            for j in row_blocks(m, rows):
                yield b, j
    else:
        step = max(1, rows // max(m, 1))
        for b in range(0, B, step):
            yield slice(b, min(B, b + step)), slice(0, m)


def _load(buf: Tensor, view: Tensor) -> Tensor:
    """``view`` as (rows, width): itself when it is a matrix, else copied into ``buf``."""
    if view.dim() == 2:
        return view
    out = buf[: view.numel() // view.shape[-1]]
    out.view(view.shape).copy_(view)
    return out


def pairs(W: dict, H: int, h12: Tensor, c12: Tensor) -> tuple[Tensor, Tensor]:
    """The cell on the rows of ``h12``/``c12`` (N, 2H) = [left; right]: h, c (N, H) each."""
    w, _, _, bias = W["binary"]
    N = h12.shape[0]
    sc = Scratch(H, ROWS, h12)
    h_out, c_out = h12.new_empty((N, H)), h12.new_empty((N, H))
    for s in row_blocks(N):
        z = torch.addmm(bias, h12[s], w, out=sc.z[: s.stop - s.start])
        cells(W, H, sc, z, c12[s, :H], c12[s, H:], h_out[s], c_out[s])
    return h_out, c_out


def table_pairs(W: dict, H: int, table: tuple[Tensor, Tensor], left: Tensor, right: Tensor
                ) -> tuple[Tensor, Tensor]:
    """The cell on pairs of table rows (``left``/``right``: (N,) row ids): h, c (N, H)."""
    th, tc = table
    _, w1, w2, bias = W["binary"]
    za, zb = torch.addmm(bias, th, w1), th @ w2  # once per table row
    N = left.shape[0]
    sc = Scratch(H, ROWS, th)
    h_out, c_out = th.new_empty((N, H)), th.new_empty((N, H))
    for s in row_blocks(N):
        r = s.stop - s.start
        z = torch.index_select(za, 0, left[s], out=sc.z[:r])
        z.add_(torch.index_select(zb, 0, right[s], out=sc.t[:r]))
        c1 = torch.index_select(tc, 0, left[s], out=sc.ca[:r])
        c2 = torch.index_select(tc, 0, right[s], out=sc.cb[:r])
        cells(W, H, sc, z, c1, c2, h_out[s], c_out[s])
    return h_out, c_out


def prefix_h(model: Any, W: dict, tokens: Tensor) -> Tensor:
    """h of every prefix, (B, T, H), by the scan's recursion (no gradients)."""
    B, T = tokens.shape
    H = model.hidden
    if not T:  # no position, no prefix (a tape of width 0)
        return W["binary"][3].new_empty((B, 0, H))
    levels = model._levels(W, tokens)
    like = W["binary"][3]
    h_all = like.new_empty((B, T, H))
    c_odd = like.new_empty((B, T // 2, H))  # c of position 2q + 1 at q
    sc = Scratch(H, ROWS, like)
    _, w1, w2, bias = W["binary"]
    for k in reversed(range(len(levels))):
        n, step, lv = T >> k, 1 << k, levels[k]
        # element 0 of depth k: level k's first block (position 2^k − 1)
        first = lv.values(slice(0, 1))
        h_all[:, step - 1] = first[0][:, 0]
        if k:
            c_odd[:, (step >> 1) - 1] = first[1][:, 0]
        m = (n - 1) // 2  # even elements 2i = prefix 2i − 1 combined with block 2i, i = 1..m
        if m < 1:
            continue
        h_src = h_all[:, 2 * step - 1:: 2 * step][:, :m]
        c_src = c_odd[:, step - 1:: step][:, :m]
        h_dst = h_all[:, 3 * step - 1:: 2 * step][:, :m]
        c_dst = c_odd[:, 3 * (step >> 1) - 1:: step][:, :m] if k else None
        if lv.ids is not None:
            ids = lv.ids[:, 2:: 2][:, :m]
            zb = torch.addmm(bias, lv.state[0], w2)  # W₂h + b of every table row
        else:
            hb, cb = (x[:, 2:: 2][:, :m] for x in lv.state)
        for bs, js in grid_blocks(B, m):
            a = _load(sc.a, h_src[bs, js])
            ca = _load(sc.ca, c_src[bs, js])
            r = a.shape[0]
            if lv.ids is not None:
                rows = ids[bs, js].reshape(-1)
                z = torch.index_select(zb, 0, rows, out=sc.z[:r]).addmm_(a, w1)
                cb_rows = torch.index_select(lv.state[1], 0, rows, out=sc.cb[:r])
            else:
                z = torch.addmm(bias, a, w1, out=sc.z[:r])
                z.addmm_(_load(sc.b, hb[bs, js]), w2)
                cb_rows = _load(sc.cb, cb[bs, js])
            if isinstance(bs, int):  # matrix views: written in place
                cells(W, H, sc, z, ca, cb_rows, h_dst[bs, js],
                      None if c_dst is None else c_dst[bs, js])
                continue
            h, c = cells(W, H, sc, z, ca, cb_rows)
            shape = h_dst[bs, js].shape
            h_dst[bs, js] = h.view(shape)
            if c_dst is not None:
                c_dst[bs, js] = c.view(shape)
    return h_all
