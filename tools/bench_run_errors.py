"""Count the wrong test strings of finished runs: one row per run folder, fewest errors first.

Usage: python tools/bench_run_errors.py RUN_DIR [RUN_DIR ...] [--markdown]

The strict verdict only says whether a run missed *some* string; to compare variants of a task
that all miss by a little (tomita-3 in docs/results.md), this counts how many: for each run folder
(config.json, results.json, metrics.jsonl; an optional variant.txt labels the row) the number
of wrong strings over every scored test length and kind, that number over the scored strings,
the validations' minimum accuracies and the training seconds. Reads the folders only; nothing
is trained or evaluated again.

Example: python tools/bench_run_errors.py runs/tomita3-explore/*
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from monoidlab.studies.blame import row_of  # the row of one run folder


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
