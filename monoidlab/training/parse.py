"""Text to run configs: TOML files, ``--key=value`` overrides, recipes and the run folders of
earlier versions, the one place where a config is read from text.

* :func:`read_toml`, :func:`config_keys_of_file`: a TOML file's keys (every key under one
  ``[train]`` table, or every key at the top level).
* :func:`read_overrides`: ``--key=value`` items as keys (a value is a TOML literal when it
  parses, else text; ``model_options.d=32`` sets one option).
* :func:`config_from_dict`: keys → a :class:`~monoidlab.training.config.RunConfig`. Unknown
  keys fail with the closest known one; a ``recipe`` fills the keys not given; the config
  checks every value once. ``saved=True`` reads a run folder's config, including those that
  monoidlab 0.1.0 wrote (``model_kwargs``, ``task_kwargs``, the test kind ``balanced``).
* :func:`load_config` = the two above on a file; :func:`apply_overrides` changes a config.

Example
-------
>>> keys = {"language": "parity", **read_overrides(["--steps=200", "--model_options.d=32",
...                                                 "--train_lengths=1:20"])}
>>> cfg = config_from_dict(keys)
>>> cfg.steps, cfg.model_options.d, str(cfg.train_lengths)
(200, 32, '1:20')
>>> config_from_dict({"language": "parity", "stpes": 3})  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
monoidlab.errors.ConfigError: config: unknown key 'stpes' (did you mean 'steps'?); known keys: steps, ...
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from monoidlab._checks import scalar_args
from monoidlab._suggest import known_choices
from monoidlab.errors import ConfigError
from monoidlab.training.config import _FIELDS, RunConfig, fill_recipe, given_keys

__all__ = ["read_toml", "config_keys_of_file", "load_config", "config_from_dict",
           "read_overrides", "apply_overrides", "RENAMED"]

#: Keys that 0.1.0 spelled otherwise: read silently in saved run folders (``saved=True``),
#: refused with the new name in anything a user writes.
RENAMED = {"model_kwargs": "model_options", "task_kwargs": "task_options",
           "pad_offset": "offsets"}
#: Test kinds that 0.1.0 named otherwise (read in saved run folders).
RENAMED_KINDS = {"balanced": "paper"}
FILE_KEYS = sorted([*_FIELDS, "offset_buffer"])  # offsets and offset_buffer: one value
_NESTED = ("model_options", "task_options")


def _known_keys(key: str) -> str:
    """The closest keys first, never all 40 (``monoidlab train --help`` lists them)."""
    return known_choices(key, FILE_KEYS, "known keys", where="monoidlab train --help")


# ------------------------------------------------------------------------------ files
def read_toml(path: str | os.PathLike) -> dict:
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


def config_keys_of_file(path: str | os.PathLike) -> dict[str, Any]:
    """The config keys of a TOML file: every key under one ``[train]`` table, or every key at
    the top level (never both: a key outside ``[train]`` would be silently ignored)."""
    data = read_toml(path)
    if "train" in data:
        extra = sorted(set(data) - {"train"})
        if extra:
            raise ConfigError(f"{path}: key(s) {extra} outside the [train] table would be "
                              "ignored; move them into [train]")
        data = data["train"]
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: [train] must be a table of config keys")
    return data


def load_config(path: str | os.PathLike) -> RunConfig:
    """A config from a TOML file (:func:`config_keys_of_file`, then :func:`config_from_dict`)."""
    return config_from_dict(config_keys_of_file(path), str(path))


# ------------------------------------------------------------------------------ keys
@scalar_args
def config_from_dict(data: Mapping[str, Any], source: str = "config", *,
                     saved: bool = False, explicit: Iterable[str] | None = None) -> RunConfig:
    """A :class:`~monoidlab.training.config.RunConfig` from plain keys.

    The keys of ``data`` (and each option of its ``model_options``) count as set by the user,
    so a ``recipe`` fills only the others (``explicit`` replaces that set). ``saved=True``:
    ``data`` is a run folder's own config (``config.json``, a checkpoint's), read in the
    spelling of the version that wrote it."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: expected a table of config keys, got {type(data).__name__}")
    data = _upgrade(dict(data)) if saved else dict(data)
    for old, new in RENAMED.items():
        if old in data:
            raise ConfigError(f"{source}: key {old!r} is now {new!r} (rename it)")
    unknown = sorted(set(data) - set(FILE_KEYS))
    if unknown:
        raise ConfigError(f"{source}: unknown key {unknown[0]!r}" + _known_keys(unknown[0]))
    options = data.get("model_options")
    if options is not None and not isinstance(options, Mapping) and not hasattr(options, "names"):
        raise ConfigError(f"{source}: key 'model_options': expected a table, got "
                          f"{type(options).__name__} {options!r}")
    explicit = given_keys(data) if explicit is None else set(explicit)
    # a saved config is the run's as trained: its recipe was applied when it was written, and a
    # key or model option it lacks is newer than the run, so it takes the default (the old
    # behaviour), never the recipe's value today (a 'languages' transform tree saved before
    # `state_factor` existed had n = the minimal count, which the recipe now doubles)
    values = data if saved else fill_recipe(data, explicit, source)
    return RunConfig(**values, explicit=frozenset(explicit), source=source)


