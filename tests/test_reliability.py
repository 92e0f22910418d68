"""Hostile run folders: links and FIFOs inside them, edited or foreign checkpoints, results
files that are not results, reports of one language showing another's model, failed starts
(docs/reliability.md). Each case ends in one MonoidlabError, or in the correct result, with
nothing written outside the intended folder."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import textwrap
from pathlib import Path

import pytest
import torch

from monoidlab._paths import check_entry, child_dir, is_within, open_append
from monoidlab.errors import CheckpointError, ConfigError, InputError, OutputPathError, RunExists
from monoidlab.training import RunConfig, load_checkpoint, train
from monoidlab.training.run_folder import (
    RUN_FILES,
    RunFolder,
    is_run,
    read_checkpoint,
    save_checkpoint,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def tiny(**kw) -> RunConfig:
    base = dict(language="parity", model="mlp-ldru", model_options={"d": 8}, steps=6,
                device="cpu", batch_size=8, train_lengths="1:6", test_lengths="7:8",
                test_samples=4, checkpoint_every=2, log_every=1, eval_kinds=["paper"],
                eval_every=3, early_stop=5)
    base.update(kw)
    return RunConfig(**base)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two finished runs with best.pt (parity and dyck-2), and one of parity on another seed."""
    root = tmp_path_factory.mktemp("runs")
    train(tiny(), root / "parity", progress=False)
    train(tiny(seed=1), root / "parity-s1", progress=False)
    train(tiny(language="dyck-2"), root / "dyck2", progress=False)
    return root


def copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


class Hang(BaseException):
    """Not an OSError: the code under test must not mistake it for a failed open."""


@contextlib.contextmanager
def no_hang(seconds: int = 20):
    """Fail instead of blocking forever (an open() of a FIFO without a reader)."""
    def boom(*_):
        raise Hang("blocked: an open without O_NONBLOCK?")

    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


# ------------------------------------------------------------------------------ links, FIFOs
@pytest.mark.parametrize("name", [*RUN_FILES, "tb"])
@pytest.mark.parametrize("dangling", [True, False])
def test_a_linked_run_file_is_refused_and_its_target_kept(tmp_path, name, dangling):
    victim = tmp_path / "victim"
    victim.mkdir()
    target = victim / "file"
    if not dangling:
        target.write_text("precious")
    run = tmp_path / "run"
    run.mkdir()
    os.symlink(target, run / name)
    assert name in is_run(run)  # a dangling link counts: it is not "no run"
    for kw in ({}, {"overwrite": True}, {"resume": True}):
        with pytest.raises((OutputPathError, CheckpointError, RunExists)) as exc:
            train(tiny(), run, progress=False, **kw)
        if kw.get("overwrite"):
            assert "symbolic link" in str(exc.value)
    assert sorted(p.name for p in victim.iterdir()) == ([] if dangling else ["file"])
    if not dangling:
        assert target.read_text() == "precious"
    assert (run / name).is_symlink()  # the user's link is not removed either


def test_a_fifo_in_place_of_metrics_is_refused_without_blocking(tmp_path, runs):
    run = copy(runs / "parity", tmp_path / "run")
    (run / "metrics.jsonl").unlink()
    os.mkfifo(run / "metrics.jsonl")
    with no_hang(), pytest.raises(OutputPathError, match="FIFO"):
        train(tiny(), run, resume=True, progress=False)


def test_open_append_never_follows_a_link_nor_blocks(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    os.symlink(tmp_path / "elsewhere", tmp_path / "link")
    with no_hang():
        for name, word in (("fifo", "FIFO"), ("link", "symbolic link")):
            with pytest.raises(OutputPathError, match=word):
                open_append(tmp_path / name, "log")
    assert not (tmp_path / "elsewhere").exists()
    with open_append(tmp_path / "log.jsonl", "log") as fh:
        fh.write("{}\n")
    with open_append(tmp_path / "log.jsonl", "log") as fh:
        fh.write("{}\n")
    assert (tmp_path / "log.jsonl").read_text() == "{}\n{}\n"


def test_a_checkpoint_that_is_a_fifo_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "checkpoint.pt")
    with no_hang(), pytest.raises(CheckpointError, match="FIFO"):
        read_checkpoint(tmp_path / "checkpoint.pt")


