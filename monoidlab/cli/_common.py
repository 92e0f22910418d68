"""Pieces every command shares: the command decorator, output (table or JSON), ranges.

A command is a function ``fn(args)`` decorated with :func:`command`; its module lists it in
``COMMANDS`` and :mod:`monoidlab.cli` builds the parser from an explicit list of modules.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, cast

from monoidlab._util import format_table, print_json
from monoidlab.errors import InputError, UsageError
from monoidlab.geometry import Lengths, LengthsLike

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["UsageError", "Command", "command", "emit", "format_table",
           "parse_lengths", "json_default", "save_figure", "positive",
           "check_work"]


class Command(Protocol):
    """A subcommand: ``fn(args)`` with the attributes :func:`command` and its module set."""

    cli_name: str
    cli_help: str
    configure: Callable[[argparse.ArgumentParser], Any]  # adds the command's options
    accepts_overrides: bool  # optional (read with getattr): unknown --key=value pass through

    def __call__(self, args: argparse.Namespace) -> None: ...


def command(name: str, help: str) -> Callable[[Callable[[argparse.Namespace], None]], Command]:
    """Mark ``fn(args)`` as the subcommand ``name``; ``fn.configure(parser)`` adds its options."""

    def deco(fn: Callable[[argparse.Namespace], None]) -> Command:
        cmd = cast(Command, fn)  # the attributes are set here and in the command's module
        cmd.cli_name, cmd.cli_help = name, help
        return cmd

    return deco


def parse_lengths(text: str, option: str) -> Lengths:
    """``"41:500"`` (inclusive, as the papers write it), ``"40"`` or ``"41:500:20"`` as
    :class:`~monoidlab.geometry.Lengths`; a bad value is a usage error naming ``option``.

    >>> list(parse_lengths("41:45:2", "--test"))
    [41, 43, 45]
    """
    try:
        return Lengths.parse(text, option)
    except InputError as exc:
        raise UsageError(str(exc)) from None


def positive(value: int | None, option: str, minimum: int = 1) -> int | None:
    """``value`` unless it is below ``minimum`` (``--samples 0`` fails, it never means 64).

    >>> positive(3, "--r")
    3
    """
    if value is not None and value < minimum:
        raise UsageError(f"{option} must be >= {minimum}, got {value}")
    return value


def check_work(lengths: LengthsLike, per_length: int, option: str, exact: bool = True) -> None:
    """Refuse (one line, before any work) strings longer than ``MAX_LENGTH``, or too many
    strings or symbols (``per_length`` strings at each length; ``exact=False``: strings sampled
    into one array, bounded by ``MAX_BATCH_SYMBOLS``); see
    :func:`monoidlab._util.check_workload`."""
    from monoidlab._util import MAX_BATCH_SYMBOLS, MAX_SYMBOLS, check_workload

    try:
        check_workload(lengths, per_length, option,
                       MAX_SYMBOLS if exact else MAX_BATCH_SYMBOLS)
    except InputError as exc:
        raise UsageError(str(exc)) from None


def save_figure(fig: Figure, path: str | os.PathLike, **kwargs: Any) -> None:
    """``fig.savefig`` through a temporary file (no half-written PNG on a full disk)."""
    import io

    import matplotlib.pyplot as plt

    from monoidlab._util import atomic_write_bytes

    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png", **kwargs)
    finally:
        plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())


def emit(args: argparse.Namespace, data: Any, table: str) -> None:
    if getattr(args, "json", False):
        print_json(data, default=json_default)
    else:
        print(table)


def json_default(obj: Any) -> Any:
    import numpy as np

    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, range):
        return [obj.start, obj.stop - 1]
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")
