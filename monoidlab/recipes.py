"""The training recipe for a user's own language: the random-language benchmark's frozen recipes.

The random-language benchmark (the study configs ``configs/random-languages*.toml``) measures
recipes on languages the suite does not have, one setting at a time on a development half, and
marks the one it chose ``frozen = true`` before scoring it once on a held-out half (docs/results.md,
"The random-language benchmark"). Two frozen recipes ship as package data, each written by the
benchmark's ``freeze`` action and tested equal to its config's block, so that a default can never
drift from what was measured:

- ``data/default-recipe.toml``: the latest round's choice, whichever model (round 2:
  ``languages-v2``, the transformation tree): what ``monoidlab train --language L`` trains when
  no model is named (:func:`default_model`), and what ``min-length`` and the report recommend;
- ``data/frozen-recipe.toml``: the benchmark's recipe for MLP-LDRU (round 1: ``languages-v1``),
  ``recipe = "languages"`` of MLP-LDRU (``--model mlp-ldru``).

Only a recipe's training keys are taken: the model, the test lengths and sample size, threads,
device, checkpoint and log intervals stay the run's own.

>>> from monoidlab.recipes import frozen_recipe, has_frozen_recipe
>>> name, keys, options = frozen_recipe() if has_frozen_recipe() else ("", {}, {})
>>> "test_lengths" in keys, "model" in keys   # the run's own, never the recipe's
(False, False)
"""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path
from typing import Any

from monoidlab.errors import ConfigError

#: MLP-LDRU's recipe 'languages' as the package ships it: a copy of a benchmark config's frozen
#: block for MLP-LDRU (round 1's languages-v1)
FROZEN = Path(__file__).resolve().parent / "data" / "frozen-recipe.toml"
#: the benchmark's latest choice, whichever model (a copy of the latest config's frozen block):
#: the default of ``monoidlab train --language`` when no model is named
DEFAULT_RECIPE = Path(__file__).resolve().parent / "data" / "default-recipe.toml"
#: recipe keys that are the run's own, never the recipe's
RUN_KEYS = frozenset({"frozen", "basis", "model", "test_lengths", "test_samples", "threads",
                      "device", "checkpoint_every", "log_every", "eval_kinds"})


def _read(path: str) -> dict[str, Any]:
    try:
        stamp = Path(path).stat().st_mtime_ns  # an edited file is read again
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the random-language benchmark's recipes "
                          f"({exc})") from None
    return _parse(path, stamp)


@functools.lru_cache(maxsize=4)
def _parse(path: str, stamp: int) -> dict[str, Any]:
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the random-language benchmark's recipes "
                          f"({exc})") from None


def _frozen(path: str | Path) -> tuple[str, dict[str, Any]]:
    """``(name, table)`` of the one recipe marked ``frozen = true`` in ``path``; none or two is
    an error that says so."""
    recipes = _read(str(path)).get("recipes", {})
    frozen = [n for n, r in recipes.items() if isinstance(r, dict) and r.get("frozen") is True]
    if not frozen:
        raise ConfigError(f"{path}: no recipe is frozen yet (the random-language benchmark "
                          "chooses one on its development half and marks it frozen = true); "
                          "recipe 'languages' needs one")
    if len(frozen) > 1:
        raise ConfigError(f"{path}: {len(frozen)} recipes are frozen ({', '.join(frozen)}); "
                          "exactly one may be")
    return frozen[0], recipes[frozen[0]]


def _any_frozen(path: str | Path) -> bool:
    """Whether ``path`` marks some recipe ``frozen = true`` (two is :func:`_frozen`'s error)."""
    recipes = _read(str(path)).get("recipes", {})
    return any(isinstance(r, dict) and r.get("frozen") is True for r in recipes.values())


def _choice(name: str, recipe: dict[str, Any]) -> str:
    """The frozen choice in one line: the benchmark's NAME, frozen on its development half,
    with the first sentence of its basis (the comparison with the others stays in the config)."""
    basis = str(recipe.get("basis", "")).split(" (the others: ")[0]
    return (f"the benchmark's {name!r}, frozen on its development half"
            + (f": {basis}" if basis else ""))


def frozen_recipe(path: str | Path | None = None) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """``(name, keys, model_options)`` of the recipe marked ``frozen = true`` in ``path``
    (default :data:`FROZEN`, MLP-LDRU's).

    A file with no frozen recipe (the benchmark has not chosen one yet) or with two is an
    error that says so, and so is one for another model."""
    path = FROZEN if path is None else path
    name, recipe = _frozen(path)
    if recipe.get("model", "mlp-ldru") != "mlp-ldru":
        raise ConfigError(f"{path}: recipe {name!r} is for model {recipe['model']!r}; "
                          "recipe 'languages' serves mlp-ldru")
    keys = {k: v for k, v in recipe.items() if k not in RUN_KEYS and k != "model_options"}
    return name, keys, dict(recipe.get("model_options", {}))


