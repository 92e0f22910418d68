"""The step loop, read top to bottom in execution order (validation → a restart's fresh weights
→ lr/checkpoint → forward/backward → clip → step → log), in the spirit of nanoGPT's
``train.py``. What it trains lives in a :class:`Session`; restarts, validation and early
stopping are in :mod:`monoidlab.training.attempts`; the run folder, resuming and the final
evaluation in :mod:`monoidlab.training.trainer`.

Reproducibility: the batch of step s is drawn from ``default_rng([seed, s])`` and torch's RNG
(dropout) is re-seeded from (seed, s) at every step, so a run resumed from a checkpoint at step
s continues exactly as the uninterrupted run would (tested).

Example
-------
>>> import torch
>>> from monoidlab.training.config import RunConfig
>>> from monoidlab.training.problems import make_problem
>>> cfg = RunConfig(language="parity", steps=3, batch_size=8, model_options={"d": 8})
>>> s = Session.start(cfg, make_problem(cfg), torch.device("cpu"))
>>> run_steps(s, start=0)
(3, False, False)
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from monoidlab._paths import open_append
from monoidlab._util import json_text, progress_bar
from monoidlab.errors import TrainingDiverged
from monoidlab.evaluation.run import evaluate_kinds, to_device
from monoidlab.training.attempts import (
    Validation,
    attempt_config,
    validation_metrics,
    validation_seed,
)
from monoidlab.training.config import RunConfig
from monoidlab.training.run_folder import save_checkpoint
from monoidlab.training.run_language import RECORD_KEY
from monoidlab.training.terms import Term, loss_terms

if TYPE_CHECKING:
    import torch
    from torch import nn

    from monoidlab.training.problems import Problem

__all__ = ["Session", "run_steps", "train_step", "lr_at", "training_batch", "curriculum_lengths",
           "build_for", "MetricsLog"]


def lr_at(cfg: RunConfig, step: int) -> float:
    """Linear warm-up from 1e-8 (the MLP-LDRU authors' start), then constant or cosine."""
    warm = int(cfg.warmup * cfg.steps)
    if step < warm:
        return 1e-8 + (cfg.lr - 1e-8) * step / warm
    if cfg.lr_schedule == "cosine":
        t = (step - warm) / max(1, cfg.steps - warm)
        return cfg.lr * 0.5 * (1 + math.cos(math.pi * t))
    return cfg.lr


def curriculum_steps(cfg: RunConfig) -> int:
    """The steps of an attempt over which a length curriculum grows to the longest length."""
    return max(1, round(cfg.curriculum_fraction * cfg.steps))


def curriculum_lengths(cfg: RunConfig, train_lengths: np.ndarray, step: int) -> np.ndarray:
    """The training lengths that step ``step`` of an attempt draws from: all of
    ``train_lengths`` without a curriculum; with one, those up to ``curriculum_start`` at step
    0, the bound growing linearly to the longest length at the last step of the first
    ``curriculum_fraction`` × ``steps`` (the shortest length when none is that short).

    >>> from monoidlab.training.config import RunConfig
    >>> cfg = RunConfig(language="parity", steps=100, curriculum_start=8)
    >>> lens = np.arange(1, 41)
    >>> [int(curriculum_lengths(cfg, lens, s).max()) for s in (0, 25, 50, 99)]
    [8, 24, 40, 40]
    """
    if not cfg.curriculum_start:
        return train_lengths
    grow = curriculum_steps(cfg)
    longest = int(train_lengths.max())
    top = cfg.curriculum_start + (longest - cfg.curriculum_start) * min(1.0,
                                                                     step / max(1, grow - 1))
    kept = train_lengths[train_lengths <= max(top, cfg.curriculum_start)]
    return kept if kept.size else train_lengths[train_lengths == train_lengths.min()]


def training_batch(cfg: RunConfig, problem: Problem, train_lengths: np.ndarray,
                   step: int, curriculum: bool = True) -> tuple[int, dict[str, Any]]:
    """``(length, numpy batch)`` of training step ``step`` (of its attempt): a length drawn
    uniformly from ``train_lengths`` (those the run's curriculum allows at this step, unless
    ``curriculum`` is False), then the problem's batch, both from
    ``default_rng([seed, step])``."""
    rng = np.random.default_rng([cfg.seed, step])
    if curriculum:
        train_lengths = curriculum_lengths(cfg, train_lengths, step)
    L = int(rng.choice(train_lengths))
    return L, problem.batch(rng, L, cfg.batch_size, train=True, step=step)


def build_for(cfg: RunConfig, problem: Problem) -> nn.Module:
    """The model of a config, sized for the problem's vocabulary and classes."""
    from monoidlab.errors import ConfigError, InputError
    from monoidlab.models import model_spec
    from monoidlab.models.memory import check_model_memory

    spec = model_spec(cfg.model)
    try:
        options = spec.make_options(cfg.model_options)
        language = getattr(problem, "language", None)
        if language is not None and hasattr(options, "for_language"):
            options = options.for_language(language)  # sizes left at 0 (auto) from the language
    except (TypeError, ValueError, ZeroDivisionError, RuntimeError) as exc:
        raise ConfigError(f"key 'model_options' of model {cfg.model!r}: {_first_line(exc)}"
                          ) from None
    # sizes that would exhaust the machine: refused before anything is allocated
    longest = int(max(problem.lengths(cfg.train_lengths), default=1))
    try:
        check_model_memory(cfg.model, problem.vocab_size, problem.n_classes, options,
                           cfg.batch_size, longest, cfg.limits)
    except InputError as exc:
        raise ConfigError(f"key 'model_options': {exc}") from None
    try:
        model = spec.build(problem.vocab_size, problem.n_classes, options)
    except (TypeError, ValueError, ZeroDivisionError, RuntimeError) as exc:  # e.g. sizes
        raise ConfigError(f"key 'model_options' of model {cfg.model!r}: {_first_line(exc)}"
                          ) from None
    return model


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _optimizer(cfg: RunConfig, params: Any) -> torch.optim.Optimizer:
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


def _seed_torch(cfg: RunConfig, step: int) -> None:
    import torch

    torch.manual_seed((cfg.seed * 1_000_003 + step) % (2**63))


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


class MetricsLog:
    """``metrics.jsonl`` (one JSON object per logged step) and, when tensorboard is installed,
    its event files; nothing without a run folder."""

    def __init__(self, out: Path | None) -> None:
        self.fh: IO[str] | None = open_append(out / "metrics.jsonl", "out_dir") if out else None
        self.writer = _tensorboard(out)

    def write(self, step: int, values: dict[str, Any]) -> None:
        if self.fh:
            self.fh.write(json_text({"step": step, **values}, indent=None) + "\n")
            self.fh.flush()
        if self.writer:
            for k, v in values.items():
                self.writer.add_scalar(k, v, step)

    def note(self, step: int, values: dict[str, Any]) -> None:
        """A line of ``metrics.jsonl`` that is not a scalar curve (no tensorboard event)."""
        if self.fh:
            self.fh.write(json_text({"step": step, **values}, indent=None) + "\n")
            self.fh.flush()

    def close(self) -> None:
        if self.fh:
            self.fh.close()
            self.fh = None
        if self.writer:
            self.writer.close()
            self.writer = None


def _tensorboard(out: Path | None) -> Any:
    if not out:
        return None
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:  # tensorboard is an optional extra
        return None
    return SummaryWriter(str(out / "tb"))


@dataclass
class Session:
    """What one training process holds: the config, the problem, the current attempt's model
    and optimiser, the validation watch, the extra loss terms and the run folder (or None)."""

    cfg: RunConfig
    problem: Problem
    device: torch.device
    model: nn.Module
    opt: torch.optim.Optimizer
    attempt: int = 0
    acfg: RunConfig = field(default=None)  # type: ignore[assignment]
    watch: Validation = field(default=None)  # type: ignore[assignment]
    terms: list[Term] = field(default_factory=list)
    out: Path | None = None
    log: MetricsLog = field(default=None)  # type: ignore[assignment]
    train_lengths: np.ndarray | None = None
    fwd: Any = None
    language_record: dict | None = None  # the run's copy of its spec, saved in checkpoints
    data_sha256: dict | None = None  # a text task's data files, saved in checkpoints
    auxiliary: bool = False  # the model declares AuxiliaryLossModel (the registry says)
    say: Any = None  # prints one line of narration (validations, restarts) above the bar
    distillations: list = field(default_factory=list)  # what each attempt's distillation did

    @classmethod
    def start(cls, cfg: RunConfig, problem: Problem, device: torch.device, attempt: int = 0,
              out: Path | None = None, watch: Validation | None = None) -> Session:
        """Fresh weights (seeded by the attempt's seed) and a new optimiser for ``attempt``."""
        acfg = attempt_config(cfg, attempt)
        model, opt = _fresh(acfg, problem, device)
        s = cls(cfg, problem, device, model, opt, attempt, acfg,
                watch or Validation(cfg.early_stop, cfg.as_dict()), loss_terms(cfg), out, MetricsLog(None),
                problem.lengths(cfg.train_lengths))
        s.fwd = _compiled(cfg, model)
        from monoidlab.models import model_spec
        from monoidlab.models.protocols import AuxiliaryLossModel

        s.auxiliary = model_spec(cfg.model).can(AuxiliaryLossModel)
        return s

    @classmethod
    def around(cls, cfg: RunConfig, problem: Problem, model: nn.Module,
               device: torch.device | str = "cpu") -> Session:
        """A session around weights that exist (a loaded run's), with a fresh optimiser: to
        train them on (e.g. :func:`~monoidlab.training.refine.refine`)."""
        import torch

        from monoidlab.models import model_spec
        from monoidlab.models.protocols import AuxiliaryLossModel

        s = cls(cfg, problem, torch.device(device), model, _optimizer(cfg, model.parameters()),
                0, cfg, Validation(0), loss_terms(cfg), None, MetricsLog(None),
                problem.lengths(cfg.train_lengths))
        s.fwd = _compiled(cfg, model)
        s.auxiliary = model_spec(cfg.model).can(AuxiliaryLossModel)
        return s

    def new_attempt(self, attempt: int) -> None:
        """A restart: fresh weights, optimiser and batches (the best weights stay)."""
        if self.say:
            self.say(f"restart: attempt {attempt + 1} of {self.cfg.restarts + 1}, fresh weights "
                     f"and batches from seed {attempt_config(self.cfg, attempt).seed}")
        self.attempt, self.acfg = attempt, attempt_config(self.cfg, attempt)
        self.model, self.opt = _fresh(self.acfg, self.problem, self.device)
        self.model.train()
        self.fwd = _compiled(self.cfg, self.model)
        self.watch.new_attempt()

    def save(self, step: int) -> None:
        """The checkpoint of global step ``step`` (no RNG state: step s re-seeds both the data
        and torch from (seed, s))."""
        if not self.out:
            return
        save_checkpoint({
            "model": self.model.state_dict(), "optimizer": self.opt.state_dict(), "step": step,
            "config": self.cfg.as_dict(), "early_stop": self.watch.state(),
            "problem": {"name": self.problem.name, "vocab_size": self.problem.vocab_size,
                        "n_classes": self.problem.n_classes},
            **({RECORD_KEY: self.language_record} if self.language_record else {}),
            **({"data_sha256": self.data_sha256} if self.data_sha256 else {})},
            self.out / "checkpoint.pt")

    def distil(self, step: int) -> None:
        """At an attempt's end (``distil`` set): replace the weights by the automaton
        distilled from them (:func:`~monoidlab.training.distil.distil`), once per step."""
        from monoidlab.training.distil import distil

        if self.distillations and self.distillations[-1].step == step:
            return
        d = distil(self.model, self.problem, self.acfg, self.attempt, step)
        self.distillations.append(d)
        self.log.note(step, {"distillation": d.to_dict()})
        if self.say:
            self.say(d.text())

    def validate(self, step: int) -> bool:
        """Validate the current weights on fresh strings; True: early stopping says stop.
        At an attempt's end a ``distil`` run distils the weights first."""
        cfg = self.cfg
        if cfg.distil != "none" and step % cfg.steps == 0:
            self.distil(step)
        ev = evaluate_kinds(self.model, self.problem, cfg.val_lengths or cfg.test_lengths,
                            cfg.val_samples, validation_seed(cfg.seed, step), cfg.eval_kinds,
                            cfg.solved_threshold, device=self.device)
        self.log.write(step, {**validation_metrics(ev),
                              **({"attempt": self.attempt} if cfg.restarts else {})})
        if self.say:
            self.say(validation_text(cfg, step, self.attempt, ev))
        return self.watch.update(step, ev, self.model, self.out)


def _fresh(cfg: RunConfig, problem: Problem, device: torch.device
           ) -> tuple[nn.Module, torch.optim.Optimizer]:
    """Initial weights (seeded by ``cfg.seed``) and a new optimiser."""
    import torch

    torch.manual_seed(cfg.seed)
    model = build_for(cfg, problem).to(device)
    return model, _optimizer(cfg, model.parameters())


def _compiled(cfg: RunConfig, model: nn.Module) -> Any:
    import torch

    return torch.compile(model) if cfg.compile else model


def plan_text(cfg: RunConfig) -> str:
    """What the trainer will do, in one line (printed before the bar).

    >>> from monoidlab.training.config import RunConfig
    >>> plan_text(RunConfig(language="parity", steps=300, restarts=2, eval_every=300,
    ...                     early_stop=1, val_lengths="42:500:3"))  # doctest: +ELLIPSIS
    "recipe 'default': up to 3 attempts of 300 steps (900 in all), each validated at its end on ..."
    """
    attempts = cfg.restarts + 1
    text = (f"recipe {cfg.recipe!r}: up to {attempts} attempts of {cfg.steps} steps "
            f"({cfg.total_steps} in all)" if attempts > 1 else
            f"recipe {cfg.recipe!r}: {cfg.steps} steps")
    if cfg.eval_every:
        where = "at its end" if cfg.eval_every >= cfg.steps else f"every {cfg.eval_every} steps"
        text += (f", each validated {where} on fresh strings of lengths "
                 f"{cfg.val_lengths or cfg.test_lengths} ({cfg.val_samples} per length and "
                 f"kind; passed: every length of every kind at >= {cfg.solved_threshold:g})")
        if cfg.early_stop:
            text += "; a passed validation ends the run" if cfg.early_stop == 1 else (
                f"; {cfg.early_stop} passed validations in a row end the run")
        if attempts > 1:
            text += "; an attempt that fails restarts from a fresh seed"
    if cfg.curriculum_start:
        text += (f"; a length curriculum: each attempt starts at lengths up to "
                 f"{cfg.curriculum_start}, growing to the longest by step "
                 f"{curriculum_steps(cfg)} of the attempt")
    if cfg.distil != "none":
        text += ("; at the end of each attempt the soft machine is distilled into the automaton "
                 "L* extracts from it (kept if it scores at least the argmax machine)")
    if cfg.refine_rounds:
        text += (f"; then up to {cfg.refine_rounds} refinement rounds of {cfg.refine_steps} "
                 "steps on the certificate's counterexamples (kept only if proved)")
    text += "; then the strict test"
    if cfg.language is not None and cfg.recipe == "default" and "recipe" not in (cfg.explicit
                                                                                 or ()):
        from monoidlab.training.config import language_recipe

        other = language_recipe(cfg.model)
        if other != "default":  # said, so that Python and the command line never differ silently
            text += (f" (monoidlab train --language trains {cfg.model} with recipe {other!r}; "
                     "RunConfig.for_language(...) gives it in Python)")
    return text


def validation_text(cfg: RunConfig, step: int, attempt: int, ev: Any) -> str:
    """One validation, in one line: the minimum per kind, passed or failed."""
    mins = ", ".join(f"{k} {ev.min_accuracy(k):.3f}" for k in ev.scored_kinds)
    of = f" (attempt {attempt + 1} of {cfg.restarts + 1})" if cfg.restarts else ""
    return (f"validation at step {step}{of}: min {mins or 'nothing scored'} -> "
            f"{'PASSED' if ev.solved else 'failed'}")


def run_steps(s: Session, start: int, stop_at: int | None = None,
              progress: bool = False) -> tuple[int, bool, bool]:
    """Train from global step ``start`` to the end of the run (every attempt), or until early
    stopping, or until ``stop_at`` (a pause). Returns ``(last step, stopped early, paused)``:
    the weights are those after steps ``0 .. last - 1``."""
    cfg, problem = s.cfg, s.problem
    total = cfg.total_steps
    bar: Any = range(start, total)
    name = f"{cfg.model} on {problem.name}"
    if progress:
        bar = progress_bar(bar, initial=start, total=total, desc=name, dynamic_ncols=True)
    train_lengths = problem.lengths(cfg.train_lengths) if s.train_lengths is None \
        else s.train_lengths
    s.model.train()
    t0, c0, ema_loss, ema_acc = time.time(), time.process_time(), None, None
    for step in bar:
        a, local = divmod(step, cfg.steps)
        # 1. periodic validation (of the weights *before* this step; local 0 of a new attempt
        # validates the previous attempt's last weights)
        if cfg.eval_every and step > start and local % cfg.eval_every == 0 and s.validate(step):
            return step, True, False  # solved at early_stop validations in a row
        # 2. a new attempt: fresh weights, optimiser and batches (the best weights stay)
        if a != s.attempt:
            s.new_attempt(a)
        if progress and cfg.restarts and (step == start or local == 0):  # the bar says which
            bar.set_description(f"{name}, attempt {a + 1} of {cfg.restarts + 1}")
        # 3. learning rate (each attempt has the whole schedule), checkpoint, pause
        lr = lr_at(cfg, local)
        for g in s.opt.param_groups:
            g["lr"] = lr
        if step > start and step % cfg.checkpoint_every == 0:
            s.save(step)
        if stop_at is not None and step >= stop_at:  # a pause: resuming continues from here
            return step, False, True
        # 4.-5. forward / backward on the batch of this step (seeded by step), clip, step
        L, batch = training_batch(s.acfg, problem, train_lengths, local)
        lv, av = train_step(s, batch, local, f"step {step} (length {L})")
        # 6. log
        ema_loss = lv if ema_loss is None else 0.95 * ema_loss + 0.05 * lv
        ema_acc = av if ema_acc is None else 0.95 * ema_acc + 0.05 * av
        if progress:
            bar.set_postfix(loss=f"{ema_loss:.4f}", acc=f"{ema_acc:.3f}", L=L, refresh=False)
        if (step + 1) % cfg.log_every == 0 or step + 1 == total:
            s.log.write(step + 1, {"loss": lv, "acc": av, "lr": lr, "length": L,
                                   "elapsed_s": round(time.time() - t0, 2),
                                   "cpu_s": round(time.process_time() - c0, 2)})
    return total, False, False


def train_step(s: Session, batch: dict[str, Any], seed_step: int, where: str
               ) -> tuple[float, float]:
    """One optimiser step of ``s.model`` on a numpy ``batch``: forward (torch re-seeded from
    (seed, ``seed_step``)), the loss with the run's extra terms and the model's own auxiliary
    loss, backward, clip, step. Returns ``(loss, accuracy)``; a non-finite loss or gradient
    stops before the step (:class:`~monoidlab.errors.TrainingDiverged`, saying ``where``)."""
    import torch

    cfg, device = s.cfg, s.device
    batch = to_device(batch, device)
    _seed_torch(s.acfg, seed_step)
    with torch.autocast(device.type, dtype=torch.bfloat16,
                        enabled=cfg.bf16 and device.type == "cuda"):
        loss, correct = s.problem.loss(s.fwd, batch)
        for term in s.terms:  # the config checked that the model has each
            loss = loss + term.weight * term.fn(s.model, batch)
        if s.auxiliary:  # a loss the model computed in this step's forward passes
            aux = s.model.auxiliary_loss()  # type: ignore[operator]
            loss = loss if aux is None else loss + aux
    if not torch.isfinite(loss):
        raise TrainingDiverged(f"loss is {loss.item()} at {where}; {_kept(s.out)}. "
                               "Try a lower lr or clip.")
    s.opt.zero_grad(set_to_none=True)
    loss.backward()
    if cfg.grad_centralisation:
        _centralise(s.model)
    # a non-finite gradient would poison the weights, and then the next checkpoint, while the
    # loss still looks fine: stop before the step
    gnorm = torch.nn.utils.clip_grad_norm_(s.model.parameters(), cfg.clip or math.inf)
    if not torch.isfinite(gnorm):
        raise TrainingDiverged(f"gradient norm is {gnorm.item()} at {where}; "
                               f"{_kept(s.out)}. Try a lower lr or clip.")
    s.opt.step()
    return float(loss.detach()), float(correct.mean())


def _kept(out: Path | None) -> str:
    ckpt = out / "checkpoint.pt" if out else None
    if ckpt and ckpt.is_file():
        return f"the last good checkpoint {ckpt} is kept"
    return "no checkpoint was written"
