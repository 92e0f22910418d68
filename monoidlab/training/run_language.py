"""The language a run was trained on, carried by the run itself.

A run records its language's spec (the TOML text, the file's name and its SHA-256) in every
checkpoint, where the checkpoint's checksum covers it. Evaluating, resuming, probing or
reporting a run then reads that copy, so a run loads from any working directory, after its
folder is moved, and on another machine. When the file the run names is there and its
content differs from the copy, a warning says so and the copy is used: the weights were
trained on the copy. Runs written before this record load their language by name, as before.

Example
-------
>>> rec = record_language("parity")
>>> rec["name"], rec["file"], len(rec["sha256"])
('parity', 'parity.toml', 64)
>>> language_of_record(rec, "checkpoint.pt").name
'parity'
"""

from __future__ import annotations

import hashlib
import os
import warnings
from functools import lru_cache
from pathlib import Path
from typing import Any

from monoidlab.algebra.automaton import Automaton
from monoidlab.errors import CheckpointError, MonoidlabError, SpecError

__all__ = ["RECORD_KEY", "record_language", "language_of_record", "run_language"]

#: The checkpoint entry that holds the record.
RECORD_KEY = "language_spec"
_FIELDS = {"name": str, "file": str, "path": str, "sha256": str, "text": str}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def record_language(name: str) -> dict[str, str]:
    """The record of the language ``name`` (a suite name or a spec path) as it is now:
    ``{"name": as given, "file", "path" (absolute, for messages), "sha256", "text"}``."""
    from monoidlab.algebra.languages import spec_path

    path = spec_path(name)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(str(name), "<file>", f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise SpecError(str(name), "<file>", "not UTF-8 text") from None
    return {"name": str(name), "file": path.name, "path": str(path.resolve()),
            "sha256": _sha(text), "text": text}


@lru_cache(maxsize=32)
def _from_text(text: str, stem: str, source: str) -> Automaton:
    from monoidlab.algebra.spec import spec_from_text

    return spec_from_text(text, source, stem)


def language_of_record(record: Any, source: str) -> Automaton:
    """The automaton of a run's record (``source`` names the checkpoint in errors). A
    record whose text does not match its hash is refused; a file at the run's language path
    whose content differs is named in a warning, and the record is used."""
    if not isinstance(record, dict) or any(not isinstance(record.get(k), t)
                                           for k, t in _FIELDS.items()):
        raise CheckpointError(f"{source}: its language record ({RECORD_KEY!r}) is malformed")
    if _sha(record["text"]) != record["sha256"]:
        raise CheckpointError(f"{source}: its copy of the language {record['name']!r} does not "
                              "match its hash (the file was edited); refusing to load")
    current = _current_sha(record["name"])
    if current is not None and current != record["sha256"]:
        warnings.warn(f"{record['name']}: this spec has changed since the run in {source} was "
                      "trained; the run's own copy of the spec is used", stacklevel=3)
    stem = Path(record["file"]).stem
    return _from_text(record["text"], stem, f"{source} (its copy of {record['name']})")


def _current_sha(name: str) -> str | None:
    """The hash of the file ``name`` resolves to now, or None where there is none."""
    try:
        return record_language(name)["sha256"]
    except (MonoidlabError, OSError):
        return None


def run_language(name: str, ckpt: dict | None, source: str) -> Automaton:
    """The language of a run: its checkpoint's record when it has one, else ``name`` loaded
    as given (runs written before the record), with an error that says where it looked."""
    if ckpt is not None and RECORD_KEY in ckpt:
        return language_of_record(ckpt[RECORD_KEY], source)
    from monoidlab.algebra.languages import load_language

    try:
        return load_language(name)
    except SpecError as exc:
        if os.path.isabs(name) or "no such file" not in str(exc):
            raise
        raise SpecError(name, "<file>", f"no such file in {Path.cwd()}; this run ({source}) "
                        "predates runs that carry their spec: run it from the folder it was "
                        "trained in") from None
