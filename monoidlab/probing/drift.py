"""Drift: do a tree model's node states for one EC stay in their class as the tree deepens?

Per tree level ℓ, the model's *full* nodes (a node of level ℓ spanning 2^ℓ symbols, so that
every node of a level is built by the same number of compositions) are grouped by their true
EC. ``spread_ℓ`` is the median distance of a node from its EC's centroid at that level, ``gap``
the smallest distance between two EC centroids at a reference level (by default the deepest
level that training strings reach), and ``drift_ℓ`` the median distance of an EC's centroid at
ℓ from its centroid at the reference level. Once the states of one class spread over more than
half the gap between two classes, a nearest-centroid reading confuses them: the *predicted
failure level* is the first ℓ with ``spread_ℓ > gap / 2`` (Chung, Choi & Kim 2026: accuracy
collapses where within-class spread overtakes between-class separation). A depth-exact model
(snapped states, the transformation tree) has spread 0 at every level and no predicted
failure.

Strings: the run's training lengths and some test lengths (130..500 by default), of every
test kind, so that the levels training reaches and those only tests reach are side by side.

Example
-------
>>> import numpy as np
>>> X = np.array([[0., 0], [0, 0], [0, 1], [0, 1.4], [5, 0], [5, 0], [5, 1], [5, 3]])
>>> ec, lv = np.array([0, 0, 0, 0, 1, 1, 1, 1]), np.array([1, 1, 2, 2, 1, 1, 2, 2])
>>> rows, gap = drift_by_level(X, ec, lv, ref_level=1, min_nodes=2)
>>> gap, [r["spread"] for r in rows], predicted_failure_level(rows, gap)
(5.0, [0.0, 0.6], None)
>>> predicted_failure_level(rows, 1.0)
2
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from monoidlab._checks import scalar_args
from monoidlab.errors import InputError

__all__ = ["Drift", "drift", "drift_by_level", "predicted_failure_level", "TEST_LENGTHS"]

#: test lengths whose strings reach levels 8 and 9
TEST_LENGTHS = (130, 250, 300, 480, 500)


def drift_by_level(X: np.ndarray, ec: np.ndarray, level: np.ndarray, ref_level: int,
                   min_nodes: int = 20) -> tuple[list[dict[str, Any]], float]:
    """``(rows, gap)``: one row per level (``level``, ``spread``, ``drift``, ``ecs``, ``nodes``)
    over the ECs with at least ``min_nodes`` nodes there, and the smallest distance between
    two EC centroids at ``ref_level`` (NaN with fewer than two ECs there)."""
    X, ec, level = np.asarray(X, float), np.asarray(ec), np.asarray(level)
    if not (len(X) == len(ec) == len(level)):
        raise InputError(f"drift: X, ec and level need one row per node, got {len(X)}, "
                         f"{len(ec)}, {len(level)}")
    groups: dict[tuple[int, int], np.ndarray] = {}
    for e, k in set(zip(ec.tolist(), level.tolist())):
        sel = (ec == e) & (level == k)
        if sel.sum() >= min_nodes:
            groups[int(e), int(k)] = X[sel]
    ref = {e: g.mean(0) for (e, k), g in groups.items() if k == ref_level}
    gap = float("nan")
    if len(ref) >= 2:
        c = np.stack(list(ref.values()))
        d = np.linalg.norm(c[:, None] - c[None], axis=-1)
        gap = float(d[~np.eye(len(c), dtype=bool)].min())
    rows = []
    for k in sorted({k for _, k in groups}):
        own = {e: g for (e, kk), g in groups.items() if kk == k}
        dist = np.concatenate([np.linalg.norm(g - g.mean(0), axis=1) for g in own.values()])
        moved = [np.linalg.norm(g.mean(0) - ref[e]) for e, g in own.items() if e in ref]
        rows.append({"level": k, "spread": round(float(np.median(dist)), 4),
                     "drift": round(float(np.median(moved)), 4) if moved else None,
                     "ecs": len(own), "nodes": int(sum(len(g) for g in own.values()))})
    return rows, gap


def predicted_failure_level(rows: list[dict[str, Any]], gap: float) -> int | None:
    """The first level whose spread exceeds half the gap (None: none does, or no gap)."""
    if not np.isfinite(gap):
        return None
    return next((r["level"] for r in rows if r["spread"] > gap / 2), None)


@dataclass(frozen=True)
class Drift:
    """:func:`drift`'s result: per level on training-length and test-length strings."""

    model: str
    language: str
    ref_level: int
    gap: float
    train: list[dict[str, Any]]
    test: list[dict[str, Any]]
    deepest_training_level: int
    predicted_failure_level: int | None
    train_lengths: str
    test_lengths: str
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    def text(self) -> str:
        where = ("none: spread stays within half the gap at every level"
                 if self.predicted_failure_level is None else
                 f"level {self.predicted_failure_level} (deepest training level "
                 f"{self.deepest_training_level})")
        lines = [f"drift of {self.model} on {self.language}: smallest gap between EC centroids "
                 f"at level {self.ref_level}: {self.gap:.3f}; predicted failure level: {where}",
                 f"  strings (train: lengths {self.train_lengths}; test: {self.test_lengths}); "
                 "full nodes only; spread and drift are medians",
                 "  strings  level  spread  drift   ECs  nodes"]
        for name, rows in (("train", self.train), ("test", self.test)):
            for r in rows:
                dr = "-" if r["drift"] is None else f"{r['drift']:.3f}"
                flag = "  > gap/2" if np.isfinite(self.gap) and r["spread"] > self.gap / 2 else ""
                lines.append(f"  {name:<7} {r['level']:>6}  {r['spread']:.3f}  {dr:>5}  "
                             f"{r['ecs']:>4}  {r['nodes']:>5}{flag}")
        return "\n".join(lines + [f"  ({n})" for n in self.notes])

    def __str__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(self.text())}</pre>"


