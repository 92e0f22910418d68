"""Training configuration: one dataclass, loadable from TOML, overridable with ``--key=value``.

Configs are data, never executed. Unknown keys and ill-typed values raise
:class:`~monoidlab.errors.ConfigError` naming the file and the key. Length ranges are typed
(:class:`~monoidlab._util.Lengths`); ``"41:500"`` or ``[41, 500]`` in a file is only their text.

Example
-------
>>> cfg = TrainConfig(language="parity", model="mlp-ldru")
>>> cfg = apply_overrides(cfg, ["steps=200", "model_kwargs.d=32", "lr=3e-3", "test_lengths=41:60"])
>>> cfg.steps, cfg.model_kwargs, cfg.lr, cfg.test_lengths
(200, {'d': 32}, 0.003, Lengths(start=41, stop=60, step=1))
"""

from __future__ import annotations

import dataclasses
import json
import math
import tomllib
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monoidlab._util import Lengths, check_workload
from monoidlab.errors import ConfigError, InputError

__all__ = ["TrainConfig", "ConfigError", "load_config", "apply_overrides", "config_from_dict",
           "read_toml", "DEPRECATED_KEYS", "config_keys", "config_table_markdown"]

MAX_STEP_SYMBOLS = 2**24  # batch_size x longest training length: one step's tokens

# Old key -> new key (accepted for one release, with a DeprecationWarning).
DEPRECATED_KEYS = {"pad_offset": "offsets"}


def _key(default: Any = dataclasses.MISSING, meaning: str = "", *,
         factory: Callable[[], Any] | None = None) -> Any:
    """A config key: its default and its one-line meaning, the single source of
    ``monoidlab train --help`` and of the key table of docs/training.md (:func:`config_keys`)."""
    if factory is not None:
        return field(default_factory=factory, metadata={"meaning": meaning})
    return field(default=default, metadata={"meaning": meaning})


