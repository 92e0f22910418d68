"""What did the model learn? Extraction cost and results on strictly solved MLP-LDRU models.

Trains (or reuses, under runs/extraction) MLP-LDRU on dyck-2 and tomita-4 with the recipe of
configs/ldru21-cpu.toml (d 32, identity padding, near_miss sampler, Adam 3e-3 cosine, batch 64,
lengths 1..40, 4000 steps; tomita-4 with assoc_weight 0.1, dyck-2 without: the variants
bench/bench_ldru21_choices.py found solved), plus one deliberately unsolved tomita-4 model
(lengths 1..12, 1000 steps), each strictly evaluated on 41..500. For each model it times
``extract_automaton`` (L*, AALpy) and ``extract_monoid`` on one core and prints the number of
membership queries, the oracle's strings, forward passes and both comparisons.

``--runs DIR`` instead extracts from every finished run folder under DIR (e.g. the 21-task
sweep's runs/ldru21-cpu) and prints, for the strictly solved ones, how many extract to the true
automaton and how many operator tables are isomorphic to the syntactic monoid.

Usage: python bench/bench_extraction.py [--runs DIR [--solved-only] [--also NAME,..]]
       [--max-states N] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

OUT = Path("runs/extraction")
BASE = dict(model="mlp-ldru", batch_size=64, lr=3e-3, lr_schedule="cosine", clip=1.0,
            model_options={"d": 32, "dropout": 0.0, "padding": "identity"},
            train_lengths="1:40", test_lengths="41:500", test_samples=64, sampler="near_miss",
            checkpoint_every=1000, log_every=250, threads=1, device="cpu", seed=0)
MODELS = {
    "dyck-2": dict(language="dyck-2", steps=4000),
    "tomita-4": dict(language="tomita-4", steps=4000, assoc_weight=0.1),
    "tomita-4 (unsolved: lengths 1..12, 1000 steps)": dict(
        language="tomita-4", steps=1000, assoc_weight=0.1, train_lengths="1:12"),
}


def trained(name: str, keys: dict) -> tuple[Path, bool]:
    """A finished run folder for ``keys`` (reused when its config matches) and its verdict."""
    from monoidlab._paths import slugify
    from monoidlab.training import train
    from monoidlab.training.parse import config_from_dict

    cfg = config_from_dict({**BASE, **keys}, name)
    out = OUT / slugify(name)
    done = out / "results.json"
    if done.is_file() and json.loads((out / "config.json").read_text()) == cfg.as_dict():
        res = json.loads(done.read_text())
    else:
        t0 = time.perf_counter()
        res = train(cfg, out, progress=False, overwrite=True)
        print(f"  trained {name} in {time.perf_counter() - t0:.0f} s", flush=True)
    return out, bool(res["solved"])


def extract(run: Path, max_states: int = 64) -> dict:
    import torch

    from monoidlab.probing.extract_automaton import extract_automaton
    from monoidlab.probing.extract_monoid import extract_monoid

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    a = extract_automaton(run, max_states=max_states)
    ta = time.perf_counter() - t0
    t0 = time.perf_counter()
    m = extract_monoid(run)
    tm = time.perf_counter() - t0
    return {"automaton_s": round(ta, 1), "monoid_s": round(tm, 1), "automaton": a.to_dict(),
            "monoid": m.to_dict(), "automaton_text": a.text(), "monoid_text": m.text()}


def row(name: str, solved: bool, r: dict) -> str:
    a, m = r["automaton"], r["monoid"]
    return (f"| {name} | {'yes' if solved else 'no'} | {a['n_states']} / "
            f"{a['comparison']['true_states']} | {'yes' if a['comparison']['isomorphic'] else 'no'}"
            f" | {a['membership_queries']} ({a['model_queries']} new) | {a['oracle_strings']} | "
            f"{a['forward_passes']} | {r['automaton_s']} | {m['k']} / {m['true_size']} | "
            f"{m['associativity']['failing']} | "
            f"{'yes' if m['comparison']['isomorphic'] else 'no'} | {r['monoid_s']} |")


HEADER = ("| model | strictly solved | states (extracted / true) | automaton isomorphic | "
          "membership queries | oracle strings | forward passes | L* s | k / true |M| | "
          "non-associative triples | monoid isomorphic | monoid s |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", default=None, help="extract from every run folder under DIR")
    ap.add_argument("--json", default=None, help="write every result to this file (with "
                    "--runs: after each run, and the runs already in it are not extracted "
                    "again)")
    ap.add_argument("--max-states", type=int, default=64,
                    help="L*'s budget on hypothesis states (the library's default: 64; "
                    "prefix-4-4's minimal automaton has 341)")
    ap.add_argument("--solved-only", action="store_true",
                    help="with --runs: only the strictly solved runs, and those named by --also")
    ap.add_argument("--also", default="", help="with --solved-only: comma list of run folder "
                    "names to extract even when unsolved")
    args = ap.parse_args()
    results = []
    if args.runs:
        from monoidlab._util import atomic_write_text

        done = {}
        if args.json and Path(args.json).is_file():
            done = {r["name"]: r for r in json.loads(Path(args.json).read_text())}
        also = {x for x in args.also.split(",") if x}
        runs = sorted(p.parent for p in Path(args.runs).glob("*/results.json"))
        for run in runs:
            solved = bool(json.loads((run / "results.json").read_text())["solved"])
            if args.solved_only and not solved and run.name not in also:
                continue
            if run.name in done:
                r = {k: v for k, v in done[run.name].items() if k not in ("name", "solved")}
            else:
                print(f"  extracting {run.name}", flush=True)
                r = extract(run, args.max_states)
            results.append((run.name, solved, r))
            if args.json:
                atomic_write_text(Path(args.json), json.dumps(
                    [{"name": n, "solved": s, **x} for n, s, x in results], indent=2))
    else:
        for name, keys in MODELS.items():
            run, solved = trained(name, keys)
            results.append((name, solved, extract(run, args.max_states)))
    print(HEADER)
    for name, solved, r in results:
        print(row(name, solved, r))
    solved = [r for _, s, r in results if s]
    print(f"\nstrictly solved: {len(solved)}; extract to the true automaton: "
          f"{sum(r['automaton']['comparison']['isomorphic'] for r in solved)}; operator "
          f"table isomorphic to the syntactic monoid: "
          f"{sum(r['monoid']['comparison']['isomorphic'] for r in solved)}")
    for name, s, r in results:
        if not s:
            print(f"\nunsolved: {name}\n{r['automaton_text']}\n{r['monoid_text']}")
    if args.json:
        Path(args.json).write_text(json.dumps([{"name": n, "solved": s, **r}
                                               for n, s, r in results], indent=2))


if __name__ == "__main__":
    sys.exit(main())
