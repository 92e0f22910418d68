"""The model registry: each model declares what it can do; a config refuses, when it is built, a
model that cannot serve the problem or a key (never at step 1); each model's options are a
frozen dataclass beside it."""

from __future__ import annotations

import dataclasses

import pytest

from monoidlab.errors import ConfigError, InputError
from monoidlab.geometry import Padding
from monoidlab.models import REGISTRY, build_model, model_spec
from monoidlab.models.options import ModelOptions
from monoidlab.models.protocols import PROTOCOLS, Classifier, capabilities
from monoidlab.training import RunConfig
from monoidlab.training.parse import config_from_dict


def _build(name):
    n = 5
    return build_model(name, n, n if name == "decoder-lm" else 3)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_declared_capabilities_are_what_the_class_implements(name):
    """A declared capability's methods exist; no other capability is implemented unless declared
    (a class with ``forward`` satisfies ``Classifier`` by its method name alone, which is why
    capabilities are declared and never read off the methods)."""
    spec = model_spec(name)
    cls = type(_build(name))
    declared = {p.__name__ for p in spec.capabilities}
    implemented = capabilities(cls)
    assert declared <= implemented, declared - implemented
    assert implemented - declared <= {"Classifier", "PrefixModel"}, implemented - declared
    assert spec.capabilities <= set(PROTOCOLS)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_options_are_frozen_typed_and_round_trip(name):
    spec = model_spec(name)
    options = spec.make_options()
    assert isinstance(options, ModelOptions) and dataclasses.is_dataclass(options)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.__setattr__(options.names()[0], 1)
    assert spec.make_options(options.as_dict()) == options
    model = _build(name)
    assert model.options == options  # the model reads its options, defaults included


def test_unknown_options_and_bad_values_name_the_option():
    with pytest.raises(InputError, match=r"no option 'hiden' \(did you mean 'hidden'\?\)"):
        model_spec("lstm").make_options({"hiden": 8})
    with pytest.raises(InputError, match="option 'd': an integer >= 1, got int 0"):
        model_spec("mlp-ldru").make_options({"d": 0})
    with pytest.raises(InputError, match="option 'padding'.*choose from learned, identity"):
        model_spec("mlp-ldru").make_options({"padding": "zeros"})
    with pytest.raises(InputError, match="option 'c_init' does not apply to position encoding"):
        model_spec("transformer").make_options({"position": "rope", "c_init": 0.2})
    assert model_spec("mlp-ldru").make_options({"padding": "identity"}).padding is \
        Padding.IDENTITY


@pytest.mark.parametrize("keys, needle", [
    ({"language": "parity", "model": "decoder-lm"},
     "'decoder-lm' cannot learn a language (one class per string): it lacks a class output "
     "per string (Classifier)"),
    ({"task": "reverse_string", "model": "decoder-lm"}, "cannot learn a tape task"),
    ({"task": "addition", "model": "mlp-ldru"}, "cannot learn a next-token task"),
    ({"language": "parity", "model": "rnn", "offsets": "random"},
     "key 'offsets': model 'rnn' cannot train at random offsets"),
    ({"language": "parity", "model": "lstm", "assoc_weight": 0.1},
     "key 'assoc_weight': model 'lstm' cannot take assoc_weight: it lacks an associativity "
     "regulariser"),
    ({"language": "parity", "model": "pr-lstm", "offsets": "random"},
     "models that can: mlp-ldru"),
    ({"language": "parity", "model": "pr-lstm", "offset_consistency": 1.0},
     "key 'offset_consistency': model 'pr-lstm' cannot take offset_consistency"),
])
def test_every_capability_mismatch_is_one_config_error_when_the_config_is_built(keys, needle):
    with pytest.raises(ConfigError) as info:
        config_from_dict(keys, "my.toml")
    message = str(info.value)
    assert needle in message and message.startswith("my.toml: ") and "\n" not in message
    with pytest.raises(ConfigError):  # the same from Python
        RunConfig(**keys)


def test_the_classifier_check_cannot_be_fooled_by_a_forward_method():
    """decoder-lm has ``forward``, so the runtime Protocol says Classifier; the registry does
    not, and the config follows the registry."""
    assert isinstance(_build("decoder-lm"), Classifier)
    assert not model_spec("decoder-lm").can(Classifier)


def test_recipes_live_in_the_registry_and_fill_only_what_is_not_set():
    cfg = config_from_dict({"language": "dyck-4", "recipe": "authors", "lr": 3e-3,
                            "model_options": {"dropout": 0.0}})
    assert cfg.lr == 3e-3 and cfg.optimizer == "amsgrad-optax" and cfg.sampler == "ldru"
    assert cfg.model_options.dropout == 0.0 and cfg.model_options.d == 64
    assert cfg.model_options.init == "haiku"
    assert set(model_spec("mlp-ldru").recipes) == {"authors", "languages"}
    with pytest.raises(ConfigError, match="recipe 'authors' has no settings for model "
                                          "'stack-rnn'"):
        config_from_dict({"language": "parity", "model": "stack-rnn", "recipe": "authors"})
