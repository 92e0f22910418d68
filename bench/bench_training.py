"""Learning benchmark: the first three CPU learning runs, through the real command line.

1. ``monoidlab train --language parity --model mlp-ldru`` (the defaults; the same settings
   are spelled out in configs/parity-mlp-ldru.toml);
2. ``monoidlab train --config configs/parity-pr-lstm.toml`` (PR-LSTM, hidden 64);
3. ``monoidlab train --config configs/cycle-navigation-mlp-ldru.toml`` (= the defaults for
   ``--language cycle-navigation --model mlp-ldru``).

Each run trains 1000 steps at batch 128 on lengths 1..40 and is scored on every length
41..500 with 64 fixed seeded strings per length (29,440 strings). The target: score >= 0.99
in under 10 minutes of wall time, evaluation included. Runs go one at a time with
``--threads=N`` torch threads (default 1); wall time, the child's CPU time (user + sys,
what the run would take on an idle core), the training part (``train_seconds``) and the
load average are recorded, since the two cores are shared with other jobs.

    python bench/bench_training.py                 # ~15-30 min for the three runs
    python bench/bench_training.py --only parity-mlp-ldru --threads 2
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS = {
    "parity-mlp-ldru": ["--language", "parity", "--model", "mlp-ldru"],
    "parity-pr-lstm": ["--config", str(ROOT / "configs" / "parity-pr-lstm.toml")],
    "cycle-navigation-mlp-ldru": ["--config",
                                 str(ROOT / "configs" / "cycle-navigation-mlp-ldru.toml")],
}
TARGET_SCORE, TARGET_S = 0.99, 600


def first_step_reaching(metrics: Path, key: str = "acc", level: float = 1.0, window: int = 5):
    """The first logged step after which ``window`` consecutive logged batches hit ``level``."""
    rows = [json.loads(ln) for ln in metrics.read_text().splitlines() if ln.strip()]
    rows = [r for r in rows if key in r]
    for i in range(len(rows) - window + 1):
        if all(r[key] >= level for r in rows[i:i + window]):
            return rows[i]["step"]
    return None


def run_one(name: str, args: list[str], threads: int, out: Path) -> dict:
    exe = Path(sys.executable).with_name("monoidlab")
    cmd = [str(exe), "train", *args, "--out", str(out), "--json", f"--threads={threads}",
           "--log_every=25"]
    load0 = os.getloadavg()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.time()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.time() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"{name} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    res = json.loads(done.stdout)
    acc = res["accuracy"]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    row = {"run": name, "command": "monoidlab train " + " ".join(
               a if not a.startswith(str(ROOT)) else os.path.relpath(a, ROOT) for a in args),
           "steps": res["steps"], "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
           "train_s": res["train_seconds"], "eval_s": round(wall - res["train_seconds"], 1),
           "score": res["score"], "min_acc": min(acc.values()),
           "worst_length": int(min(acc, key=acc.get)), "n_lengths": len(acc),
           "train_acc_1_from_step": first_step_reaching(out / "metrics.jsonl"),
           "threads": threads, "load_before": [round(x, 2) for x in load0],
           "load_after": [round(x, 2) for x in os.getloadavg()],
           "ok": res["score"] >= TARGET_SCORE and wall < TARGET_S}
    print(f"{name}: score {row['score']:.4f} (min {row['min_acc']:.3f} at L={row['worst_length']}) "
          f"after {row['steps']} steps; wall {wall:.0f} s (train {row['train_s']:.0f} s, eval "
          f"{row['eval_s']:.0f} s), CPU {cpu:.0f} s; load {row['load_before'][0]} -> "
          f"{row['load_after'][0]}", file=sys.stderr, flush=True)
    return row


def markdown(rows: list[dict]) -> str:
    out = ["| run | steps | batch acc = 1 from step | wall (s) | train (s) | eval (s) | "
           "CPU (s) | score 41..500 | min accuracy | ≥ 0.99 in < 10 min |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        out.append(f"| `{r['command']}` | {r['steps']} | {r['train_acc_1_from_step']} | "
                   f"{r['wall_s']:.0f} | {r['train_s']:.0f} | {r['eval_s']:.0f} | "
                   f"{r['cpu_s']:.0f} | {r['score']:.4f} | {r['min_acc']:.3f} | "
                   f"{'yes' if r['ok'] else 'no'} |")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--only", nargs="*", choices=list(RUNS), default=list(RUNS))
    ap.add_argument("--out", default=None, help="run folders (default: a temp folder)")
    ap.add_argument("--json", default=str(ROOT / "docs" / "figures" / "learning-cpu.json"))
    args = ap.parse_args(argv)
    root = Path(args.out or tempfile.mkdtemp(prefix="bench-training-"))
    rows = [run_one(name, RUNS[name], args.threads, root / name) for name in args.only]
    md = markdown(rows)
    print(md)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({"rows": rows, "markdown": md}, indent=1))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
