"""Pieces every command shares: the command decorator, output (table or JSON), ranges.

A command is a function ``fn(args)`` decorated with :func:`command`; its module lists it in
``COMMANDS`` and :mod:`monoidlab.cli` builds the parser from an explicit list of modules.
"""

from __future__ import annotations

import argparse
import json
import os
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

from monoidlab._util import Lengths, LengthsLike
from monoidlab.errors import InputError, UsageError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["CLIError", "UsageError", "Command", "command", "emit", "format_table",
           "parse_range", "json_default", "DeprecatedAlias", "save_figure", "positive",
           "check_work"]

CLIError = UsageError  # the name used before errors moved to monoidlab.errors


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


class DeprecatedAlias(argparse.Action):
    """Store the value like argparse's ``store``; an option spelled with one of its ``old``
    names (kept for one release) warns with a :class:`DeprecationWarning` naming the new one."""

    def __init__(self, option_strings: Sequence[str], dest: str, old: Sequence[str] = (),
                 **kw: Any) -> None:
        self.old = tuple(old)
        super().__init__(option_strings, dest, **kw)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        if option_string in self.old:
            new = next(o for o in self.option_strings if o not in self.old)
            warnings.warn(f"{option_string} is deprecated; use {new}", DeprecationWarning,
                          stacklevel=2)
        setattr(namespace, self.dest, values)


def parse_range(text: str, what: str = "range") -> range:
    """``"41:500"`` → range(41, 501) (inclusive end, as in the papers); ``"40"`` → range(40, 41);
    ``"41:500:20"`` → every 20th length from 41 (the end is included when the step lands on it).

    >>> parse_range("41:45:2")
    range(41, 46, 2)
    """
    try:
        lengths = Lengths.parse(text, what)
    except InputError as exc:
        raise UsageError(str(exc)) from None
    return range(lengths.start, lengths.stop + 1, lengths.step)


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
        print(json.dumps(data, indent=2, default=json_default))
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


def format_table(rows: list[dict[str, Any]], columns: Sequence[str]) -> str:
    """Plain fixed-width table (no pandas import for the fast commands)."""
    cells = [[str(c) for c in columns]] + [[_fmt(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "-"
    if isinstance(v, float):
        return f"{v:.3f}"
    if isinstance(v, list | tuple):
        return " ".join(map(str, v))
    return str(v)


