"""Test batches of several lengths scored in one model call: which may share a call, and how
their rows are put together.

Scoring one test length at a time costs one model call per (kind, length): 460 lengths x 3
kinds are 1,380 calls of 64 strings, and a model that loops over time steps in Python
(Stack-RNN, Tape-RNN) pays its per-step overhead in every one of them. :func:`concat_batches`
right-pads the batches of neighbouring lengths to one width and stacks them. A model that
defines ``eval_group(length)`` promises to read each row at its own length (causal recurrences
and scans never look past it, the Transformer hides padded keys, a tape is read at each row's
own outputs: :func:`tape_counts`), so each string gets the prediction it gets alone
(tests/test_batched_eval.py checks it for every model of the registry that defines it).

``eval_group`` also says which lengths may share a call (:func:`length_group`): equal groups
may, None never; e.g. MLP-LDRU keeps the strings of one balanced buffer together. A model
without it (a user's module, a test's stub) makes no promise and is scored one batch at a time,
as before. A call holds at most ``max_tokens`` padded tokens (rows x width), so memory is
bounded whatever the lengths (a model may ask for fewer: ``eval_max_tokens``).

Example
-------
>>> import numpy as np
>>> a = {"tokens": np.ones((2, 3), np.int64), "lengths": np.array([3, 3]),
...      "targets": np.array([0, 1])}
>>> b = {"tokens": np.ones((1, 5), np.int64), "lengths": np.array([5]), "targets": np.array([1])}
>>> p = concat_batches([a, b])
>>> p["tokens"].tolist(), p["lengths"].tolist(), row_splits([a, b])
([[1, 1, 1, 0, 0], [1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], [3, 3, 5], [2])
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Protocol, runtime_checkable

import numpy as np

from monoidlab.models.protocols import PrefixModel, TapeModel

__all__ = ["GroupedModel", "length_group", "token_budget", "concat_batches", "row_splits",
           "padded_tokens", "tape_counts", "DEFAULT_MAX_TOKENS", "PACKED_READOUTS"]

#: padded tokens (rows x width) of one evaluation call: 2^16 int64 tokens and a 256-wide state
#: per token are 64 MiB, and calls this large already amortise the per-call overhead
DEFAULT_MAX_TOKENS = 2**16
#: the readouts whose batches can be stacked: one class per string, Delétang's tape (a
#: next-token problem decodes greedily, prompt by prompt: its batches are scored alone)
PACKED_READOUTS = ("string", "tape")


@runtime_checkable
class GroupedModel(Protocol):
    """A model that says which test lengths may share one evaluation call: equal groups may,
    None never."""

    def eval_group(self, length: int) -> Hashable | None: ...


def length_group(model: Any, problem: Any, length: int) -> Hashable | None:
    """The group of test length ``length`` for this model and problem: batches of lengths in
    the same group may be stacked into one call; None: every batch is scored on its own.

    >>> import torch
    >>> from monoidlab.models import build_model
    >>> from monoidlab.training.problems import LanguageProblem
    >>> import monoidlab as ml
    >>> problem = LanguageProblem(ml.load_language("parity"))
    >>> ldru = build_model("mlp-ldru", 2, 2, d=8)
    >>> [length_group(ldru, problem, L) for L in (41, 64, 65)]   # its balanced buffer
    [64, 64, 128]
    >>> length_group(build_model("rnn", 2, 2, hidden=8), problem, 41)
    41
    >>> length_group(torch.nn.Linear(2, 2), problem, 41) is None   # not a monoidlab model
    True
    """
    readout = getattr(problem, "readout", None)
    if readout not in PACKED_READOUTS:
        return None
    if readout == "tape" and not isinstance(model, PrefixModel | TapeModel) and (
            _outputs(problem, length) != 1):
        return None  # a tape read by a Classifier (GRC) must end at its one output
    # a model says so (tests/test_batched_eval.py checks each that does); others may not read
    # each row at its own length
    return model.eval_group(int(length)) if isinstance(model, GroupedModel) else None


def _outputs(problem: Any, length: int) -> int | None:
    """Output tokens of a tape of input length ``length`` (None: the problem cannot say)."""
    task = getattr(problem, "task", None)
    return int(task.output_length(int(length))) if task is not None else None


def token_budget(model: Any, max_tokens: int) -> int:
    """The padded tokens one call may hold: ``max_tokens``, or less where the model asks
    (``eval_max_tokens``: attention holds a (rows, heads, width, width) mask)."""
    return int(min(max_tokens, getattr(model, "eval_max_tokens", max_tokens)))


def padded_tokens(batches: list[dict]) -> int:
    """Rows x width of the batches stacked: what one call holds."""
    if not batches:
        return 0
    return sum(len(b["lengths"]) for b in batches) * max(b["tokens"].shape[1] for b in batches)


def row_splits(batches: list[dict]) -> list[int]:
    """Where the rows of each batch end in the stacked batch (for ``np.split``)."""
    return np.cumsum([len(b["lengths"]) for b in batches])[:-1].tolist()


def concat_batches(batches: list[dict]) -> dict:
    """Problem batches stacked row-wise: 2-D arrays (tokens, a tape's targets and mask)
    right-padded with zeros (False) to the widest, 1-D arrays concatenated, and a scalar (a
    tape's ``out_start``: where its outputs begin) repeated per row, so a row keeps its own.
    Every batch must have the same keys."""
    if len(batches) == 1:
        return batches[0]
    out: dict[str, Any] = {}
    for key in batches[0]:
        values = [b[key] for b in batches]
        if isinstance(values[0], np.ndarray) and values[0].ndim == 2:
            w = max(v.shape[1] for v in values)
            out[key] = np.concatenate([np.pad(v, ((0, 0), (0, w - v.shape[1])))
                                       for v in values])
        elif isinstance(values[0], np.ndarray):
            out[key] = np.concatenate(values)
        else:  # one value per batch -> one per row
            out[key] = np.concatenate([np.full(len(b["lengths"]), v)
                                       for b, v in zip(batches, values)])
    return out


def tape_counts(model: Any, batch: dict) -> tuple[Any, Any]:
    """Per row of stacked tapes (tensors; ``out_start`` (B,): where each row's outputs begin):
    right scored positions and scored positions, as
    :meth:`~monoidlab.training.problems.TapeProblem.eval_counts` gives each tape alone. Row b
    is read at positions out_start[b] + j; past its own outputs (j >= its m) the mask is False.
    A model without per-position predictions (BBT-GRC, RIR-GRC) is stacked on tapes of one
    output only (:func:`length_group`), and reads each row's class at its own length.
    """
    import torch

    tokens, lengths, start = batch["tokens"], batch["lengths"], batch["out_start"]
    targets, mask = batch["targets"], batch["mask"]
    if not isinstance(model, PrefixModel | TapeModel):
        # a Classifier (the GRC models) on tapes of one output: each row's tape ends at its
        # output, where the string's class is read (as TapeProblem.forward reads one tape)
        pred = model(tokens, lengths).argmax(-1)[:, None]
        return ((pred == targets) & mask).sum(1), mask.sum(1)
    if isinstance(model, TapeModel):  # Tape-RNN: its jumps move by each row's input length
        logits = model.forward_tape(tokens, lengths, start)
    else:
        logits = model.forward_all(tokens, lengths)
    idx = (start[:, None] + torch.arange(targets.shape[1], device=start.device)).clamp(
        max=logits.shape[1] - 1)
    pred = logits.argmax(-1).gather(1, idx)
    return ((pred == targets) & mask).sum(1), mask.sum(1)
