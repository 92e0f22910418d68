"""The certificate of a finite prefix-scan model: right at every length, or its shortest failure.

A scan-layout :class:`~monoidlab.models.finite.FiniteTable` (the snapped PR-LSTM) reads a
string of length n as the left fold, most significant first, of the balanced trees of the
aligned blocks of n's binary expansion. Track (code, EC) pairs:

* ``F[k]``, the pairs of full blocks of 2^k tokens: ``F[0]`` the letters, ``F[k+1] = F[k]·F[k]``
  (the table on codes, the monoid on ECs). The sequence is eventually periodic
  (``F[t + p] = F[t]``).
* ``P[k]``, the pairs a fold can hold after blocks of levels >= k only:
  ``P[k] = F[k] ∪ P[k+1] ∪ P[k+1]·F[k]``; on the periodic levels the least fixed point of the
  same equations (each iteration adds one block on top: exactly the finite strings).

Every length's root pair lies in ``P[0]`` and every pair of ``P[0]`` is some string's, so the
table is right at every length iff the head reads every pair of ``P[0]`` as its EC's class.
These sets are computed as sets (:func:`_product_set`: per code, the ECs as a bit set, so a
product costs |a| · codes · M / 64 word operations, not |a| · |b|), no witnesses kept.

A wrong table is usually wrong on a short string, so the search for the shortest
counterexample runs first, level by level while it is cheap (``refute_budget`` products a
step), and the proof only when that search ends without one. The search finds the least top
level K whose folds
reach a misread pair (lengths 2^K..2^(K+1) − 1, the least length per pair kept block by block),
then, for that length, the shortlex-least string (blocks in order, each a full block's
shortlex-least witness, the least rank sequence kept per pair); it is confirmed by
:meth:`FiniteTable.fold` and the DFA.

Example
-------
>>> import monoidlab as ml
>>> from monoidlab.evaluation.certificate import certify_table
>>> from monoidlab.models.finite import FiniteTable, monoid_table
>>> lang = ml.load_language("parity")
>>> exact = monoid_table(lang, layout="scan")
>>> print(certify_table(exact, lang))    # dispatched here by the table's layout
correct at every length (proved: reachable (code, EC) pairs repeat after 1 levels, period 1; 2 pairs)
>>> table = exact.table.copy(); table[1, 1] = 1   # "1"·"1" now says odd
>>> certify_scan_table(FiniteTable(exact.leaf, table, exact.head, layout="scan"), lang)[
...     "counterexample"]
'11'
"""

from __future__ import annotations

from typing import Any

import numpy as np

from monoidlab.errors import MonoidTooLarge
from monoidlab.evaluation.certificate_scope import misread

__all__ = ["certify_scan_table"]


_CHUNK = 1 << 21  # products per slice: bounds the memory of one step
MAX_PRODUCTS = 1 << 32  # products of one set by another: past this the work is refused
REFUTE_LEVELS = 16  # the cheap first search looks at lengths below 2^16, then the proof runs