def test_child_dir_and_check_entry(tmp_path):
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    (tmp_path / "file").write_text("x")
    assert child_dir(tmp_path, "real", "x") == tmp_path / "real"
    assert child_dir(tmp_path, "absent", "x") == tmp_path / "absent"
    with pytest.raises(OutputPathError, match="symbolic link"):
        child_dir(tmp_path, "link", "x")
    with pytest.raises(OutputPathError, match="a file, not a folder"):
        child_dir(tmp_path, "file", "x")
    with pytest.raises(OutputPathError, match="a folder, not a regular file"):
        check_entry(tmp_path / "real", "x")


def test_a_linked_docs_folder_is_not_a_docs_folder(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "proj").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "proj" / "docs")
    md = tmp_path / "proj" / "docs" / "results.md"
    assert is_within(md, tmp_path / "proj" / "docs")  # followed: the old check let it pass
    assert not is_within(md, tmp_path / "proj" / "docs", follow_root=False)
    (tmp_path / "proj" / "real-docs").mkdir()
    assert is_within(tmp_path / "proj" / "real-docs" / "a.md", tmp_path / "proj" / "real-docs",
                     follow_root=False)


# ------------------------------------------------------------------------------ sweeps
SWEEP = """
[sweep]
languages = ["parity"]
models = ["mlp-ldru"]
seeds = [0]
out = "runs"
{extra}
[base]
device = "cpu"
steps = 2
batch_size = 4
train_lengths = "1:4"
test_lengths = "5:6"
test_samples = 4
eval_kinds = ["paper"]
[models.mlp-ldru]
model_options = {{ d = 8 }}
"""


def write_sweep(folder: Path, extra: str = "") -> Path:
    path = folder / "configs" / "sweep.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(SWEEP.format(extra=extra)))
    return path


def test_a_sweep_never_trains_into_a_linked_run_folder(tmp_path, monkeypatch):
    from monoidlab.training.sweep import run_sweep

    monkeypatch.chdir(tmp_path)
    path = write_sweep(tmp_path)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "config.json").write_text("precious")
    (tmp_path / "runs").mkdir()
    os.symlink(victim, tmp_path / "runs" / "parity__mlp-ldru__s0")
    with pytest.raises(OutputPathError, match="symbolic link"):
        run_sweep(path, progress=False)
    assert [p.name for p in victim.iterdir()] == ["config.json"]
    assert (victim / "config.json").read_text() == "precious"


@pytest.mark.parametrize("text, words", [
    ("garbage{", "not JSON"), ("[1]", "a JSON list"), ('{"evaluation": {}}', "key 'solved'"),
    ('{"solved": true, "verdict": "x", "paper_score": 1, "min_accuracy": {}, '
     '"train_seconds": 1, "steps": 2, "device": "cpu", "evaluation": {"kinds": 5}}',
     "does not parse")])
def test_a_sweep_meets_a_garbage_results_file(tmp_path, monkeypatch, text, words):
    from monoidlab.training.sweep import run_sweep

    monkeypatch.chdir(tmp_path)
    path = write_sweep(tmp_path)
    run = tmp_path / "runs" / "parity__mlp-ldru__s0"
    run.mkdir(parents=True)
    (run / "results.json").write_text(text)
    with pytest.raises(CheckpointError, match=words) as exc:
        run_sweep(path, progress=False)
    assert "results.json" in str(exc.value)
    assert (run / "results.json").read_text() == text  # kept for the user to look at


@pytest.mark.parametrize("paper, words", [
    ('scores = { mlp-ldru = 5 }', "scores.mlp-ldru: a table"),
    ('scores = { mlp-ldru = { parity = "high" } }', "a percent"),
    ('scores = 3', "needs 'scores'"),
    ('solved_at = "x"', "solved_at"),
    ('solved = { mlp-ldru = -1 }', "solved:"),
    ('bogus = 1', "unknown key")])
def test_paper_scores_of_the_wrong_type_fail_before_training(tmp_path, monkeypatch, paper,
                                                              words):
    from monoidlab.training.sweep import load_sweep

    monkeypatch.chdir(tmp_path)
    path = write_sweep(tmp_path, f"[paper]\n{paper}\n")
    with pytest.raises(ConfigError, match=words):
        load_sweep(path)
    assert not (tmp_path / "runs").exists()


