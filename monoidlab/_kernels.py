"""numba kernels (compiled once per process, cached on disk), each with a numpy fallback.

numba comes with umap-learn; without it every getter returns None and the callers take their
numpy paths (slower, same results, tested).

* :func:`fold_kernel`: fold strings over a transition table (automaton runs).
* :func:`label_kernels`: the same fold at memory speed for EC labelling (eight chains in
  registers, a pre-scaled flat table in the smallest dtype, the token check folded in), serial
  and with ``prange`` over blocks of strings.
* :func:`probe_kernels`: an open-addressing hash table of int64 keys (monoid enumeration).
* :func:`balanced_count_kernel`: composition counts over balanced trees.
* :func:`row_hash_kernel`: 64-bit multiply-add hashes of transformation rows (enumeration).
* :func:`backward_sum_kernel`: the samplers' rescaled backward path counts.
* :func:`walk_kernel`: the samplers' letter-by-letter draw along those counts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["fold_kernel", "label_kernels", "probe_kernels", "balanced_count_kernel",
           "row_hash_kernel", "rows_equal_kernel", "candidates_kernel", "backward_sum_kernel",
           "walk_kernel"]

Kernel = Callable[..., Any]  # a numba dispatcher

_FOLD: list[Kernel | None] = []  # [compiled fold or None], filled on first use


def fold_kernel() -> Kernel | None:
    """The numba fold (compiled once per process, cached on disk), or None without numba."""
    if _FOLD:
        return _FOLD[0]
    try:
        import numba
    except ImportError:  # numpy fallback
        _FOLD.append(None)
        return None

    @numba.njit(cache=True, nogil=True)
    def fold8(table: np.ndarray, tokens: np.ndarray, lengths: np.ndarray,
              out: np.ndarray) -> None:  # pragma: no cover - compiled
        W = 8
        e = np.zeros(W, np.int64)
        for s in range(0, tokens.shape[0], W):
            n = min(W, tokens.shape[0] - s)
            longest = 0
            for j in range(n):
                e[j] = 0
                longest = max(longest, lengths[s + j])
            for t in range(longest):
                for j in range(n):  # eight independent chains interleave in the pipeline
                    if t < lengths[s + j]:
                        e[j] = table[e[j], tokens[s + j, t]]
            for j in range(n):
                out[s + j] = e[j]

    _FOLD.append(fold8)
    return fold8


_LABEL: list[tuple[Kernel, Kernel] | None] = []
_label_rows: Kernel | None = None  # the serial labeller, read by the parallel one (see below)


def label_kernels() -> tuple[Kernel, Kernel] | None:
    """``(serial, parallel)`` numba labellers, or None without numba.

    ``serial(flat, mask, tokens, lengths, out, lo, hi) -> (smallest, largest) token`` folds
    strings ``lo..hi-1``; ``parallel(flat, mask, tokens, lengths, out)`` folds all of them in
    blocks of 256 strings on numba's threads. ``flat[e + a]`` is
    the successor of element ``e // S`` by letter ``a``, times S (S = mask + 1 = the table
    width, a power of two >= the alphabet, so that ``a & mask`` keeps every read inside the
    table whatever the token); ``out[i]`` gets the EC of string i. The returned extremes cover
    every position, padding included: the caller checks them against the alphabet and raises.
    Eight strings fold together, their chains in registers, without a length test up to the
    shortest of the eight.
    """
    if _LABEL:
        return _LABEL[0]
    try:
        import numba
    except ImportError:
        _LABEL.append(None)
        return None

    @numba.njit(cache=True, nogil=True)
    def rows(flat: np.ndarray, mask: int, tokens: np.ndarray, lengths: np.ndarray,
             out: np.ndarray, lo: int, hi: int) -> tuple[int, int]:  # pragma: no cover
        T = tokens.shape[1]
        S = mask + 1
        small, big = 0, 0
        s = lo
        while s < hi:
            if s + 8 <= hi:
                n = min(lengths[s], lengths[s + 1], lengths[s + 2], lengths[s + 3],
                        lengths[s + 4], lengths[s + 5], lengths[s + 6], lengths[s + 7])
                e0 = e1 = e2 = e3 = e4 = e5 = e6 = e7 = 0
                lo0 = lo1 = hi0 = hi1 = 0
                for t in range(n):
                    a0, a1, a2, a3 = tokens[s, t], tokens[s + 1, t], tokens[s + 2, t], \
                        tokens[s + 3, t]
                    a4, a5, a6, a7 = tokens[s + 4, t], tokens[s + 5, t], tokens[s + 6, t], \
                        tokens[s + 7, t]
                    hi0 = max(hi0, max(max(a0, a1), max(a2, a3)))
                    hi1 = max(hi1, max(max(a4, a5), max(a6, a7)))
                    lo0 = min(lo0, min(min(a0, a1), min(a2, a3)))
                    lo1 = min(lo1, min(min(a4, a5), min(a6, a7)))
                    e0 = flat[e0 + (a0 & mask)]
                    e1 = flat[e1 + (a1 & mask)]
                    e2 = flat[e2 + (a2 & mask)]
                    e3 = flat[e3 + (a3 & mask)]
                    e4 = flat[e4 + (a4 & mask)]
                    e5 = flat[e5 + (a5 & mask)]
                    e6 = flat[e6 + (a6 & mask)]
                    e7 = flat[e7 + (a7 & mask)]
                small, big = min(small, min(lo0, lo1)), max(big, max(hi0, hi1))
                chains = (e0, e1, e2, e3, e4, e5, e6, e7)
                for j in range(8):
                    e = chains[j]
                    for t in range(n, T):  # the rest of the string, then its padding
                        a = tokens[s + j, t]
                        small, big = min(small, a), max(big, a)
                        if t < lengths[s + j]:
                            e = flat[e + (a & mask)]
                    out[s + j] = e // S
                s += 8
            else:
                e = 0
                for t in range(T):
                    a = tokens[s, t]
                    small, big = min(small, a), max(big, a)
                    if t < lengths[s]:
                        e = flat[e + (a & mask)]
                out[s] = e // S
                s += 1
        return small, big

    # `parallel` calls `rows` through a module global, not a closure: numba's disk cache keys a
    # function by its closure's pickled contents too, and a compiled function pickles
    # differently in every process, so a closure over `rows` missed the cache and recompiled
    # in every process (one cached copy per process had piled up: measured 503)
    global _label_rows
    _label_rows = rows

    @numba.njit(cache=True, nogil=True, parallel=True)
    def parallel(flat: np.ndarray, mask: int, tokens: np.ndarray, lengths: np.ndarray,
                 out: np.ndarray) -> tuple[int, int]:  # pragma: no cover - compiled
        B = tokens.shape[0]
        n_blocks = (B + 255) // 256
        smalls, bigs = np.zeros(n_blocks, np.int64), np.zeros(n_blocks, np.int64)
        for i in numba.prange(n_blocks):
            smalls[i], bigs[i] = _label_rows(flat, mask, tokens, lengths, out, 256 * i,
                                             min(B, 256 * i + 256))
        return smalls.min(), bigs.max()

    _LABEL.append((rows, parallel))
    return _LABEL[0]


_PROBE: list[tuple[Kernel, Kernel] | None] = []


def probe_kernels() -> tuple[Kernel, Kernel] | None:
    """numba kernels for an open-addressing hash table of int64 keys (or None)."""
    if _PROBE:
        return _PROBE[0]
    try:
        import numba
    except ImportError:
        _PROBE.append(None)
        return None

    @numba.njit(cache=True, nogil=True)
    def assign(tab_keys: np.ndarray, tab_vals: np.ndarray, shift: int, keys: np.ndarray,
               start: int, found: np.ndarray, is_new: np.ndarray) -> int:  # pragma: no cover
        mask = tab_keys.shape[0] - 1
        nxt = start
        for i in range(keys.shape[0]):
            key = keys[i]
            slot = np.int64((np.uint64(key) * np.uint64(11400714819323198485)) >> np.uint64(shift))
            while True:
                v = tab_vals[slot]
                if v < 0:  # empty: a new element, numbered in candidate (shortlex) order
                    tab_keys[slot] = key
                    tab_vals[slot] = nxt
                    found[i] = nxt
                    is_new[i] = True
                    nxt += 1
                    break
                if tab_keys[slot] == key:
                    found[i] = v
                    break
                slot = (slot + 1) & mask
        return nxt

    @numba.njit(cache=True, nogil=True)
    def lookup(tab_keys: np.ndarray, tab_vals: np.ndarray, shift: int, keys: np.ndarray,
               found: np.ndarray) -> None:  # pragma: no cover
        mask = tab_keys.shape[0] - 1
        for i in range(keys.shape[0]):
            key = keys[i]
            slot = np.int64((np.uint64(key) * np.uint64(11400714819323198485)) >> np.uint64(shift))
            found[i] = -1
            while tab_vals[slot] >= 0:
                if tab_keys[slot] == key:
                    found[i] = tab_vals[slot]
                    break
                slot = (slot + 1) & mask

    _PROBE.append((assign, lookup))
    return _PROBE[0]


_BALANCED: list[Kernel | None] = []


def balanced_count_kernel() -> Kernel | None:
    """numba kernel: per string, halve the EC buffer level by level and count the pairs."""
    if _BALANCED:
        return _BALANCED[0]
    try:
        import numba
    except ImportError:  # the numpy path below
        _BALANCED.append(None)
        return None

    @numba.njit(cache=True, nogil=True)
    def count(table: np.ndarray, letters: np.ndarray, tokens: np.ndarray, lengths: np.ndarray,
              counts: np.ndarray, both: bool) -> None:  # pragma: no cover - compiled
        M = table.shape[0]
        buf = np.zeros(max(1, 2 * tokens.shape[1]), np.int32)
        for i in range(tokens.shape[0]):
            L = lengths[i]
            width = 1
            while width < L:
                width *= 2
            for t in range(L):
                buf[t] = letters[tokens[i, t]]
            for t in range(L, width):
                buf[t] = 0  # right padding = identity
            level, n = 0, width
            while n > 1:
                level += 1
                half = n // 2
                for j in range(half):
                    left, right = buf[2 * j], buf[2 * j + 1]
                    # the left child holds string: a composition; with identity padding
                    # (`both`) the right child must hold string too
                    if j << level < L and (not both or (2 * j + 1) << (level - 1) < L):
                        counts[level, left * M + right] += 1
                    buf[j] = table[left, right]
                n = half

    _BALANCED.append(count)
    return count


_ROW_HASH: list[Kernel | None] = []


def row_hash_kernel() -> Kernel | None:
    """numba kernel: ``out[i] = sum_j rows[i, j] * mult[j]`` in wrapping int64 arithmetic, the
    same value as numpy's ``(rows.astype(int64) * mult).sum(axis=1)`` without the temporaries."""
    if _ROW_HASH:
        return _ROW_HASH[0]
    try:
        import numba
    except ImportError:
        _ROW_HASH.append(None)
        return None

    @numba.njit(cache=True, nogil=True)
    def row_hash(rows: np.ndarray, mult: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover
        for i in range(rows.shape[0]):
            h = np.int64(0)
            for j in range(rows.shape[1]):
                h += np.int64(rows[i, j]) * mult[j]
            out[i] = h

    _ROW_HASH.append(row_hash)
    return row_hash


_ROWS_EQUAL: list[Kernel | None] = []


def rows_equal_kernel() -> Kernel | None:
    """numba kernel: ``ok[i]`` = ``found[i] < 0 or stored[found[i]] == rows[i]`` (the
    verification of 64-bit row hashes, without gathering the stored rows into a temporary);
    returns whether every ``ok[i]`` holds."""
    if _ROWS_EQUAL:
        return _ROWS_EQUAL[0]
    try:
        import numba
    except ImportError:
        _ROWS_EQUAL.append(None)
        return None

    @numba.njit(cache=True, nogil=True)
    def rows_equal(stored: np.ndarray, found: np.ndarray, rows: np.ndarray,
                   ok: np.ndarray) -> bool:  # pragma: no cover - compiled
        every = True
        for i in range(rows.shape[0]):
            f = found[i]
            ok[i] = True
            if f < 0:
                continue
            diff = 0
            for j in range(rows.shape[1]):  # no early exit inside a row: vectorised
                diff |= stored[f, j] ^ rows[i, j]
            if diff:
                ok[i] = False
                every = False
        return every

    _ROWS_EQUAL.append(rows_equal)
    return rows_equal


_CANDIDATES: list[Kernel | None] = []


def candidates_kernel() -> Kernel | None:
    """numba kernel: ``out[u * k + a] = gens[a][part[u]]``, every product of a frontier row
    ``u`` by a letter ``a`` in one pass (numpy: ``gens[:, part].transpose(1, 0, 2)`` and a copy)."""
    if _CANDIDATES:
        return _CANDIDATES[0]
    try:
        import numba
    except ImportError:
        _CANDIDATES.append(None)
        return None

    @numba.njit(cache=True, nogil=True)
    def candidates(gens: np.ndarray, part: np.ndarray,
                   out: np.ndarray) -> None:  # pragma: no cover - compiled
        k = gens.shape[0]
        for u in range(part.shape[0]):
            for a in range(k):
                g = gens[a]
                row = out[u * k + a]
                for q in range(part.shape[1]):
                    row[q] = g[part[u, q]]

    _CANDIDATES.append(candidates)
    return candidates


_BACKWARD: list[Kernel | None] = []


def backward_sum_kernel() -> Kernel | None:
    """numba kernel: the rescaled backward path counts of :func:`monoidlab.laws.backward_laws`
    (``G[s, v, g] = sum_a G[s-1, table[v, a], g]``, then each ``G[s, :, g]`` divided by its
    maximum), in place and without the (n, k, G) temporary of every step; the same additions
    in the same order as numpy's, so the same bits (tested)."""
    if _BACKWARD:
        return _BACKWARD[0]
    try:
        import numba
    except ImportError:
        _BACKWARD.append(None)
        return None

    @numba.njit(cache=True, nogil=True)
    def backward(table: np.ndarray, G: np.ndarray) -> None:  # pragma: no cover - compiled
        n, k = table.shape
        n_groups = G.shape[2]
        top = np.empty(n_groups)
        for s in range(1, G.shape[0]):
            prev, cur = G[s - 1], G[s]
            for v in range(n):
                row = cur[v]
                src = prev[table[v, 0]]
                for g in range(n_groups):
                    row[g] = src[g]
                for a in range(1, k):
                    src = prev[table[v, a]]
                    for g in range(n_groups):
                        row[g] += src[g]
            for g in range(n_groups):
                top[g] = 0.0
            for v in range(n):
                for g in range(n_groups):
                    if cur[v, g] > top[g]:
                        top[g] = cur[v, g]
            for v in range(n):
                for g in range(n_groups):
                    if top[g] > 0:
                        cur[v, g] = cur[v, g] / top[g]

    _BACKWARD.append(backward)
    return backward


_WALK: list[Kernel | None] = []


def walk_kernel() -> Kernel | None:
    """numba kernel of :func:`monoidlab.laws.draw_walks`: each string letter by letter with
    P(a) ∝ C[remaining, table[node, a], target], from the same uniforms ``u`` (T, B), with the
    same cumulative sums (left to right) and comparisons as the numpy path: the same letters.
    One loop per string instead of a dozen numpy calls on (B, k) arrays per position."""
    if _WALK:
        return _WALK[0]
    try:
        import numba
    except ImportError:
        _WALK.append(None)
        return None

    @numba.njit(cache=True, nogil=True)
    def walk(table: np.ndarray, C: np.ndarray, start: np.ndarray, lengths: np.ndarray,
             targets: np.ndarray, u: np.ndarray, tokens: np.ndarray) -> None:  # pragma: no cover
        k = table.shape[1]
        for b in range(lengths.shape[0]):
            state = start[b]
            L = lengths[b]
            g = targets[b]
            for t in range(L):
                rem = L - t - 1
                total = 0.0
                for a in range(k):
                    total += C[rem, table[state, a], g]
                x = u[t, b] * total
                cum = 0.0
                n = 0
                for a in range(k):
                    cum += C[rem, table[state, a], g]
                    if x >= cum:
                        n += 1
                if n > k - 1:
                    n = k - 1
                tokens[b, t] = n
                state = table[state, n]

    _WALK.append(walk)
    return walk
