"""The study drivers on tiny budgets: bench/bench_threshold.py (the ledger, resuming, L*, the
table), bench/bench_long.py (pauses, snapshots, the pair rule, the fresh-set re-check) and
bench/bench_listops.py (the cells, the baselines, the ledger and the table)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ROOT = Path(__file__).resolve().parent.parent


#: support_lengths of bench_threshold (each study language's s, |M|, ...: seconds of exact
#: coverage apiece, the same in every test), computed once per process for this file's tests
_SUPPORT: dict[str, dict] = {}


def _threshold(bench_script):
    """bench/bench_threshold.py, its support_lengths memoised in :data:`_SUPPORT`."""
    import copy

    mod = bench_script("bench_threshold")
    real = mod.support_lengths

    def support_lengths(name: str) -> dict:
        if name not in _SUPPORT:
            _SUPPORT[name] = real(name)
        return copy.deepcopy(_SUPPORT[name])

    mod.support_lengths = support_lengths
    return mod


#: the study's 16 languages, and the five its rules are fitted on: a tiny study tabulates
#: these five (each language's support lengths cost a second of exact coverage at 41..500)
STUDY_LANGUAGES = '''languages = ["parity", "tomita-5", "tomita-6", "prefix-1-2", "dyck-2", "tomita-4",
             "even-pairs", "cycle-navigation", "tomita-7", "prefix-2-2", "prefix-1-4", "dyck-3",
             "tomita-3", "prefix-2-4", "prefix-4-2", "prefix-4-4"]'''
FIT_LANGUAGES = 'languages = ["parity", "tomita-5", "tomita-6", "prefix-1-2", "dyck-2"]'


def _tiny_threshold_config(tmp_path: Path) -> Path:
    text = (ROOT / "configs" / "threshold-study.toml").read_text()
    for a, b in ((STUDY_LANGUAGES, FIT_LANGUAGES),
                 ("steps = 4000", "steps = 12"), ('test_lengths = "41:500"',
                                                  'test_lengths = "41:42"'),
                 ("test_samples = 32", "test_samples = 4"), ("seeds = [0, 1, 2]", "seeds = [0]"),
                 ('ledger = "docs/data/threshold-study.jsonl"',
                  f'ledger = "{(tmp_path / "ledger.jsonl").as_posix()}"'),
                 ('out = "runs/threshold-study"', f'out = "{(tmp_path / "runs").as_posix()}"'),
                 ("offsets_from_support = [-2, -1, 0, 1, 2]", "offsets_from_support = [0]"),
                 ("also = [40]", "also = [5]")):
        assert a in text, a
        text = text.replace(a, b)
    path = tmp_path / "study.toml"
    path.write_text(text)
    return path


def test_threshold_study_runs_once_resumes_from_its_ledger_and_tabulates(
        bench_script, tmp_path, capsys, monkeypatch):
    mod = _threshold(bench_script)
    cfg = _tiny_threshold_config(tmp_path)
    assert mod.main(["--config", str(cfg), "--languages", "parity"]) == 0
    ledger = mod.read_ledger(tmp_path / "ledger.jsonl")
    # parity: s = 2, lengths {s, 2s, 5} = {2, 4, 5}, one seed, two samplers
    assert sorted(ledger) == sorted(f"parity__L{L}__{s}__s0" for L in (2, 4, 5)
                                    for s in ("near_miss", "covering"))
    row = ledger["parity__L4__covering__s0"]
    assert row["status"] == "done" and row["s"] == 2 and row["coverage"]["uncovered"] == 0
    assert row["coverage"]["sampled"][-1]["level"] == "any"
    assert set(row["baselines"]) == {"paper", "near_miss", "ec_stratified"}
    assert row["solved"] == (row["solved_own"] and all(f["solved"] for f in row["fresh"]))
    # a second call trains nothing: every run is in the ledger
    monkeypatch.setattr(mod, "run_one", lambda *a, **k: pytest.fail("trained again"))
    capsys.readouterr()
    assert mod.main(["--config", str(cfg), "--languages", "parity"]) == 0
    assert "0 runs to do (6 in the ledger)" in capsys.readouterr().out
    assert mod.main(["--config", str(cfg), "--table"]) == 0
    out = capsys.readouterr().out
    assert "| parity | 2 | 2 / 2 | 2 |" in out and "| covering |" in out


def test_a_sampler_whose_tables_do_not_fit_is_a_refused_run_not_a_crash(bench_script,
                                                                        tmp_path):
    """prefix-4-4's near misses would need 58 GiB of tables: both samplers (covering draws
    near misses beside its own strings) refuse, each run is recorded as refused, and the
    study goes on."""
    mod = _threshold(bench_script)
    cfg = _tiny_threshold_config(tmp_path)
    assert mod.main(["--config", str(cfg), "--languages", "prefix-4-4"]) == 0
    ledger = mod.read_ledger(tmp_path / "ledger.jsonl")
    assert ledger and all(r["status"] == "refused" for r in ledger.values())
    assert any("GiB" in r["message"] for r in ledger.values())


def test_l_star_needs_two_of_three_seeds_at_one_length(bench_script):
    mod = bench_script("bench_threshold")
    rows = [{"max_length": L, "solved": ok} for L, ok in
            [(4, True), (4, False), (4, False), (6, True), (6, True), (6, False), (8, True)]]
    assert mod.l_star(rows) == 6
    assert mod.l_star([{"max_length": 4, "solved": False}]) is None


def test_the_summary_sorts_each_finished_language_by_l_star_against_s(bench_script):
    mod = bench_script("bench_threshold")
    study = {"languages": ["a", "b", "c", "d", "e"], "offsets_from_support": [-1, 0],
             "multiples_of_support": [2], "also": [], "seeds": [0, 1, 2],
             "samplers": ["near_miss", "covering"]}

    def runs(lang, s, sampler, solved_at, n_seeds=3):  # solved_at: {L: seeds solved}
        return [{"id": f"{lang}{L}{sampler}{k}", "language": lang, "sampler": sampler, "s": s,
                 "max_length": L, "seed": k, "status": "done",
                 "solved": k < solved_at.get(L, 0), "wall_s": 3600.0, "cpu_s": 1800.0}
                for L in (s - 1, s, 2 * s) for k in range(n_seeds)]

    rows = (runs("a", 3, "near_miss", {3: 2}) + runs("a", 3, "covering", {3: 3})
            + runs("b", 2, "near_miss", {4: 2}) + runs("b", 2, "covering", {})
            + runs("c", 4, "near_miss", {4: 1, 8: 1})  # never: one seed each
            + runs("d", 5, "near_miss", {5: 3}, n_seeds=2)  # unfinished: left out
            + runs("e", 3, "near_miss", {2: 2, 3: 3}))  # solved below s
    text = mod.summary_text({r["id"]: r for r in rows}, study)
    assert "| near_miss | 4 | 1: a | 1: b (+2) | 1: e (−1) | 1: c |" in text
    assert "| covering | 2 | 1: a | 0: – | 0: – | 1: b |" in text
    assert "Covering at s is enough (2 of 3 seeds solved at L = s with the covering sampler) " \
           "for: a." in text
    assert f"{len(rows)} runs finished: {len(rows):.1f} h wall, {len(rows) / 2:.1f} h CPU" \
        in text


def test_the_rules_table_puts_a_length_that_ignores_s_beside_the_rules(bench_script):
    from monoidlab.coverage.length_rules import fit_rules

    mod = bench_script("bench_threshold")
    rows = [{"language": "a", "sampler": "near_miss", "s": 4, "solved_lengths": [4, 40]},
            {"language": "b", "sampler": "near_miss", "s": 2, "solved_lengths": [40]},
            {"language": "h", "sampler": "near_miss", "s": 3, "solved_lengths": [40]}]
    fitted = fit_rules(rows, ["a", "b"], ["s", "2s"], baseline=40)
    text = mod.rules_text(fitted, {"fit_languages": ["a", "b"]})
    assert "| near_miss | L = s | 1 / 2 | 0 / 1 | yes |" in text
    assert "| near_miss | L = 40 (baseline: no s) | 2 / 2 | 1 / 1 | |" in text
    assert ("the chosen rule L = s hits 1 of 3, fewer than L = 40, which ignores s (3 of 3): "
            "the tool recommends 40 where s <= 40") in text
    rows[2]["solved_lengths"] = [3]  # the held-out language now solved at s, not at 40
    fitted = fit_rules(rows, ["a", "b"], ["s", "2s"], baseline=40)
    assert ("L = s hits 2 of 3, at least as many as L = 40 (2 of 3): the tool recommends L = s"
            in mod.rules_text(fitted, {"fit_languages": ["a", "b"]}))
    assert "baseline" not in mod.rules_text(fit_rules(rows, ["a", "b"], ["s", "2s"]),
                                            {"fit_languages": ["a", "b"]})


def _tiny_long_config(tmp_path: Path, schedule: str) -> Path:
    """A pair (p-ours, p-authors) of tiny parity runs; ``schedule``: the [base] lines of steps
    and validation."""
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


def test_long_runs_pause_snapshot_and_continue_the_favoured_recipe(bench_script, tmp_path,
                                                                     capsys):
    mod = bench_script("bench_long")
    cfg = _tiny_long_config(tmp_path, 'steps = 12\neval_every = 4\nval_lengths = "9:10"\n'
                            'val_samples = 4\nearly_stop = 3\ncheckpoint_every = 2')
    assert mod.main(["--config", str(cfg), "--phase", "pairs", "--pair-step", "8"]) == 0
    runs = tmp_path / "runs"
    for name in ("p-ours", "p-authors"):
        run = runs / f"{name}__mlp-ldru__s0"
        assert mod.checkpoint_step(run) == 8 and not (run / "results.json").exists()
        assert sorted(p.name for p in (run / "snapshots").iterdir()) == ["step-4.pt",
                                                                         "step-8.pt"]
        assert set(mod.validations(run)) == {4, 8}
    choice = mod.favoured(runs / "p-ours__mlp-ldru__s0", runs / "p-authors__mlp-ldru__s0", 8)
    assert choice in ("ours", "authors")
    assert mod.main(["--config", str(cfg), "--phase", "long", "--pair-step", "8"]) == 0
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
    wrong_strings = bench_script("bench_run_errors").wrong_strings
    assert sum(rows[-1]["wrong"].values()) == wrong_strings({"evaluation": tested})[0]
    for r in rows:  # errors per level add up to errors per kind
        assert sum(r["wrong_by_level"].values()) == sum(r["wrong"].values())
    assert mod.main(["--config", str(cfg), "--table", "--pair-step", "8"]) == 0
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


def test_long_phase_takes_a_recorded_choice_when_the_pair_folders_are_gone(bench_script,
                                                                            tmp_path, capsys):
    mod = bench_script("bench_long")
    cfg = _tiny_long_config(tmp_path, "steps = 4\neval_every = 0")
    ledger = tmp_path / "pairs.json"
    ledger.write_text(json.dumps({"pairs": {"p": {"ours": 0.5, "authors": 0.75}}}))
    assert mod.main(["--config", str(cfg), "--phase", "long", "--pairs-ledger", str(ledger)]) == 0
    assert "p: continuing authors (recorded in pairs.json" in capsys.readouterr().out
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
    assert mod.main(["--config", str(cfg), "--phase", "long", "--pairs-ledger", str(ledger)]) == 0
    assert "p: continuing authors (recorded in pairs.json" in capsys.readouterr().out
    assert (runs / "p-authors__mlp-ldru__s0" / "results.json").is_file()
    # a side never validated: no choice, nothing runs
    ledger.write_text(json.dumps({"pairs": {"p": {"ours": 0.5, "authors": None}}}))
    assert mod.recorded_choice("p", ledger) is None
    with pytest.raises(SystemExit, match="--only: no pair 'q'"):
        mod.main(["--config", str(cfg), "--phase", "long", "--only", "q"])


def test_long_runs_outlive_their_machine_packed_and_recorded(bench_script, tmp_path, capsys):
    """A run packed mid-way (--save-state) and unpacked on a fresh machine ends exactly where
    the same run left alone ends; a finished row is recorded and the table, and --phase long,
    read it once the folders are gone."""
    mod = bench_script("bench_long")
    schedule = ('steps = 12\neval_every = 4\nval_lengths = "9:10"\nval_samples = 4\n'
                'early_stop = 3\ncheckpoint_every = 2')
    results = {}
    for name in ("alone", "moved"):
        (tmp_path / name).mkdir()
        cfg = _tiny_long_config(tmp_path / name, schedule)
        state, finished = tmp_path / name / "state", tmp_path / name / "finished.json"
        common = ["--config", str(cfg), "--pair-step", "8", "--state-dir", str(state),
                  "--finished-ledger", str(finished), "--pairs-ledger", str(tmp_path / "none")]
        assert mod.main([*common, "--phase", "pairs"]) == 0
        runs = tmp_path / name / "runs"
        if name == "moved":
            assert mod.main([*common, "--save-state"]) == 0
            packs = sorted(p.name for p in state.iterdir())
            assert packs == ["p-authors__mlp-ldru__s0.tar.gz", "p-ours__mlp-ldru__s0.tar.gz"]
            curves = {p.name: mod.curve(p) for p in runs.iterdir()}
            shutil.rmtree(runs)  # the machine goes
            assert mod.main([*common, "--status"]) == 0
            assert "p-ours__mlp-ldru__s0: restored from" in capsys.readouterr().out
            for p in runs.iterdir():
                assert mod.checkpoint_step(p) == 8 and not (p / "snapshots").exists()
                assert mod.curve(p) == curves[p.name]  # the snapshots' points came along
            assert mod.restore_state(runs / "p-ours__mlp-ldru__s0", state) is False  # kept
        assert mod.main([*common, "--phase", "long"]) == 0
        done = [p for p in runs.iterdir() if (p / "results.json").is_file()]
        assert len(done) == 1
        results[name] = (done[0].name, json.loads((done[0] / "results.json").read_text()))
        if name == "moved":
            assert mod.main([*common, "--save-state"]) == 0
            assert "recorded the finished rows" in capsys.readouterr().out
            assert not (state / (done[0].name + ".tar.gz")).exists()  # its row instead
            assert not any(state.iterdir())  # nor the paused side of the decided pair
            assert mod.main([*common, "--table"]) == 0
            before = capsys.readouterr().out
            shutil.rmtree(runs)
            shutil.rmtree(state)
            assert mod.main([*common, "--table"]) == 0
            after = capsys.readouterr().out
            row = before.splitlines()[2]
            assert row.startswith("| p |") and "| 12 |" in row and row in after.splitlines()
            assert mod.main([*common, "--phase", "long"]) == 0
            assert "p: finished (recorded in finished.json" in capsys.readouterr().out
            assert not runs.exists() or not any(runs.iterdir())  # nothing trained again
    (a_id, a), (b_id, b) = results["alone"], results["moved"]
    assert a_id == b_id and a["evaluation"] == b["evaluation"]


def test_a_pack_made_mid_segment_counts_the_time_of_the_part_trained(bench_script, tmp_path):
    """The time of the steps trained since the last segment record, up to the checkpoint, goes
    into the pack as one more record (the sum of each process's last clock reading; lines past
    the checkpoint are work a resumed run redoes); the live run's own file is left alone."""
    import tarfile

    import torch

    mod = bench_script("bench_long")
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


