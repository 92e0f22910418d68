"""The bundled trainer: read top to bottom in execution order (validation → a restart's fresh
weights → lr/checkpoint → forward/backward → clip → step → log), in the spirit of nanoGPT's
``train.py``.

Reproducibility and resumption: the batch of step s is drawn from ``default_rng([seed, s])`` and
torch's RNG (dropout) is re-seeded from (seed, s) at every step, so a run resumed from a
checkpoint at step s continues exactly as the uninterrupted run would (tested). With
``restarts`` a run is up to 1 + restarts attempts of ``steps`` steps each, counted in one global
step (attempt a: steps a*steps ..); a later attempt takes the seed :func:`attempt_config` gives.
The batch of a step comes from :func:`training_batch`, which probing also uses to regenerate a
run's training strings. Checkpoints are written atomically and hold weights, optimiser state,
step and config (no RNG state: the per-step seeding makes it redundant); they load with
``torch.load(weights_only=True)``. The run folder's mechanics (refusing to overwrite a run, the
lock, checkpoint checksums, tolerant metrics) live in :mod:`monoidlab.training.run_folder`.

Example
-------
>>> from monoidlab._util import Lengths
>>> from monoidlab.training import TrainConfig, train
>>> cfg = TrainConfig(language="parity", model="mlp-ldru", steps=5, batch_size=8,
...                   test_lengths=Lengths(41, 42), test_samples=4, model_kwargs={"d": 16})
>>> result = train(cfg, out_dir=None, progress=False)
>>> sorted(result["accuracy"]), sorted(result["accuracy"]["balanced"])
(['balanced', 'ec_stratified', 'near_miss'], [41, 42])
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from monoidlab._util import atomic_write_text, progress_bar
from monoidlab.errors import CheckpointError, ConfigError, InputError, TrainingDiverged
from monoidlab.models.protocols import ConsistentModel, RegularisedModel
from monoidlab.training.config import TrainConfig
from monoidlab.training.evaluate import Evaluation, check_test_lengths, evaluate_kinds, to_device
from monoidlab.training.run_folder import (
    RunFolder,
    read_checkpoint,
    save_checkpoint,
    truncate_metrics,
)

if TYPE_CHECKING:
    import torch
    from torch import nn

    from monoidlab.training.problems import Problem

__all__ = ["train", "load_checkpoint", "TrainingDiverged", "pick_device", "build_for", "lr_at",
           "training_batch", "read_checkpoint"]


def pick_device(name: str = "auto") -> torch.device:
    """``torch.device`` for "auto" (CUDA when present), "cpu", "cuda" or "cuda:N"."""
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(name)
    except RuntimeError:
        raise InputError(f"unknown device {name!r}; use auto, cpu, cuda or cuda:N") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise InputError(f"device {name!r} requested but CUDA is not available")
    return dev


def lr_at(cfg: TrainConfig, step: int) -> float:
    """Linear warm-up from 1e-8 (the MLP-LDRU authors' start), then constant or cosine."""
    warm = int(cfg.warmup * cfg.steps)
    if step < warm:
        return 1e-8 + (cfg.lr - 1e-8) * step / warm
    if cfg.lr_schedule == "cosine":
        t = (step - warm) / max(1, cfg.steps - warm)
        return cfg.lr * 0.5 * (1 + math.cos(math.pi * t))
    return cfg.lr


def _optimizer(cfg: TrainConfig, params: Iterable[Any]) -> torch.optim.Optimizer:
    """The optimiser of a config. ``amsgrad`` is torch's (the maximum of the raw second moment);
    ``amsgrad-optax`` is optax's (the maximum of the bias-corrected one: the MLP-LDRU authors',
    :class:`~monoidlab.training.optim.AMSGradOptax`)."""
    import torch

    if cfg.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    if cfg.optimizer == "amsgrad-optax":
        from monoidlab.training.optim import AMSGradOptax

        return AMSGradOptax(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    return torch.optim.Adam(params, lr=cfg.lr, weight_decay=cfg.weight_decay,
                            amsgrad=cfg.optimizer == "amsgrad")


def build_for(cfg: TrainConfig, problem: Problem) -> nn.Module:
    """The model of a config, sized for the problem's vocabulary and classes."""
    from monoidlab.models import build_model

    try:
        model = build_model(cfg.model, vocab_size=problem.vocab_size,
                            n_classes=problem.n_classes, **cfg.model_kwargs)
    except (TypeError, ValueError, ZeroDivisionError, RuntimeError) as exc:  # e.g. d = 0 or -4
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(f"key 'model_kwargs' of model {cfg.model!r}: {msg}") from None
    empty = [n for n, p in model.named_parameters() if p.numel() == 0]
    if empty:  # a zero size (hidden = 0): it would train nothing, or never finish
        raise ConfigError(f"key 'model_kwargs' of model {cfg.model!r}: {cfg.model_kwargs} gives "
                          f"empty weights ({empty[0]}); sizes must be >= 1")
    return model


def training_batch(cfg: TrainConfig, problem: Problem, train_lengths: np.ndarray,
                   step: int) -> tuple[int, dict[str, Any]]:
    """``(length, numpy batch)`` of training step ``step``: a length drawn uniformly from
    ``train_lengths``, then the problem's batch, both from ``default_rng([seed, step])``."""
    rng = np.random.default_rng([cfg.seed, step])
    L = int(rng.choice(train_lengths))
    return L, problem.batch(rng, L, cfg.batch_size, train=True)


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


def attempt_config(cfg: TrainConfig, attempt: int) -> TrainConfig:
    """The config of attempt ``attempt`` of a run with ``restarts``: attempt 0 is the run's own
    config; a later attempt differs only in its seed (fresh initial weights, batches, dropout;
    the test strings stay those of the run's seed).

    >>> from monoidlab.training.config import TrainConfig
    >>> cfg = TrainConfig(language="parity", restarts=2, eval_every=100, early_stop=1)
    >>> attempt_config(cfg, 0).seed, attempt_config(cfg, 1).seed != attempt_config(cfg, 2).seed
    (0, True)
    """
    if attempt == 0:
        return cfg
    seed = int(np.random.SeedSequence([int(cfg.seed), 0x726573, int(attempt)]).generate_state(1)[0])
    return dataclasses.replace(cfg, seed=seed)


def weights_attempt(cfg: TrainConfig, step: int) -> int:
    """The attempt whose training produced the weights validated (or saved) at global ``step``:
    a validation at step s sees the weights after steps 0..s-1, so the one at the first step
    of attempt a (s = a*steps) judges attempt a-1's last weights.

    >>> from monoidlab.training.config import TrainConfig
    >>> cfg = TrainConfig(language="parity", steps=100, restarts=2, eval_every=100, early_stop=1)
    >>> [weights_attempt(cfg, s) for s in (50, 100, 101, 200, 300)]
    [0, 0, 1, 1, 2]
    """
    return min(max(int(step) - 1, 0) // cfg.steps, cfg.restarts)


def _fresh(cfg: TrainConfig, problem: Problem, device: torch.device
           ) -> tuple[nn.Module, torch.optim.Optimizer]:
    """Initial weights (seeded by ``cfg.seed``) and a new optimiser."""
    import torch

    torch.manual_seed(cfg.seed)
    model = build_for(cfg, problem).to(device)
    return model, _optimizer(cfg, model.parameters())


def _seed_torch(cfg: TrainConfig, step: int) -> None:
    import torch

    torch.manual_seed((cfg.seed * 1_000_003 + step) % (2**63))


def load_checkpoint(path: str | os.PathLike, device: torch.device | str = "cpu"
                    ) -> tuple[nn.Module, TrainConfig, Problem, dict[str, Any]]:
    """``(model, config, problem, checkpoint dict)`` from a checkpoint file (weights_only).

    Given a run folder, the weights are those the run's results were measured on: ``best.pt``
    when early stopping kept one (``ckpt["step"]`` is then its step, ``ckpt["last_step"]``
    the checkpoint's), else ``checkpoint.pt``. A file path loads exactly that file.
    """

    from monoidlab.training.config import config_from_dict
    from monoidlab.training.problems import make_problem

    path = Path(path)
    best = None
    if path.is_dir():
        best = path / "best.pt"
        path = path / "checkpoint.pt"
    if not path.is_file():
        raise CheckpointError(f"no checkpoint at {path}")
    ckpt = read_checkpoint(path, device)  # verified: keys, checksums, finite weights
    if best is not None and best.is_file():
        kept = read_best(best, device)
        ckpt = {**ckpt, "model": kept["model"], "step": kept["step"], "last_step": ckpt["step"]}
    cfg = config_from_dict(ckpt["config"], str(path))
    problem = make_problem(cfg)
    model = build_for(cfg, problem).to(device)
    try:
        model.load_state_dict(ckpt["model"])
    except (RuntimeError, KeyError, TypeError) as exc:
        raise CheckpointError(f"{path}: the weights do not fit model {cfg.model!r} "
                              f"({str(exc).splitlines()[0]})") from None
    model.eval()
    return model, cfg, problem, ckpt


def train(cfg: TrainConfig, out_dir: str | os.PathLike | None = None, resume: bool = False,
          progress: bool = True, evaluate_at_end: bool = True,
          overwrite: bool = False, stop_at: int | None = None) -> dict[str, Any]:
    """Train a model; returns ``{"evaluation": ..., "solved", "verdict", "score_balanced",
    "accuracy": {kind: {L: acc}}, "steps", ...}`` (the strict evaluation of
    :mod:`monoidlab.training.evaluate`, unless ``evaluate_at_end`` is False).

    With ``out_dir``: ``checkpoint.pt`` (atomic, every ``checkpoint_every`` steps and at the
    end), ``metrics.jsonl`` (one JSON object per logged step), ``config.json`` and
    ``results.json``. ``resume=True`` continues from ``out_dir/checkpoint.pt``. A folder that
    already holds a run is refused unless ``resume`` or ``overwrite`` (which replaces it); the
    folder is locked while the run trains (:class:`~monoidlab.training.run_folder.RunFolder`).

    ``stop_at`` pauses the run before global step ``stop_at`` (after that step's validation and
    checkpoint): nothing is evaluated and no ``results.json`` is written; the result says
    ``{"paused": True, "steps": stop_at}``, and ``resume=True`` continues it exactly as if it had
    never stopped (a long run trained across several sessions). It changes nothing of the run.
    """
    cfg.validate()
    if stop_at is not None and (isinstance(stop_at, bool) or not isinstance(stop_at, int)
                                or stop_at < 1):
        raise InputError(f"stop_at: expected a step >= 1, got {stop_at!r}")
    if not out_dir:
        if resume:
            raise CheckpointError("--resume needs the run folder to continue (--out)")
        return _train(cfg, None, False, progress, evaluate_at_end, stop_at)
    with RunFolder(out_dir, resume=resume, overwrite=overwrite) as run:  # before any work
        return _train(cfg, run.path, resume, progress, evaluate_at_end, stop_at)


def _train(cfg: TrainConfig, out_dir: Path | None, resume: bool, progress: bool,
           evaluate_at_end: bool, stop_at: int | None = None) -> dict[str, Any]:
    import torch

    from monoidlab.training.config import config_from_dict
    from monoidlab.training.problems import make_problem

    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    device = pick_device(cfg.device)
    problem = make_problem(cfg)
    train_lengths = problem.lengths(cfg.train_lengths)
    test_lengths = cfg.test_lengths
    if evaluate_at_end:  # warn before minutes of training, not after
        check_test_lengths(problem, test_lengths)
    out = Path(out_dir) if out_dir else None
    ckpt_path = out / "checkpoint.pt" if out else None
    step0 = 0
    watch = _Validation(cfg.early_stop)
    ckpt = None
    if resume:
        if not (ckpt_path and ckpt_path.is_file()):
            raise CheckpointError(f"--resume: no checkpoint at {ckpt_path}")
        ckpt = read_checkpoint(ckpt_path, device)
        saved = config_from_dict(ckpt["config"], str(ckpt_path)).as_dict()
        if saved != cfg.as_dict():
            diff = sorted(k for k in saved if saved[k] != cfg.as_dict().get(k))
            raise ConfigError(f"--resume: config differs from the checkpoint's in {diff}")
        step0 = int(ckpt["step"])
        watch.load(ckpt.get("early_stop"), out)
    # step counts over all attempts: attempt a trains global steps a*steps .. (a+1)*steps - 1
    total = cfg.steps * (1 + cfg.restarts)
    attempt = min(step0 // cfg.steps, cfg.restarts)
    if watch.stopped:  # stopped by the validation at step0: its weights are the attempt before
        attempt = weights_attempt(cfg, step0)
    acfg = attempt_config(cfg, attempt)
    model, opt = _fresh(acfg, problem, device)
    if ckpt is not None:
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
    if out:
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out / "config.json", json.dumps(cfg.as_dict(), indent=2))
        truncate_metrics(out / "metrics.jsonl", step0)
    fwd_model = torch.compile(model) if cfg.compile else model
    writer = _tensorboard(out)
    use_bf16 = cfg.bf16 and device.type == "cuda"

    def save(step: int) -> None:
        if not ckpt_path:
            return
        # no RNG state: step s re-seeds both the data and torch from (seed, s)
        save_checkpoint({
            "model": model.state_dict(), "optimizer": opt.state_dict(), "step": step,
            "config": cfg.as_dict(), "early_stop": watch.state(),
            "problem": {"name": problem.name, "vocab_size": problem.vocab_size,
                        "n_classes": problem.n_classes}}, ckpt_path)

    def validate(step: int) -> bool:
        """Validate the current weights (fresh strings); True: early stopping says stop."""
        val = cfg.val_lengths or test_lengths
        ev = evaluate_kinds(model, problem, val, cfg.val_samples, validation_seed(cfg.seed, step),
                            cfg.eval_kinds, cfg.solved_threshold, device=device)
        _log(log_fh, writer, step, {**_val_metrics(ev), **({"attempt": attempt} if cfg.restarts
                                                            else {})})
        return watch.update(step, ev, model, out)

    bar: Any = range(step0, total)  # or its tqdm
    if progress:
        bar = progress_bar(bar, initial=step0, total=total, desc=f"{cfg.model} on {problem.name}",
                   dynamic_ncols=True)
    model.train()
    t0, ema_loss, ema_acc = time.time(), None, None
    log_fh = open(out / "metrics.jsonl", "a") if out else None  # noqa: SIM115
    last, stopped, paused = total, False, False
    if watch.stopped:  # resumed after an early stop: nothing left to train
        bar, last, stopped = range(0), step0, True
    try:
        for step in bar:
            a, local = divmod(step, cfg.steps)
            # 1. periodic validation (of the weights *before* this step; local 0 of a new
            # attempt validates the previous attempt's last weights)
            if cfg.eval_every and step > step0 and local % cfg.eval_every == 0 and validate(step):
                last, stopped = step, True  # solved at K validations in a row
                break
            # 2. a new attempt: fresh weights, optimiser and batches (the best weights stay)
            if a != attempt:
                attempt, acfg = a, attempt_config(cfg, a)
                model, opt = _fresh(acfg, problem, device)
                model.train()
                fwd_model = torch.compile(model) if cfg.compile else model
                watch.new_attempt()
            # 3. learning rate (each attempt has the whole schedule) and checkpoint
            lr = lr_at(cfg, local)
            for g in opt.param_groups:
                g["lr"] = lr
            if ckpt_path and step > step0 and step % cfg.checkpoint_every == 0:
                save(step)
            if stop_at is not None and step >= stop_at:  # paused: resume continues from here
                last, paused = step, True
                break
            # 4. forward / backward on the batch of this step (seeded by step)
            L, batch = training_batch(acfg, problem, train_lengths, local)
            batch = to_device(batch, device)
            _seed_torch(acfg, local)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_bf16):
                loss, correct = problem.loss(fwd_model, batch)
                if cfg.assoc_weight and isinstance(model, RegularisedModel):  # validated
                    loss = loss + cfg.assoc_weight * model.regulariser(
                        batch["tokens"], batch["lengths"], batch.get("offsets"))
                if cfg.offset_consistency and isinstance(model, ConsistentModel):  # validated
                    loss = loss + cfg.offset_consistency * model.consistency_loss(
                        batch["tokens"], batch["lengths"], batch["offsets"])
            if not torch.isfinite(loss):
                raise TrainingDiverged(f"loss is {loss.item()} at step {step} (length {L}); "
                                       f"{_kept(ckpt_path)}. Try a lower lr or clip.")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if cfg.grad_centralisation:
                _centralise(model)
            # 5. clip and step (a non-finite gradient would poison the weights, and then the
            # next checkpoint, while the loss still looks fine: stop before the step)
            gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip or math.inf)
            if not torch.isfinite(gnorm):
                raise TrainingDiverged(f"gradient norm is {gnorm.item()} at step {step} "
                                       f"(length {L}); {_kept(ckpt_path)}. Try a lower lr or clip.")
            opt.step()
            # 6. log
            lv, av = float(loss.detach()), float(correct.mean())
            ema_loss = lv if ema_loss is None else 0.95 * ema_loss + 0.05 * lv
            ema_acc = av if ema_acc is None else 0.95 * ema_acc + 0.05 * av
            if progress:
                bar.set_postfix(loss=f"{ema_loss:.4f}", acc=f"{ema_acc:.3f}", L=L, refresh=False)
            if (step + 1) % cfg.log_every == 0 or step + 1 == total:
                _log(log_fh, writer, step + 1, {"loss": lv, "acc": av, "lr": lr, "length": L,
                                                "elapsed_s": round(time.time() - t0, 2)})
        # the last attempt's final (fully annealed) weights: validated like every other
        if cfg.early_stop and not stopped and not paused and last > step0:
            stopped = validate(last)
    finally:
        if log_fh:
            log_fh.close()
    save(last)
    train_time = time.time() - t0
    result = {"steps": last, "train_seconds": round(train_time, 2),
              "device": str(device), "model": cfg.model, "problem": problem.name,
              "parameters": sum(p.numel() for p in model.parameters()), **watch.summary()}
    if cfg.restarts:
        result["attempts"] = attempt + 1
    if paused:
        if writer:
            writer.close()
        return {**result, "paused": True}
    if cfg.early_stop and watch.best_state is not None:  # evaluate the best validated weights
        model.load_state_dict(watch.best_state)
    if evaluate_at_end:
        ev = evaluate_kinds(model, problem, test_lengths, cfg.test_samples, cfg.seed,
                            cfg.eval_kinds, cfg.solved_threshold, device=device,
                            progress=progress)
        result.update(results_of(ev))
    if out:
        atomic_write_text(out / "results.json", json.dumps(result, indent=2))
    if writer:
        writer.close()
    return result


class _Validation:
    """Early stopping on the strict validation, and the best validated weights.

    ``update`` records a validation; it returns True when the last ``patience`` validations
    were all solved (stop). The best weights (solved first, then the highest minimum accuracy
    over kinds, then the highest mean accuracy over kinds and lengths, i.e. the fewest wrong
    strings; later wins ties) are kept in memory and, with a run folder, in ``best.pt``.
    Its state travels in the checkpoint, so a resumed run stops where the whole run would.
    """

    def __init__(self, patience: int) -> None:
        self.patience = patience
        self.streak = 0
        self.first_solved: int | None = None
        self.best_step: int | None = None
        self.best_key: tuple | None = None
        self.best_state: dict[str, Any] | None = None

    def update(self, step: int, ev: Evaluation, model: nn.Module, out: Path | None) -> bool:
        key = _selection_key(ev)
        if ev.solved and self.first_solved is None:
            self.first_solved = step
        self.streak = self.streak + 1 if ev.solved else 0
        if self.patience and (self.best_key is None or key >= self.best_key):
            self.best_key, self.best_step = key, step
            self.best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            if out:
                save_checkpoint({"model": self.best_state, "step": step}, out / "best.pt")
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
                "best_key": list(self.best_key) if self.best_key else None}

    def load(self, state: dict | None, out: Path | None) -> None:
        if not state:
            return
        self.streak, self.first_solved = state["streak"], state["first_solved"]
        self.best_step = state["best_step"]
        self.best_key = tuple(state["best_key"]) if state["best_key"] else None
        best = out / "best.pt" if out else None
        if best is not None and best.is_file():
            self.best_state = read_checkpoint_weights(best)

    def summary(self) -> dict:
        if not self.patience and self.first_solved is None:
            return {}
        return {"first_solved_step": self.first_solved, "best_step": self.best_step,
                "stopped_early": self.stopped}