def _upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """A saved config in today's spelling (0.1.0: ``model_kwargs``, ``task_kwargs``,
    ``pad_offset``, the test kind ``balanced``)."""
    for old, new in RENAMED.items():
        if old in data:
            value = data.pop(old)
            data.setdefault(new, value)
    kinds = data.get("eval_kinds")
    if isinstance(kinds, list):
        data["eval_kinds"] = [RENAMED_KINDS.get(k, k) for k in kinds]
    elif isinstance(kinds, str):
        data["eval_kinds"] = RENAMED_KINDS.get(kinds, kinds)
    return data


# ------------------------------------------------------------------------------ overrides
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


#: keys whose value is text even when it reads as another literal (``train_lengths=40``)
_TEXT_KEYS = {"train_lengths", "test_lengths", "val_lengths", "language", "task", "model",
              "sampler", "test_sampler", "device", "recipe", "protocol", "optimizer",
              "lr_schedule", "offsets"}


def read_overrides(items: Iterable[str], source: str = "override") -> dict[str, Any]:
    """``key=value`` (or ``--key=value``; dashes in a key read as underscores;
    ``model_options.d=32`` for one option of a table) as config keys.

    >>> read_overrides(["--batch-size=64", "model_options.padding=identity", "lr=3e-3"])
    {'batch_size': 64, 'model_options': {'padding': 'identity'}, 'lr': 0.003}
    """
    out: dict[str, Any] = {}
    for item in items:
        item = item[2:] if item.startswith("--") else item
        if "=" not in item:
            raise ConfigError(f"{source}: expected key=value, got {item!r}")
        key, text = item.split("=", 1)
        top, _, sub = key.partition(".")
        top = top.replace("-", "_") if top.replace("-", "_") in FILE_KEYS else top
        if top in RENAMED:
            raise ConfigError(f"{source}: key {top!r} is now {RENAMED[top]!r}")
        if top not in FILE_KEYS:
            raise ConfigError(f"{source}: unknown key {key!r}" + _known_keys(top))
        value = _parse_value(text)
        if sub:
            if top not in _NESTED:
                raise ConfigError(f"{source}: key {key!r}: only model_options.X and "
                                  "task_options.X take a dotted name")
            table = out.get(top)
            out[top] = {**(table if isinstance(table, dict) else {}), sub: value}
        else:
            if top in _TEXT_KEYS and not isinstance(value, str):
                value = text  # train_lengths=40 or 1:40: the text is the value
            out[top] = value
    return out


@scalar_args
def apply_overrides(cfg: RunConfig, overrides: Iterable[str],
                    source: str = "override") -> RunConfig:
    """``cfg`` with ``key=value`` overrides (:func:`read_overrides`): the keys ``cfg`` was
    built with and the overrides, built again (a ``recipe`` fills what neither sets)."""
    changes = read_overrides(overrides, source)
    explicit = set(cfg.explicit or ())
    keys: dict[str, Any] = {k: getattr(cfg, k) for k in explicit if k in _FIELDS
                            and k != "model_options"}
    options = {k.split(".", 1)[1]: getattr(cfg.model_options, k.split(".", 1)[1])
               for k in explicit if k.startswith("model_options.")}
    if "model" in changes and changes["model"] != cfg.model:
        options = {}  # another model: its own options
    new_options = changes.pop("model_options", None)
    if isinstance(new_options, dict):
        options = {**options, **new_options}
    elif new_options is not None:
        raise ConfigError(f"{source}: key 'model_options': expected a table, got "
                          f"{new_options!r}")
    keys.update(changes)
    if options:
        keys["model_options"] = options
    explicit = (explicit - ({k for k in explicit if k.startswith("model_options.")}
                            if "model" in changes else set())) | set(changes)
    explicit |= {f"model_options.{k}" for k in options}
    return config_from_dict(keys, source, explicit=explicit)
