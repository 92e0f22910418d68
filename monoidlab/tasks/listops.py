"""ListOps (Nangia & Bowman 2018): nested MIN / MAX / MED / SM lists over digits 0–9.

Tokens: the digits "0".."9" (id = value), "[MIN", "[MAX", "[MED", "[SM" and "]".
MED is the integer median (floor of the mean of the two middle values for an even
count, i.e. the original `int(np.median(args))`), SM is the sum mod 10. Depth counts
nested brackets: a digit has depth 0, "[MAX 1 2 ]" depth 1.

Unlike the original generator (random branching, filtered by length afterwards), the
`ListOps` sampler here produces expressions of *exactly* the requested number of
tokens, within explicit depth and argument-count limits, so a batch needs no padding
and the Delétang tape format applies unchanged. Feasibility tables (which lengths a
subtree of a given depth can have) guide every random choice; see docs/tasks.md.

Examples:
    >>> evaluate_listops("[MAX 2 9 [MIN 4 7 ] 0 ]".split())
    9
    >>> import numpy as np

    >>> t = ListOps(max_depth=3)
    >>> b = t.sample(np.random.default_rng(0), batch=2, length=12)
    >>> b.inputs.shape, listops_depth(t.decode(b.inputs[0])) <= 3
    ((2, 12), True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike

from monoidlab._checks import check_count, check_record, is_int
from monoidlab.errors import InputError

from .base import RandomStream, Task, TaskBatch, as_generator, register_task

__all__ = [
    "LISTOPS_VOCAB",
    "ListOps",
    "ListOpsSplit",
    "evaluate_listops",
    "listops_depth",
    "listops_splits",
]

OPERATORS = ("[MIN", "[MAX", "[MED", "[SM")
CLOSE = "]"
LISTOPS_VOCAB = [str(d) for d in range(10)] + list(OPERATORS) + [CLOSE]
_OP_ID = {op: 10 + i for i, op in enumerate(OPERATORS)}
_CLOSE_ID = 14


def _apply(op: str, args: list[int]) -> int:
    if op == "[MIN":
        return min(args)
    if op == "[MAX":
        return max(args)
    if op == "[MED":
        s = sorted(args)
        return (s[(len(s) - 1) // 2] + s[len(s) // 2]) // 2
    return sum(args) % 10


def _symbols(tokens: Sequence) -> list[str]:
    """The expression's symbols from symbols or ids (one expression: a flat sequence)."""
    if isinstance(tokens, np.ndarray) and tokens.ndim == 1 and tokens.dtype.kind in "iu" \
            and (len(tokens) == 0 or 0 <= tokens.min() <= tokens.max() < len(LISTOPS_VOCAB)):
        return [LISTOPS_VOCAB[t] for t in tokens.tolist()]  # a row of ids: the fast path
    out = []
    for i, t in enumerate(tokens):
        if isinstance(t, str):
            out.append(t)
        elif is_int(t) and 0 <= t < len(LISTOPS_VOCAB):
            out.append(LISTOPS_VOCAB[int(t)])
        else:
            raise InputError(f"tokens: one expression, symbols or ids 0 .. "
                             f"{len(LISTOPS_VOCAB) - 1}; token {i} is {str(t)[:40]!r}")
    return out


def evaluate_listops(tokens: Sequence[str | int]) -> int:
    """Exact value of a ListOps expression (symbols or ids); ValueError if malformed.

    Examples:
        >>> evaluate_listops("[MED 1 2 ]".split()), evaluate_listops("[SM 9 8 [MIN 7 5 ] ]".split())
        (1, 2)
    """
    frames: list[tuple[str, list[int]]] = []
    result: int | None = None
    for i, tok in enumerate(_symbols(tokens)):
        if result is not None:
            raise InputError(f"tokens after the end of the expression at {i}")
        if tok in OPERATORS:
            frames.append((tok, []))
        elif tok == CLOSE:
            if not frames or not frames[-1][1]:
                raise InputError(f"unexpected ']' at {i}")
            op, args = frames.pop()
            v = _apply(op, args)
            if frames:
                frames[-1][1].append(v)
            else:
                result = v
        elif tok.isdigit() and len(tok) == 1:
            if frames:
                frames[-1][1].append(int(tok))
            else:
                result = int(tok)
        else:
            raise InputError(f"unknown ListOps token {tok!r}")
    if result is None or frames:
        raise InputError("incomplete ListOps expression")
    return result


def listops_depth(tokens: Sequence[str | int]) -> int:
    """Bracket nesting depth (0 for a lone digit).

    Examples:
        >>> listops_depth("[MAX 1 [MIN 2 3 ] ]".split())
        2
    """
    depth = best = 0
    for tok in _symbols(tokens):
        depth += (tok in OPERATORS) - (tok == CLOSE)
        best = max(best, depth)
    return best


