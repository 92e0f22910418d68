"""Run folders and checkpoints (monoidlab.training.run_folder): never lose a run, never share a
folder, never load a damaged, non-finite or unsafe checkpoint."""

from __future__ import annotations

import json
import os
import pickle
import warnings
from pathlib import Path

import pytest
import torch

from monoidlab.errors import CheckpointError, InputError, RunExists, TrainingDiverged
from monoidlab.training import RunConfig, train
from monoidlab.training.run_folder import (
    REFUSE,
    RunFolder,
    read_checkpoint,
    read_metrics,
    save_checkpoint,
    truncate_metrics,
    weights_checksum,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def tiny(**kw) -> RunConfig:
    base = dict(language="parity", model="mlp-ldru", model_options={"d": 8}, steps=6,
                device="cpu", batch_size=8, train_lengths="1:6", test_lengths="7:8",
                test_samples=4, checkpoint_every=2, log_every=1, eval_kinds=["paper"])
    base.update(kw)
    return RunConfig(**base)


def snapshot(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*")
            if p.is_file()}


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "run"
    train(tiny(), out, progress=False)
    return out


# ------------------------------------------------------------------------------ refusing runs
def test_a_finished_run_is_refused_and_kept(finished):
    before = snapshot(finished)
    for cfg in (tiny(), tiny(steps=2)):
        with pytest.raises(RunExists, match="already holds a run.*resume=True.*overwrite=True"):
            train(cfg, finished, progress=False)
    assert snapshot(finished) == before


def test_overwrite_replaces_and_resume_continues(tmp_path, finished):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(finished, run)
    res = train(tiny(steps=2), run, overwrite=True, progress=False)
    assert res["steps"] == 2 and len(read_metrics(run / "metrics.jsonl")) == 2
    with pytest.raises(InputError, match="resume=True.*overwrite=True.*not both"):
        train(tiny(steps=2), run, resume=True, overwrite=True, progress=False)
    res = train(tiny(steps=2), run, resume=True, progress=False)  # nothing left to train
    assert res["steps"] == 2 and len(read_metrics(run / "metrics.jsonl")) == 2


def test_resume_needs_a_checkpoint_and_a_folder(tmp_path):
    with pytest.raises(CheckpointError, match="no checkpoint"):
        train(tiny(), tmp_path / "fresh", resume=True, progress=False)
    with pytest.raises(CheckpointError, match=r"resume=True needs the run folder.*\(out_dir\)"):
        train(tiny(), None, resume=True, progress=False)  # the API's words, never --out
    assert not (tmp_path / "fresh").exists()


def test_other_files_do_not_make_a_run(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    train(tiny(steps=2), tmp_path / "mine", progress=False)
    assert (tmp_path / "mine" / "notes.txt").read_text() == "mine"


def test_the_folder_is_locked_while_a_run_trains(tmp_path):
    with RunFolder(tmp_path / "run"):
        with pytest.raises(RunExists, match="in use"):
            RunFolder(tmp_path / "run").__enter__()
        with pytest.raises(RunExists, match="in use"):
            train(tiny(steps=2), tmp_path / "run", progress=False)
    train(tiny(steps=2), tmp_path / "run", progress=False)  # released on exit


def test_the_lock_holds_across_processes(tmp_path):
    import subprocess
    import sys

    code = ("import sys; from monoidlab.training.run_folder import RunFolder\n"
            "try:\n    RunFolder(sys.argv[1]).__enter__()\n"
            "except Exception as e:\n    print(type(e).__name__, e); sys.exit(3)\n")
    with RunFolder(tmp_path / "run"):
        r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "run")],
                           capture_output=True, text=True, cwd=Path(__file__).parent.parent)
    assert r.returncode == 3 and "RunExists" in r.stdout and "in use" in r.stdout


def test_stale_temporary_files_are_cleaned_and_failed_starts_leave_nothing(tmp_path, finished):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(finished, run)
    for i in range(3):
        (run / f".checkpoint.pt.k{i}.tmp").write_bytes(os.urandom(1000))
    (run / ".unrelated.tmp").write_text("not ours")
    train(tiny(), run, resume=True, progress=False)
    assert sorted(p.name for p in run.glob("*.tmp")) == [".unrelated.tmp"]
    with pytest.raises(Exception):  # noqa: B017 - any failure before the first write
        train(tiny(language="no-such-language"), tmp_path / "new", progress=False)
    assert not (tmp_path / "new").exists()


