"""A run carries its language: the spec's text and hash in every checkpoint, so a run on a
user's spec evaluates, resumes, probes and reports from any working directory, after its
folder is moved, and after the spec file is deleted or changed (docs/training.md)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from monoidlab.errors import CheckpointError, ConfigError, SpecError
from monoidlab.training import RunConfig, load_checkpoint, train
from monoidlab.training.run_folder import read_checkpoint, save_checkpoint
from monoidlab.training.run_language import RECORD_KEY, language_of_record, record_language

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ROOT = Path(__file__).resolve().parent.parent

# "the last two symbols were a then b": 3 states, its own name, not in the suite
SPEC = """name = "ends-ab"
alphabet = ["a", "b", "c"]
start = "s"
accept = ["ab"]
[transitions]
s = { a = "a", b = "s", c = "s" }
a = { a = "a", b = "ab", c = "s" }
ab = { a = "a", b = "s", c = "s" }
"""


def tiny(**kw) -> RunConfig:
    base = dict(language="mine.toml", model="mlp-ldru", model_options={"d": 8}, steps=6,
                device="cpu", batch_size=8, train_lengths="1:6", test_lengths="7:8",
                test_samples=4, checkpoint_every=2, log_every=1, eval_kinds=["paper"])
    base.update(kw)
    return RunConfig(**base)


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A user's folder with their spec, as the working directory."""
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "mine.toml").write_text(SPEC)
    monkeypatch.chdir(folder)
    return folder


def test_the_checkpoint_records_the_spec_it_was_trained_on(work):
    res = train(tiny(), "runs/r", progress=False)
    ckpt = read_checkpoint(work / "runs/r/checkpoint.pt")
    rec = ckpt[RECORD_KEY]
    assert rec["name"] == "mine.toml" and rec["file"] == "mine.toml"
    assert rec["text"] == SPEC and rec["sha256"] == record_language("mine.toml")["sha256"]
    assert res["problem"] == "ends-ab"