class _Tables:
    """Which lengths a subtree can have, for depths 0..D and argument counts kmin..kmax.

    ok[d, L]: some tree of depth ≤ d has L tokens; exact[d, L]: depth exactly d;
    sums[d, k, L]: L splits into k lengths each ok at depth d;
    mix[d, k, L]: L splits into k lengths, one of them exact at depth d, the rest ok.
    """

    def __init__(self, D: int, kmin: int, kmax: int, size: int) -> None:
        self.size = size

        def conv(a: np.ndarray, b: np.ndarray) -> np.ndarray:  # boolean "sum-set" of two length sets, truncated
            return np.convolve(a.astype(np.int64), b.astype(np.int64))[:size] > 0

        ok = np.zeros((D + 1, size), bool)
        exact = np.zeros((D + 1, size), bool)
        sums = np.zeros((D + 1, kmax + 1, size), bool)
        mix = np.zeros((D + 1, kmax + 1, size), bool)
        ok[0, 1] = exact[0, 1] = True
        for d in range(D + 1):
            if d > 0:  # an operator node: "[OP", k children of depth ≤ d−1, "]"
                ok[d] = ok[0]
                ok[d, 2:] |= np.any(sums[d - 1, kmin:], axis=0)[:-2]
                exact[d, 2:] = np.any(mix[d - 1, kmin:], axis=0)[:-2]
            sums[d, 0, 0] = True
            for k in range(1, kmax + 1):
                sums[d, k] = conv(sums[d, k - 1], ok[d])
                mix[d, k] = conv(exact[d], sums[d, k - 1])
        self.ok, self.exact, self.sums, self.mix = ok, exact, sums, mix


def _candidates(first: np.ndarray, second: np.ndarray, total: int) -> np.ndarray:
    """Lengths l in 1..total with first[l] and second[total − l]."""
    return 1 + np.flatnonzero(first[1 : total + 1] & second[total - 1 :: -1][:total])


