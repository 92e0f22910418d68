"""The base of every model's options: a frozen dataclass, built from plain values once, with
errors that name the option at fault.

Each model file defines its options beside the model (``MLPLDRUOptions`` in
``models/mlp_ldru.py``, ...): the fields are the model's hyper-parameters with their defaults
and meanings, ``check()`` validates the values, and the model reads ``self.options``. A run
config holds the options as this typed value; files and the command line write them as plain
keys (``model_options = { d = 32 }``, ``--model_options.d=32``).

Example
-------
>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class TinyOptions(ModelOptions):
...     hidden: int = 8
...     def check(self) -> None:
...         positive_int(self, "hidden")
>>> TinyOptions.build({"hidden": 4}).hidden
4
>>> TinyOptions.build({"hiden": 4}, "tiny")
Traceback (most recent call last):
...
monoidlab.errors.InputError: model 'tiny' has no option 'hiden' (did you mean 'hidden'?); its options: hidden
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

from monoidlab._suggest import did_you_mean
from monoidlab.errors import InputError

__all__ = ["ModelOptions", "positive_int", "probability", "one_of", "boolean"]

T = TypeVar("T", bound="ModelOptions")


@dataclasses.dataclass(frozen=True)
class ModelOptions:
    """A model's hyper-parameters (subclasses add the fields, with defaults)."""

    #: integer options that do not set the size of the model built from these options (a
    #: multiplier that only turns an automatic size into a number before the model is built):
    #: the memory check does not read them as sizes
    UNSIZED: ClassVar[frozenset[str]] = frozenset()

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Validate the values; raise :class:`~monoidlab.errors.InputError` naming the option."""

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def build(cls: type[T], values: Mapping[str, Any] | ModelOptions | None = None,
              model: str = "model") -> T:
        """The options of ``values`` (a mapping of option names, or options already built);
        an unknown name fails with the closest known one."""
        if values is None:
            return cls()
        if isinstance(values, cls):
            return values
        if isinstance(values, ModelOptions):
            raise InputError(f"model {model!r} takes {cls.__name__}, got "
                             f"{type(values).__name__}")
        if not isinstance(values, Mapping):
            raise InputError(f"model {model!r}: options must be a table of names, got "
                             f"{type(values).__name__} {values!r}")
        values = cls.split(dict(values))
        unknown = sorted(set(values) - set(cls.names()))
        if unknown:
            raise InputError(f"model {model!r} has no option {unknown[0]!r}"
                             f"{did_you_mean(unknown[0], cls.names())}; its options: "
                             f"{', '.join(cls.names())}")
        try:
            return cls(**values)
        except TypeError as exc:  # a value of a type the dataclass cannot take at all
            raise InputError(f"model {model!r}: {exc}") from None

    @classmethod
    def split(cls, values: dict[str, Any]) -> dict[str, Any]:
        """Hook: fold flat keys into structured fields (the Transformer's position options)."""
        return values

    def as_dict(self) -> dict[str, Any]:
        """Plain values (JSON, TOML, checkpoints), every option included."""
        import enum

        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            out[f.name] = list(v) if isinstance(v, tuple) else (
                v.value if isinstance(v, enum.Enum) else v)
        return out


def _bad(options: ModelOptions, name: str, need: str) -> InputError:
    value = getattr(options, name)
    return InputError(f"option {name!r}: {need}, got {type(value).__name__} {value!r}")


def positive_int(options: ModelOptions, name: str, minimum: int = 1) -> None:
    """``options.name`` is an integer >= ``minimum``."""
    v = getattr(options, name)
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise _bad(options, name, f"an integer >= {minimum}")


def probability(options: ModelOptions, name: str) -> None:
    """``options.name`` is a number in [0, 1)."""
    v = getattr(options, name)
    if isinstance(v, bool) or not isinstance(v, int | float) or not (
            math.isfinite(v) and 0 <= v < 1):
        raise _bad(options, name, "a number in [0, 1)")


def one_of(options: ModelOptions, name: str, choices: tuple[str, ...]) -> None:
    """``options.name`` is one of ``choices``."""
    v = getattr(options, name)
    if v not in choices:
        raise InputError(f"option {name!r}: unknown value {v!r}{did_you_mean(v, choices)}; "
                         f"choose from {', '.join(choices)}")


def boolean(options: ModelOptions, name: str) -> None:
    """``options.name`` is true or false."""
    if not isinstance(getattr(options, name), bool):
        raise _bad(options, name, "true or false")