def test_a_segment_resumed_after_a_kill_keeps_the_killed_part_s_time(bench_script, tmp_path):
    """A process killed mid-segment leaves its time only in the log's clocks; the next segment
    records it before training on, so the run's hours count both processes."""
    from monoidlab.training import train
    from monoidlab.training.config import RunConfig

    mod = bench_script("bench_long")
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


def test_a_packed_run_with_a_foreign_file_is_refused(bench_script, tmp_path):
    import io
    import tarfile

    mod = bench_script("bench_long")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("../escape.txt")
        tar.addfile(info, io.BytesIO(b""))
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "r.tar.gz").write_bytes(buf.getvalue())
    with pytest.raises(SystemExit, match=r"r.tar.gz: '../escape.txt' is not a run file"):
        mod.restore_state(tmp_path / "runs" / "r", tmp_path / "state")
    assert not (tmp_path / "runs" / "r").exists()


def _tiny_listops_config(tmp_path: Path) -> Path:
    text = (ROOT / "configs" / "listops-table.toml").read_text()
    for a, b in (("steps = 3000", "steps = 3"), ("per_length = 16", "per_length = 3"),
                 ("baseline_strings = 20000", "baseline_strings = 300"),
                 ('ledger = "docs/data/listops-table.jsonl"',
                  f'ledger = "{(tmp_path / "ledger.jsonl").as_posix()}"'),
                 ('out = "runs/listops-table"', f'out = "{(tmp_path / "runs").as_posix()}"')):
        assert a in text, a
        text = text.replace(a, b)
    path = tmp_path / "listops.toml"
    path.write_text(text)
    return path