@register_task
class ListOps(Task):
    """ListOps expressions of exactly n tokens; label = value (10 classes).

    Sampling (a Python loop over the batch): the root depth is uniform over the depths
    in [min_depth, max_depth] that admit n tokens; at every operator node the operator
    is uniform, the argument count uniform over the feasible counts in
    [min_args, max_args], one child is forced to the node's depth − 1 (exact-depth
    nodes), and the child lengths are drawn one by one uniformly over the feasible
    lengths, then shuffled. Digits are uniform.

    Examples:
        >>> ListOps(max_depth=2).sample(0, 3, 9).inputs.shape
        (3, 9)
    """

    name = "listops"
    level = "listops"

    def __init__(self, max_depth: int = 6, min_depth: int = 1, max_args: int = 5,
                 min_args: int = 2) -> None:  # fmt: skip
        if not 0 <= min_depth <= max_depth:
            raise InputError(f"need 0 <= min_depth <= max_depth, got {min_depth}, {max_depth}")
        if not 1 <= min_args <= max_args:
            raise InputError(f"need 1 <= min_args <= max_args, got {min_args}, {max_args}")
        self.max_depth, self.min_depth = max_depth, min_depth
        self.max_args, self.min_args = max_args, min_args
        # Shortest string: a chain of min_depth operators, each with min_args − 1 digits.
        self.min_length = 1 + min_depth * (1 + min_args)
        self.input_vocab = list(LISTOPS_VOCAB)
        self.output_vocab = [str(d) for d in range(10)]
        self._tables: _Tables | None = None

    def tables(self, length: int) -> _Tables:
        if self._tables is None or self._tables.size <= length:
            size = max(length + 1, 2 * self._tables.size if self._tables else 128)
            self._tables = _Tables(self.max_depth, self.min_args, self.max_args, size)
        return self._tables

    def feasible_depths(self, length: int) -> list[int]:
        """Depths in [min_depth, max_depth] that admit an expression of `length` tokens."""
        if length < 1:
            return []
        exact = self.tables(length).exact
        return [d for d in range(self.min_depth, self.max_depth + 1) if exact[d, length]]

    def check_length(self, length: int) -> int:
        length = super().check_length(length)
        if not self.feasible_depths(length):
            raise InputError(
                f"no ListOps expression has {length} tokens with depth in "
                f"[{self.min_depth}, {self.max_depth}] and {self.min_args}..{self.max_args} "
                "arguments per operator"
            )
        return length

    def label(self, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = np.asarray(inputs, np.int64)
        x = x[None, :] if x.ndim == 1 else x
        vals = [evaluate_listops(row) for row in x]
        return np.array(vals, np.int64)[:, None], np.ones((x.shape[0], 1), bool)

    def depths(self, inputs: ArrayLike) -> np.ndarray:
        """Depth of every row of `inputs` (B, n)."""
        return np.array([listops_depth(row) for row in np.atleast_2d(inputs)], np.int64)

    def _sample(self, rng: np.random.Generator, batch: int, length: int) -> TaskBatch:
        stream = RandomStream(rng)
        depths = self.feasible_depths(length)
        inputs = np.empty((batch, length), np.int64)
        targets = np.empty((batch, 1), np.int64)
        for b in range(batch):
            toks, val = self._generate(stream, length, stream.choice(depths))
            inputs[b], targets[b, 0] = toks, val
        return self._batch(inputs, targets)

    def _split(self, stream: RandomStream, total: int, k: int, d: int) -> list[int]:
        """k lengths, each feasible at depth ≤ d, summing to total (random order)."""
        T, parts = self.tables(total), []
        for i in range(k):
            ell = int(stream.choice(_candidates(T.ok[d], T.sums[d, k - i - 1], total)))
            parts.append(ell)
            total -= ell
        for i in range(k - 1, 0, -1):  # Fisher–Yates: the sequential draw favours early parts
            j = stream.randint(0, i + 1)
            parts[i], parts[j] = parts[j], parts[i]
        return parts

    def _generate(self, stream: RandomStream, length: int, depth: int) -> tuple[list[int], int]:
        """One expression of `length` tokens and depth exactly `depth`, with its value."""
        T = self.tables(length)
        kmin, kmax = self.min_args, self.max_args
        tokens: list[int] = []
        values: list[int] = []
        work: list[tuple] = [("node", length, depth, True)]
        while work:
            item = work.pop()
            if item[0] == "close":
                _, op, k = item
                args = values[-k:]
                del values[-k:]
                values.append(_apply(op, args))
                tokens.append(_CLOSE_ID)
                continue
            _, n, d, exact = item
            if n == 1:
                v = stream.randint(0, 10)
                tokens.append(v)
                values.append(v)
                continue
            inner = n - 2
            table = T.mix[d - 1] if exact else T.sums[d - 1]
            k = stream.choice([k for k in range(kmin, kmax + 1) if table[k, inner]])
            if exact:  # one child of depth exactly d − 1 guarantees this node's depth
                deep = int(stream.choice(_candidates(T.exact[d - 1], T.sums[d - 1, k - 1], inner)))
                rest = self._split(stream, inner - deep, k - 1, d - 1)
                slot = stream.randint(0, k)
                children = [(ell, False) for ell in rest]
                children.insert(slot, (deep, True))
            else:
                children = [(ell, False) for ell in self._split(stream, inner, k, d - 1)]
            op = stream.choice(OPERATORS)
            tokens.append(_OP_ID[op])
            work.append(("close", op, k))
            work.extend(("node", ell, d - 1, ex) for ell, ex in reversed(children))
        return tokens, values[0]


@dataclass(frozen=True)
class ListOpsSplit:
    """A named ListOps split: lengths (one per batch) and a depth range.

    Examples:
        >>> s = listops_splits()["train"]
        >>> s.sample(0, batch=2).inputs.shape[1] in s.lengths
        True
    """

    name: str
    lengths: range
    min_depth: int
    max_depth: int
    max_args: int = 5

    def __post_init__(self) -> None:
        check_record(self, f"ListOps split {self.name!r}")

    @cached_property
    def task(self) -> ListOps:
        return ListOps(max_depth=self.max_depth, min_depth=self.min_depth,
                       max_args=self.max_args)  # fmt: skip

    def sample(self, rng: np.random.Generator | int, batch: int) -> TaskBatch:
        """One batch at a length drawn uniformly from `lengths`."""
        rng = as_generator(rng)
        return self.task.sample(rng, batch, int(rng.choice(self.lengths)))


def listops_splits(
    *,
    max_args: int = 5,
    train_lengths: range = range(4, 101),
    train_max_depth: int = 6,
    longer_lengths: range = range(101, 501),
    deeper_depths: tuple[int, int] = (7, 10),
) -> dict[str, ListOpsSplit]:
    """Named splits: train, test_longer, test_deeper, test_longer_deeper.

    train: lengths 4..100, depth 1..6. test_longer: lengths 101..500, depth 1..6.
    test_deeper: depth 7..10 at lengths from the shortest depth-7 string (22) to 100.
    test_longer_deeper: lengths 101..500, depth 7..10. Every length of every split is
    checked to be feasible.

    Examples:
        >>> sorted(listops_splits())
        ['test_deeper', 'test_longer', 'test_longer_deeper', 'train']
    """
    max_args = check_count(max_args, "max_args", minimum=2)
    for what, r in (("train_lengths", train_lengths), ("longer_lengths", longer_lengths)):
        if not isinstance(r, range) or not len(r):
            raise InputError(f"{what}: a non-empty range of lengths, got {r!r}"[:120])
    train_max_depth = check_count(train_max_depth, "train_max_depth")
    lo, hi = deeper_depths
    # The shortest depth-lo string is a chain of lo two-argument operators (3 lo + 1).
    deeper_lengths = range(max(1 + 3 * lo, train_lengths.start), train_lengths.stop)
    splits = [
        ListOpsSplit("train", train_lengths, 1, train_max_depth, max_args),
        ListOpsSplit("test_longer", longer_lengths, 1, train_max_depth, max_args),
        ListOpsSplit("test_deeper", deeper_lengths, lo, hi, max_args),
        ListOpsSplit("test_longer_deeper", longer_lengths, lo, hi, max_args),
    ]
    for s in splits:
        if len(s.lengths) == 0:
            raise InputError(f"split {s.name!r} has no lengths")
        bad = [n for n in s.lengths if not s.task.feasible_depths(n)]
        if bad:
            raise InputError(f"split {s.name!r}: no strings of lengths {bad[:5]}...")
    return {s.name: s for s in splits}
