"""Training configuration: one dataclass, loadable from TOML, overridable with ``--key=value``.

Configs are data, never executed. Unknown keys and ill-typed values raise :class:`ConfigError`
naming the file and the key.

Example
-------
>>> cfg = TrainConfig(language="parity", model="mlp-ldru")
>>> cfg = apply_overrides(cfg, ["steps=200", "model_kwargs.d=32", "lr=3e-3"])
>>> cfg.steps, cfg.model_kwargs, cfg.lr
(200, {'d': 32}, 0.003)
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["TrainConfig", "ConfigError", "load_config", "apply_overrides", "config_from_dict"]


class ConfigError(ValueError):
    """A config file or override is invalid (message names the source and the key)."""


@dataclass
class TrainConfig:
    # --- what to learn (exactly one of language / task)
    language: str | None = None  # a suite name or a TOML spec path
    task: str | None = None  # a Delétang task ("reverse_string", ...), "listops", or "addition"
    task_kwargs: dict = field(default_factory=dict)
    # --- model
    model: str = "mlp-ldru"  # a name of monoidlab.models.REGISTRY
    model_kwargs: dict = field(default_factory=dict)  # e.g. {d = 64, dropout = 0.25}
    # --- data (Delétang protocol: one length per batch, drawn uniformly from train_lengths)
    train_lengths: str = "1:40"
    test_lengths: str = "41:500"
    test_samples: int = 64  # strings per test length (the papers use 512)
    batch_size: int = 128  # PR-LSTM's authors: 128 (MLP-LDRU's: 256); CPU-friendly
    sampler: str = "balanced"  # uniform | balanced | ec_stratified | ldru (languages only)
    test_sampler: str | None = None  # default: the training sampler
    within: list | str | None = "auto"  # sub-language; "auto": well-formed where 'incomplete' exists
    pad_offset: str = "none"  # "random": balanced-tree models see strings at random left offsets
    offset_buffer: int | None = None  # buffer bound for random offsets (default: next 2^k >= 2L)
    # --- optimisation
    steps: int = 1000  # CPU scale: parity, cycle navigation within ~10 min (docs/benchmarks.md)
    optimizer: str = "adam"  # adam | adamw | amsgrad
    lr: float = 1e-3
    weight_decay: float = 0.0
    clip: float = 1.0  # gradient-norm clipping (0 = off)
    warmup: float = 0.0  # fraction of steps of linear warm-up (the MLP-LDRU authors: 0.2)
    lr_schedule: str = "constant"  # constant | cosine (after warm-up)
    assoc_weight: float = 0.0  # weight of the MLP-LDRU associativity regulariser
    grad_centralisation: bool = False  # the MLP-LDRU authors' gradient centralisation
    # --- bookkeeping
    seed: int = 0
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    bf16: bool = True  # bf16 autocast on CUDA (ignored on CPU)
    compile: bool = False  # torch.compile the model
    eval_every: int = 0  # steps between validation evals (0: only at the end)
    val_lengths: str | None = None  # quick validation lengths (default: test lengths, 16 samples)
    checkpoint_every: int = 500
    log_every: int = 50
    solved_threshold: float = 0.9  # Delétang's "solved": score >= 0.9
    threads: int = 0  # torch CPU threads (0: torch default)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    def validate(self, source: str = "config") -> TrainConfig:
        from monoidlab.models import REGISTRY

        if (self.language is None) == (self.task is None):
            raise ConfigError(f"{source}: give exactly one of 'language' or 'task'")
        if self.model not in REGISTRY:
            raise ConfigError(f"{source}: key 'model': unknown model {self.model!r}; known: "
                              f"{', '.join(sorted(REGISTRY))}")
        self._check_model_kwargs(source)
        checks = [
            ("steps", self.steps >= 1, "must be >= 1"),
            ("batch_size", self.batch_size >= 1, "must be >= 1"),
            ("lr", self.lr > 0, "must be > 0"),
            ("clip", self.clip >= 0, "must be >= 0"),
            ("warmup", 0 <= self.warmup < 1, "must lie in [0, 1)"),
            ("test_samples", self.test_samples >= 1, "must be >= 1"),
            ("optimizer", self.optimizer in ("adam", "adamw", "amsgrad"), "adam, adamw or amsgrad"),
            ("lr_schedule", self.lr_schedule in ("constant", "cosine"), "constant or cosine"),
            ("sampler", self.sampler in ("uniform", "balanced", "ec_stratified", "ldru"),
             "uniform, balanced, ec_stratified or ldru"),
            ("pad_offset", self.pad_offset in ("none", "random"), "none or random"),
            ("solved_threshold", 0 <= self.solved_threshold <= 1, "must lie in [0, 1]"),
        ]
        if self.pad_offset == "random" and self.model != "mlp-ldru":
            raise ConfigError(f"{source}: key 'pad_offset': random offsets need a balanced-tree "
                              f"model (mlp-ldru), not {self.model!r}")
        for key, ok, msg in checks:
            if not ok:
                raise ConfigError(f"{source}: key {key!r}: {msg} (got {getattr(self, key)!r})")
        from monoidlab.cli import CLIError, parse_range

        for key in ("train_lengths", "test_lengths") + (("val_lengths",) if self.val_lengths else ()):
            try:
                parse_range(getattr(self, key), key)
            except CLIError as exc:
                raise ConfigError(f"{source}: key {key!r}: {exc}") from None
        return self

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


_FIELDS = {f.name: f for f in dataclasses.fields(TrainConfig)}


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
    for t in options:
        if t in _CHECKS and _CHECKS[t][0](value):
            return float(value) if t == "float" else value
    expected = " or ".join(_CHECKS[t][1] for t in options if t in _CHECKS)
    raise ConfigError(f"{source}: key {key!r}: expected {expected}, got "
                      f"{type(value).__name__} {value!r}")


def config_from_dict(data: dict, source: str = "config") -> TrainConfig:
    unknown = set(data) - set(_FIELDS)
    if unknown:
        raise ConfigError(f"{source}: unknown key(s) {sorted(unknown)}; known keys: "
                          f"{', '.join(sorted(_FIELDS))}")
    kwargs = {k: _check_type(k, v, source) for k, v in data.items()}
    return TrainConfig(**kwargs).validate(source)


def read_toml(path) -> dict:
    """Parse a TOML file; unreadable or invalid files raise :class:`ConfigError` naming it."""
    path = Path(path)
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


def load_config(path) -> TrainConfig:
    """Read a TOML config (a ``[train]`` table or top-level keys)."""
    data = read_toml(path)
    data = data.get("train", data)
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
    for item in overrides:
        item = item[2:] if item.startswith("--") else item
        if "=" not in item:
            raise ConfigError(f"{source}: expected key=value, got {item!r}")
        key, text = item.split("=", 1)
        key = key.replace("-", "_") if key.replace("-", "_") in _FIELDS else key
        value = _parse_value(text)
        if "." in key:
            top, sub = key.split(".", 1)
            if top not in ("model_kwargs", "task_kwargs"):
                raise ConfigError(f"{source}: key {key!r}: only model_kwargs.X and task_kwargs.X "
                                  "take a dotted name")
            data[top] = {**data[top], sub: value}
        else:
            if key not in _FIELDS:
                raise ConfigError(f"{source}: unknown key {key!r}; known keys: "
                                  f"{', '.join(sorted(_FIELDS))}")
            if _FIELDS[key].type in ("str", "str | None") and not isinstance(value, str) \
                    and value is not None:
                value = text  # e.g. train_lengths=1:40 parses as a string anyway
            data[key] = value
    return config_from_dict(data, source)
