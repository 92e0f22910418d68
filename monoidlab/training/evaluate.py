"""Evaluation of a trained model: accuracy per test length, and per ListOps split.

* :func:`evaluate`: accuracy per length on a fixed, seeded test set per length (the same
  strings for every model and every call with the same seed).
* :func:`score`: the mean over lengths and the solved flag.
* :func:`evaluate_splits`: ListOps on the length/depth splits of
  :func:`monoidlab.tasks.listops_splits` (``train``, ``test_longer``, ``test_deeper``,
  ``test_longer_deeper``); ListOps trains like any tape task
  (``monoidlab train --task listops --train_lengths=4:100``).

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
from typing import Any

import numpy as np

from monoidlab._util import eval_mode
from monoidlab.errors import InputError

__all__ = ["evaluate", "score", "evaluate_splits", "splits_for", "to_device"]


def to_device(batch: dict, device: Any) -> dict:
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


def evaluate(model, problem, lengths, n_per_length: int = 64, seed: int = 0,
             batch_size: int = 256, device=None, progress: bool = False) -> dict:
    """Accuracy per length (``{L: acc}``), in eval mode, on a fixed seeded test set per length."""
    import torch

    device = device or next(model.parameters()).device
    acc = {}
    lens = problem.lengths(lengths)
    it = lens
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(lens, desc="evaluate", leave=False)
    with eval_mode(model):
        for L in it:
            rng = np.random.default_rng([seed, 7_777_777, int(L)])
            correct = []
            left = n_per_length
            while left > 0:
                b = to_device(problem.batch(rng, int(L), min(batch_size, left), train=False), device)
                # a problem may score evaluation differently from training (e.g. exact match
                # under greedy decoding for language-model tasks)
                c = problem.eval_correct(model, b)
                correct.append(c.float().cpu())
                left -= len(c)
            acc[int(L)] = float(torch.cat(correct).mean())
    return acc


def score(acc: dict, threshold: float) -> dict:
    """``{"accuracy": acc, "score": mean over lengths, "solved": score >= threshold}``."""
    mean = float(np.mean(list(acc.values()))) if acc else float("nan")
    return {"accuracy": acc, "score": mean, "solved": bool(mean >= threshold)}


def splits_for(problem, names=None) -> dict:
    """The ListOps splits matching a problem's task (its ``max_args``; train depth =
    its ``max_depth``), restricted to ``names`` (all four by default)."""
    from monoidlab.tasks import ListOps, listops_splits

    if problem.kind != "tape" or not isinstance(problem.task, ListOps):
        raise InputError(f"ListOps splits need a model trained on 'listops', not {problem.name!r}")
    task = problem.task
    splits = listops_splits(max_args=task.max_args, train_max_depth=task.max_depth)
    names = list(splits) if names is None else list(names)
    unknown = [x for x in names if x not in splits]
    if unknown:
        raise InputError(f"unknown ListOps split(s) {unknown}; known: {', '.join(splits)}")
    return {x: splits[x] for x in names}


def evaluate_splits(model, problem, splits=None, n: int = 512, seed: int = 0,
                    batch_size: int = 32, device=None) -> dict[str, float]:
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
