"""Tests for the Delétang benchmark path: tasks on the input tape through the trainer.

Covered: every task (the 15 and ListOps) trains through :class:`TapeProblem` with every model
of the benchmark table; the masks reach the loss and the accuracy; ``forward_all`` of each model
on the tape (shapes, causality of the prefix models, agreement with ``forward`` and with the
prefix-scan definition of MLP-LDRU's sequence outputs); the four regular task generators agree
with the automata of ``languages/``; ListOps split evaluation (Python API and
``monoidlab evaluate CKPT --splits``); the two sweep configs.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from monoidlab.languages import load_language
from monoidlab.models import build_model
from monoidlab.tasks import DELETANG_TASKS, TASKS, evaluate_listops, get_task
from monoidlab.training import TrainConfig, train
from monoidlab.training.evaluate import to_device as _to_device
from monoidlab.training.problems import TapeProblem, make_problem
from monoidlab.training.splits import evaluate_splits, splits_for
from monoidlab.training.trainer import build_for

TAPE_TASKS = sorted(n for n, cls in TASKS.items() if cls.problem_kind == "tape")
MODELS = ["pr-lstm", "lstm", "rnn", "transformer", "mlp-ldru"]
PREFIX_MODELS = ["pr-lstm", "lstm", "rnn", "mlp-ldru"]  # position t sees tokens 0..t only
TINY = {
    "pr-lstm": {"hidden": 8},
    "lstm": {"hidden": 8},
    "rnn": {"hidden": 8},
    "transformer": {"d_model": 16, "n_layers": 1, "n_heads": 2, "dropout": 0.0},
    "mlp-ldru": {"d": 8, "dropout": 0.0},
}
REPO = Path(__file__).resolve().parent.parent


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def tiny_model(name: str, problem: TapeProblem, seed: int = 0):
    torch.manual_seed(seed)
    return build_model(name, problem.vocab_size, problem.n_classes, **TINY[name])


def torch_batch(problem: TapeProblem, seed: int, length: int, batch: int = 6) -> dict:
    return _to_device(problem.batch(np.random.default_rng(seed), length, batch, train=True), "cpu")


# ------------------------------------------------------------------ training through the tape


def _flat(model) -> torch.Tensor:
    return torch.cat([p.detach().ravel() for p in model.parameters()])


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("task", TAPE_TASKS)
def test_every_task_trains_with_every_model(task, model, monkeypatch):
    """Two steps through the trainer change the weights of the model built for the task's tape
    (its vocabulary and classes), and the weights stay finite."""
    from monoidlab.training import trainer

    cfg = TrainConfig(task=task, model=model, model_kwargs=TINY[model], steps=2, batch_size=4,
                      train_lengths="1:8", device="cpu", bf16=False)
    built, real = [], trainer.build_for
    monkeypatch.setattr(trainer, "build_for", lambda c, p: built.append((real(c, p), p))
                        or built[-1][0])
    torch.manual_seed(cfg.seed)
    init = _flat(real(cfg, make_problem(cfg)))
    res = train(cfg, out_dir=None, progress=False, evaluate_at_end=False)
    (trained, problem), = built
    assert res["problem"] == task == problem.name and problem.kind == "tape"
    assert problem.vocab_size == problem.task.tape_vocab_size
    assert res["parameters"] == len(init) == sum(p.numel() for p in trained.parameters())
    after = _flat(trained)
    assert torch.isfinite(after).all() and not torch.equal(after, init)


@pytest.mark.parametrize("task", TAPE_TASKS)
def test_tape_batch_shapes_and_loss_per_task(task):
    problem = make_problem(TrainConfig(task=task, model="rnn"))
    model = tiny_model("rnn", problem)
    n = max(problem.task.min_length, 9)
    b = torch_batch(problem, 0, n)
    width = b["lengths"][0].item() - b["targets"].shape[1]  # n, or n - 1 (even modular lengths)
    m = problem.task.output_length(width)
    assert b["tokens"].shape == (6, width + m) and b["targets"].shape == b["mask"].shape == (6, m)
    assert (b["tokens"][:, width:] == problem.task.empty_token).all()
    assert (b["out_start"], b["out_stop"]) == (width, width + m)
    logits = problem.forward(model, b)
    assert logits.shape == (6, m, problem.n_classes)
    loss, correct = problem.loss(model, b)
    assert loss.ndim == 0 and torch.isfinite(loss) and correct.shape == (6,)
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())


def test_two_manual_steps_change_the_weights_of_every_model():
    problem = make_problem(TrainConfig(task="binary_addition", model="rnn"))
    for name in MODELS:
        model = tiny_model(name, problem)
        before = [p.detach().clone() for p in model.parameters()]
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        for step in range(2):
            loss, _ = problem.loss(model, torch_batch(problem, step, 7))
            opt.zero_grad()
            loss.backward()
            opt.step()
        assert any(not torch.equal(a, p) for a, p in zip(before, model.parameters())), name


@pytest.mark.parametrize("task", ["binary_addition", "stack_manipulation", "binary_multiplication"])
def test_masks_reach_the_loss_and_the_accuracy(task):
    problem = make_problem(TrainConfig(task=task, model="lstm"))
    model = tiny_model("lstm", problem).eval()
    tb = problem.task.sample(np.random.default_rng(3), 16, 12)
    assert not tb.mask.all()  # these tasks have masked positions after the terminator
    b = _to_device(problem.tape_batch(tb), "cpu")
    with torch.no_grad():
        loss, correct = problem.loss(model, b)
        logits = problem.forward(model, b)
        # per-sample accuracy = the task's masked accuracy
        np.testing.assert_allclose(correct.numpy(), problem.task.accuracy(logits.numpy(), tb),
                                   rtol=1e-6)
        # changing targets where mask is False changes neither loss nor accuracy
        noisy = dict(b, targets=torch.where(b["mask"], b["targets"], (b["targets"] + 1) % 3))
        loss2, correct2 = problem.loss(model, noisy)
        assert torch.allclose(loss, loss2) and torch.equal(correct, correct2)
        # ... but where it is True they do
        flipped = dict(b, targets=torch.where(b["mask"], (b["targets"] + 1) % 3, b["targets"]))
        assert not torch.allclose(loss, problem.loss(model, flipped)[0])
        # a model predicting exactly the targets scores 1 whatever it says on masked positions
        perfect = torch.nn.functional.one_hot(noisy["targets"], 3).float() * 10
        hit = (perfect.argmax(-1) == b["targets"]).float() * b["mask"]
        assert torch.equal(hit.sum(1) / b["mask"].sum(1), torch.ones(16))
        np.testing.assert_array_equal(problem.task.accuracy(perfect.numpy(), tb), np.ones(16))


def test_lengths_skip_lengths_without_strings():
    assert TapeProblem(get_task("binary_addition")).lengths(range(1, 6)).tolist() == [3, 4, 5]
    deep = TapeProblem(get_task("listops", min_depth=2))  # shortest depth-2 string: 7 tokens
    assert deep.lengths(range(1, 9)).tolist() == [7, 8]
    with pytest.raises(ValueError, match="no valid input length"):
        TapeProblem(get_task("solve_equation")).lengths(range(1, 3))


def test_train_and_evaluate_report_scores(tmp_path):
    """train()'s accuracies are those of evaluate() on the saved model, score_balanced their
    mean, solved the threshold on every length."""
    from monoidlab.training import evaluate, load_checkpoint

    cfg = TrainConfig(task="reverse_string", model="pr-lstm", model_kwargs=TINY["pr-lstm"],
                      steps=2, batch_size=4, test_lengths="41:60:19", test_samples=3,
                      device="cpu", solved_threshold=0.3)
    res = train(cfg, out_dir=tmp_path, progress=False)
    acc = res["accuracy"]["task"]  # a tape task has one test kind: its own sampler
    model, saved, problem, _ = load_checkpoint(tmp_path)
    want = evaluate(model, problem, [41, 60], n_per_length=3, seed=cfg.seed)
    assert acc == want and sorted(want) == [41, 60]
    assert res["score_balanced"] == pytest.approx((want[41] + want[60]) / 2)
    # per-symbol accuracy of an untrained model: neither 0 nor 1, above the loose threshold
    assert 0.3 <= min(acc.values()) and max(acc.values()) < 0.99
    assert res["solved"] is True and res["verdict"].startswith("solved")
    assert json.loads((tmp_path / "results.json").read_text())["solved"] is True
    # the strict threshold flips the verdict; the accuracies do not move
    strict = train(TrainConfig(**{**saved.as_dict(), "solved_threshold": 0.99}),
                   progress=False)
    assert strict["accuracy"]["task"] == want and strict["solved"] is False
    assert strict["verdict"].startswith("not solved") and "task" in strict["verdict"]


# ------------------------------------------------------------------ forward_all on the tape


@pytest.mark.parametrize("name", MODELS)
def test_forward_all_on_the_tape(name):
    task = get_task("duplicate_string")
    problem = TapeProblem(task)
    model = tiny_model(name, problem).eval()
    tokens, lengths, out = task.tape(task.sample(0, 3, 5))
    tokens, lengths = torch.as_tensor(tokens), torch.as_tensor(lengths)
    with torch.no_grad():
        logits = model.forward_all(tokens, lengths)
        assert logits.shape == (3, 15, 2) and out == slice(5, 15)
        assert torch.isfinite(logits).all()
        changed = tokens.clone()
        changed[:, 3] = task.empty_token  # change position 3 of the tape
        other = model.forward_all(changed, lengths)
    if name in PREFIX_MODELS:  # causal: positions before 3 are unaffected
        torch.testing.assert_close(other[:, :3], logits[:, :3])
    assert not torch.allclose(other[:, 3:], logits[:, 3:])


@pytest.mark.parametrize("name", ["pr-lstm", "lstm", "rnn"])
def test_forward_all_matches_forward_at_every_prefix(name):
    problem = TapeProblem(get_task("parity_check"))
    model = tiny_model(name, problem).eval()
    tokens = torch.randint(0, 3, (2, 7))
    with torch.no_grad():
        every = model.forward_all(tokens, torch.tensor([7, 7]))
        for t in range(7):
            torch.testing.assert_close(model(tokens[:, : t + 1], torch.tensor([t + 1] * 2)),
                                       every[:, t], rtol=1e-5, atol=1e-6)


def test_mlp_ldru_sequence_outputs_are_the_prefix_scan_of_its_operator():
    problem = TapeProblem(get_task("reverse_string"))
    model = tiny_model("mlp-ldru", problem).eval()
    tokens = torch.randint(0, 3, (2, 6))
    with torch.no_grad():
        got = model.forward_all(tokens, None)
        e = model.embed(tokens)
        c = model.combine
        # jax.lax.associative_scan's trees (the "scan" schedule, docs/schedules.md)
        p = [e[:, 0], c(e[:, 0], e[:, 1]), c(c(e[:, 0], e[:, 1]), e[:, 2]),
             c(c(e[:, 0], e[:, 1]), c(e[:, 2], e[:, 3])),
             c(c(c(e[:, 0], e[:, 1]), c(e[:, 2], e[:, 3])), e[:, 4]),
             c(c(c(e[:, 0], e[:, 1]), c(e[:, 2], e[:, 3])), c(e[:, 4], e[:, 5]))]
        want = model.head(torch.stack(p, 1))
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ regular tasks vs automata

# task name -> (automaton, task input symbol -> automaton symbol, task class -> automaton class)
REGULAR = {
    "parity_check": ("parity", {"0": "0", "1": "1"}, {"even": "0", "odd": "1"}),
    "even_pairs": ("even-pairs", {"0": "0", "1": "1"}, {"even": "0", "odd": "1"}),
    # both use Delétang's convention: 0 = −1, 1 = stay, 2 = +1
    "cycle_navigation": ("cycle-navigation", {"0": "0", "1": "1", "2": "2"},
                         {str(i): str(i) for i in range(5)}),
    # standard precedence (* before + and −), mod 5
    "modular_arithmetic": ("modular-arithmetic-precedence",
                           {**{str(d): str(d) for d in range(5)}, "+": "+", "-": "-", "*": "*"},
                           {str(i): str(i) for i in range(5)}),
}


@pytest.mark.parametrize("name", sorted(REGULAR))
def test_regular_generators_agree_with_the_automata(name):
    lang_name, sym, cls = REGULAR[name]
    task, lang = get_task(name), load_language(lang_name)
    assert set(sym.values()) <= set(lang.alphabet) and set(sym) <= set(task.input_vocab)
    to_lang = np.array([lang.alphabet.index(sym[a]) if a in sym else -1
                        for a in task.input_vocab])
    to_class = np.array([lang.classes.index(cls[c]) for c in task.output_vocab])
    rng = np.random.default_rng(11)
    for n in [*range(1, 26), 64, 101, 257]:
        b = task.sample(rng, 64, n)
        assert (to_lang[b.inputs] >= 0).all()  # only mapped symbols occur
        labels = lang.classify(to_lang[b.inputs], b.lengths)
        np.testing.assert_array_equal(labels, to_class[b.targets[:, 0]], err_msg=f"n={n}")


def test_modular_arithmetic_precedence_on_hand_checked_strings():
    task, lang = get_task("modular_arithmetic"), load_language("modular-arithmetic-precedence")
    for expr, value in [("2+3*4", 4), ("4-2*3", 3), ("2*3-4*4", 0), ("1", 1), ("4*4*4+1", 0)]:
        assert task.label(task.encode(expr))[0].item() == value
        assert lang.classes[lang.classify([expr])[0]] == str(value)


# ------------------------------------------------------------------ ListOps splits


class OracleListOps(torch.nn.Module):
    """Predicts the true value at the empty token (and garbage elsewhere)."""

    def __init__(self, n_classes: int = 10):
        super().__init__()
        self.n_classes = n_classes
        self.dummy = torch.nn.Parameter(torch.zeros(()))

    def forward_all(self, tokens, lengths):
        B, T = tokens.shape
        out = torch.zeros(B, T, self.n_classes)
        for b in range(B):
            expr = tokens[b, : T - 1].tolist()  # the tape minus its empty token
            out[b, T - 1, evaluate_listops(expr)] = 1.0
        return out + self.dummy


def test_listops_split_accuracy_of_an_oracle_and_a_constant_model():
    problem = TapeProblem(get_task("listops"))
    acc = evaluate_splits(OracleListOps(), problem, n=12, seed=0, batch_size=4)
    assert acc == {"train": 1.0, "test_longer": 1.0, "test_deeper": 1.0,
                   "test_longer_deeper": 1.0}

    class Constant(OracleListOps):
        def forward_all(self, tokens, lengths):
            out = torch.zeros(*tokens.shape, 10)
            out[..., 3] = 1.0
            return out + self.dummy

    got = evaluate_splits(Constant(), problem, ["train"], n=40, seed=1)
    labels = [problem.task.label(row)[0].item() for row in
              _split_rows(problem, "train", n=40, seed=1)]
    assert got["train"] == pytest.approx(np.mean(np.array(labels) == 3))


def _split_rows(problem, name, n, seed, batch_size=32):
    """The strings evaluate_splits draws for one split (same seeding)."""
    import zlib

    split = splits_for(problem, [name])[name]
    rng = np.random.default_rng([seed, 8_888_888, zlib.crc32(name.encode())])
    rows, left = [], n
    while left > 0:
        tb = split.sample(rng, min(batch_size, left))
        rows += list(tb.inputs)
        left -= len(tb)
    return rows


def test_listops_splits_are_reproducible_and_errors_are_clear():
    problem = TapeProblem(get_task("listops"))
    model = tiny_model("rnn", problem)
    a = evaluate_splits(model, problem, ["test_deeper", "train"], n=8, seed=5)
    b = evaluate_splits(model, problem, ["train"], n=8, seed=5)
    assert list(a) == ["test_deeper", "train"] and a["train"] == b["train"]
    assert splits_for(problem)["train"].max_depth == problem.task.max_depth
    with pytest.raises(ValueError, match="unknown ListOps split"):
        splits_for(problem, ["test_wider"])
    with pytest.raises(ValueError, match="trained on 'listops'"):
        splits_for(TapeProblem(get_task("parity_check")))


def test_cli_evaluate_splits(tmp_path, capsys):
    from monoidlab.cli import main

    cfg = TrainConfig(task="listops", model="lstm", model_kwargs={"hidden": 8}, steps=2,
                      batch_size=4, train_lengths="4:30", device="cpu")
    train(cfg, out_dir=tmp_path / "run", progress=False, evaluate_at_end=False)
    assert main(["evaluate", str(tmp_path / "run"), "--splits", "--samples", "4",
                 "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert sorted(res["splits"]) == sorted(["train", "test_longer", "test_deeper",
                                            "test_longer_deeper"]) and res["samples"] == 4
    assert main(["evaluate", str(tmp_path / "run"), "--splits=test_deeper,train",
                 "--samples", "4"]) == 0
    out = capsys.readouterr().out
    assert "test_deeper" in out and "test_longer" not in out
    # a checkpoint of another task: one readable error line
    other = TrainConfig(task="parity_check", model="rnn", model_kwargs={"hidden": 4}, steps=1,
                        batch_size=2, device="cpu")
    train(other, out_dir=tmp_path / "parity", progress=False, evaluate_at_end=False)
    assert main(["evaluate", str(tmp_path / "parity"), "--splits"]) == 2
    assert "trained on 'listops'" in capsys.readouterr().err


# ------------------------------------------------------------------ the sweep configs


@pytest.mark.parametrize("file", ["deletang.toml", "deletang-cpu.toml"])
def test_sweep_configs_cover_the_benchmark(file):
    from monoidlab.training.sweep import load_sweep

    sweep = load_sweep(REPO / "configs" / file)
    assert sweep["results_md"] == "docs/results.md" and sweep["notes"]
    seeds = {r["seed"] for r in sweep["runs"]}
    assert len(sweep["runs"]) == 15 * 5 * len(seeds)
    assert [r["problem"] for r in sweep["runs"][:: 5 * len(seeds)]] == list(DELETANG_TASKS)
    assert {r["model"] for r in sweep["runs"]} == set(MODELS)
    for r in sweep["runs"]:
        c = r["config"]
        assert c["train_lengths"] == "1:40" and c["test_lengths"].startswith("41:")
        build_for(TrainConfig(**c), make_problem(TrainConfig(**c)))  # kwargs are valid


def test_summarise_writes_results_md_with_notes(tmp_path):
    from monoidlab.training.sweep import summarise

    runs = [{"model": m, "config": {"model_kwargs": {}, "steps": 1, "batch_size": 2,
                                     "optimizer": "adam", "lr": 1e-3, "warmup": 0.0}}
            for m in ("rnn", "lstm")]
    ev = {"kinds": ["task"], "solved_kinds": ["task"], "threshold": 0.99}
    rows = [{"id": f"t__{m}", "problem": t, "model": m, "seed": 0, "score_balanced": s,
             "min_task": s - 0.01, "solved": s - 0.01 >= 0.99, "verdict": "", "steps": 1,
             "train_seconds": 1.0, "device": "cpu", "evaluation": ev}
            for t, m, s in [("a", "rnn", 1.0), ("a", "lstm", 0.5), ("b", "rnn", 0.2),
                            ("b", "lstm", 0.999)]]
    md_path = tmp_path / "results.md"
    res = summarise({"out": str(tmp_path / "out"), "title": "T", "runs": runs,
                     "source": "x.toml", "results_md": str(md_path), "notes": "Caveat here."},
                    rows)
    text = md_path.read_text()
    assert res["solved"] == {"rnn": 1, "lstm": 0} and "| tasks solved | 1/2 | 0/2 |" in text
    assert "Caveat here." in text and "`rnn`" in text and "**1/1: 0.990 (1.000)**" in text
    assert "| b | 0/1: 0.190 (0.200) | 0/1: 0.989 (0.999) |" in text  # 0.989 < 0.99