def read_best(path: Path, device: torch.device | str = "cpu") -> dict:
    """A ``best.pt`` file: ``{"model": weights, "step": int}`` (weights only, verified as
    checkpoints are: keys, checksums, finite weights)."""
    return read_checkpoint(path, device, need=("model", "step"))


def read_checkpoint_weights(path: Path) -> dict:
    """The weights of a ``best.pt`` file (weights only, verified as checkpoints are)."""
    return read_best(path)["model"]


def results_of(ev: Evaluation) -> dict[str, Any]:
    """The keys a run's results carry from its :class:`~monoidlab.training.evaluate.Evaluation`."""
    return {"solved": ev.solved, "verdict": ev.verdict(), "score_balanced": ev.score_balanced,
            "min_accuracy": {k: ev.min_accuracy(k) for k in ev.kinds},
            "accuracy": ev.accuracy, "evaluation": ev.as_dict()}


def _selection_key(ev: Evaluation) -> tuple[bool, float, float]:
    """What the best validated weights maximise: solved, then the minimum accuracy over kinds
    (the strict verdict's margin), then the mean (at equal minima, e.g. one wrong string at some
    length on both, the fewer wrong strings in all)."""
    kinds = ev.scored_kinds
    if not kinds:
        return (ev.solved, 0.0, 0.0)
    return (ev.solved, float(min(ev.min_accuracy(k) for k in kinds)),
            float(np.mean([ev.mean_accuracy(k) for k in kinds])))