@dataclass
class TrainConfig:
    """Every setting of a training run (the table of keys: :func:`config_keys`, docs/training.md).

    Each key's default and meaning are given here, next to its type."""

    # --- what to learn (exactly one of language / task)
    language: str | None = _key(None, "a suite name (`parity`, `dyck-6`, ...) or a TOML spec "
                                      "path; exactly one of `language` / `task`")
    task: str | None = _key(None, "a Delétang task (`reverse_string`, ...), `listops` or "
                                  "`addition`")
    task_kwargs: dict = _key(meaning="options of the task", factory=dict)
    protocol: str = _key("monoidlab", "tape tasks: `paper` runs them as Delétang et al.'s "
                                      "released code (pooled token accuracy decides, unmasked "
                                      "loss, the released task options; see deletang.md)")
    # --- model
    model: str = _key("mlp-ldru", "the model: {models}")
    model_kwargs: dict = _key(meaning="the model's hyper-parameters, e.g. `{d = 64, dropout = "
                                      "0.25}` (each model's options: docs/training.md)", factory=dict)
    recipe: str = _key("default", "`authors`: the papers' training settings for every key (and "
                                  "model option) not set")
    # --- data (one length per batch, drawn uniformly from train_lengths)
    train_lengths: Lengths = _key(Lengths(1, 40), "training lengths `A:B` (inclusive) or "
                                                  "`A:B:STEP`; each batch has one length, drawn "
                                                  "uniformly (lengths without strings skipped)")
    test_lengths: Lengths = _key(Lengths(41, 500), "lengths of the final evaluation")
    test_samples: int = _key(64, "strings per test length and test kind (the papers: 512)")
    eval_kinds: list | str = _key("all", "test kinds of a language: `balanced` (the papers' "
                                         "protocol), `near_miss`, `ec_stratified`, or `all`; a "
                                         "task has one kind, `task`")
    batch_size: int = _key(128, "strings per training batch (PR-LSTM's authors: 128, MLP-LDRU's: "
                                "256)")
    sampler: str = _key("balanced", "training strings: `uniform`, `balanced` (every class "
                                    "equally often), `ec_stratified`, `ldru` (the MLP-LDRU "
                                    "authors' half-positive random walks), `near_miss` (members, "
                                    "near misses and uniform strings)")
    near_miss_mix: dict | None = _key(None, "the `near_miss` sampler's shares (none: `{members = "
                                            "0.5, near_miss = 0.25, uniform = 0.25}`)")
    test_sampler: str | None = _key(None, "sampler of probing's held-out strings (none: "
                                          "`sampler`); the test sets are the evaluation kinds")
    within: list | str | None = _key("auto", "a sub-language: `auto` (the well-formed strings "
                                             "where the language has an `incomplete` class), "
                                             "`none`, `all-but:A,B` or a list of classes")
    offsets: str = _key("none", "`random`: a balanced-tree model (mlp-ldru) sees each training "
                                "string at a random left offset (coverage.md); test strings "
                                "at offset 0")
    offset_buffer: int | None = _key(None, "random offsets: buffer length B, offset uniform in "
                                           "0..B-L (none: the next power of two >= 2L)")
    # --- optimisation
    steps: int = _key(1000, "optimiser steps (CPU scale: parity, cycle navigation solved within "
                            "~10 min)")
    optimizer: str = _key("adam", "`adam`, `adamw`, `amsgrad` (torch's), `amsgrad-optax` (the "
                                  "MLP-LDRU authors')")
    lr: float = _key(1e-3, "peak learning rate")
    weight_decay: float = _key(0.0, "Adam(W) weight decay")
    clip: float = _key(1.0, "global gradient-norm clipping (0: off)")
    warmup: float = _key(0.0, "fraction of the steps of linear warm-up from 1e-8 (the MLP-LDRU "
                              "authors: 0.2)")
    lr_schedule: str = _key("constant", "after warm-up: `constant` or `cosine` (to 0 at the "
                                        "last step)")
    assoc_weight: float = _key(0.0, "weight of the model's regulariser, added to every step's "
                                    "loss (MLP-LDRU: associativity); models without one reject it")
    offset_consistency: float = _key(0.0, "weight of a label-free term (needs `offsets = "
                                          "\"random\"` and identity padding): 1 − cos between each "
                                          "training string's root state at its offset and at "
                                          "offset 0, i.e. the same string under two bracketings")
    grad_centralisation: bool = _key(False, "subtract each weight matrix's gradient mean over "
                                            "its output axis (the MLP-LDRU authors')")
    # --- bookkeeping
    seed: int = _key(0, "initial weights, every batch, dropout, the test sets")
    device: str = _key("auto", "`auto` (CUDA when present), `cpu`, `cuda`, `cuda:N`")
    bf16: bool = _key(True, "bf16 autocast for training on CUDA (ignored on CPU)")
    compile: bool = _key(False, "`torch.compile` the training forward")
    eval_every: int = _key(0, "steps between validations (0: only the final evaluation)")
    early_stop: int = _key(0, "stop after this many strictly solved validations in a row (0: "
                              "off; needs `eval_every`)")
    restarts: int = _key(0, "fresh starts (new initial weights and batches, `steps` each) after an "
                            "attempt ends without early stopping; the best validated weights of "
                            "all attempts are tested (needs `early_stop`)")
    val_lengths: Lengths | None = _key(None, "validation lengths (none: the test lengths)")
    val_samples: int = _key(16, "validation strings per length and kind")
    checkpoint_every: int = _key(500, "steps between checkpoints (and one at the end)")
    log_every: int = _key(50, "steps between `metrics.jsonl` lines")
    solved_threshold: float = _key(0.99, "strictly solved: accuracy >= this at every scored test "
                                         "length of every test kind")
    threads: int = _key(1, "torch CPU threads of the run (0: torch's default); one run per "
                           "core is fastest")

    def as_dict(self) -> dict[str, Any]:
        """Plain data (JSON, TOML, checkpoints): lengths as their text ``"41:500"``."""
        data = dataclasses.asdict(self)
        for key in _LENGTH_KEYS:
            if data[key] is not None:
                data[key] = str(getattr(self, key))
        return data

    def validate(self, source: str = "config") -> TrainConfig:
        """Check every value and the model's capabilities; raises :class:`ConfigError`."""
        from monoidlab.models import REGISTRY
        from monoidlab.sampling import SAMPLERS

        if (self.language is None) == (self.task is None):
            raise ConfigError(f"{source}: give exactly one of 'language' or 'task'")
        if self.model not in REGISTRY:
            raise ConfigError(f"{source}: key 'model': unknown model {self.model!r}; known: "
                              f"{', '.join(sorted(REGISTRY))}")
        self._apply_recipe(source)
        for key in _LENGTH_KEYS:  # a dataclass built directly may hold text or ranges
            value = getattr(self, key)
            if value is not None and not isinstance(value, Lengths):
                try:
                    setattr(self, key, Lengths.parse(value, key))
                except InputError as exc:
                    raise ConfigError(f"{source}: key {key!r}: {exc}") from None
        self._check_model_kwargs(source)
        checks = [
            ("steps", self.steps >= 1, "must be >= 1"),
            ("batch_size", self.batch_size >= 1, "must be >= 1"),
            ("lr", self.lr > 0 and math.isfinite(self.lr), "must be a finite number > 0"),
            ("clip", self.clip >= 0, "must be >= 0"),
            ("warmup", 0 <= self.warmup < 1, "must lie in [0, 1)"),
            ("weight_decay", 0 <= self.weight_decay < math.inf, "must be finite and >= 0"),
            ("assoc_weight", 0 <= self.assoc_weight < math.inf, "must be finite and >= 0"),
            ("offset_consistency", 0 <= self.offset_consistency < math.inf,
             "must be finite and >= 0"),
            ("batch_size", self.batch_size * self.train_lengths.stop <= MAX_STEP_SYMBOLS,
             f"times the longest training length ({self.train_lengths.stop}) must be at most "
             f"{MAX_STEP_SYMBOLS} symbols per step"),
            ("test_samples", self.test_samples >= 1, "must be >= 1"),
            ("eval_every", self.eval_every >= 0, "must be >= 0 (0: only at the end)"),
            ("early_stop", self.early_stop >= 0, "must be >= 0 (0: off)"),
            ("val_samples", self.val_samples >= 1, "must be >= 1"),
            ("restarts", 0 <= self.restarts <= 100, "must lie in 0..100"),
            ("restarts", not self.restarts or self.early_stop > 0,
             "needs early_stop > 0 (the validation decides when to stop and which weights win)"),
            ("early_stop", not self.early_stop or self.eval_every > 0,
             "needs eval_every > 0 (early stopping watches the validation)"),
            ("checkpoint_every", self.checkpoint_every >= 1, "must be >= 1"),
            ("log_every", self.log_every >= 1, "must be >= 1"),
            ("threads", self.threads >= 0, "must be >= 0 (0: torch default)"),
            ("optimizer", self.optimizer in OPTIMIZERS, " | ".join(OPTIMIZERS)),
            ("lr_schedule", self.lr_schedule in ("constant", "cosine"), "constant or cosine"),
            ("sampler", self.sampler in SAMPLERS, " | ".join(SAMPLERS)),
            ("test_sampler", self.test_sampler is None or self.test_sampler in SAMPLERS,
             " | ".join(SAMPLERS)),
            ("offsets", self.offsets in ("none", "random"), "none or random"),
            ("offset_buffer", self.offset_buffer is None or self.offset_buffer >= 1,
             "must be >= 1"),
            ("solved_threshold", 0 <= self.solved_threshold <= 1, "must lie in [0, 1]"),
            ("protocol", self.protocol in ("monoidlab", "paper"), "monoidlab or paper"),
            ("protocol", self.protocol == "monoidlab" or _is_tape_task(self.task),
             "'paper' applies to the tape tasks (Delétang's benchmark, ListOps)"),
        ]
        from monoidlab.evalsets import KINDS, check_kinds
        from monoidlab.sampling import check_mix

        try:
            if self.near_miss_mix is not None:
                check_mix(self.near_miss_mix)
        except InputError as exc:
            raise ConfigError(f"{source}: key 'near_miss_mix': {exc}") from None
        if self.language is not None:
            try:
                check_kinds(self.eval_kinds)
            except InputError:
                raise ConfigError(f"{source}: key 'eval_kinds': expected \"all\" or a list of "
                                  f"{', '.join(KINDS)}, got {self.eval_kinds!r}") from None
        for key, ok, msg in checks:
            if not ok:
                raise ConfigError(f"{source}: key {key!r}: {msg} (got {getattr(self, key)!r})")
        val = ("val_lengths" if self.val_lengths is not None else "val_samples",
               self.val_lengths or self.test_lengths, 3 * self.val_samples)
        for key, lengths, n in (("train_lengths", self.train_lengths, 1),  # up to 3 kinds
                                ("test_lengths", self.test_lengths, 3 * self.test_samples), val):
            try:
                check_workload(lengths, n, key)
            except InputError as exc:
                raise ConfigError(f"{source}: key {exc}") from None
        self._check_capabilities(source)
        return self

    def _apply_recipe(self, source: str) -> None:
        """Set the recipe's value of every key the user did not set (idempotent).

        Which keys were set: those of the file / dict / overrides the config came from
        (:func:`config_from_dict`); for a dataclass built directly, those that differ from the
        defaults. ``model_kwargs`` counts per option (``model_kwargs.dropout``)."""
        if self.recipe not in RECIPES:
            raise ConfigError(f"{source}: key 'recipe': unknown recipe {self.recipe!r}; known: "
                              f"{', '.join(RECIPES)}")
        explicit = self._explicit = _explicit_keys(self)
        if self.recipe == "default":
            return
        keys, kwargs = recipe_settings(self.recipe, self.model, self.language, self.task, source)
        for key, value in keys.items():
            if key not in explicit:
                setattr(self, key, value)
        own = {k: v for k, v in self.model_kwargs.items() if f"model_kwargs.{k}" in explicit}
        self.model_kwargs = {**kwargs, **own}

    def _check_capabilities(self, source: str) -> None:
        """Options that need a model capability fail here, before any work (never at step 1)."""
        from monoidlab.models import REGISTRY, model_class
        from monoidlab.models.protocols import ConsistentModel, OffsetModel, RegularisedModel

        def able(protocol: type) -> list[str]:
            return [m for m in sorted(REGISTRY) if issubclass(model_class(m), protocol)]

        cls = model_class(self.model)
        if self.assoc_weight and not issubclass(cls, RegularisedModel):
            raise ConfigError(f"{source}: key 'assoc_weight': model {self.model!r} has no "
                              f"regulariser; models that have one: {', '.join(able(RegularisedModel))}")
        if self.offsets == "random" and not issubclass(cls, OffsetModel):
            raise ConfigError(f"{source}: key 'offsets': random offsets need a balanced-tree "
                              f"model ({', '.join(able(OffsetModel))}), not {self.model!r}")
        if self.offset_consistency and not issubclass(cls, ConsistentModel):
            raise ConfigError(f"{source}: key 'offset_consistency': model {self.model!r} has no "
                              f"consistency term; models that have one: "
                              f"{', '.join(able(ConsistentModel))}")
        if self.offset_consistency:
            self._check_consistency(source, cls)

    def _check_consistency(self, source: str, cls: type) -> None:
        """``offset_consistency`` compares a string's root at two offsets: that is the same
        string under two bracketings only with random offsets and identity padding."""
        import inspect

        key = f"{source}: key 'offset_consistency'"
        if self.offsets != "random":
            raise ConfigError(f"{key}: needs offsets = \"random\" (it compares each training "
                              f"string's root at its random offset with its root at offset 0); "
                              f"offsets is {self.offsets!r}")
        param = inspect.signature(cls).parameters.get("padding")
        padding = self.model_kwargs.get("padding", param.default if param else "identity")
        if padding != "identity":
            raise ConfigError(f"{key}: needs model_kwargs padding = \"identity\", not "
                              f"{padding!r} (with any other padding a string at another offset "
                              "also composes padding leaves, so it is not the same string)")

    def _check_model_kwargs(self, source: str) -> None:
        """Unknown model options fail here, not at the first step (values fail in build_for)."""
        import inspect

        from monoidlab.models import model_class

        params = list(inspect.signature(model_class(self.model).__init__).parameters.values())
        if any(p.kind is p.VAR_KEYWORD for p in params):  # e.g. the transformer's position_kw
            return
        known = [p.name for p in params if p.name not in ("self", "vocab_size", "n_classes")]
        unknown = sorted(set(self.model_kwargs) - set(known))
        if unknown:
            raise ConfigError(f"{source}: key 'model_kwargs': model {self.model!r} has no "
                              f"option(s) {unknown}; its options: {', '.join(known)}")