def _strings(problem: Any, cfg: Any, lengths: Any, n: int, seed: int
             ) -> tuple[np.ndarray, np.ndarray]:
    toks, lens = [], []
    width = int(max(lengths))
    for kind in problem.check_kinds(cfg.eval_kinds if cfg is not None else "all"):
        for L in problem.lengths(list(lengths)):
            b = problem.kind_batch(problem.eval_rng(seed, kind, int(L)), int(L), n, kind)
            if len(b["targets"]):
                toks.append(np.pad(b["tokens"][:, :L], ((0, 0), (0, width - L))))
                lens.append(b["lengths"])
    if not toks:
        raise InputError("drift: no test string of these lengths")
    return np.concatenate(toks), np.concatenate(lens)


@scalar_args
def drift(model_or_run: Any, language: Any = None, *, train_lengths: Any = None,
          test_lengths: Any = TEST_LENGTHS, strings: int = 16, ref_level: int | None = None,
          min_nodes: int = 20, seed: int = 1, device: str | None = None) -> Drift:
    """Spread, gap and drift of a tree model's node states per level (see the module
    docstring), on ``strings`` fresh strings per length and test kind of the training
    lengths (default: the run's, else 1..40) and of ``test_lengths``."""
    from monoidlab.geometry import length_array
    from monoidlab.probing._target import resolve_target
    from monoidlab.probing.embeddings import node_embeddings
    from monoidlab.training.problems import LanguageProblem

    target = resolve_target(model_or_run, language, device)
    model, lang, cfg = target.model, target.language, target.config
    train = length_array(train_lengths if train_lengths is not None else (
        cfg.train_lengths if cfg is not None else range(1, 41)))
    test = length_array(test_lengths)
    deepest = int(max(train) - 1).bit_length()
    ref = deepest if ref_level is None else int(ref_level)
    problem = LanguageProblem(lang)
    run_seed = (cfg.seed if cfg is not None else 0) + seed
    parts = {}
    for name, lengths in (("train", train), ("test", test)):
        tokens, lens = _strings(problem, cfg, lengths, strings, run_seed)
        emb = node_embeddings(model, lang, tokens, lens)
        meta = emb.meta
        full = meta.span_length.values == 2 ** meta.level.values
        parts[name] = (emb.X[full], meta.ec.values[full], meta.level.values[full])
    # the gap: between EC centroids at the reference level, over both sets of strings
    X = np.concatenate([p[0] for p in parts.values()])
    ec = np.concatenate([p[1] for p in parts.values()])
    lv = np.concatenate([p[2] for p in parts.values()])
    _, gap = drift_by_level(X, ec, lv, ref, min_nodes)
    rows = {name: drift_by_level(*parts[name], ref, min_nodes)[0] for name in parts}
    notes = []
    if not np.isfinite(gap):
        notes.append(f"fewer than two ECs with {min_nodes} full nodes at level {ref}: no gap")
    from monoidlab.geometry import range_text

    # the prediction reads the test strings: they hold full nodes at every level
    return Drift(cfg.model if cfg is not None else type(model).__name__, lang.name, ref, gap,
                 rows["train"], rows["test"], deepest,
                 predicted_failure_level(rows["test"], gap), range_text(train),
                 range_text(test), notes)
