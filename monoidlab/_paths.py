"""Output paths that stay where they belong: names made safe as file names, paths confined to
their output folder, and output folders checked before any work is done.

* :func:`slugify`: any text (a language name from a spec, a task path) → a safe file name.
* :func:`confine`: resolve a path and refuse it unless it lies inside a given root.
* :func:`check_output_dir`: refuse, in one line and *before* minutes of work, an output folder
  that is a file, lies under a file, or cannot be created or written; creates nothing.
* :func:`ensure_dir`: create an output folder, with the same one-line errors.
* :func:`check_entry`, :func:`child_dir`: an entry monoidlab writes (a run file, a folder it
  names itself, such as ``RUN/probe`` or a sweep's ``out/<id>``) that is a symbolic link, a
  FIFO or another special file is refused: files are never written through links (only a
  folder the user passed at the top may be a link).
* :func:`open_append`: append to a regular file without following a link or blocking on a FIFO.

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
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from monoidlab.errors import OutputPathError

__all__ = ["slugify", "confine", "is_within", "check_output_dir", "ensure_dir", "check_entry",
           "child_dir", "open_append", "kind_of"]

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


def is_within(path: str | os.PathLike, root: str | os.PathLike, *, follow_root: bool = True
              ) -> bool:
    """True when ``path`` resolves to ``root`` or to something under it (symlinks followed).

    With ``follow_root=False`` the root's own last component is not resolved (its parent is):
    a root that is itself a link to elsewhere then contains nothing, so a file reached through
    that link is refused.

    >>> is_within("/tmp/a/../b", "/tmp"), is_within("/tmp/../etc", "/tmp")
    (True, False)
    """
    p = Path(path).resolve()
    r = Path(root).resolve() if follow_root else (
        Path(os.path.abspath(root)).parent.resolve() / Path(os.path.abspath(root)).name)
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


def kind_of(mode: int) -> str:
    """A file type in words (``os.lstat(path).st_mode``)."""
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a folder"),
                       (stat.S_ISREG, "a file")):
        if test(mode):
            return name
    return "a special file"


def check_entry(path: str | os.PathLike, what: str, kind: str = "file") -> None:
    """Refuse ``path`` (not followed) when it exists and is not a plain ``kind`` ("file" or
    "dir"): a symbolic link (monoidlab would write through it, outside the folder), a FIFO (an
    open would block), a device, or a file where a folder belongs. Absent: nothing to refuse.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp()); os.symlink("/etc", d / "link")
    >>> check_entry(d / "link", "run folder")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    monoidlab.errors.OutputPathError: run folder: .../link is a symbolic link (to /etc); monoidlab never writes through links: remove it
    """
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise OutputPathError(f"{what}: {path}: {exc.strerror or exc}") from None
    want = stat.S_ISDIR if kind == "dir" else stat.S_ISREG
    if stat.S_ISLNK(mode):
        raise OutputPathError(f"{what}: {path} is a symbolic link (to {os.readlink(os.fspath(path))}); "
                              "monoidlab never writes through links: remove it")
    if not want(mode):
        raise OutputPathError(f"{what}: {path} is {kind_of(mode)}, not "
                              f"{'a folder' if kind == 'dir' else 'a regular file'}: remove it")


def refuse_clobber(paths: Iterable[str | os.PathLike], what: str, overwrite: bool = False,
                   option: str = "--overwrite") -> None:
    """A command never replaces a file the user may own unless told to: the first of ``paths``
    that exists is named, with the option that replaces it (the writes themselves are atomic).
    Links and special files are refused either way (:func:`check_entry`).

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp()); (d / "train.csv").write_text("mine")
    4
    >>> refuse_clobber([d / "test.csv", d / "train.csv"], "text-sample")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    monoidlab.errors.OutputPathError: text-sample: .../train.csv exists; refusing to replace it (--overwrite replaces it)
    """
    for path in paths:
        check_entry(path, what)
        if os.path.lexists(path) and not overwrite:
            raise OutputPathError(f"{what}: {path} exists; refusing to replace it ({option} "
                                  "replaces it)")


def child_dir(parent: str | os.PathLike, name: str, what: str) -> Path:
    """``parent / name``, a folder monoidlab names itself inside ``parent``: refused when it is
    a link or not a folder (:func:`check_entry`), and confined to ``parent``."""
    path = Path(parent) / name
    check_entry(path, what, "dir")
    confine(path, parent, what)
    return path


def open_append(path: str | os.PathLike, what: str) -> IO[str]:
    """``path`` opened for appending text, created when absent: never through a symbolic link
    (``O_NOFOLLOW``), never blocking on a FIFO (``O_NONBLOCK``, then checked to be a regular
    file)."""
    flags = (os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
             | getattr(os, "O_NONBLOCK", 0))
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:  # ELOOP (a link), ENXIO (a FIFO without a reader), ...
        check_entry(path, what)
        raise OutputPathError(f"{what}: cannot open {path} ({exc.strerror or exc})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise OutputPathError(f"{what}: {path} is {kind_of(mode)}, not a regular file: remove it")
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    return os.fdopen(fd, "a", encoding="utf-8")
