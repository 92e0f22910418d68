"""Every check of a run config, run once when a :class:`~monoidlab.training.config.RunConfig`
is built (:class:`Checker`): types (converting plain forms), ranges, the samplers (resolved to
their specs once, here) and their settings, the problem's test kinds, what the model can do,
and how much work the lengths ask for; beside them the run's padding. It reads the config it
is given (its dataclass fields), so the schema imports it and not the other way round.

>>> run_padding.__name__
'run_padding'
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Mapping
from typing import Any

from monoidlab._suggest import did_you_mean, known_choices
from monoidlab._util import check_workload
from monoidlab.errors import ConfigError, InputError
from monoidlab.geometry import Lengths, Offsets, Padding
from monoidlab.training.keys import (
    LR_SCHEDULES,
    MAX_SEED,
    MAX_STEP_SYMBOLS,
    OPTIMIZERS,
    PROTOCOLS,
    RECIPES,
    FrozenDict,
)

__all__ = ["Checker", "run_padding", "config_fields", "length_keys"]


def config_fields(cfg: Any) -> dict[str, dataclasses.Field]:
    """The config's keys (its dataclass fields, less the internal ones), in order."""
    return {f.name: f for f in dataclasses.fields(cfg) if not f.metadata.get("internal")}


def length_keys(cfg: Any) -> list[str]:
    """The keys that hold lengths (``Lengths``)."""
    return [k for k, f in config_fields(cfg).items() if "Lengths" in str(f.type)]


def run_padding(cfg: Any) -> Padding:
    """The padding a run's model uses: its ``padding`` option, the padding its tree has by
    construction (the transformation tree's identity), or ``learned`` for the other models
    (their trees, where they have one, have no padding leaves to skip)."""
    from monoidlab.models import model_spec

    fixed = model_spec(cfg.model).fixed_padding
    return Padding(getattr(cfg.model_options, "padding", fixed or Padding.LEARNED))