def test_listops_table_scores_fixed_cells_resumes_and_tabulates(bench_script, tmp_path, capsys):
    import numpy as np

    from monoidlab.tasks import ListOps, listops_depth

    mod = bench_script("bench_listops")
    cfg = _tiny_listops_config(tmp_path)
    import tomllib

    table = tomllib.loads(cfg.read_text())["table"]
    cells = mod.test_cells(table)
    again = mod.test_cells(table)  # the same strings every time (every model sees them)
    assert [c["name"] for c in cells] == [c["name"] for c in again]
    for c, d in zip(cells, again):
        lo, hi = c["depth"]
        for b, b2 in zip(c["batches"], d["batches"]):
            assert np.array_equal(b.inputs, b2.inputs)
            n = b.inputs.shape[1]
            assert c["bucket"][0] <= n <= c["bucket"][1]
            assert all(lo <= listops_depth(row) <= hi for row in b.inputs)
    # depth <= 3 with <= 5 arguments cannot reach 201 tokens: those cells are left out
    assert "L 201-300, depth 1-3" not in [c["name"] for c in cells]
    assert not ListOps(min_depth=1, max_depth=3).feasible_depths(201)
    counts = mod.token_counts(np.array([[0, 1, 1], [2, 2, 2]]), 4)
    assert counts.tolist() == [[1, 2, 0, 0], [0, 0, 3, 0]]
    assert mod.main(["--config", str(cfg), "--only", "lstm,rir-grc"]) == 0
    ledger = mod.read_ledger(tmp_path / "ledger.jsonl")
    assert sorted(ledger) == ["_baselines", "lstm", "rir-grc"]
    for name in ("lstm", "rir-grc"):
        assert set(ledger[name]["accuracy"]) == {c["name"] for c in cells}
        assert all(0 <= v <= 1 for v in ledger[name]["accuracy"].values())
    for c in cells:  # the best constant on a cell's own strings
        labels = np.concatenate([b.targets[:, 0] for b in c["batches"]])
        assert ledger["_baselines"]["cells"][c["name"]]["constant"] == pytest.approx(
            np.bincount(labels).max() / len(labels))
    before = (tmp_path / "runs" / "lstm" / "results.json").stat().st_mtime_ns
    assert mod.main(["--config", str(cfg), "--only", "lstm"]) == 0  # in the ledger: skipped
    assert (tmp_path / "runs" / "lstm" / "results.json").stat().st_mtime_ns == before
    capsys.readouterr()
    assert mod.main(["--config", str(cfg), "--table"]) == 0
    out = capsys.readouterr().out
    assert "| lstm |" in out and "| rir-grc |" in out and "best constant" in out
    assert "| mlp-ldru |" not in out  # not trained: no row
    with pytest.raises(SystemExit):
        mod.main(["--config", str(cfg), "--only", "no-such-model"])


