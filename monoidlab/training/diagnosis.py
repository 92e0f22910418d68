"""Why a run failed: data, depth or budget.

A strict verdict says *that* a model fails; a user also needs to know *what to change*. For a
language run that is not solved, :func:`diagnose` re-draws the failing test sets (the very
strings of the evaluation: same seed, kind and length) and answers, in order:

1. **budget**: does the model fit its own training lengths? (a fresh test at the training
   lengths, every kind). If not, more steps or a larger model come before anything else;
2. **data**: do the wrong strings need compositions that the training layout never shows at
   their tree level (exactly: :func:`~monoidlab.coverage.levels.level_coverage`), or that the
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

__all__ = ["Diagnosis", "diagnose", "depth_of", "string_compositions", "tally_sets"]

#: At most this many failing (kind, length) sets are re-drawn, the worst first.
MAX_SETS = 24


def depth_of(length: int) -> int:
    """Levels of internal nodes in the balanced tree of a string of ``length`` (at offset 0)."""
    return int(np.log2(buffer_size(int(length)))) if length > 1 else 0


@dataclass
class Diagnosis:
    """What :func:`diagnose` found; ``cause`` is ``budget``, ``data``, ``depth``, ``training``,
    ``solved`` or ``untestable`` (not solved with no length below the threshold: the test
    strings are of one class, or a majority-class model passes them too), ``reasons`` the lines
    that support it."""

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
    from monoidlab.coverage.levels import level_coverage
    from monoidlab.evaluation import evaluate_kinds
    from monoidlab.models import model_spec

    if ev.solved:
        return Diagnosis("solved", ["every kind is at or above the threshold at every length"])
    failing = _failing(ev)
    if not failing:  # not solved, yet no length is below the threshold: nothing to re-draw
        return Diagnosis("untestable", [ev.verdict()])
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
    failing = failing[:MAX_SETS]
    lc = level_coverage(lang, train, sorted({L for _, L, _ in failing}), schedule=schedule,
                        padding=cfg.padding, offsets=cfg.offsets, within=cfg.within)
    shown = np.asarray(lc.shown)
    if sampled is not None:  # the run's own strings: seen fewer than k times counts as unseen
        counts = np.zeros_like(shown, dtype=np.int64)
        m = min(len(counts), len(sampled))
        counts[:m] = np.asarray(sampled)[:m]
        shown = shown & (counts >= k)
    import torch

    from monoidlab.evaluation import to_device

    sets = []
    for kind, L, _ in failing:
        batch = problem.kind_batch(problem.eval_rng(seed, kind, L), L, ev.n_per_length, kind)
        if not len(batch["lengths"]):
            continue
        with torch.no_grad():
            correct = problem.eval_correct(model, to_device(batch, device or "cpu"))
        sets.append((batch["tokens"], batch["lengths"], np.asarray(correct.cpu(), bool)))
    tally, hits = tally_sets(monoid, sets, shown, schedule, cfg.padding)
    n_wrong, n_right = tally["wrong"], tally["right"]
    n_wrong_unc = tally["wrong_level"]
    uncovered = [{"level": lev, "left": words[x], "right": words[y], "wrong_strings": n}
                 for (lev, x, y), n in hits[:5]]
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


def string_compositions(monoid: Any, tokens: np.ndarray, lengths: np.ndarray,
                        schedule: str = "balanced", padding: Any = "learned") -> np.ndarray:
    """``(n, 3)`` int64 rows ``(string, level, code)``: every composition ``code = x·|M| + y``
    that string's tree needs at that level, once per string, sorted; the nodes that
    :func:`~monoidlab.coverage.compositions.composition_counts` counts, for the whole batch at once.

    >>> import monoidlab as ml
    >>> lang = ml.load_language("parity")
    >>> t, n = lang.encode(["1101", "1"])
    >>> string_compositions(lang.monoid(), t, n).tolist()  # "1" alone composes nothing
    [[0, 1, 1], [0, 1, 3], [0, 2, 1]]
    """
    M = int(monoid.size)
    if schedule == "balanced":
        string, level, code = _balanced_nodes(monoid, tokens, lengths, padding)
    else:  # any other schedule: its node labels (one group of strings per length)
        from monoidlab.coverage.compositions import node_labels

        lab = node_labels(monoid, tokens, lengths, schedule)
        keep = lab.composes(padding)
        string, level = lab.string[keep], lab.level[keep]
        code = lab.left[keep] * M + lab.right[keep]
    levels = int(level.max(initial=0)) + 1
    # one int64 key per (string, level, code), sorted and deduped (a plain sort: numpy's
    # np.unique hashes first, several times slower on these int keys)
    key = np.sort((string * levels + level) * (M * M) + code)
    key = key[np.r_[True, key[1:] != key[:-1]]] if len(key) else key
    rest = key // (M * M)
    return np.stack([rest // levels, rest % levels, key % (M * M)], axis=1).astype(np.int64)


def _balanced_nodes(monoid: Any, tokens: np.ndarray, lengths: np.ndarray, padding: Any
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(string, level, code)`` of every composing node of the balanced trees at offset 0:
    the buffer of the whole batch halved level by level with strided views (the nodes
    ``composition_counts`` counts, without summing them over the strings)."""
    from monoidlab._util import check_batch, length_mask
    from monoidlab.geometry import Padding, buffer_size

    tokens, lengths = check_batch(tokens, lengths, monoid.n_symbols, monoid.automaton.name,
                                  min_length=1)
    both = Padding.parse(padding) is Padding.IDENTITY
    M = int(monoid.size)
    table = np.asarray(monoid.table, np.int64)
    T = int(lengths.max(initial=1))
    vals = np.zeros((len(lengths), buffer_size(T)), np.int64)  # padding: the identity 0
    vals[:, :T] = np.where(length_mask(lengths, T), monoid.letters[tokens[:, :T]], 0)
    # a string's own tree has ceil(log2 L) levels; above them a wider buffer only pairs its
    # root with padding, which its own tree never does
    height = np.ceil(np.log2(lengths))
    parts = []
    level, width = 0, 1
    while vals.shape[1] > 1:
        level += 1
        left, right = vals[:, 0::2], vals[:, 1::2]
        start = np.arange(left.shape[1]) * 2 * width
        has = start[None, :] < lengths[:, None]  # the left child holds string
        if both:  # identity padding: the right child must hold string too
            has &= (start + width)[None, :] < lengths[:, None]
        has &= level <= height[:, None]
        string, col = np.nonzero(has)
        parts.append((string, np.full(len(string), level), left[string, col] * M
                      + right[string, col]))
        vals = table[left, right]
        width *= 2
    if not parts:
        z = np.zeros(0, np.int64)
        return z, z, z
    return tuple(np.concatenate(p) for p in zip(*parts))  # type: ignore[return-value]


