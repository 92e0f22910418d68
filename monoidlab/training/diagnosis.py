"""Why a run failed: data, depth or budget.

A strict verdict says *that* a model fails; a user also needs to know *what to change*. For a
language run that is not solved, :func:`diagnose` re-draws the failing test sets (the very
strings of the evaluation: same seed, kind and length) and answers, in order:

1. **budget**: does the model fit its own training lengths? (a fresh test at the training
   lengths, every kind). If not, more steps or a larger model come before anything else;
2. **data**: do the wrong strings need compositions that the training layout never shows at
   their tree level (exactly: :func:`~monoidlab.level_coverage.level_coverage`), or that the
   run's own sampled training strings showed fewer than k times (when their counts are given)?
   The wrong strings are compared with the right strings of the same lengths, so a composition
   that every long string needs does not count as evidence;
3. **depth**: are the errors at tree depths beyond the deepest training level?
4. otherwise **training**: the model fits, the data shows every composition at every level,
   and it still fails: the learned operator does not generalise (probe it).

Example
-------
>>> import monoidlab as ml
>>> from monoidlab.training.diagnosis import depth_of
>>> [depth_of(L) for L in (1, 2, 3, 40, 41, 500)]
[0, 1, 2, 6, 6, 9]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from monoidlab.geometry import buffer_size, range_text

if TYPE_CHECKING:
    from monoidlab.evaluation.result import Evaluation
    from monoidlab.training.config import RunConfig

__all__ = ["Diagnosis", "diagnose", "depth_of"]

#: At most this many failing (kind, length) sets are re-drawn, the worst first.
MAX_SETS = 24


def depth_of(length: int) -> int:
    """Levels of internal nodes in the balanced tree of a string of ``length`` (at offset 0)."""
    return int(np.log2(buffer_size(int(length)))) if length > 1 else 0


@dataclass
class Diagnosis:
    """What :func:`diagnose` found; ``cause`` is ``budget``, ``data``, ``depth``, ``training``
    or ``solved``, ``reasons`` the lines that support it."""

    cause: str
    reasons: list[str]
    fit: dict[str, Any] = field(default_factory=dict)
    depth: list[dict[str, Any]] = field(default_factory=list)
    uncovered: list[dict[str, Any]] = field(default_factory=list)
    wrong_strings: int = 0
    wrong_with_uncovered: int = 0
    right_with_uncovered: float = 0.0
    deepest_training_level: int | None = None
    wrong_with_uncovered_anywhere: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"cause": self.cause, "reasons": self.reasons, "fit": self.fit,
                "depth": self.depth, "uncovered": self.uncovered,
                "wrong_strings": self.wrong_strings,
                "wrong_with_uncovered": self.wrong_with_uncovered,
                "right_with_uncovered": self.right_with_uncovered,
                "deepest_training_level": self.deepest_training_level,
                "wrong_with_uncovered_anywhere": self.wrong_with_uncovered_anywhere}

    def text(self) -> str:
        return "\n".join([f"diagnosis: {self.cause}"] + [f"  {r}" for r in self.reasons])


def _failing(ev: Evaluation) -> list[tuple[str, int, float]]:
    rows = [(k, int(L), float(a)) for k, per in ev.accuracy.items() for L, a in per.items()
            if a < ev.threshold]
    return sorted(rows, key=lambda r: r[2])


def _errors_by_depth(ev: Evaluation) -> list[dict[str, Any]]:
    by: dict[int, list[float]] = {}
    for per in ev.accuracy.values():
        for L, a in per.items():
            by.setdefault(depth_of(int(L)), []).append(1.0 - float(a))
    return [{"depth": d, "error_rate": round(float(np.mean(v)), 5), "sets": len(v)}
            for d, v in sorted(by.items())]


def diagnose(model: Any, cfg: RunConfig, problem: Any, ev: Evaluation, *, seed: int = 0,
             device: Any = None, fit_samples: int = 16,
             sampled: np.ndarray | None = None, k: int = 1) -> Diagnosis:
    """Diagnose the evaluation ``ev`` (test seed ``seed``) of ``model`` trained with ``cfg``.

    ``sampled``: per-level composition counts ``(levels, |M|, |M|)`` of the run's training
    strings (:func:`~monoidlab.training.data_coverage.training_coverage` draws them); with it,
    a composition seen fewer than ``k`` times at its level counts as missing too."""
    from monoidlab.compositions import composition_counts
    from monoidlab.evaluation import evaluate_kinds
    from monoidlab.level_coverage import level_coverage
    from monoidlab.models import model_spec

    if ev.solved:
        return Diagnosis("solved", ["every kind is at or above the threshold at every length"])
    lang = problem.language
    schedule = model_spec(cfg.model).schedule
    reasons: list[str] = []
    # 1. budget: the training lengths, tested afresh
    train = problem.lengths(cfg.train_lengths)
    fit_ev = evaluate_kinds(model, problem, train, fit_samples, seed + 1, ev.kinds,
                            ev.threshold, device=device, progress=False)
    fit_min = {k_: min(per.values()) for k_, per in fit_ev.accuracy.items() if per}
    fit = {"lengths": range_text(train), "min_accuracy": fit_min, "fits": fit_ev.solved}
    depth = _errors_by_depth(ev)
    if lang is None or schedule != "balanced":
        cause = "budget" if not fit_ev.solved else "training"
        reasons.append(_fit_line(fit))
        return Diagnosis(cause, reasons, fit, depth)
    # 2. data: the failing test sets re-drawn, their wrong and right strings' compositions
    monoid = lang.monoid()
    words = monoid.labels()
    failing = _failing(ev)[:MAX_SETS]
    lc = level_coverage(lang, train, sorted({L for _, L, _ in failing}), schedule=schedule,
                        padding=cfg.padding, offsets=cfg.offsets, within=cfg.within)
    shown = np.asarray(lc.shown)
    if sampled is not None:  # the run's own strings: seen fewer than k times counts as unseen
        counts = np.zeros_like(shown, dtype=np.int64)
        m = min(len(counts), len(sampled))
        counts[:m] = np.asarray(sampled)[:m]
        shown = shown & (counts >= k)
    shown_any = shown.any(axis=0)
    import torch

    from monoidlab.evaluation import to_device

    wrong_hits: dict[tuple[int, int, int], int] = {}
    tally = {"wrong": 0, "right": 0, "wrong_level": 0, "right_level": 0, "wrong_free": 0,
             "right_free": 0}
    for kind, L, _ in failing:
        batch = problem.kind_batch(problem.eval_rng(seed, kind, L), L, ev.n_per_length, kind)
        if not len(batch["lengths"]):
            continue
        with torch.no_grad():
            correct = problem.eval_correct(model, to_device(batch, device or "cpu"))
        correct = np.asarray(correct.cpu(), bool)
        for i in range(len(correct)):
            c = composition_counts(monoid, batch["tokens"][i:i + 1], batch["lengths"][i:i + 1],
                                   schedule, per_level=True, padding=cfg.padding) > 0
            levels = min(len(c), len(shown))
            # per level: needed at a level the training strings reach, never shown there
            missing = c[:levels] & ~shown[:levels]
            # level-free (the paper's coverage): needed somewhere, shown at no level
            free = c.any(axis=0) & ~shown_any
            side = "right" if correct[i] else "wrong"
            tally[side] += 1
            tally[f"{side}_level"] += bool(missing.any())
            tally[f"{side}_free"] += bool(free.any())
            if not correct[i]:
                for lev, x, y in np.argwhere(missing):
                    key = (int(lev), int(x), int(y))
                    wrong_hits[key] = wrong_hits.get(key, 0) + 1
    n_wrong, n_right = tally["wrong"], tally["right"]
    n_wrong_unc = tally["wrong_level"]
    top = sorted(wrong_hits.items(), key=lambda kv: -kv[1])[:5]
    uncovered = [{"level": lev, "left": words[x], "right": words[y], "wrong_strings": n}
                 for (lev, x, y), n in top]
    share_wrong = n_wrong_unc / n_wrong if n_wrong else 0.0
    share_right = tally["right_level"] / n_right if n_right else 0.0
    deepest = lc.max_train_level
    deep_err = [d for d in depth if d["depth"] > deepest and d["error_rate"] > 0]
    shallow_err = [d for d in depth if d["depth"] <= deepest and d["error_rate"] > 0]
    if not fit_ev.solved:
        cause = "budget"
    elif n_wrong and share_wrong > max(0.5, share_right + 0.25):
        cause = "data"
    elif deep_err and not shallow_err:
        cause = "depth"
    else:
        cause = "training"
    reasons.append(_fit_line(fit))
    what = "never shown at their tree level by the training layout" + (
        f" or sampled fewer than {k} times" if sampled is not None else "")
    reasons.append(f"data: {n_wrong_unc} of {n_wrong} wrong strings need a composition {what}, "
                   f"against {tally['right_level']} of {n_right} right strings of the same "
                   f"sets; level-free (shown at no level): {tally['wrong_free']} wrong, "
                   f"{tally['right_free']} right")
    for u in uncovered:
        reasons.append(f"  level {u['level']}: {u['left']} · {u['right']} (in "
                       f"{u['wrong_strings']} wrong strings)")
    rates = ", ".join(f"{d['depth']}: {d['error_rate']:.4f}" for d in depth)
    reasons.append(f"depth: error rate by tree depth ({rates}); the training strings reach "
                   f"depth {deepest}")
    if cause == "training":
        reasons.append("training: the model fits its training lengths and the data shows what "
                       "the failing strings need; the learned operator does not carry to longer "
                       "strings (probe it: monoidlab probe RUN --extract monoid)")
    return Diagnosis(cause, reasons, fit, depth, uncovered, n_wrong, n_wrong_unc,
                     round(share_right, 4), deepest, tally["wrong_free"])


def _fit_line(fit: dict[str, Any]) -> str:
    mins = ", ".join(f"{k} {v:.3f}" for k, v in fit["min_accuracy"].items())
    return (f"budget: at its training lengths {fit['lengths']} the model "
            f"{'fits' if fit['fits'] else 'does NOT fit'} (min {mins})")
