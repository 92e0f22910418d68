"""Decimal addition as next-token prediction (Zhou et al. 2024): data formats and tokenizer.

An example is ``prompt + answer``: the prompt is ``a + b =`` and the answer is ``c <eos>``
with ``c = a + b``. Four formats, all over the same fixed vocabulary:

* ``standard``: ``576+361=937`` (every number most significant digit first);
* ``reversed``: ``576+361=739``: the answer least significant digit first, the order in
  which carries propagate, so each answer digit depends on already-written ones only;
* ``index_hints``: every digit is preceded by a hint token naming its significance,
  ``<h2>5<h1>7<h0>6+<h2>3<h1>6<h0>1=<h2>9<h1>3<h0>7``; digits of equal significance in
  both operands and the answer carry the **same** hint, so a model can find the digits to
  add by content instead of by counting positions;
* ``combination``: reversed answer and index hints, the paper's recipe,
  ``<h2>5<h1>7<h0>6+<h2>3<h1>6<h0>1=<h0>7<h1>3<h2>9``.

Hints. A digit of significance ``k`` (``k = 0`` for the units) gets hint ``<h{s+k}>``,
where the offset ``s`` is drawn per example, uniformly in ``0 .. n_hints - (N + 1)``,
``N = max(len a, len b)``: the hints of an example are a random contiguous block of the
larger hint vocabulary, so a model trained on short numbers has met every hint token and
long test inputs still get distinct hints. (Zhou et al. write the block with letters in
reading order, ``a1b2c3+a4b5c6``; here hints count up from the units digit, which keeps the
hint of the answer's extra carry digit inside the block. Only the naming differs; see
docs/addition.md.)

Random-space augmentation: with ``space_prob = p`` every gap between two prompt tokens
independently receives a space token with probability ``p`` (training batches only,
unless ``eval_spaces``); the answer never has spaces. :meth:`AdditionTask.parse` ignores
spaces.

Operand lengths: a batch of "length" ``L`` draws the two operand digit counts independently
and uniformly from ``1..L`` in training (``train=True``), as the paper does; evaluation
batches (``train=False``) use ``L``-digit operands for both, so exact match is reported per
operand length. Operands have no leading zeros (an ``n``-digit number with ``n > 1`` starts
with 1-9); neither has the answer.

Examples
--------
>>> task = AdditionTask("combination", n_hints=8)
>>> task.render(task.format(576, 361))
'<h2>5<h1>7<h0>6+<h2>3<h1>6<h0>1=<h0>7<h1>3<h2>9'
>>> AdditionTask("reversed").render(AdditionTask("reversed").format(576, 361))
'576+361=739'
>>> task.parse(task.format(576, 361, hint_start=4))
(576, 361, 937)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

import numpy as np
from numpy.typing import ArrayLike

from monoidlab._checks import check_count
from monoidlab.errors import InputError

from .base import Task, as_generator, register_task

__all__ = [
    "FORMATS",
    "AdditionTokenizer",
    "AdditionBatch",
    "AdditionTask",
    "int_to_digits",
    "digits_to_int",
]

FORMATS = ("standard", "reversed", "index_hints", "combination")
_FLAGS = {  # format -> (answer reversed, index hints)
    "standard": (False, False),
    "reversed": (True, False),
    "index_hints": (False, True),
    "combination": (True, True),
}
_TOKEN_RE = re.compile(r"<h\d+>|<pad>|<eos>|.", re.S)


class AdditionTokenizer:
    """Fixed vocabulary ``<pad> <eos> + = ␣ 0..9 <h0>..<h{n_hints-1}>`` (ids in that order).

    Every format uses the same vocabulary (formats without hints simply never emit hint
    tokens), so models of different formats are directly comparable.

    >>> tok = AdditionTokenizer(n_hints=4)
    >>> tok.vocab_size, tok.encode("<h1>7+2=").tolist()
    (19, [16, 12, 2, 7, 3])
    >>> tok.decode(tok.encode("12+3=15<eos>"))
    ['1', '2', '+', '3', '=', '1', '5', '<eos>']
    """

    pad_id, eos_id, plus_id, eq_id, space_id, digit0_id = 0, 1, 2, 3, 4, 5
    hint0_id = 15

    def __init__(self, n_hints: int = 128) -> None:
        if n_hints < 1:
            raise InputError(f"n_hints must be >= 1, got {n_hints}")
        self.n_hints = int(n_hints)
        self.vocab = ("<pad>", "<eos>", "+", "=", " ", *map(str, range(10)),
                      *(f"<h{k}>" for k in range(self.n_hints)))
        self.index = {t: i for i, t in enumerate(self.vocab)}

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def encode(self, tokens: str | Sequence[str]) -> np.ndarray:
        """Token strings (or one string such as ``"<h1>7+2="``) → int64 ids."""
        if isinstance(tokens, str):
            tokens = _TOKEN_RE.findall(tokens)
        try:
            return np.array([self.index[t] for t in tokens], dtype=np.int64)
        except KeyError as exc:
            raise InputError(f"token {exc.args[0]!r} is not in the addition vocabulary "
                             f"(hints go up to <h{self.n_hints - 1}>)") from None

    def decode(self, ids: ArrayLike) -> list[str]:
        """Ids → token strings (padding included)."""
        return [self.vocab[int(i)] for i in np.asarray(ids).ravel()]


@dataclass(frozen=True, eq=False)  # arrays: no elementwise == on the dataclass
class AdditionBatch:
    """A batch of formatted additions.

    Attributes:
        tokens: (B, T) int64, ``prompt + answer + <eos>``, right-padded with ``<pad>``.
        lengths: (B,) int64, tokens per row including ``<eos>``.
        prompt_lengths: (B,) int64, tokens up to and including ``=``.
        a_digits, b_digits, c_digits: (B, D) int8 digits, least significant first, zero
            beyond each number's length.
        a_len, b_len, c_len: (B,) int64 digit counts.
        hint_start: (B,) int64 hint offset ``s`` (0 for formats without hints).
    """

    tokens: np.ndarray
    lengths: np.ndarray
    prompt_lengths: np.ndarray
    a_digits: np.ndarray
    b_digits: np.ndarray
    c_digits: np.ndarray
    a_len: np.ndarray
    b_len: np.ndarray
    c_len: np.ndarray
    hint_start: np.ndarray

    def __len__(self) -> int:
        return int(self.tokens.shape[0])

    def numbers(self) -> list[tuple[int, int, int]]:
        """``[(a, b, c), ...]`` as Python ints (arbitrary precision)."""
        return [(digits_to_int(self.a_digits[i], self.a_len[i]),
                 digits_to_int(self.b_digits[i], self.b_len[i]),
                 digits_to_int(self.c_digits[i], self.c_len[i])) for i in range(len(self))]


def int_to_digits(values: Sequence[int], width: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Non-negative ints → ``(digits (B, width) int8 least significant first, lengths)``.

    >>> d, n = int_to_digits([576, 7])
    >>> d.tolist(), n.tolist()
    ([[6, 7, 5], [7, 0, 0]], [3, 1])
    """
    texts = [str(int(v)) for v in values]
    if any(t.startswith("-") for t in texts):
        raise InputError("addition operands must be non-negative")
    lens = np.array([len(t) for t in texts], dtype=np.int64)
    width = int(lens.max()) if width is None else width
    out = np.zeros((len(texts), width), np.int8)
    for i, t in enumerate(texts):
        out[i, : len(t)] = np.frombuffer(t[::-1].encode(), np.uint8) - 48
    return out, lens


