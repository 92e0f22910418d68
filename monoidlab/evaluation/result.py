"""The result of an evaluation: accuracy per test kind and length, beside the baselines, and the
strict verdict.

*Solved* is strict: accuracy >= ``threshold`` (0.99 by default) at every scored length for
every kind. The papers' number, the mean accuracy over lengths of the first kind (``paper`` for
a language, ``task`` for a task), stays as :attr:`Evaluation.paper_score` for comparison; it
is one of the run-level scores of :mod:`monoidlab.evaluation.scores` (:meth:`Evaluation.scores`).

Example
-------
>>> ev = Evaluation("p", ("paper", "near_miss"), 0.99, 8,
...                 accuracy={"paper": {9: 1.0}, "near_miss": {9: 0.875}},
...                 baselines={"majority": {"paper": {9: 0.5}, "near_miss": {9: 0.5}}})
>>> ev.solved, ev.verdict()
(False, 'not solved at threshold 0.99: near_miss 0.875 at length 9 (1/1 lengths below)')
>>> ev.summary_rows()[1]["majority"], ev.paper_score
(0.5, 1.0)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from monoidlab._checks import check_record, scalar_args
from monoidlab.evaluation import scores as run_scores
from monoidlab.evaluation.baselines import BASELINES

__all__ = ["Evaluation", "min_beside_baselines", "kinds_of", "upgrade_results", "scores_of_results",
           "DEFAULT_THRESHOLD"]

DEFAULT_THRESHOLD = 0.99  # "solved": the papers call 100% solved; this leaves sampling noise
#: test kinds that monoidlab 0.1.0 named otherwise (results.json files it wrote)
_OLD_KINDS = {"balanced": "paper"}


def _mean(d: dict) -> float:
    return float(np.mean(list(d.values()))) if d else float("nan")


@dataclass
class Evaluation:
    """Per-kind, per-length accuracies with their baselines and the strict verdict.

    ``accuracy[kind][L]`` covers the scored lengths; ``single_class[kind][L]`` the lengths
    where the language has one class (reported, never scored); ``unavailable[kind]`` the
    lengths where a kind has no string (no near miss exists). ``baselines[name][kind][L]``
    holds every trivial baseline of :data:`~monoidlab.evaluation.baselines.BASELINES` on the
    same strings (``majority`` and ``count_only`` read them), ``class_mix`` the share of each
    class. A kind with no scored length does not count towards *solved*.
    """

    problem: str
    kinds: tuple[str, ...]
    threshold: float
    n_per_length: int
    accuracy: dict = field(default_factory=dict)
    single_class: dict = field(default_factory=dict)
    unavailable: dict = field(default_factory=dict)
    baselines: dict = field(default_factory=dict)
    class_mix: dict = field(default_factory=dict)
    #: the accuracy definition ``accuracy`` holds; tape tasks have two (per_string, pooled)
    measure: str = "per_string"
    #: tape tasks: ``by_measure[measure][kind][L]`` for both definitions, on the same strings
    by_measure: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_record(self)

    @property
    def majority(self) -> dict:
        """``majority[kind][L]``: the majority-class baseline."""
        return self.baselines.setdefault("majority", {})

    @property
    def count_only(self) -> dict:
        """``count_only[kind][L]``: the best count-only model."""
        return self.baselines.setdefault("count_only", {})

    @property
    def scored_kinds(self) -> list[str]:
        """Kinds with at least one scored length (the ones *solved* is judged on)."""
        return [k for k in self.kinds if self.accuracy.get(k)]

    @scalar_args
    def min_accuracy(self, kind: str) -> float:
        acc = self.accuracy.get(kind, {})
        return float(min(acc.values())) if acc else float("nan")

    @scalar_args
    def mean_accuracy(self, kind: str) -> float:
        return _mean(self.accuracy.get(kind, {}))

    @scalar_args
    def failing_lengths(self, kind: str) -> list[int]:
        """Scored lengths of ``kind`` below the threshold."""
        return sorted(L for L, a in self.accuracy.get(kind, {}).items() if a < self.threshold)

    @property
    def trivial(self) -> bool:
        """A majority-class model reaches the threshold at every scored length of every kind:
        these strings cannot tell a model from a constant answer (a one-class test set)."""
        kinds, maj = self.scored_kinds, self.baselines.get("majority", {})
        return bool(kinds) and all(
            maj.get(k, {}).get(L, 0.0) >= self.threshold for k in kinds for L in self.accuracy[k])

    @property
    def solved(self) -> bool:
        """Accuracy >= threshold at every scored length of every kind (and something scored),
        on strings a majority-class model does not also pass (:attr:`trivial`)."""
        kinds = self.scored_kinds
        return bool(kinds) and all(not self.failing_lengths(k) for k in kinds) and (
            not self.trivial)

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
            from monoidlab.errors import UnknownName

            raise UnknownName(f"{self.problem}: no accuracy of measure {measure!r}; measures: "
                              f"{', '.join(self.by_measure) or self.measure}")
        acc = self.by_measure[measure]
        kinds = [k for k in self.kinds if acc.get(k)]
        return bool(kinds) and all(a >= self.threshold for k in kinds for a in acc[k].values())

    @property
    def paper_score(self) -> float:
        """The papers' score: mean accuracy over the scored lengths of the first kind."""
        return run_scores.paper_score_of(self)

    def scores(self) -> dict[str, float]:
        """Every run-level score (:data:`~monoidlab.evaluation.scores.SCORES`) by name."""
        return {s.name: s.of(self) for s in run_scores.SCORES}

    def __repr__(self) -> str:
        """One line, the verdict first (never the per-length dicts; ``evaluation_text(ev)``
        prints the tables).

        >>> Evaluation("p", ("paper",), 0.99, 8, accuracy={"paper": {3: 1.0, 4: 0.5}})
        Evaluation(p: not solved at threshold 0.99: paper 0.500 at length 4 (1/2 lengths below); 2 scored lengths, 8 strings per length and kind)
        """
        lengths = {L for k in self.kinds for L in self.accuracy.get(k, {})}
        return (f"Evaluation({self.problem}: {self.verdict()}; {len(lengths)} scored lengths, "
                f"{self.n_per_length} strings per length and kind)")

    def _repr_html_(self) -> str:
        """The verdict (green or red) over the summary per kind beside its baselines."""
        from monoidlab._html import html_table, html_view

        rows = self.summary_rows()
        cols = ["kind", "scored_lengths", "single_class_lengths", "min", "mean",
                *[b.name for b in self.shown_baselines()]]
        return html_view(self.verdict(), html_table(rows, cols),
                         f"<p>{self.n_per_length} strings per length and kind; "
                         + "; ".join(f"{s.label} {s.of(self):.3f}" for s in run_scores.SCORES)
                         + "</p>",
                         colour="#1a7f37" if self.solved else "#b3261e")

    def verdict(self) -> str:
        """One line: strictly solved, or where it fails.

        >>> Evaluation("p", ("paper",), 0.99, 8, accuracy={"paper": {3: 1.0}}).verdict()
        'solved (accuracy >= 0.99 at every scored length of: paper)'
        """
        kinds = self.scored_kinds
        if not kinds:
            return "not solved: no length has two classes, nothing could be scored"
        other = ""
        for m in self.by_measure:  # tape tasks: say when the other definition disagrees
            if m != self.measure and self.solved_by(m) != self.solved:
                other = f" [{m} accuracy: {'solved' if self.solved_by(m) else 'not solved'}]"
        name = f"{self.measure} accuracy" if self.by_measure else "accuracy"
        if self.trivial:
            return ("not solved: a majority-class model also scores >= "
                    f"{self.threshold:g} at every scored length (the test strings are all, or "
                    "nearly all, of one class: they cannot tell a model from a constant answer)")
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

    def shown_baselines(self) -> list:
        """The baselines of this evaluation: every one, less the optional ones it has not
        computed (``length_only`` outside text classification) and those that apply to none
        of its test sets (``count_only`` of a text: no symbol counts), which would be a column
        of "nan"."""
        import math

        def applies(name: str) -> bool:
            return any(v is not None and not (isinstance(v, float) and math.isnan(v))
                       for per in self.baselines.get(name, {}).values() for v in per.values())

        return [b for b in BASELINES if (not b.optional or b.name in self.baselines)
                and (applies(b.name) or not self.baselines)]

    def summary_rows(self) -> list[dict]:
        """One row per kind: scored lengths, min and mean accuracy, each baseline's mean."""
        rows = []
        for k in self.kinds:
            acc = self.accuracy.get(k, {})
            row = {"kind": k, "scored_lengths": len(acc),
                   "single_class_lengths": len(self.single_class.get(k, {})),
                   "min": self.min_accuracy(k), "mean": self.mean_accuracy(k)}
            for b in self.shown_baselines():
                per = self.baselines.get(b.name, {}).get(k, {})
                row[b.name] = _mean({L: v for L, v in per.items() if L in acc})
            rows.append(row)
        return rows

    def as_dict(self) -> dict:
        """JSON-ready (length keys become strings in JSON); each baseline under its name."""
        return {"problem": self.problem, "kinds": list(self.kinds), "threshold": self.threshold,
                "n_per_length": self.n_per_length, "solved": self.solved,
                "solved_kinds": self.scored_kinds, "verdict": self.verdict(),
                **self.scores(),
                "min_accuracy": {k: self.min_accuracy(k) for k in self.kinds},
                "summary": self.summary_rows(), "accuracy": self.accuracy,
                "single_class": self.single_class, "unavailable": self.unavailable,
                **{b.name: self.baselines.get(b.name, {}) for b in self.shown_baselines()},
                "class_mix": self.class_mix, "measure": self.measure,
                "by_measure": self.by_measure,
                "solved_by": {m: self.solved_by(m) for m in self.by_measure}}

    @classmethod
    def from_dict(cls, data: dict) -> Evaluation:
        """Inverse of :meth:`as_dict` (also from JSON, where length keys are strings, and from
        the results of monoidlab 0.1.0, whose first kind was called ``balanced``)."""
        def ints(d: dict) -> dict:
            return {_OLD_KINDS.get(k, k): {int(L): v for L, v in per.items()}
                    for k, per in d.items()}

        return cls(data["problem"], tuple(_OLD_KINDS.get(k, k) for k in data["kinds"]),
                   data["threshold"], data["n_per_length"], ints(data["accuracy"]),
                   ints(data["single_class"]),
                   {_OLD_KINDS.get(k, k): [int(x) for x in v]
                    for k, v in data["unavailable"].items()},
                   {b.name: ints(data.get(b.name, {})) for b in BASELINES
                    if not b.optional or b.name in data},
                   ints(data["class_mix"]), data.get("measure", "per_string"),
                   {m: ints(per) for m, per in data.get("by_measure", {}).items()})


