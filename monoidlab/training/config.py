"""The run configuration: one frozen :class:`RunConfig`, validated once, when it is built.

Every setting of a training run is a key of :class:`RunConfig`, with its default, its meaning
and its section (problem, model, data, optimisation, evaluation, run) beside its type. Values
are typed: lengths are :class:`~monoidlab.geometry.Lengths`, offsets an
:class:`~monoidlab.geometry.Offsets`, the model's options the frozen options dataclass of that
model (``MLPLDRUOptions``, ...). Text (TOML files, ``--key=value`` overrides, a run folder's
``config.json``) becomes a config in :mod:`monoidlab.training.parse`, the one place text is
read; a config built directly from Python takes typed values or their plain forms
(``train_lengths="1:40"``, ``model_options={"d": 32}``) and converts each once.

Building a config checks every value and what the model can do (a model that cannot serve the
problem, or lacks what a key needs, is refused here, in one :class:`ConfigError` line that
names the key, never at step 1). A config never changes afterwards; :meth:`RunConfig.replace`
makes a changed copy.

Example
-------
>>> cfg = RunConfig(language="parity", model="mlp-ldru", steps=200, model_options={"d": 32})
>>> cfg.steps, cfg.model_options.d, cfg.model_options.padding, cfg.test_lengths
(200, 32, <Padding.LEARNED: 'learned'>, Lengths(start=41, stop=500, step=1))
>>> cfg.replace(lr=3e-3).lr, cfg.lr
(0.003, 0.001)
>>> RunConfig(language="parity", model="decoder-lm")
Traceback (most recent call last):
...
monoidlab.errors.ConfigError: config: key 'model': model 'decoder-lm' cannot learn a language (one class per string): it lacks a class output per string (Classifier); models that can: bbt-grc, gated-deltanet, lstm, mlp-ldru, mlp-ldru-snap, pr-lstm, pr-lstm-snap, pr-rnn, rir-grc, rnn, stack-rnn, tape-rnn, transform-tree, transformer
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import InitVar, dataclass, field
from typing import TYPE_CHECKING, Any

from monoidlab._suggest import known_choices
from monoidlab.errors import ConfigError, InputError
from monoidlab.geometry import Lengths, Offsets, Padding
from monoidlab.strings.sampling import DEFAULT_SAMPLER, TRAINING_SAMPLERS
from monoidlab.training.config_checks import _CHECKS, Checker, run_padding
from monoidlab.training.keys import (
    LR_SCHEDULES,
    MAX_STEP_SYMBOLS,
    OPTIMIZERS,
    PROTOCOLS,
    RECIPES,
    SECTIONS,
    FrozenDict,
    _key,
)

if TYPE_CHECKING:
    from monoidlab.strings.samplers import SamplerSpec

__all__ = ["RunConfig", "language_recipe", "training_recipe", "fill_recipe", "FrozenDict",
           "OPTIMIZERS", "RECIPES", "PROTOCOLS", "SECTIONS", "LR_SCHEDULES", "MAX_STEP_SYMBOLS", "run_padding",
           "TRAINING_SAMPLERS", "DEFAULT_SAMPLER"]

def fill_recipe(data: dict[str, Any], explicit: set[str], source: str) -> dict[str, Any]:
    """``data`` with the recipe's value of every key (and model option) not explicitly set."""
    recipe = data.get("recipe", "default")
    if recipe == "default" or not isinstance(recipe, str):
        return data  # a bad value fails in the config's own check
    from monoidlab.models.registry import model_spec

    model = data.get("model", _FIELDS["model"].default)
    try:
        spec = model_spec(model)
    except InputError as exc:
        raise ConfigError(f"{source}: key 'model': {exc}") from None
    if recipe not in spec.recipes:
        if recipe not in RECIPES:
            raise ConfigError(f"{source}: key 'recipe': unknown recipe {recipe!r}"
                              + known_choices(recipe, RECIPES))
        raise ConfigError(f"{source}: key 'recipe': recipe {recipe!r} has no settings for model "
                          f"{model!r}; it has for {', '.join(_with_recipes(recipe))}")
    keys, options = spec.recipes[recipe](data.get("language"), data.get("task"))
    out = {**data, **{k: v for k, v in keys.items() if k not in explicit}}
    given = data.get("model_options")
    if given is None:
        given = {}
    if isinstance(given, Mapping):
        own = {k: v for k, v in given.items() if f"model_options.{k}" in explicit}
        out["model_options"] = {**options, **own}
    return out


