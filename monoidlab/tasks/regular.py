"""The four regular (R) tasks of Delétang et al. (2023), "Neural Networks and the Chomsky
Hierarchy": even_pairs, modular_arithmetic, parity_check, cycle_navigation.

The deterministic context-free (DCF) tasks live in `dcf.py`, the context-sensitive (CS) ones
in `cs.py`; `monoidlab.tasks.DELETANG_TASKS` lists all fifteen in the paper's order.
Definitions follow google-deepmind's `neural_networks_chomsky_hierarchy`; every deviation
is listed in docs/tasks.md.

Examples:
    >>> import numpy as np

    >>> from monoidlab.tasks import get_task
    >>> t = get_task("modular_arithmetic")
    >>> t.label(t.encode("1+2*3"))[0].tolist()   # 1 + 6 = 7 = 2 (mod 5)
    [[2]]
"""

from __future__ import annotations

import numpy as np

from monoidlab.errors import InputError

from .base import Task, TaskBatch, register_task
from .base import as_2d as _as_2d

__all__ = ["CycleNavigation", "EvenPairs", "ModularArithmetic", "ParityCheck"]


@register_task
class EvenPairs(Task):
    """Is the number of "01" and "10" pairs even? (class 0 = even, 1 = odd)

    Equal to [first symbol ≠ last symbol].

    Examples:
        001110 → one "01" and one "10" → class 0; 0101001 → 5 pairs → class 1.
    """

    name = "even_pairs"
    level = "R"

    def __init__(self) -> None:
        self.input_vocab = ["0", "1"]
        self.output_vocab = ["even", "odd"]

    def automaton_name(self) -> str | None:
        return "even-pairs"

    def label(self, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = _as_2d(inputs)
        odd = (x[:, 1:] != x[:, :-1]).sum(1) % 2
        return odd[:, None], np.ones((x.shape[0], 1), bool)

    def _sample(self, rng: np.random.Generator, batch: int, length: int) -> TaskBatch:
        return self._batch(rng.integers(0, 2, (batch, length)))


@register_task
class ParityCheck(Task):
    """Is the number of 1s even? (class 0 = even, 1 = odd)

    Examples:
        1010100 → three 1s → class 1; 01111 → four 1s → class 0.
    """

    name = "parity_check"
    level = "R"

    def __init__(self) -> None:
        self.input_vocab = ["0", "1"]
        self.output_vocab = ["even", "odd"]

    def automaton_name(self) -> str | None:
        return "parity"

    def label(self, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = _as_2d(inputs)
        return (x.sum(1) % 2)[:, None], np.ones((x.shape[0], 1), bool)

    def _sample(self, rng: np.random.Generator, batch: int, length: int) -> TaskBatch:
        return self._batch(rng.integers(0, 2, (batch, length)))


@register_task
class CycleNavigation(Task):
    """Final position on a cycle of 5 states, starting at 0: label Σ(a − 1) mod 5.

    Symbol 0 moves −1, symbol 1 stays, symbol 2 moves +1 (the official encoding).

    Examples:
        2 0 1 0 0 (= +1 −1 0 −1 −1) → −2 → class 3; 2 2 2 0 → class 2.
    """

    name = "cycle_navigation"
    level = "R"

    def __init__(self, cycle_length: int = 5) -> None:
        if cycle_length < 1:
            raise InputError("cycle_length must be >= 1")
        self.cycle_length = cycle_length
        self.input_vocab = ["0", "1", "2"]
        self.output_vocab = [str(i) for i in range(cycle_length)]

    def automaton_name(self) -> str | None:
        return "cycle-navigation" if self.cycle_length == 5 else None

    def label(self, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = _as_2d(inputs)
        return ((x - 1).sum(1) % self.cycle_length)[:, None], np.ones((x.shape[0], 1), bool)

    def _sample(self, rng: np.random.Generator, batch: int, length: int) -> TaskBatch:
        return self._batch(rng.integers(0, 3, (batch, length)))


def _discrete_log(p: int) -> tuple[np.ndarray, np.ndarray]:
    """(log, power) tables of a generator of the multiplicative group mod prime p."""
    for g in range(1, p):
        powers = [pow(g, e, p) for e in range(p - 1)]
        if len(set(powers)) == p - 1:
            break
    log = np.zeros(p, dtype=np.int64)
    log[powers] = np.arange(p - 1)
    return log, np.array(powers, dtype=np.int64)


@register_task
class ModularArithmetic(Task):
    """A flat expression d op d op ... d, standard precedence (* before + and −), mod p.

    Digits are uniform in {0..p−1}, operators uniform in `operators`. Strings have odd
    length. For an even requested length n the official code samples length n − 1;
    `even_lengths="shorten"` (default) does the same, so `inputs` has n − 1 columns;
    `even_lengths="pad"` appends the blank "_" instead, which the official evaluator
    reads as "+" at an operator position and so leaves the value unchanged. The
    labeller also reads "_" at a digit position as 0, like the official one.

    Labelling is vectorised: the value is a sum of signed products, and products mod a
    prime p are computed as sums of discrete logarithms over the multiplicative group
    (hence p must be prime).

    Examples:
        1+2*3 → 2; 1-1-1 → 4; 0*1+4*3-2 → 0 (mod 5).
    """

    name = "modular_arithmetic"
    level = "R"

    def __init__(
        self,
        modulus: int = 5,
        operators: tuple[str, ...] = ("+", "*", "-"),
        even_lengths: str = "shorten",
    ) -> None:
        if modulus < 2 or any(modulus % q == 0 for q in range(2, int(modulus**0.5) + 1)):
            raise InputError(f"modulus must be a prime (vectorised labeller), got {modulus}")
        if modulus > 10:
            raise InputError("modulus must be <= 10 (digits are single symbols)")
        if even_lengths not in ("shorten", "pad"):
            raise InputError("even_lengths must be 'shorten' or 'pad'")
        if not operators or any(op not in ("+", "-", "*") for op in operators):
            raise InputError(f"operators must be a non-empty subset of +, -, *; got {operators}")
        self.modulus = modulus
        self.operators = tuple(operators)
        self.even_lengths = even_lengths
        # Official order: digits, then + - * and the blank _ (input size modulus + 4).
        self.input_vocab = [str(i) for i in range(modulus)] + ["+", "-", "*", "_"]
        self.output_vocab = [str(i) for i in range(modulus)]
        self._plus, self._minus, self._times, self._blank = range(modulus, modulus + 4)
        self._log, self._pow = _discrete_log(modulus)

    def automaton_name(self) -> str | None:
        """modular-arithmetic-precedence (its well-formed strings), for the default options."""
        full = sorted(self.operators) == sorted(("+", "-", "*"))
        return "modular-arithmetic-precedence" if self.modulus == 5 and full else None

    def label(self, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = _as_2d(inputs)
        B, p = x.shape[0], self.modulus
        digits = x[:, 0::2]
        ops = x[:, 1::2][:, : digits.shape[1] - 1]  # a trailing operator (pad) is ignored
        digits = np.where(digits == self._blank, 0, digits)
        ops = np.where(ops == self._blank, self._plus, ops)
        if (digits >= p).any() or (digits < 0).any() or ((ops < p) | (ops > self._times)).any():
            raise InputError("not a flat expression: digit/operator out of place")
        k1 = digits.shape[1]
        # A term starts at the first digit and after every + or −; its sign is that op's.
        start = np.ones((B, k1), bool)
        start[:, 1:] = ops != self._times
        sign = np.ones((B, k1), np.int64)
        sign[:, 1:] = np.where(ops == self._minus, -1, 1)
        term = np.cumsum(start, axis=1) - 1
        seg = (np.arange(B)[:, None] * k1 + term).ravel()
        nseg = B * k1

        def seg_sum(w: np.ndarray) -> np.ndarray:
            return np.rint(np.bincount(seg, weights=w.ravel(), minlength=nseg)).astype(np.int64)

        n_zero = seg_sum(digits == 0)
        log_sum = seg_sum(self._log[digits])
        signs = seg_sum(np.where(start, sign, 0))
        prod = np.where(n_zero > 0, 0, self._pow[log_sum % (p - 1)])
        value = (signs * prod).reshape(B, k1).sum(1) % p
        return value[:, None], np.ones((B, 1), bool)

    def _sample(self, rng: np.random.Generator, batch: int, length: int) -> TaskBatch:
        odd = length if length % 2 == 1 else length - 1
        k = odd // 2
        x = np.empty((batch, odd), np.int64)
        x[:, 0::2] = rng.integers(0, self.modulus, (batch, k + 1))
        op_ids = np.array([self.input_vocab.index(o) for o in self.operators], np.int64)
        x[:, 1::2] = op_ids[rng.integers(0, len(op_ids), (batch, k))]
        if odd != length and self.even_lengths == "pad":
            x = np.concatenate([x, np.full((batch, 1), self._blank, np.int64)], axis=1)
        return self._batch(x)
