"""The memory a model's options imply, checked before the model is built.

An option that sets a size (a width, a number of codes or states, a beam, a stack or tape,
a context length) can ask for more memory than the machine has; torch then fails deep inside
its allocator, after seconds of growth. :func:`check_model_memory` refuses such options up front,
in one line naming the model's size options, from two numbers:

* the **parameters**, counted by building the model on torch's ``meta`` device (no memory),
  at 16 bytes each in training (the weights, their gradients and Adam's two moments); options
  no larger than the model's defaults, for an alphabet and class count of at most
  :data:`SMALL_VOCAB`, are counted on the CPU instead (a few MB at most, milliseconds, the
  random generator restored): torch's first meta build in a process costs 1-2 s (it imports
  its compiler stack), which every command that trains or loads a model paid;
* the **activations** of one training step on ``batch`` strings of ``length`` tokens, from a
  per-model formula (:data:`ACTIVATIONS`, an upper estimate of the tensors a forward pass
  keeps for backward), at 8 bytes each (the value and its gradient).

Above :data:`MAX_MODEL_BYTES` the run is refused; ``limits = false`` (the config key, or
``limits=False``) lifts the limit, as for every work limit of monoidlab.

Example
-------
>>> training_bytes("stack-rnn", 3, 2, {"stack_size": 30}, batch=64, length=40)[1] < 2**30
True
>>> check_model_memory("stack-rnn", 3, 2, {"stack_size": 10**8}, batch=64, length=40)
Traceback (most recent call last):
...
monoidlab.errors.InputError: model 'stack-rnn': these options (hidden 256, stack_size 100000000, stack_cell 8) need about 45 TiB for a training step on 64 strings of length 40 (parameters 1.1 MiB, activations 45 TiB); at most 16 GiB; pass limits=False (config key limits = false) to lift the work limits
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

from monoidlab.errors import InputError

__all__ = ["MAX_MODEL_BYTES", "ACTIVATIONS", "training_bytes", "check_model_memory"]

#: options that repeat a block: above MAX_BUILT_LAYERS the count is extrapolated, not built
LAYER_OPTIONS = ("n_layers", "num_layers")
MAX_BUILT_LAYERS = 64
#: at most this many letters and classes, with options no larger than the defaults (an option
#: whose default is 0, "auto", sized from the language: at most SMALL_AUTO): counted on the
#: CPU (such a model is small), not on the meta device
SMALL_VOCAB, SMALL_AUTO = 256, 64
#: the most memory (bytes) a model's training step may need before the run is refused
MAX_MODEL_BYTES = 16 * 2**30
TREE_ELEMENTS = 2**24  # TransformTree.tree_elements: the tree order's cap, else the chain
PARAMETER_BYTES = 16  # float32 weight, gradient, Adam's m and v
ACTIVATION_BYTES = 8  # float32 value kept for backward, and its gradient


def _get(o: Any, name: str, default: int = 0) -> int:
    return int(getattr(o, name, default) or default)


def _tree(width: str, per_node: int) -> Callable[[Any, int, int], int]:
    """A balanced-tree or scan model: ~2L nodes a string, ``per_node`` vectors of ``width``
    per cell layer."""
    return lambda o, B, L: (per_node * B * 2 * L * _get(o, width, 1)
                            * max(_get(o, "num_layers", 1), 1))


def _snapped(width: str, per_node: int) -> Callable[[Any, int, int], int]:
    """A snapped model: the tree's vectors, plus each node's distances to the k codes."""
    tree = _tree(width, per_node)
    return lambda o, B, L: tree(o, B, L) + B * 2 * L * max(_get(o, "codes"), 64)


def _attention(o: Any, B: int, L: int) -> int:
    d, h, layers = _get(o, "d_model", 64), _get(o, "n_heads", 1), _get(o, "n_layers", 1)
    return layers * B * (2 * h * L * L + L * d * (8 + 2 * _get(o, "ff_mult", 4)))


def _deltanet(o: Any, B: int, L: int) -> int:
    d, layers = _get(o, "d_model", 64), _get(o, "n_layers", 1)
    chunk = min(_get(o, "chunk_size", 64), L)
    return layers * B * (L * d * (10 + 2 * _get(o, "ff_mult", 4) + 2 * _get(o, "expand_v", 1))
                         + _get(o, "n_heads", 1) * L * chunk)


def _beam(o: Any, B: int, L: int) -> int:
    """BT-GRC: every step scores each beam's candidate merges (L of them) in d dimensions."""
    return 4 * B * _get(o, "beam", 1) * L * L * _get(o, "d", 64)


def _chunked_beam(o: Any, B: int, L: int) -> int:
    chunk = max(1, min(_get(o, "chunk", 30), L))
    return 4 * B * _get(o, "beam", 1) * chunk * chunk * _get(o, "d", 64) * math.ceil(L / chunk)


#: per model of the registry: elements (floats) a training forward keeps, f(options, B, L)
def _transform_tree(o: Any, B: int, L: int) -> int:
    # the chain walk keeps O(n) per token; the tree order runs only while B·M·n² fits its cap,
    # except in the soft relaxation, which keeps every step's n x n matrices for its backward
    n = _get(o, "states", 8)
    leaves = 2 * B * 2 * L * n ** 2
    soft = getattr(o, "relaxation", "") == "soft"
    return 4 * B * 2 * L * n + (leaves if soft else min(leaves, TREE_ELEMENTS))


