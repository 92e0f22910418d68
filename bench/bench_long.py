"""Long runs of the five unsolved tasks (configs/ldru-long-cpu.toml), across sessions.

Usage: python bench/bench_long.py --phase pairs [--workers 2] [--config FILE]
       python bench/bench_long.py --phase long [--workers 2]
       python bench/bench_long.py --status

``--phase pairs`` trains both recipes of every condition (``NAME-ours``, ``NAME-authors``) to
step 20000; ``--phase long`` continues, per condition, the recipe its step-20000 validation
favours (the rule in the config's comments: :func:`favoured`) to the end, tests it strictly and
re-checks the tested weights on two fresh test sets (seeds 1000, 1001; ``fresh.json``). Every
run pauses at each validation step (``eval_every``) and keeps a copy of its checkpoint there
(``snapshots/step-N.pt``: the learning curves are drawn from them) and one line of wall and CPU
time per segment (``segments.jsonl``). Everything is resumable: rerun the same command after a
kill or in a later session (a kill loses at most ``checkpoint_every`` steps). ``--status``
prints where every run stands. One torch thread per run, ``--workers`` runs side by side.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "ldru-long-cpu.toml"
PAIR_STEP = 20000
FRESH_SEEDS = (1000, 1001)
RECIPES = ("-ours", "-authors")


def condition_of(run_id: str) -> str:
    """``dyck-6-identity-ours__mlp-ldru__s0`` -> ``dyck-6-identity-ours``."""
    return run_id.split("__")[0]


def pair_of(run_id: str) -> str:
    """The condition a run's recipe belongs to: ``dyck-6-identity``."""
    name = condition_of(run_id)
    for suffix in RECIPES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def checkpoint_step(run: Path) -> int:
    """The step of a run's checkpoint (0 without one)."""
    import torch

    ckpt = run / "checkpoint.pt"
    if not ckpt.is_file():
        return 0
    return int(torch.load(ckpt, map_location="cpu", weights_only=True)["step"])


def validations(run: Path) -> dict[int, dict]:
    """The validation rows of a run's metrics.jsonl, by step."""
    from monoidlab.training.run_folder import read_metrics

    return {int(r["step"]): r for r in read_metrics(run / "metrics.jsonl")
            if "val_min_accuracy" in r}


def selection_key(row: dict | None) -> tuple:
    """The trainer's rule for the best validated weights, on a metrics.jsonl validation row:
    strictly solved, then the minimum accuracy over kinds, then the mean."""
    if row is None:
        return (False, -1.0, -1.0)
    return (bool(row["val_solved"]), float(row["val_min_accuracy"]),
            float(row["val_mean_accuracy"]))


def favoured(ours: Path, authors: Path, step: int = PAIR_STEP) -> str | None:
    """``"ours"`` or ``"authors"``: the recipe whose validation at ``step`` is better (a tie
    goes to ours); None while either has not been validated there."""
    a, b = validations(ours).get(step), validations(authors).get(step)
    if a is None or b is None:
        return None
    return "authors" if selection_key(b) > selection_key(a) else "ours"


def train_until(run_id: str, config: dict, out: Path, until: int) -> dict:
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
    status = {"id": run_id}
    for target in targets:
        if (run / "results.json").is_file():
            break  # finished (maybe stopped early at a validation)
        if checkpoint_step(run) >= target and target < total:
            continue
        t0, c0 = time.time(), time.process_time()
        has = (run / "checkpoint.pt").is_file()
        res = train(cfg, run, resume=has, overwrite=not has, progress=False,
                    stop_at=target if target < total else None)
        seg = {"target": target, "step": res["steps"], "wall_s": round(time.time() - t0, 1),
               "cpu_s": round(time.process_time() - c0, 1), "paused": bool(res.get("paused"))}
        with open(run / "segments.jsonl", "a") as fh:
            fh.write(json.dumps(seg) + "\n")
        if res.get("paused"):
            (run / "snapshots").mkdir(exist_ok=True)
            shutil.copy(run / "checkpoint.pt", run / "snapshots" / f"step-{res['steps']}.pt")
    if (run / "results.json").is_file() and not (run / "fresh.json").is_file():
        status["fresh"] = fresh_check(run)
    status["step"] = checkpoint_step(run)
    return status


