"""The authors' recipe against the defaults at CPU scale (why ``recipe = "authors"`` is not the
default): MLP-LDRU trained with each recipe for the same number of steps on the same
language and seed, one torch thread, then the strict evaluation on a few test lengths.

The recipe differs in optimiser (optax's AMSGrad), lr (1e-4 for D_n), 20% warm-up from 1e-8,
gradient centralisation, batch 256, the ``ldru`` sampler for D_n and Tomita, haiku init and
dropout; ``steps`` is the same for both (a recipe never sets it).

    python bench/bench_recipe.py                      # parity and dyck-4, 1000 steps each
    python bench/bench_recipe.py --steps 300 --languages parity
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path


def run(language: str, recipe: str, steps: int, seed: int) -> dict:
    from monoidlab.training import train
    from monoidlab.training.parse import config_from_dict

    cfg = config_from_dict({"language": language, "recipe": recipe, "steps": steps,
                            "seed": seed, "threads": 1, "test_lengths": "41:200:53",
                            "test_samples": 32, "log_every": 50})
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.time()
        result = train(cfg, out_dir=tmp, progress=False)
        wall = time.time() - t0
        lines = [json.loads(x) for x in Path(tmp, "metrics.jsonl").read_text().splitlines()]
    losses = [x["loss"] for x in lines if "loss" in x]
    return {"language": language, "recipe": recipe, "steps": steps,
            "optimizer": cfg.optimizer, "lr": cfg.lr, "batch": cfg.batch_size,
            "sampler": cfg.sampler, "loss_last_100": sum(losses[-2:]) / max(1, len(losses[-2:])),
            "paper_score": result["paper_score"], "min_accuracy": result["min_accuracy"],
            "solved": result["solved"], "wall_s": round(wall, 1)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--languages", default="parity,dyck-4")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rows = []
    for language in args.languages.split(","):
        for recipe in ("default", "authors"):
            rows.append(run(language, recipe, args.steps, args.seed))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print("| language | recipe | optimiser, lr, batch, sampler | training loss (last two logged steps) "
          "| balanced score | min accuracy per kind | strictly solved | wall (s) |")
    print("|---|---|---|---:|---:|---|---|---:|")
    for r in rows:
        mins = ", ".join(f"{k} {v:.2f}" for k, v in r["min_accuracy"].items())
        print(f"| {r['language']} | {r['recipe']} | {r['optimizer']}, {r['lr']:g}, {r['batch']}, "
              f"{r['sampler']} | {r['loss_last_100']:.3f} | {r['paper_score']:.3f} | {mins} "
              f"| {'yes' if r['solved'] else 'no'} | {r['wall_s']:.0f} |")
    print(f"\n{args.steps} steps each, seed {args.seed}, MLP-LDRU at each recipe's settings, one "
          "thread; test lengths 41, 94, 147, 200 with 32 strings per length and kind.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
