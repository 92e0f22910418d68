"""The long-run study (monoidlab study long) on tiny budgets: pauses, snapshots, the pair rule,
the fresh-set re-check, the state packs that outlive a machine, and the committed section
"long runs" regenerated from the study's ledgers."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from monoidlab.cli import main
from monoidlab.errors import ConfigError
from monoidlab.studies import long as mod
from monoidlab.studies.runner import read_config, run_study, study_sections, wrong_strings

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ROOT = Path(__file__).resolve().parent.parent


def _tiny_long_config(tmp_path: Path, schedule: str) -> Path:
    """A pair (p-ours, p-authors) of tiny parity runs; ``schedule``: the [base] lines of steps
    and validation. The study's repository is ``tmp_path`` (the config's own folder): its
    ledgers and state packs live under ``tmp_path/docs/data``."""
    cfg = tmp_path / "long.toml"
    cfg.write_text(f"""[sweep]
conditions = ["p-ours", "p-authors"]
models = ["mlp-ldru"]
out = "{(tmp_path / 'runs').as_posix()}"
[base]
{schedule}
test_lengths = "9:10"
test_samples = 4
train_lengths = "1:6"
device = "cpu"
[conditions.p-ours]
language = "parity"
batch_size = 8
model_options = {{ d = 8 }}
[conditions.p-authors]
language = "parity"
recipe = "authors"
batch_size = 8
model_options = {{ d = 8 }}
""")
    return cfg


def _study(cfg: Path, *args: str) -> int:
    return main(["study", "long", "--config", str(cfg), *args])


def test_long_runs_pause_snapshot_and_continue_the_favoured_recipe(tmp_path, capsys):
    cfg = _tiny_long_config(tmp_path, 'steps = 12\neval_every = 4\nval_lengths = "9:10"\n'
                            'val_samples = 4\nearly_stop = 3\ncheckpoint_every = 2')
    assert _study(cfg, "--phase", "pairs", "--pair-step", "8") == 0
    runs = tmp_path / "runs"
    for name in ("p-ours", "p-authors"):
        run = runs / f"{name}__mlp-ldru__s0"
        assert mod.checkpoint_step(run) == 8 and not (run / "results.json").exists()
        assert sorted(p.name for p in (run / "snapshots").iterdir()) == ["step-4.pt",
                                                                         "step-8.pt"]
        assert set(mod.validations(run)) == {4, 8}
    choice = mod.favoured(runs / "p-ours__mlp-ldru__s0", runs / "p-authors__mlp-ldru__s0", 8)
    assert choice in ("ours", "authors")
    assert _study(cfg, "--phase", "long", "--pair-step", "8") == 0
    won = runs / f"p-{choice}__mlp-ldru__s0"
    lost = runs / f"p-{'authors' if choice == 'ours' else 'ours'}__mlp-ldru__s0"
    assert (won / "results.json").is_file() and (won / "fresh.json").is_file()
    assert mod.checkpoint_step(lost) == 8  # the other recipe stays paused
    fresh = json.loads((won / "fresh.json").read_text())
    assert set(fresh) == {"own", "1000", "1001"}
    segments = [json.loads(x) for x in (won / "segments.jsonl").read_text().splitlines()]
    assert [s["target"] for s in segments] == [4, 8, 12]
    # the learning curve: one row per snapshot (cached), then the tested weights' row
    rows = mod.curve(won)
    assert [r["step"] for r in rows][:2] == [4, 8] and rows[-1]["tested"]
    assert mod.curve(won) == rows  # read back from the cache, not evaluated again
    assert len((won / "curve.jsonl").read_text().splitlines()) == 2
    tested = json.loads((won / "results.json").read_text())["evaluation"]
    assert sum(rows[-1]["wrong"].values()) == wrong_strings({"evaluation": tested})[0]
    for r in rows:  # errors per level add up to errors per kind
        assert sum(r["wrong_by_level"].values()) == sum(r["wrong"].values())
    capsys.readouterr()
    assert _study(cfg, "--table") == 0
    table = capsys.readouterr().out
    assert "| p |" in table and f"| {choice} |" in table  # the continued recipe, one row
    from monoidlab.training.sweep import load_sweep

    members = mod.pairs_of(load_sweep(cfg)["runs"])["p"]
    row = mod.prediction_row("p", mod.continued_run(members, runs, 8), members, runs,
                             tmp_path / "none", 8)
    assert row["support"] == 2 and row["covered"] and row["steps"] == 12  # parity: support 2
    best = mod.tested_of(rows)  # the tested weights' errors, not the last snapshot's
    assert row["own"] == f"{sum(best['wrong'].values())} of {sum(best['scored'].values())}"
    assert row["prediction"] in ("holds", "not confirmed: covered, not solved")
    assert (row["diagnosis"] is not None) == (not row["solved"])
    # the trivial baselines on the same strings: from the tested evaluation, from an untrained
    # model of the config (no run needed), and counted on the strings drawn directly
    import numpy as np

    from monoidlab.evaluation.result import Evaluation
    from monoidlab.training.problems import make_problem

    tested_ev = Evaluation.from_dict(tested)
    assert row["baselines"] == mod.baseline_wrong(tested_ev)
    cfg0 = next(iter(members.values()))["config"]
    assert mod.trivial_wrong(cfg0) == row["baselines"]
    problem = make_problem(cfg0)
    for kind, lengths in tested_ev.accuracy.items():
        drawn = [problem.kind_batch(problem.eval_rng(cfg0.seed, kind, int(L)), int(L),
                                    cfg0.test_samples, kind)["targets"] for L in lengths]
        minority = sum(len(t) - np.bincount(t).max() for t in drawn)
        assert row["baselines"]["majority"][kind] == minority
    assert f"| {mod.wrong_text(row['baselines']['majority'])} / " in table
    mod.draw_curves([row], tmp_path / "curves.png")
    assert (tmp_path / "curves.png").stat().st_size > 1000
    # --write-docs: the section, the figure and the finished row, in the study's repository
    (tmp_path / "docs").mkdir(exist_ok=True)
    assert _study(cfg, "--write-docs") == 0
    assert "<!-- begin long runs -->" in (tmp_path / "docs" / "results.md").read_text()
    assert (tmp_path / "docs" / "figures" / "long-curves.png").stat().st_size > 1000
    finished = json.loads((tmp_path / "docs" / "data" / "ldru-long-finished.json").read_text())
    assert finished["rows"]["p"]["recipe"] == choice and finished["rows"]["p"]["steps"] == 12


def test_long_phase_takes_a_recorded_choice_when_the_pair_folders_are_gone(tmp_path, capsys):
    cfg = _tiny_long_config(tmp_path, "steps = 4\neval_every = 0")
    ledger = tmp_path / "docs" / "data" / "ldru-long-pairs.json"
    ledger.parent.mkdir(parents=True)
    ledger.write_text(json.dumps({"pairs": {"p": {"ours": 0.5, "authors": 0.75}}}))
    assert _study(cfg, "--phase", "long") == 0
    assert "p: continuing authors (recorded in ldru-long-pairs.json" in capsys.readouterr().out
    runs = tmp_path / "runs"
    assert (runs / "p-authors__mlp-ldru__s0" / "results.json").is_file()
    assert not (runs / "p-ours__mlp-ldru__s0").exists()
    # resumed once it has started (its folder there, the other still absent): the same choice
    (runs / "p-authors__mlp-ldru__s0" / "results.json").unlink()
    from monoidlab.training.sweep import load_sweep

    members = mod.pairs_of(load_sweep(cfg)["runs"])["p"]
    assert mod.continued_run(members, runs, 20000, ledger)["id"] == "p-authors__mlp-ldru__s0"
    # a pair whose one side has started in --phase pairs (no recorded choice): not continued
    assert mod.continued_run(members, runs, 20000, tmp_path / "none.json") is None
    assert _study(cfg, "--phase", "long") == 0
    assert "p: continuing authors (recorded in ldru-long-pairs.json" in capsys.readouterr().out
    assert (runs / "p-authors__mlp-ldru__s0" / "results.json").is_file()
    # a side never validated: no choice, nothing runs
    ledger.write_text(json.dumps({"pairs": {"p": {"ours": 0.5, "authors": None}}}))
    assert mod.recorded_choice("p", ledger) is None
    with pytest.raises(ConfigError, match="--only: no pair 'q'"):
        run_study(mod.STUDY, read_config(mod.STUDY, cfg), echo=None, phase="long", only="q")
    with pytest.raises(ConfigError, match="--phase pairs .* or --phase long"):
        run_study(mod.STUDY, read_config(mod.STUDY, cfg), echo=None)


def test_long_runs_outlive_their_machine_packed_and_recorded(tmp_path, capsys):
    """A run packed mid-way (save-state) and unpacked on a fresh machine ends exactly where
    the same run left alone ends; a finished row is recorded and the table, and --phase long,
    read it once the folders are gone."""
    schedule = ('steps = 12\neval_every = 4\nval_lengths = "9:10"\nval_samples = 4\n'
                'early_stop = 3\ncheckpoint_every = 2')
    results = {}
    for name in ("alone", "moved"):
        (tmp_path / name).mkdir()
        cfg = _tiny_long_config(tmp_path / name, schedule)
        data = tmp_path / name / "docs" / "data"
        state, finished = data / "long-state", data / "ldru-long-finished.json"
        common = ["--pair-step", "8"]
        assert _study(cfg, "--phase", "pairs", *common) == 0
        runs = tmp_path / name / "runs"
        if name == "moved":
            assert _study(cfg, "--action", "save-state", *common) == 0
            packs = sorted(p.name for p in state.iterdir())
            assert packs == ["p-authors__mlp-ldru__s0.tar.gz", "p-ours__mlp-ldru__s0.tar.gz"]
            curves = {p.name: mod.curve(p) for p in runs.iterdir()}
            shutil.rmtree(runs)  # the machine goes
            capsys.readouterr()
            assert _study(cfg, "--action", "status") == 0
            assert "p-ours__mlp-ldru__s0: restored from" in capsys.readouterr().out
            for p in runs.iterdir():
                assert mod.checkpoint_step(p) == 8 and not (p / "snapshots").exists()
                assert mod.curve(p) == curves[p.name]  # the snapshots' points came along
            assert mod.restore_state(runs / "p-ours__mlp-ldru__s0", state) is False  # kept
        assert _study(cfg, "--phase", "long", *common) == 0
        done = [p for p in runs.iterdir() if (p / "results.json").is_file()]
        assert len(done) == 1
        results[name] = (done[0].name, json.loads((done[0] / "results.json").read_text()))
        if name == "moved":
            capsys.readouterr()
            assert _study(cfg, "--action", "save-state", *common) == 0
            assert "recorded the finished rows" in capsys.readouterr().out
            assert finished.is_file()
            assert not (state / (done[0].name + ".tar.gz")).exists()  # its row instead
            assert not any(state.iterdir())  # nor the paused side of the decided pair
            assert _study(cfg, "--table") == 0
            before = capsys.readouterr().out
            shutil.rmtree(runs)
            shutil.rmtree(state)
            assert _study(cfg, "--table") == 0
            after = capsys.readouterr().out
            row = next(x for x in before.splitlines() if x.startswith("| p |"))
            assert "| 12 |" in row and row in after.splitlines()
            assert _study(cfg, "--phase", "long", *common) == 0
            assert "p: finished (recorded in ldru-long-finished.json" in capsys.readouterr().out
            assert not runs.exists() or not any(runs.iterdir())  # nothing trained again
    (a_id, a), (b_id, b) = results["alone"], results["moved"]
    assert a_id == b_id and a["evaluation"] == b["evaluation"]


def test_a_pack_made_mid_segment_counts_the_time_of_the_part_trained(tmp_path):
    """The time of the steps trained since the last segment record, up to the checkpoint, goes
    into the pack as one more record (the sum of each process's last clock reading; lines past
    the checkpoint are work a resumed run redoes); the live run's own file is left alone."""
    import tarfile

    import torch

    run = tmp_path / "runs" / "r"
    run.mkdir(parents=True)
    torch.save({"step": 8}, run / "checkpoint.pt")
    seg = '{"target": 4, "step": 4, "wall_s": 3600.0, "cpu_s": 3240.0, "paused": true}\n'
    (run / "segments.jsonl").write_text(seg)
    lines = [{"step": 4, "elapsed_s": 3600.0, "cpu_s": 3240.0},  # before the part: not counted
             {"step": 5, "elapsed_s": 360.0, "cpu_s": 324.0},  # process 1
             {"step": 6, "elapsed_s": 720.0, "cpu_s": 648.0},
             {"step": 6, "val_min_accuracy": 0.5},  # a validation line has no clock
             {"step": 7, "elapsed_s": 180.0, "cpu_s": 144.0},  # process 2, resumed at 6
             {"step": 8, "elapsed_s": 540.0, "cpu_s": 432.0},
             {"step": 9, "elapsed_s": 900.0, "cpu_s": 720.0}]  # past the checkpoint: redone
    (run / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    part = mod.interrupted_segment(run)
    assert part == {"target": None, "step": 8, "wall_s": 1260.0, "cpu_s": 1080.0, "interrupted": True}
    assert mod.hours(run) == (1.35, 1.2)  # the live run's hours count the part too
    pack = mod.save_state(run, tmp_path / "state")
    assert (run / "segments.jsonl").read_text() == seg
    with tarfile.open(pack) as tar:
        packed = tar.extractfile("segments.jsonl").read().decode().splitlines()
    assert [json.loads(x) for x in packed] == [json.loads(seg), part]
    moved = tmp_path / "elsewhere" / "r"
    assert mod.restore_state(moved, tmp_path / "state")
    assert mod.hours(moved) == (1.35, 1.2)
    assert mod.interrupted_segment(moved) is None  # the part is counted once
    # a process that logged no CPU time: the CPU hours are a lower bound
    (run / "metrics.jsonl").write_text("".join(
        json.dumps({k: v for k, v in x.items() if not (k == "cpu_s" and x["step"] == 8)}) + "\n"
        for x in lines))
    assert mod.interrupted_segment(run)["cpu_s"] is None
    (run / "segments.jsonl").write_text(seg + json.dumps(mod.interrupted_segment(run)) + "\n")
    assert mod.hours(run) == (1.35, ">= 0.9")


def test_a_segment_resumed_after_a_kill_keeps_the_killed_part_s_time(tmp_path):
    """A process killed mid-segment leaves its time only in the log's clocks; the next segment
    records it before training on, so the run's hours count both processes."""
    from monoidlab.training import train
    from monoidlab.training.config import RunConfig

    cfg = RunConfig(language="parity", model="mlp-ldru", steps=12, eval_every=4,
                    val_lengths="9:10", val_samples=4, test_lengths="9:10", test_samples=4,
                    train_lengths="1:6", batch_size=8, checkpoint_every=2, log_every=1,
                    model_options={"d": 8}, device="cpu")
    out = tmp_path / "runs"
    mod.train_until("r", cfg, out, 4)
    run = out / "r"
    train(cfg, run, resume=True, progress=False, stop_at=6)  # the killed process, step 6
    killed = mod.interrupted_segment(run)
    clocks = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    at6 = [x for x in clocks if x["step"] == 6 and "elapsed_s" in x][-1]
    assert killed == {"target": None, "step": 6, "wall_s": round(at6["elapsed_s"], 1),
                      "cpu_s": round(at6["cpu_s"], 1), "interrupted": True}
    mod.train_until("r", cfg, out, 8)
    segs = [json.loads(x) for x in (run / "segments.jsonl").read_text().splitlines()]
    assert [(x["target"], x["step"]) for x in segs] == [(4, 4), (None, 6), (8, 8)]
    assert segs[1] == killed
    assert mod.interrupted_segment(run) is None


def test_a_packed_run_with_a_foreign_file_is_refused(tmp_path):
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("../escape.txt")
        tar.addfile(info, io.BytesIO(b""))
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "r.tar.gz").write_bytes(buf.getvalue())
    with pytest.raises(ConfigError, match=r"r.tar.gz: '../escape.txt' is not a run file"):
        mod.restore_state(tmp_path / "runs" / "r", tmp_path / "state")
    assert not (tmp_path / "runs" / "r").exists()


