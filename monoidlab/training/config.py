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
monoidlab.errors.ConfigError: config: key 'model': model 'decoder-lm' cannot learn a language (one class per string): it lacks a class output per string (Classifier); models that can: bbt-grc, gated-deltanet, lstm, mlp-ldru, pr-lstm, pr-rnn, rir-grc, rnn, stack-rnn, tape-rnn, transformer
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import InitVar, dataclass, field
from typing import Any

from monoidlab._suggest import did_you_mean, known_choices
from monoidlab._util import check_workload
from monoidlab.errors import ConfigError, InputError
from monoidlab.geometry import Lengths, Offsets, Padding
from monoidlab.strings.sampling import DEFAULT_SAMPLER, TRAINING_SAMPLERS

__all__ = ["RunConfig", "language_recipe", "FrozenDict", "config_keys", "config_table_markdown", "OPTIMIZERS",
           "RECIPES", "PROTOCOLS", "SECTIONS", "MAX_STEP_SYMBOLS", "run_padding",
           "TRAINING_SAMPLERS", "covering_settings"]

MAX_STEP_SYMBOLS = 2**24  # batch_size x longest training length: one step's tokens
OPTIMIZERS = ("adam", "adamw", "amsgrad", "amsgrad-optax")
RECIPES = ("default", "authors", "languages")
PROTOCOLS = ("monoidlab", "paper")
LR_SCHEDULES = ("constant", "cosine")
SECTIONS = ("problem", "model", "data", "optimisation", "evaluation", "run")
#: the samplers a run can train on: every sampler of :mod:`monoidlab.strings.sampling`, and
#: ``covering`` (:mod:`monoidlab.coverage.covering`), which lays strings out along the model's tree
MAX_SEED = 2**63 - 1


class FrozenDict(dict):
    """A read-only dict (a config's tables): reading works as for a dict, changing raises.

    >>> d = FrozenDict(a=1)
    >>> d["a"], d == {"a": 1}
    (1, True)
    >>> d["b"] = 2
    Traceback (most recent call last):
    ...
    TypeError: a config is frozen: use cfg.replace(...) for a changed copy
    """

    def _frozen(self, *a: Any, **k: Any) -> None:
        raise TypeError("a config is frozen: use cfg.replace(...) for a changed copy")

    __setitem__ = __delitem__ = _frozen
    clear = pop = popitem = setdefault = update = _frozen  # type: ignore[assignment]
    __ior__ = _frozen  # type: ignore[assignment]

    def __reduce__(self) -> tuple:
        return (FrozenDict, (dict(self),))

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items(), key=repr)))


def _key(default: Any = dataclasses.MISSING, meaning: str = "", section: str = "run") -> Any:
    """A config key: its default, its one-line meaning and its section, the single source of
    ``monoidlab train --help`` and of the key table of docs/training.md (:func:`config_keys`)."""
    assert section in SECTIONS, section
    return field(default=default, metadata={"meaning": meaning, "section": section})


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


class _FillsRecipe(type):
    """``RunConfig(..., recipe="authors")`` built directly fills every key (and model option)
    not given from the recipe, as a config file or the command line does; without this a
    recipe named in Python was a label only. A config built with ``explicit`` (the parser,
    ``replace``) is built as given."""

    def __call__(cls, *args: Any, **keys: Any) -> Any:
        if not args and keys.get("explicit") is None and keys.get("recipe", "default") != "default":
            source = keys.pop("source", "config")
            explicit = set(keys) - {"model_options", "offset_buffer"}
            if "offset_buffer" in keys:
                explicit.add("offsets")
            if isinstance(keys.get("model_options"), Mapping):
                explicit |= {f"model_options.{k}" for k in keys["model_options"]}
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


