"""Run folders and checkpoints: one run per folder, never lost, never shared, never half-read.

A *run folder* holds ``checkpoint.pt``, ``metrics.jsonl``, ``config.json``, ``results.json``
(and ``best.pt``, ``tb/``). :class:`RunFolder` opens one for training:

* a run file that is a symbolic link, a FIFO or another special file is refused (the trainer
  never writes through a link, nor blocks on a FIFO); the folder itself may be a link the
  caller passed;
* a folder that already holds a run is refused unless the caller resumes it or overwrites it
  (:class:`~monoidlab.errors.RunExists`: ``resume=True`` or ``overwrite=True``);
* the folder is locked (``fcntl.flock`` on the folder itself, exclusive, non-blocking) for as
  long as the run trains: a second process training into it is refused in one line;
* temporary files left by a process killed during an atomic write (``.checkpoint.pt.*.tmp``)
  are removed once the lock is held;
* a new run that fails before its first checkpoint leaves nothing behind (no ``config.json``
  that would block the retry); a folder it created is removed again.

Checkpoints are written atomically with SHA-256 checksums of their tensors and of every other
entry (config, step, early-stopping state: :func:`save_checkpoint`) and read with ``torch.load(weights_only=True)``
(:func:`read_checkpoint`): a file that is not a monoidlab checkpoint, or that ``weights_only``
refuses, raises "refusing to load: not a monoidlab checkpoint (or unsafe content)"; a checksum
mismatch (a flipped bit, an edited config) or a non-finite weight is refused too. Checkpoints
written before a checksum existed still load (there is nothing to compare). The checksums
detect damage and edits; they are not a signature (whoever rewrites a file with torch can
rewrite its checksums).

:func:`read_metrics` reads ``metrics.jsonl`` tolerantly: a line cut short by a kill is skipped
with a warning that names the file, so it never blocks a resumed run.

Example
-------
>>> import tempfile, torch
>>> folder = Path(tempfile.mkdtemp()) / "run"
>>> with RunFolder(folder) as run:
...     save_checkpoint({"model": {"w": torch.ones(2)}, "config": {}, "step": 3}, run.checkpoint)
>>> read_checkpoint(folder / "checkpoint.pt")["step"]
3
>>> RunFolder(folder).__enter__()  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
monoidlab.errors.RunExists: out_dir: .../run already holds a run (checkpoint.pt); continue it with resume=True or replace it with overwrite=True
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
import warnings
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from monoidlab._paths import check_entry, check_output_dir, ensure_dir, kind_of
from monoidlab._util import atomic_torch_save, atomic_write_text
from monoidlab.errors import CheckpointError, InputError, RunExists, TrainingDiverged

if TYPE_CHECKING:
    import torch

__all__ = ["RunFolder", "RUN_FILES", "REFINED", "is_run", "check_entries", "check_run_folder", "save_checkpoint",
           "read_checkpoint", "weights_checksum", "read_metrics", "truncate_metrics",
           "read_run_json"]

RUN_FILES = ("checkpoint.pt", "best.pt", "refined.pt", "metrics.jsonl", "config.json",
             "results.json")
REFINED = "refined.pt"  # weights a refinement proved correct (monoidlab.training.refine)
RUN_DIRS = ("tb",)
CHECKSUM_KEY = "sha256"  # {"model": hex, "optimizer": hex, "rest": hex} in every checkpoint
TENSOR_KEYS = ("model", "optimizer")  # each checksummed on its own (the error says which)
REST = "rest"  # the checksum of every other entry (config, step, ...); absent before 0.2
REFUSE = "refusing to load: not a monoidlab checkpoint (or unsafe content)"


# ------------------------------------------------------------------------------ run folders
def is_run(path: str | os.PathLike) -> list[str]:
    """The run files present in ``path`` (empty when it holds no run); a dangling link counts."""
    p = Path(path)
    return [n for n in (*RUN_FILES, *RUN_DIRS) if os.path.lexists(p / n)] if p.is_dir() else []


def check_entries(path: str | os.PathLike, what: str = "out_dir") -> None:
    """Refuse a run folder whose run files are symbolic links, FIFOs or other special files
    (:func:`~monoidlab._paths.check_entry`): the trainer would write through the link (outside
    the folder) or block opening the FIFO."""
    p = Path(path)
    for name in RUN_FILES:
        check_entry(p / name, what)
    for name in RUN_DIRS:
        check_entry(p / name, what, "dir")


def check_run_folder(path: str | os.PathLike, *, resume: bool = False, overwrite: bool = False,
                     what: str = "out_dir") -> Path:
    """Refuse, without side effects, a run folder that cannot be used as asked: not a usable
    folder, an existing run without ``resume``/``overwrite``, ``resume`` without a checkpoint.
    Cheap: call it before minutes of work. Returns the folder resolved."""
    if resume and overwrite:
        raise InputError("give resume=True (continue the run) or overwrite=True (replace it), not "
                         "both")
    p = check_output_dir(path, what)
    check_entries(p, what)
    present = is_run(p)
    if resume and not (p / "checkpoint.pt").is_file():
        raise CheckpointError(f"resume=True: no checkpoint at {p / 'checkpoint.pt'}")
    if present and not (resume or overwrite):
        raise RunExists(f"{what}: {p} already holds a run ({', '.join(present)}); continue it "
                        "with resume=True or replace it with overwrite=True")
    return p


class RunFolder:
    """The run folder of one training process: checked, created, locked and cleaned on entry
    (see the module docstring), unlocked on exit. Use as a context manager."""

    def __init__(self, path: str | os.PathLike, *, resume: bool = False, overwrite: bool = False,
                 what: str = "out_dir") -> None:
        self.path = Path(path)
        self.resume, self.overwrite, self.what = resume, overwrite, what
        self._fd: int | None = None
        self._created = False
        self._entered = False  # checked and locked: the run files present are this run's

    @property
    def checkpoint(self) -> Path:
        return self.path / "checkpoint.pt"

    @property
    def metrics(self) -> Path:
        return self.path / "metrics.jsonl"

    def __enter__(self) -> RunFolder:
        if self.path.is_dir():  # a run in progress says so, before "already holds a run"
            self._lock()
            self._release(failed=False)
        check_run_folder(self.path, resume=self.resume, overwrite=self.overwrite, what=self.what)
        self._created = not self.path.exists()
        ensure_dir(self.path, self.what)
        try:
            self._lock()
            # checked again under the lock: another process may have finished a run meanwhile
            check_run_folder(self.path, resume=self.resume, overwrite=self.overwrite,
                             what=self.what)
            self._clean_stale()
            if self.overwrite:
                self._remove_run()
            self._entered = True
        except BaseException:
            self._release(failed=True)
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._release(failed=exc_type is not None)

    def _release(self, failed: bool) -> None:
        """Unlock. A new run that failed before its first checkpoint leaves nothing behind
        (its ``config.json`` and ``metrics.jsonl`` would only block the retry, and nothing
        could resume it); the folder goes too when this process created it and it is empty.
        A resumed run, or one with a checkpoint, is never touched."""
        if (failed and self._entered and not self.resume
                and not os.path.lexists(self.checkpoint)):
            self._remove_run()  # every run file here is this process's (entry refused others)
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None
        if failed and self._created:
            with contextlib.suppress(OSError):
                self.path.rmdir()  # only when still empty: nothing of the run is lost

    def _lock(self) -> None:
        try:
            import fcntl
        except ImportError:  # not POSIX: no lock (documented)
            return
        fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise RunExists(f"{self.what}: {self.path} is in use: another monoidlab process is "
                            "training into it (wait for it, or choose another folder)") from None
        self._fd = fd

    def _clean_stale(self) -> None:
        """Temporary files of atomic writes killed midway (only safe under the lock)."""
        for name in RUN_FILES:
            for tmp in self.path.glob(f".{name}.*.tmp"):
                with contextlib.suppress(OSError):
                    tmp.unlink()

    def _remove_run(self) -> None:
        for name in RUN_FILES:
            with contextlib.suppress(FileNotFoundError):
                (self.path / name).unlink()
        for name in RUN_DIRS:
            shutil.rmtree(self.path / name, ignore_errors=True)


# ------------------------------------------------------------------------------ checkpoints
def _walk(obj: Any, h: hashlib._Hash, prefix: str = "") -> None:
    """Feed a canonical serialisation of nested dicts/lists of tensors and scalars to ``h``."""
    import torch

    if isinstance(obj, torch.Tensor):
        t = obj.detach().cpu().contiguous()
        h.update(f"{prefix}:{t.dtype}:{tuple(t.shape)}:".encode())
        if t.numel():
            h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    elif isinstance(obj, dict):
        for k in sorted(obj, key=str):
            _walk(obj[k], h, f"{prefix}/{k}")
    elif isinstance(obj, list | tuple):
        for i, v in enumerate(obj):
            _walk(v, h, f"{prefix}[{i}]")
    else:
        h.update(f"{prefix}={obj!r};".encode())


def weights_checksum(state: Any) -> str:
    """SHA-256 (hex) of a state dict's names, dtypes, shapes and raw tensor bytes.

    >>> import torch
    >>> a = weights_checksum({"w": torch.zeros(3)})
    >>> a == weights_checksum({"w": torch.zeros(3)}), a == weights_checksum({"w": torch.ones(3)})
    (True, False)
    """
    h = hashlib.sha256()
    _walk(state, h)
    return h.hexdigest()


def _non_finite(state: Any, prefix: str = "") -> str | None:
    """Name of the first floating tensor holding a NaN or an infinity, else None."""
    import torch

    if isinstance(state, torch.Tensor):
        if state.is_floating_point() and state.numel() and not bool(torch.isfinite(state).all()):
            return prefix or "tensor"
        return None
    items = state.items() if isinstance(state, dict) else enumerate(state) \
        if isinstance(state, list | tuple) else ()
    for k, v in items:
        bad = _non_finite(v, f"{prefix}.{k}" if prefix else str(k))
        if bad:
            return bad
    return None


def save_checkpoint(payload: dict, path: str | os.PathLike) -> None:
    """Write ``payload`` (``model`` and optionally ``optimizer`` state dicts, ``step``, ...)
    atomically, with the checksums of its tensors. Non-finite weights are never written: they
    would replace the last good checkpoint with one that cannot be loaded."""
    bad = _non_finite(payload["model"])
    if bad:
        raise TrainingDiverged(f"weight {bad!r} became NaN or infinite; not written to {path} "
                               "(the last good checkpoint is kept). Try a lower lr or clip.")
    sums = {k: weights_checksum(payload[k]) for k in TENSOR_KEYS if k in payload}
    sums[REST] = weights_checksum(_rest(payload))
    atomic_torch_save({**payload, CHECKSUM_KEY: sums}, path)


def _rest(ckpt: dict) -> dict:
    """Every entry of a checkpoint but its tensor tables and the checksums themselves: the
    config, the step, the early-stopping state, the problem."""
    return {k: v for k, v in ckpt.items() if k not in (*TENSOR_KEYS, CHECKSUM_KEY)}


def _check_device(device: Any) -> None:
    """A device name torch does not know, or CUDA on a machine without it: one clear line
    naming the device (torch.load would fail inside and look like a damaged file)."""
    import torch

    try:
        dev = device if isinstance(device, torch.device) else torch.device(device)
    except (RuntimeError, TypeError):
        raise InputError(f"device {device!r}: not a device torch knows (use cpu, cuda or "
                         "cuda:N)") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise InputError(f"device {str(device)!r}: CUDA is not available on this machine "
                         "(torch.cuda.is_available() is False); load with device='cpu'")


def read_checkpoint(path: str | os.PathLike, device: torch.device | str = "cpu",
                    need: tuple[str, ...] = ("model", "config", "step")) -> dict:
    """The checkpoint dict, loaded with ``weights_only=True`` and verified: the keys ``need``,
    the checksums (when the file has them), finite weights. Anything else raises
    :class:`~monoidlab.errors.CheckpointError` in one line (never torch's advice to set
    ``weights_only=False``)."""
    import torch

    path = Path(path)
    _check_device(device)  # a device this machine lacks is the cause, not the file
    with contextlib.suppress(OSError):  # a FIFO would block torch.load, a device never end
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
            raise CheckpointError(f"{path} is {kind_of(mode)}, not a checkpoint file")
    try:
        ckpt = torch.load(path, map_location=device, weights_only=True)
    except MemoryError:
        raise
    except FileNotFoundError:
        raise CheckpointError(f"no checkpoint at {path}") from None
    except IsADirectoryError:
        raise CheckpointError(f"{path}: a folder, not a checkpoint file") from None
    except PermissionError as exc:
        raise CheckpointError(f"{path}: cannot read ({exc.strerror})") from None
    except Exception as exc:  # noqa: BLE001 - torch raises many types for hostile files
        raise CheckpointError(f"{path}: {REFUSE} ({type(exc).__name__})") from None
    if not isinstance(ckpt, dict) or any(k not in ckpt for k in need):
        raise CheckpointError(f"{path}: {REFUSE} (expected a dict with {', '.join(need)})")
    if "model" in need and (not isinstance(ckpt["model"], dict) or not all(
            isinstance(v, torch.Tensor) for v in ckpt["model"].values())):
        raise CheckpointError(f"{path}: {REFUSE} ('model' is not a table of tensors)")
    if "config" in need and not isinstance(ckpt["config"], dict):
        raise CheckpointError(f"{path}: {REFUSE} ('config' is not a table)")
    if "step" in need and (isinstance(ckpt["step"], bool) or not isinstance(ckpt["step"], int)
                           or ckpt["step"] < 0):
        raise CheckpointError(f"{path}: {REFUSE} ('step' is not a non-negative integer)")
    sums = ckpt.get(CHECKSUM_KEY)
    if sums is not None:
        if not isinstance(sums, dict):
            raise CheckpointError(f"{path}: {REFUSE} (malformed checksum)")
        if REST in sums:  # written by 0.2 or later: every entry is covered
            missing = [k for k in TENSOR_KEYS if k in ckpt and k not in sums]
            if missing:
                raise CheckpointError(f"{path}: {REFUSE} (no checksum for {', '.join(missing)})")
        for key, expected in sums.items():
            if key == REST:
                if weights_checksum(_rest(ckpt)) != expected:
                    raise CheckpointError(
                        f"{path}: its config, step or other entries do not match their "
                        "checksum (the file is damaged or was edited); refusing to load")
            elif key not in ckpt or weights_checksum(ckpt[key]) != expected:
                raise CheckpointError(f"{path}: the {key} tensors do not match their checksum "
                                      "(the file is damaged); refusing to load")
    bad = _non_finite(ckpt["model"]) if "model" in ckpt else None
    if bad is None and isinstance(ckpt.get("optimizer"), dict):
        bad = _non_finite(ckpt["optimizer"])
    if bad:
        raise CheckpointError(f"{path}: {bad!r} holds NaN or infinite values; refusing to load")
    return ckpt


# ------------------------------------------------------------------------------ json files
def read_run_json(path: str | os.PathLike, hint: str = "delete it") -> dict:
    """A run folder's JSON file (``config.json``, ``results.json``) as a table; a file that is
    not UTF-8 JSON, not a table, or not a regular file is one
    :class:`~monoidlab.errors.CheckpointError` naming it (and saying what to do: ``hint``)."""
    path = Path(path)
    check_entry(path, "run file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{path}: not JSON ({exc}); {hint}") from None
    if not isinstance(data, dict):
        raise CheckpointError(f"{path}: a JSON {type(data).__name__}, not a table; {hint}")
    return data


# ------------------------------------------------------------------------------ metrics
def read_metrics(path: str | os.PathLike) -> list[dict]:
    """The records of ``metrics.jsonl``; unreadable lines (a kill mid-write) are skipped with
    one warning that names the file."""
    return [rec for _, rec in _read_metrics(Path(path))]


def _read_metrics(path: Path) -> list[tuple[str, dict]]:
    if not path.is_file():
        return []
    records, bad = [], 0
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            rec = None
        if isinstance(rec, dict):
            records.append((line, rec))
        else:
            bad += 1
    if bad:
        warnings.warn(f"{path}: skipped {bad} unreadable line(s) (a run killed mid-write?)",
                      UserWarning, stacklevel=3)
    return records


def truncate_metrics(path: str | os.PathLike, step0: int) -> None:
    """Keep the lines logged up to the resumed step ``step0`` (a killed run may have logged
    more), dropping unreadable lines with a warning; rewritten atomically."""
    path = Path(path)
    if not path.is_file():
        return
    keep = [line for line, rec in _read_metrics(path) if _step(rec) <= step0]
    atomic_write_text(path, "".join(line + "\n" for line in keep))


def _step(record: dict) -> float:
    s = record.get("step", 0)
    return s if isinstance(s, int | float) and not isinstance(s, bool) else float("inf")
