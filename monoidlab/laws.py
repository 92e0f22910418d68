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

Used by the samplers (path counts), exact coverage (prefix and suffix laws), the sub-language
length checks and the EC-stratified sampler. See docs/coverage.md.

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

__all__ = ["forward_laws", "backward_laws"]


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
    for s in range(1, max_len + 1):
        nxt = G[s - 1][table]  # (n, k, ...)
        # rescaled laws are path counts (sum over letters) divided by their maximum
        nxt = nxt.max(axis=1) if indicator else nxt.sum(axis=1) if rescale else nxt.mean(axis=1)
        if rescale:
            scale = nxt.max(axis=0)
            nxt = nxt / np.where(scale > 0, scale, 1.0)
        G[s] = nxt
    return G
