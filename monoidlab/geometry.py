"""Where a string sits in a model's tree: lengths, padding, offsets and buffer sizes, each
defined once.

* :class:`Lengths`: an inclusive range of string lengths as typed data (``Lengths(41, 500)``);
  ``"41:500"`` is only its text form, parsed by :meth:`Lengths.parse`.
* :func:`length_array`, :func:`range_text`: any lengths argument as a sorted array, and back
  to text.
* :func:`buffer_size`: the balanced tree's buffer, the next power of two.
* :class:`Padding`: what a balanced-tree model does with an all-padding child (``learned``:
  a learned constant leaf, so ``(x, ε)`` is a composition; ``identity``: the other child
  passes through).
* :class:`Offsets`: where training strings sit in their buffer (at 0, at random, or at given
  offsets), and the offsets of one length (:meth:`Offsets.for_length`).

Schedules, compositions, coverage, the models, the trainer, the report and the command line
all read these; none of them parses their text forms itself.

Example
-------
>>> Lengths.parse("41:500:20").values()[:3].tolist(), str(Lengths(1, 40)), buffer_size(5)
([41, 61, 81], '1:40', 8)
>>> Padding.parse("identity") is Padding.IDENTITY, Offsets.parse("random").for_length(5)[-1]
(True, np.int64(11))
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from monoidlab.errors import InputError, UnknownName

__all__ = ["Lengths", "LengthsLike", "length_array", "range_text", "buffer_size", "Padding",
           "Offsets", "OffsetsLike"]


# ------------------------------------------------------------------------------ lengths
@dataclass(frozen=True)
class Lengths:
    """Lengths ``start, start + step, ...`` up to ``stop`` *inclusive* (as the papers write
    41..500). Iterating yields ints; ``str()`` gives the text form ``"41:500"``.

    >>> list(Lengths(3, 9, 3)), len(Lengths(41, 500))
    ([3, 6, 9], 460)
    """

    start: int
    stop: int
    step: int = 1

    def __post_init__(self) -> None:
        for name in ("start", "stop", "step"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | np.integer):
                raise InputError(f"lengths: {name} must be an integer, got {v!r}")
        if self.start < 0 or self.stop < self.start or self.step < 1:
            raise InputError(f"lengths: need 0 <= start <= stop and step >= 1, got "
                             f"{self.start}:{self.stop}:{self.step}")

    @classmethod
    def parse(cls, value: Any, what: str = "lengths") -> Lengths:
        """``"A:B"``, ``"A:B:STEP"``, ``"N"``, an int, ``[A, B]``/``[A, B, STEP]``, a ``range``
        with a positive step, or a :class:`Lengths`. Errors name ``what``.

        >>> Lengths.parse("40"), Lengths.parse([1, 40]) == Lengths(1, 40)
        (Lengths(start=40, stop=40, step=1), True)
        """
        if isinstance(value, Lengths):
            return value
        if isinstance(value, range):
            if value.step < 1 or len(value) == 0:
                raise InputError(f"{what}: expected a non-empty increasing range, got {value!r}")
            return cls(value.start, value[-1], value.step)
        if isinstance(value, int | np.integer) and not isinstance(value, bool):
            parts = [int(value)]
        elif isinstance(value, str):
            try:
                parts = [int(x) for x in value.strip().split(":")]
            except ValueError:
                raise InputError(f"{what}: expected A:B, A:B:STEP or N (integers), got "
                                 f"{value!r}") from None
        elif isinstance(value, list | tuple) and all(
                isinstance(x, int | np.integer) and not isinstance(x, bool) for x in value):
            parts = [int(x) for x in value]
        else:
            raise InputError(f"{what}: expected A:B, A:B:STEP, N or a list [A, B], got "
                             f"{type(value).__name__} {value!r}")
        if len(parts) == 1:
            parts = parts * 2
        if len(parts) not in (2, 3):
            raise InputError(f"{what}: expected A:B, A:B:STEP or N, got {value!r}")
        try:
            return cls(*parts)
        except InputError:
            raise InputError(f"{what}: need 0 <= A <= B and STEP >= 1, got {value!r}") from None

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.start, self.stop + 1, self.step))

    def __len__(self) -> int:
        return len(range(self.start, self.stop + 1, self.step))

    @property
    def last(self) -> int:
        """The largest length in the range (``stop`` unless the step skips it)."""
        return range(self.start, self.stop + 1, self.step)[-1]

    def values(self) -> np.ndarray:
        """The lengths as an int64 array."""
        return np.arange(self.start, self.stop + 1, self.step, dtype=np.int64)

    def __str__(self) -> str:
        if self.start == self.stop:
            return str(self.start)
        return f"{self.start}:{self.stop}" + (f":{self.step}" if self.step != 1 else "")


#: What a ``lengths`` argument accepts (see :func:`length_array`).
LengthsLike = int | np.integer | range | Sequence[int] | np.ndarray | Lengths | str


def length_array(lengths: LengthsLike, what: str = "lengths") -> np.ndarray:
    """int | range | sequence | :class:`Lengths` | "A:B" → sorted unique non-negative int64 array.

    >>> length_array([5, 3, 5]).tolist(), length_array("2:4").tolist()
    ([3, 5], [2, 3, 4])
    """
    if isinstance(lengths, Lengths | str):
        return Lengths.parse(lengths, what).values()
    if isinstance(lengths, range):
        lengths = list(lengths)
    arr = np.atleast_1d(np.asarray(lengths))
    if arr.size == 0:
        raise InputError(f"{what}: empty")
    if not np.issubdtype(arr.dtype, np.integer) or arr.min() < 0:
        raise InputError(f"{what} must be non-negative integers, got {lengths!r}")
    return np.unique(arr.astype(np.int64))


def range_text(lengths: Iterable[int]) -> str:
    """``"41:500"`` for contiguous lengths, ``"41:499:2"`` for an evenly strided run of
    three or more, else a comma list.

    >>> range_text([3, 4, 5]), range_text([2, 4]), range_text([41, 43, 45]), range_text([1, 2, 4])
    ('3:5', '2,4', '41:45:2', '1,2,4')
    """
    arr = np.asarray(list(lengths) if not isinstance(lengths, np.ndarray) else lengths)
    if len(arr) and np.array_equal(arr, np.arange(arr[0], arr[-1] + 1)):
        return f"{arr[0]}:{arr[-1]}"
    if len(arr) >= 3:
        step = int(arr[1] - arr[0])
        if step > 1 and np.array_equal(arr, np.arange(arr[0], arr[-1] + 1, step)):
            return f"{arr[0]}:{arr[-1]}:{step}"
    return ",".join(map(str, arr.tolist()))


# ------------------------------------------------------------------------------ buffers
def buffer_size(n: int) -> int:
    """The balanced tree's buffer for ``n`` positions: ``2**ceil(log2 n)`` (1 for n <= 1).

    >>> [buffer_size(n) for n in (0, 1, 2, 3, 8, 9, 513)]
    [1, 1, 2, 4, 8, 16, 1024]
    """
    return 1 << max(0, int(n) - 1).bit_length()


# ------------------------------------------------------------------------------ padding
class Padding(enum.StrEnum):
    """What a balanced-tree model does with a node whose child is all padding.

    ``LEARNED`` (the papers'): the padding leaf is a learned constant, so ``(x, ε)`` is a real
    composition the model must learn. ``IDENTITY``: the node passes its other child through,
    so such nodes compose nothing. A ``str``: ``Padding.IDENTITY == "identity"``.
    """

    LEARNED = "learned"
    IDENTITY = "identity"

    @classmethod
    def parse(cls, value: Any, what: str = "padding") -> Padding:
        """A :class:`Padding` from itself or its name; the error lists the choices.

        >>> Padding.parse("learned")
        <Padding.LEARNED: 'learned'>
        """
        try:
            return cls(value)
        except ValueError:
            raise UnknownName(f"{what}: unknown padding {value!r}; choose from "
                              f"{', '.join(p.value for p in cls)}") from None


# ------------------------------------------------------------------------------ offsets
#: What an ``offsets`` argument accepts (see :meth:`Offsets.parse`).
OffsetsLike = Any  # Offsets | None | "none" | "random" | int | sequence of ints


@dataclass(frozen=True)
class Offsets:
    """Where strings sit in their balanced buffer (left padding before them).

    ``mode``: ``"none"`` (every string at offset 0), ``"random"`` (a string of length L at an
    offset drawn uniformly from 0..B−L, B = ``buffer`` or, when that is None, the next power
    of two >= 2L, so that every string can move inside one doubled buffer) or ``"fixed"``
    (the offsets ``values``, each equally likely). Test strings always sit at offset 0.

    >>> Offsets.parse("random", buffer=8).for_length(3).tolist(), str(Offsets.parse([0, 2]))
    ([0, 1, 2, 3, 4, 5], '0,2')
    """

    mode: str = "none"
    buffer: int | None = None
    values: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in ("none", "random", "fixed"):
            raise InputError(f"offsets: mode must be none, random or fixed, got {self.mode!r}")
        if self.buffer is not None and (isinstance(self.buffer, bool) or not isinstance(
                self.buffer, int | np.integer) or self.buffer < 1):
            raise InputError(f"offset_buffer: must be an integer >= 1, got {self.buffer!r}")
        if self.buffer is not None and self.mode != "random":
            raise InputError("offset_buffer: only random offsets have a buffer")
        if (self.mode == "fixed") != bool(self.values):
            raise InputError("offsets: fixed offsets need values (and only they have them)")
        if any(v < 0 for v in self.values):
            raise InputError(f"offsets must be non-negative, got {list(self.values)}")

    @classmethod
    def parse(cls, value: Any, buffer: int | None = None, what: str = "offsets") -> Offsets:
        """An :class:`Offsets` from ``None``/``"none"``/``0`` (none), ``"random"`` (with
        ``buffer``), an int or a list of ints (fixed), or an :class:`Offsets`.

        >>> Offsets.parse(None) == Offsets.parse("none") == Offsets.parse(0) == Offsets()
        True
        """
        if isinstance(value, Offsets):
            if buffer is not None and value.buffer != buffer:
                return cls(value.mode, buffer, value.values)
            return value
        if value is None or (isinstance(value, str) and value == "none"):
            return cls("none", buffer) if buffer is not None else cls()
        if isinstance(value, str):
            if value != "random":
                raise InputError(f"{what}: expected 'none', 'random', an int or a list of "
                                 f"ints, got {value!r}")
            return cls("random", buffer)
        try:
            arr = np.atleast_1d(np.asarray(value))
        except (ValueError, TypeError):  # ragged or nested lists
            arr = np.zeros(0)
        if arr.size == 0 or not np.issubdtype(arr.dtype, np.integer) or arr.ndim != 1:
            raise InputError(f"{what}: expected 'none', 'random', an int or a list of ints, "
                             f"got {value!r}")
        if arr.min() < 0:
            raise InputError(f"{what} must be non-negative, got {arr.tolist()}")
        if not arr.any():
            return cls()
        return cls("fixed", None, tuple(int(v) for v in arr))

    @classmethod
    def random(cls, buffer: int | None = None) -> Offsets:
        """Random offsets in a buffer of ``buffer`` positions (None: 2L rounded up)."""
        return cls("random", buffer)

    @property
    def none(self) -> bool:
        """Every string at offset 0."""
        return self.mode == "none" or (self.mode == "fixed" and not any(self.values))

    def for_length(self, length: int) -> np.ndarray:
        """The offsets a string of ``length`` may take, each equally likely (int64)."""
        if self.mode == "none":
            return np.zeros(1, np.int64)
        if self.mode == "fixed":
            return np.asarray(self.values, np.int64)
        B = self.buffer or buffer_size(2 * int(length))
        if B < length:
            raise InputError(f"offset_buffer {B} < length {length}")
        return np.arange(0, B - int(length) + 1)

    def __str__(self) -> str:
        if self.mode == "fixed":
            return ",".join(map(str, self.values))
        return self.mode if self.buffer is None else f"{self.mode} (buffer {self.buffer})"