def test_the_coverage_by_length_table_shows_the_worst_seed_per_level(bench_script):
    mod = bench_script("bench_threshold")

    def row(seed, solved, level2, unseen):
        return {"id": f"p__L5__near_miss__s{seed}", "language": "p", "sampler": "near_miss",
                "max_length": 5, "status": "done", "solved": solved, "s": 4, "coverage": {
                    "sampled": [{"level": 1, "min_count": 50 + seed, "below_k": 0},
                                {"level": 2, "min_count": level2, "below_k": unseen},
                                {"level": "any", "min_count": 40 + seed, "below_k": 0}]}}

    ledger = {str(i): r for i, r in enumerate([row(0, True, 7, 0), row(1, False, 0, 3),
                                               row(2, True, 9, 0)])}
    text = mod.coverage_by_length_text(ledger, {"languages": ["p"], "samplers": ["near_miss"]})
    assert text.splitlines()[-1] == \
        "| p | near_miss | 5 (s+1) | 2 / 3 | 40 (0) | 1: 50 (0) 2: 0 (3) |"


def test_the_threshold_scripts_doctests(bench_script, function_doctests):
    mod = bench_script("bench_threshold")
    assert function_doctests(mod, mod.at_baseline_text, mod.coverage_by_length_text,
                             mod.certificate_text) == (0, 6)


