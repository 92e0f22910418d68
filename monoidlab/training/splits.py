"""ListOps generalisation splits: the accuracy of a trained model on each split.

ListOps is classification on the Delétang tape (m = 1: the expression, one empty token, the
value read at the empty token), so a model trains on it like any task
(``monoidlab train --task listops --train_lengths=4:100``); this module scores it on the
length/depth splits of :func:`monoidlab.tasks.listops_splits` (``train``, ``test_longer``,
``test_deeper``, ``test_longer_deeper``).

Example
-------
>>> import torch
>>> from monoidlab.models import build_model
>>> from monoidlab.tasks import get_task
>>> from monoidlab.training.problems import TapeProblem
>>> problem = TapeProblem(get_task("listops"))
>>> model = build_model("rnn", problem.vocab_size, problem.n_classes, hidden=8)
>>> acc = evaluate_splits(model, problem, ["train", "test_deeper"], n=8, seed=0)
>>> sorted(acc), all(0 <= a <= 1 for a in acc.values())
(['test_deeper', 'train'], True)
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from monoidlab._util import eval_mode
from monoidlab.errors import InputError
from monoidlab.evaluation.run import to_device

if TYPE_CHECKING:
    import torch
    from torch import nn

    from monoidlab.tasks.listops import ListOpsSplit

__all__ = ["evaluate_splits", "splits_for"]


def splits_for(problem: Any, names: Iterable[str] | None = None) -> dict[str, ListOpsSplit]:
    """The ListOps splits matching a problem's task (its ``max_args``; train depth =
    its ``max_depth``), restricted to ``names`` (all four by default)."""
    from monoidlab.tasks import ListOps, listops_splits

    if problem.readout != "tape" or not isinstance(problem.task, ListOps):
        raise InputError(f"ListOps splits need a model trained on 'listops', not {problem.name!r}")
    task = problem.task
    splits = listops_splits(max_args=task.max_args, train_max_depth=task.max_depth)
    names = list(splits) if names is None else list(names)
    unknown = [x for x in names if x not in splits]
    if unknown:
        raise InputError(f"unknown ListOps split(s) {unknown}; known: {', '.join(splits)}")
    return {x: splits[x] for x in names}


def evaluate_splits(model: nn.Module, problem: Any,
                    splits: dict[str, ListOpsSplit] | Iterable[str] | None = None,
                    n: int = 512, seed: int = 0, batch_size: int = 32,
                    device: torch.device | str | None = None) -> dict[str, float]:
    """Accuracy of ``model`` on each ListOps split: ``{split name: accuracy}``.

    Parameters
    ----------
    model : a monoidlab model (``forward_all``), trained on ``problem``.
    problem : the :class:`~monoidlab.training.problems.TapeProblem` of a ``listops`` task.
    splits : split names, a ``{name: ListOpsSplit}`` dict, or None (all four splits).
    n : strings per split, drawn in batches of ``batch_size``, each batch at a length drawn
        uniformly from the split's lengths (so ``n / batch_size`` lengths are visited).
    seed : the test set of a split is a pure function of (seed, split name).
    """
    import torch

    if splits is None or not isinstance(splits, dict):
        splits = splits_for(problem, splits)
    device = device or next(model.parameters()).device
    out = {}
    with eval_mode(model):
        for name, split in splits.items():
            rng = np.random.default_rng([seed, 8_888_888, zlib.crc32(name.encode())])
            correct, left = [], int(n)
            while left > 0:
                tb = split.sample(rng, min(batch_size, left))
                b = to_device(problem.tape_batch(tb, split.task), device)
                correct.append(problem.loss(model, b)[1].float().cpu())
                left -= len(tb)
            out[name] = float(torch.cat(correct).mean())
    return out
