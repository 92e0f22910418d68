"""The bundled trainer: :func:`train` opens the run folder, resumes from its checkpoint, runs the
step loop (:mod:`monoidlab.training.loop`), validates the last weights, evaluates the best
ones strictly and writes the results; :func:`load_checkpoint` gives a run's model back.

Checkpoints are written atomically and hold weights, optimiser state, step and config (no RNG
state: the per-step seeding makes it redundant); they load with
``torch.load(weights_only=True)``. The run folder's mechanics (refusing to overwrite a run, the
lock, checkpoint checksums, tolerant metrics) live in :mod:`monoidlab.training.run_folder`.

Example
-------
>>> from monoidlab.training import RunConfig, train
>>> cfg = RunConfig(language="parity", model="mlp-ldru", steps=5, batch_size=8,
...                 test_lengths="41:42", test_samples=4, model_options={"d": 16})
>>> result = train(cfg, out_dir=None, progress=False)
>>> "near_miss" in result["accuracy"], sorted(result["accuracy"]["paper"])  # kind, length
(True, [41, 42])
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from monoidlab._checks import check_str, scalar_args
from monoidlab._util import atomic_write_json
from monoidlab.errors import CheckpointError, InputError, TrainingDiverged
from monoidlab.evaluation.result import Evaluation
from monoidlab.evaluation.run import evaluate_kinds, single_class_lengths
from monoidlab.training.attempts import (
    Validation,
    attempt_config,
    read_best,
    read_run_best,
    read_run_refined,
    weights_attempt,
)
from monoidlab.training.config import RunConfig
from monoidlab.training.loop import (
    Session,
    build_for,
    lr_at,
    plan_text,
    run_steps,
    training_batch,
)
from monoidlab.training.run_folder import (
    REFINED,
    RunFolder,
    read_checkpoint,
    save_checkpoint,
    truncate_metrics,
    weights_checksum,
)
from monoidlab.training.run_language import RECORD_KEY, record_language, run_language

if TYPE_CHECKING:
    import torch
    from torch import nn

    from monoidlab.algebra.automaton import Automaton
    from monoidlab.training.problems import Problem

__all__ = ["train", "load_checkpoint", "TrainingDiverged", "pick_device", "build_for", "lr_at",
           "training_batch", "read_checkpoint", "results_of", "saved_config"]


def pick_device(name: str = "auto") -> torch.device:
    """``torch.device`` for "auto" (CUDA when present), "cpu", "cuda" or "cuda:N"."""
    import torch

    check_str(name, "device name")
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(name)
    except RuntimeError:
        raise InputError(f"unknown device {name!r}; use auto, cpu, cuda or cuda:N") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise InputError(f"device {name!r} requested but CUDA is not available")
    return dev


def saved_config(ckpt: dict, source: str) -> RunConfig:
    """The config a checkpoint was trained with (in the spelling of the version that saved
    it)."""
    from monoidlab.training.parse import config_from_dict

    return config_from_dict(ckpt["config"], source, saved=True)


def load_checkpoint(path: str | os.PathLike, device: torch.device | str = "cpu"
                    ) -> tuple[nn.Module, RunConfig, Problem, dict[str, Any]]:
    """``(model, config, problem, checkpoint dict)`` from a checkpoint file (weights_only).

    Given a run folder, the weights are those the run's results were measured on:
    ``refined.pt`` when a refinement proved them correct (``ckpt["refined"]``), else
    ``best.pt`` when early stopping kept one (``ckpt["step"]`` is then its step,
    ``ckpt["last_step"]`` the checkpoint's), else ``checkpoint.pt``. A file path loads exactly that file.
    """
    from monoidlab.training.problems import check_data_fingerprint, make_problem

    path = Path(path)
    best = None
    if path.is_dir():
        best = path / "best.pt"
        path = path / "checkpoint.pt"
    if not os.path.lexists(path):
        raise CheckpointError(f"no checkpoint at {path}")
    ckpt = read_checkpoint(path, device)  # a FIFO or a folder is refused there, in one line  # verified: keys, checksums, finite weights
    kept = read_run_best(best.parent, ckpt, device) if best is not None else None
    if kept is not None:
        ckpt = {**ckpt, "model": kept["model"], "step": kept["step"], "last_step": ckpt["step"]}
    refined = read_run_refined(best.parent, ckpt, device) if best is not None else None
    if refined is not None:  # weights a refinement proved correct (results.json's scored)
        ckpt = {**ckpt, "model": refined["model"], "refined": True,
                "last_step": ckpt.get("last_step", ckpt["step"])}
    cfg = saved_config(ckpt, str(path))
    problem = make_problem(cfg, _run_language(cfg, ckpt, path))
    check_data_fingerprint(problem, ckpt, path)
    model = build_for(cfg, problem).to(device)
    try:
        model.load_state_dict(ckpt["model"])
    except (RuntimeError, KeyError, TypeError) as exc:
        raise CheckpointError(f"{path}: the weights do not fit model {cfg.model!r} "
                              f"({str(exc).splitlines()[0]})") from None
    model.eval()
    return model, cfg, problem, ckpt


@scalar_args
def train(cfg: RunConfig, out_dir: str | os.PathLike | None = None, resume: bool = False,
          progress: bool = True, evaluate_at_end: bool = True,
          overwrite: bool = False, stop_at: int | None = None) -> dict[str, Any]:
    """Train a model; returns ``{"evaluation": ..., "solved", "verdict", "paper_score",
    "accuracy": {kind: {L: acc}}, "steps", ...}`` (the strict evaluation of
    :mod:`monoidlab.evaluation`, unless ``evaluate_at_end`` is False).

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
    if not isinstance(cfg, RunConfig):
        raise InputError(f"train: cfg must be a RunConfig, got {type(cfg).__name__} (build one "
                         "with RunConfig(...) or monoidlab.training.load_config(path))")
    if stop_at is not None and (isinstance(stop_at, bool) or not isinstance(stop_at, int)
                                or stop_at < 1):
        raise InputError(f"stop_at: expected a step >= 1, got {stop_at!r}")
    if not out_dir:
        if resume:
            raise CheckpointError("resume=True needs the run folder to continue (out_dir)")
        return _train(cfg, None, False, progress, evaluate_at_end, stop_at)
    with RunFolder(out_dir, resume=resume, overwrite=overwrite) as run:  # before any work
        return _train(cfg, run.path, resume, progress, evaluate_at_end, stop_at)


def _train(cfg: RunConfig, out: Path | None, resume: bool, progress: bool,
           evaluate_at_end: bool, stop_at: int | None) -> dict[str, Any]:
    import torch

    from monoidlab.training.loop import MetricsLog
    from monoidlab.training.problems import check_data_fingerprint, make_problem

    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    device = pick_device(cfg.device)
    step0, watch, ckpt = 0, Validation(cfg.early_stop, cfg.as_dict()), None
    if resume:
        ckpt, step0 = _resume(cfg, out, device, watch)
    # the language the run trains on: a resumed run's own copy of its spec (it may run from
    # another folder now), else the spec as it is now, recorded into every checkpoint
    record = None
    if cfg.language is not None:
        record = ckpt[RECORD_KEY] if ckpt is not None and RECORD_KEY in ckpt else \
            record_language(cfg.language)
    problem = make_problem(cfg, _run_language(cfg, {RECORD_KEY: record} if record else ckpt,
                                              out / "checkpoint.pt" if out else None))
    test_lengths = problem.lengths(cfg.test_lengths)  # filtered once, for the whole run
    if evaluate_at_end:  # warn before minutes of training, not after
        single_class_lengths(problem, test_lengths)
    # step counts over all attempts: attempt a trains global steps a*steps .. (a+1)*steps - 1
    attempt = min(step0 // cfg.steps, cfg.restarts)
    if watch.stopped:  # stopped by the validation at step0: its weights are the attempt before
        attempt = weights_attempt(cfg, step0)
    if ckpt is not None:
        check_data_fingerprint(problem, ckpt, out / "checkpoint.pt" if out else "checkpoint")
    s = Session.start(cfg, problem, device, attempt, out, watch)
    s.language_record = record
    s.data_sha256 = problem.data_fingerprint() if hasattr(problem, "data_fingerprint") else None
    if ckpt is not None:
        s.model.load_state_dict(ckpt["model"])
        s.opt.load_state_dict(ckpt["optimizer"])
    if out:
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_json(out / "config.json", cfg.as_dict())
        truncate_metrics(out / "metrics.jsonl", step0)
    s.log = MetricsLog(out)
    if progress:  # say what will happen, and then each validation and restart, as it happens
        s.say = _narrator()
        s.say(("resumed at step " + f"{step0}; " if step0 else "") + plan_text(cfg))
    fallback = getattr(problem, "fallback", None)  # a tree sampler's run on its stand-in
    if fallback and s.say:
        s.say(fallback)
    t0 = time.time()
    try:
        if watch.stopped:  # resumed after an early stop: nothing left to train
            last, stopped, paused = step0, True, False
        else:
            last, stopped, paused = run_steps(s, step0, stop_at, progress)
        # the last attempt's final (fully annealed) weights: validated like every other
        if cfg.early_stop and not stopped and not paused and last > step0:
            stopped = s.validate(last)
        elif cfg.distil != "none" and not stopped and not paused and last > step0:
            s.distil(last)  # no validation at the end: distil all the same
    finally:
        s.log.close()
    s.save(last)
    result = {"steps": last, "train_seconds": round(time.time() - t0, 2),
              "device": str(device), "model": cfg.model, "problem": problem.name,
              "parameters": sum(p.numel() for p in s.model.parameters()), **watch.summary()}
    if cfg.restarts:
        result["attempts"] = s.attempt + 1
    if s.distillations:  # this process's (a resumed run's earlier ones are in metrics.jsonl)
        result["distillation"] = [d.to_dict() for d in s.distillations]
    if fallback:
        result[f"{cfg.sampler}_fallback"] = fallback  # covering_fallback
    sized = _sized_options(cfg, s.model)
    if sized is not None:  # options left at 0 (auto) and sized from the language
        result["model_options_sized"] = sized
    if paused:
        return {**result, "paused": True}
    if s.say and cfg.early_stop and watch.best_step is not None and not watch.first_solved:
        s.say(f"no validation passed: the weights kept are the best validated (step "
              f"{watch.best_step}); the strict test follows")
    model = s.model
    scored_step = last
    if cfg.early_stop and watch.best_state is not None:  # evaluate the best validated weights
        model.load_state_dict(watch.best_state)
        scored_step = watch.best_step if watch.best_step is not None else last
    if cfg.refine_rounds:  # a finite model: certify, train on counterexamples, keep a proof
        refinement = _refine(s, out, last)
        result["refinement"] = refinement.to_dict()
        result["train_seconds"] = round(result["train_seconds"] + refinement.seconds, 2)
    if evaluate_at_end:
        from monoidlab.evaluation.table_forward import table_forward
        from monoidlab.training.data_coverage import training_coverage

        # a finite model is scored as its table's fold once the fold is checked equal to its
        # forward (the same classes, many times faster); any other model by its forward
        scorer = table_forward(model, problem.language, problem.n_classes, cfg)
        ev = evaluate_kinds(scorer, problem, test_lengths, cfg.test_samples, cfg.seed,
                            cfg.eval_kinds, cfg.solved_threshold, device=device,
                            progress=progress)
        result.update(results_of(ev))
        certificate = _certificate(cfg, problem, model)
        if certificate is not None:
            result["certificate"] = certificate
        # what the training strings of the scored weights' attempt showed, by tree level
        # (languages on tree models; a restart draws its own strings from its own seed)
        attempt = weights_attempt(cfg, scored_step) if cfg.restarts else 0
        coverage = training_coverage(attempt_config(cfg, attempt), problem,
                                     attempt=(attempt, s.attempt + 1) if cfg.restarts else None)
        if coverage is not None:
            result["training_coverage"] = coverage
    if out:
        atomic_write_json(out / "results.json", result)
    return result


def _refine(s: Any, out: Path | None, last: int) -> Any:
    """Refine the scored weights (:mod:`monoidlab.training.refine`); proved weights go to
    ``refined.pt`` (bound to the weights they were refined from), and a stale one goes."""
    from monoidlab.training.refine import refine

    base = weights_checksum(s.model.state_dict())
    refinement = refine(s, s.say)
    if out:
        path = out / REFINED
        if refinement.kept == "refined":
            save_checkpoint({"model": s.model.state_dict(), "step": last,
                             "config": s.cfg.as_dict(), "refined_from": base,
                             "refinement": refinement.to_dict()}, path)
        elif os.path.lexists(path):
            path.unlink()
    return refinement


def _narrator() -> Any:
    """Prints a line above a running progress bar (tqdm's write), on stderr."""
    import sys

    from tqdm.auto import tqdm

    return lambda line: tqdm.write(line, file=sys.stderr)


def _resume(cfg: RunConfig, out: Path | None, device: torch.device,
            watch: Validation) -> tuple[dict, int]:
    """The checkpoint to continue and its step; refused when it was trained with another
    config."""
    from monoidlab.errors import ConfigError

    path = out / "checkpoint.pt" if out else None
    if not (path and path.is_file()):
        raise CheckpointError(f"resume=True: no checkpoint at {path}")
    ckpt = read_checkpoint(path, device)
    saved = saved_config(ckpt, str(path))
    if saved != cfg:
        diff = _differences(saved, cfg)
        if diff != ["language"] or not _same_spec(cfg.language, ckpt):
            why = (f" (the spec {cfg.language!r} is not the one the run was trained on)"
                   if diff == ["language"] and RECORD_KEY in ckpt else "")
            raise ConfigError(f"resume=True: config differs from the checkpoint's in {diff}"
                              + why)
    watch.load(ckpt, out)
    return ckpt, int(ckpt["step"])


def _same_spec(language: str | None, ckpt: dict) -> bool:
    """Whether ``language`` (a spec path or suite name) is, byte for byte, the spec the run
    recorded: the same language at another path (the project folder was moved, the spec
    copied), which a resumed run may name."""
    from monoidlab.errors import MonoidlabError

    record = ckpt.get(RECORD_KEY)
    if language is None or not isinstance(record, dict):
        return False
    try:
        return record_language(language)["sha256"] == record.get("sha256")
    except (MonoidlabError, OSError):
        return False


def _run_language(cfg: RunConfig, ckpt: dict | None, path: Path | None) -> Automaton | None:
    """The automaton a run's language is (its checkpoint's copy of the spec when it has one);
    None for a task."""
    if cfg.language is None:
        return None
    return run_language(cfg.language, ckpt, str(path) if path else "this run")


def _differences(a: RunConfig, b: RunConfig) -> list[str]:
    """The keys (and model options) in which two configs differ."""
    da, db = a.as_dict(), b.as_dict()
    out = [k for k in da if k != "model_options" and da[k] != db.get(k)]
    oa, ob = da["model_options"], db["model_options"]
    out += [f"model_options.{k}" for k in sorted(set(oa) | set(ob)) if oa.get(k) != ob.get(k)]
    return sorted(out)


def _sized_options(cfg: RunConfig, model: nn.Module) -> dict[str, Any] | None:
    """The model's options as built, where the run left a size at 0 (auto) for the language to
    set (the transformation tree model's states, the snapped model's codes); else None."""
    built = getattr(model, "options", None)
    if built is None or not hasattr(built, "as_dict"):
        return None
    given, used = cfg.model_options.as_dict(), built.as_dict()
    return used if given != used else None


def _certificate(cfg: RunConfig, problem: Problem, model: nn.Module) -> dict[str, Any] | None:
    """A finite model's certificate on its language (docs/probing.md, "certificates"): the
    exact verdict over every length beside the strict one; None for other models and tasks."""
    from monoidlab.errors import MonoidlabError
    from monoidlab.evaluation.model_certificate import certify_finite_model
    from monoidlab.models import model_spec
    from monoidlab.models.protocols import FiniteModel

    language = getattr(problem, "language", None)
    if language is None or not model_spec(cfg.model).can(FiniteModel):
        return None
    try:
        return certify_finite_model(model, language, cfg).to_dict()
    except MonoidlabError as exc:  # a budget of the certificate (a monoid too large to tabulate)
        return {"subject": "model", "correct": False, "verdict": f"not certified: {exc}"}


def results_of(ev: Evaluation) -> dict[str, Any]:
    """The keys a run's results carry from its :class:`~monoidlab.evaluation.Evaluation`."""
    return {"solved": ev.solved, "verdict": ev.verdict(), **ev.scores(),
            "min_accuracy": {k: ev.min_accuracy(k) for k in ev.kinds},
            "accuracy": ev.accuracy, "evaluation": ev.as_dict()}


def read_checkpoint_weights(path: Path) -> dict:
    """The weights of a ``best.pt`` file (weights only, verified as checkpoints are)."""
    return read_best(path)["model"]
