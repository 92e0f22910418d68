"""The main job, timed: ``monoidlab demo`` from an empty output folder, and its model's seeds.

1. Runs ``monoidlab demo --out TMP`` as a new process (imports, numba caches as they are,
   training, the strict evaluation, the report with probing and UMAP) and times it; prints
   the key figures the command prints (``TMP/<language>.json``).
2. ``--seeds 1 2``: trains the demo's configuration with other seeds (no report) and prints
   each run's strict verdict and stopping step, so that the demo's seed is seen beside others.

Prints a markdown section; ``--write-docs`` puts it in docs/results.md ("the demo").

Usage: python bench/bench_demo.py [--seeds 1 2] [--write-docs]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed_demo(out: Path) -> tuple[float, dict]:
    """Wall seconds of ``monoidlab demo --out OUT`` (a fresh process) and its key figures."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    t0 = time.time()
    subprocess.run([sys.executable, "-m", "monoidlab", "demo", "--out", str(out)], check=True,
                   env=env, stdout=subprocess.DEVNULL)
    wall = time.time() - t0
    (key,) = [json.loads(p.read_text()) for p in out.glob("*.json")]
    return wall, key


def seed_rows(seeds: list[int], root: Path) -> list[dict]:
    from monoidlab.cli.report import DEMO_LANGUAGE, DEMO_TRAINING
    from monoidlab.training import RunConfig, train

    rows = []
    for seed in seeds:
        cfg = RunConfig(language=DEMO_LANGUAGE, **{**DEMO_TRAINING, "seed": seed})
        r = train(cfg, root / f"seed{seed}", progress=False)
        rows.append({"seed": seed, "solved": r["solved"], "steps": r["steps"],
                     "first": r.get("first_solved_step"), "secs": r["train_seconds"],
                     "attempts": r.get("attempts", 1), "evaluation": r["evaluation"],
                     "verdict": r["verdict"]})
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, nargs="*", default=[])
    p.add_argument("--write-docs", action="store_true")
    args = p.parse_args(argv)
    from monoidlab.cli.report import DEMO_LANGUAGE, DEMO_TRAINING, key_figures_text
    from monoidlab.evaluation import KINDS  # the tables' columns, in this order
    from monoidlab.evaluation import min_beside_baselines as acc

    with tempfile.TemporaryDirectory() as tmp:
        wall, key = timed_demo(Path(tmp) / "demo")
        rows = seed_rows(args.seeds, Path(tmp) / "seeds")
    load = os.getloadavg()[0]
    lines = ["## The demo (`make demo`)", "",
             f"`python bench/bench_demo.py{' --seeds ' + ' '.join(map(str, args.seeds)) if args.seeds else ''}`"
             f": `monoidlab demo` on {DEMO_LANGUAGE} from an empty output folder, "
             f"**{wall:.0f} s wall** (a new process: imports, training, strict evaluation, "
             f"report with probing and UMAP; load average {load:.1f} at the end on a 2-core "
             "machine). Settings: `monoidlab.cli.report.DEMO_TRAINING` "
             f"(MLP-LDRU d {DEMO_TRAINING['model_options']['d']}, "
             f"{DEMO_TRAINING['sampler']} sampler, padding "
             f"{DEMO_TRAINING['model_options']['padding']}, {DEMO_TRAINING['steps']} steps of "
             f"a cosine schedule validated at their end on fresh strings, at most "
             f"{DEMO_TRAINING.get('restarts', 0)} restart(s) from a new seed if that validation "
             "fails). What the terminal ends with:", "", "```text",
             key_figures_text(key), "```", ""]
    if rows:
        lines += ["The same configuration with other seeds (strict evaluation on 41..500, "
                  f"{DEMO_TRAINING['test_samples']} strings per length and kind):", "",
                  "| seed | solved | first solved validation (stopped at) | attempts | "
                  "min balanced | "
                  "min near_miss | min ec_stratified | train s | verdict |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            lines.append(f"| {r['seed']} | {'**yes**' if r['solved'] else 'no'} | "
                         f"{r['first']} ({r['steps']}) | {r['attempts']} | "
                         + " | ".join(acc(r["evaluation"], k) for k in KINDS) +
                         f" | {r['secs']:.0f} | "
                         f"{r['verdict']} |")
        lines += ["", "In brackets: what a majority-class model / a count-only model scores on "
                  "the same strings (mean over the scored lengths)."]
        lines.append("")
    text = "\n".join(lines)
    print(text)
    if args.write_docs:
        from monoidlab._util import write_section

        write_section(ROOT / "docs" / "results.md", "demo", text, title="Results")
    return 0


if __name__ == "__main__":
    sys.exit(main())
