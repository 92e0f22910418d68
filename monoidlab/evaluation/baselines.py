"""Trivial baselines: what a model that cannot do the task gets on the same test strings.

Every accuracy monoidlab prints stands beside these. Each is a :class:`Baseline` in
:data:`BASELINES`, the one place to add another: the evaluation computes every baseline that
applies on every (kind, length) test set, stores it under its name, and the JSON, the text
table, the report and the accuracy figure show it as a column, a row or a dashed line.

* ``majority``: always the most frequent class of this test set (a tape task: the most
  frequent symbol at each output position).
* ``count_only``: the best model that sees only the symbol counts (strings with equal counts
  and length get the majority label of their group): an upper bound for that family, computed
  where strings have one label and the problem has an automaton (small alphabets).
* ``length_only``: the best model that sees only each text's length in tokens (texts of equal
  length get the majority label of their group): an upper bound for that family, computed for
  text classification (:class:`~monoidlab.training.problems.TextProblem`), whose texts differ
  in length inside one reading window.

Example
-------
>>> import numpy as np
>>> s = TestSet(tokens=np.array([[0, 1], [1, 0], [1, 1]]), lengths=np.array([2, 2, 2]),
...             labels=np.array([1, 0, 1]), n_symbols=2)
>>> {b.name: round(b.compute(s), 3) for b in BASELINES if b.compute(s) is not None}
{'majority': 0.667, 'count_only': 0.667}
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from monoidlab._checks import scalar_args
from monoidlab._util import check_batch, length_mask
from monoidlab.errors import InputError
from monoidlab.evaluation.measures import pooled_accuracy

__all__ = ["TestSet", "Baseline", "BASELINES", "majority_baseline", "count_baseline",
           "position_majority", "length_baseline"]


@dataclass
class TestSet:
    """The strings of one (kind, length) test set, as the baselines read them.

    ``labels``: one class per string (None when the outputs are sequences); ``targets`` /
    ``mask``: a tape task's output positions and which of them are scored; ``pooled``: a tape
    task scored by the reference's pooled token accuracy; ``counts``: whether the count-only
    bound applies (an automaton, a small alphabet); ``text_lengths``: each text's length in
    tokens (text classification, where the length-only bound applies)."""

    tokens: np.ndarray
    lengths: np.ndarray
    labels: np.ndarray | None = None
    n_symbols: int = 0
    targets: np.ndarray | None = None
    mask: np.ndarray | None = None
    pooled: bool = False
    counts: bool = True
    text_lengths: np.ndarray | None = None


def majority_baseline(labels: np.ndarray) -> float:
    """Accuracy of always answering the most frequent label of this test set.

    >>> majority_baseline(np.array([1, 0, 0, 0]))
    0.75
    """
    labels = np.asarray(labels)
    return float(np.bincount(labels).max() / len(labels)) if len(labels) else float("nan")


@scalar_args
def count_baseline(tokens: np.ndarray, lengths: np.ndarray, labels: np.ndarray,
                   n_symbols: int) -> float:
    """Accuracy of the best *count-only* model on this test set: strings with equal symbol
    counts (and length) get the majority label of their group. No model that sees only the
    counts can do better on these strings (it is an upper bound for that family).

    >>> count_baseline(np.array([[0, 1], [1, 0], [1, 1]]), np.array([2, 2, 2]),
    ...                np.array([1, 0, 1]), 2)   # "01" and "10" share their counts
    0.6666666666666666
    """
    tokens, lengths = check_batch(tokens, lengths, n_symbols, "count_baseline")
    labels = np.asarray(labels)
    if labels.shape != lengths.shape:
        raise InputError(f"count_baseline: labels must have shape {lengths.shape} (one per "
                         f"string), got {labels.shape}")
    if not len(labels):
        return float("nan")
    valid = length_mask(lengths, tokens.shape[1])
    counts = np.stack([((tokens == a) & valid).sum(1) for a in range(n_symbols)], axis=1)
    keys = np.concatenate([lengths[:, None], counts], axis=1)
    _, group = np.unique(keys, axis=0, return_inverse=True)
    group = group.ravel()
    table = np.zeros((group.max() + 1, labels.max() + 1), np.int64)
    np.add.at(table, (group, labels), 1)
    return float(table.max(axis=1).sum() / len(labels))


def length_baseline(lengths: np.ndarray, labels: np.ndarray) -> float:
    """Accuracy of the best *length-only* model on this test set: strings of equal length get
    the majority label of their group (an upper bound for models that see only the length).

    >>> length_baseline(np.array([3, 3, 5, 5]), np.array([0, 1, 1, 1]))
    0.75
    """
    lengths, labels = np.asarray(lengths), np.asarray(labels)
    if not len(labels):
        return float("nan")
    _, group = np.unique(lengths, return_inverse=True)
    table = np.zeros((group.max() + 1, labels.max() + 1), np.int64)
    np.add.at(table, (group.ravel(), labels), 1)
    return float(table.max(axis=1).sum() / len(labels))


def position_majority(targets: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Per string, the scored positions that the *position majority* gets right: a model that
    answers, at each output position, the most frequent scored target there (for a
    classification task, the majority class).

    >>> position_majority(np.array([[0, 1], [0, 0], [1, 1]]), np.ones((3, 2), bool)).tolist()
    [2, 1, 1]
    """
    B, m = targets.shape
    table = np.zeros((m, int(targets.max(initial=0)) + 1), np.int64)
    np.add.at(table, (np.broadcast_to(np.arange(m), (B, m))[mask], targets[mask]), 1)
    return ((targets == table.argmax(1)[None, :]) & mask).sum(1)


def _majority(s: TestSet) -> float | None:
    if s.targets is not None and s.mask is not None:  # a tape: per output position
        hits, n = position_majority(s.targets, s.mask), s.mask.sum(1)
        return pooled_accuracy(hits, n) if s.pooled else float(np.mean(hits / np.maximum(n, 1)))
    return None if s.labels is None else majority_baseline(s.labels)


def _count_only(s: TestSet) -> float | None:
    if s.labels is None or not s.counts:
        return None
    return count_baseline(s.tokens, s.lengths, s.labels, s.n_symbols)


def _length_only(s: TestSet) -> float | None:
    if s.labels is None or s.text_lengths is None:
        return None
    return length_baseline(s.text_lengths, s.labels)


@dataclass(frozen=True)
class Baseline:
    """A trivial model's accuracy on a test set (None where it does not apply)."""

    name: str
    meaning: str
    compute: Callable[[TestSet], float | None]
    #: shown in text tables only where it applies (a column of "nan" for every other problem)
    optional: bool = False


BASELINES: tuple[Baseline, ...] = (
    Baseline("majority", "always the most frequent class of the test set (a tape: the most "
                         "frequent symbol at each output position)", _majority),
    Baseline("count_only", "the best model that sees only the symbol counts", _count_only),
    Baseline("length_only", "the best model that sees only each text's length in tokens",
             _length_only, optional=True),
)
