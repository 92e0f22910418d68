"""The context-sensitive (CS) tasks of Delétang et al. (2023).

duplicate_string, missing_duplicate_string, odds_first, binary_addition,
binary_multiplication, compute_sqrt, bucket_sort. All samplers are vectorised over
the batch; binary_multiplication and compute_sqrt label with one exact Python-int
operation per string (numbers have up to n bits, far beyond int64).

Examples:
    >>> from monoidlab.tasks import get_task
    >>> t = get_task("binary_addition")
    >>> t.label(t.encode("11+101"))[0].tolist()   # 3 + 5 = 8 = 0001 (little-endian)
    [[0, 0, 0, 1, 2, 0, 0]]
"""

from __future__ import annotations

import math

import numpy as np

from monoidlab.errors import InputError

from .base import StringTask, Task, TaskBatch, register_task
from .base import as_2d as _as_2d

__all__ = [
    "BinaryAddition",
    "BinaryMultiplication",
    "BucketSort",
    "ComputeSqrt",
    "DuplicateString",
    "MissingDuplicateString",
    "OddsFirst",
]

END = 2  # terminator class of the arithmetic tasks



# -- binary helpers ---------------------------------------------------------------------------
def bits_to_ints(bits_le: np.ndarray) -> list[int]:
    """Rows of little-endian 0/1 bits (B, W) → Python ints (exact, any width).

    Examples:
        >>> bits_to_ints(np.array([[1, 1, 0], [0, 0, 1]]))
        [3, 4]
    """
    packed = np.packbits(np.asarray(bits_le, np.uint8), axis=1, bitorder="little")
    return [int.from_bytes(row.tobytes(), "little") for row in packed]


def ints_to_bits(values: list[int], width: int) -> np.ndarray:
    """Python ints (each < 2**width) → little-endian bits (B, width) int64.

    Examples:
        >>> ints_to_bits([3, 4], 3).tolist()
        [[1, 1, 0], [0, 0, 1]]
    """
    nbytes = (width + 7) // 8
    buf = b"".join(int(v).to_bytes(nbytes, "little") for v in values)
    arr = np.frombuffer(buf, np.uint8).reshape(len(values), nbytes)
    return np.unpackbits(arr, axis=1, bitorder="little")[:, :width].astype(np.int64)


def add_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Vectorised binary addition of little-endian rows (B, W) → (B, W + 1).

    The carry out of position i is the generate bit g_j = a_j & b_j at the last
    position j ≤ i that does not propagate (a_j == b_j), or 0 if there is none; a
    running maximum of those positions finds j for every i at once.

    Examples:
        >>> add_bits(np.array([[1, 1, 0]]), np.array([[1, 0, 1]])).tolist()   # 3 + 5
        [[0, 0, 0, 1]]
    """
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    B, W = a.shape
    gen, prop = a & b, a ^ b
    cols = np.broadcast_to(np.arange(W), (B, W))
    last = np.maximum.accumulate(np.where(prop == 0, cols, -1), axis=1)
    carry_out = np.where(last >= 0, np.take_along_axis(gen, np.maximum(last, 0), 1), 0)
    carry_in = np.concatenate([np.zeros((B, 1), np.int64), carry_out], axis=1)
    return np.concatenate([prop, np.zeros((B, 1), np.int64)], axis=1) ^ carry_in


def _terminated(bits_le: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Number bits without leading (trailing, little-endian) zeros + END, zero-padded.

    Zero is written "0", as Python's f"{0:b}" in the official code.
    """
    B, W = bits_le.shape
    ones = bits_le == 1
    nbits = np.where(ones.any(1), W - np.argmax(ones[:, ::-1], axis=1), 1)
    assert (nbits < width).all()
    cols = np.arange(width)[None, :]
    padded = np.zeros((B, width), np.int64)
    k = min(W, width)
    padded[:, :k] = bits_le[:, :k]
    targets = np.where(cols < nbits[:, None], padded, 0)
    targets[np.arange(B), nbits] = END
    return targets, cols <= nbits[:, None]