def test_a_run_loads_from_another_folder_after_a_move_without_its_spec(work, tmp_path,
                                                                       monkeypatch):
    train(tiny(), "runs/r", progress=False)
    before = json.loads((work / "runs/r/results.json").read_text())
    moved = shutil.move(work / "runs", tmp_path / "elsewhere")
    (work / "mine.toml").unlink()
    monkeypatch.chdir(tmp_path)
    model, cfg, problem, _ = load_checkpoint(Path(moved) / "r")
    assert cfg.language == "mine.toml" and problem.name == "ends-ab"
    assert problem.language.n_states == 3
    # the CLI from yet another folder: evaluates to the run's own results
    done = subprocess.run([sys.executable, "-m", "monoidlab", "evaluate", str(Path(moved) / "r"),
                           "--lengths", "7:8", "--json"], cwd="/", capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["min_accuracy"] == before["min_accuracy"]


def test_a_changed_spec_is_named_and_the_runs_copy_is_used(work):
    train(tiny(), "runs/r", progress=False)
    # the user edits the spec afterwards: "ab" no longer accepted, another language
    (work / "mine.toml").write_text(SPEC.replace('accept = ["ab"]', 'accept = ["a"]'))
    with pytest.warns(UserWarning, match="mine.toml: this spec has changed since the run"):
        _, _, problem, _ = load_checkpoint(work / "runs/r")
    assert problem.language.output[problem.language.start] == 0
    assert problem.language.classify(["ab", "a"]).tolist() == [1, 0]  # the trained language


def test_an_unchanged_spec_gives_no_warning(work):
    train(tiny(), "runs/r", progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_checkpoint(work / "runs/r")


def test_a_resumed_run_from_another_folder_continues_bit_for_bit(work, tmp_path, monkeypatch):
    whole = train(tiny(), "runs/whole", progress=False, evaluate_at_end=False)
    train(tiny(), "runs/half", progress=False, stop_at=4)
    (work / "mine.toml").unlink()  # gone: the resume reads the run's copy
    monkeypatch.chdir(tmp_path)
    half = train(tiny(), work / "runs/half", resume=True, progress=False,
                 evaluate_at_end=False)
    assert half["steps"] == whole["steps"] == 6
    a = read_checkpoint(work / "runs/whole/checkpoint.pt")["model"]
    b = read_checkpoint(work / "runs/half/checkpoint.pt")["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert read_checkpoint(work / "runs/half/checkpoint.pt")[RECORD_KEY]["text"] == SPEC


def test_a_resume_may_name_the_same_spec_at_its_new_path(work, tmp_path, monkeypatch):
    """The project moved (or the spec was copied): the resumed config names another path with
    the same bytes, and the run continues as if nothing moved; other bytes are refused with
    a message that says so."""
    train(tiny(), "runs/whole", progress=False, evaluate_at_end=False)
    train(tiny(), "runs/half", progress=False, stop_at=4)
    train(tiny(), "runs/again", progress=False, stop_at=4)
    moved = tmp_path / "moved"
    shutil.copytree(work, moved)
    monkeypatch.chdir(tmp_path)
    half = train(tiny(language=str(moved / "mine.toml")), moved / "runs/half", resume=True,
                 progress=False, evaluate_at_end=False)
    assert half["steps"] == 6
    a = read_checkpoint(work / "runs/whole/checkpoint.pt")["model"]
    b = read_checkpoint(moved / "runs/half/checkpoint.pt")["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)
    (tmp_path / "other.toml").write_text(SPEC.replace('accept = ["ab"]', 'accept = ["a"]'))
    with pytest.raises(ConfigError, match=r"in \['language'\] \(the spec .*other.toml' is not "
                                          "the one the run was trained on"):
        train(tiny(language=str(tmp_path / "other.toml")), work / "runs/again", resume=True,
              progress=False)
    with pytest.raises(ConfigError, match=r"in \['language', 'steps'\]$"):  # not only a path
        train(tiny(language=str(moved / "mine.toml"), steps=7), work / "runs/again",
              resume=True, progress=False)


def test_an_edited_copy_is_refused(work):
    train(tiny(), "runs/r", progress=False)
    path = work / "runs/r/checkpoint.pt"
    ckpt = read_checkpoint(path)
    # an edit that also renews the checkpoint's own checksums: the record's hash still binds
    ckpt[RECORD_KEY] = {**ckpt[RECORD_KEY], "text": SPEC.replace('["ab"]', '["s"]')}
    save_checkpoint({k: v for k, v in ckpt.items() if k != "checksum"}, path)
    with pytest.raises(CheckpointError, match="does not match its hash"):
        load_checkpoint(work / "runs/r")
    with pytest.raises(CheckpointError, match="malformed"):
        language_of_record({"name": "x"}, "ckpt")


def test_a_run_without_a_record_names_where_it_looked(work, tmp_path, monkeypatch):
    """Runs of monoidlab 0.1.0 carry no record: they load by name, and fail in one line."""
    train(tiny(), "runs/r", progress=False)
    path = work / "runs/r/checkpoint.pt"
    ckpt = read_checkpoint(path)
    del ckpt[RECORD_KEY]
    save_checkpoint({k: v for k, v in ckpt.items() if k != "checksum"}, path)
    assert load_checkpoint(work / "runs/r")[2].name == "ends-ab"  # by name, from here
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecError, match="predates runs that carry their spec"):
        load_checkpoint(work / "runs/r")


def test_old_run_folders_still_load_from_anywhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model, cfg, problem, ckpt = load_checkpoint(ROOT / "tests/data/runs-v0.1.0/"
                                                "parity-ldru-finished")
    assert RECORD_KEY not in ckpt and problem.name == "parity"


def test_a_report_of_a_run_needs_no_language(work, tmp_path, monkeypatch):
    from monoidlab.report import build_report

    train(tiny(), "runs/r", progress=False)
    (work / "mine.toml").unlink()
    monkeypatch.chdir(tmp_path)
    page = build_report(None, tmp_path / "rep", checkpoint=work / "runs/r",
                        test_lengths=range(7, 9), train_lengths=range(1, 7), probe=False,
                        umap=False)
    assert page.name == "ends-ab.html"
    assert json.loads(page.with_suffix(".json").read_text())["language"] == "ends-ab"