def _val_metrics(ev: Evaluation) -> dict[str, Any]:
    mins = [ev.min_accuracy(k) for k in ev.scored_kinds]
    means = [ev.mean_accuracy(k) for k in ev.scored_kinds]
    return {"val_min_accuracy": float(min(mins)) if mins else float("nan"),
            "val_mean_accuracy": float(np.mean(means)) if means else float("nan"),
            "val_solved": ev.solved, "val_score_balanced": ev.score_balanced,
            **{f"val_min_{k}": ev.min_accuracy(k) for k in ev.kinds}}


def _kept(ckpt_path: Path | None) -> str:
    if ckpt_path and ckpt_path.is_file():
        return f"the last good checkpoint {ckpt_path} is kept"
    return "no checkpoint was written"


def _centralise(model: nn.Module) -> None:
    """Gradient centralisation as the MLP-LDRU authors do it: every weight matrix's gradient
    minus its mean over the output axis. A torch Linear weight is (out, in): the mean over dim
    0; an embedding table (``nn.Embedding``, MLP-LDRU's ``embedding``) is (in, out) like a haiku
    weight: the mean over dim 1."""
    from torch import nn

    tables = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    for name, p in model.named_parameters():
        if p.grad is not None and p.ndim == 2:
            table = id(p) in tables or name == "embedding"
            p.grad -= p.grad.mean(dim=1 if table else 0, keepdim=True)


def _log(fh: IO[str] | None, writer: Any, step: int, values: dict[str, Any]) -> None:
    if fh:
        fh.write(json.dumps({"step": step, **values}) + "\n")
        fh.flush()
    if writer:
        for k, v in values.items():
            writer.add_scalar(k, v, step)


def _tensorboard(out: Path | None) -> Any:
    if not out:
        return None
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:  # tensorboard is an optional extra
        return None
    return SummaryWriter(str(out / "tb"))