# ------------------------------------------------------------------------------ the checks
class Checker:
    """Every check of a config, run once when it is built: types (converting plain forms:
    ``"1:40"`` to Lengths, a table to the model's options), ranges, the problem's test kinds,
    what the model can do, and how much work the lengths ask for."""

    def __init__(self, cfg: Any, source: str) -> None:
        self.cfg, self.source = cfg, source

    def set(self, name: str, value: Any) -> None:
        object.__setattr__(self.cfg, name, value)

    def fail(self, key: str, message: str) -> ConfigError:
        return ConfigError(f"{self.source}: key {key!r}: {message}")

    def run(self) -> None:
        cfg = self.cfg
        self.types()
        if (cfg.language is None) == (cfg.task is None):
            raise ConfigError(f"{self.source}: give exactly one of 'language' or 'task'")
        self.model()
        self.ranges()
        self.problem()
        self.capabilities()
        self.workload()
        if cfg.explicit is None:
            self.set("explicit", frozenset(_changed_keys(cfg)))

    def types(self) -> None:
        cfg = self.cfg
        for name, f in config_fields(cfg).items():
            value = getattr(cfg, name)
            if name in length_keys(cfg):
                if value is not None or "None" not in str(f.type):
                    try:
                        self.set(name, Lengths.parse(value, name))
                    except InputError as exc:
                        raise self.fail(name, str(exc)) from None
            elif name == "offsets":
                try:
                    offsets = Offsets.parse(value, what="offsets")
                except InputError as exc:
                    raise self.fail(name, str(exc)) from None
                if offsets.mode == "fixed":
                    raise self.fail(name, f"training offsets are none or random, got "
                                          f"{value!r}")
                self.set(name, offsets)
            elif name in _CHECKS:
                test, need, convert = _CHECKS[name]
                if not test(value):
                    raise self.fail(name, f"expected {need}, got {type(value).__name__} "
                                          f"{value!r}")
                if convert is not None:
                    self.set(name, convert(value))

    def model(self) -> None:
        from monoidlab.models import model_spec

        cfg = self.cfg
        try:
            spec = model_spec(cfg.model)
        except InputError as exc:
            raise self.fail("model", str(exc)) from None
        try:
            self.set("model_options", spec.make_options(cfg.model_options))
        except InputError as exc:
            raise self.fail("model_options", str(exc)) from None

    def ranges(self) -> None:
        cfg = self.cfg
        checks = [
            ("steps", cfg.steps >= 1, "must be >= 1"),
            ("batch_size", cfg.batch_size >= 1, "must be >= 1"),
            ("lr", cfg.lr > 0 and math.isfinite(cfg.lr), "must be a finite number > 0"),
            ("clip", 0 <= cfg.clip < math.inf, "must be finite and >= 0"),
            ("warmup", 0 <= cfg.warmup < 1, "must lie in [0, 1)"),
            ("weight_decay", 0 <= cfg.weight_decay < math.inf, "must be finite and >= 0"),
            ("assoc_weight", 0 <= cfg.assoc_weight < math.inf, "must be finite and >= 0"),
            ("offset_consistency", 0 <= cfg.offset_consistency < math.inf,
             "must be finite and >= 0"),
            ("batch_size", cfg.batch_size * cfg.train_lengths.stop <= MAX_STEP_SYMBOLS,
             f"times the longest training length ({cfg.train_lengths.stop}) must be at most "
             f"{MAX_STEP_SYMBOLS} symbols per step"),
            ("test_samples", cfg.test_samples >= 1, "must be >= 1"),
            ("eval_every", cfg.eval_every >= 0, "must be >= 0 (0: only at the end)"),
            ("early_stop", cfg.early_stop >= 0, "must be >= 0 (0: off)"),
            ("val_samples", cfg.val_samples >= 1, "must be >= 1"),
            ("restarts", 0 <= cfg.restarts <= 100, "must lie in 0..100"),
            ("refine_rounds", 0 <= cfg.refine_rounds <= 1000, "must lie in 0..1000"),
            ("curriculum_start", cfg.curriculum_start >= 0, "must be >= 0 (0: off)"),
            ("curriculum_fraction", 0 < cfg.curriculum_fraction <= 1, "must lie in (0, 1]"),
            ("refine_steps", cfg.refine_steps >= 1, "must be >= 1"),
            ("refine_share", 0 < cfg.refine_share <= 1, "must lie in (0, 1]"),
            ("refine_mine", 0 <= cfg.refine_mine <= 10_000_000, "must lie in 0..10^7"),
            ("restarts", not cfg.restarts or cfg.early_stop > 0,
             "needs early_stop > 0 (the validation decides when to stop and which weights win)"),
            ("early_stop", not cfg.early_stop or cfg.eval_every > 0,
             "needs eval_every > 0 (early stopping watches the validation)"),
            ("checkpoint_every", cfg.checkpoint_every >= 1, "must be >= 1"),
            ("log_every", cfg.log_every >= 1, "must be >= 1"),
            ("threads", 0 <= cfg.threads <= (os.cpu_count() or 1),
             f"must lie in 0..{os.cpu_count() or 1} (0: torch default; this machine's cores)"),
            ("seed", 0 <= cfg.seed <= MAX_SEED, "must lie in 0 .. 2^63 - 1"),
            ("optimizer", cfg.optimizer in OPTIMIZERS,
             " | ".join(OPTIMIZERS) + did_you_mean(cfg.optimizer, OPTIMIZERS)),
            ("lr_schedule", cfg.lr_schedule in LR_SCHEDULES, " or ".join(LR_SCHEDULES)),
            ("offsets", cfg.offsets.mode in ("none", "random"), "none or random"),
            ("solved_threshold", 0 < cfg.solved_threshold <= 1, "must lie in (0, 1]"),
            ("protocol", cfg.protocol in PROTOCOLS, " or ".join(PROTOCOLS)),
            ("recipe", cfg.recipe in RECIPES,
             "unknown recipe" + known_choices(cfg.recipe, RECIPES)),
        ]
        for key, ok, msg in checks:
            if not ok:
                raise self.fail(key, f"{msg} (got {getattr(cfg, key)!r})")

    def problem(self) -> None:
        cfg = self.cfg
        self.samplers()
        if cfg.task is not None:
            from monoidlab.tasks import TASKS

            if cfg.task not in TASKS:  # here, not first inside train()
                raise self.fail("task", f"unknown task {cfg.task!r}"
                                        + known_choices(cfg.task, TASKS, "known tasks",
                                                        where="docs/tasks.md"))
        if cfg.protocol == "paper" and _readout(cfg) != "tape":
            raise self.fail("protocol", "'paper' applies to the tape tasks (Delétang's "
                                        "benchmark, ListOps)")
        if cfg.language is not None:
            from monoidlab.evaluation.kinds import check_kinds

            try:
                check_kinds(cfg.eval_kinds)
            except InputError as exc:  # its message carries the closest kind
                raise self.fail("eval_kinds", f"{exc} (\"all\" or a list of kinds; got "
                                              f"{cfg.eval_kinds!r})") from None

    def samplers(self) -> None:
        """Resolve ``sampler`` and ``test_sampler`` to their specs (once: the problem and every
        batch receive the specs), check each sampler's settings key (``near_miss_mix``,
        ``covering``) and what a sampler laid out along the model's tree needs."""
        from monoidlab.strings.samplers import REGISTRY, sampler_names

        cfg = self.cfg
        for key, tree in (("sampler", True), ("test_sampler", False)):
            value = getattr(cfg, key)
            spec = REGISTRY.get(value) if value is not None else None
            if value is not None and (spec is None or (spec.tree and not tree)):
                raise self.fail(key, f"unknown sampler {value!r}"
                                     + known_choices(value, sampler_names(tree), "choose from"))
            self.set(f"{key}_spec", spec)
        for spec in REGISTRY.values():  # a sampler's settings, checked whichever one trains
            if spec.config_key is not None and getattr(cfg, spec.config_key) is not None:
                try:
                    spec.check_settings(dict(getattr(cfg, spec.config_key)))
                except InputError as exc:
                    raise self.fail(spec.config_key, str(exc)) from None
        spec = cfg.sampler_spec
        if spec.tree:
            from monoidlab.models import model_spec

            if cfg.language is None:
                raise self.fail("sampler", f"the {spec.name} sampler builds strings of a "
                                           "language (a task has its own sampler)")
            if model_spec(cfg.model).schedule is None:
                raise self.fail("sampler", f"the {spec.name} sampler lays strings out along "
                                           f"the model's tree; model {cfg.model!r} has none")

    def capabilities(self) -> None:
        """What the problem and the keys need of the model, before any work."""
        from monoidlab.models.protocols import (
            Classifier,
            ConsistentModel,
            FiniteModel,
            GenerativeModel,
            OffsetModel,
            PrefixModel,
            RegularisedModel,
        )
        from monoidlab.models.registry import require

        cfg, source = self.cfg, self.source
        readout = _readout(cfg)
        needs = {"string": (Classifier, "learn a language (one class per string)"),
                 "tape": (PrefixModel, "learn a tape task (a prediction at every position)"),
                 "next_token": (GenerativeModel, "learn a next-token task (prompt → answer)")}
        if readout == "tape":
            from monoidlab.models import model_spec

            if not model_spec(cfg.model).can(PrefixModel):
                try:
                    one_output = _one_output(cfg)
                except InputError as exc:
                    raise self.fail("task_options", str(exc)) from None
                if one_output:  # read at the tape's end (the tree baselines)
                    needs["tape"] = (Classifier,
                                     "learn a one-output tape task (a class per string)")
        try:
            require(cfg.model, *needs[readout])
            if cfg.assoc_weight:
                require(cfg.model, RegularisedModel, "take assoc_weight", "assoc_weight")
            if cfg.offsets.mode == "random":
                require(cfg.model, OffsetModel, "train at random offsets", "offsets")
            if cfg.offset_consistency:
                require(cfg.model, ConsistentModel, "take offset_consistency",
                        "offset_consistency")
            if cfg.refine_rounds:
                require(cfg.model, FiniteModel, "be refined on its certificate's "
                        "counterexamples (a finite table to certify)", "refine_rounds")
        except ConfigError as exc:
            raise ConfigError(f"{source}: {exc}") from None
        from monoidlab.training.distil import distil_problem

        problem = distil_problem(cfg)
        if problem:
            raise self.fail("distil", problem)
        if cfg.refine_rounds and cfg.language is None:
            raise self.fail("refine_rounds", "refinement certifies a model on a language; a "
                                             "task has no automaton to certify against")
        if cfg.offset_consistency:
            key = "offset_consistency"
            if cfg.offsets.mode != "random":
                raise self.fail(key, "needs offsets = \"random\" (it compares each training "
                                     "string's root at its random offset with its root at "
                                     f"offset 0); offsets is {cfg.offsets.mode!r}")
            if run_padding(cfg) is not Padding.IDENTITY:
                raise self.fail(key, f"needs model_options padding = \"identity\", not "
                                     f"{run_padding(cfg).value!r} (with any other padding a "
                                     "string at another offset also composes padding leaves, "
                                     "so it is not the same string)")

    def workload(self) -> None:
        from monoidlab.evaluation.kinds import KINDS

        cfg = self.cfg
        kinds = len(KINDS)  # at most every kind of a language
        val = ("val_lengths" if cfg.val_lengths is not None else "val_samples",
               cfg.val_lengths or cfg.test_lengths, kinds * cfg.val_samples)
        for key, lengths, n in (("train_lengths", cfg.train_lengths, 1),
                                ("test_lengths", cfg.test_lengths, kinds * cfg.test_samples), val):
            try:
                check_workload(lengths, n, key)
            except InputError as exc:
                raise ConfigError(f"{self.source}: key {exc}") from None


