"""Evaluation that can fail: accuracy per test length and per test kind, next to trivial baselines.

For a language, every test length gets three kinds of strings (:mod:`monoidlab.evalsets`):
``balanced`` (the papers' protocol), ``near_miss`` (one edit away from another class) and
``ec_stratified`` (every reachable equivalence class equally). Every accuracy is reported
beside what a trivial model gets on the same strings: always answering the majority class,
and the best model that only sees the symbol counts. Lengths at which the language has a
single class are reported apart and never scored.

*Solved* is strict: accuracy >= ``threshold`` (0.99 by default) at every scored length for
every kind. The papers' number, the mean accuracy over lengths of the ``balanced`` kind, stays
as ``score_balanced`` for comparison. Tasks without an automaton (Delétang's tape tasks, decimal
addition) have one kind, ``task`` (their own sampler).

Example
-------
>>> import torch, monoidlab as ml
>>> from monoidlab.models import build_model
>>> from monoidlab.training.problems import LanguageProblem
>>> problem = LanguageProblem(ml.load_language("parity"))
>>> model = build_model("mlp-ldru", 2, 2, d=8)
>>> ev = evaluate_kinds(model, problem, range(9, 12), n_per_length=8, seed=0)
>>> ev.kinds, sorted(ev.accuracy["near_miss"])
(('balanced', 'near_miss', 'ec_stratified'), [9, 10, 11])
>>> ev.solved   # an untrained model
False
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from monoidlab._util import eval_mode, range_text

if TYPE_CHECKING:
    import torch

__all__ = ["Evaluation", "evaluate_kinds", "evaluate", "check_test_lengths", "to_device",
           "DEFAULT_THRESHOLD"]

DEFAULT_THRESHOLD = 0.99  # "solved": the papers call 100% solved; this leaves sampling noise


def to_device(batch: dict[str, Any], device: torch.device | str) -> dict[str, Any]:
    """A problem's numpy batch as tensors on ``device`` (other values unchanged)."""
    import torch

    out = {}
    for k, v in batch.items():
        if isinstance(v, np.ndarray):
            if any(st < 0 for st in v.strides):  # e.g. a reversed (B, 1) view: torch refuses
                v = v.copy()
            out[k] = torch.as_tensor(v, device=device)
        else:
            out[k] = v
    return out


def _mean(d: dict) -> float:
    return float(np.mean(list(d.values()))) if d else float("nan")


