"""Length recursions over a transition table, written once: where do uniform letters lead?

A *table* maps ``(node, letter) -> node``: an automaton's ``delta`` (nodes = states) or a
monoid's right Cayley table (nodes = ECs). Two recursions over the length cover every use:

* :func:`forward_laws`: ``P[m, v]`` = probability that m uniform letters from ``start`` end in
  node v (``P[m] = P[m-1]`` pushed through the table, averaged over letters). For a monoid
  from the identity this is the EC law of a uniform word of length m; ``indicator=True``
  gives 0/1 reachability instead (exact where probabilities underflow).
* :func:`backward_laws`: ``G[s, v, ...]`` = probability that s uniform letters lead v into a
  node marked by ``final`` (``G[s] = mean over letters of G[s-1][table]``). ``final`` may
  carry group columns (one per class or target); ``rescale=True`` divides each ``G[s, :, g]``
  by its maximum (only ratios matter for sampling, and lengths in the thousands stay finite).

The ``scaled_*`` variants keep every step at maximum 1 and return the log of the scale
factors, so laws far below 1e-300 (long strings of a rare class) stay comparable across
lengths; :func:`draw_walks` draws strings letter by letter from backward laws.

Used by the samplers (path counts), the near-miss sampler, exact coverage (prefix and suffix
laws), the sub-language length checks and the EC-stratified sampler. See docs/coverage.md.

Example
-------
>>> import numpy as np
>>> parity = np.array([[0, 1], [1, 0]])
>>> forward_laws(parity, 0, 2).tolist()
[[1.0, 0.0], [0.5, 0.5], [0.5, 0.5]]
>>> backward_laws(parity, np.array([1.0, 0.0]), 1).tolist()   # P(even after one more letter)
[[1.0, 0.0], [0.5, 0.5]]
"""

from __future__ import annotations

import numpy as np

__all__ = ["forward_laws", "backward_laws", "scaled_forward_laws", "scaled_backward_laws",
           "draw_walks"]


def forward_laws(table: np.ndarray, start: int | np.ndarray, max_len: int,
                 indicator: bool = False) -> np.ndarray:
    """``P[m, v]`` for m = 0..max_len: law (or 0/1 reachability) of the node reached from
    ``start`` (a node index, or an initial law over nodes) after m uniform letters."""
    table = np.asarray(table, np.int64)
    n, k = table.shape
    P = np.zeros((max_len + 1, n))
    if np.ndim(start) == 0:
        P[0, int(start)] = 1.0
    else:
        P[0] = np.asarray(start, float)
    dst = table.ravel()
    for m in range(1, max_len + 1):
        nxt = np.bincount(dst, weights=np.repeat(P[m - 1], k), minlength=n)
        P[m] = (nxt > 0) if indicator else nxt / k
    return P


def backward_laws(table: np.ndarray, final: np.ndarray, max_len: int, indicator: bool = False,
                  rescale: bool = False) -> np.ndarray:
    """``G[s, v, ...]`` for s = 0..max_len: probability (or 0/1 possibility) that s uniform
    letters lead node v into ``final`` (shape (n,) or (n, G), weights or 0/1 marks).

    ``rescale`` divides every ``G[s, :, g]`` by its maximum: the ratios between nodes (all a
    sampler needs) stay exact while absolute values would underflow at long lengths.
    """
    table = np.asarray(table, np.int64)
    final = np.asarray(final, float)
    G = np.zeros((max_len + 1, *final.shape))
    G[0] = final
    if rescale and not indicator and final.ndim == 2 and table.shape[1] and USE_KERNEL:
        from monoidlab._kernels import backward_sum_kernel

        kernel = backward_sum_kernel()
        if kernel is not None:  # the same sums in the same order, no (n, k, G) temporaries
            kernel(np.ascontiguousarray(table), G)
            return G
    for s in range(1, max_len + 1):
        nxt = G[s - 1][table]  # (n, k, ...)
        # rescaled laws are path counts (sum over letters) divided by their maximum
        nxt = nxt.max(axis=1) if indicator else nxt.sum(axis=1) if rescale else nxt.mean(axis=1)
        if rescale:
            scale = nxt.max(axis=0)
            nxt = nxt / np.where(scale > 0, scale, 1.0)
        G[s] = nxt
    return G


