"""The ListOps table (configs/listops-table.toml): every ListOps model of the MLP-LDRU paper at
CPU scale, accuracy by length bucket and depth beside a constant and a count-only baseline.

Usage:
    python bench/bench_listops.py [--only NAME,...]      # train + score each model (resumable)
    python bench/bench_listops.py --table [--write-docs]  # the table, from the ledger only

Each model of the config is trained with the config's ``[base]`` recipe plus its own entry (a
killed run resumes from its checkpoint), then scored on the same fixed strings as every other
model: for each length bucket x depth group, ``per_length`` strings at each of ``lengths`` evenly
spaced lengths of the bucket that admit the depth group. One ledger line per finished model
(``docs/data/listops-table.jsonl``, atomic), so a rerun skips what is done. The baselines are
the best constant answer per cell (measured on the cell's own strings: no constant model does
better) and a bag-of-tokens logistic regression fitted on training-split strings.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tomllib
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from monoidlab.studies.ledger import read_ledger, write_ledger

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "listops-table.toml"


# ------------------------------------------------------------------------------ the cells
def cell_lengths(task: Any, bucket: tuple[int, int], k: int) -> list[int]:
    """``k`` evenly spaced lengths of ``bucket`` that ``task`` (a depth group) admits."""
    lo, hi = bucket
    ok = [n for n in range(lo, hi + 1) if task.feasible_depths(n)]
    if not ok:
        return []
    idx = np.unique(np.linspace(0, len(ok) - 1, k).round().astype(int))
    return [ok[i] for i in idx]


def test_cells(table: dict) -> list[dict]:
    """The fixed test strings: one dict per cell with its batches (inputs, targets, task)."""
    from monoidlab.tasks import ListOps

    cells = []
    for dlo, dhi in table["depths"]:
        task = ListOps(min_depth=dlo, max_depth=dhi)
        for bucket in table["buckets"]:
            name = f"L {bucket[0]}-{bucket[1]}, depth {dlo}-{dhi}"
            rng = np.random.default_rng([table["eval_seed"], zlib.crc32(name.encode())])
            batches = [task.sample(rng, table["per_length"], n)
                       for n in cell_lengths(task, tuple(bucket), table["lengths"])]
            if not batches:  # e.g. depth <= 3 cannot reach 201 tokens with <= 5 arguments
                continue
            cells.append({"name": name, "bucket": list(bucket), "depth": [dlo, dhi],
                          "task": task, "batches": batches})
    return cells


def token_counts(inputs: np.ndarray, vocab: int) -> np.ndarray:
    """(B, vocab) counts of each token per row (vectorised: one bincount over offset ids)."""
    b = inputs.shape[0]
    flat = (inputs + vocab * np.arange(b)[:, None]).ravel()
    return np.bincount(flat, minlength=b * vocab).reshape(b, vocab).astype(np.float64)


def baselines(cells: list[dict], n_train: int, seed: int) -> dict[str, dict]:
    """Per cell: the best constant's accuracy and a bag-of-tokens logistic regression's."""
    from sklearn.linear_model import LogisticRegression

    from monoidlab.tasks import LISTOPS_VOCAB, ListOps

    task, rng, xs, ys = ListOps(), np.random.default_rng([seed, 4242]), [], []
    lengths = [n for n in range(4, 101) if task.feasible_depths(n)]
    while sum(len(y) for y in ys) < n_train:
        tb = task.sample(rng, 32, int(rng.choice(lengths)))
        xs.append(token_counts(tb.inputs, len(LISTOPS_VOCAB)))
        ys.append(tb.targets[:, 0])
    x, y = np.concatenate(xs), np.concatenate(ys)
    # counts scaled by the length, plus the length itself: a bag-of-tokens model at any length
    feats = lambda c: np.c_[c / c.sum(1, keepdims=True), np.log(c.sum(1, keepdims=True))]  # noqa: E731
    clf = LogisticRegression(max_iter=2000).fit(feats(x), y)
    out = {}
    for cell in cells:
        labels = np.concatenate([b.targets[:, 0] for b in cell["batches"]])
        pred = np.concatenate([clf.predict(feats(token_counts(b.inputs, len(LISTOPS_VOCAB))))
                               for b in cell["batches"]])
        out[cell["name"]] = {"constant": float(np.bincount(labels).max() / len(labels)),
                             "count_only": float((pred == labels).mean()), "n": int(len(labels))}
    return out


# ------------------------------------------------------------------------------ one model
def score(model: Any, problem: Any, cells: list[dict]) -> dict[str, float]:
    """Accuracy of a trained model on every cell (the trainer's own correctness)."""
    import torch

    from monoidlab._util import eval_mode
    from monoidlab.evaluation.run import to_device

    device = next(model.parameters()).device
    out = {}
    with eval_mode(model), torch.no_grad():
        for cell in cells:
            correct = [problem.loss(model, to_device(problem.tape_batch(tb, cell["task"]),
                                                     device))[1].float().cpu()
                       for tb in cell["batches"]]
            out[cell["name"]] = float(torch.cat(correct).mean())
    return out


def run_one(name: str, entry: dict, base: dict, table: dict, cells: list[dict]) -> dict:
    """Train (or resume) one model, then score it on the cells: its ledger row."""
    import torch

    from monoidlab.training import load_checkpoint, train
    from monoidlab.training.parse import config_from_dict

    torch.set_num_threads(1)
    folder = ROOT / table["out"] / name  # an absolute out replaces ROOT (pathlib's join)
    keys = {**base, **entry, "seed": table["seed"]}
    cfg = config_from_dict(keys, name)
    if (folder / "results.json").is_file():
        res = json.loads((folder / "results.json").read_text())
    else:
        has = (folder / "checkpoint.pt").is_file()
        res = train(cfg, folder, resume=has, overwrite=not has, progress=False)
    model, _, problem, _ = load_checkpoint(folder)
    t0 = time.time()
    acc = score(model, problem, cells)
    return {"id": name, "model": entry["model"], "options": entry.get("model_options", {}),
            "assoc_weight": entry.get("assoc_weight", base.get("assoc_weight", 0.0)),
            "steps": cfg.steps, "batch_size": cfg.batch_size, "seed": table["seed"],
            "train_seconds": res["train_seconds"], "eval_seconds": round(time.time() - t0, 1),
            "parameters": sum(p.numel() for p in model.parameters()), "accuracy": acc}


# ------------------------------------------------------------------------------ the table
def results_table(ledger: dict[str, dict], base_row: dict | None, cfg: dict) -> str:
    """Rows: models (and the two baselines); columns: cells, then the wall times."""
    names = [f"L {b[0]}-{b[1]}, depth {d[0]}-{d[1]}" for d in cfg["table"]["depths"]
             for b in cfg["table"]["buckets"]]
    short = [n.replace("L ", "").replace(", depth ", " / d") for n in names]
    lines = ["| model | " + " | ".join(short) + " | params | train s | eval s |",
             "|---|" + "---|" * (len(names) + 3)]
    order = [k for k in cfg["models"] if k in ledger]
    for k in order:
        r = ledger[k]
        lines.append(f"| {k} | " + " | ".join(f"{r['accuracy'][n]:.3f}" if n in r["accuracy"]
                                              else "–" for n in names)
                     + f" | {r['parameters']:,} | {r['train_seconds']:.0f} | "
                     f"{r['eval_seconds']:.0f} |")
    if base_row:
        for kind, label in (("constant", "best constant (per cell)"),
                            ("count_only", "bag of tokens (logistic regression)")):
            lines.append(f"| {label} | " + " | ".join(f"{base_row[n][kind]:.3f}" if n in base_row
                                                      else "–" for n in names)
                         + " | | | |")
        lines.append(f"\nStrings per cell: {', '.join(str(base_row[n]['n']) if n in base_row else '0' for n in names)} "
                     "(in the columns' order; – : no string of the bucket has that depth). Lengths 4-100 at depth 1-6 are the training "
                     "distribution; every other cell is outside it.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", default=str(CONFIG))
    p.add_argument("--only", default=None, help="comma list of the config's model entries")
    p.add_argument("--table", action="store_true")
    p.add_argument("--write-docs", action="store_true")
    args = p.parse_args(argv)
    cfg = tomllib.loads(Path(args.config).read_text())
    table, base = cfg["table"], cfg["base"]
    ledger_path = ROOT / table["ledger"]  # relative to the repository, or absolute
    ledger = read_ledger(ledger_path)
    if args.table:
        from monoidlab._util import write_section

        text = results_table(ledger, ledger.get("_baselines", {}).get("cells"), cfg)
        print(text)
        if args.write_docs:
            write_section(ROOT / "docs" / "results.md", "listops table",
                          "## ListOps at CPU scale\n\n" + text, title="Results")
        return 0
    names = list(cfg["models"]) if args.only is None else args.only.split(",")
    unknown = [n for n in names if n not in cfg["models"]]
    if unknown:
        p.error(f"unknown model entries {unknown}; the config has {list(cfg['models'])}")
    t0 = time.time()
    cells = test_cells(table)
    print(f"{len(cells)} cells, {sum(len(b) for c in cells for b in c['batches'])} strings "
          f"({time.time() - t0:.0f} s to draw)", flush=True)
    if "_baselines" not in ledger:
        ledger["_baselines"] = {"id": "_baselines",
                                "cells": baselines(cells, table["baseline_strings"], table["seed"])}
        write_ledger(ledger_path, ledger)
    for n in names:
        if n in ledger:
            continue
        row = run_one(n, cfg["models"][n], base, table, cells)
        # re-read first: two processes may train different entries into one ledger (--only)
        ledger = {**read_ledger(ledger_path), n: row}
        write_ledger(ledger_path, ledger)
        print(json.dumps({k: row[k] for k in ("id", "train_seconds", "eval_seconds")}), flush=True)
    print(results_table(ledger, ledger["_baselines"]["cells"], cfg))
    return 0


if __name__ == "__main__":
    sys.exit(main())