@dataclass
class Evaluation:
    """Per-kind, per-length accuracies with their baselines and the strict verdict.

    ``accuracy[kind][L]`` covers the scored lengths; ``single_class[kind][L]`` the lengths
    where the language has one class (reported, never scored); ``unavailable[kind]`` the
    lengths where a kind has no string (no near miss exists). ``majority`` and
    ``count_only`` hold the two trivial baselines on the same strings, ``class_mix`` the share
    of each class. A kind with no scored length does not count towards *solved*.
    """

    problem: str
    kinds: tuple[str, ...]
    threshold: float
    n_per_length: int
    accuracy: dict = field(default_factory=dict)
    single_class: dict = field(default_factory=dict)
    unavailable: dict = field(default_factory=dict)
    majority: dict = field(default_factory=dict)
    count_only: dict = field(default_factory=dict)
    class_mix: dict = field(default_factory=dict)

    @property
    def scored_kinds(self) -> list[str]:
        """Kinds with at least one scored length (the ones *solved* is judged on)."""
        return [k for k in self.kinds if self.accuracy.get(k)]

    def min_accuracy(self, kind: str) -> float:
        acc = self.accuracy.get(kind, {})
        return float(min(acc.values())) if acc else float("nan")

    def mean_accuracy(self, kind: str) -> float:
        return _mean(self.accuracy.get(kind, {}))

    def failing_lengths(self, kind: str) -> list[int]:
        """Scored lengths of ``kind`` below the threshold."""
        return sorted(L for L, a in self.accuracy.get(kind, {}).items() if a < self.threshold)

    @property
    def solved(self) -> bool:
        """Accuracy >= threshold at every scored length of every kind (and something scored)."""
        kinds = self.scored_kinds
        return bool(kinds) and all(not self.failing_lengths(k) for k in kinds)

    @property
    def score_balanced(self) -> float:
        """The papers' score: mean accuracy over the scored lengths of the first kind."""
        return self.mean_accuracy(self.kinds[0]) if self.kinds else float("nan")

    def verdict(self) -> str:
        """One line: strictly solved, or where it fails.

        >>> Evaluation("p", ("balanced",), 0.99, 8, accuracy={"balanced": {3: 1.0}}).verdict()
        'solved (accuracy >= 0.99 at every scored length of: balanced)'
        """
        kinds = self.scored_kinds
        if not kinds:
            return "not solved: no length has two classes, nothing could be scored"
        if self.solved:
            return (f"solved (accuracy >= {self.threshold:g} at every scored length of: "
                    f"{', '.join(kinds)})")
        worst = []
        for k in kinds:
            bad = self.failing_lengths(k)
            if bad:
                L = min(bad, key=lambda x: self.accuracy[k][x])
                worst.append(f"{k} {self.accuracy[k][L]:.3f} at length {L} "
                             f"({len(bad)}/{len(self.accuracy[k])} lengths below)")
        return f"not solved at threshold {self.threshold:g}: " + "; ".join(worst)

    def summary_rows(self) -> list[dict]:
        """One row per kind: scored lengths, min and mean accuracy, the baselines' means."""
        rows = []
        for k in self.kinds:
            acc = self.accuracy.get(k, {})
            rows.append({"kind": k, "scored_lengths": len(acc),
                         "single_class_lengths": len(self.single_class.get(k, {})),
                         "min": self.min_accuracy(k), "mean": self.mean_accuracy(k),
                         "majority": _mean({L: v for L, v in self.majority.get(k, {}).items()
                                            if L in acc}),
                         "count_only": _mean({L: v for L, v in self.count_only.get(k, {}).items()
                                              if L in acc})})
        return rows

    def as_dict(self) -> dict:
        """JSON-ready (length keys become strings in JSON)."""
        return {"problem": self.problem, "kinds": list(self.kinds), "threshold": self.threshold,
                "n_per_length": self.n_per_length, "solved": self.solved,
                "solved_kinds": self.scored_kinds, "verdict": self.verdict(),
                "score_balanced": self.score_balanced,
                "min_accuracy": {k: self.min_accuracy(k) for k in self.kinds},
                "summary": self.summary_rows(), "accuracy": self.accuracy,
                "single_class": self.single_class, "unavailable": self.unavailable,
                "majority": self.majority, "count_only": self.count_only,
                "class_mix": self.class_mix}

    @classmethod
    def from_dict(cls, data: dict) -> Evaluation:
        """Inverse of :meth:`as_dict` (also from JSON, where length keys are strings)."""
        def ints(d: dict) -> dict:
            return {k: {int(L): v for L, v in per.items()} for k, per in d.items()}

        return cls(data["problem"], tuple(data["kinds"]), data["threshold"],
                   data["n_per_length"], ints(data["accuracy"]), ints(data["single_class"]),
                   {k: [int(x) for x in v] for k, v in data["unavailable"].items()},
                   ints(data["majority"]), ints(data["count_only"]), ints(data["class_mix"]))