def _is_tape_task(name: str | None) -> bool:
    """True for a task learned on Delétang's tape (not a language, not next-token addition)."""
    from monoidlab.tasks import TASKS

    return name in TASKS and TASKS[name].problem_kind == "tape"


OPTIMIZERS = ("adam", "adamw", "amsgrad", "amsgrad-optax")
RECIPES = ("default", "authors")

# The Delétang et al. regular tasks, for which the MLP-LDRU authors used dropout 0.1
_DELETANG_LANGUAGES = {"parity", "even-pairs", "cycle-navigation", "modular-arithmetic",
                       "modular-arithmetic-precedence"}


def recipe_settings(recipe: str, model: str, language: str | None, task: str | None,
                    source: str = "config") -> tuple[dict[str, Any], dict[str, Any]]:
    """``(keys, model_kwargs)`` of a recipe for a model and a language or task.

    ``"authors"``, per model family (steps, lengths and evaluation are never set: a recipe says
    how to train, not for how long):

    * mlp-ldru (the MLP-LDRU authors' code): ``amsgrad-optax``, lr 1e-3 (1e-4 for D_n),
      20% linear warm-up from 1e-8 then constant, clip 1.0, gradient centralisation, no
      weight decay, batch 256, the ``ldru`` sampler for D_n and Tomita (uniform otherwise),
      ``init = "haiku"``, d 64, dropout 0.25 (0.1 for the Delétang tasks).
    * pr-lstm, pr-rnn (the PR-LSTM authors, on Delétang's harness): Adam, lr 1e-3, clip 1.0,
      batch 128, no warm-up, uniform strings, ``init = "haiku"``, H 256; PR-RNN with a ReLU
      cell and a linear leaf.
    * rnn, lstm, transformer (Delétang's harness): Adam, lr 1e-3, clip 1.0, batch 128, uniform.

    >>> keys, kw = recipe_settings("authors", "mlp-ldru", "dyck-4", None)
    >>> keys["lr"], keys["sampler"], kw["dropout"], kw["init"]
    (0.0001, 'ldru', 0.25, 'haiku')
    """
    if recipe == "default":
        return {}, {}
    name = Path(language).stem if language else None
    uniform = {"sampler": "uniform"} if language else {}
    if model == "mlp-ldru":
        dyck = bool(name and name.startswith("dyck-"))
        walk = dyck or bool(name and name.startswith("tomita-"))
        deletang = task is not None or name in _DELETANG_LANGUAGES
        keys = {"optimizer": "amsgrad-optax", "lr": 1e-4 if dyck else 1e-3, "warmup": 0.2,
                "lr_schedule": "constant", "clip": 1.0, "weight_decay": 0.0,
                "grad_centralisation": True, "batch_size": 256}
        if language:
            keys["sampler"] = "ldru" if walk else "uniform"
        return keys, {"d": 64, "dropout": 0.1 if deletang else 0.25, "init": "haiku"}
    keys = {"optimizer": "adam", "lr": 1e-3, "warmup": 0.0, "lr_schedule": "constant",
            "clip": 1.0, "weight_decay": 0.0, "grad_centralisation": False, "batch_size": 128,
            **uniform}
    if model == "pr-lstm":
        return keys, {"hidden": 256, "init": "haiku"}
    if model == "pr-rnn":
        return keys, {"hidden": 256, "init": "haiku", "activation": "relu",
                      "leaf_activation": False}
    if model in ("rnn", "lstm", "transformer"):
        return keys, {}
    raise ConfigError(f"{source}: key 'recipe': recipe {recipe!r} has no settings for model "
                      f"{model!r}; it has for mlp-ldru, pr-lstm, pr-rnn, rnn, lstm, transformer")


