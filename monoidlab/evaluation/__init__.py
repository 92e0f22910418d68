"""Evaluation that can fail, in one package: the test kinds, the trivial baselines, the result
with its strict verdict, the evaluation loop and its text.

* :mod:`~monoidlab.evaluation.kinds`: the strings scored (``paper``, ``near_miss``,
  ``ec_stratified``; ``task`` for tasks without an automaton);
* :mod:`~monoidlab.evaluation.baselines`: what a trivial model gets (``BASELINES``: the one
  place to add another);
* :mod:`~monoidlab.evaluation.result`: :class:`Evaluation`, solved / verdict / JSON;
* :mod:`~monoidlab.evaluation.run`: :func:`evaluate_kinds`, seeded test sets per length;
* :mod:`~monoidlab.evaluation.packing`: which test batches share one padded model call;
* :mod:`~monoidlab.evaluation.text`: :func:`evaluation_text`.

>>> from monoidlab.evaluation import KINDS, BASELINES
>>> KINDS[0], "near_miss" in KINDS, [b.name for b in BASELINES]   # KINDS: the registry's
('paper', True, ['majority', 'count_only', 'length_only'])
"""

from monoidlab.evaluation.baselines import BASELINES, Baseline, count_baseline, majority_baseline
from monoidlab.evaluation.kinds import KINDS, check_kinds, classes_at, kind_batch
from monoidlab.evaluation.result import (
    DEFAULT_THRESHOLD,
    Evaluation,
    min_beside_baselines,
    upgrade_results,
)
from monoidlab.evaluation.run import check_test_lengths, evaluate, evaluate_kinds, to_device
from monoidlab.evaluation.text import evaluation_text

__all__ = ["KINDS", "BASELINES", "Baseline", "Evaluation", "DEFAULT_THRESHOLD",
           "evaluate_kinds", "evaluate", "evaluation_text", "check_test_lengths", "check_kinds",
           "classes_at", "kind_batch", "majority_baseline", "count_baseline",
           "min_beside_baselines", "upgrade_results", "to_device"]
