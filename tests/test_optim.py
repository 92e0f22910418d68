"""The authors' recipe: optax-style AMSGrad, the ``recipe = "authors"`` config key,
gradient centralisation as the authors apply it."""

import math

import pytest
import torch

from monoidlab.errors import ConfigError
from monoidlab.training.config import RunConfig
from monoidlab.training.loop import _centralise, _optimizer
from monoidlab.training.optim import AMSGradOptax
from monoidlab.training.parse import apply_overrides, config_from_dict

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def run(opt_cls, grads, **kw):
    p = torch.nn.Parameter(torch.tensor([1.0]))
    opt = opt_cls([p], **kw)
    out = []
    for g in grads:
        p.grad = torch.tensor([g])
        opt.step()
        out.append(p.item())
    return out


def test_amsgrad_optax_three_steps_by_hand():
    """lr 0.1, β = (0.9, 0.999), gradients 1, 0.1, 0.1 from p = 1.

    m_t = 0.1 at every step (0.1·1; 0.9·0.1 + 0.1·0.1; again), so m̂ = 0.1 / (1 − 0.9^t) =
    1, 0.1/0.19, 0.1/0.271. v_1 = 0.001, v̂_1 = 1; v_2 = 0.001009, v̂_2 = 0.50475; v_3 =
    0.001017991, v̂_3 = 0.33967: optax's maximum of v̂ stays 1, so each step is lr · m̂."""
    p = run(AMSGradOptax, [1.0, 0.1, 0.1], lr=0.1)
    p1 = 1 - 0.1 * 1.0
    p2 = p1 - 0.1 * (0.1 / 0.19)
    p3 = p2 - 0.1 * (0.1 / 0.271)
    assert p == pytest.approx([p1, p2, p3], abs=1e-6)
    # torch's amsgrad keeps the raw maximum (v_2 = 0.001009 > v_1), bias-corrected by step 2:
    # sqrt(0.001009 / 0.001999) = 0.7105, a step 1.41x larger
    q = run(torch.optim.Adam, [1.0, 0.1, 0.1], lr=0.1, amsgrad=True)
    assert q[0] == pytest.approx(p1, abs=1e-6)
    assert q[1] == pytest.approx(p1 - 0.1 * (0.1 / 0.19) / math.sqrt(0.001009 / 0.001999),
                                 abs=1e-6)
    assert abs(q[1] - p[1]) > 0.02


def test_amsgrad_optax_state_and_weight_decay():
    p = torch.nn.Parameter(torch.tensor([2.0, -1.0]))
    opt = AMSGradOptax([p], lr=0.01, weight_decay=0.5)
    p.grad = torch.zeros(2)
    opt.step()  # the gradient is 0.5 p: the first step is lr · sign(p)
    assert p.tolist() == pytest.approx([1.99, -0.99], abs=1e-6)
    state = opt.state_dict()
    again = AMSGradOptax([torch.nn.Parameter(p.detach().clone())], lr=0.01, weight_decay=0.5)
    again.load_state_dict(state)
    assert again.state_dict()["state"][0]["step"] == 1
    with pytest.raises(ValueError, match="betas"):
        AMSGradOptax([p], betas=(0.9, 1.0))


def test_trainer_builds_the_optimiser_of_the_config():
    cfg = RunConfig(language="parity", optimizer="amsgrad-optax")
    assert isinstance(_optimizer(cfg, [torch.nn.Parameter(torch.zeros(1))]), AMSGradOptax)
    cfg = RunConfig(language="parity", optimizer="amsgrad")
    opt = _optimizer(cfg, [torch.nn.Parameter(torch.zeros(1))])
    assert type(opt) is torch.optim.Adam and opt.defaults["amsgrad"]
    with pytest.raises(ConfigError, match="optimizer"):
        RunConfig(language="parity", optimizer="sgd")


def test_recipe_authors_fills_only_unset_keys():
    cfg = config_from_dict({"language": "dyck-4", "recipe": "authors", "lr": 3e-3,
                            "model_options": {"d": 32}})
    assert (cfg.optimizer, cfg.lr, cfg.warmup, cfg.clip, cfg.batch_size, cfg.sampler) == (
        "amsgrad-optax", 3e-3, 0.2, 1.0, 256, "ldru")
    assert cfg.grad_centralisation and cfg.weight_decay == 0.0
    o = cfg.model_options
    assert (o.d, o.dropout, o.init) == (32, 0.25, "haiku")
    assert cfg.steps == RunConfig.__dataclass_fields__["steps"].default  # never the recipe's
    dyck = config_from_dict({"language": "dyck-4", "recipe": "authors"})
    parity = config_from_dict({"language": "parity", "recipe": "authors"})
    assert dyck.lr == 1e-4 and parity.lr == 1e-3
    assert parity.model_options.dropout == 0.1 and parity.sampler == "uniform"
    # the default recipe changes nothing
    assert config_from_dict({"language": "dyck-4"}) == RunConfig(language="dyck-4")


def test_recipe_through_overrides_and_round_trip():
    base = RunConfig(language="parity", batch_size=64)
    cfg = apply_overrides(base, ["recipe=authors", "model_options.dropout=0.3"])
    assert cfg.batch_size == 64 and cfg.optimizer == "amsgrad-optax"
    o = cfg.model_options
    assert (o.d, o.dropout, o.init) == (64, 0.3, "haiku")
    pr = apply_overrides(apply_overrides(base, ["recipe=authors"]), ["model=pr-lstm"])
    assert (pr.optimizer, pr.model_options.hidden, pr.model_options.init, pr.batch_size,
            pr.grad_centralisation) == ("adam", 256, "haiku", 64, False)
    assert config_from_dict(pr.as_dict()) == pr  # a checkpoint's config reloads unchanged
    bare = config_from_dict({"language": "dyck-4", "recipe": "authors"})  # as the CLI
    assert (bare.lr, bare.optimizer, bare.sampler) == (1e-4, "amsgrad-optax", "ldru")
    rnn = config_from_dict({"language": "parity", "model": "pr-rnn", "recipe": "authors"})
    assert rnn.model_options.activation == "relu" and not rnn.model_options.leaf_activation
    with pytest.raises(ConfigError, match="recipe"):
        config_from_dict({"language": "parity", "recipe": "paper"})


def test_recipe_authors_trains():
    from monoidlab.geometry import Lengths
    from monoidlab.training import train

    cfg = config_from_dict({"language": "parity", "recipe": "authors", "steps": 3,
                            "batch_size": 8, "model_options": {"d": 8},
                            "test_lengths": "41:42", "test_samples": 4})
    result = train(cfg, out_dir=None, progress=False)
    assert result["steps"] == 3 and cfg.test_lengths == Lengths(41, 42)
    assert all(sorted(acc) == [41, 42] for acc in result["accuracy"].values())


def test_gradient_centralisation_over_each_output_axis():
    """Linear weights (out, in): mean over dim 0; embedding tables (in, out), as haiku stores
    every weight: mean over dim 1 (the authors centralise every matrix, embeddings included)."""
    from monoidlab.models.mlp_ldru import MLPLDRU

    torch.manual_seed(0)
    model = MLPLDRU(3, 2, d=8)
    for p in model.parameters():
        p.grad = torch.randn_like(p)
    bias = model.head.bias.grad.clone()
    _centralise(model)
    assert model.embedding.grad.mean(1).abs().max() < 1e-6
    assert model.embedding.grad.mean(0).abs().max() > 1e-3
    assert model.head.weight.grad.mean(0).abs().max() < 1e-6
    assert torch.equal(model.head.bias.grad, bias)
