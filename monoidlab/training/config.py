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
import tomllib
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monoidlab._util import Lengths
from monoidlab.errors import ConfigError, InputError

__all__ = ["TrainConfig", "ConfigError", "load_config", "apply_overrides", "config_from_dict",
           "read_toml", "DEPRECATED_KEYS"]

# Old key -> new key (accepted for one release, with a DeprecationWarning).
DEPRECATED_KEYS = {"pad_offset": "offsets"}


@dataclass
class TrainConfig:
    # --- what to learn (exactly one of language / task)
    language: str | None = None  # a suite name or a TOML spec path
    task: str | None = None  # a task of monoidlab.tasks ("reverse_string", "listops", "addition")
    task_kwargs: dict = field(default_factory=dict)
    # "paper": a tape task as Delétang et al. ran it (docs/deletang.md): pooled token accuracy
    # decides, unmasked loss, the released code's task options (odds_first order, placeholders)
    protocol: str = "monoidlab"
    # --- model
    model: str = "mlp-ldru"  # a name of monoidlab.models.REGISTRY
    model_kwargs: dict = field(default_factory=dict)  # e.g. {d = 64, dropout = 0.25}
    recipe: str = "default"  # "authors": the papers' settings for every key not set (RECIPES)
    # --- data (one length per batch, drawn uniformly from train_lengths)
    train_lengths: Lengths = Lengths(1, 40)
    test_lengths: Lengths = Lengths(41, 500)
    test_samples: int = 64  # strings per test length and kind (the papers use 512)
    eval_kinds: list | str = "all"  # test kinds: balanced, near_miss, ec_stratified ("all")
    batch_size: int = 128  # PR-LSTM's authors: 128 (MLP-LDRU's: 256); CPU-friendly
    sampler: str = "balanced"  # uniform | balanced | ec_stratified | ldru | near_miss (languages)
    near_miss_mix: dict | None = None  # near_miss sampler: {members, near_miss, uniform} shares
    test_sampler: str | None = None  # default: the training sampler
    within: list | str | None = "auto"  # sub-language (monoidlab.sublanguage); "auto": well-formed
    offsets: str = "none"  # "random": balanced-tree models see strings at random left offsets
    offset_buffer: int | None = None  # buffer bound for random offsets (default: next 2^k >= 2L)
    # --- optimisation
    steps: int = 1000  # CPU scale: parity, cycle navigation within ~10 min (docs/benchmarks.md)
    optimizer: str = "adam"  # adam | adamw | amsgrad (torch's) | amsgrad-optax (the authors')
    lr: float = 1e-3
    weight_decay: float = 0.0
    clip: float = 1.0  # gradient-norm clipping (0 = off)
    warmup: float = 0.0  # fraction of steps of linear warm-up (the MLP-LDRU authors: 0.2)
    lr_schedule: str = "constant"  # constant | cosine (after warm-up)
    assoc_weight: float = 0.0  # weight of the model's regulariser (MLP-LDRU: associativity)
    grad_centralisation: bool = False  # the MLP-LDRU authors' gradient centralisation
    # --- bookkeeping
    seed: int = 0
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    bf16: bool = True  # bf16 autocast on CUDA (ignored on CPU)
    compile: bool = False  # torch.compile the model
    eval_every: int = 0  # steps between validation evals (0: only at the end)
    early_stop: int = 0  # stop after this many solved validations in a row (0: off; needs eval_every)
    val_lengths: Lengths | None = None  # quick validation lengths (default: test lengths)
    val_samples: int = 16  # validation strings per length and kind
    checkpoint_every: int = 500
    log_every: int = 50
    solved_threshold: float = 0.99  # solved: accuracy >= this at every scored length and kind
    threads: int = 1  # torch CPU threads per run (0: torch default); one run per core is fastest

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
            ("lr", self.lr > 0, "must be > 0"),
            ("clip", self.clip >= 0, "must be >= 0"),
            ("warmup", 0 <= self.warmup < 1, "must lie in [0, 1)"),
            ("weight_decay", self.weight_decay >= 0, "must be >= 0"),
            ("assoc_weight", self.assoc_weight >= 0, "must be >= 0"),
            ("test_samples", self.test_samples >= 1, "must be >= 1"),
            ("eval_every", self.eval_every >= 0, "must be >= 0 (0: only at the end)"),
            ("early_stop", self.early_stop >= 0, "must be >= 0 (0: off)"),
            ("val_samples", self.val_samples >= 1, "must be >= 1"),
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
        from monoidlab.models.protocols import OffsetModel, RegularisedModel

        def able(protocol: type) -> list[str]:
            return [m for m in sorted(REGISTRY) if issubclass(model_class(m), protocol)]

        cls = model_class(self.model)
        if self.assoc_weight and not issubclass(cls, RegularisedModel):
            raise ConfigError(f"{source}: key 'assoc_weight': model {self.model!r} has no "
                              f"regulariser; models that have one: {', '.join(able(RegularisedModel))}")
        if self.offsets == "random" and not issubclass(cls, OffsetModel):
            raise ConfigError(f"{source}: key 'offsets': random offsets need a balanced-tree "
                              f"model ({', '.join(able(OffsetModel))}), not {self.model!r}")

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
    except tomllib.TOMLDecodeError:
        try:
            return json.loads(text)
        except json.JSONDecodeError:
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
