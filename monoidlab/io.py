"""Atomic file writes: a temporary file in the same folder, then ``os.replace``.

A crash mid-write leaves the previous file intact, never a truncated one.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "a.json"
>>> atomic_write_text(p, "{}"); p.read_text()
'{}'
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write_bytes", "atomic_write_text", "atomic_torch_save", "write_section"]


def atomic_write_bytes(path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_text(path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_torch_save(obj, path) -> None:
    """``torch.save`` through a temporary file (checkpoints survive a kill mid-save)."""
    import io

    import torch

    buf = io.BytesIO()
    torch.save(obj, buf)
    atomic_write_bytes(path, buf.getvalue())


def write_section(path, name: str, text: str, title: str | None = None) -> None:
    """Replace (or append) the generated section ``name`` of a markdown file, atomically.

    Sections sit between ``<!-- begin NAME -->`` and ``<!-- end NAME -->``, so several
    generators (sweeps, benchmarks) can share one page without overwriting each other.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "r.md"
    >>> write_section(p, "a", "one"); write_section(p, "b", "two"); write_section(p, "a", "ONE")
    >>> p.read_text().count("ONE"), "one" in p.read_text(), "two" in p.read_text()
    (1, False, True)
    """
    path = Path(path)
    begin, end = f"<!-- begin {name} -->", f"<!-- end {name} -->"
    block = f"{begin}\n{text.rstrip()}\n{end}\n"
    old = path.read_text(encoding="utf-8") if path.is_file() else (f"# {title}\n\n" if title else "")
    if begin in old and end in old:
        head, rest = old.split(begin, 1)
        new = head + block + rest.split(end, 1)[1].lstrip("\n")
    else:
        new = old.rstrip("\n") + ("\n\n" if old.strip() else "") + block
    atomic_write_text(path, new)
