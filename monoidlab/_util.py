"""Small shared pieces: atomic writes, work limits, input checks, progress bars.

* :func:`atomic_write_text`, :func:`atomic_write_bytes`, :func:`atomic_write_json`,
  :func:`atomic_torch_save`, :func:`write_section`: files written through a temporary file
  and ``os.replace``; :func:`json_text` / :func:`print_json`: JSON as UTF-8 text (``ε``).
* :func:`check_batch`: the one validator of ``(tokens (B, T), lengths (B,))`` numpy batches.
* :func:`eval_mode`: a context manager for "this model, in eval mode, without gradients".
* :func:`progress_bar`: a ``tqdm.auto`` bar (a widget in Jupyter, text in a terminal).

Example
-------
>>> check_workload(range(41, 501), 512)   # 460 lengths x 512 strings: within the limits
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from monoidlab._paths import check_entry
from monoidlab.errors import InputError
from monoidlab.geometry import Lengths, length_array

__all__ = ["atomic_write_bytes", "atomic_write_text", "atomic_write_json", "json_text",
           "print_json", "atomic_torch_save", "write_section",
           "check_batch", "length_mask", "format_table", "eval_mode", "inference", "progress_bar", "check_workload",
           "MAX_LENGTH", "MAX_SYMBOLS", "MAX_STRINGS", "MAX_BATCH_SYMBOLS", "check_api_workload",
           "check_cells", "check_limits_flag", "limit_error", "LIMITS_KEYWORD", "MAX_TABLE_CELLS",
           "longest_length", "check_batch_workload"]

# Work a single call may ask for (docs/reliability.md): longer strings or more symbols
# would run for hours or exhaust memory, so they are refused in one line before any work.
MAX_LENGTH = 100_000  # the longest string a command samples, labels or evaluates
MAX_SYMBOLS = 1_000_000_000  # symbols in all, over every length of one call (time)
MAX_STRINGS = 10_000_000  # strings in all, over every length of one call
MAX_BATCH_SYMBOLS = 2**27  # symbols held at once in one array (1 GiB as int64)


# ------------------------------------------------------------------------------ atomic writes
def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` through a temporary file in the same folder, then ``os.replace``: a
    crash mid-write leaves the previous file intact. The file gets the umask's mode. A
    symbolic link or a special file at ``path`` is refused (:func:`~monoidlab._paths.check_entry`).

    >>> p = Path(tempfile.mkdtemp()) / "a.json"
    >>> atomic_write_bytes(p, b"{}"); p.read_text()
    '{}'
    """
    path = Path(path)
    # a link or a FIFO in the file's place is refused, never replaced or written through
    check_entry(path, "output file")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp creates 0600 files; give the file the mode a plain open() would
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.errno and not exc.filename:  # a full disk...
            raise OSError(exc.errno, f"{exc.strerror}; the previous file, if any, is kept",
                          str(path)) from None
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """UTF-8 text through :func:`atomic_write_bytes`."""
    atomic_write_bytes(path, text.encode("utf-8"))


def json_text(data: Any, indent: int | None = 2, default: Any = None, **kw: Any) -> str:
    """``json.dumps`` as every monoidlab file and ``--json`` output writes it: non-ASCII
    text as itself (``ε``, not ``\\u03b5``; the files are UTF-8).

    >>> json_text({"word": "ε"}, indent=None)
    '{"word": "ε"}'
    """
    import json

    return json.dumps(data, indent=indent, default=default, ensure_ascii=False, **kw)


def atomic_write_json(path: str | os.PathLike, data: Any, indent: int | None = 2,
                      default: Any = None) -> None:
    """:func:`json_text` written as UTF-8 through :func:`atomic_write_bytes`.

    >>> p = Path(tempfile.mkdtemp()) / "a.json"
    >>> atomic_write_json(p, ["ε"]); '"ε"' in p.read_bytes().decode("utf-8")
    True
    """
    atomic_write_text(path, json_text(data, indent=indent, default=default))


