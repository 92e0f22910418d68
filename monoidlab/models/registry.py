"""The model registry: one :class:`ModelSpec` per model, declaring what it can do.

A spec names the model's class and its options class (imported only when needed: torch costs
about 3 s, and ``import monoidlab`` or ``monoidlab --help`` must not pay it), the
capabilities the model has (the Protocols of :mod:`monoidlab.models.protocols`: declared here,
checked against the class by a test, never guessed from method names at run time), and its
training recipes (``recipe = "authors"``: the settings of the model's own authors).

A config asks the spec, before any work: a model that cannot serve a problem, or lacks what a
setting needs (random offsets, a regulariser), is refused in one line that names the model and
what it lacks (:func:`require`).

Example
-------
>>> spec = model_spec("mlp-ldru")
>>> spec.can(OffsetModel), model_spec("rnn").can(OffsetModel)
(True, False)
>>> sorted(p.__name__ for p in model_spec("decoder-lm").capabilities)
['GenerativeModel']
>>> model_spec("lstn")
Traceback (most recent call last):
...
monoidlab.errors.UnknownName: unknown model 'lstn' (did you mean 'lstm'?); known models: bbt-grc, decoder-lm, gated-deltanet, lstm, mlp-ldru, mlp-ldru-snap, pr-lstm, pr-rnn, rir-grc, rnn, stack-rnn, tape-rnn, transform-tree, transformer
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from monoidlab._checks import check_str, scalar_args
from monoidlab._suggest import did_you_mean
from monoidlab.errors import ConfigError, UnknownName
from monoidlab.models.protocols import (
    AuxiliaryLossModel,
    Classifier,
    ConsistentModel,
    FiniteModel,
    GenerativeModel,
    NodeStateModel,
    OffsetModel,
    OperatorModel,
    PrefixModel,
    PrefixStateModel,
    RegularisedModel,
    TapeModel,
)
from monoidlab.recipes import languages_recipe

if TYPE_CHECKING:
    from torch import nn

    from monoidlab.models.options import ModelOptions

__all__ = ["ModelSpec", "REGISTRY", "model_spec", "model_class", "build_model", "require",
           "able", "CAPABILITY_TEXT", "Recipe"]

#: What each capability means, for the errors that name a missing one.
CAPABILITY_TEXT: dict[type, str] = {
    Classifier: "a class output per string",
    PrefixModel: "a prediction at every position",
    TapeModel: "tape predictions that use the input length",
    NodeStateModel: "states at its tree nodes",
    PrefixStateModel: "a state after every position",
    OperatorModel: "a learned binary operator on states",
    OffsetModel: "placement at left offsets inside a balanced buffer",
    RegularisedModel: "an associativity regulariser",
    ConsistentModel: "an offset-consistency term",
    GenerativeModel: "greedy decoding of answers",
    FiniteModel: "a finite table of codes at evaluation (certifiable at every length)",
    AuxiliaryLossModel: "a loss of its own added once per training step",
}

#: A recipe: ``(language name or None, task name or None) -> (config keys, model options)``.
Recipe = Callable[[str | None, str | None], tuple[dict[str, Any], dict[str, Any]]]


@dataclass(frozen=True)
class ModelSpec:
    """A model of the registry: its class and options class (``"module:Name"``, imported on
    demand), the capabilities it declares, its recipes and a one-line summary."""

    name: str
    target: str
    options: str
    capabilities: frozenset[type]
    summary: str
    recipes: Mapping[str, Recipe] = field(default_factory=dict)
    #: the reduction schedule of the model's tree (:mod:`monoidlab.strings.schedules`), None for models
    #: without one (attention): what coverage and the covering sampler lay strings out by
    schedule: str | None = None
    #: the padding of a model without a ``padding`` option whose tree pads all the same (the
    #: transformation tree: the identity matrix), None for the others
    fixed_padding: str | None = None

    def model_class(self) -> type[nn.Module]:
        return _load(self.target)

    def options_class(self) -> type[ModelOptions]:
        return _load(self.options)

    def can(self, capability: type) -> bool:
        return capability in self.capabilities

    def make_options(self, values: Any = None) -> ModelOptions:
        """The model's options from a mapping of names (or options already built)."""
        return self.options_class().build(values, self.name)

    def build(self, vocab_size: int, n_classes: int, options: Any = None) -> nn.Module:
        """The model, sized for a vocabulary and a number of classes."""
        return self.model_class()(vocab_size, n_classes, self.make_options(options))


def _load(target: str) -> Any:
    module, name = target.split(":")
    return getattr(importlib.import_module(module), name)


