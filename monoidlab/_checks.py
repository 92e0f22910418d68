"""Argument checks of the public API: one place, one wording, one error class.

The command line and the config reader refuse bad values in one line; a Python caller meets
the same refusals here (an :class:`~monoidlab.errors.InputError` naming the argument), never a
numpy or torch traceback from deep inside.

* :func:`check_seed`: ``None``, a ``numpy.random.Generator``, or an integer in 0 .. 2^63 - 1.
* :func:`check_count`: a positive (or non-negative) integer, ``bool`` refused.
* :func:`check_threads`: 0 (the library's default) .. this machine's cores.
* :func:`check_threshold`: a finite number in (0, 1].
* :func:`check_index`: integers (scalars or arrays) in 0 .. n - 1; floats are not truncated,
  negatives do not wrap.
* :func:`check_probability`: a finite number in (0, 1) (a failure probability ``delta``).
* :func:`scalar_args`: a function's ``int`` / ``float`` / ``bool`` / ``str`` arguments
  checked against their annotations (the task constructors use it).
* :func:`read_only`, :class:`FrozenList`: results that a cache shares between callers (a
  monoid's arrays and word lists) refuse changes: numpy raises ``ValueError: assignment
  destination is read-only``, a :class:`FrozenList` raises :class:`ReadOnlyError`.

Example
-------
>>> check_seed(3), check_threshold(0.99), check_count(5, "n")
(3, 0.99, 5)
>>> check_seed(-1)
Traceback (most recent call last):
...
monoidlab.errors.InputError: seed: an integer in 0 .. 2^63 - 1 (or None, a numpy Generator), got -1
"""

from __future__ import annotations

import functools
import math
import numbers
import os
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np

from monoidlab.errors import InputError, MonoidlabError

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["removed_keywords", "scalar_args", "check_record", "check_bool", "OFFSETS_NOW", "MAX_SEED", "check_seed", "check_count", "check_threads", "check_threshold",
           "check_index", "check_probability", "check_str", "is_int", "read_only", "FrozenList",
           "ReadOnlyError"]

MAX_SEED = 2**63 - 1  # numpy and torch both take seeds up to here
#: what replaced the removed ``offset_buffer=`` arguments
OFFSETS_NOW = "offsets=Offsets.random(N) (monoidlab.geometry.Offsets carries its buffer)"


