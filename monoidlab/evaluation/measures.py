"""The two accuracy definitions of a tape task, per length: ``per_string`` (monoidlab's: the
mean over strings of each string's right scored positions over its scored ones) and ``pooled``
(Delétang et al.'s released code: :func:`pooled_accuracy`). They differ only where strings
have different numbers of scored positions; :attr:`TokenScored.measure` names the one that
decides *solved*.

>>> pooled_accuracy([1, 2], [1, 4]), MEASURES
(0.6, ('per_string', 'pooled'))
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["pooled_accuracy", "TokenScored", "POOL_SIZE", "MEASURES"]

#: strings per sub-batch of the reference's range evaluation (``range_test_sub_batch_size``)
POOL_SIZE = 64
#: the two accuracy definitions of a tape task (see :class:`TokenScored`)
MEASURES = ("per_string", "pooled")


def pooled_accuracy(hits: Any, counts: Any, sub_batch: int = POOL_SIZE) -> float:
    """The reference's accuracy of one length: the strings, in order, cut into sub-batches of
    ``sub_batch``; per sub-batch, right scored tokens over scored tokens; the mean over the
    sub-batches (each sub-batch weighs the same, a long answer weighs more than a short one).

    >>> pooled_accuracy([1, 2], [1, 4])    # one string 1/1 right, one 2/4: 3 tokens of 5
    0.6
    >>> pooled_accuracy([1, 2], [1, 4], sub_batch=1)   # one string per sub-batch: per string
    0.75
    """
    h = np.asarray(hits, dtype=np.float64)
    c = np.asarray(counts, dtype=np.float64)
    if not len(h):
        return float("nan")
    cuts = range(0, len(h), int(sub_batch))
    return float(np.mean([h[i:i + sub_batch].sum() / c[i:i + sub_batch].sum() for i in cuts]))


@runtime_checkable
class TokenScored(Protocol):
    """A problem scored per output token, with two accuracy definitions per length
    (:data:`MEASURES`): ``measure`` names the one that decides *solved*."""

    measure: str

    def eval_counts(self, model: Any, batch: dict) -> tuple[Any, Any]:
        """Per string: right scored tokens and scored tokens (two (B,) tensors)."""
        ...