def _explicit_keys(cfg: TrainConfig) -> set[str]:
    """The keys the user set: those recorded by :func:`config_from_dict`, or, for a dataclass
    built directly, those that differ from the defaults (``model_kwargs`` option by option)."""
    explicit = getattr(cfg, "_explicit", None)
    if explicit is None:
        explicit = {k for k, f in _FIELDS.items()
                    if k != "model_kwargs" and getattr(cfg, k) != _default(f)}
        explicit |= {f"model_kwargs.{k}" for k in cfg.model_kwargs}
    return set(explicit)


def _default(f: dataclasses.Field) -> Any:
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


_FIELDS = {f.name: f for f in dataclasses.fields(TrainConfig)}
_LENGTH_KEYS = [k for k, f in _FIELDS.items() if "Lengths" in str(f.type)]

_TYPE_NAMES = {"str": "text", "int": "integer", "float": "number", "bool": "true/false",
               "dict": "table", "list": "list", "Lengths": "lengths", "None": "none"}


def _value_text(value: Any) -> str:
    """A default as it is written in a TOML config or an override."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_value_text(v)}" for k, v in value.items()) + "}"
    return str(value)


def config_keys() -> list[dict[str, str]]:
    """Every key of :class:`TrainConfig`, in order: ``{"key", "type", "default", "meaning"}``
    (text). The one source of ``monoidlab train --help`` and of docs/training.md's table.

    >>> row = next(r for r in config_keys() if r["key"] == "steps")
    >>> row["type"], row["default"], row["meaning"].split(" (")[0]
    ('integer', '1000', 'optimiser steps')
    """
    from monoidlab.models import REGISTRY  # names only: no model module is imported

    rows = []
    for f in dataclasses.fields(TrainConfig):
        types = [_TYPE_NAMES.get(t.strip(), t.strip()) for t in str(f.type).split("|")]
        rows.append({"key": f.name, "type": " or ".join(types),
                     "default": _value_text(_default(f)),
                     "meaning": f.metadata["meaning"].replace("{models}", ", ".join(REGISTRY))})
    return rows


def config_table_markdown() -> str:
    """docs/training.md's table of config keys, generated from :func:`config_keys`."""
    lines = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for r in config_keys():
        lines.append(f"| `{r['key']}` | {r['type']} | `{r['default']}` | "
                     f"{r['meaning'].replace('|', '/')} |")
    return "\n".join(lines)


