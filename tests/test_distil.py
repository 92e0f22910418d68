"""The transformation tree's distillation (monoidlab/training/distil.py): its student weights
(``load_automaton``), its teacher (the soft relaxation walked as a chain), the choice between
the extracted and the argmax machine, the config key and a run of the recipe 'distilled'."""

import json

import numpy as np
import pytest
import torch

import monoidlab as ml
from monoidlab.errors import ConfigError, InputError
from monoidlab.models.transform_tree import TransformTree
from monoidlab.probing.extract_automaton import Membership, compare_automata
from monoidlab.training.config import RunConfig
from monoidlab.training.distil import distil, oracle_batches
from monoidlab.training.problems import make_problem


def random_strings(V, n, longest, seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, longest + 1, n)
    return rng.integers(0, V, (n, longest)), lengths


# ------------------------------------------------------------------ the student's weights
@pytest.mark.parametrize("seed", range(6))
def test_load_automaton_makes_the_hard_machine_that_dfa(seed):
    """Random DFAs (m <= n states, any start): the model's hard forward classifies every string
    as the DFA does, and the spare states map to themselves."""
    rng = np.random.default_rng(seed)
    V, C = int(rng.integers(2, 5)), int(rng.integers(2, 4))
    m = int(rng.integers(1, 7))
    n = m + int(rng.integers(0, 4))
    delta, output = rng.integers(0, m, (m, V)), rng.integers(0, C, m)
    start = int(rng.integers(0, m))
    model = TransformTree(V, C, states=n).eval()
    model.load_automaton(delta, output, start)
    tokens, lengths = random_strings(V, 200, 30, seed)
    q = np.full(len(lengths), start)
    for t in range(tokens.shape[1]):
        live = t < lengths
        q = np.where(live, delta[q, tokens[:, t]], q)
    with torch.no_grad():
        got = model(torch.as_tensor(tokens), torch.as_tensor(lengths)).argmax(1).numpy()
    np.testing.assert_array_equal(got, output[q])
    f = model.transformations()
    np.testing.assert_array_equal(f[:, m:], np.tile(np.arange(m, n), (V, 1)))


@pytest.mark.parametrize("args, match", [
    (([[0, 0]] * 5, [0] * 5), "the automaton has 5 states, the model 4"),
    (([[0, 0, 0]], [0]), r"delta \(m, 2\)"),
    (([[0, 1]], [0, 0]), r"delta \(m, 2\)"),
    (([[0, 2], [0, 0]], [0, 0]), "a next state outside"),
    (([[0, 0]], [3]), "a class outside"),
])
def test_load_automaton_refuses_what_does_not_fit(args, match):
    with pytest.raises(InputError, match=match):
        TransformTree(2, 2, states=4).load_automaton(*args)