#: the compiled paths of :func:`backward_laws` (rescaled counts) and :func:`draw_walks` are
#: taken when numba is there; tests set this False to compare them with the numpy paths
USE_KERNEL = True


def scaled_forward_laws(table: np.ndarray, start: int | np.ndarray,
                        max_len: int) -> tuple[np.ndarray, np.ndarray]:
    """``(P_hat, log_scale)`` with ``P[m] = P_hat[m] * exp(log_scale[m])`` (no underflow).

    >>> p, s = scaled_forward_laws(np.array([[0, 1], [1, 0]]), 0, 3)
    >>> np.allclose(p * np.exp(s)[:, None], forward_laws(np.array([[0, 1], [1, 0]]), 0, 3))
    True
    """
    table = np.asarray(table, np.int64)
    n, k = table.shape
    P = np.zeros((max_len + 1, n))
    log_scale = np.zeros(max_len + 1)
    if np.ndim(start) == 0:
        P[0, int(start)] = 1.0
    else:
        P[0] = np.asarray(start, float)
    dst = table.ravel()
    for m in range(1, max_len + 1):
        nxt = np.bincount(dst, weights=np.repeat(P[m - 1], k), minlength=n) / k
        top = nxt.max()
        scale = top if top > 0 else 1.0
        P[m] = nxt / scale
        log_scale[m] = log_scale[m - 1] + np.log(scale)
    return P, log_scale


def scaled_backward_laws(table: np.ndarray, final: np.ndarray,
                         max_len: int) -> tuple[np.ndarray, np.ndarray]:
    """``(G_hat, log_scale)``: :func:`backward_laws` (probabilities, mean over letters) with
    each column ``G[s, :, g]`` scaled to maximum 1; ``G[s, :, g] = G_hat[s, :, g] *
    exp(log_scale[s, g])``. ``final`` is (n,) or (n, G); ``log_scale`` is (max_len + 1,) or
    (max_len + 1, G) accordingly."""
    table = np.asarray(table, np.int64)
    final = np.asarray(final, float)
    G = np.zeros((max_len + 1, *final.shape))
    log_scale = np.zeros((max_len + 1, *final.shape[1:]))
    G[0] = final
    for s in range(1, max_len + 1):
        nxt = G[s - 1][table].mean(axis=1)
        top = nxt.max(axis=0)
        scale = np.where(top > 0, top, 1.0)
        G[s] = nxt / scale
        log_scale[s] = log_scale[s - 1] + np.log(scale)
    return G, log_scale


def draw_walks(rng: np.random.Generator, table: np.ndarray, C: np.ndarray,
               start: int | np.ndarray, lengths: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Draw each string letter by letter with P(a) ∝ C[remaining, table[node, a], target].

    ``C`` are backward laws (path counts, any per-(length, target) scale) towards the target
    groups; ``start`` is one node or a node per string. Returns tokens (B, max length),
    0 past each length. Every string is uniform among the strings of its length that lead
    its start into its target group.
    """
    table = np.asarray(table, np.int64)
    B, T = len(lengths), int(lengths.max(initial=0))
    tokens = np.zeros((B, T), np.int64)
    state = np.broadcast_to(np.asarray(start, np.int64), (B,)).copy()
    k = table.shape[1]
    u = rng.random((T, B))
    C = np.asarray(C)
    goal = np.ascontiguousarray(np.broadcast_to(targets, (B,)), np.int64)
    # the kernel does not check bounds: only shapes the numpy path would index without error
    if (USE_KERNEL and B and k and C.dtype == np.float64 and C.ndim == 3 and T <= len(C)
            and 0 <= goal.min() and goal.max() < C.shape[2]):
        from monoidlab._kernels import walk_kernel

        kernel = walk_kernel()
        if kernel is not None:  # the same sums and comparisons, one loop per string
            kernel(np.ascontiguousarray(table), C, state,
                   np.ascontiguousarray(lengths, np.int64), goal, u, tokens)
            return tokens
    for t in range(T):
        active = lengths > t
        rem = np.where(active, lengths - t - 1, 0)
        w = C[rem[:, None], table[state], targets[:, None]]  # (B, k)
        cum = np.cumsum(w, axis=1)
        tot = cum[:, -1]
        a = (u[t][:, None] * tot[:, None] >= cum).sum(axis=1)
        a = np.minimum(a, k - 1)
        tokens[:, t] = np.where(active, a, 0)
        state = np.where(active, table[state, a], state)
    return tokens