def digits_to_int(digits: np.ndarray, length: int) -> int:
    """Least-significant-first digits → a Python int.

    >>> digits_to_int(np.array([6, 7, 5, 0]), 3)
    576
    """
    return int("".join(str(int(d)) for d in digits[: int(length)][::-1]) or "0")


def _add(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column-wise addition with carry over (B, D) digit arrays; returns (c (B, D+1), len)."""
    B, D = a.shape
    c = np.zeros((B, D + 1), np.int8)
    carry = np.zeros(B, np.int8)
    for k in range(D):  # a loop over digit columns, vectorised over the batch
        s = a[:, k] + b[:, k] + carry
        c[:, k], carry = s % 10, s // 10
    c[:, D] = carry
    nz = c != 0
    c_len = np.where(nz.any(1), D + 1 - np.argmax(nz[:, ::-1], axis=1), 1)
    return c, c_len.astype(np.int64)


@register_task
class AdditionTask(Task):
    """Sampling, formatting and parsing of decimal additions in one format.

    A :class:`~monoidlab.tasks.base.Task` whose ``readout`` is ``"next_token"``: the
    trainer learns it by next-token prediction (:mod:`monoidlab.training.next_token`), and
    :meth:`sample` returns an :class:`AdditionBatch` (prompt and answer in one token row)
    instead of a tape batch. ``get_task("addition", format="reversed")`` builds one.

    Parameters
    ----------
    format : ``"standard"``, ``"reversed"``, ``"index_hints"`` or ``"combination"``.
    n_hints : size of the hint vocabulary; hinted formats handle operands of up to
        ``n_hints - 1`` digits (the answer needs one hint more).
    space_prob : random-space augmentation probability per prompt gap (training only).
    eval_spaces : also insert random spaces in evaluation batches.
    test_operands : ``"equal"`` (default): evaluation batches of length ``L`` have two
        ``L``-digit operands; ``"independent"``: sampled like training batches.

    >>> task = AdditionTask("standard")
    >>> b = task.sample(np.random.default_rng(0), batch_size=3, length=4, train=False)
    >>> [task.render(row) for row in b.tokens][0]
    '5568+1567=7135'
    """

    def __init__(self, format: str = "combination", n_hints: int = 128, space_prob: float = 0.0,
                 eval_spaces: bool = False, test_operands: str = "equal") -> None:
        if format not in _FLAGS:
            raise InputError(f"unknown addition format {format!r}; known: {', '.join(FORMATS)}")
        if not 0 <= space_prob < 1:
            raise InputError(f"space_prob must lie in [0, 1), got {space_prob}")
        if test_operands not in ("equal", "independent"):
            raise InputError(f"test_operands must be 'equal' or 'independent', got {test_operands!r}")
        self.fmt = format
        self.reverse, self.hints = _FLAGS[format]
        self.tokenizer = AdditionTokenizer(n_hints)
        self.input_vocab = list(self.tokenizer.vocab)
        self.output_vocab = list(self.tokenizer.vocab)
        self.space_prob = float(space_prob)
        self.eval_spaces = bool(eval_spaces)
        self.test_operands = test_operands
        self.name = f"addition-{format}"

    name = "addition"  # the registry name; instances are named "addition-<format>"
    level = "LM"
    readout = "next_token"

    def __repr__(self) -> str:
        return (f"AdditionTask({self.fmt!r}, n_hints={self.tokenizer.n_hints}, "
                f"space_prob={self.space_prob})")

    # AdditionTask overrides sample() itself: its batches are AdditionBatch, not tape batches
    def _sample(self, rng: np.random.Generator, batch: int,  # type: ignore[override]
                length: int) -> AdditionBatch:
        return self.sample(rng, batch, length, train=True)

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.vocab_size

    @property
    def max_digits(self) -> int | None:
        """Longest operand the format can write (``None``: unbounded)."""
        return self.tokenizer.n_hints - 1 if self.hints else None

    def check_length(self, length: int) -> int:
        """``length`` (operand digits) as an int, or an error past what the format can write."""
        length = int(length)
        if length < 1:
            raise InputError(f"addition operands have at least 1 digit, got length {length}")
        if self.max_digits is not None and length > self.max_digits:
            raise InputError(f"{self.name}: {length}-digit operands need {length + 1} hints, but "
                             f"n_hints = {self.tokenizer.n_hints}; raise task_options.n_hints")
        return length

    # -- sampling -------------------------------------------------------------------------
    def sample(self, rng: np.random.Generator, batch_size: int, length: int,  # type: ignore[override]
               train: bool = True) -> AdditionBatch:
        """A batch of ``batch_size`` random additions with operands of at most ``length``
        digits (independent lengths in training; see the module docstring)."""
        L = self.check_length(length)
        B = check_count(batch_size, "batch_size")
        rng = as_generator(rng)
        if train or self.test_operands == "independent":
            a_len, b_len = rng.integers(1, L + 1, B), rng.integers(1, L + 1, B)
        else:
            a_len = b_len = np.full(B, L, np.int64)
        a, b = self._random_digits(rng, a_len, L), self._random_digits(rng, b_len, L)
        spaces = self.space_prob if (train or self.eval_spaces) else 0.0
        return self.encode(a, b, a_len, b_len, rng=rng, space_prob=spaces)

    @staticmethod
    def _random_digits(rng: np.random.Generator, n: np.ndarray, width: int) -> np.ndarray:
        d = rng.integers(0, 10, (len(n), width)).astype(np.int8)
        top = rng.integers(1, 10, len(n)).astype(np.int8)  # no leading zero when n > 1
        rows = np.arange(len(n))
        d[rows, n - 1] = np.where(n > 1, top, d[rows, n - 1])
        d[np.arange(width)[None, :] >= n[:, None]] = 0
        return d

    # -- formatting (vectorised over the batch) -------------------------------------------
    # not Task.encode (symbols -> ids, which is self.tokenizer.encode here): formats operands
    def encode(self, a_digits: np.ndarray, b_digits: np.ndarray,  # type: ignore[override]
               a_len: ArrayLike, b_len: ArrayLike, hint_start: ArrayLike | None = None,
               rng: np.random.Generator | None = None,
               space_prob: float = 0.0) -> AdditionBatch:
        """Format given operands (least-significant-first digit arrays) into token rows.

        ``hint_start`` (B,) fixes the hint offsets; by default they are drawn from ``rng``
        (or 0 without one). ``space_prob > 0`` needs ``rng``.
        """
        tok = self.tokenizer
        a_len, b_len = np.asarray(a_len, np.int64), np.asarray(b_len, np.int64)
        B = len(a_len)
        D = max(a_digits.shape[1], b_digits.shape[1])
        a = np.zeros((B, D), np.int8)
        b = np.zeros((B, D), np.int8)
        a[:, : a_digits.shape[1]], b[:, : b_digits.shape[1]] = a_digits, b_digits
        c, c_len = _add(a, b)
        N = np.maximum(a_len, b_len)
        self.check_length(int(N.max()))
        if not self.hints:
            hint_start = np.zeros(B, np.int64)
        elif hint_start is None:
            hi = tok.n_hints - (N + 1)  # block of N + 1 hints fits
            hint_start = (rng.integers(0, hi + 1) if rng is not None else np.zeros(B)).astype(np.int64)
        hint_start = np.broadcast_to(np.asarray(hint_start, np.int64), (B,)).copy()
        if self.hints and ((hint_start < 0) | (hint_start + N + 1 > tok.n_hints)).any():
            raise InputError("hint_start: the block of N + 1 hints must fit in the hint vocabulary")
        u = 2 if self.hints else 1  # tokens per digit
        plus = a_len * u
        eq = plus + 1 + b_len * u
        prompt_len = eq + 1
        eos = prompt_len + c_len * u
        lengths = eos + 1
        tokens = np.full((B, int(lengths.max())), tok.pad_id, np.int64)
        rows = np.arange(B)
        tokens[rows, plus], tokens[rows, eq], tokens[rows, eos] = tok.plus_id, tok.eq_id, tok.eos_id
        for digits, n, start, lsb_first in ((a, a_len, 0, False), (b, b_len, plus + 1, False),
                                           (c, c_len, prompt_len, self.reverse)):
            self._place(tokens, digits, n, np.broadcast_to(start, (B,)), lsb_first, hint_start, u)
        if space_prob > 0:
            if rng is None:
                raise InputError("random spaces need an rng")
            tokens, lengths, prompt_len = self._insert_spaces(tokens, lengths, prompt_len,
                                                              rng, space_prob)
        return AdditionBatch(tokens, lengths, prompt_len, a, b, c, a_len, b_len, c_len,
                             hint_start)

    def _place(self, tokens: np.ndarray, digits: np.ndarray, n: np.ndarray, start: np.ndarray,
               lsb_first: bool, hint_start: np.ndarray, u: int) -> None:
        """Write a number's digits (and hints) at ``start`` in each row."""
        tok = self.tokenizer
        j = np.arange(digits.shape[1])[None, :]  # written order
        valid = j < n[:, None]
        sig = j if lsb_first else n[:, None] - 1 - j  # significance of the j-th written digit
        sig = np.where(valid, sig, 0)
        rows = np.broadcast_to(np.arange(len(n))[:, None], sig.shape)[valid]
        col = (start[:, None] + j * u)[valid]
        digit = np.take_along_axis(digits, sig, axis=1)[valid]
        tokens[rows, col + (u - 1)] = tok.digit0_id + digit
        if self.hints:
            tokens[rows, col] = tok.hint0_id + (hint_start[:, None] + sig)[valid]

    def _insert_spaces(self, tokens: np.ndarray, lengths: np.ndarray, prompt_len: np.ndarray,
                       rng: np.random.Generator,
                       p: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Insert a space before each prompt token ``1..prompt_len-1`` with probability p."""
        B, T = tokens.shape
        t = np.arange(T)[None, :]
        ins = (rng.random((B, T)) < p) & (t >= 1) & (t < prompt_len[:, None])
        shift = np.cumsum(ins, axis=1)  # spaces inserted before (and at) token t
        out = np.full((B, T + int(shift[:, -1].max())), self.tokenizer.pad_id, np.int64)
        rows = np.broadcast_to(np.arange(B)[:, None], (B, T))
        real = t < lengths[:, None]
        out[rows[real], (t + shift)[real]] = tokens[real]
        out[rows[ins], (t + shift - 1)[ins]] = self.tokenizer.space_id
        total = shift[:, -1]
        return out, lengths + total, prompt_len + total

    # -- one example, as token strings ----------------------------------------------------
    def format(self, a: int, b: int, hint_start: int = 0, rng: np.random.Generator | None = None,
               space_prob: float = 0.0) -> list[str]:
        """Token strings of ``a + b`` (with ``<eos>``); the batched :meth:`encode` path."""
        d, n = int_to_digits([a, b])
        batch = self.encode(d[:1], d[1:], n[:1], n[1:], hint_start=[hint_start], rng=rng,
                            space_prob=space_prob)
        return self.tokenizer.decode(batch.tokens[0, : batch.lengths[0]])

    def render(self, tokens: Sequence[str] | Sequence[int] | np.ndarray) -> str:
        """Ids or token strings → text, without padding and from ``<eos>`` on."""
        toks = self.tokenizer.decode(tokens) if not _is_strings(tokens) else list(tokens)
        if "<eos>" in toks:
            toks = toks[: toks.index("<eos>")]
        return "".join(t for t in toks if t != "<pad>")

    def parse(self, tokens: str | Sequence[str] | Sequence[int] | np.ndarray
              ) -> tuple[int, int, int | None]:
        """``(a, b, c)`` from one example (ids, token strings or text); ``c`` is ``None`` when
        the answer is empty. Spaces and padding are ignored, reading stops at ``<eos>``.

        With hints, checks that each number's hints are the contiguous block ``s+k`` for
        significance ``k``, with one offset ``s`` for all three numbers (ValueError if not).
        """
        if isinstance(tokens, str):
            tokens = _TOKEN_RE.findall(tokens)
        toks = self.tokenizer.decode(tokens) if not _is_strings(tokens) else list(tokens)
        if "<eos>" in toks:
            toks = toks[: toks.index("<eos>")]
        toks = [t for t in toks if t not in (" ", "<pad>")]
        text = " ".join(toks)
        if toks.count("+") != 1 or toks.count("=") != 1 or toks.index("+") > toks.index("="):
            raise InputError(f"not an addition 'a + b = c': {text!r}")
        i, j = toks.index("+"), toks.index("=")
        parts = [toks[:i], toks[i + 1: j], toks[j + 1:]]
        orders = [False, False, self.reverse]  # least significant first?
        numbers, starts = [], set()
        for part, lsb_first in zip(parts, orders):
            if self.hints:
                hints, digits = part[0::2], part[1::2]
                if len(hints) != len(digits) or not all(h.startswith("<h") for h in hints):
                    raise InputError(f"expected <hint> digit pairs in {' '.join(part)!r}")
                sig = np.arange(len(digits)) if lsb_first else np.arange(len(digits))[::-1]
                offsets = {int(h[2:-1]) - int(k) for h, k in zip(hints, sig)}
                if len(offsets) > 1:
                    raise InputError(f"hints of {' '.join(part)!r} are not one contiguous block")
                starts |= offsets
            else:
                digits = part
            if not all(d.isdigit() for d in digits):
                raise InputError(f"expected digits, got {' '.join(part)!r} in {text!r}")
            ordered = digits[::-1] if lsb_first else digits
            numbers.append(int("".join(ordered)) if digits else None)
        if len(starts) > 1:
            raise InputError(f"hints are misaligned across the operands and the answer: {text!r}")
        if numbers[0] is None or numbers[1] is None:
            raise InputError(f"an operand is empty in {text!r}")
        return numbers[0], numbers[1], numbers[2]


def _is_strings(tokens: Any) -> TypeGuard[list[str] | tuple[str, ...]]:
    return isinstance(tokens, list | tuple) and len(tokens) > 0 and isinstance(tokens[0], str)