def _product(tau: np.ndarray, mul: np.ndarray, M: int, a: np.ndarray, b: np.ndarray,
             key: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The distinct pairs of a·b for pair arrays a, b (p = code·M + EC), each with the flat
    index i·len(b) + j of its least candidate: by ``key[i, j]`` when given (a per-row key of
    a, ``key`` (len(a),), plus nothing else: then the least (key, flat index)), else by the
    flat index (row-major: a smaller index = a smaller (i, j)). Computed in slices of rows."""
    na, nb = len(a), len(b)
    if na * nb > MAX_PRODUCTS:
        raise MonoidTooLarge(f"certify_table: {na} x {nb} products of reachable (code, EC) "
                             f"pairs at one block level, over {MAX_PRODUCTS:.3g}")
    if not na or not nb:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    cb, mb = b // M, b % M
    rows, parts = max(1, _CHUNK // nb), []
    for s in range(0, na, rows):
        pa = a[s:s + rows]
        p = (tau[(pa // M)[:, None], cb[None, :]] * M + mul[(pa % M)[:, None], mb[None, :]])
        flat = np.arange(s * nb, (s + len(pa)) * nb)
        k = flat if key is None else key[flat // nb]
        win_p, win = _least(p.ravel(), k, None if key is None else flat)
        parts.append((win_p, flat[win], k[win]))
    p = np.concatenate([x[0] for x in parts])
    flat = np.concatenate([x[1] for x in parts])
    k = np.concatenate([x[2] for x in parts])
    p, win = _least(p, k, None if key is None else flat)
    return p, flat[win]


def _product_set(tau: np.ndarray, mul: np.ndarray, M: int, a: np.ndarray, b: np.ndarray,
                 max_work: int) -> np.ndarray:
    """The distinct pairs of a·b (sorted p = code·M + EC), without witnesses: for each EC e1 of
    a, the bit sets ``{mul[e1, e2] : (c2, e2) in b}`` per code c2 of b, OR-ed into the bit set
    of code ``tau[c1, c2]`` for every c1 with (c1, e1) in a. Work: |a| × (codes of b) × ⌈M/64⌉
    words; past ``max_work`` refused by name."""
    if not len(a) or not len(b):
        return np.zeros(0, np.int64)
    words = (M + 63) // 64
    codes_b, row_b = np.unique(b // M, return_inverse=True)
    work = len(a) * len(codes_b) * words
    if work > max_work:
        raise MonoidTooLarge(f"certify_table: a product of {len(a)} by {len(b)} reachable "
                             f"(code, EC) pairs needs {work:.3g} word operations, over "
                             f"{max_work:.3g}")
    ca, ea, eb = a // M, a % M, b % M
    out = np.zeros((tau.shape[0], words), np.uint64)
    bits = np.zeros((len(codes_b), words * 64), bool)
    for e1 in np.unique(ea):
        bits[:] = False
        bits[row_b, mul[e1, eb]] = True
        packed = np.packbits(bits, axis=1, bitorder="little").view(np.uint64)  # (codes_b, words)
        c1 = ca[ea == e1]
        step = max(1, _CHUNK // max(1, len(codes_b) * words))
        for s in range(0, len(c1), step):
            target = tau[c1[s:s + step, None], codes_b[None, :]].ravel()
            np.bitwise_or.at(out, target, np.tile(packed, (min(step, len(c1) - s), 1)))
    code, bit = np.nonzero(np.unpackbits(out.view(np.uint8), axis=1, bitorder="little")[:, :M])
    return code.astype(np.int64) * M + bit


def _least(p: np.ndarray, key: np.ndarray, then: np.ndarray | None = None
           ) -> tuple[np.ndarray, np.ndarray]:
    """Per distinct pair, the candidate with the least key (then the least ``then``):
    (pairs, index of the winner)."""
    o = np.lexsort((key, p)) if then is None else np.lexsort((then, key, p))
    first = np.r_[True, p[o][1:] != p[o][:-1]] if len(o) else o.astype(bool)
    return p[o][first], o[first]


class _Blocks:
    """F[k] for k = 0, 1, ...: each level's pairs in the rank order of their shortlex-least
    witnesses, with the (left, right) ranks in the level below that built each."""

    def __init__(self, table: Any, mono: Any) -> None:
        self.tau, self.mul, self.M = table.table, np.asarray(mono.table, np.int64), mono.size
        p, win = _least(table.leaf * self.M + np.asarray(mono.letters),
                        np.arange(table.vocab_size))
        order = np.argsort(win)  # letters in order: rank = shortlex
        self.pairs = [p[order]]
        self.kids = [(win[order], np.full(len(order), -1))]  # level 0: (letter, -1)

    def grow(self) -> None:
        a = self.pairs[-1]
        p, flat = _product(self.tau, self.mul, self.M, a, a)
        order = np.argsort(flat)  # (left rank, right rank) lexicographic = shortlex
        self.pairs.append(p[order])
        self.kids.append((flat[order] // len(a), flat[order] % len(a)))

    def tokens(self, level: int, rank: int) -> np.ndarray:
        """The witness of ``pairs[level][rank]`` (2^level tokens)."""
        ranks = np.array([rank])
        for k in range(level, 0, -1):
            left, right = self.kids[k]
            ranks = np.stack([left[ranks], right[ranks]], 1).ravel()
        return self.kids[0][0][ranks]


def certify_scan_table(table: Any, lang: Any, *, max_levels: int = 4096,
                       max_pairs: int = 2_000_000, max_witness_length: int = 1 << 20,
                       kept: np.ndarray | None = None, refute_budget: int = 1 << 26,
                       max_work: int = 1 << 36) -> dict[str, Any]:
    """Decide whether the scan-layout ``table`` classifies every string of every length >= 1
    as ``lang`` does (see the module docstring); the budgets are as
    :func:`~monoidlab.evaluation.certificate.certify_table`'s. Returns the fields of a
    :class:`~monoidlab.evaluation.certificate.Certificate` (which wraps them). ``kept``: a
    mask over the classes whose strings are checked (None: every string).
    ``refute_budget``: the most products one step of the first, cheap search for a
    counterexample (lengths below 2^REFUTE_LEVELS) may take before the proof is tried (0:
    prove first); ``max_work``: the most word operations of one set product of the proof
    (2^36, minutes of work, as ``MAX_PRODUCTS`` bounds the search's products)."""
    mono = lang.monoid()
    M, outs = mono.size, np.asarray(mono.outputs)
    blocks = _Blocks(table, mono)
    common = dict(language=lang.name, n_codes=table.n_codes, monoid_size=M,
                  padding=table.padding.value, offsets=False, layout="scan")
    if refute_budget:
        found = _shortest(blocks, table, lang, outs, max_witness_length, common, kept,
                          budget=refute_budget, max_levels=REFUTE_LEVELS)
        if found is not None:
            return found
    tau, mul = blocks.tau, blocks.mul

    def times(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return _product_set(tau, mul, M, a, b, max_work)

    F, seen = [np.unique(blocks.pairs[0])], {}
    largest = len(F[0])
    while True:  # F[k] until a level repeats: F[t + p] = F[t]
        key = F[-1].tobytes()
        if key in seen:
            break
        seen[key] = len(F) - 1
        if len(F) > max_levels:
            raise MonoidTooLarge(f"certify_table: no repeat within max_levels={max_levels} "
                                 f"block levels; raise max_levels")
        F.append(times(F[-1], F[-1]))
        largest = max(largest, len(F[-1]))
        if largest > max_pairs:
            raise MonoidTooLarge(f"certify_table: {largest} reachable (code, EC) pairs of a "
                                 f"block level, over max_pairs={max_pairs}")
    t = seen[key]
    period = len(F) - 1 - t

    def extend(upper: np.ndarray, k: int) -> np.ndarray:
        """P[k] from P[k+1]: blocks of level k alone, folds without one, folds ending in one."""
        return np.unique(np.concatenate([F[k], upper, times(upper, F[k])]))

    cycle = [np.zeros(0, np.int64) for _ in range(period)]  # P on levels t..t+p-1, from below
    changed = True
    while changed:  # least fixed point: each sweep adds one more block on top
        changed = False
        for i in reversed(range(period)):
            new = extend(cycle[(i + 1) % period], t + i)
            if len(new) != len(cycle[i]):
                cycle[i], changed = new, True
        largest = max(largest, *(len(c) for c in cycle))
        if largest > max_pairs:
            raise MonoidTooLarge(f"certify_table: {largest} reachable (code, EC) pairs of "
                                 f"folds, over max_pairs={max_pairs}")
    reach = cycle[0]
    for k in reversed(range(t)):
        reach = extend(reach, k)
        largest = max(largest, len(reach))
    if not misread(table.head, outs, reach, M, kept).any():
        return dict(correct=True, period=period, levels=t + period, pairs=largest, **common)
    found = _shortest(blocks, table, lang, outs, max_witness_length, common, kept,
                      max_levels=max_levels)
    assert found is not None  # a misread pair of P[0] is some string's
    return found


def _level_pairs(blocks: _Blocks, k: int) -> np.ndarray:
    """F[k] for any k, growing the levels (and their witnesses) as needed."""
    while len(blocks.pairs) <= k:
        blocks.grow()
    return blocks.pairs[k]


def _shortest(blocks: _Blocks, table: Any, lang: Any, outs: np.ndarray, limit: int,
              common: dict[str, Any], kept: np.ndarray | None, *, budget: int | None = None,
              max_levels: int = 4096) -> dict[str, Any] | None:
    """The shortest (then shortlex-least) misread string: see the module docstring. With a
    ``budget``, None as soon as one step would take more products than that (and past
    ``max_levels`` top levels: none found is no proof)."""
    tau, mul, M = blocks.tau, blocks.mul, blocks.M
    largest = len(blocks.pairs[0])

    def affordable(na: int, nb: int) -> bool:
        return budget is None or na * nb <= budget

    top = 0
    while True:  # the least top level K with a misread fold: lengths 2^K .. 2^(K+1) - 1
        if budget is not None and top >= max_levels:
            return None
        if top > 61:  # lengths past 2^62: a misread pair the proof found, no string reaches
            raise RuntimeError("certify_table: internal error, the scan's misread pair has no "
                               "string below length 2^62")
        while len(blocks.pairs) <= top:
            if not affordable(len(blocks.pairs[-1]), len(blocks.pairs[-1])):
                return None
            blocks.grow()
        acc = blocks.pairs[top]
        size = np.full(len(acc), 1 << top, np.int64)
        for k in reversed(range(top)):  # each lower block in or out, least length per pair
            if not affordable(len(acc), len(blocks.pairs[k])):
                return None
            prod, flat = _product(tau, mul, M, acc, _level_pairs(blocks, k), key=size)
            p = np.concatenate([acc, prod])
            n = np.concatenate([size, size[flat // len(blocks.pairs[k])] + (1 << k)])
            acc, win = _least(p, n)
            size = n[win]
            largest = max(largest, len(acc))
        bad = misread(table.head, outs, acc, M, kept)
        if bad.any():
            length = int(size[bad].min())
            break
        top += 1
    # the shortlex-least string of that length: its blocks are fixed, keep per pair the least
    # sequence of block ranks (blocks of one level are in shortlex rank order)
    levels = [k for k in reversed(range(length.bit_length())) if length >> k & 1]
    acc = blocks.pairs[levels[0]]
    ranks = [np.arange(len(acc))[:, None]]
    seqs = ranks[0]
    for k in levels[1:]:
        acc, flat = _product(tau, mul, M, acc, blocks.pairs[k])  # least (prefix, block) ranks
        nb = len(blocks.pairs[k])
        seqs = np.concatenate([seqs[flat // nb], (flat % nb)[:, None]], 1)
        order = np.argsort(flat)  # keep prefixes in rank order for the next block
        acc, seqs = acc[order], seqs[order]
    bad = np.flatnonzero(misread(table.head, outs, acc, M, kept))
    x = int(bad[0])  # acc is in rank order: the first misread is the shortlex-least
    code, ec = divmod(int(acc[x]), M)
    expected, predicted = int(outs[ec]), int(table.head[code])
    names = [(lang.classes[c] if c < len(lang.classes) else None) for c in (expected, predicted)]
    out: dict[str, Any] = dict(correct=False, period=0, levels=top + 1, pairs=largest,
                               counterexample_level=levels[0],
                               counterexample_length=length, expected=expected,
                               predicted=predicted, expected_name=names[0],
                               predicted_name=names[1])
    if length <= limit:
        tokens = np.concatenate([blocks.tokens(k, int(r)) for k, r in zip(levels, seqs[x],
                                                                            strict=True)])
        lengths = np.array([length])
        text = lang.decode(tokens[None, :], lengths)[0]
        said = int(table.fold(tokens[None, :], lengths)[0])
        truth = int(lang.classify(tokens[None, :], lengths)[0])
        if (said, truth) != (predicted, expected) or len(tokens) != length:
            raise RuntimeError(f"certify_table: internal error, scan counterexample {text!r} "
                               f"gives {said} (model) and {truth} (DFA), expected {predicted} "
                               f"and {expected}")
        out.update(counterexample=text if isinstance(text, str) else " ".join(text),
                   counterexample_tokens=tuple(tokens.tolist()), counterexample_offset=0,
                   confirmed=True)
    return common | out