def _readout(cfg: Any) -> str:
    """How the problem's outputs are read: ``string`` (a language), ``tape`` or
    ``next_token`` (the task's own :attr:`~monoidlab.tasks.base.Task.readout`)."""
    if cfg.language is not None:
        return "string"
    from monoidlab.tasks import TASKS

    cls = TASKS.get(cfg.task)
    if cls is None:  # an unknown task fails when the problem is built, with the list
        return "tape"
    return cls.readout


def _one_output(cfg: Any) -> bool:
    """Whether the config's tape task has one output whatever the length (ListOps, the regular
    tasks): a Classifier, read at the tape's end, can serve it. An unknown task is named when
    the problem is made; bad task options raise here (InputError)."""
    from monoidlab.tasks import TASKS, get_task

    if cfg.task not in TASKS:
        return False
    return bool(get_task(cfg.task, **dict(cfg.task_options)).is_classification)


def _changed_keys(cfg: Any) -> set[str]:
    """For a config built directly: the keys that differ from their defaults (and each model
    option that differs from the model's default)."""
    out = {k for k, f in config_fields(cfg).items()
           if k != "model_options" and getattr(cfg, k) != f.default}
    defaults = type(cfg.model_options)()
    out |= {f"model_options.{k}" for k in cfg.model_options.names()
            if getattr(cfg.model_options, k) != getattr(defaults, k)}
    return out


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _within(v: Any) -> bool:
    return v is None or isinstance(v, str) or (
        isinstance(v, list | tuple) and all(isinstance(x, str) for x in v))