# --------------------------------------------------------------------------- recipes
# The Delétang et al. regular tasks, for which the MLP-LDRU authors used dropout 0.1
_DELETANG_LANGUAGES = {"parity", "even-pairs", "cycle-navigation", "modular-arithmetic",
                       "modular-arithmetic-precedence"}


def _ldru_authors(language: str | None, task: str | None) -> tuple[dict, dict]:
    """The MLP-LDRU authors' code: ``amsgrad-optax``, lr 1e-3 (1e-4 for D_n), 20% linear
    warm-up from 1e-8 then constant, clip 1.0, gradient centralisation, no weight decay, batch
    256, the ``ldru`` sampler for D_n and Tomita (uniform otherwise), ``init = "haiku"``, d 64,
    dropout 0.25 (0.1 for the Delétang tasks)."""
    name = Path(language).stem if language else None
    dyck = bool(name and name.startswith("dyck-"))
    walk = dyck or bool(name and name.startswith("tomita-"))
    deletang = task is not None or name in _DELETANG_LANGUAGES
    keys: dict[str, Any] = {"optimizer": "amsgrad-optax", "lr": 1e-4 if dyck else 1e-3,
                            "warmup": 0.2, "lr_schedule": "constant", "clip": 1.0,
                            "weight_decay": 0.0, "grad_centralisation": True, "batch_size": 256}
    if language:
        keys["sampler"] = "ldru" if walk else "uniform"
    return keys, {"d": 64, "dropout": 0.1 if deletang else 0.25, "init": "haiku"}


def _harness(language: str | None, task: str | None) -> dict[str, Any]:
    """Delétang et al.'s harness: Adam, lr 1e-3, clip 1.0, batch 128, uniform strings."""
    return {"optimizer": "adam", "lr": 1e-3, "warmup": 0.0, "lr_schedule": "constant",
            "clip": 1.0, "weight_decay": 0.0, "grad_centralisation": False, "batch_size": 128,
            **({"sampler": "uniform"} if language else {})}


def _prlstm_authors(language: str | None, task: str | None) -> tuple[dict, dict]:
    """The PR-LSTM authors, on Delétang's harness: H 256, ``init = "haiku"``."""
    return _harness(language, task), {"hidden": 256, "init": "haiku"}


def _prrnn_authors(language: str | None, task: str | None) -> tuple[dict, dict]:
    """The PR-LSTM authors' PR-RNN: a ReLU cell and a linear leaf, H 256, haiku init."""
    return _harness(language, task), {"hidden": 256, "init": "haiku", "activation": "relu",
                                      "leaf_activation": False}


def _baseline_authors(language: str | None, task: str | None) -> tuple[dict, dict]:
    """Delétang et al.'s harness with the model's own defaults."""
    return _harness(language, task), {}


# The depth-exact models' own recipe for a language (``recipe = "languages"`` of each), fixed
# before their 21-task runs (configs/exact21-cpu.toml) and reported with them: the ldru21-cpu
# budget (attempts of 4000 steps of batch 64, at most three, Adam with a cosine decay, near-miss
# strings, one validation per attempt on fresh strings of 42..500), which is what the plain
# MLP-LDRU table ran on.
_EXACT_BUDGET: dict[str, Any] = {
    "steps": 4000, "restarts": 2, "batch_size": 64, "optimizer": "adam", "lr_schedule": "cosine",
    "clip": 1.0, "warmup": 0.0, "weight_decay": 0.0, "grad_centralisation": False,
    "train_lengths": "1:40", "sampler": "near_miss", "eval_every": 4000,
    "val_lengths": "42:500:3", "val_samples": 32, "early_stop": 1}


def _snap_languages(language: str | None, task: str | None) -> tuple[dict, dict]:
    """The snapped MLP-LDRU on a language: the plain model's ldru21-cpu settings (lr 3e-3,
    associativity weight 0.1, d 32, no dropout, identity padding) with k = 2 × |M| codes."""
    _language_only("languages", language, task)
    return ({**_EXACT_BUDGET, "lr": 3e-3, "assoc_weight": 0.1},
            {"d": 32, "dropout": 0.0, "padding": "identity", "codes": 0})


def _snap_prlstm_languages(language: str | None, task: str | None) -> tuple[dict, dict]:
    """The snapped PR-LSTM on a language: the snapped MLP-LDRU's budget and lr (3e-3), H 32
    (states [h; c] of 64 dimensions), k = 2 × |M| codes; PR-LSTM has no associativity term."""
    _language_only("languages", language, task)
    return {**_EXACT_BUDGET, "lr": 3e-3}, {"hidden": 32, "codes": 0}


