"""Restarts, validation and early stopping: what decides when a run stops and which weights it
keeps, beside the bare step loop (:mod:`monoidlab.training.loop`).

* A run with ``restarts`` is up to 1 + restarts *attempts* of ``steps`` steps each, counted in
  one global step (attempt a: steps a*steps ..); a later attempt takes the seed
  :func:`attempt_config` gives (fresh initial weights, batches, dropout; the test strings stay
  those of the run's seed).
* Every ``eval_every`` steps the weights are validated on fresh strings
  (:func:`validation_seed`: never the test set's); :class:`Validation` keeps the best validated
  weights (:func:`selection_key`) and stops the run after ``early_stop`` solved validations in
  a row. Its state travels in the checkpoint, so a resumed run stops where the whole run would.

Example
-------
>>> from monoidlab.training.config import RunConfig
>>> cfg = RunConfig(language="parity", steps=100, restarts=2, eval_every=100, early_stop=1)
>>> attempt_config(cfg, 0).seed, attempt_config(cfg, 1).seed != attempt_config(cfg, 2).seed
(0, True)
>>> [weights_attempt(cfg, s) for s in (50, 100, 101, 200, 300)]
[0, 0, 1, 1, 2]
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from monoidlab.errors import CheckpointError
from monoidlab.evaluation.result import Evaluation
from monoidlab.training.config import RunConfig
from monoidlab.training.run_folder import read_checkpoint, save_checkpoint, weights_checksum

if TYPE_CHECKING:
    import torch
    from torch import nn

__all__ = ["attempt_config", "weights_attempt", "validation_seed", "Validation",
           "selection_key", "validation_metrics", "read_best", "read_run_best",
           "read_run_refined"]


def validation_seed(seed: int, step: int) -> int:
    """The seed of the validation strings at ``step``: fresh strings at every validation (a
    streak of solved validations then covers new strings each time) and never the test set's
    (the test strings are seeded by ``seed`` itself, so a validation on test lengths would
    otherwise select weights on the very strings they are tested on).

    >>> validation_seed(0, 500) != validation_seed(0, 1000) != 0
    True
    """
    # 0x76616c = "val": a separate stream of the seed sequence, not an offset that could land
    # on another run's seed
    return int(np.random.SeedSequence([int(seed), 0x76616C, int(step)]).generate_state(1)[0])


def attempt_config(cfg: RunConfig, attempt: int) -> RunConfig:
    """The config of attempt ``attempt``: attempt 0 is the run's own config; a later attempt
    differs only in its seed (fresh initial weights, batches, dropout; the test strings stay
    those of the run's seed)."""
    if attempt == 0:
        return cfg
    seed = int(np.random.SeedSequence([int(cfg.seed), 0x726573, int(attempt)]).generate_state(1)[0])
    return cfg.replace(seed=seed)


def weights_attempt(cfg: RunConfig, step: int) -> int:
    """The attempt whose training produced the weights validated (or saved) at global ``step``:
    a validation at step s sees the weights after steps 0..s-1, so the one at the first step
    of attempt a (s = a*steps) judges attempt a-1's last weights."""
    return min(max(int(step) - 1, 0) // cfg.steps, cfg.restarts)


def selection_key(ev: Evaluation) -> tuple[bool, float, float]:
    """What the best validated weights maximise: solved, then the minimum accuracy over kinds
    (the strict verdict's margin), then the mean (at equal minima, e.g. one wrong string at some
    length on both, the fewer wrong strings in all)."""
    kinds = ev.scored_kinds
    if not kinds:
        return (ev.solved, 0.0, 0.0)
    return (ev.solved, float(min(ev.min_accuracy(k) for k in kinds)),
            float(np.mean([ev.mean_accuracy(k) for k in kinds])))


def validation_metrics(ev: Evaluation) -> dict[str, Any]:
    """A validation's line of ``metrics.jsonl``."""
    mins = [ev.min_accuracy(k) for k in ev.scored_kinds]
    means = [ev.mean_accuracy(k) for k in ev.scored_kinds]
    return {"val_min_accuracy": float(min(mins)) if mins else float("nan"),
            "val_mean_accuracy": float(np.mean(means)) if means else float("nan"),
            "val_solved": ev.solved, **{f"val_{k}": v for k, v in ev.scores().items()},
            **{f"val_min_{k}": ev.min_accuracy(k) for k in ev.kinds}}


class Validation:
    """Early stopping on the strict validation, and the best validated weights.

    ``update`` records a validation; it returns True when the last ``patience`` validations
    were all solved (stop). The best weights (:func:`selection_key`; later wins ties) are kept
    in memory and, with a run folder, in ``best.pt``.
    """

    def __init__(self, patience: int, config: dict | None = None) -> None:
        self.patience = patience
        self.config = config  # the run's config: best.pt carries it, to be matched on load
        self.streak = 0
        self.first_solved: int | None = None
        self.best_step: int | None = None
        self.best_key: tuple | None = None
        self.best_state: dict[str, Any] | None = None
        self.best_sha: str | None = None  # recorded in checkpoint.pt: binds best.pt to the run

    def update(self, step: int, ev: Evaluation, model: nn.Module, out: Path | None) -> bool:
        key = selection_key(ev)
        if ev.solved and self.first_solved is None:
            self.first_solved = step
        self.streak = self.streak + 1 if ev.solved else 0
        if self.patience and (self.best_key is None or key >= self.best_key):
            self.best_key, self.best_step = key, step
            self.best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            self.best_sha = weights_checksum(self.best_state)
            if out:
                save_checkpoint({"model": self.best_state, "step": step,
                                 **({"config": self.config} if self.config else {})},
                                out / "best.pt")
        return self.stopped

    def new_attempt(self) -> None:
        """A restart: the streak starts again (the best weights so far stay)."""
        self.streak = 0

    @property
    def stopped(self) -> bool:
        return bool(self.patience) and self.streak >= self.patience

    def state(self) -> dict:
        return {"streak": self.streak, "first_solved": self.first_solved,
                "best_step": self.best_step,
                "best_key": list(self.best_key) if self.best_key else None,
                "best_sha": self.best_sha}

    def load(self, ckpt: dict, out: Path | None) -> None:
        """The state of a resumed run: from its checkpoint, and its best weights from
        ``best.pt`` (verified to belong to the run: :func:`read_run_best`)."""
        state = ckpt.get("early_stop")
        if not state:
            return
        self.streak, self.first_solved = state["streak"], state["first_solved"]
        self.best_step = state["best_step"]
        self.best_key = tuple(state["best_key"]) if state["best_key"] else None
        kept = read_run_best(out, ckpt) if out else None
        if kept is not None:
            self.best_state = kept["model"]
            self.best_sha = weights_checksum(self.best_state)

    def summary(self) -> dict:
        if not self.patience and self.first_solved is None:
            return {}
        return {"first_solved_step": self.first_solved, "best_step": self.best_step,
                "stopped_early": self.stopped}


def read_best(path: Path, device: torch.device | str = "cpu") -> dict:
    """A ``best.pt`` file: ``{"model": weights, "step": int, "config": dict}`` (weights only,
    verified as checkpoints are: keys, checksums, finite weights; ``config`` since 0.2)."""
    return read_checkpoint(path, device, need=("model", "step"))


def _same_config(a: Any, b: Any) -> bool:
    """Two saved configs of one run: equal as configs (a key added by a later release, absent
    from the older file, takes its default in both), else equal as written."""
    if a == b:
        return True
    from monoidlab.errors import MonoidlabError
    from monoidlab.training.parse import config_from_dict

    try:
        return bool(config_from_dict(a, "best.pt", saved=True)
                    == config_from_dict(b, "checkpoint.pt", saved=True))
    except (MonoidlabError, TypeError, ValueError):
        return False


def read_run_best(folder: Path, ckpt: dict, device: torch.device | str = "cpu") -> dict | None:
    """The run folder's ``best.pt`` (None when absent), refused unless it belongs to the run of
    ``ckpt`` (its ``checkpoint.pt``): the weights the checkpoint records as the best (their
    checksum), and, when it carries one, the same config. A ``best.pt`` copied from another
    run, or edited, is one :class:`~monoidlab.errors.CheckpointError`. A best newer than the
    checkpoint (a run killed between the two writes) must carry the run's config."""
    path = Path(folder) / "best.pt"
    if not os.path.lexists(path):
        return None
    kept = read_best(path, device)
    config = kept.get("config")
    if config is not None and not _same_config(config, ckpt.get("config")):
        raise CheckpointError(f"{path}: written by another run (its config is not the one of "
                              f"{Path(folder) / 'checkpoint.pt'}); refusing to use it")
    sha = (ckpt.get("early_stop") or {}).get("best_sha")
    if sha is not None:
        if kept["step"] <= ckpt["step"]:
            if weights_checksum(kept["model"]) != sha:
                raise CheckpointError(f"{path}: not the best weights that checkpoint.pt "
                                      "records (copied from another run, or edited); refusing "
                                      "to use it")
        elif config is None:
            raise CheckpointError(f"{path}: newer than checkpoint.pt and without the run's "
                                  "config; refusing to use it")
    return kept


def read_run_refined(folder: Path, ckpt: dict, device: torch.device | str = "cpu"
                     ) -> dict | None:
    """The run folder's ``refined.pt`` (None when absent): weights a refinement proved correct,
    refused unless they were refined from the weights ``ckpt`` holds (its ``model``: the best
    validated or the last) under the same config."""
    from monoidlab.training.run_folder import REFINED

    path = Path(folder) / REFINED
    if not os.path.lexists(path):
        return None
    kept = read_checkpoint(path, device, need=("model", "step", "config", "refined_from"))
    if not _same_config(kept["config"], ckpt.get("config")):
        raise CheckpointError(f"{path}: written by another run (its config is not the one of "
                              f"{Path(folder) / 'checkpoint.pt'}); refusing to use it")
    if kept["refined_from"] != weights_checksum(ckpt["model"]):
        raise CheckpointError(f"{path}: not refined from this run's scored weights (copied "
                              "from another run, or the run was trained again); refusing to "
                              "use it")
    return kept