# ------------------------------------------------------------------ the teacher
def test_the_soft_walk_is_the_soft_tree_product_with_its_gradient():
    """Training with relaxation = "soft": the chain order (a distribution walked from the start
    state, the CPU's) and the tree order give the same logits and the same gradient."""
    grads = []
    for order in ("chain", "tree"):
        torch.manual_seed(3)
        model = TransformTree(3, 2, states=5, relaxation="soft", temperature=0.8).train()
        tokens, lengths = (torch.as_tensor(a) for a in random_strings(3, 32, 17, 1))
        states = model.final_states(tokens, lengths, order=order)
        (states @ model.readout.T).pow(2).sum().backward()
        grads.append((states.detach(), model.logits.grad.clone()))
    torch.testing.assert_close(grads[0][0], grads[1][0], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(grads[0][1], grads[1][1], rtol=1e-4, atol=1e-5)  # float order


def test_soft_states_are_the_plain_product_of_the_soft_columns():
    torch.manual_seed(0)
    model = TransformTree(2, 2, states=4, relaxation="soft", temperature=0.5).eval()
    tokens, lengths = random_strings(2, 20, 25, 2)
    S = torch.softmax(model.logits.detach() / 0.5, dim=1).numpy()
    want = []
    for b in range(len(lengths)):
        s = np.eye(4)[0]
        for t in tokens[b, : lengths[b]]:
            s = S[t] @ s
        want.append(s)
    got = model.soft_states(torch.as_tensor(tokens), torch.as_tensor(lengths)).numpy()
    np.testing.assert_allclose(got, np.stack(want), rtol=1e-5, atol=1e-6)


def test_membership_answers_the_empty_word_with_the_teachers_class():
    lang = ml.load_language("dyck-2")  # accepts the empty word
    model = TransformTree(2, 2, states=4).eval()
    assert Membership(model, lang).word(()) == int(lang.output[lang.start])
    assert Membership(model, lang, empty=0).word(()) == 0


# ------------------------------------------------------------------ the distillation
def _cfg(language, **keys):
    return RunConfig.for_language(language, "transform-tree", recipe="distilled", **keys)


@pytest.mark.parametrize("language", ["dyck-2", "tomita-4", "cycle-navigation"])
def test_a_right_teacher_is_distilled_into_the_right_machine(language):
    """A soft machine whose columns sit on the language's own automaton: L* recovers it, the
    student is that machine (isomorphic after minimisation) and every oracle string is right."""
    cfg = _cfg(language)
    problem = make_problem(cfg)
    lang = problem.language
    model = TransformTree(lang.n_symbols, lang.n_classes, states=2 * lang.n_states,
                          relaxation="soft")
    model.load_automaton(lang.delta, lang.output, lang.start)
    with torch.no_grad():  # scramble the argmax machine's spare states: only the soft one counts
        model.logits[:, :, lang.n_states:] = torch.randn_like(model.logits[:, :, lang.n_states:])
    d = distil(model, problem, cfg, attempt=0, step=cfg.steps, batches=8)
    assert d.kept == "extracted" and d.teacher_accuracy == 1.0 and d.extracted_accuracy == 1.0
    assert d.oracle_strings == 8 * cfg.batch_size
    learned = model.learned_automaton().to_automaton(lang.alphabet, lang.classes)
    assert compare_automata(learned, lang).isomorphic
    # the weights are the extracted machine's: its d.states states, the scrambled spares reset
    n, m = model.n_states, d.states
    np.testing.assert_array_equal(model.transformations()[:, m:],
                                  np.tile(np.arange(m, n), (lang.n_symbols, 1)))


def test_a_useless_teacher_leaves_the_argmax_machine():
    """At temperature 1000 every soft column is nearly uniform, so the teacher answers one class
    and L* learns a one-state machine, worse than the right argmax machine: nothing changes."""
    cfg = _cfg("dyck-2")
    problem = make_problem(cfg)
    lang = problem.language
    model = TransformTree(2, 2, states=8, relaxation="soft", temperature=1000.0)
    model.load_automaton(lang.delta, lang.output, lang.start)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    d = distil(model, problem, cfg, attempt=0, step=cfg.steps, batches=8)
    assert d.kept == "argmax" and d.argmax_accuracy == 1.0 and d.extracted_accuracy < 1.0
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


@pytest.mark.parametrize("language, seed", [("dyck-3", 0), ("tomita-7", 1), ("parity", 2),
                                            ("even-pairs", 3)])
def test_the_kept_machine_is_the_better_of_the_two(language, seed):
    """Random soft machines: the extracted machine is kept exactly when it scores at least the
    argmax machine on the labelled oracle strings, and afterwards the model scores the kept one's
    accuracy on them."""
    cfg = _cfg(language, seed=seed)
    problem = make_problem(cfg)
    lang = problem.language
    torch.manual_seed(seed)
    model = TransformTree(lang.n_symbols, lang.n_classes, states=2 * lang.n_states,
                          relaxation="soft", init_scale=2.0)
    d = distil(model, problem, cfg, attempt=0, step=cfg.steps, batches=4)
    assert (d.kept == "extracted") == (d.extracted_accuracy >= d.argmax_accuracy)
    tokens, lengths, labels = oracle_batches(cfg, problem, 0, batches=4)
    now = float((model.learned_automaton().classify(tokens, lengths) == labels).mean())
    assert now == pytest.approx(max(d.extracted_accuracy, d.argmax_accuracy))


def test_the_oracle_strings_are_seeded_by_seed_and_attempt():
    cfg = RunConfig(language="dyck-2", batch_size=8)
    problem = make_problem(cfg)
    a = oracle_batches(cfg, problem, 0, batches=5)
    b = oracle_batches(cfg, problem, 0, batches=5)
    c = oracle_batches(cfg, problem, 1, batches=5)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not np.array_equal(a[0], c[0])
    assert set(np.unique(a[1])) <= set(range(1, 41))  # the training lengths, no curriculum cap


# ------------------------------------------------------------------ the config key
@pytest.mark.parametrize("keys, match", [
    (dict(model="transform-tree", distil="lstar"), "relaxation 'straight-through'"),
    (dict(model="mlp-ldru", distil="lstar"), "got model 'mlp-ldru'"),
    (dict(model="transform-tree", distil="lstr",
          model_options={"relaxation": "soft"}), "one of 'none', 'lstar'"),
])
def test_the_distil_key_says_what_it_needs(keys, match):
    with pytest.raises(ConfigError, match=f"key 'distil'.*{match}"):
        RunConfig(language="parity", **keys)


def test_the_recipe_sets_the_soft_relaxation_and_the_distillation():
    cfg = _cfg("dyck-6")
    assert cfg.distil == "lstar" and cfg.steps == 12000 and cfg.eval_every == 12000
    assert cfg.model_options.relaxation == "soft" and cfg.model_options.temperature == 1.0
    assert cfg.restarts == 2 and cfg.curriculum_start == 8


# ------------------------------------------------------------------ a run
def test_a_distilled_run_records_its_distillation_and_resumes_to_the_same_weights(tmp_path):
    from monoidlab.training.trainer import train

    cfg = _cfg("tomita-4", steps=200, eval_every=200, restarts=0, test_lengths="41:60:19",
               test_samples=8, val_lengths="42:60:18", val_samples=8, curriculum_start=0,
               threads=1, device="cpu")
    whole = train(cfg, tmp_path / "whole")
    assert [d["step"] for d in whole["distillation"]] == [200]
    d = whole["distillation"][0]
    assert d["kept"] in ("extracted", "argmax") and d["oracle_strings"] == 256 * 64
    lines = [json.loads(x) for x in (tmp_path / "whole" / "metrics.jsonl").read_text().splitlines()]
    assert [x["distillation"] for x in lines if "distillation" in x] == [d]
    assert "certificate" in json.loads((tmp_path / "whole" / "results.json").read_text())
    train(cfg, tmp_path / "paused", stop_at=120)
    resumed = train(cfg, tmp_path / "paused", resume=True)
    assert resumed["distillation"][0]["kept"] == d["kept"]
    a = torch.load(tmp_path / "whole" / "checkpoint.pt", weights_only=False)["model"]
    b = torch.load(tmp_path / "paused" / "checkpoint.pt", weights_only=False)["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_the_recipe_trains_from_the_command_line_and_says_what_it_kept(tmp_path, capsys):
    from monoidlab.cli import main

    out = tmp_path / "run"
    assert main(["train", "--language", "dyck-2", "--model", "transform-tree",
                 "--recipe=distilled", "--steps=1000", "--eval_every=1000", "--restarts=0",
                 "--test_lengths=41:60:19", "--test_samples=8",
                 "--val_lengths=42:60:18", "--val_samples=8", "--threads=1", "--out", str(out),
                 "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    saved = json.loads((out / "config.json").read_text())
    assert saved["distil"] == "lstar" and saved["model_options"]["relaxation"] == "soft"
    (d,) = res["distillation"]
    assert d["step"] == 1000 and d["kept"] == "extracted" and d["extracted_accuracy"] == 1.0
    # the certificate is of the kept weights, the extracted machine: dyck-2's automaton
    assert res["certificate"]["correct"] and res["solved"], res["certificate"]["verdict"]


def test_the_recipe_is_for_languages_and_says_so_by_its_name():
    with pytest.raises(ConfigError, match="recipe 'distilled' is for languages"):
        RunConfig(task="listops", model="transform-tree", recipe="distilled")