def _transform_languages(language: str | None, task: str | None) -> tuple[dict, dict]:
    """The transformation tree model on a language: lr 0.05 (its parameters are logits of
    one-hot columns, far from a network's scale), n = 2 × the minimal automaton's state count
    (configs/transform-states-dev-x*.toml: 2x certified 13 of 18 development languages, as 4x
    did, against 11 for the minimal count; 2x solved more, 14 against 13), and a length
    curriculum from 8 over the first half of each attempt (configs/transform-curriculum-dev*.toml:
    31 of 42 development runs certified with it, 27 of 42 without)."""
    _language_only("languages", language, task)
    return ({**_EXACT_BUDGET, "lr": 0.05, "curriculum_start": 8, "curriculum_fraction": 0.5},
            {"states": 0, "state_factor": 2})


def _transform_distilled(language: str | None, task: str | None) -> tuple[dict, dict]:
    """The transformation tree trained as a soft automaton and distilled: recipe 'languages'
    (its lr, n = 2 × the minimal state count, three attempts, the curriculum over the first
    half of each) with 12,000 steps per attempt (validated at its end), the soft relaxation at
    a fixed temperature 1 instead of straight-through, and at the end of each attempt the
    automaton L* extracts from the soft machine in place of its argmax
    (:mod:`monoidlab.training.distil`; bench/dyck-dev/distil-dev.md: chosen on the
    development languages dyck-5, 7 and 10 before the 21 tasks ran)."""
    _language_only("distilled", language, task)
    keys, options = _transform_languages(language, task)
    return ({**keys, "steps": 12000, "eval_every": 12000, "distil": "lstar"},
            {**options, "relaxation": "soft", "temperature": 1.0})


def _language_only(recipe: str, language: str | None, task: str | None) -> None:
    if task is not None or language is None:
        raise ConfigError(f"recipe {recipe!r} is for languages (a DFA spec or a suite name), "
                          f"not for the task {task!r}; use your own keys")


# --------------------------------------------------------------------------- the registry
_TREE = frozenset({Classifier, PrefixModel, NodeStateModel, OperatorModel})
_RECURRENT = frozenset({Classifier, PrefixModel, PrefixStateModel})

REGISTRY: dict[str, ModelSpec] = {s.name: s for s in (
    ModelSpec("mlp-ldru", "monoidlab.models.mlp_ldru:MLPLDRU",
              "monoidlab.models.mlp_ldru:MLPLDRUOptions",
              _TREE | {OffsetModel, RegularisedModel, ConsistentModel},
              "a learned binary operator reduced over a balanced tree (MLP-LDRU)",
              {"authors": _ldru_authors, "languages": languages_recipe}, "balanced"),
    ModelSpec("mlp-ldru-snap", "monoidlab.models.snap:SnappedMLPLDRU",
              "monoidlab.models.snap:SnappedMLPLDRUOptions",
              _TREE | {OffsetModel, RegularisedModel, ConsistentModel, FiniteModel,
                       AuxiliaryLossModel},
              "MLP-LDRU whose node states snap to k learned codes: a finite table at "
              "evaluation", {"languages": _snap_languages}, "balanced"),
    ModelSpec("transform-tree", "monoidlab.models.transform_tree:TransformTree",
              "monoidlab.models.transform_tree:TransformTreeOptions",
              frozenset({Classifier, NodeStateModel, OperatorModel, OffsetModel, FiniteModel}),
              "tokens as functions on n states (one-hot columns), composed over the balanced "
              "tree: a DFA at evaluation",
              {"languages": _transform_languages, "distilled": _transform_distilled}, "balanced",
              "identity"),
    ModelSpec("pr-lstm", "monoidlab.models.pr_lstm:PRLSTM",
              "monoidlab.models.pr_lstm:PRLSTMOptions", _TREE,
              "an N-ary LSTM cell along the parallel prefix scan (PR-LSTM)",
              {"authors": _prlstm_authors}, "scan"),
    ModelSpec("pr-lstm-snap", "monoidlab.models.snap:SnappedPRLSTM",
              "monoidlab.models.snap:SnappedPRLSTMOptions",
              _TREE | {FiniteModel, AuxiliaryLossModel},
              "PR-LSTM whose states snap to k learned codes: a finite table (scan layout) at "
              "evaluation", {"languages": _snap_prlstm_languages}, "scan"),
    ModelSpec("pr-rnn", "monoidlab.models.pr_lstm:PRRNN",
              "monoidlab.models.pr_lstm:PRRNNOptions", _TREE,
              "PR-LSTM's scan with a one-vector cell (PR-RNN ablation)",
              {"authors": _prrnn_authors}, "scan"),
    ModelSpec("rnn", "monoidlab.models.recurrent:RNNClassifier",
              "monoidlab.models.recurrent:RecurrentOptions", _RECURRENT,
              "a tanh RNN", {"authors": _baseline_authors}, "chain"),
    ModelSpec("lstm", "monoidlab.models.recurrent:LSTMClassifier",
              "monoidlab.models.recurrent:RecurrentOptions", _RECURRENT,
              "an LSTM", {"authors": _baseline_authors}, "chain"),
    ModelSpec("stack-rnn", "monoidlab.models.stack_rnn:StackRNN",
              "monoidlab.models.stack_rnn:StackRNNOptions", _RECURRENT,
              "an RNN controlling a soft stack (Delétang et al.)", {}, "chain"),
    ModelSpec("tape-rnn", "monoidlab.models.tape_rnn:TapeRNN",
              "monoidlab.models.tape_rnn:TapeRNNOptions", _RECURRENT | {TapeModel},
              "an RNN controlling a soft tape (Delétang et al.)", {}, "chain"),
    ModelSpec("transformer", "monoidlab.models.transformer:TransformerClassifier",
              "monoidlab.models.transformer:TransformerOptions", _RECURRENT,
              "a Transformer encoder with a choice of position encodings",
              {"authors": _baseline_authors}),
    ModelSpec("bbt-grc", "monoidlab.models.grc:BBTGRC", "monoidlab.models.grc:BBTGRCOptions",
              frozenset({Classifier}),
              "a beam search over merge orders with the Gated Recursive Cell (BT-GRC)"),
    ModelSpec("rir-grc", "monoidlab.models.grc:RIRGRC", "monoidlab.models.grc:RIRGRCOptions",
              frozenset({Classifier}),
              "beam trees inside chunks, recursively over the chunks (RIR-GRC)"),
    ModelSpec("gated-deltanet", "monoidlab.models.gated_deltanet:GatedDeltaNet",
              "monoidlab.models.gated_deltanet:GatedDeltaNetOptions", _RECURRENT,
              "Gated DeltaNet: the gated delta rule, chunked (Yang et al. 2024)", {}, "chain"),
    ModelSpec("decoder-lm", "monoidlab.models.decoder:DecoderLM",
              "monoidlab.models.decoder:DecoderOptions", frozenset({GenerativeModel}),
              "a decoder-only Transformer language model (next-token tasks)"),
)}


