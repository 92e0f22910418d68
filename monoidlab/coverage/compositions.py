"""EC labels of every tree node, and composition counts from sampled strings.

For a batch and a schedule (:mod:`monoidlab.strings.schedules`), every internal node combines a left part
and a right part; its *composition* is the pair (EC(left), EC(right)) and its EC is their
product. Labels are computed stage by stage through the multiplication table, vectorised over
all strings of one length (and offset) at once.

Example
-------
>>> import monoidlab as ml
>>> lang = ml.load_language("parity")
>>> t, n = lang.encode(["1101"])
>>> lab = node_labels(lang.monoid(), t, n, "balanced")
>>> lab.left.tolist(), lab.right.tolist(), lab.node.tolist()
([1, 0, 0], [1, 1, 1], [0, 1, 1])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from monoidlab._checks import check_count
from monoidlab._kernels import balanced_count_kernel
from monoidlab._util import check_batch, length_mask
from monoidlab.errors import InputError
from monoidlab.geometry import Padding, buffer_size
from monoidlab.strings.schedules import Schedule, check_schedule
from monoidlab.strings.schedules import schedule as get_schedule

if TYPE_CHECKING:
    import pandas

    from monoidlab.algebra.monoid import SyntacticMonoid

__all__ = ["NodeLabels", "node_labels", "composition_counts"]


@dataclass
class NodeLabels:
    """One row per (string, internal node), in the schedule's node order per string.

    ``left``/``right``/``node`` are ECs; ``has_composition`` is False for nodes whose children
    are both padding (they carry no composition; their EC is the identity);
    ``left_length``/``right_length`` count the string symbols under each child (0: padding).
    """

    string: np.ndarray
    node_index: np.ndarray
    level: np.ndarray
    stage: np.ndarray
    span: np.ndarray  # (R, 2) string interval of the node
    left: np.ndarray
    right: np.ndarray
    node: np.ndarray
    has_composition: np.ndarray
    left_length: np.ndarray
    right_length: np.ndarray

    def __len__(self) -> int:
        return len(self.string)

    def to_frame(self) -> pandas.DataFrame:
        import pandas as pd

        return pd.DataFrame({"string": self.string, "node_index": self.node_index,
                             "level": self.level, "stage": self.stage,
                             "span_start": self.span[:, 0], "span_end": self.span[:, 1],
                             "left_ec": self.left, "right_ec": self.right, "node_ec": self.node,
                             "has_composition": self.has_composition,
                             "left_length": self.left_length, "right_length": self.right_length})

    def composes(self, padding: Padding | str = Padding.LEARNED) -> np.ndarray:
        """Which rows are compositions: both children padding never; one child padding only
        with ``learned`` padding (with ``identity`` padding such a node passes the other child
        through)."""
        if Padding.parse(padding) is Padding.IDENTITY:
            return (self.left_length > 0) & (self.right_length > 0)
        return self.has_composition


def _check(monoid: SyntacticMonoid, tokens: ArrayLike, lengths: ArrayLike,
           offsets: ArrayLike | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    tokens, lengths = check_batch(tokens, lengths, monoid.n_symbols, monoid.automaton.name,
                                  min_length=1)  # every string needs a tree
    if offsets is None:
        offsets = np.zeros(len(lengths), np.int64)
    else:
        offsets = np.asarray(offsets)
        if offsets.size and (offsets.dtype == bool or not np.issubdtype(offsets.dtype, np.integer)):
            raise InputError(f"offsets must be non-negative integers, one per string; got "
                             f"{offsets.dtype}")
        offsets = offsets.astype(np.int64)
    if offsets.shape != lengths.shape or (offsets.size and offsets.min() < 0):
        raise InputError(f"offsets must be non-negative, one per string; got shape {offsets.shape}")
    return tokens, lengths, offsets


def _monoid(monoid: Any) -> SyntacticMonoid:
    """The monoid itself, or the monoid of a language (an Automaton or a suite name)."""
    from monoidlab.algebra.languages import as_monoid

    return as_monoid(monoid, "monoid")


def _group_values(monoid: SyntacticMonoid, tokens: np.ndarray, idx: np.ndarray,
                  sched: Schedule) -> np.ndarray:
    """EC of every leaf and node (ids as in ``sched``) for the strings ``idx`` of one length."""
    table = monoid.table
    L, off = sched.length, sched.offset
    vals = np.zeros((len(idx), sched.buffer + sched.n_nodes), np.int64)  # padding = identity 0
    vals[:, off: off + L] = monoid.letters[tokens[idx, :L]]
    for s in range(1, sched.n_stages + 1):
        sl = sched.stage_slice(s)
        ids = sched.buffer + np.arange(sl.start, sl.stop)
        vals[:, ids] = table[vals[:, sched.left_child[sl]], vals[:, sched.right_child[sl]]]
    return vals


def node_labels(monoid: SyntacticMonoid, tokens: ArrayLike, lengths: ArrayLike,
                schedule: str = "balanced", offsets: ArrayLike | None = None) -> NodeLabels:
    """EC and composition of every internal node of every string (see module docstring);
    ``monoid`` may also be a language (an Automaton or a suite name)."""
    monoid = _monoid(monoid)
    check_schedule(schedule)
    tokens, lengths, offsets = _check(monoid, tokens, lengths, offsets)
    parts = []
    keys = np.stack([lengths, offsets], axis=1)
    for L, off in np.unique(keys, axis=0):
        idx = np.flatnonzero((lengths == L) & (offsets == off))
        sched = get_schedule(schedule, int(L), int(off))
        if not sched.n_nodes:
            continue
        vals = _group_values(monoid, tokens, idx, sched)
        N = sched.n_nodes
        m1 = sched.left_span[:, 1] - sched.left_span[:, 0]
        m2 = sched.right_span[:, 1] - sched.right_span[:, 0]
        parts.append(dict(left_length=np.tile(m1, len(idx)), right_length=np.tile(m2, len(idx)),
            string=np.repeat(idx, N), node_index=np.tile(np.arange(N), len(idx)),
            level=np.tile(sched.level, len(idx)), stage=np.tile(sched.stage, len(idx)),
            span=np.tile(sched.span, (len(idx), 1)),
            left=vals[:, sched.left_child].ravel(), right=vals[:, sched.right_child].ravel(),
            node=vals[:, sched.buffer:].ravel(),
            has_composition=np.tile((m1 + m2) > 0, len(idx))))
    if not parts:
        z = np.zeros(0, np.int64)
        return NodeLabels(z, z, z, z, np.zeros((0, 2), np.int64), z, z, z, z.astype(bool), z, z)
    cat = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    order = np.lexsort((cat["node_index"], cat["string"]))
    return NodeLabels(**{k: v[order] for k, v in cat.items()})


def composition_counts(monoid: SyntacticMonoid, tokens: ArrayLike, lengths: ArrayLike,
                       schedule: str = "balanced", offsets: ArrayLike | None = None,
                       per_level: bool = False, chunk: int = 20_000,
                       padding: Padding | str = Padding.LEARNED) -> np.ndarray:
    """Observed composition counts over a batch: ``(|M|, |M|)`` (or per level ``(levels, |M|, |M|)``).

    Nodes without a composition (both children padding; with ``padding="identity"`` also one
    child padding) are not counted. The ``balanced`` schedule without offsets takes a fast
    path: the buffer of each chunk of strings is halved level by level with strided views, no
    schedule objects involved. ``monoid`` may also be a language (an Automaton or a suite name).
    """
    monoid = _monoid(monoid)
    check_schedule(schedule)
    chunk = check_count(chunk, "chunk")
    both = Padding.parse(padding) is Padding.IDENTITY
    tokens, lengths, offsets = _check(monoid, tokens, lengths, offsets)
    M = monoid.size
    n_levels = int(np.ceil(np.log2(max(int((lengths + offsets).max(initial=1)), 1)))) + 1
    counts: np.ndarray = np.zeros((n_levels, M * M), np.int64)
    kernel = balanced_count_kernel() if schedule == "balanced" and not offsets.any() else None
    if kernel is not None and len(lengths):
        table = monoid.table.astype(np.int32)
        kernel(table, monoid.letters.astype(np.int32), np.ascontiguousarray(tokens),
               lengths.astype(np.int64), counts, both)
    elif schedule == "balanced" and not offsets.any():
        flat = monoid.table.astype(np.int32 if M * M < 2**31 else np.int64).ravel()
        letters = monoid.letters.astype(flat.dtype)
        for s in range(0, len(lengths), chunk):
            tok, lens = tokens[s: s + chunk], lengths[s: s + chunk]
            T = int(lens.max(initial=1))
            buf = buffer_size(T)
            vals = np.zeros((len(lens), buf), flat.dtype)
            height = np.ceil(np.log2(np.maximum(lens, 1)))
            valid = length_mask(lens, T)
            vals[:, :T] = np.where(valid, letters[tok[:, :T]], 0)
            level, width = 0, 1
            while vals.shape[1] > 1:
                level += 1
                left, right = vals[:, 0::2], vals[:, 1::2]
                # a node has a composition when its left child (its first cell) holds string
                start = np.arange(left.shape[1]) * 2 * width
                has = start[None, :] < lens[:, None]
                if both:  # identity padding: the right child must hold string too
                    has &= (start + width)[None, :] < lens[:, None]
                # a string's own tree has ceil(log2 L) levels; above that the chunk's wider
                # buffer only pairs its root with padding
                has &= level <= height[:, None]
                codes = left[has].astype(np.int64) * M + right[has]
                counts[level] += np.bincount(codes, minlength=M * M)
                vals = flat[left.astype(np.int64) * M + right]
                width *= 2
    else:
        lab = node_labels(monoid, tokens, lengths, schedule, offsets)
        keep = lab.composes(padding)
        n_levels = int(lab.level.max(initial=0)) + 1
        counts = np.zeros((n_levels, M * M), np.int64)
        codes = lab.left[keep] * M + lab.right[keep]
        np.add.at(counts, (lab.level[keep], codes), 1)
    counts = counts.reshape(n_levels, M, M)
    return counts if per_level else counts.sum(axis=0)
