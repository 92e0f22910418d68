"""The ListOps table (configs/listops-table.toml): every ListOps model of the MLP-LDRU paper at
CPU scale, accuracy by length bucket and depth beside a constant and a count-only baseline.

    monoidlab study listops [--only NAME,...] [--workers 2]   # train + score each model
    monoidlab study listops --table [--write-docs]            # the table, from the ledger only

Each model of the config is trained with the config's ``[base]`` recipe plus its own entry (a
killed run resumes from its checkpoint), then scored on the same fixed strings as every other
model: for each length bucket x depth group, ``per_length`` strings at each of ``lengths`` evenly
spaced lengths of the bucket that admit the depth group. One ledger line per finished model
(``docs/data/listops-table.jsonl``, sorted), so a rerun skips what is done. The baselines (the
ledger's row ``_baselines``, the first run of the plan) are the best constant answer per cell
(measured on the cell's own strings: no constant model does better) and a bag-of-tokens
logistic regression fitted on training-split strings.

>>> cell_name((101, 200), (4, 6))
'L 101-200, depth 4-6'
"""

from __future__ import annotations

import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from monoidlab.errors import ConfigError
from monoidlab.studies.runner import Study, StudyConfig

BASELINES = "_baselines"  # the ledger row of the two baselines (not a model of the config)


# ------------------------------------------------------------------------------ the cells
def cell_name(bucket: tuple[int, int] | list[int], depth: tuple[int, int] | list[int]) -> str:
    """A cell's name: its length bucket and depth group."""
    return f"L {bucket[0]}-{bucket[1]}, depth {depth[0]}-{depth[1]}"


def cell_lengths(task: Any, bucket: tuple[int, int], k: int) -> list[int]:
    """``k`` evenly spaced lengths of ``bucket`` that ``task`` (a depth group) admits."""
    lo, hi = bucket
    ok = [n for n in range(lo, hi + 1) if task.feasible_depths(n)]
    if not ok:
        return []
    idx = np.unique(np.linspace(0, len(ok) - 1, k).round().astype(int))
    return [ok[i] for i in idx]


def cells_of(table: dict) -> list[dict]:
    """The fixed test strings: one dict per cell with its batches (inputs, targets, task)."""
    from monoidlab.tasks import ListOps

    cells = []
    for dlo, dhi in table["depths"]:
        task = ListOps(min_depth=dlo, max_depth=dhi)
        for bucket in table["buckets"]:
            name = cell_name(bucket, (dlo, dhi))
            rng = np.random.default_rng([table["eval_seed"], zlib.crc32(name.encode())])
            batches = [task.sample(rng, table["per_length"], n)
                       for n in cell_lengths(task, tuple(bucket), table["lengths"])]
            if not batches:  # e.g. depth <= 3 cannot reach 201 tokens with <= 5 arguments
                continue
            cells.append({"name": name, "bucket": list(bucket), "depth": [dlo, dhi],
                          "task": task, "batches": batches})
    return cells


def token_counts(inputs: np.ndarray, vocab: int) -> np.ndarray:
    """(B, vocab) counts of each token per row (vectorised: one bincount over offset ids).

    >>> token_counts(np.array([[0, 1, 1], [2, 2, 2]]), 4).tolist()
    [[1.0, 2.0, 0.0, 0.0], [0.0, 0.0, 3.0, 0.0]]
    """
    b = inputs.shape[0]
    flat = (inputs + vocab * np.arange(b)[:, None]).ravel()
    return np.bincount(flat, minlength=b * vocab).reshape(b, vocab).astype(np.float64)


