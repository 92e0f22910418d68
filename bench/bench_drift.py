"""Do a tree model's node states for one EC stay put as the tree gets deeper?

Usage: python bench/bench_drift.py RUN_DIR... [--ref-level 4] [--strings 16] [--min-nodes 20]
       python bench/bench_drift.py RUN_DIR... --predict [--strings 8]

``--predict``: the package's drift diagnostic (:func:`monoidlab.probing.drift.drift`: per level,
the within-class spread against half the smallest gap between EC centroids at the deepest
training level, and the level where spread first overtakes it) beside the run's own error rate
by tree depth (from its results.json: 1 − accuracy per test length, grouped by
ceil(log2 L), every kind), and the first depth whose error rate passes 1%.

For each run (a tree-model run on a language: mlp-ldru, pr-lstm), the internal nodes of fresh
test-distribution strings of lengths 130..500 (``--strings`` per length and kind, lengths 130,
250, 300, 480, 500) are grouped by (true EC, tree level), full nodes only (a node of level k
spanning 2^k symbols, so that every level's nodes are built by the same number of
compositions). Per level the script prints, over the ECs with at least ``--min-nodes`` nodes
at that level and at the reference level:

- *drift*: the distance of the EC's centroid at that level from its centroid at
  ``--ref-level`` (median and maximum over ECs);
- *spread*: the mean distance of the EC's nodes from their own centroid at that level;

and once, the smallest distance between two EC centroids at the reference level (how far
apart the classes are). A model whose states represent the monoid has no drift; one whose
states move further from level to level meets, past the deepest training level, states its
operator was never trained on. Inference only, one thread.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from monoidlab._util import inference
from monoidlab.errors import MonoidlabError
from monoidlab.probing.embeddings import node_embeddings
from monoidlab.training.trainer import load_checkpoint

LENGTHS = (130, 250, 300, 480, 500)


def drift_table(X: np.ndarray, ec: np.ndarray, level: np.ndarray, ref_level: int,
                min_nodes: int) -> tuple[dict[int, tuple[float, float, float, int]], float]:
    """({level: (median drift, max drift, mean spread, n ECs)}, smallest centroid gap at
    ``ref_level``) over the ECs with ``min_nodes`` nodes at both levels.

    >>> X = np.array([[0., 0], [0, 0], [1, 0], [1, 0], [5, 5], [5, 5], [7, 5], [7, 5]])
    >>> ec, lv = np.array([0, 0, 0, 0, 1, 1, 1, 1]), np.array([1, 1, 2, 2, 1, 1, 2, 2])
    >>> table, gap = drift_table(X, ec, lv, 1, 2)
    >>> table[2], round(gap, 3)
    ((1.5, 2.0, 0.0, 2), 7.071)
    """
    groups: dict[tuple[int, int], np.ndarray] = {}
    for e in np.unique(ec):
        for k in np.unique(level):
            sel = (ec == e) & (level == k)
            if sel.sum() >= min_nodes:
                groups[int(e), int(k)] = X[sel]
    ref = {e: g.mean(0) for (e, k), g in groups.items() if k == ref_level}
    if len(ref) < 2:
        raise SystemExit(f"fewer than two ECs with {min_nodes} full nodes at level {ref_level}")
    cents = np.stack(list(ref.values()))
    gaps = np.linalg.norm(cents[:, None] - cents[None], axis=-1)
    gap = float(gaps[~np.eye(len(cents), dtype=bool)].min())
    out = {}
    for k in sorted({k for _, k in groups}):
        d, s = [], []
        for e in ref:
            g = groups.get((e, k))
            if g is not None:
                c = g.mean(0)
                d.append(np.linalg.norm(c - ref[e]))
                s.append(np.linalg.norm(g - c, axis=1).mean())
        if d:
            out[k] = (float(np.median(d)), float(np.max(d)), float(np.mean(s)), len(d))
    return out, gap


def run_drift(run: Path, ref_level: int, strings: int, min_nodes: int, seed: int = 1):
    """:func:`drift_table` of a run folder's weights on fresh strings of its test kinds
    (``strings`` per length of :data:`LENGTHS` and kind, seed stream ``cfg.seed + seed``)."""
    model, cfg, problem, _ = load_checkpoint(run)
    model.eval()
    if getattr(problem, "language", None) is None:
        raise SystemExit(f"{run}: needs a run on a language")
    toks, lens = [], []
    for kind in problem.check_kinds(cfg.eval_kinds):
        for L in problem.lengths(list(LENGTHS)):
            b = problem.kind_batch(problem.eval_rng(cfg.seed + seed, kind, int(L)), int(L),
                                   strings, kind)
            if not len(b["targets"]):
                continue
            toks.append(np.pad(b["tokens"][:, :L], ((0, 0), (0, max(LENGTHS) - L))))
            lens.append(b["lengths"])
    emb = node_embeddings(model, problem.language, np.concatenate(toks), np.concatenate(lens))
    m = emb.meta
    full = (m.span_length.values == 2 ** m.level.values)
    return drift_table(emb.X[full], m.ec.values[full], m.level.values[full], ref_level,
                       min_nodes)


def errors_by_depth(results: dict) -> dict[int, float]:
    """``{depth: mean error rate}`` over every kind's test lengths of a run's results.json.

    >>> errors_by_depth({"accuracy": {"paper": {"41": 1.0, "100": 0.9, "300": 0.5}}})
    {6: 0.0, 7: 0.1, 9: 0.5}
    """
    by: dict[int, list[float]] = {}
    for per_length in results.get("accuracy", {}).values():
        for L, a in per_length.items():
            if a is not None and a == a:
                by.setdefault((int(L) - 1).bit_length(), []).append(1.0 - float(a))
    return {d: round(float(np.mean(v)), 4) for d, v in sorted(by.items())}


def predict(run: Path, strings: int) -> str:
    """The drift diagnostic's predicted failure level beside the run's errors by depth."""
    from monoidlab.probing.drift import drift

    d = drift(run, strings=strings)
    errors = errors_by_depth(json.loads((run / "results.json").read_text()))
    first = next((k for k, e in errors.items() if e > 0.01), None)
    return (d.text() + "\n  error rate by depth (results.json, every kind): "
            + ", ".join(f"{k}: {e:.3f}" for k, e in errors.items())
            + f"\n  predicted failure level {d.predicted_failure_level}; first depth with "
              f"error rate > 1%: {first}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("runs", nargs="+")
    p.add_argument("--ref-level", type=int, default=4)
    p.add_argument("--strings", type=int, default=16)
    p.add_argument("--min-nodes", type=int, default=20)
    p.add_argument("--predict", action="store_true",
                   help="the drift diagnostic's predicted failure level against the run's "
                        "errors by depth")
    args = p.parse_args(argv)
    with inference():  # one thread, no gradients; the caller's settings come back (tests call main)
        if args.predict:
            for run in map(Path, args.runs):
                print(f"{run}:\n{predict(run, args.strings)}")
            return 0
        return _main(args)


def _main(args) -> int:
    for run in map(Path, args.runs):
        try:
            table, gap = run_drift(run, args.ref_level, args.strings, args.min_nodes)
        except MonoidlabError as e:  # a missing or foreign run folder: one line, no traceback
            sys.exit(f"{run}: {e}")
        name = json.loads((run / "config.json").read_text()).get("language")
        print(f"{run} ({name}): smallest gap between EC centroids at level {args.ref_level}: "
              f"{gap:.3f}")
        print("  level  drift median / max  spread  ECs")
        for k, (med, mx, spread, n) in table.items():
            print(f"  {k:>5}  {med:>12.3f} / {mx:<5.3f}  {spread:>6.3f}  {n:>3}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