# ------------------------------------------------------------------------------ metrics
def test_a_truncated_metrics_line_does_not_block_resume(tmp_path, finished):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(finished, run)
    ck = read_checkpoint(run / "checkpoint.pt")
    save_checkpoint({**ck, "step": 4}, run / "checkpoint.pt")  # as if killed after step 4
    (run / "results.json").unlink()
    text = (run / "metrics.jsonl").read_text()
    (run / "metrics.jsonl").write_text(text + '{"step": 7, "loss": 0.6')  # cut mid-line
    with pytest.warns(UserWarning, match=r"metrics\.jsonl: skipped 1 unreadable line"):
        train(tiny(), run, resume=True, progress=False)
    lines = (run / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(ln)["step"] for ln in lines] == [1, 2, 3, 4, 5, 6]
    assert lines[:4] == text.splitlines()[:4]  # the kept lines are kept verbatim


def test_truncate_metrics_keeps_lines_verbatim(tmp_path):
    path = tmp_path / "metrics.jsonl"
    lines = ['{"step": 1, "loss": 0.1}', "garbage{", '{"step": 2, "x": NaN}', "[1, 2]",
             '{"step": 3}']
    path.write_text("\n".join(lines) + "\n")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        truncate_metrics(path, 2)
    assert path.read_text().splitlines() == [lines[0], lines[2]]
    assert len(seen) == 1 and str(path) in str(seen[0].message)


# ------------------------------------------------------------------------------ checkpoints
def _state():
    return {"w": torch.arange(6, dtype=torch.float32).reshape(2, 3), "b": torch.zeros(3)}


def test_checkpoints_carry_a_checksum_and_refuse_a_flipped_bit(tmp_path):
    path = tmp_path / "c.pt"
    save_checkpoint({"model": _state(), "config": {}, "step": 1}, path)
    ck = read_checkpoint(path)
    assert ck["sha256"]["model"] == weights_checksum(_state())
    raw = bytearray(path.read_bytes())
    pos = raw.find(_state()["w"].numpy().tobytes())
    assert pos > 0
    raw[pos + 7] ^= 0x01  # one bit of one weight
    path.write_bytes(bytes(raw))
    with pytest.raises(CheckpointError, match="do not match their checksum"):
        read_checkpoint(path)


def test_non_finite_weights_are_never_written_nor_loaded(tmp_path):
    bad = _state()
    bad["w"][0, 0] = float("nan")
    with pytest.raises(TrainingDiverged, match="NaN or infinite"):
        save_checkpoint({"model": bad, "config": {}, "step": 1}, tmp_path / "c.pt")
    assert not (tmp_path / "c.pt").exists()
    for value in (float("nan"), float("inf")):
        bad["w"][0, 0] = value
        torch.save({"model": bad, "config": {}, "step": 1}, tmp_path / "c.pt")  # no checksum
        with pytest.raises(CheckpointError, match="'w' holds NaN or infinite values"):
            read_checkpoint(tmp_path / "c.pt")


def test_checkpoints_without_checksum_still_load(tmp_path):
    torch.save({"model": _state(), "config": {}, "step": 3}, tmp_path / "old.pt")
    assert read_checkpoint(tmp_path / "old.pt")["step"] == 3


class _Evil:
    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return (os.system, (f"touch {self.target}",))


@pytest.mark.parametrize("make", ["empty", "text", "garbage", "evil-pickle", "evil-torch", "list",
                                  "missing", "model-str", "step-str", "step-neg", "config-int",
                                  "checksum-str"])
def test_anything_else_is_refused_in_one_line(tmp_path, make):
    path, pwned = tmp_path / "c.pt", tmp_path / "pwned"
    good = {"model": _state(), "config": {}, "step": 1}
    writers = {
        "empty": lambda: path.write_bytes(b""),
        "text": lambda: path.write_text("not a checkpoint"),
        "garbage": lambda: path.write_bytes(os.urandom(2048)),
        "evil-pickle": lambda: path.write_bytes(pickle.dumps(_Evil(pwned))),
        "evil-torch": lambda: torch.save({**good, "model": _Evil(pwned)}, path),
        "list": lambda: torch.save([1, 2], path),
        "missing": lambda: torch.save({"model": _state()}, path),
        "model-str": lambda: torch.save({**good, "model": "w"}, path),
        "step-str": lambda: torch.save({**good, "step": "1"}, path),
        "step-neg": lambda: torch.save({**good, "step": -1}, path),
        "config-int": lambda: torch.save({**good, "config": 5}, path),
        "checksum-str": lambda: torch.save({**good, "sha256": "x"}, path),
    }
    writers[make]()
    with pytest.raises(CheckpointError) as info:
        read_checkpoint(path)
    msg = str(info.value)
    assert REFUSE in msg and "\n" not in msg and "weights_only=False" not in msg
    assert not pwned.exists()


def test_best_weights_are_verified_too(tmp_path):
    cfg = tiny(steps=8, eval_every=2, early_stop=50)
    train(cfg, tmp_path / "run", progress=False)
    best = tmp_path / "run" / "best.pt"
    assert "sha256" in read_checkpoint(best, need=("model",))