def evaluate_kinds(model: Any, problem: Any, lengths: Any, n_per_length: int = 64,
                   seed: int = 0, kinds: Any = None, threshold: float = DEFAULT_THRESHOLD,
                   batch_size: int = 256, device: Any = None,
                   progress: bool = False) -> Evaluation:
    """Accuracy per length and kind on fixed, seeded test sets (the same strings for every
    model and every call with the same seed), with baselines and the strict verdict.

    ``kinds``: a subset of the problem's kinds (default all); ``n_per_length`` strings per
    length and kind. Warns when most test lengths have a single class.
    """
    import torch

    kinds = problem.check_kinds(kinds)
    device = device or next(model.parameters()).device
    lens = problem.lengths(lengths)
    ev = Evaluation(problem.name, kinds, float(threshold), int(n_per_length))
    for k in kinds:
        for d in (ev.accuracy, ev.single_class, ev.majority, ev.count_only, ev.class_mix):
            d[k] = {}
        ev.unavailable[k] = []
    single = check_test_lengths(problem, lens)
    it = [(k, int(L)) for L in lens for k in kinds]
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(it, desc="evaluate", leave=False)
    with eval_mode(model):
        for kind, L in it:
            rng = problem.eval_rng(seed, kind, L)
            correct, labels, toks, lns = [], [], [], []
            left = n_per_length
            while left > 0:
                b = problem.kind_batch(rng, L, min(batch_size, left), kind)
                if not len(b["lengths"]):
                    break
                c = problem.eval_correct(model, to_device(b, device))
                correct.append(c.float().cpu())
                if "targets" in b and np.ndim(b["targets"]) == 1:  # one label per string
                    labels.append(b["targets"])
                    toks.append(b["tokens"])
                    lns.append(b["lengths"])
                left -= len(c)
            if not correct:
                ev.unavailable[kind].append(L)
                continue
            acc = float(torch.cat(correct).mean())
            (ev.single_class if L in single else ev.accuracy)[kind][L] = acc
            if labels:
                y = np.concatenate(labels)
                ev.majority[kind][L] = _majority(y)
                if problem.language is not None:
                    T = max(t.shape[1] for t in toks)
                    tok = np.concatenate([np.pad(t, ((0, 0), (0, T - t.shape[1]))) for t in toks])
                    ev.count_only[kind][L] = _count_only(tok, np.concatenate(lns), y,
                                                         problem.vocab_size)
                counts = np.bincount(y, minlength=problem.n_classes) / len(y)
                names = problem.class_names
                ev.class_mix[kind][L] = {names[c]: round(float(v), 4)
                                         for c, v in enumerate(counts) if v > 0}
    return ev


def check_test_lengths(problem: Any, lengths: Any, what: str = "test lengths") -> set[int]:
    """The lengths with strings of a single class; warns (naming them) when they are most of
    ``lengths``, e.g. a strided range that hits the odd lengths of a Dyck language only."""
    lens = problem.lengths(lengths)
    single = {int(L) for L in lens if problem.n_classes_at(int(L)) == 1}
    if lens.size and len(single) > len(lens) / 2:
        warnings.warn(f"{problem.name}: {len(single)} of the {len(lens)} {what} "
                      f"{range_text(lens)} have strings of a single class (e.g. "
                      f"{sorted(single)[:3]}); those lengths are reported but never scored",
                      stacklevel=3)
    return single


def _majority(labels: np.ndarray) -> float:
    from monoidlab.evalsets import majority_baseline

    return majority_baseline(labels)


def _count_only(tokens: np.ndarray, lengths: np.ndarray, labels: np.ndarray, k: int) -> float:
    from monoidlab.evalsets import count_baseline

    return count_baseline(tokens, lengths, labels, k)


def evaluate(model: Any, problem: Any, lengths: Any, n_per_length: int = 64, seed: int = 0,
             batch_size: int = 256, device: Any = None, progress: bool = False,
             kind: str | None = None) -> dict:
    """Accuracy per length (``{L: acc}``) of one kind (default: the problem's first kind),
    single-class lengths included. :func:`evaluate_kinds` gives the full picture."""
    kind = kind or problem.check_kinds(None)[0]
    ev = evaluate_kinds(model, problem, lengths, n_per_length, seed, [kind],
                        batch_size=batch_size, device=device, progress=progress)
    return dict(sorted({**ev.accuracy[kind], **ev.single_class[kind]}.items()))
