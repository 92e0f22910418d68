"""Counterexample-guided refinement (monoidlab.training.refine): a proof replaces the weights,
nothing else does; every counterexample trained on lies within the training lengths; the same
seed gives the same refinement; a run folder's refined weights are the ones loaded, and only
when they were refined from that run's weights."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import monoidlab as ml
from monoidlab.errors import CheckpointError, ConfigError
from monoidlab.evaluation.certificate import Certificate, certify_table
from monoidlab.evaluation.model_certificate import certify_model_exactly
from monoidlab.training import RunConfig, train
from monoidlab.training.loop import Session
from monoidlab.training.problems import make_problem
from monoidlab.training.refine import _with_pool, refine
from monoidlab.training.run_folder import save_checkpoint
from monoidlab.training.run_state import weights_of
from monoidlab.training.trainer import load_checkpoint

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _cfg(language: str = "parity", seed: int = 2, **keys) -> RunConfig:
    # 100 steps leave parity's snapped model wrong somewhere; 100-step rounds fix it
    return RunConfig(language=language, model="mlp-ldru-snap", steps=100, batch_size=32,
                     train_lengths="1:16", test_lengths="17:24", test_samples=8,
                     model_options={"d": 16}, seed=seed,
                     **{"refine_rounds": 6, "refine_steps": 100, **keys})


def _session(cfg: RunConfig) -> Session:
    from monoidlab.training.loop import run_steps

    s = Session.start(cfg, make_problem(cfg), torch.device("cpu"))
    run_steps(s, 0)
    return s


def _state(model: torch.nn.Module) -> dict:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _all_strings_right(model: torch.nn.Module, lang, up_to: int) -> bool:
    """The model's forward pass against the DFA on every string of lengths 1..up_to."""
    model.eval()
    with torch.no_grad():
        for n in range(1, up_to + 1):
            words = np.array(list(itertools.product(range(lang.n_symbols), repeat=n)))
            got = model(torch.as_tensor(words), torch.full((len(words),), n)).argmax(-1)
            if not np.array_equal(got.numpy(), lang.classify(words, np.full(len(words), n))):
                return False
    return True


def test_a_refinement_that_proves_replaces_the_weights_with_proved_ones():
    cfg = _cfg()
    s = _session(cfg)
    lang = s.problem.language
    assert not certify_table(s.model.finite_table(), lang).correct  # wrong before
    r = refine(s)
    assert r.proved and r.kept == "refined" and r.rounds[-1].outcome == "proved"
    assert certify_table(s.model.finite_table(), lang).correct
    # a second method: the model's own forward pass on every string up to length 12
    assert _all_strings_right(s.model, lang, 12)
    found = [x for x in r.rounds if x.outcome == "counterexample"]
    assert found and all(x.length <= 16 and x.steps == 100 for x in found)
    assert r.steps == 100 * len(found) and r.pool == len({x.counterexample for x in found})


def test_without_a_proof_the_trained_weights_stay_exactly():
    cfg = _cfg("dyck-2", seed=0, refine_rounds=2, refine_steps=20)
    s = _session(cfg)
    before = _state(s.model)
    r = refine(s)
    assert not r.proved and r.kept == "trained" and r.rounds[-1].outcome == "last"
    assert r.steps == 40  # it trained, and then put the weights back
    after = s.model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_the_same_seed_gives_the_same_refinement():
    a = refine(_session(_cfg(refine_rounds=2, refine_steps=30)))
    b = refine(_session(_cfg(refine_rounds=2, refine_steps=30)))
    assert [x.counterexample for x in a.rounds] == [x.counterexample for x in b.rounds]
    assert a.kept == b.kept and a.proved == b.proved


def test_a_counterexample_past_the_training_lengths_is_never_trained_on(monkeypatch):
    s = _session(_cfg())
    before = _state(s.model)
    long_one = Certificate("parity", False, 3, 0, 4, 16, 2, "identity", False,
                           counterexample="1" * 40, counterexample_tokens=(1,) * 40,
                           counterexample_offset=0, counterexample_length=40, expected=0,
                           predicted=1)
    monkeypatch.setattr("monoidlab.training.refine._certify",
                        lambda model, lang, within=None: long_one)
    r = refine(s)
    assert [x.outcome for x in r.rounds] == ["beyond"] and r.steps == 0 and r.pool == 0
    assert "longer than the training lengths" in r.text()
    assert all(torch.equal(before[k], s.model.state_dict()[k]) for k in before)