def _with_recipes(recipe: str) -> list[str]:
    from monoidlab.models.registry import REGISTRY

    return [n for n, s in REGISTRY.items() if recipe in s.recipes]


def given_keys(data: Mapping[str, Any]) -> set[str]:
    """The keys (and ``model_options.NAME`` options) a table of config keys sets: what a recipe
    must not overwrite (``offset_buffer`` sets ``offsets``).

    >>> sorted(given_keys({"steps": 5, "model_options": {"d": 8}, "offset_buffer": 64}))
    ['model_options.d', 'offsets', 'steps']
    """
    explicit = set(data) - {"model_options", "offset_buffer"}
    if "offset_buffer" in data:
        explicit.add("offsets")
    if isinstance(data.get("model_options"), Mapping):
        explicit |= {f"model_options.{k}" for k in data["model_options"]}
    return explicit


class _FillsRecipe(type):
    """``RunConfig(..., recipe="authors")`` built directly fills every key (and model option)
    not given from the recipe, as a config file or the command line does; without this a
    recipe named in Python was a label only. A config built with ``explicit`` (the parser,
    ``replace``) is built as given."""

    def __call__(cls, *args: Any, **keys: Any) -> Any:
        if not args and keys.get("explicit") is None and keys.get("recipe", "default") != "default":
            source = keys.pop("source", "config")
            explicit = given_keys(keys)
            keys = {**fill_recipe(keys, explicit, source), "explicit": frozenset(explicit),
                    "source": source}
        return super().__call__(*args, **keys)


def language_recipe(model: str = "mlp-ldru") -> str:
    """The recipe ``monoidlab train --language L --model MODEL`` trains with when none is named
    (and :meth:`RunConfig.for_language` too): ``languages`` for MLP-LDRU once the random-
    language benchmark has frozen one, a depth-exact model's own ``languages``; else
    ``default``.

    >>> language_recipe("transform-tree"), language_recipe("transformer")
    ('languages', 'default')
    """
    from monoidlab.models import model_spec
    from monoidlab.recipes import has_frozen_recipe

    if model == "mlp-ldru":
        return "languages" if has_frozen_recipe() else "default"
    return "languages" if "languages" in model_spec(model).recipes else "default"


