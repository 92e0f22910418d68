"""The one error tree of monoidlab: every error a user can cause is a :class:`MonoidlabError`.

The command line catches exactly this root (plus ``OSError`` and ``MemoryError``, turned into
one line each); anything else is a bug and keeps its traceback. Each class also derives from
the builtin exception its callers used to catch (``ValueError``, ``RuntimeError``, ...), so
``except ValueError`` keeps working.

Example
-------
>>> from monoidlab.errors import MonoidlabError, SpecError
>>> try:
...     raise SpecError("dyck.toml", "alphabet", "the alphabet is empty")
... except MonoidlabError as exc:
...     print(exc)
dyck.toml: field 'alphabet': the alphabet is empty
"""

from __future__ import annotations

__all__ = ["MonoidlabError", "InputError", "UnknownName", "SpecError", "ConfigError",
           "UsageError", "MonoidTooLarge", "CheckpointError", "TrainingDiverged",
           "MissingDependency", "OutputPathError", "RunExists"]


class MonoidlabError(Exception):
    """Root of every error a user can cause; the message is one readable line."""


class InputError(MonoidlabError, ValueError):
    """A bad argument value: lengths, token batches, options of a function."""


class UnknownName(InputError):
    """A name that is not registered: a language, suite, model, task, sampler, schedule..."""


class SpecError(InputError):
    """A language spec (or automaton description) is invalid; names the source and the field."""

    def __init__(self, source: str, field: str, message: str) -> None:
        self.source, self.field = source, field
        super().__init__(f"{source}: field {field!r}: {message}")


class ConfigError(InputError):
    """A training config, sweep file or override is invalid; names the source and the key."""


class UsageError(InputError):
    """A command line that cannot be carried out as written (printed as one line)."""


class MonoidTooLarge(MonoidlabError, RuntimeError):
    """A monoid (or a table over it) is larger than the size budget allows."""


class CheckpointError(MonoidlabError, RuntimeError):
    """A checkpoint is missing, unreadable, unsafe, or not a monoidlab checkpoint."""


class TrainingDiverged(MonoidlabError, RuntimeError):
    """The loss or the gradient became NaN or infinite; the last good checkpoint is kept."""


class MissingDependency(MonoidlabError, ImportError):
    """An optional extra is not installed; the message names the ``pip install`` to run."""


class OutputPathError(MonoidlabError, OSError):
    """An output path escapes its folder, or is not a folder where one is needed."""


class RunExists(MonoidlabError, FileExistsError):
    """A run folder already holds a run (continue it with ``resume=True`` or replace it with
    ``overwrite=True``; on the command line ``--resume`` / ``--overwrite``)."""
