"""Evaluation that can fail: accuracy per test length and per test kind, next to trivial baselines.

For a language, every test length gets three kinds of strings (:mod:`monoidlab.evalsets`):
``balanced`` (the papers' protocol), ``near_miss`` (one edit away from another class) and
``ec_stratified`` (every reachable equivalence class equally). Every accuracy is reported
beside what a trivial model gets on the same strings: always answering the majority class,
and the best model that only sees the symbol counts. Lengths at which the language has a
single class are reported apart and never scored.

*Solved* is strict: accuracy >= ``threshold`` (0.99 by default) at every scored length for
every kind. The papers' number, the mean accuracy over lengths of the ``balanced`` kind, stays
as ``score_balanced`` for comparison. Decimal addition has one kind, ``task`` (its own
sampler); Delétang's tape tasks have ``task`` first, then the kinds that apply to them
(:class:`~monoidlab.training.problems.TapeProblem`), and two accuracy definitions per length
(``by_measure``: per string and the reference's pooled one; ``measure`` decides).

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

from monoidlab._util import eval_mode, progress_bar, range_text

if TYPE_CHECKING:
    import torch

__all__ = ["Evaluation", "evaluate_kinds", "min_beside_baselines", "evaluate",
           "check_test_lengths", "to_device", "DEFAULT_THRESHOLD"]

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
    #: the accuracy definition ``accuracy`` holds; tape tasks have two (per_string, pooled)
    measure: str = "per_string"
    #: tape tasks: ``by_measure[measure][kind][L]`` for both definitions, on the same strings
    by_measure: dict = field(default_factory=dict)

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

    def solved_by(self, measure: str) -> bool:
        """*Solved* judged on another accuracy definition of the same strings (tape tasks:
        ``per_string`` or ``pooled``).

        >>> ev = Evaluation("p", ("task",), 0.99, 8, accuracy={"task": {3: 0.995}},
        ...                 measure="pooled", by_measure={"pooled": {"task": {3: 0.995}},
        ...                                               "per_string": {"task": {3: 0.98}}})
        >>> ev.solved, ev.solved_by("per_string")
        (True, False)
        """
        if measure == self.measure and not self.by_measure:
            return self.solved
        if measure not in self.by_measure:
            raise KeyError(f"{self.problem}: no accuracy of measure {measure!r}; measures: "
                           f"{', '.join(self.by_measure) or self.measure}")
        acc = self.by_measure[measure]
        kinds = [k for k in self.kinds if acc.get(k)]
        return bool(kinds) and all(a >= self.threshold for k in kinds for a in acc[k].values())

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
        other = ""
        for m in self.by_measure:  # tape tasks: say when the other definition disagrees
            if m != self.measure and self.solved_by(m) != self.solved:
                other = f" [{m} accuracy: {'solved' if self.solved_by(m) else 'not solved'}]"
        name = f"{self.measure} accuracy" if self.by_measure else "accuracy"
        if self.solved:
            return (f"solved ({name} >= {self.threshold:g} at every scored length of: "
                    f"{', '.join(kinds)}){other}")
        worst = []
        for k in kinds:
            bad = self.failing_lengths(k)
            if bad:
                L = min(bad, key=lambda x: self.accuracy[k][x])
                worst.append(f"{k} {self.accuracy[k][L]:.3f} at length {L} "
                             f"({len(bad)}/{len(self.accuracy[k])} lengths below)")
        return f"not solved at threshold {self.threshold:g}: " + "; ".join(worst) + other

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
                "class_mix": self.class_mix, "measure": self.measure,
                "by_measure": self.by_measure,
                "solved_by": {m: self.solved_by(m) for m in self.by_measure}}

    @classmethod
    def from_dict(cls, data: dict) -> Evaluation:
        """Inverse of :meth:`as_dict` (also from JSON, where length keys are strings)."""
        def ints(d: dict) -> dict:
            return {k: {int(L): v for L, v in per.items()} for k, per in d.items()}

        return cls(data["problem"], tuple(data["kinds"]), data["threshold"],
                   data["n_per_length"], ints(data["accuracy"]), ints(data["single_class"]),
                   {k: [int(x) for x in v] for k, v in data["unavailable"].items()},
                   ints(data["majority"]), ints(data["count_only"]), ints(data["class_mix"]),
                   data.get("measure", "per_string"),
                   {m: ints(per) for m, per in data.get("by_measure", {}).items()})


def min_beside_baselines(evaluation: dict, kind: str) -> str:
    """A kind's minimum accuracy beside what a majority-class / a count-only model scores on the
    same strings (their means over the scored lengths), from an evaluation's JSON form
    (``Evaluation.as_dict()``, a run's ``results.json["evaluation"]``): the cell every results
    table prints.

    >>> ev = {"summary": [{"kind": "near_miss", "min": 0.984375, "majority": 0.5,
    ...                    "count_only": 0.75}]}
    >>> min_beside_baselines(ev, "near_miss"), min_beside_baselines(ev, "balanced")
    ('0.984 (0.50 / 0.75)', 'n/a')
    """
    row = next((r for r in evaluation.get("summary", []) if r["kind"] == kind), None)
    if row is None or row["min"] is None or row["min"] != row["min"]:  # absent, or unavailable
        return "n/a"

    def fmt(v: float | None) -> str:
        return "–" if v is None or v != v else f"{v:.2f}"

    return f"{row['min']:.3f} ({fmt(row['majority'])} / {fmt(row['count_only'])})"


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

    from monoidlab.training.problems import MEASURES, TapeProblem, TokenScored, pooled_accuracy

    kinds = problem.check_kinds(kinds)
    device = device or next(model.parameters()).device
    lens = problem.lengths(lengths)
    ev = Evaluation(problem.name, kinds, float(threshold), int(n_per_length))
    tokens_scored = isinstance(problem, TokenScored)  # tape tasks: two accuracy definitions
    # the count-only bound needs groups of strings with equal counts: languages, and tape tasks
    # of a regular language (small alphabets); large alphabets give singleton groups (bound 1)
    count_only = problem.language is not None or (
        isinstance(problem, TapeProblem) and problem.automaton is not None)
    if tokens_scored:
        ev.measure = problem.measure
        ev.by_measure = {m: {k: {} for k in kinds} for m in MEASURES}
    for k in kinds:
        for d in (ev.accuracy, ev.single_class, ev.majority, ev.count_only, ev.class_mix):
            d[k] = {}
        ev.unavailable[k] = []
    single = check_test_lengths(problem, lens)
    it = [(k, int(L)) for L in lens for k in kinds]
    if progress:
        it = progress_bar(it, desc="evaluate", leave=False)
    with eval_mode(model):
        for kind, L in it:
            rng = problem.eval_rng(seed, kind, L)
            correct, labels, toks, lns, hits, scored, targets = [], [], [], [], [], [], []
            left = n_per_length
            while left > 0:
                b = problem.kind_batch(rng, L, min(batch_size, left), kind)
                if not len(b["lengths"]):
                    break
                if tokens_scored:
                    h, n = problem.eval_counts(model, to_device(b, device))
                    hits.append(h.cpu().numpy())
                    scored.append(n.cpu().numpy())
                    targets.append((b["targets"], b["mask"]))
                    c = torch.as_tensor(hits[-1] / np.maximum(scored[-1], 1))
                else:
                    c = problem.eval_correct(model, to_device(b, device))
                correct.append(c.float().cpu())
                y = b.get("targets")
                if y is not None and np.ndim(y) == 2 and tokens_scored and y.shape[1] == 1:
                    y = y[:, 0]  # a classification task on the tape: one label per string
                if y is not None and np.ndim(y) == 1:  # one label per string
                    labels.append(y)
                    toks.append(b["tokens"])
                    lns.append(b["lengths"])
                left -= len(c)
            if not correct:
                ev.unavailable[kind].append(L)
                continue
            acc = float(torch.cat(correct).mean())
            if tokens_scored:
                h, n = np.concatenate(hits), np.concatenate(scored)
                both = {"per_string": acc, "pooled": pooled_accuracy(h, n)}
                acc = both[ev.measure]
                if L not in single:
                    for m, v in both.items():
                        ev.by_measure[m][kind][L] = v
                # trivial baseline: the majority symbol of each output position
                bh = _position_majority(np.concatenate([t for t, _ in targets]),
                                        np.concatenate([m for _, m in targets]))
                ev.majority[kind][L] = (pooled_accuracy(bh, n) if ev.measure == "pooled"
                                        else float(np.mean(bh / np.maximum(n, 1))))
            (ev.single_class if L in single else ev.accuracy)[kind][L] = acc
            if labels:
                y = np.concatenate(labels)
                if not tokens_scored:
                    ev.majority[kind][L] = _majority(y)
                if count_only:
                    T = max(t.shape[1] for t in toks)
                    tok = np.concatenate([np.pad(t, ((0, 0), (0, T - t.shape[1])))
                                          for t in toks])
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


def _position_majority(targets: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Per string, the scored positions that the *position majority* gets right: a model that
    answers, at each output position, the most frequent scored target there (for a
    classification task, the majority class).

    >>> _position_majority(np.array([[0, 1], [0, 0], [1, 1]]), np.ones((3, 2), bool)).tolist()
    [2, 1, 1]
    """
    B, m = targets.shape
    table = np.zeros((m, int(targets.max(initial=0)) + 1), np.int64)
    np.add.at(table, (np.broadcast_to(np.arange(m), (B, m))[mask], targets[mask]), 1)
    return ((targets == table.argmax(1)[None, :]) & mask).sum(1)


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
