"""The README's timing claims, measured on a fresh clone of this checkout.

Clones the repository (committed files only) into a temporary folder and, there:

1. ``make setup`` (the virtual environment, torch 2.13.0 CPU first, then monoidlab), timed;
2. ``monoidlab demo`` into an empty folder, timed as a whole and split into its training (the
   run's ``results.json``: seconds of training and of the final evaluation) and the rest;
3. with ``--test``, ``make test`` (lint, types, the suite on every core), timed.

Prints each claim of the README beside what was measured, with the machine's cores and load
(the claims are for a machine of its own; a shared one is slower, and the load says how much).

    python bench/bench_readme.py            # setup and demo (about 3-6 minutes)
    python bench/bench_readme.py --test     # and the suite (about 10-15 minutes more)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(cmd: list[str], cwd: Path, env: dict | None = None) -> tuple[float, str]:
    t = time.perf_counter()
    out = subprocess.run(cmd, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True,
                         text=True)
    wall = time.perf_counter() - t
    if out.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr[-2000:]}")
    return wall, out.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--test", action="store_true", help="also time `make test`")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="readme-") as tmp:
        clone = Path(tmp) / "monoidlab"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        commit = subprocess.run(["git", "-C", str(clone), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
        setup, _ = timed(["make", "setup"], clone)
        rows.append(("make setup", "(no claim)", f"{setup:.0f} s"))
        demo, out = timed([".venv/bin/monoidlab", "demo", "--out", "demo-out", "--json"], clone,
                          {"OMP_NUM_THREADS": "1"})
        res = json.loads((clone / "demo-out" / "dyck-2-mlp-ldru" / "results.json").read_text())
        rows.append(("monoidlab demo: training", "about a minute of one core",
                     f"{res['train_seconds']:.0f} s ({res['steps']} steps); "
                     f"{res['verdict']}"))
        rows.append(("monoidlab demo: whole command", "(no claim)",
                     f"{demo:.0f} s (imports, training, evaluation, report with probing and "
                     "UMAP)"))
        if args.test:
            test, _ = timed(["make", "test"], clone)
            rows.append(("make test", "about 7 minutes on 2 cores", f"{test:.0f} s"))
    print(f"# bench_readme: a fresh clone of {commit}, {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f} at the end")
    print("| what | README says | measured |\n|---|---|---|")
    for what, claim, got in rows:
        print(f"| {what} | {claim} | {got} |")


if __name__ == "__main__":
    main()