ACTIVATIONS: dict[str, Callable[[Any, int, int], int]] = {
    "mlp-ldru": _tree("d", 16),
    "mlp-ldru-snap": _snapped("d", 16),
    "transform-tree": _transform_tree,
    "pr-lstm": _tree("hidden", 16),
    "pr-lstm-snap": _snapped("hidden", 16),
    "pr-rnn": _tree("hidden", 8),
    "rnn": lambda o, B, L: 8 * B * L * _get(o, "hidden", 256),
    "lstm": lambda o, B, L: 16 * B * L * _get(o, "hidden", 256),
    "stack-rnn": lambda o, B, L: B * L * (3 * _get(o, "stack_size", 30) * _get(o, "stack_cell", 8)
                                           + 8 * _get(o, "hidden", 256)),
    "tape-rnn": lambda o, B, L: B * L * (3 * _get(o, "memory_size", 40)
                                          * _get(o, "memory_cell", 8) + 8 * _get(o, "hidden", 256)),
    "transformer": _attention,
    "decoder-lm": _attention,
    "bbt-grc": _beam,
    "rir-grc": _chunked_beam,
    "gated-deltanet": _deltanet,
}


def _size_options(options: Any) -> str:
    """The options that set a size, as ``name value`` (the integers other than flags)."""
    values = options.as_dict() if hasattr(options, "as_dict") else dict(options)
    return ", ".join(f"{k} {v}" for k, v in values.items()
                     if isinstance(v, int) and not isinstance(v, bool) and k != "seed")


def _text(n: float) -> str:
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if n >= size or unit == "MiB":
            return f"{n / size:.3g} {unit}" if n < 10 * size else f"{n / size:.0f} {unit}"
    return f"{n:.0f} B"


def training_bytes(name: str, vocab_size: int, n_classes: int, options: Any, batch: int,
                   length: int) -> tuple[int, int, Any]:
    """``(parameter bytes, activation bytes, the options built)`` of a training step of model
    ``name`` on ``batch`` strings of ``length`` tokens."""
    import torch

    from monoidlab.models.registry import model_spec

    spec = model_spec(name)
    opts = spec.make_options(options)

    def count(o: Any) -> int:
        if _default_sized(o, spec.make_options({}), vocab_size, n_classes):
            # small by construction: built on the CPU without touching the random stream
            with torch.random.fork_rng(devices=[]), torch.no_grad():
                model = spec.build(vocab_size, n_classes, o)
        else:
            with torch.device("meta"):  # counts the parameters, allocates nothing
                model = spec.build(vocab_size, n_classes, o)
        return sum(p.numel() for p in model.parameters()) + sum(b.numel() for b in
                                                                model.buffers())

    layers = next((k for k in LAYER_OPTIONS if _get(opts, k) > MAX_BUILT_LAYERS), None)
    if layers is None:
        params = count(opts)
    else:  # a million layers are a million Python modules: extrapolate from one and two
        one, two = (count(dataclasses.replace(opts, **{layers: n})) for n in (1, 2))
        params = one + (_get(opts, layers) - 1) * (two - one)
    formula = ACTIVATIONS.get(name)
    acts = formula(opts, max(int(batch), 1), max(int(length), 1)) if formula else 0
    return params * PARAMETER_BYTES, acts * ACTIVATION_BYTES, opts


def _default_sized(options: Any, defaults: Any, vocab_size: int, n_classes: int) -> bool:
    """Whether no integer option exceeds its default (an automatic one, default 0, at most
    :data:`SMALL_AUTO`) and the alphabet and the classes are at most :data:`SMALL_VOCAB`: the
    model is then about as small as the defaults' model.

    >>> from monoidlab.models.registry import model_spec
    >>> spec = model_spec("mlp-ldru")
    >>> _default_sized(spec.make_options({"d": 16}), spec.make_options({}), 2, 2)
    True
    >>> _default_sized(spec.make_options({"d": 4096}), spec.make_options({}), 2, 2)
    False
    >>> tree = model_spec("transform-tree")
    >>> [_default_sized(tree.make_options({"states": n}), tree.make_options({}), 2, 2)
    ...  for n in (16, 682)]
    [True, False]
    >>> _default_sized(tree.make_options({"states": 4, "state_factor": 2}),
    ...                tree.make_options({}), 2, 2)  # its recipe's options: no size beyond 4
    True
    """
    if max(int(vocab_size), int(n_classes)) > SMALL_VOCAB:
        return False
    unsized: frozenset[str] = getattr(options, "UNSIZED", frozenset())
    for f in dataclasses.fields(options):
        if f.name in unsized:
            continue
        value, default = getattr(options, f.name), getattr(defaults, f.name, None)
        if isinstance(value, bool) or not isinstance(value, int):
            continue
        if isinstance(default, bool) or not isinstance(default, int):
            return False
        if value > (default if default > 0 else SMALL_AUTO):
            return False
    return True


def check_model_memory(name: str, vocab_size: int, n_classes: int, options: Any, batch: int,
                       length: int, limits: bool = True,
                       maximum: int = MAX_MODEL_BYTES) -> None:
    """Refuse options whose training step would need more than ``maximum`` bytes (see the
    module docstring); nothing is checked when ``limits`` is False."""
    if not limits:
        return
    params, acts, opts = training_bytes(name, vocab_size, n_classes, options, batch, length)
    if params + acts > maximum:
        raise InputError(
            f"model {name!r}: these options ({_size_options(opts)}) need about "
            f"{_text(params + acts)} for a training step on {batch} strings of length {length} "
            f"(parameters {_text(params)}, activations {_text(acts)}); at most "
            f"{_text(maximum)}; pass limits=False (config key limits = false) to lift the work "
            "limits")