def upgrade_results(res: dict[str, Any]) -> dict[str, Any]:
    """A run's ``results.json`` in today's vocabulary: monoidlab 0.1.0 wrote the first test
    kind as ``balanced`` and the papers' score as ``score_balanced``.

    >>> upgrade_results({"score_balanced": 0.5, "min_accuracy": {"balanced": 1.0}})
    {'min_accuracy': {'paper': 1.0}, 'paper_score': 0.5}
    """
    res = dict(res)
    if "score_balanced" in res:
        res.setdefault("paper_score", res.pop("score_balanced"))
    for key in ("min_accuracy", "accuracy"):
        if isinstance(res.get(key), dict):
            res[key] = {_OLD_KINDS.get(k, k): v for k, v in res[key].items()}
    if isinstance(res.get("evaluation"), dict):
        ev = res["evaluation"]
        if isinstance(ev.get("kinds"), list) and any(k in _OLD_KINDS for k in ev["kinds"]):
            res["evaluation"] = Evaluation.from_dict(ev).as_dict()
    return res


def scores_of_results(res: dict[str, Any]) -> dict[str, float]:
    """The run-level scores of a run's ``results.json`` (read by :func:`upgrade_results`): each
    as saved, or, for a score added after the run was written, computed from its saved
    evaluation (NaN without one).

    >>> scores_of_results({"paper_score": 0.5})
    {'paper_score': 0.5}
    """
    out: dict[str, float] = {}
    ev = None
    for s in run_scores.SCORES:
        if isinstance(res.get(s.name), int | float):
            out[s.name] = res[s.name]
            continue
        if ev is None and isinstance(res.get("evaluation"), dict):
            ev = Evaluation.from_dict(res["evaluation"])
        out[s.name] = s.of(ev) if ev is not None else float("nan")
    return out


