"""The ``monoidlab`` command: a thin layer over the Python API.

Every command prints a readable table, or JSON with ``--json``. An error the user can cause
(a :class:`~monoidlab.errors.MonoidlabError`, a file that cannot be read or written, memory
running out) exits with status 2 and one line ``monoidlab: error: ...``; anything else is a bug
and keeps its traceback (set ``MONOIDLAB_DEBUG=1`` for tracebacks of every error).

The commands come from an explicit list of modules, one per concern: :mod:`.algebra`
(languages, monoid), :mod:`.analysis` (coverage, min-length), :mod:`.probe`, :mod:`.report`
(report, demo), :mod:`.training` (train, evaluate, sweep), :mod:`.studies` (study) and
:mod:`.text` (text-sample).

Example
-------
>>> from monoidlab.cli import main
>>> main(["monoid", "parity", "--json"])  # doctest: +ELLIPSIS
{...
0
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence
from typing import NoReturn, TextIO

from monoidlab.cli import algebra, analysis, probe, report, studies, text, training
from monoidlab.cli._common import Command, UsageError, command, emit, format_table, parse_lengths
from monoidlab.errors import MonoidlabError

__all__ = ["main", "build_parser", "markdown_reference", "COMMANDS", "UsageError", "command",
           "emit", "format_table", "parse_lengths", "cli_words"]

MODULES = (algebra, analysis, probe, report, training, studies, text)  # the order of `monoidlab --help`
COMMANDS: dict[str, Command] = {fn.cli_name: fn for m in MODULES for fn in m.COMMANDS}


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``monoidlab: error: ...``), like every other failure."""

    def error(self, message: str) -> NoReturn:
        print(f"monoidlab: error: {self.prog}: {message} (see {self.prog} --help)",
              file=sys.stderr)
        sys.exit(2)


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser with every subcommand of :data:`COMMANDS`."""
    parser = _Parser(prog="monoidlab", description=__doc__.split("\n")[0])
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


def _markdown(parser: argparse.ArgumentParser) -> str:
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
        if getattr(COMMANDS[name], "accepts_overrides", False):
            lines += ["Every config key is also an option `--KEY=VALUE` (`monoidlab "
                      f"{name} --help` lists them with their types, defaults and meanings; the "
                      "same table is in [training.md](training.md#configs)).", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0, 2 on a user error, 130 on Ctrl-C)."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    if extra and not getattr(args.func, "accepts_overrides", False):
        _unknown_arguments(parser, args, extra)
    args.extra = extra
    if os.environ.get("MONOIDLAB_DEBUG"):  # full tracebacks for developers
        args.func(args)
        return 0
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        return _run(args)


#: options of earlier releases, and what replaced them (docs/architecture.md, "renamed")
RENAMED_OPTIONS = {"--train-offsets": "--offsets", "--offset-buffer": "--offsets random:N"}


def _unknown_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace,
                       extra: list[str]) -> None:
    """One line per unknown argument: a renamed option's new name, else the closest option of
    this command; then the command's own help (not the top-level one)."""
    from monoidlab._suggest import did_you_mean

    name = next((n for n, f in COMMANDS.items() if f is args.func), None)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    target = sub.choices.get(name, parser) if name else parser
    known = [o for a in target._actions for o in a.option_strings]
    said, after_option = [], False
    for x in extra:
        flag = x.split("=", 1)[0]
        if flag in RENAMED_OPTIONS:
            said.append(f"{flag} is now {RENAMED_OPTIONS[flag]}")
        elif flag.startswith("-"):
            said.append(f"unknown option {flag}{did_you_mean(flag, known)}")
        elif not after_option:  # (a value right after an unknown option is its value)
            said.append(f"unexpected argument {x!r}")
        after_option = flag.startswith("-") and "=" not in x
    target.error("; ".join(said))  # the command's parser adds its --help


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    """Warnings as one line each (``monoidlab: warning: ...``), without source lines."""
    print(f"monoidlab: warning: {message}", file=sys.stderr)


def _run(args: argparse.Namespace) -> int:
    try:
        args.func(args)
    except MonoidlabError as exc:
        return _fail(cli_words(str(exc)))
    except BrokenPipeError:  # `monoidlab ... | head`: the reader left; not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # unreadable / unwritable files, full disks: one line, no traceback
        where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
        return _fail(f"{exc.strerror or exc}{where}")
    except MemoryError:
        return _fail("out of memory; try smaller lengths, batches or monoids")
    except KeyboardInterrupt:
        print("monoidlab: interrupted", file=sys.stderr)
        return 130
    return 0


#: How the Python API names an argument in its errors, and the option that sets it here.
API_TO_CLI = {"resume=True": "--resume", "overwrite=True": "--overwrite",
              "out_dir:": "--out:", "(out_dir)": "(--out)", "stop_at": "--until",
              "other_language=True": "--other-language"}


def cli_words(message: str) -> str:
    """An API error in the words of the command line (``resume=True`` → ``--resume``).

    >>> cli_words("run/ already holds a run; continue it with resume=True")
    'run/ already holds a run; continue it with --resume'
    """
    for api, flag in API_TO_CLI.items():
        message = message.replace(api, flag)
    return message


def _fail(message: str) -> int:
    print(f"monoidlab: error: {message}", file=sys.stderr)
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
