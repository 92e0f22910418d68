"""Coverage-driven training: do random left offsets let short strings cover what long
test strings need?

1. Predicted support lengths (the smallest maximum training length whose compositions cover
   every composition of test lengths 41..500, ``balanced`` schedule) without and with random
   training offsets, for every ``ldru21`` language.
2. MLP-LDRU trained at maximum training length 40 without offsets, with random offsets, and
   (where the prediction exceeds 40) without offsets at the predicted length; same steps and
   seeds; strict evaluation on test lengths 41..500 (docs/evaluation.md): the minimum accuracy
   per test kind over the scored (even) lengths, and the papers' balanced score.

Usage::

    python bench/bench_offsets.py                 # CPU scale (reduced steps; see --steps)
    python bench/bench_offsets.py --steps 100000 --batch-size 256 --test-samples 512  # paper scale (GPU)
    python bench/bench_offsets.py --table-only

Writes its own section of ``docs/results.md`` (tables + settings) and prints the same.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def support_table(test: str = "41:500") -> list[dict]:
    import monoidlab as ml
    from monoidlab.cli import parse_lengths
    from monoidlab.coverage.min_length import min_training_length
    from monoidlab.sublanguage import resolve_within

    rows = []
    for name in ml.suite("ldru21"):
        lang = ml.load_language(name)
        within = resolve_within(lang, "auto")
        t0 = time.time()
        plain = min_training_length(lang, parse_lengths(test), within=within)
        shifted = min_training_length(lang, parse_lengths(test), within=within, offsets="random")
        rows.append({"name": name, "needed": plain.needed, "support_length": plain.support_length,
                     "support_length_offsets": shifted.support_length,
                     "seconds": round(time.time() - t0, 2)})
    return rows


def _train(job: dict) -> dict:
    import torch

    torch.set_num_threads(1)
    from monoidlab.training import RunConfig, train

    cfg = RunConfig(**job["config"])
    t0 = time.time()
    done = Path(job["out"]) / "results.json"
    if done.is_file() and "evaluation" in json.loads(done.read_text()):
        res = json.loads(done.read_text())  # a finished run (rerun of the bench)
    else:
        res = train(cfg, out_dir=job["out"], resume=False, progress=False)
    mins = res["min_accuracy"]
    return {**job["meta"], "paper_score": res["paper_score"], "solved": res["solved"],
            "wall_s": round(time.time() - t0, 1), **{f"min_{k}": v for k, v in mins.items()},
            "acc_500": {k: v.get(500, v.get("500")) for k, v in res["accuracy"].items()}}


def jobs(table, args) -> list[dict]:
    out = []
    pred = {r["name"]: r for r in table}
    for name in args.languages:
        conditions = [("L<=40, offset 0", 40, "none"), ("L<=40, random offsets", 40, "random")]
        p = pred[name]["support_length"]
        if p and p > 40:
            conditions.append((f"L<={p} (predicted), offset 0", p, "none"))
        for label, max_len, pad in conditions:
            for seed in args.seeds:
                cfg = dict(language=name, model="mlp-ldru", steps=args.steps,
                           batch_size=args.batch_size, lr=args.lr,
                           model_options={"d": args.d, "dropout": args.dropout},
                           train_lengths=f"1:{max_len}", test_lengths="41:500",
                           test_samples=args.test_samples, sampler="balanced", offsets=pad,
                           seed=seed, checkpoint_every=10**9, log_every=100, device=args.device)
                run_id = f"{name}__{'off' if pad == 'random' else 'L' + str(max_len)}__s{seed}"
                out.append({"config": cfg, "out": str(Path(args.runs) / run_id),
                            "meta": {"language": name, "condition": label, "seed": seed,
                                     "predicted": p,
                                     "predicted_offsets": pred[name]["support_length_offsets"]}})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--table-only", action="store_true")
    ap.add_argument("--languages", nargs="+",
                    default=["dyck-2", "dyck-3", "dyck-4", "dyck-6", "dyck-8", "dyck-12"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0])
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--test-samples", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--runs", default=str(ROOT / "runs" / "offsets"))
    ap.add_argument("--section", default=None,
                    help="name of the generated section (default: 'offsets STEPS steps')")
    ap.add_argument("--out", default=str(ROOT / "docs" / "results.md"),
                    help="markdown page; the bench writes its own section of it")
    args = ap.parse_args(argv)

    t0 = time.time()
    table = support_table()
    lines = [f"## Coverage-driven training: random left offsets ({args.steps} steps"
             f"{', seeds ' + ' '.join(map(str, args.seeds)) if args.section else ''})", "",
             "Predicted support length = smallest maximum training length L such that training "
             "lengths 1..L show every EC composition that test lengths 41..500 need (`balanced` "
             "schedule, test strings at offset 0). With offsets, each training string of length "
             "n sits at a left offset r drawn uniformly from 0..B−n, B the next power of two ≥ 2n. "
             "`modular-arithmetic` is restricted to well-formed expressions.", "",
             "Produced by `python bench/bench_offsets.py` (one CLI call gives the same table: "
             "`monoidlab min-length --suite ldru21 --test 41:500 [--offsets random]`).", "",
             "| language | needed compositions | support length | with random offsets |",
             "|---|---|---|---|"]
    for r in table:
        lines.append(f"| {r['name']} | {r['needed']} | {r['support_length']} | "
                     f"{r['support_length_offsets']} |")
    lines += ["", f"(table computed in {time.time() - t0:.1f} s)", ""]
    print("\n".join(lines), flush=True)
    if not args.table_only:
        js = jobs(table, args)
        t1 = time.time()
        with ProcessPoolExecutor(args.workers) as ex:
            results = list(ex.map(_train, js))
        lines += ["### Training runs", "",
                  f"MLP-LDRU (d={args.d}, dropout {args.dropout}), {args.steps} steps, batch "
                  f"{args.batch_size}, Adam lr {args.lr}, clip 1.0, class-balanced sampler, one "
                  f"length per batch; strict evaluation on lengths 41..500 with "
                  f"{args.test_samples} strings per length and kind (docs/evaluation.md): minimum "
                  "accuracy over the scored lengths per kind (odd lengths of a Dyck language have "
                  "one class and are not scored), solved = all >= 0.99; bal. score = the papers' "
                  f"mean over lengths; seeds {args.seeds}. The authors train "
                  "1M steps for D_n (n ≥ 4) at lr 1e-4: these reduced CPU runs test the direction "
                  "of the effect, not the paper's numbers.", "",
                  "| language | condition | seed | solved | min balanced | min near_miss | "
                  "min ec_stratified | bal. score | wall s |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in results:
            lines.append(f"| {r['language']} | {r['condition']} | {r['seed']} | "
                         f"{'**yes**' if r['solved'] else 'no'} | {r['min_paper']:.3f} | "
                         f"{r['min_near_miss']:.3f} | {r['min_ec_stratified']:.3f} | "
                         f"{r['paper_score']:.3f} | {r['wall_s']} |")
        lines += ["", f"(training wall time {time.time() - t1:.0f} s with {args.workers} "
                  f"workers on `{args.device}`)", ""]
        print("\n".join(lines[-(len(results) + 6):]), flush=True)
        (Path(args.runs)).mkdir(parents=True, exist_ok=True)
        (Path(args.runs) / "results.json").write_text(json.dumps(results, indent=2))
    from monoidlab._util import write_section

    write_section(args.out, args.section or f"offsets {args.steps} steps", "\n".join(lines),
                  title="Results")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
