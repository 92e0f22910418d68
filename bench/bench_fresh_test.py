"""Is a strict verdict the model's, or its test strings'? The same weights on fresh test sets.

Usage: python bench/bench_fresh_test.py RUN_DIR_OR_SWEEP_DIR... [--seeds 1000,1001]
       [--solved-only] [--write-docs]

A run's test strings are seeded by its ``seed``; a recipe chosen among variants by how they did
on those strings is partly the one luckiest on them (tomita-3 in docs/results.md).
For each run folder (a sweep's ``out`` stands for the run folders in it) this reads the wrong
strings of the run's own test set from its results.json, then scores the tested weights on fresh
sets of the same lengths, kinds, size and distribution, one per ``--seeds`` entry (what
``monoidlab evaluate --test-seed S`` does), and prints per set the wrong strings and the strict
verdict. ``--solved-only`` keeps the runs whose own test set was strictly solved. One thread.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from monoidlab._util import inference
from monoidlab.errors import MonoidlabError
from monoidlab.studies.runner import wrong_strings  # the one wrong-string count
from monoidlab.training import evaluate_kinds, load_checkpoint

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results.md"



def run_folders(paths: list[Path]) -> list[Path]:
    """The run folders (config.json and results.json) named or held in ``paths``."""
    runs = []
    for p in paths:
        inside = [p] if (p / "config.json").is_file() else sorted(p.glob("*/"))
        runs += [r for r in inside if (r / "config.json").is_file()
                 and (r / "results.json").is_file()]
    return runs


def fresh_scores(run: Path, seeds: list[int]) -> dict:
    """{"own": (wrong, scored, solved), seed: (wrong, scored, solved), ...} for one run."""
    results = json.loads((run / "results.json").read_text())
    out = {"own": (*wrong_strings(results), bool(results["solved"]))}
    try:  # the weights the run's results were measured on, checked as checkpoints are
        model, cfg, problem, _ = load_checkpoint(run)
    except MonoidlabError as e:
        raise SystemExit(f"{run}: {e}") from None
    model.eval()
    for seed in seeds:
        ev = evaluate_kinds(model, problem, cfg.test_lengths, cfg.test_samples, seed,
                            cfg.eval_kinds, cfg.solved_threshold)
        out[seed] = (*wrong_strings({"evaluation": ev.as_dict()}), bool(ev.solved))
    return out


def table(rows: list[tuple[str, dict]], seeds: list[int]) -> str:
    def cell(wrong: int, scored: int, solved: bool) -> str:
        return f"{wrong} of {scored} ({'**solved**' if solved else 'not solved'})"

    head = ("| run | own test set | " + " | ".join(f"fresh set, seed {s}" for s in seeds)
            + " |\n|---|---|" + "---|" * len(seeds) + "\n")
    return head + "\n".join(
        f"| {name} | {cell(*res['own'])} | " + " | ".join(cell(*res[s]) for s in seeds) + " |"
        for name, res in rows) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("runs", nargs="+", type=Path)
    p.add_argument("--seeds", default="1000,1001",
                   help="comma list of test-string seeds (not a run's own seed)")
    p.add_argument("--solved-only", action="store_true")
    p.add_argument("--write-docs", action="store_true",
                   help="put the table in docs/results.md (section 'fresh test sets')")
    args = p.parse_args(argv)
    try:
        seeds = [int(s) for s in args.seeds.split(",")]
    except ValueError:
        sys.exit(f"--seeds: a comma list of integers, got {args.seeds!r}")
    runs = run_folders(args.runs)
    if args.solved_only:
        runs = [r for r in runs if json.loads((r / "results.json").read_text())["solved"]]
    if not runs:
        sys.exit(f"no finished run folder (config.json, results.json) in "
                 f"{' '.join(map(str, args.runs))}")
    t0 = time.perf_counter()
    rows = []
    with inference():  # one thread, no gradients; the caller's settings come back
        for run in runs:
            res = fresh_scores(run, seeds)
            if seeds and res["own"][1] != res[seeds[0]][1]:
                sys.exit(f"{run}: results.json scored {res['own'][1]} strings, the fresh set "
                         f"{res[seeds[0]][1]}: not the run's own test settings")
            rows.append((run.name.split("__")[0], res))
            lines = table(rows[-1:], seeds).splitlines()
            print("\n".join(lines if len(rows) == 1 else lines[2:]), flush=True)
    n_own = sum(r["own"][2] for _, r in rows)
    n_all = sum(r["own"][2] and all(r[s][2] for s in seeds) for _, r in rows)
    foot = (f"{len(rows)} runs: {n_own} strictly solved on their own test set, {n_all} on it and "
            f"on every fresh set (seeds {args.seeds}; each set: the run's test lengths, kinds "
            f"and strings per length); {time.perf_counter() - t0:.0f} s on one thread.")
    print(foot)
    if args.write_docs:
        from monoidlab._util import write_section

        text = ("### The same weights on fresh test sets\n\n`python bench/bench_fresh_test.py "
                + " ".join(map(str, args.runs)) + (" --solved-only" if args.solved_only else "")
                + f" --seeds {args.seeds} --write-docs`\n\n" + table(rows, seeds) + "\n" + foot)
        write_section(RESULTS, "fresh test sets", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