def test_a_model_right_on_the_runs_sub_language_is_proved_without_training(
        mod_arith_right_on_expressions):
    """On modular arithmetic (within "auto": the well-formed expressions) a model right on
    every expression and wrong on '+' is proved at round 0 and not trained on '+', a string
    the run never sees; a short run's rounds meet well-formed counterexamples only."""
    cfg = RunConfig(language="modular-arithmetic", model="transform-tree", steps=20,
                    batch_size=16, train_lengths="1:7", test_lengths="41:45", test_samples=8,
                    seed=0, refine_rounds=3, refine_steps=5, lr=0.05)
    s = _session(cfg)
    lang = s.problem.language
    s.model.load_state_dict(mod_arith_right_on_expressions(s.model.n_states).state_dict())
    assert not certify_model_exactly(s.model, lang).correct  # '+' over every string
    before = _state(s.model)
    r = refine(s)
    assert [x.outcome for x in r.rounds] == ["proved"] and r.steps == 0 and r.pool == 0
    assert all(torch.equal(before[k], s.model.state_dict()[k]) for k in before)
    r = refine(_session(cfg))
    found = [x.counterexample for x in r.rounds if x.counterexample is not None]
    assert found and all("on the strings of classes" in x.verdict for x in r.rounds)
    tokens, lengths = lang.encode(found)
    classes = [lang.classes[c] for c in lang.classify(tokens, lengths)]
    assert "incomplete" not in classes, list(zip(found, classes, strict=True))


def test_pool_rows_replace_the_first_rows_of_a_batch():
    batch = {"tokens": np.ones((4, 6), np.int64), "lengths": np.full(4, 6),
             "targets": np.zeros(4, np.int64), "offsets": np.full(4, 3)}
    pool = [((0, 1, 0, 1, 1, 0, 1, 1), 1)]
    out = _with_pool(batch, pool, 2, np.random.default_rng(0))
    assert out["tokens"].shape == (4, 8)
    assert out["tokens"][0].tolist() == [0, 1, 0, 1, 1, 0, 1, 1]
    assert out["tokens"][3].tolist() == [1] * 6 + [0, 0]
    assert out["lengths"].tolist() == [8, 8, 6, 6]
    assert out["targets"].tolist() == [1, 1, 0, 0]
    assert out["offsets"].tolist() == [0, 0, 3, 3]  # the certificate's offset, then the batch's


@pytest.mark.parametrize("keys, needle", [
    ({"model": "mlp-ldru", "refine_rounds": 2}, "FiniteModel"),
    ({"model": "mlp-ldru-snap", "refine_share": 0.0}, "refine_share"),
    ({"model": "mlp-ldru-snap", "refine_steps": 0}, "refine_steps"),
    ({"model": "mlp-ldru-snap", "refine_rounds": -1}, "refine_rounds"),
])
def test_refinement_keys_are_checked(keys, needle):
    with pytest.raises(ConfigError, match=needle) as info:
        RunConfig(language="parity", **keys)
    assert "refine" in str(info.value)


def test_a_task_cannot_be_refined():
    with pytest.raises(ConfigError, match="refine_rounds"):
        RunConfig(task="parity_check", model="mlp-ldru-snap", refine_rounds=2)


def test_a_run_folder_loads_its_refined_weights_and_refuses_foreign_ones(tmp_path):
    out = tmp_path / "run"
    result = train(_cfg(), out, progress=False)
    assert result["refinement"]["kept"] == "refined"
    assert result["certificate"]["correct"] and result["solved"]
    model, cfg, problem, ckpt = load_checkpoint(out)
    assert ckpt["refined"] and weights_of(out, ckpt, cfg)["file"].endswith("refined.pt")
    from monoidlab.training.loop import plan_text

    assert "up to 6 refinement rounds of 100 steps" in plan_text(cfg)
    assert certify_table(model.finite_table(), ml.load_language("parity")).correct
    # refined.pt bound to other weights (another run's, an edit) is refused by name
    kept = torch.load(out / "refined.pt", weights_only=True)
    kept.pop("sha256", None)
    save_checkpoint({**kept, "refined_from": "0" * 64}, out / "refined.pt")
    with pytest.raises(CheckpointError, match="refined.pt: not refined from"):
        load_checkpoint(out)


def test_mined_strings_are_training_strings_the_table_misreads():
    from monoidlab.training.refine import _mined

    s = _session(_cfg("dyck-2", seed=0))
    lang, lengths = s.problem.language, s.problem.lengths("1:16")
    found = _mined(s.model, s.problem, lengths, 3000, seed=5)
    assert found  # 100 steps leave dyck-2 wrong on many strings
    table = s.model.finite_table()
    tokens = np.zeros((len(found), 16), np.int64)
    lens = np.array([len(t) for t, _ in found])
    for i, (t, _) in enumerate(found):
        tokens[i, : len(t)] = t
    labels = np.array([c for _, c in found])
    assert lens.max() <= 16 and np.array_equal(labels, lang.classify(tokens, lens))
    assert (table.fold(tokens, lens) != labels).all()
    assert found == _mined(s.model, s.problem, lengths, 3000, seed=5)  # seeded
