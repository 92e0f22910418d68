"""Probing bench: train small models to a near-perfect score, then probe them against the same
models at initialisation (cluster agreement, linear probe, associativity on held-out triples).

Run (CPU, single torch thread, about 10-20 minutes on two shared cores):

    .venv/bin/python bench/bench_probing.py                      # mlp-ldru on parity, cycle-nav
    .venv/bin/python bench/bench_probing.py --models mlp-ldru,pr-lstm --heldout disjoint

Each run is trained with the bundled trainer (its defaults except steps, batch 64, d = 64;
PR-LSTM hidden 64 and lr 3e-3), scored on lengths 41..500, and kept under ``--out`` (reused
when present with the same config, unless ``--retrain``). The probes use held-out strings (``--heldout lengths``: lengths 41..80,
beyond training; ``disjoint``: lengths 1..40, the training strings regenerated and excluded).
Prints one table per run and writes ``bench_probing_<heldout>_<models>.json`` there.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from monoidlab.probing import probe_checkpoint
from monoidlab.training import RunConfig, train

RUNS = {  # (language, model) -> steps, model_options, other config keys
    ("parity", "mlp-ldru"): (400, {"d": 64}, {}),
    ("cycle-navigation", "mlp-ldru"): (600, {"d": 64}, {}),
    # PR-LSTM needs more steps and a higher lr to solve these on CPU in minutes
    ("parity", "pr-lstm"): (2000, {"hidden": 64}, {"lr": 3e-3}),
    ("cycle-navigation", "pr-lstm"): (5000, {"hidden": 64}, {"lr": 3e-3}),
}


def train_run(lang: str, model: str, out: Path, retrain: bool, test_samples: int) -> dict:
    steps, kw, extra = RUNS[(lang, model)]
    cfg = RunConfig(language=lang, model=model, steps=steps, batch_size=64, model_options=kw,
                      test_samples=test_samples, threads=1, seed=0, **extra)
    run = out / f"{lang}-{model}"
    res_file = run / "results.json"
    if not retrain and res_file.is_file() and (run / "checkpoint.pt").is_file():
        ckpt_cfg = json.loads((run / "config.json").read_text())
        if ckpt_cfg == cfg.as_dict():
            return {"run": run, **json.loads(res_file.read_text()), "reused": True}
    res = train(cfg, run, progress=False)
    return {"run": run, **res, "reused": False}


def row(m: dict) -> dict:
    agr = {a["method"]: a for a in m["agreement"] if a["level"] == "all"}
    levels = [a for a in m["agreement"] if a["method"] == "kmeans" and a["level"] != "all"]
    out = {f"{k}_{s}": agr[k][s] for k in agr for s in ("ari", "nmi")}
    out["kmeans_ari_top_level"] = levels[-1]["ari"] if levels else float("nan")
    out["probe_acc"], out["probe_chance"] = m["probe"]["accuracy"], m["probe"]["chance"]
    a = m.get("associativity", {}).get("overall", {})
    for k in ("cos_mean", "cos_median", "rel_l2_mean", "rel_l2_median", "head_same",
              "head_true", "probe_true", "id_right_rel_mean", "id_left_rel_mean"):
        out[k] = a.get(k, float("nan"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--languages", default="parity,cycle-navigation")
    ap.add_argument("--models", default="mlp-ldru")
    ap.add_argument("--heldout", choices=("lengths", "disjoint"), default="lengths")
    ap.add_argument("--n-strings", type=int, default=200)
    ap.add_argument("--n-triples", type=int, default=300)
    ap.add_argument("--test-samples", type=int, default=32, help="strings per test length")
    ap.add_argument("--out", default="/tmp/monoidlab-bench-probing")
    ap.add_argument("--retrain", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    out = Path(args.out)
    report = []
    for model in args.models.split(","):
        for lang in args.languages.split(","):
            t0 = time.time()
            tr = train_run(lang, model, out, args.retrain, args.test_samples)
            t1 = time.time()
            lengths = None if args.heldout == "lengths" else range(1, 41)
            res = probe_checkpoint(tr["run"], n_strings=args.n_strings, lengths=lengths,
                                   mode=args.heldout, n_triples=args.n_triples, seed=0)
            m = res["metrics"]
            t2 = time.time()
            trained, init = row(m["trained"]), row(m["init"])
            print(f"\n== {model} on {lang}: {tr['steps']} steps, score {tr['score']:.4f} on "
                  f"41..500 (min {min(tr['accuracy'].values()):.3f})"
                  f"{' [reused]' if tr['reused'] else f', trained in {t1 - t0:.0f} s'}; "
                  f"probed in {t2 - t1:.0f} s")
            print(f"   {m['heldout']['description']}; {m['trained']['n_nodes']} nodes, "
                  f"{m['trained']['n_ecs']} ECs")
            print(f"   {'measure':<22}{'trained':>10}{'init':>10}")
            for k in trained:
                print(f"   {k:<22}{trained[k]:>10.4f}{init[k]:>10.4f}")
            report.append({"language": lang, "model": model, "steps": tr["steps"],
                           "score": tr["score"], "heldout": m["heldout"], "trained": trained,
                           "init": init, "probe_seconds": round(t2 - t1, 1)})
    name = out / f"bench_probing_{args.heldout}_{args.models.replace(',', '_')}.json"
    name.write_text(json.dumps(report, indent=2, default=_num))
    print(f"\nwrote {name}")


def _num(o):
    return float(o) if isinstance(o, np.floating | np.integer) else str(o)


if __name__ == "__main__":
    main()
