"""Reduction schedules: which pairs a tree model combines, in which order, over which spans.

A *schedule* fixes, for one string length ``L``, the binary tree (or, for ``scan``, the shared
forest of prefix trees) that a model reduces. Coverage (which EC compositions training strings
produce), the tree models and the probes all read the same :class:`Schedule`, so they agree on
what "node i" means.

Three schedules (definitions in docs/schedules.md):

* ``balanced`` (MLP-LDRU): the string sits at positions ``[offset, offset + L)`` of a buffer of
  ``M = 2**ceil(log2(offset + L))`` leaves, the rest is padding (the identity); pairs
  ``(0,1), (2,3), ...`` are combined level by level up to one root.
* ``scan`` (PR-LSTM): the exact recursion of ``jax.lax.associative_scan``; every prefix has a
  node (``prefix_roots``). No padding.
* ``chain`` (RNN/LSTM): the left fold ``((x1.x2).x3)...``.

Node ids and order
------------------
Leaves are ids ``0 .. buffer-1`` (buffer positions; for ``scan``/``chain`` buffer = L and
position = string position). Internal node ``i`` (``0 <= i < N``) has id ``buffer + i``.
Nodes are listed bottom-up by *stage* (parallel step, 1-based); the nodes of one stage are
contiguous, and every child comes before its parent, so a model can evaluate the nodes stage
by stage with one batched call each (``Schedule.stage_slice``).

* ``balanced``: stage = level; within a level, left to right.
* ``scan``: the order in which ``jax.lax.associative_scan`` evaluates its ``combine`` calls:
  the pairing steps of recursion depths 0, 1, ..., then the "even" steps from the deepest
  depth back to depth 0; empty steps are skipped. Within a step, left to right.
* ``chain``: node i = fold of x1..x_{i+2}, one node per stage.

Spans are half-open intervals in *string* positions ``0..L``. An all-padding subtree has an
empty span, written ``(0, 0)`` when it lies left of the string (``offset`` padding) and
``(L, L)`` when it lies right of it (the span clipped to ``[0, L]``).

Example
-------
>>> s = schedule("balanced", 5)
>>> s.buffer, s.n_nodes, render(s)
(8, 7, '(((x1.x2).(x3.x4)).((x5.∅).(∅.∅)))')
>>> render(schedule("scan", 5), schedule("scan", 5).prefix_roots[4])
'(((x1.x2).(x3.x4)).x5)'
>>> schedule("chain", 3).span.tolist()
[[0, 2], [0, 3]]
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from monoidlab.errors import InputError, UnknownName
from monoidlab.geometry import buffer_size

__all__ = ["SCHEDULES", "Schedule", "schedule", "render", "node_index_map", "check_schedule"]

SCHEDULES = ("balanced", "scan", "chain")
PAD = "∅"


@dataclass(frozen=True, eq=False)
class Schedule:
    """The internal nodes of one reduction, as read-only numpy arrays over N nodes.

    Attributes
    ----------
    name, length, offset : the schedule name, the string length L and its left offset.
    buffer : number of leaves (= L for ``scan``/``chain``; a power of two for ``balanced``).
    level : (N,) height above the leaves (1 = both children are leaves).
    stage : (N,) parallel step, 1-based, non-decreasing along the node order.
    left_child, right_child : (N,) ids in ``[leaves 0..buffer-1, nodes buffer..buffer+N-1]``.
    left_span, right_span, span : (N, 2) half-open string intervals (span = union).
    cover : (N, 2) half-open interval of *buffer* positions under the node (unique per node).
    leaf_span : (buffer, 2) string interval of each leaf (empty for padding leaves).
    padding_leaf : (buffer,) True where the leaf's string position is outside ``[0, L)``.
    root : id of the node (or leaf, when N = 0) holding the whole string.
    prefix_roots : (L,) for ``scan`` and ``chain``: id holding the prefix of length t+1;
        ``None`` for ``balanced``.
    """

    name: str
    length: int
    offset: int
    buffer: int
    level: np.ndarray
    stage: np.ndarray
    left_child: np.ndarray
    right_child: np.ndarray
    left_span: np.ndarray
    right_span: np.ndarray
    span: np.ndarray
    cover: np.ndarray
    leaf_span: np.ndarray
    padding_leaf: np.ndarray
    root: int
    prefix_roots: np.ndarray | None

    @property
    def n_nodes(self) -> int:
        return int(self.level.shape[0])

    @property
    def n_stages(self) -> int:
        return int(self.stage[-1]) if self.n_nodes else 0

    @property
    def n_levels(self) -> int:
        """Height of the tallest node (0 when the string is a single leaf)."""
        return int(self.level.max()) if self.n_nodes else 0

    def stage_slice(self, stage: int) -> slice:
        """Node indices (not ids) of one stage, a contiguous slice."""
        lo, hi = np.searchsorted(self.stage, [stage, stage + 1])
        return slice(int(lo), int(hi))

    def __repr__(self) -> str:
        return (
            f"Schedule({self.name!r}, length={self.length}, offset={self.offset}, "
            f"buffer={self.buffer}, nodes={self.n_nodes}, stages={self.n_stages})"
        )


def schedule(name: str, length: int, offset: int = 0) -> Schedule:
    """The schedule ``name`` for strings of length ``length`` (cached, read-only arrays).

    ``offset`` (only for ``balanced``) puts the string at buffer positions
    ``[offset, offset + length)``, with padding on both sides ("pad_offset" training).

    >>> schedule("balanced", 6, offset=3).buffer
    16
    >>> schedule("scan", 1).n_nodes, schedule("scan", 1).root
    (0, 0)
    """
    check_schedule(name)
    length = _as_int(length, "length")
    offset = _as_int(offset, "offset")
    if length < 1:
        raise InputError(f"length must be >= 1, got {length}")
    if offset < 0:
        raise InputError(f"offset must be >= 0, got {offset}")
    if offset and name != "balanced":
        raise InputError(f"offset is only defined for the balanced schedule, not {name!r}")
    return _schedule(name, length, offset)


def check_schedule(name: Any) -> str:
    """``name`` itself when it names a schedule; :class:`~monoidlab.errors.UnknownName`
    listing them otherwise.

    >>> check_schedule("scan")
    'scan'
    """
    if not isinstance(name, str) or name not in SCHEDULES:
        raise UnknownName(f"unknown schedule {name!r}; expected one of {', '.join(SCHEDULES)}")
    return name


def _as_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{what} must be an int, got {value!r}")
    return int(value)


@functools.lru_cache(maxsize=4096)
def _schedule(name: str, length: int, offset: int) -> Schedule:
    if name == "balanced":
        buffer = buffer_size(offset + length)
        lefts, rights, stages, root = _balanced_nodes(buffer)
        prefix = None
    elif name == "scan":
        buffer = length
        lefts, rights, stages, prefix = _scan_nodes(length)
        root = prefix[-1]
    else:
        buffer = length
        lefts, rights, stages, prefix = _chain_nodes(length)
        root = prefix[-1]
    return _assemble(name, length, offset, buffer, lefts, rights, stages, root, prefix)


def _balanced_nodes(buffer: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Pair (0,1),(2,3),... level by level; level k's nodes are stage k, left to right."""
    lefts, rights, stages = [], [], []
    below = np.arange(buffer)  # ids of the level underneath
    next_id, level = buffer, 0
    while below.size > 1:
        level += 1
        lefts.append(below[0::2])
        rights.append(below[1::2])
        stages.append(np.full(below.size // 2, level))
        below = np.arange(next_id, next_id + below.size // 2)
        next_id += below.size
    return _cat(lefts), _cat(rights), _cat(stages), int(below[0])


def _scan_nodes(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``jax.lax.associative_scan``'s recursion, literally, over symbolic node ids."""
    lefts: list[int] = []
    rights: list[int] = []
    stages: list[int] = []
    n_stages = 0

    def combine(xs: list[int], ys: list[int]) -> list[int]:
        # one vectorised call of `combine` in jax = one stage (skipped when empty)
        nonlocal n_stages
        pairs = list(zip(xs, ys, strict=True))
        if not pairs:
            return []
        n_stages += 1
        ids = list(range(n + len(lefts), n + len(lefts) + len(pairs)))
        for x, y in pairs:
            lefts.append(x)
            rights.append(y)
            stages.append(n_stages)
        return ids

    def scan(elems: list[int]) -> list[int]:
        if len(elems) < 2:
            return list(elems)
        reduced = combine(elems[0:-1:2], elems[1::2])
        odd = scan(reduced)
        if len(elems) % 2 == 0:
            even = combine(odd[:-1], elems[2::2])
        else:
            even = combine(odd, elems[2::2])
        even = [elems[0]] + even
        out = [0] * len(elems)
        out[0::2] = even
        out[1::2] = odd
        return out

    prefix = scan(list(range(n)))
    return np.array(lefts, int), np.array(rights, int), np.array(stages, int), np.array(prefix)


def _chain_nodes(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    # node i = (node i-1 or leaf 0) . leaf i+1, one node per stage
    lefts = np.array([0] + list(range(n, 2 * n - 2)), int)[: n - 1]
    rights = np.arange(1, n)
    prefix = np.array([0] + list(range(n, 2 * n - 1)), int)
    return lefts, rights, np.arange(1, n), prefix


def _cat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts).astype(int) if parts else np.zeros(0, int)


def _assemble(name: str, length: int, offset: int, buffer: int, lefts: np.ndarray,
              rights: np.ndarray, stages: np.ndarray, root: int,
              prefix: np.ndarray | None) -> Schedule:
    n = len(lefts)
    pos = np.arange(buffer)
    leaf_cover = np.stack([pos, pos + 1], axis=1)
    level = np.zeros(buffer + n, int)
    cover = np.concatenate([leaf_cover, np.zeros((n, 2), int)])
    # Children always precede parents, but a stage's nodes depend only on earlier stages:
    # compute level and cover one stage at a time, vectorised.
    for s in np.unique(stages):
        idx = np.nonzero(stages == s)[0]
        ids = buffer + idx
        level[ids] = 1 + np.maximum(level[lefts[idx]], level[rights[idx]])
        cover[ids, 0] = cover[lefts[idx], 0]
        cover[ids, 1] = cover[rights[idx], 1]
    # string interval = buffer interval shifted by the offset and clipped to [0, L]
    spans = np.clip(cover - offset, 0, length)
    arrays = dict(
        level=level[buffer:],
        stage=np.asarray(stages, int),
        left_child=np.asarray(lefts, int),
        right_child=np.asarray(rights, int),
        left_span=spans[lefts],
        right_span=spans[rights],
        span=spans[buffer:],
        cover=cover[buffer:],
        leaf_span=spans[:buffer],
        padding_leaf=(pos < offset) | (pos >= offset + length),
        prefix_roots=None if prefix is None else np.asarray(prefix, int),
    )
    for a in arrays.values():
        if a is not None:
            a.setflags(write=False)  # shared through the cache
    return Schedule(name=name, length=length, offset=offset, buffer=buffer, root=int(root),
                    **arrays)


def render(sched: Schedule, node: int | None = None) -> str:
    """Bracket string of the subtree under ``node`` (an id; default the root).

    Leaves are ``x1, x2, ...`` (1-based string positions) and ``∅`` for padding.

    >>> render(schedule("chain", 3))
    '((x1.x2).x3)'
    >>> render(schedule("balanced", 2, offset=1))
    '((∅.x1).(x2.∅))'
    """
    node = sched.root if node is None else int(node)
    if not 0 <= node < sched.buffer + sched.n_nodes:
        raise InputError(f"node id {node} out of range for {sched!r}")
    # iterative post-order: chain trees are as deep as the string is long
    out: dict[int, str] = {}
    stack = [node]
    while stack:
        v = stack[-1]
        if v < sched.buffer:
            out[v] = PAD if sched.padding_leaf[v] else f"x{v - sched.offset + 1}"
            stack.pop()
            continue
        a, b = sched.left_child[v - sched.buffer], sched.right_child[v - sched.buffer]
        todo = [c for c in (a, b) if c not in out]
        if todo:
            stack.extend(todo)
        else:
            out[v] = f"({out[a]}.{out[b]})"
            stack.pop()
    return out[node]


@functools.lru_cache(maxsize=4096)
def _index_map(small_key: tuple, big_key: tuple) -> np.ndarray:
    small, big = _schedule(*small_key), _schedule(*big_key)
    where = {(int(a), int(b)): i for i, (a, b) in enumerate(big.cover)}
    try:
        idx = np.array([where[(int(a), int(b))] for a, b in small.cover], dtype=np.int64)
    except KeyError:
        raise InputError(f"{small!r} is not contained in {big!r}") from None
    idx.setflags(write=False)
    return idx


def node_index_map(small: Schedule, big: Schedule) -> np.ndarray:
    """For each node of ``small``, the index of the node of ``big`` over the same buffer cells.

    Used by the models to read one string's nodes out of a batch computed for a longer
    buffer: a ``balanced`` tree nests in any larger power-of-two buffer (same level and
    position), and a ``scan`` over L elements computes a subset of a scan over more.

    >>> node_index_map(schedule("balanced", 3), schedule("balanced", 8)).tolist()
    [0, 1, 4]
    """
    if small.name != big.name:
        raise InputError(f"cannot map a {small.name!r} schedule into a {big.name!r} one")
    return _index_map((small.name, small.length, small.offset), (big.name, big.length, big.offset))