def is_int(value: Any) -> bool:
    """An integer (Python or numpy), not a ``bool``."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)


def check_seed(seed: Any, what: str = "seed", *, generator: bool = True,
               none: bool = True) -> Any:
    """``seed`` unchanged when it is ``None`` (when ``none``), a ``numpy.random.Generator``
    (when ``generator``) or an integer in 0 .. 2^63 - 1; :class:`InputError` otherwise.

    >>> check_seed(None) is None, check_seed(2**63 - 1) == 2**63 - 1
    (True, True)
    """
    if (none and seed is None) or (generator and isinstance(seed, np.random.Generator)):
        return seed
    if not is_int(seed) or not 0 <= int(seed) <= MAX_SEED:
        extra = [x for x, ok in (("None", none), ("a numpy Generator", generator)) if ok]
        alt = f" (or {', '.join(extra)})" if extra else ""
        raise InputError(f"{what}: an integer in 0 .. 2^63 - 1{alt}, got {_shown(seed)}")
    return int(seed)


def _shown(value: Any) -> str:
    """``repr(value)``, cut to one short line (a hostile value may be huge or multi-line)."""
    text = " ".join(repr(value).split())
    return text if len(text) <= 60 else text[:57] + "..."


def check_count(value: Any, what: str, *, minimum: int = 1, maximum: int | None = None) -> int:
    """An integer in ``minimum`` .. ``maximum`` (``bool`` and floats refused).

    >>> check_count(0, "n", minimum=0)
    0
    """
    if not is_int(value) or value < minimum or (maximum is not None and value > maximum):
        upper = f" .. {maximum:,}" if maximum is not None else " or more"
        raise InputError(f"{what}: an integer {minimum}{upper}, got {_shown(value)}")
    return int(value)


def check_threads(threads: Any, what: str = "threads") -> int:
    """0 (the library's default) up to this machine's cores: more makes OpenBLAS fail to start
    its threads and crash the process."""
    cores = os.cpu_count() or 1
    if not is_int(threads) or not 0 <= threads <= cores:
        raise InputError(f"{what}: an integer in 0 .. {cores} (this machine's cores; 0: the "
                         f"library's default), got {_shown(threads)}")
    return int(threads)


def check_threshold(threshold: Any, what: str = "threshold") -> float:
    """A finite number in (0, 1]: NaN compares false with everything and would call every
    model solved, a threshold above 1 can never be met."""
    if (not isinstance(threshold, numbers.Real) or isinstance(threshold, bool)
            or not math.isfinite(threshold) or not 0 < float(threshold) <= 1):
        raise InputError(f"{what}: a number in (0, 1], got {_shown(threshold)}")
    return float(threshold)


def check_probability(value: Any, what: str = "delta") -> float:
    """A finite number strictly between 0 and 1 (``bool`` refused).

    >>> check_probability(0.01)
    0.01
    """
    if (not isinstance(value, numbers.Real) or isinstance(value, bool | np.bool_)
            or not math.isfinite(value) or not 0 < float(value) < 1):
        raise InputError(f"{what}: a number in (0, 1), got {_shown(value)}")
    return float(value)


def check_str(value: Any, what: str) -> str:
    """A ``str`` (names, labels, symbols); anything else is an :class:`InputError`.

    >>> check_str("side", "side")
    'side'
    """
    if not isinstance(value, str):
        raise InputError(f"{what}: a string, got {type(value).__name__} {_shown(value)}")
    return value


def check_bool(value: Any, what: str) -> bool:
    """``True`` or ``False`` (a numpy bool too); a truthy string such as ``"no"`` is refused.

    >>> check_bool(np.True_, "flag")
    True
    """
    if not isinstance(value, bool | np.bool_):
        raise InputError(f"{what}: True or False, got {type(value).__name__} {_shown(value)}")
    return bool(value)


def check_index(index: Any, n: int, what: str = "element") -> np.ndarray:
    """``index`` as an int64 array (a scalar gives a 0-d array), every entry in 0 .. n - 1.

    >>> check_index([0, 2], 3).tolist()
    [0, 2]
    >>> check_index(-1, 3)
    Traceback (most recent call last):
    ...
    monoidlab.errors.InputError: element: indices in 0 .. 2, got -1
    """
    try:
        arr = np.asarray(index)
    except (TypeError, ValueError, OverflowError):  # ragged nests, huge Python ints...
        arr = np.asarray(None, dtype=object)
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer) or (
            arr.dtype == object and arr.size and all(is_int(x) for x in arr.reshape(-1)))):
        shown = _shown(index) if arr.size <= 8 else f"an array of {arr.dtype}"
        raise InputError(f"{what}: integer indices in 0 .. {n - 1}, got {shown}")
    if arr.dtype == object:  # Python ints beyond int64
        big = [x for x in arr.reshape(-1) if not -2**63 <= int(x) < 2**63]
        if big:
            raise InputError(f"{what}: indices in 0 .. {n - 1}, got {_shown(big[0])}")
    if arr.dtype == np.uint64 and arr.size and int(arr.max()) >= 2**63:
        raise InputError(f"{what}: indices in 0 .. {n - 1}, got {int(arr.max())}")
    arr = arr.astype(np.int64, copy=False)
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= n):
        bad = arr[(arr < 0) | (arr >= n)].reshape(-1)[0]
        raise InputError(f"{what}: indices in 0 .. {n - 1}, got {int(bad)}")
    return arr


# ------------------------------------------------------------------------------ read-only results
class ReadOnlyError(MonoidlabError, TypeError, AttributeError):
    """A result shared through a cache (a monoid's word lists, its attributes) refuses changes:
    a ``TypeError`` as a tuple's items, an ``AttributeError`` as a frozen dataclass's fields."""


def read_only(arr: np.ndarray) -> np.ndarray:
    """``arr`` itself, marked read-only (writes raise ``ValueError: assignment destination is
    read-only``); for arrays a cache hands to every caller.

    >>> a = read_only(np.zeros(2)); a.flags.writeable
    False
    """
    arr.flags.writeable = False
    return arr


class FrozenList(list):
    """A list that refuses changes: reads, ``==`` with lists, JSON and pickling work as for a
    list; every change raises :class:`ReadOnlyError` (copy it with ``list(...)`` first).

    >>> words = FrozenList(["", "1"]); words == ["", "1"], words[1]
    (True, '1')
    >>> words[1] = "x"
    Traceback (most recent call last):
    ...
    monoidlab._checks.ReadOnlyError: this list is shared by a cache and read-only; copy it first: list(...)
    """

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise ReadOnlyError("this list is shared by a cache and read-only; copy it first: "
                            "list(...)")

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __reduce__(self) -> tuple:
        return (FrozenList, (list(self),))

    def __copy__(self) -> FrozenList:
        return self

    def __deepcopy__(self, memo: dict) -> FrozenList:
        import copy

        return FrozenList(copy.deepcopy(list(self), memo))


def removed_keywords(**gone: str) -> Callable[[F], F]:
    """A function whose keyword arguments of earlier releases were removed: calling it with
    one raises :class:`~monoidlab.errors.InputError` naming the keyword and what replaced it,
    never Python's "unexpected keyword argument".

    >>> @removed_keywords(offset_buffer="offsets=Offsets.random(N)")
    ... def f(x, offsets=None):
    ...     return x
    >>> f(1, offset_buffer=2)
    Traceback (most recent call last):
    ...
    monoidlab.errors.InputError: f: the argument 'offset_buffer' was removed; use offsets=Offsets.random(N) (docs/architecture.md, renamed)
    """
    def wrap(func: F) -> F:
        @functools.wraps(func)
        def checked(*args: Any, **kwargs: Any) -> Any:
            for name in kwargs.keys() & gone.keys():
                raise InputError(f"{func.__name__}: the argument {name!r} was removed; use "
                                 f"{gone[name]} (docs/architecture.md, renamed)")
            return func(*args, **kwargs)

        return cast(F, checked)

    return wrap


def _scalar_kind(annotation: Any) -> tuple[str, bool] | None:
    """('int' | 'float' | 'bool' | 'str', None allowed) for a plain scalar annotation (the
    string form ``from __future__ import annotations`` keeps), else None."""
    parts = {p.strip() for p in str(annotation).replace("typing.", "").split("|")}
    kinds = parts - {"None"}
    if len(kinds) == 1 and (kind := next(iter(kinds))) in ("int", "float", "bool", "str"):
        return kind, "None" in parts
    return None


#: integer arguments that are at least 1 wherever they appear (a batch of 0 never ends a loop)
POSITIVE_ARGS = frozenset({"batch_size"})


def _scalar(value: Any, kind: str, nullable: bool, what: str, name: str = "") -> Any:
    if value is None and nullable:
        return None
    if kind == "int" and is_int(value):
        least = 1 if name in POSITIVE_ARGS else 0  # every other one is a size, count or seed
        if value < least:
            raise InputError(f"{what}: an integer {least} or more, got {_shown(value)}")
        return int(value)
    if kind == "float" and isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_):
        if not math.isfinite(value):
            raise InputError(f"{what}: a finite number, got {_shown(value)}")
        return float(value)
    if kind == "bool" and isinstance(value, bool | np.bool_):
        return bool(value)
    if kind == "str" and isinstance(value, str):
        return value
    word = {"int": "an integer", "float": "a number", "bool": "True or False",
            "str": "a string"}[kind]
    raise InputError(f"{what}: {word}{' or None' if nullable else ''}, got "
                     f"{type(value).__name__} {_shown(value)}")


def scalar_args(func: F, what: Callable[[str], str] | None = None) -> F:
    """``func`` with its scalar arguments checked against their annotations before the call:
    an ``int`` is an integer 0 or more (1 or more for :data:`POSITIVE_ARGS`; ``bool``
    refused, numpy integers become ``int``), a
    ``float`` a finite number, a ``bool`` ``True`` / ``False`` (not a truthy string), a ``str``
    a string; ``| None`` admits ``None``. ``what(name)`` words the argument in errors.

    >>> def f(n: int = 2, flag: bool = False): return n, flag
    >>> scalar_args(f)(np.int64(3), True)
    (3, True)
    >>> scalar_args(f)(flag="no")
    Traceback (most recent call last):
    ...
    monoidlab.errors.InputError: flag: True or False, got str 'no'
    """
    import inspect

    sig = inspect.signature(func)
    kinds = {n: k for n, p in sig.parameters.items() if (k := _scalar_kind(p.annotation))}
    if not kinds:
        return func
    name_of = what or (lambda n: n)

    @functools.wraps(func)
    def checked(*args: Any, **kwargs: Any) -> Any:
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError:
            return func(*args, **kwargs)  # Python's own message names the argument
        for n, v in bound.arguments.items():
            if n in kinds:
                bound.arguments[n] = _scalar(v, *kinds[n], name_of(n), n)
        return func(*bound.args, **bound.kwargs)

    return cast(F, checked)


def check_record(record: Any, what: str | None = None) -> None:
    """A dataclass's scalar fields checked against their annotations, as :func:`scalar_args`
    checks arguments (numpy integers become ``int``): records the API returns can also be
    built by hand, and a wrong field must fail where it is given, not where it is read.
    Call it from ``__post_init__``.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class R:
    ...     n: int
    ...     def __post_init__(self): check_record(self)
    >>> R(np.int64(2)).n.__class__.__name__
    'int'
    >>> R("2")
    Traceback (most recent call last):
    ...
    monoidlab.errors.InputError: R: field n: an integer, got str '2'
    """
    import dataclasses

    label = what or type(record).__name__
    for f in dataclasses.fields(record):
        kind = _scalar_kind(f.type)
        if kind is not None:
            value = _scalar(getattr(record, f.name), *kind, f"{label}: field {f.name}", f.name)
            object.__setattr__(record, f.name, value)  # frozen dataclasses too