def test_the_depth_exact_study_certifies_every_run_and_plans_3s(bench_script, tmp_path,
                                                                capsys):
    """configs/threshold-exact-snap.toml on a tiny budget: the snapped model trains, every
    ledger row holds its certificate, the grid has 3s, the table shows the certificates, and
    --write-docs would write its own section and rules file (not the plain study's)."""
    import tomllib

    mod = _threshold(bench_script)
    text = (ROOT / "configs" / "threshold-exact-snap.toml").read_text()
    study = tomllib.loads(text)["study"]
    assert study["multiples_of_support"] == [2, 3] and study["section"] != "threshold study"
    assert study["rules_file"] != "monoidlab/data/length-rules.json"
    for a, b in ((STUDY_LANGUAGES, FIT_LANGUAGES),
                 ("steps = 4000", "steps = 12"), ('test_lengths = "41:500"',
                                                  'test_lengths = "41:42"'),
                 ("test_samples = 32", "test_samples = 4"), ("seeds = [0, 1, 2]", "seeds = [0]"),
                 ('ledger = "docs/data/threshold-exact-snap.jsonl"',
                  f'ledger = "{(tmp_path / "ledger.jsonl").as_posix()}"'),
                 ('out = "runs/threshold-exact-snap"', f'out = "{(tmp_path / "runs").as_posix()}"'),
                 ("offsets_from_support = [-2, -1, 0, 1, 2]", "offsets_from_support = [0]"),
                 ("multiples_of_support = [2, 3]", "multiples_of_support = [3]"),
                 ("also = [40]", "also = []"), ('samplers = ["near_miss", "covering"]',
                                               'samplers = ["covering"]')):
        assert a in text, a
        text = text.replace(a, b)
    cfg = tmp_path / "study.toml"
    cfg.write_text(text)
    assert mod.main(["--config", str(cfg), "--languages", "parity"]) == 0
    ledger = mod.read_ledger(tmp_path / "ledger.jsonl")
    assert sorted(ledger) == ["parity__L2__covering__s0", "parity__L6__covering__s0"]
    for row in ledger.values():
        cert = row["certificate"]
        assert cert["verdict"].startswith("certificate of mlp-ldru-snap")
        assert cert["correct"] or cert["length"] >= 1
    capsys.readouterr()
    assert mod.main(["--config", str(cfg), "--table"]) == 0
    assert "### Certificates (correct at every length)" in capsys.readouterr().out