def test_results_md_through_a_linked_docs_folder_is_refused(tmp_path, monkeypatch):
    from monoidlab.training.sweep import load_sweep

    monkeypatch.chdir(tmp_path / ".")
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "docs")
    path = write_sweep(tmp_path, 'results_md = "docs/results.md"')
    with pytest.raises(ConfigError, match="results_md"):
        load_sweep(path)
    os.unlink(tmp_path / "docs")
    (tmp_path / "docs").mkdir()
    assert load_sweep(path)["results_md"] == "docs/results.md"  # a real docs folder is fine
    os.symlink(tmp_path / "elsewhere" / "x.md", tmp_path / "docs" / "results.md")
    with pytest.raises(ConfigError, match="must lie in"):
        load_sweep(path)
    os.unlink(tmp_path / "docs" / "results.md")  # a link that stays inside: still a link
    os.symlink(tmp_path / "docs" / "other.md", tmp_path / "docs" / "results.md")
    with pytest.raises(ConfigError, match="symbolic link"):
        load_sweep(path)


# ------------------------------------------------------------------------------ checkpoints
def test_an_edited_config_inside_a_checkpoint_is_refused(tmp_path, runs):
    run = copy(runs / "parity", tmp_path / "run")
    data = (run / "checkpoint.pt").read_bytes()
    assert data.count(b"parity")
    (run / "checkpoint.pt").write_bytes(data.replace(b"parity", b"dyck-1"))
    with pytest.raises(CheckpointError, match="config, step or other entries"):
        load_checkpoint(run)


def test_every_entry_of_a_checkpoint_is_covered(tmp_path):
    path = tmp_path / "c.pt"
    save_checkpoint({"model": {"w": torch.ones(2)}, "config": {"language": "parity"},
                     "step": 3, "problem": {"n_classes": 2}}, path)
    assert read_checkpoint(path)["step"] == 3
    good = torch.load(path, weights_only=True)
    for change in ({"step": 4}, {"config": {"language": "dyck-1"}}, {"problem": {}},
                   {"extra": 1}):
        torch.save({**good, **change}, path)
        with pytest.raises(CheckpointError, match="do not match their checksum"):
            read_checkpoint(path)
    sums = {k: v for k, v in good["sha256"].items() if k != "model"}
    torch.save({**good, "sha256": sums}, path)  # a tensor table without its own checksum
    with pytest.raises(CheckpointError, match="no checksum for model"):
        read_checkpoint(path)


def test_best_weights_of_another_run_are_refused(tmp_path, runs):
    base = load_checkpoint(runs / "parity")
    assert base[3]["step"] != base[3]["last_step"] or (runs / "parity" / "best.pt").is_file()
    for other in ("parity-s1", "dyck2"):
        run = copy(runs / "parity", tmp_path / f"run-{other}")
        shutil.copy(runs / other / "best.pt", run / "best.pt")
        with pytest.raises(CheckpointError, match="best.pt: written by another run"):
            load_checkpoint(run)
        with pytest.raises(CheckpointError):
            train(tiny(), run, resume=True, progress=False)


def test_best_weights_without_config_must_be_the_recorded_ones(tmp_path, runs):
    run = copy(runs / "parity", tmp_path / "run")
    best = torch.load(run / "best.pt", weights_only=True)
    step = int(torch.load(run / "checkpoint.pt", weights_only=True)["step"])
    other = torch.load(runs / "parity-s1" / "best.pt", weights_only=True)
    # the other run's weights, stripped of their config, at a step the checkpoint recorded
    save_checkpoint({"model": other["model"], "step": min(best["step"], step)}, run / "best.pt")
    with pytest.raises(CheckpointError, match="not the best weights"):
        load_checkpoint(run)
    save_checkpoint({"model": other["model"], "step": step + 10}, run / "best.pt")
    with pytest.raises(CheckpointError, match="newer than checkpoint.pt"):
        load_checkpoint(run)
    save_checkpoint({"model": best["model"], "step": best["step"]}, run / "best.pt")
    model, *_ = load_checkpoint(run)  # its own weights, config stripped: still the run's
    assert all(torch.equal(model.state_dict()[k], v) for k, v in best["model"].items())