def baselines(cells: list[dict], n_train: int, seed: int) -> dict[str, dict]:
    """Per cell: the best constant's accuracy and a bag-of-tokens logistic regression's."""
    from sklearn.linear_model import LogisticRegression

    from monoidlab.tasks import LISTOPS_VOCAB, ListOps

    task, rng = ListOps(), np.random.default_rng([seed, 4242])
    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    lengths = [n for n in range(4, 101) if task.feasible_depths(n)]
    while sum(len(y) for y in ys) < n_train:
        tb = task.sample(rng, 32, int(rng.choice(lengths)))
        xs.append(token_counts(tb.inputs, len(LISTOPS_VOCAB)))
        ys.append(tb.targets[:, 0])
    x, y = np.concatenate(xs), np.concatenate(ys)

    def feats(c: np.ndarray) -> np.ndarray:
        # counts scaled by the length, plus the length itself: a bag-of-tokens model at any
        # length
        return np.c_[c / c.sum(1, keepdims=True), np.log(c.sum(1, keepdims=True))]

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


def config_of(name: str, data: dict) -> Any:
    """The run config of the model entry ``name``: ``[base]``, its entry, the table's seed."""
    from monoidlab.training.parse import config_from_dict

    return config_from_dict({**data["base"], **data["models"][name],
                             "seed": data["table"]["seed"]}, name)


def run_one(run: dict, config: StudyConfig) -> dict:
    """Train (or resume) one model, then score it on the cells: its ledger row (the baselines'
    row for the run ``_baselines``)."""
    import torch

    from monoidlab.studies.runner import train_or_resume
    from monoidlab.training import load_checkpoint

    torch.set_num_threads(1)
    table, name = config.data["table"], run["id"]
    cells = cells_of(table)
    if name == BASELINES:
        return {"id": BASELINES,
                "cells": baselines(cells, table["baseline_strings"], table["seed"])}
    entry, base = config.data["models"][name], config.data["base"]
    cfg = config_of(name, config.data)
    folder = Path(run["folder"])
    res = train_or_resume(cfg, folder)
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
    names = [cell_name(b, d) for d in cfg["table"]["depths"] for b in cfg["table"]["buckets"]]
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
        counts = ", ".join(str(base_row[n]["n"]) if n in base_row else "0" for n in names)
        lines.append(f"\nStrings per cell: {counts} (in the columns' order; – : no string of the "
                     "bucket has that depth). Lengths 4-100 at depth 1-6 are the training "
                     "distribution; every other cell is outside it.")
    return "\n".join(lines)


# ------------------------------------------------------------------------------ the study
def _read(path: Path, data: dict) -> tuple[str, str]:
    missing = [t for t in ("table", "base", "models") if not isinstance(data.get(t), dict)]
    if missing:
        raise ConfigError(f"{path}: the ListOps table needs the tables {missing}")
    table = data["table"]
    gone = [k for k in ("ledger", "out", "seed", "eval_seed", "buckets", "depths", "lengths",
                        "per_length", "baseline_strings") if k not in table]
    if gone:
        raise ConfigError(f"{path}: [table] is missing {', '.join(gone)}")
    return table["ledger"], table["out"]


def _plan(config: StudyConfig, ledger: dict, only: str | None = None) -> list[dict]:
    """The baselines first, then each model entry in the config's order (``only``: a comma
    list of entries)."""
    models = config.data["models"]
    names = list(models) if only is None else [n for n in only.split(",") if n]
    unknown = [n for n in names if n not in models]
    if unknown:
        raise ConfigError(f"{config.path}: unknown model entries {unknown}; the config has "
                          f"{list(models)}")
    return [{"id": BASELINES}] + [{"id": n, "folder": str(config.out / n)} for n in names]


def _sections(config: StudyConfig, ledger: dict) -> dict[str, str]:
    text = results_table(ledger, ledger.get(BASELINES, {}).get("cells"), config.data)
    return {"listops table": "## ListOps at CPU scale\n\n" + text}


STUDY = Study(name="listops", plan=_plan, run=run_one, sections=_sections, read=_read,
              layout="sorted", default_config="listops-table.toml", options=("only",),
              summary="the MLP-LDRU paper's ListOps models at CPU scale, by length and depth")
