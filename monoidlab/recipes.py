"""The training recipe for a user's own language: the random-language benchmark's frozen recipe.

The random-language benchmark (the study config ``configs/random-languages.toml``) measures recipes for MLP-LDRU on
languages the suite does not have, one setting at a time on a development half, and marks the
one it chose ``frozen = true`` before scoring it once on a held-out half (docs/results.md, "The
random-language benchmark"). That recipe, shipped as package data (``data/frozen-recipe.toml``,
written by the benchmark's ``freeze`` action and tested equal to the config's block, so that the
default can never drift from what was measured), is ``recipe = "languages"`` of MLP-LDRU, and the default of
``monoidlab train --language ...`` (the command line; from Python, ask for it by name).

Only its training keys are taken: the model, the test lengths and sample size, threads,
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

#: the frozen recipe as the package ships it: a copy of the benchmark config's frozen block
FROZEN = Path(__file__).resolve().parent / "data" / "frozen-recipe.toml"
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


def frozen_recipe(path: str | Path | None = None) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """``(name, keys, model_options)`` of the recipe marked ``frozen = true`` in ``path``
    (default :data:`FROZEN`).

    A file with no frozen recipe (the benchmark has not chosen one yet) or with two is an
    error that says so."""
    path = FROZEN if path is None else path
    recipes = _read(str(path)).get("recipes", {})
    frozen = [n for n, r in recipes.items() if isinstance(r, dict) and r.get("frozen") is True]
    if not frozen:
        raise ConfigError(f"{path}: no recipe is frozen yet (the random-language benchmark "
                          "chooses one on its development half and marks it frozen = true); "
                          "recipe 'languages' needs one")
    if len(frozen) > 1:
        raise ConfigError(f"{path}: {len(frozen)} recipes are frozen ({', '.join(frozen)}); "
                          "exactly one may be")
    name = frozen[0]
    recipe = recipes[name]
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


def recipe_advice(path: str | Path | None = None) -> dict[str, Any]:
    """Which recipe to train a user's own language with, as ``min-length`` and the report print
    it: ``{"recipe", "frozen", "basis"}``.

    Once the benchmark has frozen a recipe, it is ``"languages"`` with the measured basis the
    config records (its ``basis`` key); before, no recipe is recommended and the basis says why
    (a recipe is recommended only on the benchmark's evidence, never by default).

    >>> advice = recipe_advice()
    >>> sorted(advice)
    ['basis', 'frozen', 'recipe']
    """
    path = FROZEN if path is None else path
    recipes = _read(str(path)).get("recipes", {})
    if not any(isinstance(r, dict) and r.get("frozen") is True for r in recipes.values()):
        return {"recipe": None, "frozen": None,
                "basis": "none yet: the random-language benchmark has not frozen a recipe "
                         "(docs/results.md, 'The random-language benchmark'); monoidlab train "
                         "keeps its own defaults"}
    name, _, _ = frozen_recipe(path)  # two frozen, or one for another model: an error
    # the comparison with every other recipe stays in the config; one line names the choice
    basis = str(recipes[name].get("basis", "")).split(" (the others: ")[0]
    return {"recipe": "languages", "frozen": name,
            "basis": f"recipe 'languages' (the benchmark's {name!r}, frozen on its development "
                     "half" + (f": {basis}" if basis else "") + "); monoidlab train --language "
                     "uses it"}


def recipe_layout(path: str | Path | None = None) -> dict[str, str | None]:
    """The padding and training sampler of the recipe ``monoidlab train --language`` uses
    (:func:`recipe_advice`), with ``from`` saying whose they are: the defaults ``min-length``
    and the report assume, so that a support length is computed for the layout the user is
    told to train with. Without a frozen recipe, the models' defaults: learned padding, and
    ``sampler`` None (the caller's default sampler: this layer does not know the samplers).

    >>> sorted(recipe_layout())
    ['from', 'padding', 'sampler']
    """
    if recipe_advice(path)["recipe"] is None:
        return {"padding": "learned", "sampler": None, "from": "the models' defaults"}
    name, keys, options = frozen_recipe(path)
    sampler = keys.get("sampler")
    return {"padding": str(options.get("padding", "learned")),
            "sampler": None if sampler is None else str(sampler),
            "from": f"the training recipe's ('languages', {name})"}


def languages_recipe(language: str | None, task: str | None) -> tuple[dict, dict]:
    """``recipe = "languages"`` of MLP-LDRU: the frozen recipe's keys and model options."""
    if task is not None or language is None:
        raise ConfigError("recipe 'languages' is for languages (a DFA spec or a suite name), "
                          f"not for the task {task!r}; use recipe 'authors' or your own keys")
    _, keys, options = frozen_recipe()
    return keys, options