def test_the_baseline_length_table_sorts_by_s_and_counts_seeds_per_sampler(bench_script):
    mod = bench_script("bench_threshold")
    study = {"languages": ["big", "small", "gone"], "samplers": ["near_miss", "covering"]}

    def r(lang, sampler, seed, ok, status="done", L=40):
        return {"id": f"{lang}{sampler}{seed}{L}", "language": lang, "sampler": sampler,
                "max_length": L, "seed": seed, "status": status, "solved": ok}

    rows = [r("big", "near_miss", 0, False), r("big", "near_miss", 1, True),
            r("small", "near_miss", 0, True), r("small", "covering", 0, True),
            r("small", "covering", 1, True, L=5),  # another length: not counted
            r("gone", "near_miss", 0, None, "refused")]
    infos = {"big": {"s_identity": 12, "monoid": 30}, "small": {"s_identity": 2, "monoid": 3},
             "gone": {"s_identity": 8, "monoid": 341}}
    lines = mod.at_baseline_text({x["id"]: x for x in rows}, study, infos).splitlines()
    assert lines[2:] == ["| small | 2 | 3 | 1 / 1 | 1 / 1 |", "| gone | 8 | 341 | refused | – |",
                         "| big | 12 | 30 | 1 / 2 | – |"]


def test_the_long_scripts_doctests(bench_script, function_doctests):
    mod = bench_script("bench_long")
    assert function_doctests(mod, mod.recorded_choice, mod.errors_of, mod.tested_of,
                            mod.prediction_of) == (0, 9)


