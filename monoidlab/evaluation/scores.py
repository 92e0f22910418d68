"""Run-level scores: one number per evaluation, beside the strict verdict, each defined here once.

A :class:`RunScore` is a name (its key in a run's ``results.json``, in ``metrics.jsonl`` as
``val_<name>``, a column of a sweep's ``results.csv``), the function of an
:class:`~monoidlab.evaluation.result.Evaluation` that computes it, and the words the outputs
print beside it. Every output reads :data:`SCORES` (:meth:`Evaluation.scores
<monoidlab.evaluation.result.Evaluation.scores>`): the evaluation's JSON and text, the trainer's
results, the validations, the sweeps, the report and the command line; adding a score here adds
it to all of them. A run folder written before a score existed gets it from its saved
evaluation (:func:`~monoidlab.evaluation.result.scores_of_results`).

Example
-------
>>> from monoidlab.evaluation.result import Evaluation
>>> ev = Evaluation("p", ("paper", "near_miss"), 0.99, 8,
...                 accuracy={"paper": {9: 1.0, 10: 0.5}, "near_miss": {9: 0.875}})
>>> ev.scores()
{'paper_score': 0.75}
>>> SCORES[0].text(ev)
"paper_score (the papers' mean over lengths of the paper kind) 0.7500"
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from monoidlab.evaluation.result import Evaluation

__all__ = ["RunScore", "SCORES", "score_names", "paper_score_of"]


@dataclass(frozen=True)
class RunScore:
    """A run-level score: ``of(ev)`` computes it; ``label`` names it in prose (the report, the
    command line), ``meaning`` says what it is (``{first}``: the evaluation's first kind) and
    ``whose`` whose number it is, in the evaluation's text."""

    name: str
    of: Callable[[Evaluation], float]
    label: str
    meaning: str
    whose: str = "monoidlab's"

    def describe(self, first_kind: str) -> str:
        """What it is, for an evaluation whose first kind is ``first_kind``."""
        return self.meaning.format(first=first_kind)

    def text(self, ev: Evaluation) -> str:
        """Its line of the evaluation's text."""
        return (f"{self.name} ({self.whose} {self.describe(ev.kinds[0] if ev.kinds else '?')}) "
                f"{self.of(ev):.4f}")


def paper_score_of(ev: Evaluation) -> float:
    """The papers' score: mean accuracy over the scored lengths of the first kind."""
    return ev.mean_accuracy(ev.kinds[0]) if ev.kinds else float("nan")


#: Every run-level score, in the order the outputs show them.
SCORES: tuple[RunScore, ...] = (
    RunScore("paper_score", paper_score_of, "papers' score", "mean over lengths of the {first} kind",
             "the papers'"),
)


def score_names() -> list[str]:
    """The scores' names (a refused run's row holds NaN under each)."""
    return [s.name for s in SCORES]