def print_json(data: Any, indent: int | None = 2, default: Any = None) -> None:
    """Print :func:`json_text`; a terminal that cannot show the text (an ASCII locale) gets
    the escaped form instead of an encoding error."""
    import json
    import sys

    text = json_text(data, indent=indent, default=default)
    try:
        text.encode(sys.stdout.encoding or "utf-8")
    except (UnicodeEncodeError, LookupError):
        text = json.dumps(data, indent=indent, default=default, ensure_ascii=True)
    print(text)


def atomic_torch_save(obj: Any, path: str | os.PathLike) -> None:
    """``torch.save`` through a temporary file (checkpoints survive a kill mid-save)."""
    import io

    import torch

    buf = io.BytesIO()
    torch.save(obj, buf)
    atomic_write_bytes(path, buf.getvalue())


def write_section(path: str | os.PathLike, name: str, text: str, title: str | None = None) -> None:
    """Replace (or append) the generated section ``name`` of a markdown file, atomically.

    Sections sit between ``<!-- begin NAME -->`` and ``<!-- end NAME -->``, so several
    generators (sweeps, benchmarks) can share one page without overwriting each other.

    >>> p = Path(tempfile.mkdtemp()) / "r.md"
    >>> write_section(p, "a", "one"); write_section(p, "b", "two"); write_section(p, "a", "ONE")
    >>> p.read_text().count("ONE"), "one" in p.read_text(), "two" in p.read_text()
    (1, False, True)
    >>> _ = p.write_text(p.read_text() + "\\nprose after b\\n"); write_section(p, "b", "TWO")
    >>> p.read_text().endswith("<!-- end b -->\\n\\nprose after b\\n")   # its blank line kept
    True
    """
    path = Path(path)
    begin, end = f"<!-- begin {name} -->", f"<!-- end {name} -->"
    block = f"{begin}\n{text.rstrip()}\n{end}\n"
    old = path.read_text(encoding="utf-8") if path.is_file() else (f"# {title}\n\n" if title else "")
    if begin in old and end in old:
        head, rest = old.split(begin, 1)
        after = rest.split(end, 1)[1].lstrip("\n")
        new = head + block + ("\n" + after if after else "")
    else:
        new = old.rstrip("\n") + ("\n\n" if old.strip() else "") + block
    atomic_write_text(path, new)


# ------------------------------------------------------------------------------ input checks
def check_workload(lengths: Any, per_length: int, what: str = "lengths",
                   max_symbols: int = MAX_SYMBOLS) -> None:
    """Refuse work that cannot finish: a length above :data:`MAX_LENGTH`, more than
    :data:`MAX_STRINGS` strings or more than ``max_symbols`` symbols when ``per_length``
    strings are drawn at every length (pass :data:`MAX_BATCH_SYMBOLS` for work held in one
    array). Ranges are summed arithmetically (``1:10000000`` costs nothing to check).

    >>> check_workload(range(41, 501), 512)
    >>> check_workload("1:10000000", 64, "--test")
    Traceback (most recent call last):
    ...
    monoidlab.errors.InputError: --test: lengths up to 10000000 requested; at most 100000 (strings that long would not finish)
    """
    if isinstance(lengths, Lengths | str | range):
        r = Lengths.parse(lengths, what)
        n = len(r)
        longest = r.start + (n - 1) * r.step if n else 0
        total = n * (r.start + longest) // 2
    else:
        arr = length_array(lengths, what)
        longest, total = int(arr.max()), int(arr.sum())
    if longest > MAX_LENGTH:
        raise InputError(f"{what}: lengths up to {longest} requested; at most {MAX_LENGTH} "
                         "(strings that long would not finish)")
    per_length = max(int(per_length), 1)
    n_lengths = n if isinstance(lengths, Lengths | str | range) else len(arr)
    if n_lengths * per_length > MAX_STRINGS:
        raise InputError(f"{what}: {per_length} strings at each of {n_lengths} lengths make "
                         f"{n_lengths * per_length:.3g} strings; at most {MAX_STRINGS:.0e} per "
                         "call (fewer lengths, a step A:B:STEP, or fewer strings)")
    if total * per_length > max_symbols:
        raise InputError(f"{what}: {per_length} strings at each length make "
                         f"{total * per_length:.3g} symbols; at most {max_symbols:.3g} per call "
                         "(fewer lengths, a step A:B:STEP, or fewer strings)")