@dataclass(frozen=True)
class RunConfig(metaclass=_FillsRecipe):
    """Every setting of a training run (the table of keys: :func:`config_keys`,
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
                                  "model option) not set; `languages` (MLP-LDRU on a language): "
                                  "the random-language benchmark's frozen recipe, the command "
                                  "line's default for languages once one is frozen", "model")
    # --- data (one length per batch, drawn uniformly from train_lengths)
    train_lengths: Lengths = _key(Lengths(1, 40), "training lengths `A:B` (inclusive) or "
                                                  "`A:B:STEP`; each batch has one length, drawn "
                                                  "uniformly (lengths without strings skipped)",
                                  "data")
    batch_size: int = _key(128, "strings per training batch (PR-LSTM's authors: 128, MLP-LDRU's: "
                                "256)", "data")
    sampler: str = _key(DEFAULT_SAMPLER, "training strings: `uniform`, `balanced` (every "
                                         "class equally often; monoidlab's default sampler), "
                                         "`ec_stratified`, `ldru` (the MLP-LDRU authors' "
                                         "half-positive random walks), `near_miss` (members, "
                                         "near misses and uniform strings), `covering` (see "
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
    eval_kinds: Any = _key("all", "test kinds of a language: `paper` (the papers' protocol: "
                                  "half members, half uniform strings), `near_miss`, "
                                  "`ec_stratified`, or `all`; a task has its own kinds "
                                  "(`task` first)", "evaluation")
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
        _Checker(self, source).run()

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
    def for_language(cls, language: str, model: str = "mlp-ldru", **keys: Any) -> RunConfig:
        """The config ``monoidlab train --language LANGUAGE --model MODEL`` trains with, the
        same keys given: the recipe :func:`language_recipe` names unless ``recipe`` is given.
        ``RunConfig(language=...)`` itself keeps recipe ``default`` (the raw keys below, which
        studies and tests spell out).

        >>> cfg = RunConfig.for_language("parity", "transform-tree", seed=3)
        >>> cfg.recipe, cfg.seed, cfg.steps == RunConfig(language="parity").steps
        ('languages', 3, False)
        """
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


def run_padding(cfg: RunConfig) -> Padding:
    """The padding a run's model uses: its ``padding`` option, or ``learned`` for models
    without one (their trees, where they have one, have no padding leaves to skip)."""
    return Padding(getattr(cfg.model_options, "padding", Padding.LEARNED))


_FIELDS = {f.name: f for f in dataclasses.fields(RunConfig) if not f.metadata.get("internal")}
#: every keyword the constructor takes (the internal ``explicit`` and the init-only ones too)
_INIT_KEYS = frozenset([*(f.name for f in dataclasses.fields(RunConfig)), "offset_buffer",
                        "source"])
_LENGTH_KEYS = [k for k, f in _FIELDS.items() if "Lengths" in str(f.type)]


# ------------------------------------------------------------------------------ the checks
class _Checker:
    """Every check of a config, run once when it is built: types (converting plain forms:
    ``"1:40"`` to Lengths, a table to the model's options), ranges, the problem's test kinds,
    what the model can do, and how much work the lengths ask for."""

    def __init__(self, cfg: RunConfig, source: str) -> None:
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
        for name, f in _FIELDS.items():
            value = getattr(cfg, name)
            if name in _LENGTH_KEYS:
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
        from monoidlab.strings.sampling import SAMPLERS, check_mix

        cfg = self.cfg
        for key, allowed in (("sampler", TRAINING_SAMPLERS), ("test_sampler", SAMPLERS)):
            value = getattr(cfg, key)
            if value is not None and value not in allowed:
                raise self.fail(key, f"unknown sampler {value!r}"
                                     + known_choices(value, allowed, "choose from"))
        if cfg.task is not None:
            from monoidlab.tasks import TASKS

            if cfg.task not in TASKS:  # here, not first inside train()
                raise self.fail("task", f"unknown task {cfg.task!r}"
                                        + known_choices(cfg.task, TASKS, "known tasks",
                                                        where="docs/tasks.md"))
        if cfg.covering is not None:
            try:
                covering_settings(cfg.covering)
            except InputError as exc:
                raise self.fail("covering", str(exc)) from None
        if cfg.sampler == "covering":
            from monoidlab.models import model_spec

            if cfg.language is None:
                raise self.fail("sampler", "the covering sampler builds strings of a language "
                                           "(a task has its own sampler)")
            if model_spec(cfg.model).schedule is None:
                raise self.fail("sampler", f"the covering sampler lays strings out along the "
                                           f"model's tree; model {cfg.model!r} has none")
        if cfg.near_miss_mix is not None:
            try:
                check_mix(dict(cfg.near_miss_mix))
            except InputError as exc:
                raise self.fail("near_miss_mix", str(exc)) from None
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
        cfg = self.cfg
        val = ("val_lengths" if cfg.val_lengths is not None else "val_samples",
               cfg.val_lengths or cfg.test_lengths, 3 * cfg.val_samples)
        for key, lengths, n in (("train_lengths", cfg.train_lengths, 1),  # up to 3 kinds
                                ("test_lengths", cfg.test_lengths, 3 * cfg.test_samples), val):
            try:
                check_workload(lengths, n, key)
            except InputError as exc:
                raise ConfigError(f"{self.source}: key {exc}") from None


def covering_settings(value: Mapping | None) -> dict[str, Any]:
    """The covering sampler's settings with their defaults: ``share`` in (0, 1], ``k`` >= 1,
    ``uncovered``: ``refuse`` (a needed composition the training lengths cannot show is an
    error) or ``skip`` (show what they can: a range below the support length, on purpose);
    ``too_large``: ``refuse`` (a plan the run's steps cannot show k times is an error) or
    ``near_miss`` (the run trains on near-miss strings instead, and says so).

    >>> covering_settings(None), covering_settings({"k": 3})["k"]
    ({'share': 0.5, 'k': 1, 'uncovered': 'refuse', 'too_large': 'refuse'}, 3)
    """
    out = {"share": 0.5, "k": 1, "uncovered": "refuse", "too_large": "refuse",
           **dict(value or {})}
    bad = sorted(set(out) - {"share", "k", "uncovered", "too_large"})
    if bad:
        raise InputError(f"unknown part {bad[0]!r}; parts: share, k, uncovered, too_large")
    if out["uncovered"] not in ("refuse", "skip"):
        raise InputError(f"uncovered must be refuse or skip, got {out['uncovered']!r}")
    if out["too_large"] not in ("refuse", "near_miss"):
        raise InputError(f"too_large must be refuse or near_miss, got {out['too_large']!r}")
    share, k = out["share"], out["k"]
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
        raise InputError(f"share must lie in (0, 1], got {share!r}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InputError(f"k must be an integer >= 1, got {k!r}")
    return {"share": float(share), "k": k, "uncovered": out["uncovered"],
            "too_large": out["too_large"]}


def _readout(cfg: RunConfig) -> str:
    """How the problem's outputs are read: ``string`` (a language), ``tape`` or
    ``next_token`` (the task's own :attr:`~monoidlab.tasks.base.Task.readout`)."""
    if cfg.language is not None:
        return "string"
    from monoidlab.tasks import TASKS

    cls = TASKS.get(cfg.task)  # type: ignore[arg-type]
    if cls is None:  # an unknown task fails when the problem is built, with the list
        return "tape"
    return cls.readout


def _one_output(cfg: RunConfig) -> bool:
    """Whether the config's tape task has one output whatever the length (ListOps, the regular
    tasks): a Classifier, read at the tape's end, can serve it. An unknown task is named when
    the problem is made; bad task options raise here (InputError)."""
    from monoidlab.tasks import TASKS, get_task

    if cfg.task not in TASKS:
        return False
    return bool(get_task(cfg.task, **dict(cfg.task_options)).is_classification)


def _changed_keys(cfg: RunConfig) -> set[str]:
    """For a config built directly: the keys that differ from their defaults (and each model
    option that differs from the model's default)."""
    out = {k for k, f in _FIELDS.items() if k != "model_options" and getattr(cfg, k) != f.default}
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
assert set(_CHECKS) | set(_LENGTH_KEYS) | {"offsets"} == set(_FIELDS), "a key without a check"


# ------------------------------------------------------------------------------ the key table
_TYPE_NAMES = {"str": "text", "int": "integer", "float": "number", "bool": "true/false",
               "Mapping": "table", "Lengths": "lengths", "None": "none", "Any": "value",
               "Offsets": "none or random"}


def _value_text(value: Any) -> str:
    """A default as it is written in a TOML config or an override."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k} = {_value_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, Offsets):
        return value.mode
    return str(value)


def config_keys() -> list[dict[str, str]]:
    """Every key of a config file, in order: ``{"key", "section", "type", "default",
    "meaning"}`` (text). The one source of ``monoidlab train --help`` and of docs/training.md's
    table. ``offset_buffer`` is written beside ``offsets`` (both are the one ``offsets`` value).

    >>> row = next(r for r in config_keys() if r["key"] == "steps")
    >>> row["section"], row["type"], row["default"], row["meaning"].split(" (")[0]
    ('optimisation', 'integer', '1000', 'optimiser steps')
    """
    from monoidlab.models import REGISTRY  # names only: no model module is imported

    types = {"within": "text or list", "eval_kinds": "text or list",
             "model_options": "table or none"}
    rows = []
    for f in _FIELDS.values():
        names = [_TYPE_NAMES.get(t.strip(), t.strip()) for t in str(f.type).split("|")]
        rows.append({"key": f.name, "section": f.metadata["section"],
                     "type": types.get(f.name, " or ".join(names)),
                     "default": _value_text(f.default),
                     "meaning": f.metadata["meaning"].replace("{models}", ", ".join(REGISTRY))})
        if f.name == "offsets":
            rows.append({"key": "offset_buffer", "section": "data", "type": "integer or none",
                         "default": "none",
                         "meaning": "random offsets: buffer length B, offset uniform in 0..B-L "
                                    "(none: the next power of two >= 2L)"})
    return rows


def config_table_markdown() -> str:
    """docs/training.md's table of config keys, generated from :func:`config_keys`."""
    lines = ["| key | section | type | default | meaning |", "|---|---|---|---|---|"]
    for r in config_keys():
        lines.append(f"| `{r['key']}` | {r['section']} | {r['type']} | `{r['default']}` | "
                     f"{r['meaning'].replace('|', '/')} |")
    return "\n".join(lines)
