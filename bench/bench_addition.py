"""Length generalisation on decimal addition: the Zhou et al. (2024) recipe against a baseline.

Variants, each trained with several seeds from the same config (default
``configs/addition-cpu.toml``):

* ``recipe``: the config as is (FIRE + randomized positions, reversed answer + index hints);
* ``baseline``: the same model and training, ``standard`` format and ``sinusoidal`` (absolute)
  positions;
* two ablations: ``recipe-sinusoidal`` (the recipe's format, absolute positions) and
  ``standard-fire`` (standard format, the recipe's positions).

Exact match per operand length is written to ``OUT/results.json`` and ``OUT/summary.md``, and
one figure (a panel per seed, a line per variant) to ``docs/figures/addition_<config>.png``.
Finished runs are not repeated (rerun the same command to resume).

Usage::

    .venv/bin/python bench/bench_addition.py       # CPU config: 4 variants x seeds 0 1 2, 2 at a time
    .venv/bin/python bench/bench_addition.py --variants recipe baseline --seeds 0 1
    .venv/bin/python bench/bench_addition.py --config configs/addition-paper.toml --jobs 1 \
        --variants recipe --seeds 0 1 2 3 4                        # one GPU
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from monoidlab._util import atomic_write_text
from monoidlab.training import load_config, train
from monoidlab.training.parse import config_from_dict

ROOT = Path(__file__).resolve().parent.parent
RANDOMIZED_KEYS = ("max_randomized_len", "eval_positions", "share_across_batch", "seed")


# variant -> (format, position); None keeps the config's value
VARIANTS = {
    "recipe": (None, None),
    "baseline": ("standard", "sinusoidal"),
    "recipe-sinusoidal": (None, "sinusoidal"),  # ablation: the recipe's format, absolute positions
    "standard-fire": ("standard", None),  # ablation: standard format, the recipe's positions
}


def variant_config(base: dict, variant: str, seed: int) -> dict:
    try:
        fmt, position = VARIANTS[variant]
    except KeyError:
        raise ValueError(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}") from None
    cfg = {**base, "seed": seed}
    if fmt:
        cfg["task_options"] = {**base["task_options"], "format": fmt}
    if position:
        mk = base["model_options"]
        if not position.startswith("randomized-"):
            mk = {k: v for k, v in mk.items() if k not in RANDOMIZED_KEYS}
        cfg["model_options"] = {**mk, "position": position}
    return config_from_dict(cfg).as_dict()


def run_one(cfg: dict, out: str) -> dict:
    done = Path(out) / "results.json"
    if done.is_file():
        return json.loads(done.read_text())
    resume = (Path(out) / "checkpoint.pt").is_file()
    t0 = time.time()
    res = train(config_from_dict(cfg), out, resume=resume, progress=False)
    res["wall_seconds"] = round(time.time() - t0, 1)
    atomic_write_text(done, json.dumps(res, indent=2))
    return res


def summary_table(results: dict, train_max: int) -> str:
    """Markdown: exact match (%) per length, one row per variant and seed, plus the mean."""
    lengths = sorted({int(L) for per_seed in results.values() for r in per_seed.values()
                      for L in r["accuracy"]})
    head = "| variant | seed | " + " | ".join(
        f"**{L}**" if L <= train_max else str(L) for L in lengths) + " | train s |"
    lines = [head, "|---|---|" + "---|" * (len(lengths) + 1)]
    for variant, per_seed in results.items():
        rows = []
        for seed, r in sorted(per_seed.items()):
            acc = [r["accuracy"][str(L)] if str(L) in r["accuracy"] else r["accuracy"][L]
                   for L in lengths]
            rows.append(acc)
            lines.append(f"| {variant} | {seed} | " + " | ".join(f"{100 * a:.0f}" for a in acc)
                         + f" | {r['train_seconds']:.0f} |")
        mean = np.mean(rows, axis=0)
        lines.append(f"| {variant} | mean | " + " | ".join(f"{100 * a:.0f}" for a in mean)
                     + " | |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default=str(ROOT / "configs" / "addition-cpu.toml"))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--out", default=None, help="default: runs/bench_addition_<config>")
    ap.add_argument("--figures", default=str(ROOT / "docs" / "figures"))
    ap.add_argument("--jobs", type=int, default=2,
                    help="runs at a time (processes; each uses the config's `threads`)")
    ap.add_argument("--steps", type=int, default=None, help="override the config's steps")
    args = ap.parse_args(argv)

    base = load_config(args.config).as_dict()
    if args.steps:
        base["steps"] = args.steps
    name = Path(args.config).stem.removeprefix("addition-")
    out = Path(args.out or ROOT / "runs" / f"bench_addition_{name}")
    jobs = [(v, s, variant_config(base, v, s), str(out / f"{v}__s{s}"))
            for v in args.variants for s in args.seeds]
    t0 = time.time()
    print(f"{len(jobs)} runs from {args.config} -> {out} ({args.jobs} at a time)", flush=True)
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            futures = [pool.submit(run_one, cfg, o) for _, _, cfg, o in jobs]
            done = [f.result() for f in futures]
    else:
        done = [run_one(cfg, o) for _, _, cfg, o in jobs]
    results: dict = {}
    for (v, s, _, _), res in zip(jobs, done):
        results.setdefault(v, {})[s] = res
        acc = res["accuracy"]
        print(f"{v:9s} seed {s}: " + " ".join(f"{int(L)}:{a:.2f}" for L, a in acc.items())
              + f"  ({res['train_seconds']:.0f} s)", flush=True)
    train_max = max(int(x) for x in str(base["train_lengths"]).split(":")[:2])
    md = summary_table(results, train_max)
    wall = time.time() - t0
    atomic_write_text(out / "results.json", json.dumps(
        {"config": args.config, "wall_seconds": round(wall, 1), "results": results}, indent=2))
    atomic_write_text(out / "summary.md", md)
    print("\n" + md + f"\ntotal wall time {wall / 60:.1f} min", flush=True)

    from monoidlab.viz.training import exact_match_figure

    curves = {v: {s: r["accuracy"] for s, r in per.items()} for v, per in results.items()}
    fig = exact_match_figure(curves, train_length=train_max,
                             title=f"decimal addition, exact match ({Path(args.config).name})")
    Path(args.figures).mkdir(parents=True, exist_ok=True)
    path = Path(args.figures) / f"addition_{name}.png"
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
