"""Long runs of the five unsolved tasks (configs/ldru-long-cpu.toml), across sessions.

    monoidlab study long --phase pairs [--workers 2] [--only PAIRS] [--pair-step N]
    monoidlab study long --phase long [--workers 2] [--only PAIRS]
    monoidlab study long --action status
    monoidlab study long --table | --write-docs
    monoidlab study long --action save-state     # before the machine goes: then commit

The config is a sweep file: every condition has two recipes (``NAME-ours``, ``NAME-authors``).
``--phase pairs`` trains both recipes of every condition to step 20000 (``--pair-step``);
``--phase long`` continues, per condition, the recipe its step-20000 validation favours (the
rule in the config's comments: :func:`favoured`) to the end, tests it strictly and re-checks
the tested weights on two fresh test sets (seeds 1000, 1001; ``fresh.json``). Every run pauses at
each validation step (``eval_every``) and keeps a copy of its checkpoint there
(``snapshots/step-N.pt``: the learning curves are drawn from them) and one line of wall and CPU
time per segment (``segments.jsonl``; the part trained by a process killed mid-segment, or
packed before a session ended, gets its own line from the trainer's logged clocks:
:func:`interrupted_segment`). Everything is resumable: rerun the same command after a kill or
in a later session (a kill loses at most ``checkpoint_every`` steps). ``--action status`` prints
where every run stands. One torch thread per run, ``--workers`` runs side by side.

The study keeps two ledgers of its own, in the formats they had before the runner (JSON files,
not the runner's JSON lines: every run's ``run`` returns None, so the runner records nothing):
``docs/data/ldru-long-pairs.json``, the pairs' validations at step 20000 (a pair whose two run
folders are both absent takes its choice from there, by the same rule, and its favoured recipe
starts from step 0), and ``docs/data/ldru-long-finished.json``, the prediction-table rows of the
finished runs. ``--only`` restricts a phase or an action to some pairs. Paths resolve against
the study's repository (the folder above ``configs/``).

A session's machine does not outlive it, and the run folders (``runs/``) go with it.
``--action save-state`` records every finished row of the prediction table in the finished
ledger and packs every started, unfinished run (its checkpoint, best weights, metrics, segments
and curve points: :data:`CARRIED`) into ``docs/data/long-state/RUN.tar.gz``; commit both. Every
later command unpacks a pack into an absent run folder first, so the next session resumes with
the same command; a pair recorded as finished is never trained again, and the table reads its
row from the ledger.

The table (``--table``, ``--write-docs``): for the run each condition continued, its learning
curve (the strict test errors of every snapshot, per kind and per tree level of the string:
``curve.jsonl`` in the run folder, computed once per snapshot) and the prediction table
(covered or not at the training lengths, by the tool's support length; solved or not, fresh
sets included; whether the prediction holds; for a covered run that fails,
:func:`monoidlab.training.diagnosis.diagnose` on its tested weights, cached in
``diagnosis.json``). ``--write-docs`` writes the section ``long runs`` of docs/results.md, the
figure docs/figures/long-curves.png and the finished rows into the finished ledger.

>>> pair_of("dyck-6-identity-ours__mlp-ldru__s0"), pair_of("dyck-12-identity-L64-authors")
('dyck-6-identity', 'dyck-12-identity-L64')
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

from monoidlab.errors import CheckpointError, ConfigError
from monoidlab.studies._long_runs import (  # noqa: F401  (the study's names, kept here)
    CARRIED,
    END,
    FIGURE,
    FINISHED_LEDGER,
    FRESH_SEEDS,
    PAIR_STEP,
    PAIRS_LEDGER,
    RECIPES,
    RECORDED,
    STATE_DIR,
    checkpoint_step,
    choice_of,
    condition_of,
    continued_run,
    favoured,
    finished_text,
    pair_of,
    pairs_of,
    record_finished,
    recorded_choice,
    recorded_finished,
    recorded_start,
    selection_key,
    validations,
)
from monoidlab.studies._long_tables import (  # noqa: F401  (the study's names, kept here)
    curve_text,
    draw_curves,
    prediction_table,
    section_text,
    wrong_text,
)
from monoidlab.studies.runner import Study, StudyConfig, fresh_checks, wrong_strings

#: the study's own files, relative to its repository

# ------------------------------------------------------------------------------ state packs
def save_state(run: Path, state_dir: Path) -> Path | None:
    """Pack a started, unfinished run into ``state_dir/<run id>.tar.gz`` (the files of CARRIED;
    every snapshot's curve point is computed first, so the snapshots stay behind) for a later
    session on a fresh machine (:func:`restore_state`). A finished run's pack is removed: its
    row lives in the finished ledger. None when nothing was packed.

    The time of a segment still training is not in segments.jsonl yet: the pack's copy gets
    one more record for the part of it up to the checkpoint (:func:`interrupted_segment`), so
    a run resumed from the pack counts that time too."""
    import io
    import tarfile

    from monoidlab._util import atomic_write_bytes

    pack = state_dir / f"{run.name}.tar.gz"
    if (run / "results.json").is_file():
        pack.unlink(missing_ok=True)
        return None
    if not (run / "checkpoint.pt").is_file():
        return None
    curve(run)
    # the pack's copy of segments.jsonl gains the part in progress; the live run still
    # appends to its own
    open_part = interrupted_segment(run)
    segments = "".join(json.dumps(x, ensure_ascii=True) + "\n" for x in
                       segments_of(run) + ([open_part] if open_part is not None else []))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name in CARRIED:
            if name != "segments.jsonl" and (run / name).is_file():
                tar.add(run / name, arcname=name)
        if segments:
            info = tarfile.TarInfo("segments.jsonl")
            info.size, info.mtime = len(segments.encode()), int(time.time())
            tar.addfile(info, io.BytesIO(segments.encode()))
    state_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(pack, buf.getvalue())
    return pack


def restore_state(run: Path, state_dir: Path) -> bool:
    """Unpack ``state_dir/<run id>.tar.gz`` into the run folder when that folder does not
    exist (an existing folder is never overwritten); True when unpacked. A pack holding any
    other file than those of CARRIED is refused (ConfigError) and nothing is unpacked."""
    import tarfile

    pack = state_dir / f"{run.name}.tar.gz"
    if run.exists() or not pack.is_file():
        return False
    tmp = run.with_name(run.name + ".restoring")
    shutil.rmtree(tmp, ignore_errors=True)
    with tarfile.open(pack) as tar:
        odd = [n for n in tar.getnames() if n not in CARRIED]
        if odd:
            raise ConfigError(f"{pack}: {odd[0]!r} is not a run file ({', '.join(CARRIED)})")
        tar.extractall(tmp, filter="data")
    tmp.rename(run)
    return True


# ------------------------------------------------------------------------------ training
def train_until(run_id: str, config: Any, out: Path, until: int) -> dict:
    """Train one run up to global step ``until`` (its end when ``until`` >= its steps), pausing
    and snapshotting at every validation step; at the end, the fresh-set re-check."""
    import torch

    from monoidlab.training import train
    from monoidlab.training.config import RunConfig
    from monoidlab.training.parse import config_from_dict

    torch.set_num_threads(1)
    cfg = config if isinstance(config, RunConfig) else config_from_dict(config, run_id)
    run = out / run_id
    total = cfg.steps * (1 + cfg.restarts)
    every = cfg.eval_every or total
    targets = [t for t in range(every, total + 1, every) if t <= until]
    if until >= total and (not targets or targets[-1] != total):
        targets.append(total)
    status: dict[str, Any] = {"id": run_id}
    for target in targets:
        if (run / "results.json").is_file():
            break  # finished (maybe stopped early at a validation)
        if checkpoint_step(run) >= target and target < total:
            continue
        part = interrupted_segment(run)  # trained by a process killed before its segment ended
        if part is not None:
            with open(run / "segments.jsonl", "a") as fh:
                fh.write(json.dumps(part, ensure_ascii=True) + "\n")
        t0, c0 = time.time(), time.process_time()
        has = (run / "checkpoint.pt").is_file()
        res = train(cfg, run, resume=has, overwrite=not has, progress=False,
                    stop_at=target if target < total else None)
        seg = {"target": target, "step": res["steps"], "wall_s": round(time.time() - t0, 1),
               "cpu_s": round(time.process_time() - c0, 1), "paused": bool(res.get("paused"))}
        with open(run / "segments.jsonl", "a") as fh:
            fh.write(json.dumps(seg, ensure_ascii=True) + "\n")
        if res.get("paused"):
            (run / "snapshots").mkdir(exist_ok=True)
            shutil.copy(run / "checkpoint.pt", run / "snapshots" / f"step-{res['steps']}.pt")
    if (run / "results.json").is_file() and not (run / "fresh.json").is_file():
        status["fresh"] = fresh_check(run)
    status["step"] = checkpoint_step(run)
    return status


def fresh_check(run: Path, seeds: tuple[int, ...] = FRESH_SEEDS) -> dict:
    """The tested weights on the own test set and on fresh ones (:func:`fresh_checks`): wrong
    and scored strings and the verdict per set, by seed (``own``: the run's own), in
    fresh.json."""
    from monoidlab._util import atomic_write_text

    results = json.loads((run / "results.json").read_text())
    wrong, scored = wrong_strings(results)
    data = {"own": {"wrong": wrong, "scored": scored, "solved": bool(results["solved"])}}
    for f in fresh_checks(run, list(seeds)):
        data[str(f["seed"])] = {"wrong": f["wrong"], "scored": f["scored"],
                                "solved": bool(f["solved"])}
    atomic_write_text(run / "fresh.json", json.dumps(data, indent=2, ensure_ascii=True))
    return data


def segments_of(run: Path) -> list[dict]:
    """The records of a run's segments.jsonl (none without one)."""
    path = run / "segments.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.is_file() else []


def interrupted_segment(run: Path) -> dict | None:
    """The record of the part of a segment trained past the last one in segments.jsonl, up to
    the checkpoint (the steps a resumed run keeps), from the trainer's ``elapsed_s`` and
    ``cpu_s`` log fields; each process that trained it restarts those clocks, so the part is
    the sum of each process's last reading. ``cpu_s`` is None when a process logged no CPU
    time. None when the checkpoint is not past the last record.

    >>> interrupted_segment(Path("no-such-run")) is None
    True
    """
    from monoidlab.training.run_folder import read_metrics

    segs = segments_of(run)
    done, ckpt = max((x["step"] for x in segs), default=0), checkpoint_step(run)
    if ckpt <= done or not (run / "metrics.jsonl").is_file():
        return None
    lines = [m for m in read_metrics(run / "metrics.jsonl")
             if "elapsed_s" in m and done < m["step"] <= ckpt]
    last: list[dict] = []  # each process's last line
    for m in lines:
        if last and m["elapsed_s"] >= last[-1]["elapsed_s"]:
            last[-1] = m
        else:
            last.append(m)
    if not last:
        return None
    cpu = (round(sum(m["cpu_s"] for m in last), 1) if all("cpu_s" in m for m in last)
           else None)
    return {"target": None, "step": ckpt, "wall_s": round(sum(m["elapsed_s"] for m in last), 1),
            "cpu_s": cpu, "interrupted": True}


def hours(run: Path) -> tuple[float, float | str]:
    """(wall, CPU) hours a run has trained so far, from its segments.jsonl and the part of a
    segment trained since (:func:`interrupted_segment`); the CPU hours are a lower bound
    ``">= x"`` when a record's CPU time is not known (a part logged by a trainer that did not
    record it)."""
    segs = segments_of(run)
    part = interrupted_segment(run)
    segs += [part] if part is not None else []
    cpu = round(sum(x["cpu_s"] or 0 for x in segs) / 3600, 2)
    return (round(sum(x["wall_s"] for x in segs) / 3600, 2),
            f">= {cpu}" if any(x["cpu_s"] is None for x in segs) else cpu)


def status_rows(runs: list[dict], out: Path) -> list[dict]:
    """Where every run stands: step, last validation, verdict, hours."""
    rows = []
    for r in runs:
        run = out / r["id"]
        vals = validations(run)
        last = vals[max(vals)] if vals else None
        res = json.loads((run / "results.json").read_text()) if (
            run / "results.json").is_file() else None
        wall_h, cpu_h = hours(run)
        rows.append({"id": r["id"], "step": checkpoint_step(run),
                     "last validation": (f"{max(vals)}: min {last['val_min_accuracy']:.3f}"
                                         if last else "-"),
                     "solved": "-" if res is None else "yes" if res["solved"] else "no",
                     "wall h": wall_h, "cpu h": cpu_h})
    return rows


# ------------------------------------------------------------------------------ curves
def snapshot_step(path: Path) -> int:
    """``snapshots/step-20000.pt`` -> 20000."""
    return int(path.stem.split("-", 1)[1])


def curve(run: Path) -> list[dict]:
    """The learning curve of one run: for every snapshot, the strict test errors of its weights
    on the run's own test set (lengths, strings per length, seed and kinds of its final
    evaluation), per kind and per tree level of the string (``depth_of(L)``); then the tested
    weights' row from results.json (``"tested": true``). Cached one row per snapshot in
    ``curve.jsonl``. No choice reads these rows: the weights are picked by validation."""
    from monoidlab._util import inference
    from monoidlab.evaluation.result import Evaluation
    from monoidlab.training import evaluate_kinds, load_checkpoint

    cache = run / "curve.jsonl"
    rows = ({r["step"]: r for r in map(json.loads, cache.read_text().splitlines())}
            if cache.is_file() else {})
    snaps = sorted((run / "snapshots").glob("step-*.pt"), key=snapshot_step) if (
        run / "snapshots").is_dir() else []
    for snap in snaps:
        step = snapshot_step(snap)
        if step in rows:
            continue
        model, cfg, problem, _ = load_checkpoint(snap)
        with inference():
            ev = evaluate_kinds(model, problem, cfg.test_lengths, cfg.test_samples, cfg.seed,
                                cfg.eval_kinds, cfg.solved_threshold, progress=False)
        rows[step] = {"step": step, **errors_of(ev)}
        with open(cache, "a") as fh:
            fh.write(json.dumps(rows[step], ensure_ascii=True) + "\n")
    out = [rows[k] for k in sorted(rows)]
    if (run / "results.json").is_file():
        res = json.loads((run / "results.json").read_text())
        tested = {"step": int(res.get("best_step") or res.get("steps") or 0), "tested": True,
                  **errors_of(Evaluation.from_dict(res["evaluation"]))}
        out = [r for r in out if r["step"] != tested["step"]] + [tested]
        out.sort(key=lambda r: r["step"])
    return out


def errors_of(ev: Any) -> dict:
    """Wrong strings of an Evaluation per kind (with the scored count, as
    :func:`~monoidlab.studies.runner.wrong_strings` counts them) and per tree level.

    >>> from monoidlab.evaluation.result import Evaluation
    >>> ev = Evaluation("x", ("near_miss",), 0.99, 4, accuracy={"near_miss": {41: 0.75, 300: 1.0}})
    >>> e = errors_of(ev)
    >>> e["wrong"], e["scored"], e["wrong_by_level"], e["solved"]
    ({'near_miss': 1}, {'near_miss': 8}, {'6': 1, '9': 0}, False)
    """
    from monoidlab.training.diagnosis import depth_of

    n = int(ev.n_per_length)
    wrong: dict[str, int] = {}
    scored: dict[str, int] = {}
    by_level: dict[str, int] = {}
    for kind, per in ev.accuracy.items():
        wrong[kind], scored[kind] = wrong_strings(
            {"evaluation": {"n_per_length": n, "accuracy": {kind: per}}})
        for L, a in per.items():
            d = str(depth_of(int(L)))
            by_level[d] = by_level.get(d, 0) + round((1 - a) * n)
    return {"wrong": wrong, "scored": scored,
            "wrong_by_level": dict(sorted(by_level.items(), key=lambda kv: int(kv[0]))),
            "solved": bool(ev.solved)}


def tested_of(points: list[dict]) -> dict:
    """The curve's row of the tested weights (the best validated ones, often not the last
    snapshot), which the prediction table reports.

    >>> tested_of([{"step": 10}, {"step": 20, "tested": True}, {"step": 30}])
    {'step': 20, 'tested': True}
    """
    rows = [c for c in points if c.get("tested")]
    if len(rows) != 1:
        raise CheckpointError(f"a finished run's curve has one tested row, got {len(rows)}")
    return rows[0]


# ------------------------------------------------------------------------------ baselines
def baseline_wrong(ev: Any) -> dict:
    """Wrong strings per kind of the trivial baselines (majority class, count-only) on the
    lengths an Evaluation scored, counted as :func:`errors_of` counts the model's; a kind is
    None where a baseline does not apply at some length.

    >>> from monoidlab.evaluation.result import Evaluation
    >>> ev = Evaluation("x", ("near_miss",), 0.99, 4, accuracy={"near_miss": {41: 1.0, 42: 1.0}},
    ...                 baselines={"majority": {"near_miss": {41: 0.5, 42: 0.75}},
    ...                            "count_only": {"near_miss": {41: 0.75, 42: None}}})
    >>> baseline_wrong(ev)
    {'majority': {'near_miss': 3}, 'count_only': {'near_miss': None}}
    """
    n = int(ev.n_per_length)
    out: dict[str, dict[str, int | None]] = {}
    for name in ("majority", "count_only"):
        per_kind = ev.baselines.get(name, {})
        out[name] = {}
        for kind, scored in ev.accuracy.items():
            b = per_kind.get(kind, {})
            vals = [b.get(L) for L in scored]
            out[name][kind] = (None if any(v is None for v in vals)
                               else sum(round((1 - v) * n) for v in vals))
    return out


def trivial_wrong(cfg: Any, run: Path | None = None) -> dict:
    """:func:`baseline_wrong` on a condition's own test set. The strings depend on the
    language, lengths, strings per length, seed and kinds alone, so an untrained model of the
    config draws the same set (only the baselines are read, never its answers); a finished
    run's results.json already holds them. Cached in ``run/baselines.json``."""
    from monoidlab.evaluation.result import Evaluation

    if run is not None and (run / "results.json").is_file():
        res = json.loads((run / "results.json").read_text())
        return baseline_wrong(Evaluation.from_dict(res["evaluation"]))
    cache = run / "baselines.json" if run is not None else None
    if cache is not None and cache.is_file():
        return dict(json.loads(cache.read_text()))
    import torch

    from monoidlab._util import atomic_write_text, inference
    from monoidlab.training import evaluate_kinds
    from monoidlab.training.loop import build_for
    from monoidlab.training.problems import make_problem

    problem = make_problem(cfg)
    with torch.random.fork_rng():  # the caller's random state stays as it was
        torch.manual_seed(cfg.seed)
        model = build_for(cfg, problem)
    with inference():
        ev = evaluate_kinds(model, problem, cfg.test_lengths, cfg.test_samples, cfg.seed,
                            cfg.eval_kinds, cfg.solved_threshold, progress=False)
    out = baseline_wrong(ev)
    if cache is not None and run is not None and run.is_dir():
        atomic_write_text(cache, json.dumps(out, ensure_ascii=True))
    return out


# ------------------------------------------------------------------------------ the prediction
def prediction_of(covered: bool, solved: bool) -> str:
    """The prediction's verdict on one finished condition.

    >>> prediction_of(True, False), prediction_of(False, True)
    ('not confirmed: covered, not solved', 'REFUTED: uncovered, solved')
    """
    if covered:
        return "holds" if solved else "not confirmed: covered, not solved"
    return "REFUTED: uncovered, solved" if solved else "holds"


_SUPPORT: dict[tuple, int | None] = {}


def support_of(cfg: Any) -> tuple[int | None, int]:
    """(the tool's support length of a run's language at its padding for its test lengths,
    the longest training length): covered when the first is at most the second. The support
    length is computed once per language, lengths and padding in a process."""
    import monoidlab as ml
    from monoidlab.training.problems import make_problem

    train_max = int(max(cfg.train_lengths.values()))
    lengths = [int(x) for x in cfg.test_lengths.values()]
    key = (cfg.language, cfg.task, cfg.within, tuple(lengths), str(cfg.padding))
    if key not in _SUPPORT:
        r = ml.min_training_length(make_problem(cfg).language, lengths, within="auto",
                                   padding=cfg.padding)
        _SUPPORT[key] = r.support_length
    return _SUPPORT[key], train_max


def diagnosis_of(run: Path) -> dict:
    """:func:`monoidlab.training.diagnosis.diagnose` on the tested weights, with the run's
    sampled training counts; cached in diagnosis.json."""
    cache = run / "diagnosis.json"
    if cache.is_file():
        return dict(json.loads(cache.read_text()))
    from monoidlab._util import atomic_write_text, inference
    from monoidlab.evaluation.result import Evaluation
    from monoidlab.training import load_checkpoint
    from monoidlab.training.data_coverage import sampled_counts
    from monoidlab.training.diagnosis import diagnose

    model, cfg, problem, _ = load_checkpoint(run)
    ev = Evaluation.from_dict(json.loads((run / "results.json").read_text())["evaluation"])
    with inference():
        d = diagnose(model, cfg, problem, ev, seed=cfg.seed,
                     sampled=sampled_counts(cfg, problem)[0])
    data = {**d.as_dict(), "text": d.text()}
    atomic_write_text(cache, json.dumps(data, indent=1, default=str, ensure_ascii=True))
    return data


def prediction_row(pair: str, run: dict | None, members: dict, out: Path,
                   ledger: Path, pair_step: int, finished: Path | None = None) -> dict:
    """One row of the prediction table; a condition without a run folder whose finished row
    was recorded in ``finished`` takes it from there."""
    cfg = next(iter(members.values()))["config"]
    support, train_max = support_of(cfg)
    covered = support is not None and support <= train_max
    row: dict[str, Any] = {
        "condition": pair, "padding": str(cfg.padding), "train": f"1..{train_max}",
        "support": support, "covered": covered, "recipe": "-", "steps": 0, "solved": None,
        "own": "-", "fresh": "-", "wall_h": 0.0, "cpu_h": 0.0, "prediction": "not run yet",
        "diagnosis": None, "curve": [], "baselines": None}
    done = recorded_finished(pair, finished) if finished is not None and run is None else None
    if done is not None:
        row.update({k: done.get(k) for k in RECORDED})
        if row["baselines"] is None:  # recorded before baselines were
            row["baselines"] = trivial_wrong(cfg)
        row["prediction"] = prediction_of(covered, row["solved"])
        row["diagnosis"] = done["diagnosis"] if covered and not row["solved"] else None
        return row
    if run is None:
        if set(members) == {"ours", "authors"}:
            choice, source = choice_of(pair, members, out, ledger, pair_step)
            row["recipe"] = (f"({choice}: {source})" if choice else
                             f"(undecided: run `--phase pairs --only {pair}` first)")
        return row
    path = out / run["id"]
    row["recipe"] = condition_of(run["id"])[len(pair) + 1:] or "-"
    row["steps"] = checkpoint_step(path)
    row["wall_h"], row["cpu_h"] = hours(path)
    row["curve"] = curve(path)
    row["baselines"] = trivial_wrong(cfg, path)
    if not (path / "results.json").is_file():
        row["prediction"] = f"running (step {row['steps']})"
        return row
    tested = tested_of(row["curve"])
    row["own"] = f"{sum(tested['wrong'].values())} of {sum(tested['scored'].values())}"
    fresh = (json.loads((path / "fresh.json").read_text()) if (path / "fresh.json").is_file()
             else {})
    fresh_sets = [v for k, v in fresh.items() if k != "own"]
    row["fresh"] = ", ".join(f"{v['wrong']} of {v['scored']}" for v in fresh_sets) or "-"
    row["solved"] = bool(tested["solved"]) and bool(fresh_sets) and all(
        v["solved"] for v in fresh_sets)
    row["prediction"] = prediction_of(covered, row["solved"])
    if covered and not row["solved"]:
        row["diagnosis"] = diagnosis_of(path)
    return row


# ------------------------------------------------------------------------------ the study
def _read(path: Path, data: dict) -> tuple[str, str]:
    """The config is the sweep file itself; the runner's ledger is never written (the study
    keeps its own two, see the module docstring), so it names a file in the run folder."""
    sweep = data.get("sweep")
    if not isinstance(sweep, dict) or not isinstance(data.get("conditions"), dict):
        raise ConfigError(f"{path}: the long study's config is a sweep file with [sweep] and "
                          "[conditions.NAME-ours] / [conditions.NAME-authors] tables")
    out = sweep.get("out", f"runs/{path.stem}")
    return f"{out}/ledger.jsonl", out


def _paths(config: StudyConfig) -> tuple[Path, Path, Path]:
    """(pairs ledger, finished ledger, state packs) of the study's repository."""
    return (config.resolve(PAIRS_LEDGER), config.resolve(FINISHED_LEDGER),
            config.resolve(STATE_DIR))


def _step(pair_step: str | int | None) -> int:
    try:
        step = int(pair_step) if pair_step not in (None, "") else PAIR_STEP
    except ValueError:
        raise ConfigError(f"--pair-step: a step, got {pair_step!r}") from None
    if step < 1:
        raise ConfigError(f"--pair-step: a positive step, got {step}")
    return step


def study_runs(config: StudyConfig, only: str | None = None) -> list[dict]:
    """The sweep's runs (``only``: a comma list of pairs, each of which must exist)."""
    from monoidlab.training.sweep import load_sweep

    runs = load_sweep(config.path)["runs"]
    if only:
        wanted = [x.strip() for x in only.split(",") if x.strip()]
        known = sorted({pair_of(r["id"]) for r in runs})
        unknown = [w for w in wanted if w not in known]
        if unknown:
            raise ConfigError(f"--only: no pair {unknown[0]!r} in {config.path.name}; its "
                              f"pairs: {', '.join(known)}")
        runs = [r for r in runs if pair_of(r["id"]) in wanted]
    return runs


def restore_all(config: StudyConfig, runs: list[dict], say: Any = print) -> None:
    """Unpack every pack of the state folder into its absent run folder."""
    state = _paths(config)[2]
    for r in runs:
        if restore_state(config.out / r["id"], state):
            say(f"{r['id']}: restored from {state / (r['id'] + '.tar.gz')}")


def _plan(config: StudyConfig, ledger: dict, phase: str = "", only: str = "",
          pair_step: str = "") -> list[dict]:
    """The runs of a phase: ``pairs``, both recipes of every condition to the pair step;
    ``long``, the favoured recipe of each to the end. A pair recorded as finished whose run
    folders are absent is left out."""
    if phase not in ("pairs", "long"):
        raise ConfigError("study long: --phase pairs (both recipes of every condition to the "
                          "pair step) or --phase long (the favoured recipe of each to the end); "
                          f"got {phase!r} (--action status: where every run stands)")
    step = _step(pair_step)
    runs = study_runs(config, only)
    out = config.out
    out.mkdir(parents=True, exist_ok=True)
    restore_all(config, runs)
    pairs_ledger, finished, _ = _paths(config)
    jobs: list[dict] = []

    def job(r: dict, until: int) -> dict:
        return {"id": r["id"], "config": r["config"], "until": until}

    for pair, members in pairs_of(runs).items():
        if (recorded_finished(pair, finished) is not None
                and not any((out / r["id"]).exists() for r in members.values())):
            print(f"{pair}: finished (recorded in {finished.name}; run folders absent)")
            continue
        if phase == "pairs":
            jobs += [job(r, step) for r in members.values()]
        elif set(members) != {"ours", "authors"}:
            jobs += [job(r, END) for r in members.values()]
        else:
            choice, source = choice_of(pair, members, out, pairs_ledger, step)
            if choice is None:
                print(f"{pair}: not both validated at step {step} yet (run --phase pairs)")
                continue
            print(f"{pair}: continuing {choice} ({source})")
            jobs.append(job(members[choice], END))
    return jobs


def run_one(run: dict, config: StudyConfig) -> None:
    """Train one run to its phase's step (the runner records nothing: the study's ledgers are
    written by --write-docs and --action save-state)."""
    print(json.dumps(train_until(run["id"], run["config"], config.out, run["until"]),
                     ensure_ascii=False))
    return None


def table_rows(config: StudyConfig, runs: list[dict] | None = None,
               pair_step: int = PAIR_STEP) -> list[dict]:
    """One prediction-table row per condition (the state packs unpacked first)."""
    runs = study_runs(config) if runs is None else runs
    restore_all(config, runs)
    pairs_ledger, finished, _ = _paths(config)
    return [prediction_row(pair, continued_run(members, config.out, pair_step, pairs_ledger),
                           members, config.out, pairs_ledger, pair_step, finished)
            for pair, members in pairs_of(runs).items()]


def _sections(config: StudyConfig, ledger: dict) -> dict[str, str]:
    return {"long runs": section_text(table_rows(config), config.path.name)}


def _files(config: StudyConfig, ledger: dict) -> dict[Path, str]:
    """With --write-docs: the finished rows into the finished ledger (when any changed) and
    the figure (a PNG, drawn here: the runner writes text files only)."""
    rows = table_rows(config)
    if any(r["curve"] for r in rows):
        draw_curves(rows, config.resolve(FIGURE))
    finished = _paths(config)[1]
    text = finished_text(rows, finished)
    return {} if text is None else {finished: text}


def status(config: StudyConfig, phase: str = "", only: str = "", pair_step: str = "") -> str:
    """The action ``status``: where every run stands (step, last validation, verdict, hours)."""
    from monoidlab._util import format_table

    runs = study_runs(config, only)
    lines: list[str] = []
    restore_all(config, runs, lines.append)
    rows = status_rows(runs, config.out)
    return "\n".join([*lines, format_table(rows, list(rows[0])) if rows else "(no runs)"])


def save_state_action(config: StudyConfig, phase: str = "", only: str = "",
                      pair_step: str = "") -> str:
    """The action ``save-state``: record the finished rows in the finished ledger and pack every
    started, unfinished run (the paused side of a decided pair is dropped), to commit before a
    session's machine goes."""
    step = _step(pair_step)
    runs = study_runs(config, only)
    lines: list[str] = []
    restore_all(config, runs, lines.append)
    pairs_ledger, finished, state = _paths(config)
    rows = table_rows(config, runs, step)
    if record_finished(rows, finished):
        lines.append(f"recorded the finished rows in {finished}")
    for members in pairs_of(runs).values():
        kept = continued_run(members, config.out, step, pairs_ledger)
        for r in members.values():
            if kept is not None and r is not kept:  # the paused side of a decided pair
                (state / f"{r['id']}.tar.gz").unlink(missing_ok=True)
                continue
            pack = save_state(config.out / r["id"], state)
            if pack is not None:
                lines.append(f"{r['id']}: packed at step {checkpoint_step(config.out / r['id'])} "
                             f"into {pack} ({pack.stat().st_size // 1024} KiB)")
    lines.append(prediction_table(rows))
    return "\n".join(lines)


STUDY = Study(name="long", plan=_plan, run=run_one, sections=_sections, read=_read,
              files=_files, default_config="ldru-long-cpu.toml",
              options=("phase", "only", "pair_step"),
              actions={"status": status, "save-state": save_state_action},
              summary="the five unsolved tasks at 100,000 steps: pairs, long runs, predictions")
