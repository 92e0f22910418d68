"""Count the wrong test strings of finished runs: one row per run folder, fewest errors first.

Usage: python bench/bench_run_errors.py RUN_DIR [RUN_DIR ...] [--markdown]

The strict verdict only says whether a run missed *some* string; to compare variants of a task
that all miss by a little (tomita-3 in docs/results.md), this counts how many: for each run folder
(config.json, results.json, metrics.jsonl; an optional variant.txt labels the row) the number
of wrong strings over every scored test length and kind, that number over the scored strings,
the validations' minimum accuracies and the training seconds. Reads the folders only; nothing
is trained or evaluated again.

Example: python bench/bench_run_errors.py runs/tomita3-explore/*
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from monoidlab.studies.runner import wrong_strings


def row_of(run: Path) -> dict:
    results = json.loads((run / "results.json").read_text())
    wrong, scored = wrong_strings(results)
    vals = [json.loads(ln) for ln in (run / "metrics.jsonl").read_text().splitlines()
            if '"val_min_accuracy"' in ln]
    label = (run / "variant.txt").read_text().strip() if (run / "variant.txt").is_file() else ""
    return {"run": run.name, "variant": label, "wrong": wrong, "scored": scored,
            "solved": results["solved"], "val_min": [v["val_min_accuracy"] for v in vals],
            "train_s": results["train_seconds"]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("runs", nargs="+", type=Path)
    args = p.parse_args(argv)
    runs = [r for r in args.runs if (r / "results.json").is_file()]
    if not runs:
        sys.exit("no run folder with a results.json among the arguments")
    rows = sorted((row_of(r) for r in runs), key=lambda r: (r["wrong"], r["run"]))
    print("| run | variant | wrong test strings | solved | validation minima | train s |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        vals = ", ".join(f"{v:.3f}" for v in r["val_min"]) or "—"
        print(f"| {r['run']} | {r['variant']} | {r['wrong']} of {r['scored']} | "
              f"{'**yes**' if r['solved'] else 'no'} | {vals} | {r['train_s']:.0f} |")
    wrong = [r["wrong"] for r in rows]
    print(f"\n{len(rows)} runs, {sum(r['solved'] for r in rows)} solved; wrong test strings: "
          f"fewest {', '.join(map(str, wrong[:5]))}; median {statistics.median(wrong):g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