def model_spec(name: str) -> ModelSpec:
    """The spec registered under ``name`` (an unknown name suggests the closest)."""
    check_str(name, "model name")
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise UnknownName(f"unknown model {name!r}{did_you_mean(name, REGISTRY)}; known "
                          f"models: {', '.join(sorted(REGISTRY))}") from None


def model_class(name: str) -> type[nn.Module]:
    """The class registered under ``name``."""
    return model_spec(name).model_class()


@scalar_args
def build_model(name: str, vocab_size: int, n_classes: int, **options: Any) -> nn.Module:
    """Build the model registered under ``name`` with the given options.

    >>> type(build_model("rnn", vocab_size=2, n_classes=2, hidden=8)).__name__
    'RNNClassifier'
    """
    return model_spec(name).build(vocab_size, n_classes, options)


def able(capability: type) -> list[str]:
    """The models that declare ``capability``."""
    return [n for n, s in sorted(REGISTRY.items()) if s.can(capability)]


@scalar_args
def require(model: str, capability: type, what: str, key: str = "model") -> None:
    """Refuse, in one :class:`~monoidlab.errors.ConfigError` line, a model that lacks
    ``capability`` (``what`` says what needs it), naming the models that have it."""
    if not model_spec(model).can(capability):
        raise ConfigError(f"key {key!r}: model {model!r} cannot {what}: it lacks "
                          f"{CAPABILITY_TEXT[capability]} ({capability.__name__}); models that "
                          f"can: {', '.join(able(capability))}")


def capability_table_markdown() -> str:
    """docs/architecture.md's table of capabilities: each Protocol, what it means and the models
    that declare it, generated from the registry (a test keeps the page fresh).

    >>> capability_table_markdown().splitlines()[2].startswith("| `Classifier` |")
    True
    """
    from monoidlab.models.protocols import PROTOCOLS

    lines = ["| protocol | method(s) | meaning | models |", "|---|---|---|---|"]
    for p in PROTOCOLS:
        methods = sorted(n for n in vars(p) if not n.startswith("_")
                         and callable(getattr(p, n)))
        lines.append(f"| `{p.__name__}` | {', '.join(f'`{m}`' for m in methods)} | "
                     f"{CAPABILITY_TEXT[p]} | {', '.join(able(p)) or '–'} |")
    return "\n".join(lines)
