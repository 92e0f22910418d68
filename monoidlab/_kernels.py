"""numba kernels (compiled once per process, cached on disk), each with a numpy fallback.

numba comes with umap-learn; without it every getter returns None and the callers take their
numpy paths (slower, same results, tested).

* :func:`fold_kernel`: fold strings over a transition table (automaton runs, EC labelling).
* :func:`probe_kernels`: an open-addressing hash table of int64 keys (monoid enumeration).
* :func:`balanced_count_kernel`: composition counts over balanced trees.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["fold_kernel", "probe_kernels", "balanced_count_kernel"]

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