def tally_sets(monoid: Any, sets: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
               shown: np.ndarray, schedule: str = "balanced", padding: Any = "learned"
               ) -> tuple[dict[str, int], list[tuple[tuple[int, int, int], int]]]:
    """What the test sets' strings need that the training data does not show.

    ``sets``: ``(tokens, lengths, correct)`` per re-drawn test set; ``shown``: ``(levels,
    |M|, |M|)`` bool, the compositions the training data shows at each level. Returns the
    tally (``wrong``/``right`` strings, those needing a composition unshown at its level
    (``*_level``) or at every level (``*_free``)) and, for the wrong strings, each missing
    ``(level, x, y)`` with the number of wrong strings that need it, most first (ties in the
    order the strings first need them).

    >>> import monoidlab as ml
    >>> lang = ml.load_language("parity")
    >>> t, n = lang.encode(["1101", "11"])
    >>> shown = np.zeros((3, 2, 2), bool)
    >>> tally, hits = tally_sets(lang.monoid(), [(t, n, np.array([False, True]))], shown)
    >>> tally["wrong_level"], tally["right_level"], hits
    (1, 1, [((1, 0, 1), 1), ((1, 1, 1), 1), ((2, 0, 1), 1)])
    """
    shown = np.asarray(shown, bool)
    M = int(monoid.size)
    flat = shown.reshape(len(shown), M * M)
    unseen_anywhere = ~np.asarray(flat.any(axis=0), bool)
    tally = dict.fromkeys(("wrong", "right", "wrong_level", "right_level", "wrong_free",
                           "right_free"), 0)
    wrong_keys, offset = [], 0
    for tokens, lengths, correct in sets:
        correct = np.asarray(correct, bool)
        B = len(correct)
        if not B:
            continue
        s, lev, code = string_compositions(monoid, tokens, lengths, schedule, padding).T
        # at a level the training strings reach, never shown there
        missing: np.ndarray = lev < len(flat)
        missing[missing] = ~flat[lev[missing], code[missing]]
        level_any = np.bincount(s[missing], minlength=B) > 0
        free_any = np.bincount(s[unseen_anywhere[code]], minlength=B) > 0
        for side, rows in (("right", correct), ("wrong", ~correct)):
            tally[side] += int(rows.sum())
            tally[f"{side}_level"] += int((level_any & rows).sum())
            tally[f"{side}_free"] += int((free_any & rows).sum())
        w = missing & ~correct[s]
        # strings numbered across the sets, so that first needs keep the sets' order
        wrong_keys.append(((offset + s[w]) * len(flat) + lev[w]) * (M * M) + code[w])
        offset += B
    if not wrong_keys:
        return tally, []
    keys = np.concatenate(wrong_keys)  # sorted by (string, level, code), each once
    pair = keys % (len(flat) * M * M)
    pairs, first, n = np.unique(pair, return_index=True, return_counts=True)
    order = np.lexsort((first, -n))
    lev, code = pairs[order] // (M * M), pairs[order] % (M * M)
    hits = [((int(a), int(c // M), int(c % M)), int(k))
            for a, c, k in zip(lev, code, n[order])]
    return tally, hits


def _fit_line(fit: dict[str, Any]) -> str:
    mins = ", ".join(f"{k} {v:.3f}" for k, v in fit["min_accuracy"].items())
    return (f"budget: at its training lengths {fit['lengths']} the model "
            f"{'fits' if fit['fits'] else 'does NOT fit'} (min {mins})")
