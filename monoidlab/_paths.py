"""Output paths that stay where they belong: names made safe as file names, paths confined to
their output folder, and output folders checked before any work is done.

* :func:`slugify`: any text (a language name from a spec, a task path) → a safe file name.
* :func:`confine`: resolve a path and refuse it unless it lies inside a given root.
* :func:`check_output_dir`: refuse, in one line and *before* minutes of work, an output folder
  that is a file, lies under a file, or cannot be created or written; creates nothing.
* :func:`ensure_dir`: create an output folder, with the same one-line errors.

Every refusal is an :class:`~monoidlab.errors.OutputPathError` naming the option and the path.

Example
-------
>>> slugify("../../etc/passwd"), slugify("/abs/dyck 6.toml"), slugify("dyck-6")
('etc-passwd', 'abs-dyck-6.toml', 'dyck-6')
>>> import tempfile
>>> root = tempfile.mkdtemp()
>>> confine(f"{root}/runs/a", root).name
'a'
>>> confine(f"{root}/../x", root)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
monoidlab.errors.OutputPathError: output path: .../x lies outside ...
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from monoidlab.errors import OutputPathError

__all__ = ["slugify", "confine", "is_within", "check_output_dir", "ensure_dir"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._+=-]+")


def slugify(name: str, default: str = "unnamed", max_length: int = 100) -> str:
    """A file name made of ``name``: letters, digits and ``. _ + = -`` only (every other run of
    characters, path separators included, becomes one ``-``), no leading dot or dash, at most
    ``max_length`` characters (the last ones); ``default`` when nothing is left.

    >>> slugify("a/b\\\\c:d<e>|f?*"), slugify(".."), slugify("<script>")
    ('a-b-c-d-e-f', 'unnamed', 'script')
    """
    text = _UNSAFE.sub("-", str(name)).strip(".-")
    text = re.sub(r"\.{2,}", ".", text)[-max_length:].strip(".-")  # the end tells paths apart
    return text or default


def is_within(path: str | os.PathLike, root: str | os.PathLike) -> bool:
    """True when ``path`` resolves to ``root`` or to something under it (symlinks followed).

    >>> is_within("/tmp/a/../b", "/tmp"), is_within("/tmp/../etc", "/tmp")
    (True, False)
    """
    p, r = Path(path).resolve(), Path(root).resolve()
    return p == r or r in p.parents


def confine(path: str | os.PathLike, root: str | os.PathLike, what: str = "output path") -> Path:
    """``path`` resolved (symlinks followed); :class:`OutputPathError` unless it lies inside
    ``root``. Relative paths are taken relative to the current folder, as ``open`` would."""
    resolved = Path(path).resolve()
    if not is_within(resolved, root):
        raise OutputPathError(f"{what}: {resolved} lies outside {Path(root).resolve()}")
    return resolved


def check_output_dir(path: str | os.PathLike, what: str = "--out") -> Path:
    """Check that ``path`` can serve as an output folder, creating nothing; returns it resolved.

    It must be a folder, or not exist yet with its nearest existing parent a writable folder.
    Writability is tried (a probe file is created and removed), so read-only file systems and
    immutable folders are caught even for root.

    >>> check_output_dir(tempfile.mkdtemp()).is_dir()
    True
    """
    p = Path(path).resolve()
    probe = p
    while not probe.exists():
        if probe.is_symlink():  # a dangling link: where would the files go?
            raise OutputPathError(f"{what}: {probe} is a broken symbolic link")
        probe = probe.parent
    if not probe.is_dir():
        if probe == p:
            raise OutputPathError(f"{what}: {p} is a file, not a folder")
        raise OutputPathError(f"{what}: {p} lies under {probe}, which is a file, not a folder")
    try:
        fd, tmp = tempfile.mkstemp(dir=probe, prefix=".monoidlab-probe-")
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        where = "is not writable" if probe == p else f"cannot be created in {probe}"
        raise OutputPathError(f"{what}: {p} {where} ({reason})") from None
    os.close(fd)
    os.unlink(tmp)
    return p


def ensure_dir(path: str | os.PathLike, what: str = "--out") -> Path:
    """Create the output folder ``path`` (and its parents); one-line errors as
    :func:`check_output_dir`. Returns the path resolved."""
    p = check_output_dir(path, what)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputPathError(f"{what}: cannot create {p} ({exc.strerror or exc})") from None
    return p
