"""Do a tree model's node states for one EC stay put as the tree gets deeper? (configs/drift.toml)

    monoidlab study drift [--runs RUN[,RUN...]]            # measures the runs the ledger lacks
    monoidlab study drift --table                          # every measured run, from the ledger
    monoidlab study drift --action predict [--runs RUN]    # the drift diagnostic vs the errors

For each run (a tree-model run on a language: mlp-ldru, pr-lstm), the internal nodes of fresh
test-distribution strings of lengths 130..500 (``strings`` per length and kind, lengths 130,
250, 300, 480, 500) are grouped by (true EC, tree level), full nodes only (a node of level k
spanning 2^k symbols, so that every level's nodes are built by the same number of
compositions). Per level the row holds, over the ECs with at least ``min_nodes`` nodes at that
level and at the reference level ``ref_level``:

- *drift*: the distance of the EC's centroid at that level from its centroid at the reference
  level (median and maximum over ECs);
- *spread*: the mean distance of the EC's nodes from their own centroid at that level;

and once, the smallest distance between two EC centroids at the reference level (how far
apart the classes are). A model whose states represent the monoid has no drift; one whose
states move further from level to level meets, past the deepest training level, states its
operator was never trained on. One ledger row per run (docs/data/drift.jsonl). Inference only,
one thread.

``--action predict``: the package's drift diagnostic (:func:`monoidlab.probing.drift.drift`:
per level, the within-class spread against half the smallest gap between EC centroids at the
deepest training level, and the level where spread first overtakes it) beside the run's own
error rate by tree depth (from its results.json: 1 − accuracy per test length, grouped by
ceil(log2 L), every kind), and the first depth whose error rate passes 1%; printed, not
recorded.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from monoidlab.errors import ConfigError
from monoidlab.studies.fresh_test import run_folders, run_id
from monoidlab.studies.runner import Study, StudyConfig

LEDGER = "docs/data/drift.jsonl"
LENGTHS = (130, 250, 300, 480, 500)
SETTINGS = ("ref_level", "strings", "min_nodes")


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
        raise ConfigError(f"fewer than two ECs with {min_nodes} full nodes at level {ref_level}")
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


def run_drift(run: Path, ref_level: int, strings: int, min_nodes: int,
              seed: int = 1) -> tuple[dict[int, tuple[float, float, float, int]], float]:
    """:func:`drift_table` of a run folder's weights on fresh strings of its test kinds
    (``strings`` per length of :data:`LENGTHS` and kind, seed stream ``cfg.seed + seed``)."""
    from monoidlab._util import inference
    from monoidlab.errors import MonoidlabError
    from monoidlab.probing.embeddings import node_embeddings
    from monoidlab.training.trainer import load_checkpoint

    try:  # a missing or foreign run folder: one line naming it
        model, cfg, problem, _ = load_checkpoint(run)
    except MonoidlabError as e:
        raise ConfigError(f"{run}: {e}") from None
    model.eval()
    if getattr(problem, "language", None) is None:
        raise ConfigError(f"{run}: needs a run on a language")
    toks, lens = [], []
    for kind in problem.check_kinds(cfg.eval_kinds):
        for L in problem.lengths(list(LENGTHS)):
            b = problem.kind_batch(problem.eval_rng(cfg.seed + seed, kind, int(L)), int(L),
                                   strings, kind)
            if not len(b["targets"]):
                continue
            toks.append(np.pad(b["tokens"][:, :L], ((0, 0), (0, max(LENGTHS) - L))))
            lens.append(b["lengths"])
    with inference():  # one thread, no gradients; the caller's settings come back
        emb = node_embeddings(model, problem.language, np.concatenate(toks),
                              np.concatenate(lens))
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
    from monoidlab._util import inference
    from monoidlab.probing.drift import drift

    with inference():
        d = drift(run, strings=strings)
    errors = errors_by_depth(json.loads((run / "results.json").read_text(encoding="utf-8")))
    first = next((k for k, e in errors.items() if e > 0.01), None)
    return (d.text() + "\n  error rate by depth (results.json, every kind): "
            + ", ".join(f"{k}: {e:.3f}" for k, e in errors.items())
            + f"\n  predicted failure level {d.predicted_failure_level}; first depth with "
              f"error rate > 1%: {first}")


def report(row: dict) -> str:
    """One run's drift table, as printed."""
    lines = [f"{row['id']} ({row['language']}): smallest gap between EC centroids at level "
             f"{row['ref_level']}: {row['gap']:.3f}", "  level  drift median / max  spread  ECs"]
    for k, med, mx, spread, n in row["levels"]:
        lines.append(f"  {k:>5}  {med:>12.3f} / {mx:<5.3f}  {spread:>6.3f}  {n:>3}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------ the study
def _read(path: Path, data: dict) -> tuple[str, str]:
    settings = data.get("drift")
    if not isinstance(settings, dict) or any(k not in settings for k in SETTINGS):
        raise ConfigError(f"{path}: a drift study needs [drift] with {', '.join(SETTINGS)}")
    return data.get("study", {}).get("ledger", LEDGER), "runs"  # out: unused


def _plan(config: StudyConfig, ledger: dict, runs: str | None = None) -> list[dict]:
    """Every run folder of the config (or of ``runs``), in the order given."""
    return [{"id": run_id(config, r), "folder": str(r)}
            for r in run_folders(config, runs, finished=False)]


def run_one(run: dict, config: StudyConfig) -> dict:
    """Measure one run: its ledger row."""
    s = config.data["drift"]
    folder = Path(run["folder"])
    t0 = time.perf_counter()
    table, gap = run_drift(folder, s["ref_level"], s["strings"], s["min_nodes"])
    name = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("language")
    row = {"id": run["id"], "language": name, "ref_level": s["ref_level"], "gap": gap,
           "levels": [[k, *v] for k, v in table.items()],
           "wall_s": round(time.perf_counter() - t0, 1)}
    print(report(row), flush=True)
    return row


def _predict(config: StudyConfig, runs: str | None = None) -> str:
    """``--action predict``: the diagnostic beside the errors by depth, per run (not recorded)."""
    return "\n".join(f"{run_id(config, r)}:\n{predict(r, config.data['drift']['strings'])}"
                     for r in run_folders(config, runs))


def _sections(config: StudyConfig, ledger: dict) -> dict[str, str]:
    if not ledger:
        raise ConfigError(f"{config.ledger}: no run measured yet (`monoidlab study drift --runs "
                          "RUN` measures one)")
    runs = config.data.get("study", {}).get("runs", [])
    order = {r: i for i, r in enumerate(runs)}  # the config's runs first, in its order
    rows = sorted(ledger.values(), key=lambda r: (order.get(r["id"], len(order)), r["id"]))
    text = "\n".join(report(r) for r in rows)
    return {config.data.get("study", {}).get("section", "drift"): "```\n" + text + "\n```"}


STUDY = Study(name="drift", plan=_plan, run=run_one, sections=_sections, read=_read,
              default_config="drift.toml", options=("runs",), actions={"predict": _predict},
              summary="how far an EC's node states move with the tree's depth")