def fresh_check(run: Path) -> dict:
    """The tested weights on two fresh test sets (bench_fresh_test's scores), in fresh.json."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_fresh_test import fresh_scores

    from monoidlab._util import atomic_write_text

    scores = fresh_scores(run, list(FRESH_SEEDS))
    data = {str(k): {"wrong": v[0], "scored": v[1], "solved": v[2]} for k, v in scores.items()}
    atomic_write_text(run / "fresh.json", json.dumps(data, indent=2))
    return data


def status_rows(runs: list[dict], out: Path) -> list[dict]:
    rows = []
    for r in runs:
        run = out / r["id"]
        vals = validations(run)
        last = vals[max(vals)] if vals else None
        res = json.loads((run / "results.json").read_text()) if (
            run / "results.json").is_file() else None
        segs = [json.loads(x) for x in (run / "segments.jsonl").read_text().splitlines()] if (
            run / "segments.jsonl").is_file() else []
        rows.append({"id": r["id"], "step": checkpoint_step(run),
                     "last validation": (f"{max(vals)}: min {last['val_min_accuracy']:.3f}"
                                         if last else "-"),
                     "solved": "-" if res is None else "yes" if res["solved"] else "no",
                     "wall h": round(sum(s["wall_s"] for s in segs) / 3600, 2),
                     "cpu h": round(sum(s["cpu_s"] for s in segs) / 3600, 2)})
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", default=str(CONFIG))
    p.add_argument("--phase", choices=["pairs", "long"], default=None)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--pair-step", type=int, default=PAIR_STEP,
                   help="the step at which the two recipes of a condition are compared")
    p.add_argument("--status", action="store_true")
    args = p.parse_args(argv)
    from monoidlab.training.sweep import load_sweep

    sweep = load_sweep(args.config)
    out = Path(sweep["out"])
    out.mkdir(parents=True, exist_ok=True)
    runs = sweep["runs"]
    if args.status or not args.phase:
        from monoidlab.cli._common import format_table

        rows = status_rows(runs, out)
        print(format_table(rows, list(rows[0])))
        return 0
    if args.phase == "pairs":
        jobs = [(r["id"], r["config"], args.pair_step) for r in runs]
    else:
        jobs = []
        by_pair: dict[str, dict[str, dict]] = {}
        for r in runs:
            by_pair.setdefault(pair_of(r["id"]), {})[condition_of(r["id"])[len(
                pair_of(r["id"])) + 1:]] = r
        for pair, members in by_pair.items():
            if set(members) != {"ours", "authors"}:
                jobs += [(r["id"], r["config"], 10**12) for r in members.values()]
                continue
            choice = favoured(out / members["ours"]["id"], out / members["authors"]["id"],
                              args.pair_step)
            if choice is None:
                print(f"{pair}: not both validated at step {args.pair_step} yet (run --phase "
                      "pairs)")
                continue
            print(f"{pair}: continuing {choice} (validation at step {args.pair_step})")
            r = members[choice]
            jobs.append((r["id"], r["config"], 10**12))
    t0 = time.time()
    if args.workers == 1:
        done = [train_until(i, c, out, u) for i, c, u in jobs]
    else:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(args.workers) as pool:
            done = list(pool.map(_job, jobs, [out] * len(jobs)))
    for d in done:
        print(json.dumps(d))
    print(f"{len(jobs)} runs, {time.time() - t0:.0f} s wall")
    return 0


def _job(job: tuple, out: Path) -> dict:
    run_id, config, until = job
    return train_until(run_id, config, out, until)


if __name__ == "__main__":
    sys.exit(main())