def training_recipe(model: str | None = None, path: Any = None
                    ) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(layout, advice)`` of the recipe ``monoidlab train --language L [--model MODEL]``
    trains with (``model`` None: :func:`monoidlab.recipes.default_model`, the benchmark's frozen
    choice): the padding and sampler ``min-length`` and the report assume (``layout``, with
    ``from`` saying whose) and the recipe they name (``advice``, as
    :func:`monoidlab.recipes.recipe_advice`). MLP-LDRU's is its frozen recipe (``path``
    replaces that file); another model's is its own recipe 'languages' of the registry, with
    the benchmark's basis when the benchmark froze it; a model without one keeps its defaults.
    A model without a padding option pads with the identity (it has no padding state).

    >>> layout, advice = training_recipe("transform-tree")
    >>> layout["padding"], layout["sampler"], advice["recipe"]
    ('identity', 'near_miss', 'languages')
    """
    from monoidlab.models import model_spec
    from monoidlab.recipes import default_model, recipe_advice, recipe_layout

    model = default_model() if model is None else model
    if model == "mlp-ldru":
        return recipe_layout(path), recipe_advice(path, model)
    spec = model_spec(model)
    recipe = spec.recipes.get("languages")
    if recipe is None:
        options = spec.make_options({})
        padding = getattr(options, "padding", spec.fixed_padding or "identity")
        return ({"padding": str(getattr(padding, "value", padding)), "sampler": None,
                 "model": model, "from": f"model {model}'s defaults"},
                {"recipe": None, "frozen": None, "model": model,
                 "basis": f"none: model {model} has no recipe 'languages'; monoidlab train "
                          "keeps its defaults"})
    keys, values = recipe("any", None)
    options = spec.make_options(values)
    padding = getattr(options, "padding", spec.fixed_padding or "identity")
    advice = recipe_advice(path, model)
    if advice["recipe"] is None:  # not frozen by the benchmark: the model's own
        attempts = int(keys.get("restarts", 0)) + 1
        advice = {"recipe": "languages", "frozen": None, "model": model,
                  "basis": f"model {model}'s own recipe 'languages' ({keys.get('sampler')} "
                           f"strings of lengths {keys.get('train_lengths')}, {attempts} x "
                           f"{keys.get('steps')} steps at most; monoidlab/models/registry.py); "
                           f"monoidlab train --language L --model {model} uses it"}
    whose = (f"the training recipe's ('languages', {advice['frozen']})" if advice["frozen"]
             else f"model {model}'s recipe 'languages'")
    return ({"padding": str(getattr(padding, "value", padding)), "model": model,
             "sampler": None if keys.get("sampler") is None else str(keys["sampler"]),
             "from": whose}, advice)


@dataclass(frozen=True)
class RunConfig(metaclass=_FillsRecipe):
    """Every setting of a training run (the table of keys: :func:`~monoidlab.training.config_docs.config_keys`,
    docs/training.md). Each key's default, meaning and section are given here, next to its
    type."""

    # --- problem: what to learn (exactly one of language / task)
    language: str | None = _key(None, "a suite name (`parity`, `dyck-6`, ...) or a TOML spec "
                                      "path; exactly one of `language` / `task`", "problem")
    task: str | None = _key(None, "a Delétang task (`reverse_string`, ...), `listops` or "
                                  "`addition`", "problem")
    task_options: Mapping = _key(FrozenDict(), "options of the task", "problem")
    protocol: str = _key("monoidlab", "tape tasks: `paper` runs them as Delétang et al.'s "
                                      "released code (pooled token accuracy decides, unmasked "
                                      "loss, the released task options; see deletang.md)",
                         "problem")
    # --- model
    model: str = _key("mlp-ldru", "the model: {models}", "model")
    model_options: Any = _key(None, "the model's options, e.g. `{d = 64, dropout = 0.25}` "
                                    "(each model's options: docs/models.md; none: its "
                                    "defaults)", "model")
    recipe: str = _key("default", "`authors`: the papers' training settings for every key (and "
                                  "model option) not set; `languages` (on a language): "
                                  "MLP-LDRU's frozen recipe of the random-language benchmark, "
                                  "a depth-exact model's own; the command line's default for "
                                  "languages", "model")
    # --- data (one length per batch, drawn uniformly from train_lengths)
    train_lengths: Lengths = _key(Lengths(1, 40), "training lengths `A:B` (inclusive) or "
                                                  "`A:B:STEP`; each batch has one length, drawn "
                                                  "uniformly (lengths without strings skipped)",
                                  "data")
    curriculum_start: int = _key(0, "a length curriculum: the longest training length at the "
                                    "first step of every attempt, growing linearly to the top "
                                    "of `train_lengths` over `curriculum_fraction` of the "
                                    "attempt's steps (each batch's length drawn uniformly from "
                                    "the training lengths up to it); 0: off, every training "
                                    "length from the first step", "data")
    curriculum_fraction: float = _key(0.5, "the fraction of each attempt's steps over which a "
                                           "curriculum (`curriculum_start` > 0) grows to the "
                                           "longest training length", "data")
    batch_size: int = _key(128, "strings per training batch (PR-LSTM's authors: 128, MLP-LDRU's: "
                                "256)", "data")
    sampler: str = _key(DEFAULT_SAMPLER, "training strings: {samplers} (their laws: "
                                         "docs/coverage.md; `balanced`, every class equally "
                                         "often, is monoidlab's default sampler; `covering`: see "
                                         "`covering`)", "data")
    near_miss_mix: Mapping | None = _key(None, "the `near_miss` sampler's shares of `members`, "
                                               "`near_miss`, `uniform` and `ec_stratified` "
                                               "strings (none: `{members = 0.5, near_miss = "
                                               "0.25, uniform = 0.25}`)", "data")
    covering: Mapping | None = _key(None, "the `covering` sampler (every composition the test "
                                          "lengths need, at every level the training layout "
                                          "can show it): `share` of each batch (the rest are "
                                          "`near_miss` strings), `k`, the times each is shown "
                                          "over the run, `uncovered` = refuse or skip, "
                                          "`too_large` = refuse or near_miss (a plan the steps "
                                          "cannot show: train on near misses instead, said in "
                                          "the results) (none: `{share = 0.5, k = 1, uncovered "
                                          "= \"refuse\", too_large = \"refuse\"}`)",
                                    "data")
    test_sampler: str | None = _key(None, "sampler of probing's held-out strings (none: "
                                          "`sampler`); the test sets are the evaluation kinds",
                                    "data")
    within: Any = _key("auto", "a sub-language: `auto` (the well-formed strings where the "
                               "language has an `incomplete` class), `none`, `all-but:A,B` or a "
                               "list of classes", "data")
    offsets: Offsets = _key(Offsets(), "`random`: a balanced-tree model (mlp-ldru) sees each "
                                       "training string at a random left offset "
                                       "(coverage.md); test strings at offset 0", "data")
    # --- optimisation
    steps: int = _key(1000, "optimiser steps (CPU scale: parity, cycle navigation solved within "
                            "~10 min)", "optimisation")
    optimizer: str = _key("adam", "`adam`, `adamw`, `amsgrad` (torch's), `amsgrad-optax` (the "
                                  "MLP-LDRU authors')", "optimisation")
    lr: float = _key(1e-3, "peak learning rate", "optimisation")
    weight_decay: float = _key(0.0, "Adam(W) weight decay", "optimisation")
    clip: float = _key(1.0, "global gradient-norm clipping (0: off)", "optimisation")
    warmup: float = _key(0.0, "fraction of the steps of linear warm-up from 1e-8 (the MLP-LDRU "
                              "authors: 0.2)", "optimisation")
    lr_schedule: str = _key("constant", "after warm-up: `constant` or `cosine` (to 0 at the "
                                        "last step)", "optimisation")
    assoc_weight: float = _key(0.0, "weight of the model's associativity regulariser, added to "
                                    "every step's loss (models without one reject it)",
                               "optimisation")
    offset_consistency: float = _key(0.0, "weight of a label-free term (needs `offsets = "
                                          "\"random\"` and identity padding): 1 − cos between "
                                          "each training string's root state at its offset and "
                                          "at offset 0, i.e. the same string under two "
                                          "bracketings", "optimisation")
    grad_centralisation: bool = _key(False, "subtract each weight matrix's gradient mean over "
                                            "its output axis (the MLP-LDRU authors')",
                                     "optimisation")
    restarts: int = _key(0, "fresh starts (new initial weights and batches, `steps` each) after "
                            "an attempt ends without early stopping; the best validated weights "
                            "of all attempts are tested (needs `early_stop`)", "optimisation")
    refine_rounds: int = _key(0, "a finite model (mlp-ldru-snap, pr-lstm-snap, "
                                 "transform-tree) on a language: after training, up to this "
                                 "many rounds of certify, then train on the shortest "
                                 "counterexample within the training lengths; the weights "
                                 "are replaced only by proved ones (0: off; "
                                 "docs/training.md, \"refinement\")", "optimisation")
    distil: str = _key("none", "\"lstar\": at the end of each attempt, replace the "
                               "transformation tree's weights by the automaton L* extracts "
                               "from its soft relaxation (the soft machine answers membership "
                               "queries; labelled training strings are the equivalence "
                               "oracle), if it scores at least the argmax machine on those "
                               "strings (needs model_options.relaxation = \"soft\"; "
                               "docs/training.md, \"distillation\"); \"none\": off",
                       "optimisation")
    refine_steps: int = _key(500, "steps of one refinement round (lr cosine from `lr`)",
                             "optimisation")
    refine_mine: int = _key(0, "training strings per refinement round folded by the model's "
                               "table; those it misreads join the pool beside the shortest "
                               "counterexample (0: that one only)", "optimisation")
    refine_share: float = _key(0.25, "the share of each refinement batch drawn from the "
                                     "counterexamples found so far, in (0, 1]",
                               "optimisation")
    # --- evaluation
    test_lengths: Lengths = _key(Lengths(41, 500), "lengths of the final evaluation",
                                 "evaluation")
    test_samples: int = _key(64, "strings per test length and test kind (the papers: 512)",
                             "evaluation")
    eval_kinds: Any = _key("all", "test kinds of a language: {kinds} (docs/evaluation.md), "
                                  "or `all`; a task has its own kinds (`task` first)",
                           "evaluation")
    eval_every: int = _key(0, "steps between validations (0: only the final evaluation)",
                           "evaluation")
    early_stop: int = _key(0, "stop after this many strictly solved validations in a row (0: "
                              "off; needs `eval_every`)", "evaluation")
    val_lengths: Lengths | None = _key(None, "validation lengths (none: the test lengths)",
                                       "evaluation")
    val_samples: int = _key(16, "validation strings per length and kind", "evaluation")
    solved_threshold: float = _key(0.99, "strictly solved: accuracy >= this at every scored "
                                         "test length of every test kind, in (0, 1]",
                                   "evaluation")
    # --- run: bookkeeping
    seed: int = _key(0, "initial weights, every batch, dropout, the test sets (0 .. 2^63 - 1)")
    device: str = _key("auto", "`auto` (CUDA when present), `cpu`, `cuda`, `cuda:N`")
    bf16: bool = _key(True, "bf16 autocast for training on CUDA (ignored on CPU)")
    compile: bool = _key(False, "`torch.compile` the training forward")
    checkpoint_every: int = _key(500, "steps between checkpoints (and one at the end)")
    log_every: int = _key(50, "steps between `metrics.jsonl` lines")
    threads: int = _key(1, "torch CPU threads of the run (0: torch's default; at most the "
                           "machine's cores); one run per core is fastest")
    limits: bool = _key(True, "work limits: model options whose training step would need more "
                              "than 16 GiB (parameters and activations, estimated before the "
                              "model is built) are refused; `false` lifts them")
    #: the keys the user set (a recipe fills the others); not part of the config's identity
    explicit: frozenset | None = field(default=None, compare=False, repr=False,
                                       metadata={"internal": True})
    #: ``sampler`` and ``test_sampler`` resolved once, when the config is built (the registry's
    #: :class:`~monoidlab.strings.samplers.SamplerSpec`; test_sampler None: not set)
    sampler_spec: SamplerSpec = field(default=None, init=False, compare=False,  # type: ignore[assignment]
                                      repr=False, metadata={"internal": True})
    test_sampler_spec: SamplerSpec | None = field(default=None, init=False, compare=False,
                                                  repr=False, metadata={"internal": True})
    #: the buffer of random offsets, as files write it beside ``offsets`` (one value in memory)
    offset_buffer: InitVar[int | None] = None
    source: InitVar[str] = "config"

    def __new__(cls, *args: Any, **keys: Any) -> RunConfig:
        # The generated __init__ would answer a misspelt key with a bare TypeError; name
        # it, with the closest key, before it runs (replace() and the parser come here too).
        unknown = sorted(set(keys) - set(_INIT_KEYS))
        if unknown:
            raise ConfigError(f"{keys.get('source', 'config')}: unknown key {unknown[0]!r}"
                              + known_choices(unknown[0], _FIELDS, "known keys",
                                              where="docs/training.md"))
        return super().__new__(cls)

    def __post_init__(self, offset_buffer: int | None, source: str) -> None:
        if offset_buffer is not None:
            try:
                offsets = Offsets.parse(self.offsets, offset_buffer, "offsets")
            except InputError as exc:
                raise ConfigError(f"{source}: key 'offset_buffer': {exc}") from None
            object.__setattr__(self, "offsets", offsets)
        Checker(self, source).run()

    # ------------------------------------------------------------------ reading
    @property
    def total_steps(self) -> int:
        """Steps over every attempt (``steps`` × (1 + ``restarts``))."""
        return self.steps * (1 + self.restarts)

    @property
    def padding(self) -> Padding:
        """The model's padding (:func:`run_padding`)."""
        return run_padding(self)

    def as_dict(self) -> dict[str, Any]:
        """Plain data (JSON, TOML, checkpoints): lengths as their text ``"41:500"``, offsets as
        ``offsets`` and ``offset_buffer``, the model's options as a table of every option."""
        out: dict[str, Any] = {}
        for f in _FIELDS.values():
            v = getattr(self, f.name)
            if isinstance(v, Lengths):
                v = str(v)
            elif isinstance(v, Offsets):
                out["offsets"] = v.mode
                out["offset_buffer"] = v.buffer
                continue
            elif f.name == "model_options":
                v = v.as_dict()
            elif isinstance(v, Mapping):
                v = dict(v)
            elif isinstance(v, tuple):
                v = list(v)
            out[f.name] = v
        return out

    @classmethod
    def for_language(cls, language: str, model: str | None = None, **keys: Any) -> RunConfig:
        """The config ``monoidlab train --language LANGUAGE --model MODEL`` trains with, the
        same keys given: the recipe :func:`language_recipe` names unless ``recipe`` is given;
        ``model`` None is the benchmark's frozen choice (:func:`monoidlab.recipes.default_model`,
        what the command line trains without ``--model``). ``RunConfig(language=...)`` itself
        keeps model ``mlp-ldru`` and recipe ``default`` (the raw keys below, which studies and
        tests spell out).

        >>> cfg = RunConfig.for_language("parity", "transform-tree", seed=3)
        >>> cfg.recipe, cfg.seed, cfg.steps == RunConfig(language="parity").steps
        ('languages', 3, False)
        """
        if model is None:
            from monoidlab.recipes import default_model

            model = default_model()
        if "recipe" not in keys:
            keys["recipe"] = language_recipe(model)
        return cls(language=language, model=model, **keys)

    def replace(self, **changes: Any) -> RunConfig:
        """A copy with ``changes`` (checked like any config); the changed keys count as set.

        >>> cfg = RunConfig(language="parity")
        >>> cfg.replace(steps=5).steps, RunConfig(**cfg.as_dict()) == cfg
        (5, True)
        """
        unknown = sorted(set(changes) - set(_FIELDS))
        if unknown:
            raise ConfigError(f"config: unknown key {unknown[0]!r}"
                              + known_choices(unknown[0], _FIELDS, "known keys",
                                              where="docs/training.md"))
        explicit = set(self.explicit or ()) | set(changes)
        if "model_options" in changes and isinstance(changes["model_options"], Mapping):
            explicit |= {f"model_options.{k}" for k in changes["model_options"]}
        return dataclasses.replace(self, **changes, explicit=frozenset(explicit))


_FIELDS = {f.name: f for f in dataclasses.fields(RunConfig) if not f.metadata.get("internal")}
#: every keyword the constructor takes (the internal ``explicit`` and the init-only ones too)
_INIT_KEYS = frozenset([*(f.name for f in dataclasses.fields(RunConfig) if f.init),
                        "offset_buffer", "source"])
_LENGTH_KEYS = [k for k, f in _FIELDS.items() if "Lengths" in str(f.type)]
assert set(_CHECKS) | set(_LENGTH_KEYS) | {"offsets"} == set(_FIELDS), "a key without a check"
