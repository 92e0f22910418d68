"""Coverage-driven training (random left offsets): trainer, minimum length and CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

import monoidlab as ml
from monoidlab.cli import main
from monoidlab.geometry import buffer_size
from monoidlab.training import ConfigError, RunConfig, train
from monoidlab.training.problems import make_problem


def test_training_batches_carry_offsets_inside_the_buffer():
    cfg = RunConfig(language="dyck-2", model="mlp-ldru", offsets="random")
    problem = make_problem(cfg)
    rng = np.random.default_rng(0)
    for L in (1, 5, 17, 40):
        b = problem.batch(rng, L, 64, train=True)
        buffer = buffer_size(2 * L)
        assert b["offsets"].min() >= 0 and (b["offsets"] + L).max() <= buffer
        assert len(np.unique(b["offsets"])) > 1 or L == 1
    assert "offsets" not in problem.batch(rng, 5, 8, train=False)  # evaluation: offset 0


def test_training_with_random_offsets_feeds_them_to_the_model(monkeypatch):
    """Every training step places its strings at the offsets of its batch (drawn from the
    step's seed, not all zero), and the run is seeded: dropping the offsets is caught."""
    import torch

    from monoidlab.models.mlp_ldru import MLPLDRU
    from monoidlab.training.trainer import training_batch

    kw = dict(language="parity", model="mlp-ldru", offsets="random", steps=4, batch_size=8,
              model_options={"d": 8}, train_lengths="2:9", test_lengths="41:42", test_samples=4,
              device="cpu")
    cfg = RunConfig(**kw)
    calls = []
    real = MLPLDRU.forward_at_offsets

    def spy(self, tokens, lengths, offsets):
        calls.append((tokens.shape[1], offsets.tolist()))
        return real(self, tokens, lengths, offsets)

    monkeypatch.setattr(MLPLDRU, "forward_at_offsets", spy)
    a = train(cfg, progress=False)
    assert len(calls) == cfg.steps  # one call per training step; evaluation at offset 0
    problem = make_problem(cfg)
    lengths = problem.lengths(cfg.train_lengths)
    want = [training_batch(cfg, problem, lengths, s)[1] for s in range(cfg.steps)]
    assert [c[1] for c in calls] == [w["offsets"].tolist() for w in want]
    assert any(o > 0 for c in calls for o in c[1])
    # seeded: the same run again gives the same weights; without offsets, other weights
    b = train(RunConfig(**kw), progress=False)
    assert a["accuracy"] == b["accuracy"] and calls[: cfg.steps] == calls[cfg.steps:]
    monkeypatch.undo()

    def weights(**extra):
        from monoidlab.training import loop as trainer

        built = []
        real_build = trainer.build_for
        with monkeypatch.context() as mp:
            mp.setattr(trainer, "build_for", lambda c, p: built.append(real_build(c, p))
                       or built[-1])
            train(RunConfig(**{**kw, **extra}), progress=False, evaluate_at_end=False)
        return torch.cat([p.detach().ravel() for p in built[0].parameters()])

    assert torch.equal(weights(), weights())
    assert not torch.allclose(weights(), weights(offsets="none"))


def test_random_offsets_need_a_balanced_tree_model():
    with pytest.raises(ConfigError, match="offsets"):
        RunConfig(language="parity", model="lstm", offsets="random")


@pytest.mark.parametrize("name, plain, shifted", [
    ("dyck-2", 12, 8), ("tomita-3", 22, 12), ("even-pairs", 6, 4), ("prefix-2-2", 6, 4)])
def test_offsets_shorten_the_support(name, plain, shifted):
    lang = ml.load_language(name)
    a = ml.min_training_length(lang, range(41, 90))
    b = ml.min_training_length(lang, range(41, 90), offsets="random")
    # offset 0 is among the random offsets, so the support can only grow: never longer
    assert b.support_length <= a.support_length
    assert (a.support_length, b.support_length) == (plain, shifted)
    assert b.needed == a.needed  # the test side stays at offset 0


def test_min_length_cli_with_offsets(capsys):
    assert main(["min-length", "dyck-6", "--test", "41:200", "--offsets", "random",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["offsets"] == "random"
    want = ml.min_training_length(ml.load_language("dyck-6"), range(41, 201), offsets="random")
    assert out["support_length"] == want.support_length == 24  # 44 without offsets


def test_identity_padding_support_lengths_from_one_cli_call(capsys):
    """Identity padding removes the (x, ε) compositions: the support lengths computed
    independently for the issue (dyck-4 16, dyck-6 28, dyck-8 32, dyck-12 56, dyck-3 14,
    tomita-3 14, parity 2), with and without random offsets."""
    assert main(["min-length", "--suite", "ldru21", "--test", "41:500", "--padding", "identity",
                 "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    want = {"dyck-4": 16, "dyck-6": 28, "dyck-8": 32, "dyck-12": 56, "dyck-3": 14,
            "tomita-3": 14, "parity": 2}
    assert {k: rows[k]["support_length"] for k in want} == want
    assert all(r["padding"] == "identity" for r in rows.values())
    assert main(["min-length", "dyck-6", "--test", "41:500", "--padding", "identity",
                 "--offsets", "random", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["support_length"] == 24