# ------------------------------------------------------------------------------ reports
def test_a_report_refuses_the_model_of_another_language(tmp_path, runs):
    from monoidlab.report import build_report

    kw = dict(test_lengths=range(7, 9), train_lengths=range(1, 7), probe=False, umap=False)
    with pytest.raises(InputError, match="trained on 'dyck-2', not on 'parity'"):
        build_report("parity", tmp_path / "rep", checkpoint=runs / "dyck2", **kw)
    assert not (tmp_path / "rep").exists()
    page = build_report("parity", tmp_path / "rep", checkpoint=runs / "dyck2",
                        other_language=True, **kw)
    assert "<h1>monoidlab report: parity (model trained on dyck-2)</h1>" in page.read_text()
    assert json.loads(page.with_suffix(".json").read_text())["model_language"] == "dyck-2"
    page = build_report("parity", tmp_path / "rep2", checkpoint=runs / "parity", **kw)
    assert "model trained on" not in page.read_text()


# ------------------------------------------------------------------------------ failed starts
def test_a_run_failing_before_its_first_checkpoint_leaves_nothing(tmp_path, monkeypatch):
    import monoidlab.training.trainer as trainer

    def fail(*_a, **_k):
        raise RuntimeError("killed at step 1")

    monkeypatch.setattr(trainer, "run_steps", fail)
    for run in (tmp_path / "new", tmp_path / "existing"):
        if run.name == "existing":
            run.mkdir()
            (run / "notes.txt").write_text("mine")
        with pytest.raises(RuntimeError, match="killed"):
            train(tiny(), run, progress=False)
        assert is_run(run) == []
        assert run.exists() == (run.name == "existing")
    monkeypatch.undo()
    train(tiny(), tmp_path / "existing", progress=False)  # the retry needs no overwrite
    assert (tmp_path / "existing" / "notes.txt").read_text() == "mine"


def test_a_resumed_run_that_fails_keeps_everything(tmp_path, runs, monkeypatch):
    import monoidlab.training.trainer as trainer

    run = copy(runs / "parity", tmp_path / "run")
    (run / "results.json").unlink()
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    def fail(*_a, **_k):
        raise RuntimeError("killed")

    monkeypatch.setattr(trainer, "run_steps", fail)
    with pytest.raises(RuntimeError, match="killed"):
        train(tiny(), run, resume=True, progress=False)
    after = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    assert after == before  # config.json rewritten with the same text, metrics kept


def test_run_folder_entry_is_checked_under_the_lock(tmp_path):
    run = tmp_path / "run"
    with RunFolder(run) as folder:
        assert folder.path == run
    (run / "tb").write_text("a file where a folder belongs")
    with pytest.raises(OutputPathError, match="not a folder"):
        RunFolder(run, overwrite=True).__enter__()


def test_probe_default_folder_never_follows_a_link(tmp_path, runs):
    from monoidlab.cli import main

    run = copy(runs / "parity", tmp_path / "run")
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "probe.json").write_text("precious")
    os.symlink(victim, run / "probe")
    assert main(["probe", str(run), "--n-strings", "20", "--no-umap", "--no-init"]) == 2
    assert (victim / "probe.json").read_text() == "precious"
    assert [p.name for p in victim.iterdir()] == ["probe.json"]


@pytest.mark.parametrize("kw, words", [
    ({"threshold": float("nan")}, "threshold"), ({"threshold": -1}, "threshold"),
    ({"threshold": 2}, "threshold"), ({"seed": -1}, "seed"), ({"seed": "abc"}, "seed"),
    ({"seed": 2**64}, "seed"), ({"n_per_length": 0}, "n_per_length"),
    ({"n_per_length": 1.5}, "n_per_length"), ({"lengths": [10**9]}, "at most 100000")])
def test_evaluate_kinds_checks_its_arguments(runs, kw, words):
    from monoidlab.training import evaluate_kinds

    model, cfg, problem, _ = load_checkpoint(runs / "parity")
    args = {"lengths": [7, 8], "n_per_length": 4, **kw}
    with pytest.raises(InputError, match=words):
        evaluate_kinds(model, problem, **args)