def check_batch(tokens: Any, lengths: Any, n_symbols: int, who: str = "batch",
                min_length: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Validate a numpy batch: ``tokens`` (B, T) ints in ``0..n_symbols-1`` (padding included),
    ``lengths`` (B,) in ``min_length..T``. Returns both as arrays; errors name ``who``.

    >>> check_batch([[0, 1]], [2], n_symbols=2)[1].tolist()
    [2]
    """
    tokens = np.asarray(tokens)
    lengths = np.asarray(lengths)
    if tokens.ndim != 2 or lengths.shape != (tokens.shape[0],):
        raise InputError(f"{who}: expected tokens (B, T) and lengths (B,), got shapes "
                         f"{tokens.shape} and {lengths.shape}")
    if tokens.size and not np.issubdtype(tokens.dtype, np.integer):
        raise InputError(f"{who}: tokens must be integers, got {tokens.dtype}")
    if lengths.size and not np.issubdtype(lengths.dtype, np.integer):
        raise InputError(f"{who}: lengths must be integers, got {lengths.dtype}")
    if lengths.size and min_length and lengths.min() < min_length:
        raise InputError(f"{who}: every string needs length >= {min_length}, got "
                         f"{int(lengths.min())}")
    if lengths.size and (lengths.min() < min_length or lengths.max() > tokens.shape[1]):
        raise InputError(f"{who}: lengths must lie in {min_length}..{tokens.shape[1]}, got "
                         f"{int(lengths.min())}..{int(lengths.max())}")
    if tokens.size and (tokens.min() < 0 or tokens.max() >= n_symbols):
        bad = int(tokens[(tokens < 0) | (tokens >= n_symbols)][0])
        raise InputError(f"{who}: token ids must lie in 0..{n_symbols - 1} (padding positions "
                         f"too), got {bad}")
    return tokens, lengths


def length_mask(lengths: np.ndarray, T: int) -> np.ndarray:
    """(B, T) bool, True at the positions < length (a batch's real symbols; the torch twin is
    :func:`monoidlab.models.common.length_mask`).

    >>> length_mask(np.array([1, 3]), 3).astype(int).tolist()
    [[1, 0, 0], [1, 1, 1]]
    """
    return np.arange(T)[None, :] < np.asarray(lengths)[:, None]


@contextlib.contextmanager
def eval_mode(model: Any) -> Iterator[Any]:
    """``with eval_mode(model):`` runs the model in eval mode without gradients and restores
    its training flag afterwards (even on an exception)."""
    import torch

    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield model
    finally:
        model.train(was_training)


@contextlib.contextmanager
def inference(threads: int = 1) -> Iterator[None]:
    """``with inference():`` runs torch on ``threads`` threads without gradients, and gives the
    caller's thread count and grad mode back afterwards (scripts whose ``main`` tests call).

    >>> import torch
    >>> with inference():
    ...     torch.is_grad_enabled(), torch.get_num_threads()
    (False, 1)
    >>> torch.is_grad_enabled()
    True
    """
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with torch.no_grad():
            yield
    finally:
        torch.set_num_threads(before)


# ------------------------------------------------------------------------------ text
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


# ------------------------------------------------------------------------------ progress
def progress_bar(iterable: Iterable[Any] | None = None, **kwargs: Any) -> Any:
    """A ``tqdm.auto`` bar: a widget in Jupyter (with ipywidgets, which the ``dev`` extra
    installs), text in a terminal. In a Jupyter kernel without ipywidgets tqdm falls back to
    the text bar with a ``TqdmWarning`` ("IProgress not found"); the fallback is kept and the
    warning silenced, so a notebook shows a text bar and no warning."""
    import warnings

    from tqdm import TqdmWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TqdmWarning)
        from tqdm.auto import tqdm
    return tqdm(iterable, **kwargs)


# ------------------------------------------------------------------------------ API work limits
#: The keyword of every public function that checks these limits: ``limits=False`` lifts them
#: (the work then runs as asked, however long it takes or however much memory it needs).
LIMITS_KEYWORD = "limits"
#: Cells (floats) of the length tables one call may hold at once: path counts, state and EC
#: laws ((longest length + 1) x nodes x groups); 2^27 float64 = 1 GiB.
MAX_TABLE_CELLS = 2**27


def limit_error(message: str) -> InputError:
    """The one wording of a refused workload: the message, then how to lift the limit."""
    return InputError(f"{message}; pass {LIMITS_KEYWORD}=False to lift the work limits")


def check_api_workload(lengths: Any, per_length: int, what: str = "lengths",
                       max_symbols: int = MAX_SYMBOLS, limits: bool = True) -> None:
    """:func:`check_workload` for the Python API: the same limits as the command line, the
    error naming the ``limits=False`` override; nothing is checked when ``limits`` is False.

    >>> check_api_workload([500], 1000, "lengths", MAX_BATCH_SYMBOLS)
    >>> check_api_workload([10**9], 1, "lengths")
    Traceback (most recent call last):
    ...
    monoidlab.errors.InputError: lengths: lengths up to 1000000000 requested; at most 100000 (strings that long would not finish); pass limits=False to lift the work limits
    """
    if not check_limits_flag(limits):
        return
    try:
        check_workload(lengths, per_length, what, max_symbols)
    except InputError as exc:
        if "requested" in str(exc) or "make" in str(exc):
            raise limit_error(str(exc)) from None
        raise


def check_cells(cells: float, what: str, limits: bool = True,
                maximum: int = MAX_TABLE_CELLS) -> None:
    """Refuse a table of more than ``maximum`` cells before it is allocated.

    >>> check_cells(2**30, "path counts (lengths x states x classes)")
    Traceback (most recent call last):
    ...
    monoidlab.errors.InputError: path counts (lengths x states x classes): 1.07e+09 cells needed; at most 1.34e+08 per call; pass limits=False to lift the work limits
    """
    if check_limits_flag(limits) and cells > maximum:
        raise limit_error(f"{what}: {cells:.3g} cells needed; at most {maximum:.3g} per call")


def check_limits_flag(limits: Any) -> bool:
    """``limits`` itself when it is a bool (``limits=0`` or ``"no"`` are refused, not read)."""
    if not isinstance(limits, bool | np.bool_):
        raise InputError(f"{LIMITS_KEYWORD}: True (the default: refuse work that cannot "
                         f"finish) or False, got {limits!r}"[:200])
    return bool(limits)


def longest_length(lengths: Any, what: str = "lengths") -> int:
    """The longest of ``lengths`` (validated; ranges read arithmetically, never expanded).

    >>> longest_length(range(1, 10**12)), longest_length([3, 9, 4])
    (999999999999, 9)
    """
    if isinstance(lengths, Lengths | str | range):
        return Lengths.parse(lengths, what).last
    return int(length_array(lengths, what).max())


def check_batch_workload(lengths: Any, n: int, what: str = "lengths",
                         limits: bool = True) -> None:
    """Refuse ``n`` strings of lengths drawn from ``lengths`` when they would not fit the
    limits: the longest length above :data:`MAX_LENGTH`, more than :data:`MAX_STRINGS`
    strings, or more than :data:`MAX_BATCH_SYMBOLS` symbols in the one ``(n, longest)``
    array. ``lengths`` is validated either way.

    >>> check_batch_workload(range(1, 41), 10**6)
    >>> check_batch_workload(range(1, 41), 10**9)
    Traceback (most recent call last):
    ...
    monoidlab.errors.InputError: n: 1000000000 strings requested; at most 10000000 per call; pass limits=False to lift the work limits
    """
    longest = longest_length(lengths, what)
    if not check_limits_flag(limits):
        return
    if longest > MAX_LENGTH:
        raise limit_error(f"{what}: strings of length up to {longest} requested; at most "
                          f"{MAX_LENGTH} (strings that long would not finish)")
    if n > MAX_STRINGS:
        raise limit_error(f"n: {n} strings requested; at most {MAX_STRINGS} per call")
    if n * longest > MAX_BATCH_SYMBOLS:
        raise limit_error(f"n x longest length: {n} strings of up to {longest} symbols make "
                          f"{n * longest:.3g} symbols in one array; at most "
                          f"{MAX_BATCH_SYMBOLS:.3g} (1 GiB as int64)")
