"""Why configs/ldru21-cpu.toml trains the way it does: each choice against its alternative.

Every run: MLP-LDRU (d 32 unless said), identity padding, the near_miss sampler, Adam lr 3e-3
with a cosine decay, batch 64, lengths 1..40, seed 0, one torch thread; strict evaluation on
41..500 with 64 strings per length and kind. Variants:

- ``early stop``: 12000-step schedule, stopped after three solved validations in a row (every
  500 steps, lengths 42:300:11, 48 strings): the previous sweep's setting, lr still ~3e-3;
- ``annealed``: 4000 steps, no early stopping (lr decays to 0);
- ``annealed, d 64`` / ``+ random offsets`` / ``+ assoc 0.1``: one change each to ``annealed``.

Usage: python bench/bench_ldru21_choices.py [--workers 2] [--write-docs]
(reuses finished runs under runs/ldru21-choices; about 20 minutes of one core in all.)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = Path("runs/ldru21-choices")

BASE = dict(model="mlp-ldru", batch_size=64, lr=3e-3, lr_schedule="cosine", clip=1.0,
            model_options={"d": 32, "dropout": 0.0, "padding": "identity"},
            train_lengths="1:40", test_lengths="41:500", test_samples=64, sampler="near_miss",
            checkpoint_every=1000, log_every=250, threads=1, device="cpu", seed=0)
VARIANTS = {
    "early stop": dict(steps=12000, eval_every=500, val_lengths="42:300:11", val_samples=48,
                       early_stop=3),
    "annealed": dict(steps=4000),
    "annealed, d 64": dict(steps=4000, model_options={**BASE["model_options"], "d": 64}),
    "annealed + random offsets": dict(steps=4000, offsets="random"),
    "annealed + assoc 0.1": dict(steps=4000, assoc_weight=0.1),
}
RUNS = [("even-pairs", "early stop"), ("even-pairs", "annealed"),
        ("dyck-2", "early stop"), ("dyck-2", "annealed"), ("dyck-2", "annealed + assoc 0.1"),
        *[(task, v) for task in ("tomita-4", "prefix-4-2") for v in VARIANTS if v != "early stop"]]


def run_one(task: str, variant: str) -> dict:
    from monoidlab._paths import slugify
    from monoidlab.training import train
    from monoidlab.training.parse import config_from_dict

    cfg = config_from_dict({**BASE, **VARIANTS[variant], "language": task}, variant)
    out = OUT / f"{task}__{slugify(variant)}"
    done = out / "results.json"
    if done.is_file() and json.loads((out / "config.json").read_text()) == cfg.as_dict():
        res = json.loads(done.read_text())
    else:
        res = train(cfg, out, progress=False, overwrite=True)
    return {"task": task, "variant": variant, "solved": res["solved"], "steps": res["steps"],
            "secs": res["train_seconds"], "evaluation": res["evaluation"],
            "where": res["verdict"].split(":", 1)[1].strip() if not res["solved"] else "—"}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--write-docs", action="store_true")
    args = p.parse_args(argv)
    from monoidlab.evaluation import KINDS  # the table's columns, in this order
    from monoidlab.evaluation import min_beside_baselines as acc

    t0 = time.time()
    with ProcessPoolExecutor(args.workers) as pool:
        rows = list(pool.map(run_one, *zip(*RUNS)))
    wall = time.time() - t0
    lines = ["## Choices of the 21-task sweep, each against its alternative", "",
             f"`python bench/bench_ldru21_choices.py`: {len(rows)} runs, "
             f"{sum(r['secs'] for r in rows) / 60:.0f} min of training in all (one core each; "
             f"the *train s* column); its last invocation took {wall / 60:.0f} min wall with "
             f"{args.workers} workers (finished runs are reused). "
             + " ".join(" ".join(__doc__.split("\n\n")[1:3]).replace("``", "`").split()), "",
             "| task | variant | solved | steps | min balanced | min near_miss | "
             "min ec_stratified | train s | where it fails |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['task']} | {r['variant']} | {'**yes**' if r['solved'] else 'no'} | "
                     f"{r['steps']} | "
                     + " | ".join(acc(r["evaluation"], k) for k in KINDS) +
                     f" | {r['secs']:.0f} | {r['where']} |")
    lines += ["", "In brackets: what a majority-class model / a count-only model scores on the "
              "same strings (mean over the scored lengths)."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.write_docs:
        from monoidlab._util import write_section

        write_section(ROOT / "docs" / "results.md", "ldru21 choices", text, title="Results")
    return 0


if __name__ == "__main__":
    sys.exit(main())
