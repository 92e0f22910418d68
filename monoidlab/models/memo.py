"""Hash-consed evaluation of balanced trees: every distinct subtree is computed once.

In eval mode a tree node's state depends only on the tokens under it (and on where padding
sits). Over a test batch most low nodes repeat: a binary alphabet has 4 distinct pairs at
level 1, 16 at level 2, 256 at level 3, while those three levels hold 7/8 of all nodes. So the
reduction here carries, per level, a *table* of distinct states and an *id* per node; each
level pairs ids, keeps the distinct pairs (``torch.unique``), and applies the operator to
those only. The result equals the plain level-by-level reduction up to floating-point
summation order (different batch shapes in the matrix products: ~1e-7).

Example
-------
>>> import torch
>>> leaves = torch.tensor([[1.0], [2.0], [0.0]])          # states of tokens 0, 1 and of padding
>>> ids = torch.tensor([[0, 1, 1, 2], [0, 1, 1, 2]])     # two identical strings "011"
>>> tables, level_ids = memo_levels((leaves,), ids, lambda a, b: (a[0] + b[0],))
>>> tables[-1][0][level_ids[-1][:, 0]].flatten().tolist(), tables[1][0].shape[0]
([5.0, 5.0], 2)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch import Tensor

__all__ = ["memo_levels", "memo_roots"]

State = tuple  # a tuple of tensors (N, ...) sharing N: the states of N distinct subtrees


def memo_levels(leaf_table: State, leaf_ids: Tensor,
                combine: Callable[[State, State], State]) -> tuple[list[State], list[Tensor]]:
    """Reduce a balanced buffer level by level over distinct subtrees.

    ``leaf_table``: states of the distinct leaves (a tuple of (V, ...) tensors);
    ``leaf_ids`` (B, M), M a power of two: the table row of every leaf. Returns the table and
    the ids (B, M / 2^k) of every level k = 0 (leaves) .. log2 M.
    """
    import torch

    tables, ids = [leaf_table], [leaf_ids]
    table, cur = leaf_table, leaf_ids
    while cur.shape[1] > 1:
        n = table[0].shape[0]
        key = cur[:, 0::2] * n + cur[:, 1::2]  # one int per (left, right) pair of ids
        uniq, inverse = torch.unique(key, return_inverse=True)
        left, right = uniq // n, uniq % n
        table = combine(tuple(t[left] for t in table), tuple(t[right] for t in table))
        cur = inverse
        tables.append(table)
        ids.append(cur)
    return tables, ids


def memo_roots(leaf_table: State, leaf_ids: Tensor, tops: Tensor,
               combine: Callable[[State, State], State]) -> State:
    """The state of each string's root: level ``tops[b]`` (ceil log2 of its length), node 0."""
    import torch

    tables, ids = memo_levels(leaf_table, leaf_ids, combine)
    out = [torch.empty((len(tops), *t.shape[1:]), dtype=t.dtype, device=t.device)
           for t in leaf_table]
    for k, (table, cur) in enumerate(zip(tables, ids)):
        rows = torch.nonzero(tops == k, as_tuple=True)[0]
        if len(rows):
            pick = cur[rows, 0]
            for o, t in zip(out, table):
                o[rows] = t[pick]
    return tuple(out)