def _operands(x: np.ndarray, op_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Split "a op b" rows into little-endian operand bits a, b, each (B, n)."""
    B, n = x.shape
    if ((x < 0) | (x > 2)).any() or not ((x == op_id).sum(1) == 1).all():
        raise InputError("each input needs 0/1 bits and exactly one operator")
    pos = np.argmax(x == op_id, axis=1)[:, None]
    cols = np.arange(n)[None, :]
    a = np.where(cols < pos, x, 0)
    j = cols + pos + 1  # b's bit j sits at position pos + 1 + j
    b = np.where(j < n, np.take_along_axis(x, np.minimum(j, n - 1), 1), 0)
    return a, b


def _sample_operands(rng: np.random.Generator, batch: int, n: int, op_id: int) -> np.ndarray:
    """Official sampling: |a| uniform in 1..n−2, |b| = n−1−|a|, each operand uniform
    over the nonzero numbers of its width written with that many bits (so possibly
    with high zeros). Nonzero is enforced by redrawing the offending rows."""
    len_a = rng.integers(1, n - 1, batch)[:, None]
    cols = np.arange(n)[None, :]
    x = rng.integers(0, 2, (batch, n))

    def zero_operand(x: np.ndarray) -> np.ndarray:
        ones = x == 1
        return ~((ones & (cols < len_a)).any(1) & (ones & (cols > len_a)).any(1))

    redo = zero_operand(x)
    while redo.any():
        x[redo] = rng.integers(0, 2, (int(redo.sum()), n))
        redo = zero_operand(x)
    x[np.arange(batch), len_a[:, 0]] = op_id
    return x


def _sample_placeholder(rng: np.random.Generator, batch: int, n: int) -> np.ndarray:
    """The released code's placeholder input for n ≤ 2: x uniform in 0..2**n − 2, written
    with n little-endian bits (numpy's randint excludes its upper bound 2**n − 1)."""
    return ints_to_bits(rng.integers(0, 2**n - 1, batch).tolist(), n)


def _placeholder_bits(x: np.ndarray) -> np.ndarray:
    """Check a placeholder input (0/1 bits only) and return it."""
    if ((x < 0) | (x > 1)).any():
        raise InputError("a placeholder input (length below 3) holds 0/1 bits only")
    return x


@register_task
class BinaryAddition(Task):
    """a + b in little-endian binary: output the sum little-endian, then a terminator.

    Output length n + 1, classes {0, 1, 2 = end}; positions after the terminator are 0
    and masked. Needs n ≥ 3 (two nonempty operands and the "+"), unless
    `placeholders=True`: then n ≤ 2 gives the released code's placeholder, a bare
    number x uniform in 0..2**n − 2 (n bits, little-endian) whose output is x itself.

    Examples:
        11+101 (3 + 5) → 0001 2 0 0; 001+01101 (4 + 22) → 01011 2 0 0 0 0;
        placeholder 01 (x = 2) → 01 2.
    """

    name = "binary_addition"
    level = "CS"
    min_length = 3
    paper_options = {"placeholders": True}

    def __init__(self, placeholders: bool = False) -> None:
        self.input_vocab = ["0", "1", "+"]
        self.output_vocab = ["0", "1", "<end>"]
        self._use_placeholders(placeholders)

    def output_length(self, n: int) -> int:
        return n + 1

    def label(self, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = _as_2d(inputs)
        if self.is_placeholder_length(x.shape[1]):
            return _terminated(_placeholder_bits(x), x.shape[1] + 1)
        a, b = _operands(x, 2)
        return _terminated(add_bits(a, b), x.shape[1] + 1)

    def _sample(self, rng: np.random.Generator, batch: int, length: int) -> TaskBatch:
        if self.is_placeholder_length(length):
            return self._batch(_sample_placeholder(rng, batch, length))
        return self._batch(_sample_operands(rng, batch, length, 2))


@register_task
class BinaryMultiplication(Task):
    """a * b in little-endian binary: the product little-endian, then a terminator.

    Output length n (the product has at most n − 1 bits); classes {0, 1, 2 = end};
    positions after the terminator are masked. Needs n ≥ 3, unless `placeholders=True`:
    then n ≤ 2 gives the released code's placeholder, a bare number (as for
    binary_addition) with the fixed output n − 1 zeros then the terminator.

    Examples:
        11*101 (3 * 5 = 15) → 1111 2; 001*01101 (4 * 22 = 88) → 0001101 2 0;
        placeholders 1 → 2, 01 → 0 2.
    """

    name = "binary_multiplication"
    level = "CS"
    min_length = 3
    paper_options = {"placeholders": True}

    def __init__(self, placeholders: bool = False) -> None:
        self.input_vocab = ["0", "1", "*"]
        self.output_vocab = ["0", "1", "<end>"]
        self._use_placeholders(placeholders)

    def output_length(self, n: int) -> int:
        return n

    def label(self, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = _as_2d(inputs)
        B, n = x.shape
        if self.is_placeholder_length(n):
            _placeholder_bits(x)
            targets = np.zeros((B, n), np.int64)
            targets[:, n - 1] = END
            return targets, np.ones((B, n), bool)
        a, b = _operands(x, 2)
        prods = [p * q for p, q in zip(bits_to_ints(a), bits_to_ints(b))]
        return _terminated(ints_to_bits(prods, x.shape[1]), x.shape[1])

    def _sample(self, rng: np.random.Generator, batch: int, length: int) -> TaskBatch:
        if self.is_placeholder_length(length):
            return self._batch(_sample_placeholder(rng, batch, length))
        return self._batch(_sample_operands(rng, batch, length, 2))


@register_task
class ComputeSqrt(Task):
    """floor(sqrt(x)) for x big-endian in n bits; output big-endian in ceil(n/2) bits.

    x is uniform in 1..2**n − 1 (written with n bits, so possibly leading zeros); the
    root is zero-padded on the left to ceil(n/2) bits; no mask.

    Examples:
        1010 (10) → 11 (3); 100101 (37) → 110 (6); 111 (7) → 10 (2).
    """

    name = "compute_sqrt"
    level = "CS"

    def __init__(self) -> None:
        self.input_vocab = ["0", "1"]
        self.output_vocab = ["0", "1"]

    def output_length(self, n: int) -> int:
        return math.ceil(n / 2)

    def label(self, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = _as_2d(inputs)
        roots = [math.isqrt(v) for v in bits_to_ints(x[:, ::-1])]
        targets = ints_to_bits(roots, self.output_length(x.shape[1]))[:, ::-1]
        return np.ascontiguousarray(targets), np.ones(targets.shape, bool)

    def _sample(self, rng: np.random.Generator, batch: int, length: int) -> TaskBatch:
        x = rng.integers(0, 2, (batch, length))
        redo = ~x.any(1)
        while redo.any():  # x = 0 is excluded, as officially
            x[redo] = rng.integers(0, 2, (int(redo.sum()), length))
            redo = ~x.any(1)
        return self._batch(x)


@register_task
class DuplicateString(StringTask):
    """Output the input twice, ww (output length 2n).

    Examples:
        101 → 101101.
    """

    name = "duplicate_string"
    level = "CS"

    def output_length(self, n: int) -> int:
        return 2 * n

    def label(self, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = _as_2d(inputs)
        t = np.concatenate([x, x], axis=1)
        return t, np.ones(t.shape, bool)


@register_task
class MissingDuplicateString(Task):
    """ww with one symbol replaced by "?"; predict that symbol (2 classes).

    Input length n: w has n // 2 symbols; for odd n a final "_" pads ww to n. The
    hidden position is uniform over ww. Needs n ≥ 2, unless `placeholders=True`: then
    n = 1 gives the released code's placeholder, the input "1" with answer 1.

    Examples:
        0110?110 → 0 (w = 0110); 101?01_ → 1 (w = 101).
    """

    name = "missing_duplicate_string"
    level = "CS"
    min_length = 2
    MISSING, PAD = 2, 3
    paper_options = {"placeholders": True}

    def __init__(self, placeholders: bool = False) -> None:
        self.input_vocab = ["0", "1", "?", "_"]
        self.output_vocab = ["0", "1"]
        self._use_placeholders(placeholders)

    def label(self, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = _as_2d(inputs)
        B, n = x.shape
        if self.is_placeholder_length(n):
            if not (x == 1).all():
                raise InputError("the placeholder input of length 1 is '1'")
            return np.ones((B, 1), np.int64), np.ones((B, 1), bool)
        half = n // 2
        if not ((x == self.MISSING).sum(1) == 1).all():
            raise InputError("each input needs exactly one '?'")
        pos = np.argmax(x == self.MISSING, axis=1)
        if (pos >= 2 * half).any():
            raise InputError("'?' must lie inside ww")
        twin = np.where(pos < half, pos + half, pos - half)
        y = x[np.arange(B), twin]
        if (y > 1).any():
            raise InputError("the twin of '?' must be a 0/1 symbol")
        return y[:, None], np.ones((B, 1), bool)

    def _sample(self, rng: np.random.Generator, batch: int, length: int) -> TaskBatch:
        if self.is_placeholder_length(length):
            return self._batch(np.ones((batch, length), np.int64))
        half = length // 2
        w = rng.integers(0, 2, (batch, half))
        x = np.concatenate([w, w, np.full((batch, length % 2), self.PAD)], axis=1)
        idx = rng.integers(0, 2 * half, batch)
        targets = x[np.arange(batch), idx][:, None].copy()
        x[np.arange(batch), idx] = self.MISSING
        return self._batch(x, targets)


@register_task
class OddsFirst(StringTask):
    """The symbols at odd positions first, then those at even ones (1-based).

    s1 s2 s3 s4 s5 → s1 s3 s5 s2 s4, as in the paper and the official docstring. The
    released *code*, which produced the paper's numbers, puts the 0-based odd positions
    first (s2 s4 … s1 s3 …); `code_order=True` is that order (the paper protocol's).

    Examples:
        abcde → acebd; 00110101 → 0100 0111; 1 0 0 → 1 0 0 (code order: 0 1 0).
    """

    name = "odds_first"
    level = "CS"
    paper_options = {"code_order": True}

    def __init__(self, vocab_size: int = 2, code_order: bool = False) -> None:
        super().__init__(vocab_size)
        self.code_order = code_order

    def label(self, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = _as_2d(inputs)
        first, second = (x[:, 1::2], x[:, 0::2]) if self.code_order else (x[:, 0::2], x[:, 1::2])
        t = np.concatenate([first, second], axis=1)
        return t, np.ones(t.shape, bool)


@register_task
class BucketSort(StringTask):
    """Sort a string over {0..4} (output length n).

    Examples:
        10204112 → 00111224.
    """

    name = "bucket_sort"
    level = "CS"

    def __init__(self, vocab_size: int = 5) -> None:
        super().__init__(vocab_size)

    def label(self, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = _as_2d(inputs)
        return np.sort(x, axis=1), np.ones(x.shape, bool)