def has_frozen_recipe(path: str | Path | None = None) -> bool:
    """Whether ``path`` names exactly one frozen recipe (the command line's default then)."""
    try:
        frozen_recipe(path)
    except ConfigError:
        return False
    return True


def default_model(path: str | Path | None = None) -> str:
    """The model ``monoidlab train --language L`` trains when none is named: the model of the
    benchmark's latest frozen recipe (``path``, default :data:`DEFAULT_RECIPE`); MLP-LDRU while
    none is frozen.

    >>> default_model() in {"mlp-ldru", "transform-tree"}
    True
    """
    path = DEFAULT_RECIPE if path is None else path
    if not Path(path).is_file() or not _any_frozen(path):
        return "mlp-ldru"
    _, recipe = _frozen(path)  # two frozen: a broken file, never a silent default
    return str(recipe.get("model", "mlp-ldru"))


def recipe_advice(path: str | Path | None = None, model: str | None = None) -> dict[str, Any]:
    """The benchmark's frozen recipe for ``model`` (default: :func:`default_model`, what
    ``monoidlab train --language L`` trains), as ``min-length`` and the report print it:
    ``{"recipe", "frozen", "basis", "model"}``, the basis the measured one its config records
    (its ``basis`` key): the latest round's for its model (:data:`DEFAULT_RECIPE`), round 1's
    ``languages-v1`` for MLP-LDRU (``path``, default :data:`FROZEN`). A model the benchmark
    froze nothing for gets ``recipe`` None (its own recipe, if any, is the registry's:
    :func:`monoidlab.training.config.training_recipe`); so does MLP-LDRU before any freeze, and
    the basis says why (a recipe is recommended only on the benchmark's evidence).

    >>> advice = recipe_advice()
    >>> sorted(advice)
    ['basis', 'frozen', 'model', 'recipe']
    """
    default = default_model()
    model = default if model is None else model
    how = "monoidlab train --language uses it" + ("" if model == default else
                                                  f" with --model {model}")
    if model != "mlp-ldru":
        if model != default:
            return {"recipe": None, "frozen": None, "model": model,
                    "basis": f"none: the random-language benchmark froze no recipe for model "
                             f"{model}"}
        name, recipe = _frozen(DEFAULT_RECIPE)
        return {"recipe": "languages", "frozen": name, "model": model,
                "basis": f"model {model}, recipe 'languages' ({_choice(name, recipe)}); {how}"}
    path = FROZEN if path is None else path
    if not _any_frozen(path):
        return {"recipe": None, "frozen": None, "model": model,
                "basis": "none yet: the random-language benchmark has not frozen a recipe "
                         "(docs/results.md, 'The random-language benchmark'); monoidlab train "
                         "keeps its own defaults"}
    frozen_recipe(path)  # two frozen, or one for another model: an error
    name, recipe = _frozen(path)
    return {"recipe": "languages", "frozen": name, "model": model,
            "basis": f"recipe 'languages' ({_choice(name, recipe)}); {how}"}


def recipe_layout(path: str | Path | None = None) -> dict[str, str | None]:
    """The padding and training sampler of MLP-LDRU's frozen recipe (:func:`recipe_advice`),
    with ``from`` saying whose they are; without a frozen recipe, the models' defaults:
    learned padding, and ``sampler`` None (the caller's default sampler: this layer does not
    know the samplers). Any model's: :func:`monoidlab.training.config.training_recipe`.

    >>> sorted(recipe_layout())
    ['from', 'model', 'padding', 'sampler']
    """
    if recipe_advice(path, "mlp-ldru")["recipe"] is None:
        return {"padding": "learned", "sampler": None, "model": "mlp-ldru",
                "from": "the models' defaults"}
    name, keys, options = frozen_recipe(path)
    sampler = keys.get("sampler")
    return {"padding": str(options.get("padding", "learned")), "model": "mlp-ldru",
            "sampler": None if sampler is None else str(sampler),
            "from": f"the training recipe's ('languages', {name})"}


def languages_recipe(language: str | None, task: str | None) -> tuple[dict, dict]:
    """``recipe = "languages"`` of MLP-LDRU: the frozen recipe's keys and model options."""
    if task is not None or language is None:
        raise ConfigError("recipe 'languages' is for languages (a DFA spec or a suite name), "
                          f"not for the task {task!r}; use recipe 'authors' or your own keys")
    _, keys, options = frozen_recipe()
    return keys, options