def test_the_second_random_language_round_holds_out_only_fresh_languages(bench_script):
    """Round 2 develops on the first round's whole set and its own development half; a language
    of its draw equal to a first-round one (the same minimal machine) joins neither half."""
    import tomllib

    b = bench_script("bench_random_languages")
    meta = tomllib.loads((b.ROOT / "configs" / "random-languages-2.toml").read_text())["benchmark"]
    split = b.read_split(meta=meta)
    first = b.read_split(b.ROOT / "bench" / "random-languages")
    assert set(first["dev"] + first["held_out"]) <= set(split["dev"])
    assert not set(split["dev"]) & set(split["held_out"])
    old = {b._machine(b.spec_path(n, meta)) for n in first["dev"] + first["held_out"]}
    assert all(b._machine(b.spec_path(n, meta)) not in old for n in split["held_out"])
    assert len(split["held_out"]) == 18 and len(split["dev"]) == 36 + 18  # 36 fresh, at the draw
    # the committed set is the config's draw: the first round excluded, the wider stack kind
    import monoidlab as ml
    from monoidlab.algebra.random_languages import draw_benchmark

    excluded = [ml.load_language(str(b.spec_path(n, round1_meta := tomllib.loads(
        (b.ROOT / "configs" / "random-languages.toml").read_text())["benchmark"])))
        for n in first["dev"] + first["held_out"]]
    drawn = draw_benchmark(meta["n"], meta["seed"], max_monoid=meta["max_monoid"],
                           exclude=excluded, kinds=meta["kinds"])
    names = sorted(split["held_out"] + split["dev"][36:])
    assert [f"rl2-{i:02d}-{d.automaton.name}" for i, d in enumerate(drawn)] == names
    assert round1_meta["n"] == 36
    round1 = tomllib.loads((b.ROOT / "configs" / "random-languages.toml").read_text())
    assert b.read_split(meta=round1["benchmark"]) == first  # the first round reads as before