_CHECKS = {  # annotation text -> (test, description)
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "int": (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
    "float": (lambda v: isinstance(v, int | float) and not isinstance(v, bool), "a number"),
    "str": (lambda v: isinstance(v, str), "a string"),
    "dict": (lambda v: isinstance(v, dict), "a table"),
    "list": (lambda v: isinstance(v, list), "a list"),
}


def _check_type(key: str, value: Any, source: str) -> Any:
    """Accept ``value`` when it matches one of the field's annotated types."""
    options = [t.strip() for t in str(_FIELDS[key].type).split("|")]
    if value is None and "None" in options:
        return None
    if "Lengths" in options:
        try:
            return Lengths.parse(value, key)
        except InputError as exc:
            raise ConfigError(f"{source}: key {key!r}: {exc}") from None
    for t in options:
        if t in _CHECKS and _CHECKS[t][0](value):
            return float(value) if t == "float" else value
    expected = " or ".join(_CHECKS[t][1] for t in options if t in _CHECKS)
    raise ConfigError(f"{source}: key {key!r}: expected {expected}, got "
                      f"{type(value).__name__} {value!r}")


def config_from_dict(data: dict, source: str = "config",
                     explicit: set[str] | None = None) -> TrainConfig:
    """A validated :class:`TrainConfig` from plain data (deprecated keys are renamed).

    The keys of ``data`` (and the options of its ``model_kwargs``) count as set by the user,
    so a ``recipe`` leaves them alone; ``explicit`` replaces that set (overrides)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a table of config keys, got {type(data).__name__}")
    data = dict(data)
    for old, new in DEPRECATED_KEYS.items():
        if old in data:
            warnings.warn(f"{source}: config key {old!r} is deprecated; use {new!r}",
                          DeprecationWarning, stacklevel=2)
            value = data.pop(old)
            data.setdefault(new, value)
    unknown = set(data) - set(_FIELDS)
    if unknown:
        raise ConfigError(f"{source}: unknown key(s) {sorted(unknown)}; known keys: "
                          f"{', '.join(sorted(_FIELDS))}")
    kwargs = {k: _check_type(k, v, source) for k, v in data.items()}
    if explicit is None:
        explicit = set(data) - {"model_kwargs"}
        explicit |= {f"model_kwargs.{k}" for k in data.get("model_kwargs") or {}}
    cfg = TrainConfig(**kwargs)
    cfg._explicit = set(explicit)
    return cfg.validate(source)


def read_toml(path: str | Path) -> dict:
    """Parse a TOML file; unreadable or invalid files raise :class:`ConfigError` naming it."""
    path = Path(path)
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses once per nesting level
        raise ConfigError(f"{path}: invalid TOML: arrays or tables nested too deeply") from None


def load_config(path: str | Path) -> TrainConfig:
    """Read a TOML config: every key under one ``[train]`` table, or every key at the top level
    (never both: a key outside ``[train]`` would be silently ignored)."""
    data = read_toml(path)
    if "train" in data:
        extra = sorted(set(data) - {"train"})
        if extra:
            raise ConfigError(f"{path}: key(s) {extra} outside the [train] table would be "
                              "ignored; move them into [train]")
        data = data["train"]
    return config_from_dict(data, str(path))


def _parse_value(text: str) -> Any:
    """An override value: TOML/JSON literal when it parses, else the raw string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except RecursionError:
        return text
    except tomllib.TOMLDecodeError:
        try:
            return json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            return text


def apply_overrides(cfg: TrainConfig, overrides: list[str], source: str = "override") -> TrainConfig:
    """Apply ``key=value`` (or ``--key=value``; ``model_kwargs.d=32`` for nested tables)."""
    data = cfg.as_dict()
    explicit = _explicit_keys(cfg)
    for item in overrides:
        item = item[2:] if item.startswith("--") else item
        if "=" not in item:
            raise ConfigError(f"{source}: expected key=value, got {item!r}")
        key, text = item.split("=", 1)
        key = key.replace("-", "_") if key.replace("-", "_") in _FIELDS else key
        if key not in _FIELDS and key in DEPRECATED_KEYS:
            warnings.warn(f"{source}: config key {key!r} is deprecated; use "
                          f"{DEPRECATED_KEYS[key]!r}", DeprecationWarning, stacklevel=2)
            key = DEPRECATED_KEYS[key]
        value = _parse_value(text)
        if "." in key:
            top, sub = key.split(".", 1)
            if top not in ("model_kwargs", "task_kwargs"):
                raise ConfigError(f"{source}: key {key!r}: only model_kwargs.X and task_kwargs.X "
                                  "take a dotted name")
            data[top] = {**data[top], sub: value}
            explicit.add(key)
        else:
            if key not in _FIELDS:
                raise ConfigError(f"{source}: unknown key {key!r}; known keys: "
                                  f"{', '.join(sorted(_FIELDS))}")
            if key in _LENGTH_KEYS or (_FIELDS[key].type in ("str", "str | None")
                                       and not isinstance(value, str) and value is not None):
                value = text  # train_lengths=40 or 1:40: the text is the value
            data[key] = value
            if key in ("model_kwargs", "task_kwargs") and isinstance(value, dict):
                explicit = {k for k in explicit if not k.startswith(f"{key}.")}
                explicit |= {f"{key}.{k}" for k in value}
            else:
                explicit.add(key)
    return config_from_dict(data, source, explicit)