def test_the_long_study_s_doctests(function_doctests):
    assert function_doctests(mod, mod.recorded_choice, mod.errors_of, mod.tested_of,
                            mod.prediction_of) == (0, 10)


def test_the_recorded_pair_validations_choose_as_the_config_s_rule():
    ledger = ROOT / mod.PAIRS_LEDGER
    assert mod.recorded_choice("dyck-6-learned", ledger) == "authors"
    assert mod.recorded_choice("dyck-6-identity", ledger) == "ours"
    assert mod.recorded_choice("modular-arithmetic-identity", ledger) == "ours"  # 0.031 vs 0
    assert mod.recorded_choice("dyck-5-identity", ledger) is None  # not a recorded pair


# ------------------------------------------------------------------------------ the committed table
def _committed(name: str) -> str:
    doc = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    m = re.search(re.escape(f"<!-- begin {name} -->") + r"\n(.*?)\n"
                  + re.escape(f"<!-- end {name} -->"), doc, re.S)
    assert m, f"docs/results.md has no section {name!r}"
    return m.group(1)


@pytest.fixture(scope="module")
def committed_config():
    return read_config(mod.STUDY, ROOT / "configs" / "ldru-long-cpu.toml")


def test_the_committed_long_runs_table_regenerates_identically_from_its_ledgers(
        committed_config):
    """Every row of the committed table comes from docs/data/ldru-long-finished.json (no run
    folder here), the supports are computed again."""
    made = study_sections(mod.STUDY, committed_config)
    assert list(made) == ["long runs"]
    assert made["long runs"].rstrip() == _committed("long runs"), (
        "docs/results.md section 'long runs' is not what the study's ledgers give: run "
        "`monoidlab study long --write-docs`")


def test_a_changed_finished_row_changes_the_long_runs_table(tmp_path, committed_config,
                                                             monkeypatch):
    """The comparison above can fail: one recorded row changed, the table moves."""
    data = json.loads((ROOT / mod.FINISHED_LEDGER).read_text())
    data["rows"]["dyck-4-identity"]["own"] = "1 of 2"
    changed = tmp_path / mod.FINISHED_LEDGER
    changed.parent.mkdir(parents=True)
    changed.write_text(json.dumps(data, indent=1) + "\n")
    shutil.copy(ROOT / mod.PAIRS_LEDGER, tmp_path / mod.PAIRS_LEDGER)
    from dataclasses import replace

    moved = replace(committed_config, root=tmp_path, out=tmp_path / "runs")
    text = study_sections(mod.STUDY, moved)["long runs"]
    assert text.rstrip() != _committed("long runs") and "| 1 of 2 |" in text
