"""A finite tree model as plain tables: what a depth-exact model *is* at evaluation.

A model whose node states are finite codes (the snapped MLP-LDRU, the transformation tree
model, or the syntactic monoid itself) reduces a string over the balanced tree by table
look-ups only: ``leaf[letter]`` gives a letter's code, ``table[i, j]`` the code of a node
whose children hold codes i and j, ``head[i]`` the class read at a root holding code i.
Padding follows the model's layout: under ``identity`` padding a node with an all-padding
child is its other child; under ``learned`` padding the padding leaf has its own code
``pad_leaf`` and an all-padding node at level k is ``table`` applied to two all-padding nodes
of level k − 1. A prefix-scan model (the snapped PR-LSTM) has ``layout="scan"`` instead: no
padding, and a string's root is the left fold, most significant first, of the balanced trees
of the aligned blocks of its length's binary expansion (length 7: ((B₄ · B₂) · B₁)).

:meth:`FiniteTable.fold` evaluates strings this way, as integer gathers over the balanced tree,
vectorised over the batch (no torch, no Python loop per symbol); :func:`monoid_table` builds the
exact model of a language from its syntactic monoid (the reference every certificate test
starts from). :mod:`monoidlab.evaluation.certificate` decides whether a table is correct at every
length.

Example
-------
>>> import monoidlab as ml
>>> lang = ml.load_language("parity")
>>> exact = monoid_table(lang)
>>> exact.n_codes, exact.leaf.tolist(), exact.head.tolist()
(2, [0, 1], [0, 1])
>>> tokens, lengths = lang.encode(["0110", "1", "111"])
>>> exact.fold(tokens, lengths).tolist()
[0, 1, 1]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from monoidlab.errors import InputError
from monoidlab.geometry import Padding, buffer_size

__all__ = ["FiniteTable", "monoid_table", "LAYOUTS"]

#: how a table is folded over a string: the balanced tree (MLP-LDRU, the transformation tree)
#: or the prefix scan's left fold of aligned blocks (PR-LSTM)
LAYOUTS = ("balanced", "scan")


@dataclass(frozen=True)
class FiniteTable:
    """A finite magma with a class per element, laid out as a balanced-tree model.

    leaf : (V,) ints, the code of each letter (token 0..V-1).
    table : (k, k) ints, ``table[i, j]`` the code of a node with left child i, right child j.
    head : (k,) ints, the class read at a root holding each code.
    padding : :class:`~monoidlab.geometry.Padding` (``identity`` or ``learned``).
    pad_leaf : under learned padding, the code of the padding leaf (None under identity).
    names : optional, one label per code (e.g. the transformation a code stands for).
    layout : ``"balanced"`` (default) or ``"scan"`` (no padding, no offsets; see the module
        docstring).
    """

    leaf: np.ndarray
    table: np.ndarray
    head: np.ndarray
    padding: Padding = Padding.IDENTITY
    pad_leaf: int | None = None
    names: tuple[str, ...] | None = field(default=None, compare=False)
    layout: str = "balanced"

    def __post_init__(self) -> None:
        leaf = np.asarray(self.leaf)
        table = np.asarray(self.table)
        head = np.asarray(self.head)
        for name, arr, ndim in (("leaf", leaf, 1), ("table", table, 2), ("head", head, 1)):
            if arr.ndim != ndim or not np.issubdtype(arr.dtype, np.integer):
                raise InputError(f"FiniteTable: {name} must be a {ndim}-d integer array, got "
                                 f"{arr.dtype} of shape {arr.shape}")
        k = head.shape[0]
        if k == 0 or table.shape != (k, k):
            raise InputError(f"FiniteTable: table must be ({k}, {k}) for {k} codes, got "
                             f"{table.shape}")
        if leaf.size == 0:
            raise InputError("FiniteTable: leaf is empty (no letters)")
        for name, arr in (("leaf", leaf), ("table", table)):
            if arr.min() < 0 or arr.max() >= k:
                raise InputError(f"FiniteTable: {name} holds codes outside 0..{k - 1}")
        if head.min() < 0:
            raise InputError("FiniteTable: head holds a negative class")
        padding = Padding.parse(self.padding, "FiniteTable: padding")
        if padding == Padding.LEARNED:
            if self.pad_leaf is None or not 0 <= int(self.pad_leaf) < k:
                raise InputError(f"FiniteTable: learned padding needs pad_leaf, a code in "
                                 f"0..{k - 1}, got {self.pad_leaf!r}")
        elif self.pad_leaf is not None:
            raise InputError("FiniteTable: identity padding has no pad_leaf")
        if self.layout not in LAYOUTS:
            raise InputError(f"FiniteTable: layout must be one of {', '.join(LAYOUTS)}, got "
                             f"{self.layout!r}")
        if self.layout == "scan" and padding != Padding.IDENTITY:
            raise InputError("FiniteTable: the scan layout has no padding (use identity)")
        idx = np.int64
        object.__setattr__(self, "leaf", _frozen(leaf.astype(idx)))
        object.__setattr__(self, "table", _frozen(table.astype(idx)))
        object.__setattr__(self, "head", _frozen(head.astype(idx)))
        object.__setattr__(self, "padding", padding)
        if self.pad_leaf is not None:
            object.__setattr__(self, "pad_leaf", int(self.pad_leaf))

    @property
    def n_codes(self) -> int:
        return int(self.head.shape[0])

    @property
    def vocab_size(self) -> int:
        return int(self.leaf.shape[0])

    def pad_code(self, level: int) -> int | None:
        """The code of an all-padding node at ``level`` (None under identity padding)."""
        if self.pad_leaf is None:
            return None
        code = self.pad_leaf
        for _ in range(level):
            code = int(self.table[code, code])
        return code

    def fold(self, tokens: Any, lengths: Any, offsets: Any = None) -> np.ndarray:
        """The class of each string, by table look-ups over the balanced tree.

        ``tokens`` (B, T) ints, ``lengths`` (B,) ints >= 1; ``offsets`` (optional, (B,) ints
        >= 0) places string b at buffer positions r_b..r_b + L_b − 1, padding on both sides,
        and its root is read at level ceil(log2(r_b + L_b)), as the torch models do.
        """
        return self.head[self.root_codes(tokens, lengths, offsets)]

    def root_codes(self, tokens: Any, lengths: Any, offsets: Any = None) -> np.ndarray:
        """The code at each string's root (see :meth:`fold`)."""
        tokens = np.asarray(tokens)
        lengths = np.asarray(lengths)
        if tokens.ndim != 2 or lengths.shape != tokens.shape[:1]:
            raise InputError(f"fold: tokens must be (B, T) and lengths (B,), got "
                             f"{tokens.shape} and {lengths.shape}")
        B = tokens.shape[0]
        if B == 0:
            return np.zeros(0, np.int64)
        if lengths.min() < 1 or lengths.max() > tokens.shape[1]:
            raise InputError(f"fold: lengths must lie in 1..{tokens.shape[1]} (the tokens' "
                             f"width), got {lengths.min()}..{lengths.max()}")
        off = np.zeros(B, np.int64) if offsets is None else np.asarray(offsets, np.int64)
        if off.shape != (B,) or off.min() < 0:
            raise InputError(f"fold: offsets must be ({B},) non-negative ints")
        if tokens.min() < 0 or tokens.max() >= self.vocab_size:
            raise InputError(f"fold: tokens must lie in 0..{self.vocab_size - 1}")
        if self.layout == "scan":
            if off.any():
                raise InputError("fold: a scan-layout table reads every string from position "
                                 "0 (no offsets)")
            return self._scan_roots(tokens, lengths)
        end = off + lengths
        M = buffer_size(int(end.max()))
        k = self.n_codes
        flat = self._flat  # table[i, j] at i * k + j: one 1-d gather per level
        leaf = self.leaf.astype(np.int32)
        if not off.any() and (lengths == lengths[0]).all():  # one length, right padding only
            # only the nodes over tokens are computed: at each level the last one, when its
            # right child is all padding, is its left child (identity padding) or the table
            # applied to the level's padding code (learned padding)
            codes = leaf[tokens[:, : int(lengths[0])]]
            level, pad = 0, self.pad_leaf
            while codes.shape[1] > 1:
                w = codes.shape[1]
                pairs = np.take(flat, codes[:, 0:w - 1:2] * k + codes[:, 1:w:2])
                if w % 2:
                    last = codes[:, -1:]
                    if pad is not None:
                        last = np.take(flat, last * k + pad)
                    pairs = np.concatenate([pairs, last], axis=1)
                codes = pairs
                level += 1
                if pad is not None:
                    pad = int(self.table[pad, pad])
            return codes[:, 0].astype(np.int64)
        pos = np.arange(M)[None, :] - off[:, None]
        real = (pos >= 0) & (pos < lengths[:, None])
        src = np.clip(pos, 0, tokens.shape[1] - 1)
        codes = leaf[np.take_along_axis(tokens, src, axis=1)]
        identity = self.padding == Padding.IDENTITY
        if not identity:
            codes = np.where(real, codes, np.int32(self.pad_code(0) or 0))
        top = np.maximum(end - 1, 0)
        top = np.where(top > 0, np.floor(np.log2(np.maximum(top, 1))).astype(np.int64) + 1, 0)
        roots = codes[:, 0].copy()
        level = 0
        while codes.shape[1] > 1:
            level += 1
            left, right = codes[:, 0::2], codes[:, 1::2]
            node = np.take(flat, left * k + right)
            if identity:  # an all-padding child passes its sibling through
                lreal, rreal = real[:, 0::2], real[:, 1::2]
                node = np.where(lreal & rreal, node, np.where(lreal, left, right))
                real = lreal | rreal
            codes = node
            roots = np.where(top == level, codes[:, 0], roots)
        return roots.astype(np.int64)

    def _scan_roots(self, tokens: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Root codes under the scan layout: every aligned block's code level by level, then
        each string's blocks (the set bits of its length, highest first) folded left."""
        flat, k, B = self._flat, self.n_codes, len(lengths)
        codes = self.leaf.astype(np.int32)[tokens[:, : int(lengths.max())]]
        levels = [codes]
        while codes.shape[1] >= 2:
            w = codes.shape[1] // 2 * 2
            codes = np.take(flat, codes[:, 0:w:2] * k + codes[:, 1:w:2])
            levels.append(codes)
        rows = np.arange(B)
        acc = np.full(B, -1, np.int64)  # -1: no block folded yet
        start = np.zeros(B, np.int64)  # tokens consumed so far
        for level in reversed(range(len(levels))):
            take = ((lengths >> level) & 1).astype(bool)
            if not take.any():
                continue
            blocks = levels[level]
            block = blocks[rows, np.minimum(start >> level, blocks.shape[1] - 1)]
            folded = np.take(flat, np.maximum(acc, 0) * k + block)
            acc = np.where(take, np.where(acc >= 0, folded, block), acc)
            start += take.astype(np.int64) << level
        return acc

    @property
    def _flat(self) -> np.ndarray:
        """The table as one int32 row (cached): ``table[i, j]`` at ``i * k + j``."""
        cached = self.__dict__.get("_flat_table")
        if cached is None:
            cached = self.table.astype(np.int32).ravel()
            object.__setattr__(self, "_flat_table", cached)
        return cached

    def to_dict(self) -> dict[str, Any]:
        """Plain values (JSON)."""
        return {"leaf": self.leaf.tolist(), "table": self.table.tolist(),
                "head": self.head.tolist(), "padding": self.padding.value,
                "pad_leaf": self.pad_leaf, "layout": self.layout}


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.array(a, copy=True)
    a.flags.writeable = False
    return a


def monoid_table(lang: Any, padding: Padding | str = Padding.IDENTITY,
                 layout: str = "balanced") -> FiniteTable:
    """The exact model of a language: codes = the elements of its syntactic monoid.

    Under learned padding the padding leaf is the identity element (code 0), so the model is
    exact either way; associativity makes it exact under the scan layout too.

    >>> import monoidlab as ml
    >>> monoid_table(ml.load_language("dyck-2")).n_codes
    15
    """
    from monoidlab.algebra.languages import as_language

    m = as_language(lang).monoid()
    padding = Padding.parse(padding)
    return FiniteTable(np.asarray(m.letters), np.asarray(m.table), np.asarray(m.outputs),
                       padding, 0 if padding == Padding.LEARNED else None,
                       names=tuple(m.labels()), layout=layout)