def _kinds(v: Any) -> bool:
    return isinstance(v, str) or (isinstance(v, list | tuple) and all(isinstance(x, str)
                                                                      for x in v))


def _table(v: Any) -> Any:
    return FrozenDict(v)


# key -> (test, what it needs, conversion or None)
_CHECKS: dict[str, tuple[Callable[[Any], bool], str, Callable[[Any], Any] | None]] = {
    "language": (lambda v: v is None or isinstance(v, str), "a name or a path", None),
    "task": (lambda v: v is None or isinstance(v, str), "a task name", None),
    "task_options": (lambda v: isinstance(v, Mapping), "a table", _table),
    "protocol": (lambda v: isinstance(v, str), "a string", None),
    "model": (lambda v: isinstance(v, str), "a model name", None),
    "model_options": (lambda v: True, "a table", None),
    "recipe": (lambda v: isinstance(v, str), "a string", None),
    "batch_size": (_is_int, "an integer", None),
    "sampler": (lambda v: isinstance(v, str), "a sampler name", None),
    "near_miss_mix": (lambda v: v is None or isinstance(v, Mapping), "a table",
                      lambda v: None if v is None else FrozenDict(v)),
    "covering": (lambda v: v is None or isinstance(v, Mapping), "a table",
                 lambda v: None if v is None else FrozenDict(v)),
    "test_sampler": (lambda v: v is None or isinstance(v, str), "a sampler name", None),
    "within": (_within, "a string or a list of classes",
               lambda v: tuple(v) if isinstance(v, list) else v),
    "steps": (_is_int, "an integer", None),
    "optimizer": (lambda v: isinstance(v, str), "a string", None),
    "lr": (_is_num, "a number", float),
    "weight_decay": (_is_num, "a number", float),
    "clip": (_is_num, "a number", float),
    "warmup": (_is_num, "a number", float),
    "lr_schedule": (lambda v: isinstance(v, str), "a string", None),
    "assoc_weight": (_is_num, "a number", float),
    "offset_consistency": (_is_num, "a number", float),
    "grad_centralisation": (lambda v: isinstance(v, bool), "true or false", None),
    "restarts": (_is_int, "an integer", None),
    "refine_rounds": (_is_int, "an integer", None),
    "distil": (lambda v: isinstance(v, str), "a string", None),
    "curriculum_start": (_is_int, "an integer", None),
    "curriculum_fraction": (_is_num, "a number", float),
    "refine_steps": (_is_int, "an integer", None),
    "refine_share": (_is_num, "a number", float),
    "refine_mine": (_is_int, "an integer", None),
    "test_samples": (_is_int, "an integer", None),
    "eval_kinds": (_kinds, "\"all\" or a list of test kinds",
                   lambda v: tuple(v) if isinstance(v, list) else v),
    "eval_every": (_is_int, "an integer", None),
    "early_stop": (_is_int, "an integer", None),
    "val_samples": (_is_int, "an integer", None),
    "solved_threshold": (_is_num, "a number", float),
    "seed": (_is_int, "an integer", None),
    "device": (lambda v: isinstance(v, str), "a string", None),
    "bf16": (lambda v: isinstance(v, bool), "true or false", None),
    "compile": (lambda v: isinstance(v, bool), "true or false", None),
    "checkpoint_every": (_is_int, "an integer", None),
    "log_every": (_is_int, "an integer", None),
    "threads": (_is_int, "an integer", None),
    "limits": (lambda v: isinstance(v, bool), "true or false", None),
}
