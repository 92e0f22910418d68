"""The ``monoidlab`` command: a thin layer over the Python API.

Every command prints a readable table, or JSON with ``--json``. Errors exit with status 2 and one
readable line (``monoidlab: error: ...``), never a traceback.

Example
-------
>>> from monoidlab.cli import main
>>> main(["monoid", "parity", "--json"])  # doctest: +ELLIPSIS
{...
0
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence

COMMANDS: dict[str, Callable] = {}


class CLIError(Exception):
    """An error the user can fix; printed as one line."""


def command(name: str, help: str):
    """Register ``fn(args)`` as a subcommand; ``fn.configure(parser)`` adds its options."""

    def deco(fn):
        fn.cli_name, fn.cli_help = name, help
        COMMANDS[name] = fn
        return fn

    return deco


def parse_range(text: str, what: str = "range") -> range:
    """``"41:500"`` → range(41, 501) (inclusive end, as in the papers); ``"40"`` → range(40, 41);
    ``"41:500:20"`` → every 20th length from 41 (the end is included when the step lands on it).
    """
    try:
        parts = [int(x) for x in str(text).split(":")]
    except ValueError:
        raise CLIError(f"{what}: expected A:B, A:B:STEP or N (integers), got {text!r}") from None
    if len(parts) == 1:
        parts = parts * 2
    if len(parts) not in (2, 3):
        raise CLIError(f"{what}: expected A:B, A:B:STEP or N, got {text!r}")
    lo, hi, step = parts[0], parts[1], parts[2] if len(parts) == 3 else 1
    if lo < 0 or hi < lo or step < 1:
        raise CLIError(f"{what}: need 0 <= A <= B and STEP >= 1, got {text!r}")
    return range(lo, hi + 1, step)


def emit(args, data, table: str) -> None:
    if getattr(args, "json", False):
        print(json.dumps(data, indent=2, default=_json_default))
    else:
        print(table)


def _json_default(obj):
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


def format_table(rows: list[dict], columns: Sequence[str]) -> str:
    """Plain fixed-width table (no pandas import for the fast commands)."""
    cells = [[str(c) for c in columns]] + [[_fmt(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _fmt(v) -> str:
    if isinstance(v, bool):
        return "yes" if v else "-"
    if isinstance(v, float):
        return f"{v:.3f}"
    if isinstance(v, list | tuple):
        return " ".join(map(str, v))
    return str(v)


# ---------------------------------------------------------------------- languages / monoid
@command("languages", "summary table of the language suite (states, |M|, Green's classes)")
def cmd_languages(args):
    import monoidlab as ml

    names = ml.suite(args.suite)
    rows = []
    for name in names:
        a = ml.load_language(name)
        s = a.monoid(max_elements=args.max_elements).summary()
        rows.append({"name": name, "states": s["states"], "alphabet": len(a.alphabet),
                     "classes": a.n_classes, "size": s["size"], "idempotents": s["idempotents"],
                     "j_classes": s["j_classes"], "group": s["group"], "aperiodic": s["aperiodic"],
                     "commutative": s["commutative"]})
    cols = ["name", "states", "alphabet", "classes", "size", "idempotents", "j_classes", "group",
            "aperiodic", "commutative"]
    emit(args, rows, format_table(rows, cols))


cmd_languages.configure = lambda p: (
    p.add_argument("--suite", default="all", help="ldru21, tomita, deletang-regular or all"),
    p.add_argument("--max-elements", type=int, default=1_000_000),
    p.add_argument("--json", action="store_true"))


@command("monoid", "the syntactic monoid of one language (size, Green's classes, properties)")
def cmd_monoid(args):
    import monoidlab as ml

    a = ml.load_language(args.language)
    m = a.monoid(max_elements=args.max_elements)
    s = m.summary()
    if args.elements:
        s["elements"] = [{"index": i, "word": w, "class": a.classes[m.outputs[i]]}
                         for i, w in enumerate(m.words)]
    lines = [f"{k:>14}: {v}" for k, v in s.items() if k != "elements"]
    if args.elements:
        lines += ["", format_table(s["elements"], ["index", "word", "class"])]
    emit(args, s, "\n".join(lines))


cmd_monoid.configure = lambda p: (
    p.add_argument("language", help="suite name (e.g. dyck-6) or path to a TOML spec"),
    p.add_argument("--max-elements", type=int, default=1_000_000),
    p.add_argument("--elements", action="store_true", help="also list every element's word"),
    p.add_argument("--json", action="store_true"))


# ---------------------------------------------------------------------- entry point
def _load_command_modules() -> None:
    """Commands of the other modules register themselves on import (cheap imports only)."""
    import importlib
    import pkgutil

    import monoidlab

    # every monoidlab/cli_*.py module adds its commands (one module per concern)
    for info in sorted(pkgutil.iter_modules(monoidlab.__path__), key=lambda i: i.name):
        if info.name.startswith("cli_"):
            importlib.import_module(f"monoidlab.{info.name}")


def build_parser() -> argparse.ArgumentParser:
    _load_command_modules()
    parser = argparse.ArgumentParser(prog="monoidlab", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, fn in COMMANDS.items():
        p = sub.add_parser(name, help=fn.cli_help, description=fn.cli_help)
        fn.configure(p)
        p.set_defaults(func=fn)
    return parser


def markdown_reference() -> str:
    """The CLI reference (docs/cli.md), generated from the parser so that it cannot drift."""
    cols = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # argparse wraps usage lines at the terminal width
    try:
        parser = build_parser()
        return _markdown(parser)
    finally:
        if cols is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = cols


def _markdown(parser) -> str:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    lines = ["# CLI reference", "",
             "Generated from the parser (`python -c \"from monoidlab.cli import "
             "markdown_reference as m; print(m())\" > docs/cli.md`). Every command prints a "
             "table, or JSON with `--json`; errors exit with status 2 and one line.", ""]
    for name, p in sub.choices.items():
        lines += [f"## `monoidlab {name}`", "", COMMANDS[name].cli_help, "", "```text",
                  p.format_usage().strip().replace("usage: ", ""), "```", ""]
        rows = []
        for a in p._actions:
            if isinstance(a, argparse._HelpAction):
                continue
            flag = ", ".join(a.option_strings) or a.dest
            default = "" if a.default in (None, False, argparse.SUPPRESS) else f" (default `{a.default}`)"
            rows.append(f"| `{flag}` | {(a.help or '').replace('|', '/')}{default} |")
        if rows:
            lines += ["| option | meaning |", "|---|---|", *rows, ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    from monoidlab.automaton import SpecError
    from monoidlab.monoid import MonoidTooLarge

    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    if extra and not getattr(args.func, "accepts_overrides", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.extra = extra
    if os.environ.get("MONOIDLAB_DEBUG"):  # full tracebacks for developers
        args.func(args)
        return 0
    try:
        args.func(args)
    except (CLIError, SpecError, MonoidTooLarge, FileNotFoundError, ValueError, KeyError,
            ImportError, RuntimeError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"monoidlab: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("monoidlab: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `monoidlab ... | head`: the reader left; not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return 0


if __name__ == "__main__":  # pragma: no cover
    # `python -m monoidlab.cli`: use the imported module, where the cli_* commands register
    from monoidlab.cli import main as _main

    sys.exit(_main())