@scalar_args
def kinds_of(evaluations: Iterable[dict | None]) -> list[str]:
    """The kinds that any of these evaluations (JSON form, ``results.json["evaluation"]``)
    summarises, in the registry's order: a results table's columns, so that a kind added to
    the registry later leaves the tables of runs that never met it as they were.

    >>> kinds_of([{"summary": [{"kind": "near_miss"}]}, None, {"summary": [{"kind": "paper"}]}])
    ['paper', 'near_miss']
    >>> kinds_of([None])[0]   # nothing evaluated: every kind
    'paper'
    """
    from monoidlab.evaluation.kinds import KINDS

    seen = {_OLD_KINDS.get(r["kind"], r["kind"]) for ev in evaluations if ev
            for r in ev.get("summary") or []}
    return [k for k in KINDS if k in seen] or list(KINDS)


def min_beside_baselines(evaluation: dict, kind: str) -> str:
    """A kind's minimum accuracy beside what a majority-class / a count-only model scores on the
    same strings (their means over the scored lengths), from an evaluation's JSON form
    (``Evaluation.as_dict()``, a run's ``results.json["evaluation"]``): the cell every results
    table prints.

    >>> ev = {"summary": [{"kind": "near_miss", "min": 0.984375, "majority": 0.5,
    ...                    "count_only": 0.75}]}
    >>> min_beside_baselines(ev, "near_miss"), min_beside_baselines(ev, "paper")
    ('0.984 (0.50 / 0.75)', 'n/a')
    """
    if not isinstance(kind, str):
        from monoidlab.errors import InputError

        raise InputError(f"kind: a test kind's name, got {type(kind).__name__} {kind!r}")
    kind = _OLD_KINDS.get(kind, kind)
    row = next((r for r in evaluation.get("summary", [])
                if _OLD_KINDS.get(r["kind"], r["kind"]) == kind), None)
    if row is None or row["min"] is None or row["min"] != row["min"]:  # absent, or unavailable
        return "n/a"

    def fmt(v: float | None) -> str:
        return "–" if v is None or v != v else f"{v:.2f}"

    shown = [b for b in BASELINES  # an optional baseline only where it applies
             if not b.optional or fmt(row.get(b.name)) != "–"]
    return f"{row['min']:.3f} ({' / '.join(fmt(row.get(b.name)) for b in shown)})"
