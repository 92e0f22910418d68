"""Tests for the Delétang benchmark path: tasks on the input tape through the trainer.

Covered: every task (the 15 and ListOps) trains through :class:`TapeProblem` with every model
of the benchmark table; the masks reach the loss and the accuracy; ``forward_all`` of each model
on the tape (shapes, causality of the prefix models, agreement with ``forward`` and with the
prefix-scan definition of MLP-LDRU's sequence outputs); the four regular task generators agree
with the automata of ``languages/``; ListOps split evaluation (Python API and
``monoidlab evaluate CKPT --splits``); the two sweep configs.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from references import task_accuracy, task_batch_accuracy

from monoidlab.algebra.languages import load_language
from monoidlab.evaluation import to_device as _to_device
from monoidlab.evaluation.kinds import TASK_KINDS
from monoidlab.models import build_model
from monoidlab.tasks import (
    DELETANG_TASKS,
    TASKS,
    TextTask,
    evaluate_brackets,
    evaluate_listops,
    generate_bracket_expression,
    get_task,
)
from monoidlab.training import RunConfig, train
from monoidlab.training.problems import TapeProblem, make_problem
from monoidlab.training.splits import evaluate_splits, splits_for
from monoidlab.training.trainer import build_for

TAPE_TASKS = sorted(n for n, cls in TASKS.items()
                    if cls.readout == "tape" and not issubclass(cls, TextTask))
MODELS = ["rnn", "lstm", "stack-rnn", "tape-rnn", "transformer", "pr-lstm", "mlp-ldru"]
# position t sees tokens 0..t only
PREFIX_MODELS = ["pr-lstm", "lstm", "rnn", "stack-rnn", "tape-rnn", "mlp-ldru"]
TINY = {
    "pr-lstm": {"hidden": 8},
    "lstm": {"hidden": 8},
    "rnn": {"hidden": 8},
    "stack-rnn": {"hidden": 8, "stack_size": 5, "stack_cell": 3},
    "tape-rnn": {"hidden": 8, "memory_size": 6, "memory_cell": 3, "mlp": [8]},
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
    from monoidlab.training import loop

    cfg = RunConfig(task=task, model=model, model_options=TINY[model], steps=2, batch_size=4,
                    train_lengths="1:8", device="cpu", bf16=False)
    built, real = [], loop.build_for
    monkeypatch.setattr(loop, "build_for", lambda c, p: built.append((real(c, p), p))
                        or built[-1][0])
    torch.manual_seed(cfg.seed)
    init = _flat(real(cfg, make_problem(cfg)))
    res = train(cfg, out_dir=None, progress=False, evaluate_at_end=False)
    (trained, problem), = built
    assert res["problem"] == task == problem.name and problem.readout == "tape"
    assert problem.vocab_size == problem.task.tape_vocab_size
    assert res["parameters"] == len(init) == sum(p.numel() for p in trained.parameters())
    after = _flat(trained)
    assert torch.isfinite(after).all() and not torch.equal(after, init)


@pytest.mark.parametrize("task", TAPE_TASKS)
def test_tape_batch_shapes_and_loss_per_task(task):
    problem = make_problem(RunConfig(task=task, model="rnn"))
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
    problem = make_problem(RunConfig(task="binary_addition", model="rnn"))
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
    problem = make_problem(RunConfig(task=task, model="lstm"))
    model = tiny_model("lstm", problem).eval()
    tb = problem.task.sample(np.random.default_rng(3), 16, 12)
    assert not tb.mask.all()  # these tasks have masked positions after the terminator
    b = _to_device(problem.tape_batch(tb), "cpu")
    with torch.no_grad():
        loss, correct = problem.loss(model, b)
        logits = problem.forward(model, b)
        # per-sample accuracy = the task's masked accuracy
        np.testing.assert_allclose(correct.numpy(), task_accuracy(logits.numpy(), tb),
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
        np.testing.assert_array_equal(task_accuracy(perfect.numpy(), tb), np.ones(16))


def test_lengths_skip_lengths_without_strings():
    assert TapeProblem(get_task("binary_addition")).lengths(range(1, 6)).tolist() == [3, 4, 5]
    deep = TapeProblem(get_task("listops", min_depth=2))  # shortest depth-2 string: 7 tokens
    assert deep.lengths(range(1, 9)).tolist() == [7, 8]
    with pytest.raises(ValueError, match="no valid input length"):
        TapeProblem(get_task("solve_equation")).lengths(range(1, 3))


def test_train_and_evaluate_report_scores(tmp_path):
    """train()'s accuracies are those of evaluate() on the saved model, paper_score their
    mean, the verdict the threshold on every length (never met by a trivial model)."""
    from monoidlab.training import evaluate, load_checkpoint

    cfg = RunConfig(task="reverse_string", model="pr-lstm", model_options=TINY["pr-lstm"],
                      steps=2, batch_size=4, test_lengths="41:60:19", test_samples=3,
                      device="cpu", solved_threshold=0.3)
    res = train(cfg, out_dir=tmp_path, progress=False)
    acc = res["accuracy"]["task"]  # a tape task has one test kind: its own sampler
    model, saved, problem, _ = load_checkpoint(tmp_path)
    want = evaluate(model, problem, [41, 60], n_per_length=3, seed=cfg.seed)
    assert acc == want and sorted(want) == [41, 60]
    assert res["paper_score"] == pytest.approx((want[41] + want[60]) / 2)
    # per-symbol accuracy of an untrained model: neither 0 nor 1, above the loose threshold
    assert 0.3 <= min(acc.values()) and max(acc.values()) < 0.99
    # every length passes the loose threshold, but so does a majority-class model on these
    # strings: such a verdict is never "solved", and says why
    assert res["solved"] is False
    assert res["verdict"].startswith("not solved: a majority-class model also scores >= 0.3")
    assert json.loads((tmp_path / "results.json").read_text())["solved"] is False
    # the strict threshold flips the verdict; the accuracies do not move
    strict = train(RunConfig(**{**saved.as_dict(), "solved_threshold": 0.99}),
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


@pytest.mark.parametrize("name", ["pr-lstm", "lstm", "rnn", "stack-rnn"])
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

    cfg = RunConfig(task="listops", model="lstm", model_options={"hidden": 8}, steps=2,
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
    other = RunConfig(task="parity_check", model="rnn", model_options={"hidden": 4}, steps=1,
                        batch_size=2, device="cpu")
    train(other, out_dir=tmp_path / "parity", progress=False, evaluate_at_end=False)
    assert main(["evaluate", str(tmp_path / "parity"), "--splits"]) == 2
    assert "trained on 'listops'" in capsys.readouterr().err


# ------------------------------------------------------------------ the sweep configs


@functools.cache
def bundled_sweep(file: str) -> dict:
    """load_sweep of configs/FILE, once per process (thousands of checked run configs: seconds
    apiece for deletang.toml); the tests only read it."""
    from monoidlab.training.sweep import load_sweep

    return load_sweep(REPO / "monoidlab" / "configs" / file)


@pytest.mark.parametrize("file", ["deletang.toml", "deletang-cpu.toml"])
def test_sweep_configs_cover_the_benchmark(file):
    sweep = bundled_sweep(file)
    assert sweep["results_md"] == "docs/results.md" and sweep["notes"]
    seeds = sorted({r["seed"] for r in sweep["runs"]})
    lrs = sorted({r["lr"] for r in sweep["runs"]})
    per_cell = len(seeds) * len(lrs)
    assert len(lrs) >= 2 and len(sweep["runs"]) == 15 * 7 * per_cell  # seeds × learning rates
    assert [r["problem"] for r in sweep["runs"][:: 7 * per_cell]] == list(DELETANG_TASKS)
    assert [r["model"] for r in sweep["runs"][: 7 * per_cell: per_cell]] == MODELS
    # the published numbers for every model Delétang et al. report, on every task
    for m in ("rnn", "lstm", "stack-rnn", "tape-rnn", "transformer"):
        assert set(sweep["paper"]["scores"][m]) == set(DELETANG_TASKS)
    for r in sweep["runs"]:
        c = r["config"].as_dict()
        assert c["protocol"] == "paper" and c["lr"] == r["lr"]
        assert c["train_lengths"] == "1:40" and c["test_lengths"].startswith("41:")
        if r["seed"] == seeds[0] and r["lr"] == lrs[0]:  # one build per task and model
            build_for(RunConfig(**c), make_problem(RunConfig(**c)))  # kwargs are valid


@pytest.mark.parametrize("model", MODELS)
def test_the_paper_scale_config_starts_a_run_of_every_model(model, tmp_path):
    """configs/deletang.toml unchanged but for the step count, batch and test set: one step."""
    sweep = bundled_sweep("deletang.toml")
    run = next(r for r in sweep["runs"] if r["model"] == model and r["problem"] == "odds_first")
    cfg = run["config"].replace(steps=1, batch_size=2, test_lengths="41:42", test_samples=2,
                                device="cpu")
    res = train(cfg, out_dir=tmp_path, progress=False)
    assert res["steps"] == 1 and res["evaluation"]["measure"] == "pooled"
    assert (tmp_path / "checkpoint.pt").is_file()


def test_summarise_writes_results_md_with_notes(tmp_path):
    from monoidlab.training.sweep import summarise

    runs = [{"model": m, "config": RunConfig(task="parity_check", model=m, steps=1,
                                             batch_size=2)}
            for m in ("rnn", "lstm")]
    ev = {"kinds": ["task"], "solved_kinds": ["task"], "threshold": 0.99}
    rows = [{"id": f"t__{m}", "problem": t, "model": m, "seed": 0, "paper_score": s,
             "min_task": s - 0.01, "solved": s - 0.01 >= 0.99, "verdict": "", "steps": 1,
             "train_seconds": 1.0, "device": "cpu", "evaluation": ev}
            for t, m, s in [("a", "rnn", 1.0), ("a", "lstm", 0.5), ("b", "rnn", 0.2),
                            ("b", "lstm", 0.999)]]
    md_path = tmp_path / "results.md"
    res = summarise({"out": str(tmp_path / "out"), "title": "T", "runs": runs,
                     "source": "x.toml", "results_md": str(md_path), "notes": "Caveat here."},
                    rows, write_docs=True)
    text = md_path.read_text()
    assert res["solved"] == {"rnn": 1, "lstm": 0} and "| tasks solved | 1/2 | 0/2 |" in text
    assert "Caveat here." in text and "`rnn`" in text and "**1/1: 0.990 (1.000)**" in text
    assert "| b | 0/1: 0.190 (0.200) | 0/1: 0.989 (0.999) |" in text  # 0.989 < 0.99


# ------------------------------------------------------------------ Stack-RNN and Tape-RNN


def _random_weights(model, seed: int, std: float = 0.7):
    """Large random weights: the soft actions are far from uniform, so every update matters."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * std)
    return model.eval()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_stack_rnn_matches_the_step_by_step_reference(seed):
    from references import stack_rnn_reference

    from monoidlab.models.stack_rnn import StackRNN

    model = _random_weights(StackRNN(4, 3, hidden=7, stack_size=4, stack_cell=3), seed)
    g = torch.Generator().manual_seed(100 + seed)
    tokens = torch.randint(0, 4, (3, 12), generator=g)  # 12 steps > 4 cells: the bottom drops
    lengths = torch.tensor([12, 7, 1])
    with torch.no_grad():
        got = model.forward_all(tokens, lengths)
    want = stack_rnn_reference(model, tokens, lengths)
    torch.testing.assert_close(got.double(), want, rtol=0, atol=1e-5)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tape_rnn_matches_the_step_by_step_reference(seed):
    from references import tape_rnn_reference

    from monoidlab.models.tape_rnn import TapeRNN

    model = _random_weights(TapeRNN(4, 3, hidden=7, memory_size=5, memory_cell=3, mlp=[6, 4]),
                            seed)
    g = torch.Generator().manual_seed(100 + seed)
    tokens = torch.randint(0, 4, (4, 12), generator=g)
    lengths = torch.tensor([12, 12, 9, 2])
    input_lengths = torch.tensor([3, 7, 5, 1])  # 7 > 5 cells: the jump wraps; 5: a full turn
    with torch.no_grad():
        got = model.forward_tape(tokens, lengths, input_lengths)
    want = tape_rnn_reference(model, tokens, lengths, input_lengths)
    torch.testing.assert_close(got.double(), want, rtol=0, atol=1e-5)


def _hard_action(layer, k: int) -> None:
    """Make the action softmax one-hot on action ``k``."""
    with torch.no_grad():
        layer.weight.zero_()
        layer.bias.fill_(-60.0)
        layer.bias[k] = 60.0


def test_stack_rnn_hard_push_and_pop():
    from monoidlab.models.stack_rnn import StackRNN

    model = StackRNN(3, 2, hidden=5, stack_size=4, stack_cell=2).eval()
    stack = torch.arange(8.0).view(1, 4, 2)  # cells 0 (top) .. 3 (bottom)
    x, h = torch.zeros(1, 3), torch.zeros(1, 5)
    with torch.no_grad():
        _hard_action(model.actions, 0)  # push
        h1, pushed = model.step(x, h, stack)
        torch.testing.assert_close(pushed[0, 0], model.push(h1)[0])
        torch.testing.assert_close(pushed[0, 1:], stack[0, :3])  # the bottom cell is lost
        _hard_action(model.actions, 1)  # pop
        _, popped = model.step(x, h, stack)
        torch.testing.assert_close(popped[0], torch.cat([stack[0, 1:], torch.zeros(1, 2)]))
        _hard_action(model.actions, 2)  # no-op
        torch.testing.assert_close(model.step(x, h, stack)[1], stack)


@pytest.mark.parametrize("action, shift", [(0, 0), (1, 1), (2, -1), (3, 3), (4, -3)])
def test_tape_rnn_hard_moves(action, shift):
    from monoidlab.models.tape_rnn import TapeRNN

    model = TapeRNN(3, 2, hidden=5, memory_size=5, memory_cell=2, mlp=[4]).eval()
    tape = torch.arange(10.0).view(1, 5, 2)
    x, h = torch.zeros(1, 3), torch.zeros(1, 5)
    with torch.no_grad():
        _hard_action(model.actions, action)
        h1, new = model.step(x, h, tape, model._moves(torch.tensor([3])))  # input length 3
        written = torch.cat([model.write(h1)[:, None], tape[:, 1:]], dim=1)
    # new cell i holds the written tape's cell i + shift (mod 5): "left" reads the old cell 1
    want = written[0, (torch.arange(5) + shift) % 5]
    torch.testing.assert_close(new[0], want)


def test_tape_rnn_is_causal_for_a_fixed_jump():
    """The Tape-RNN's jump is the input length, fixed for the whole tape: with it fixed, every
    prefix of the tape gives the same outputs (its forward on a shorter string jumps by that
    string's length instead, a different model function)."""
    from monoidlab.models.tape_rnn import TapeRNN

    model = _random_weights(TapeRNN(3, 2, hidden=6, memory_size=4, memory_cell=2, mlp=[5]), 0)
    tokens = torch.randint(0, 3, (2, 7))
    n = torch.tensor([3, 5])
    with torch.no_grad():
        every = model.forward_tape(tokens, torch.tensor([7, 7]), n)
        for t in range(7):
            part = model.forward_tape(tokens[:, : t + 1], torch.tensor([t + 1] * 2), n)
            torch.testing.assert_close(part, every[:, : t + 1], rtol=1e-5, atol=1e-6)


def test_memory_models_capabilities_and_the_tape_input_length():
    from monoidlab.models import model_class
    from monoidlab.models.protocols import capabilities

    for name in ("stack-rnn", "tape-rnn"):
        caps = capabilities(model_class(name))
        assert {"Classifier", "PrefixModel", "PrefixStateModel"} <= caps
        assert ("TapeModel" in caps) == (name == "tape-rnn")
    # the tape problem hands the Tape-RNN the input length (its jump), not the tape length
    problem = TapeProblem(get_task("reverse_string"))
    model = _random_weights(build_model("tape-rnn", problem.vocab_size, problem.n_classes,
                                        **TINY["tape-rnn"]), 3)
    b = torch_batch(problem, 0, 5, batch=3)
    with torch.no_grad():
        got = problem.forward(model, b)
        want = model.forward_tape(b["tokens"], b["lengths"], torch.full((3,), 5))[:, 5:]
        by_tape_length = model.forward_all(b["tokens"], b["lengths"])[:, 5:]
    torch.testing.assert_close(got, want)
    assert not torch.allclose(got, by_tape_length)


# ------------------------------------------------------------------ two accuracy definitions


class FirstK(torch.nn.Module):
    """A stub tape model: right on the first ``k`` output positions, wrong after them."""

    def __init__(self, task, k: int):
        super().__init__()
        self.task, self.k = task, k
        self.dummy = torch.nn.Parameter(torch.zeros(()))

    def forward_all(self, tokens, lengths):
        x = tokens.numpy()
        n = int((x[0] != self.task.empty_token).sum())
        targets, _ = self.task.label(x[:, :n])
        m = targets.shape[1]
        said = np.where(np.arange(m) < self.k, targets, (targets + 1) % self.task.n_classes)
        out = torch.zeros(*tokens.shape, self.task.n_classes)
        out[:, n:] = torch.nn.functional.one_hot(torch.as_tensor(said), self.task.n_classes)
        return out + self.dummy


def test_pooled_and_per_string_accuracy_on_a_hand_built_batch():
    from monoidlab.evaluation.measures import pooled_accuracy
    from monoidlab.tasks import TaskBatch

    task = get_task("binary_addition")
    # 1 + 4 = 5 = "101" then the terminator: 4 scored positions; 1 + 0 = 1: 2 scored positions
    inputs = np.stack([task.encode("1+001"), task.encode("1+000")])
    targets, mask = task.label(inputs)
    assert targets.tolist() == [[1, 0, 1, 2, 0, 0], [1, 2, 0, 0, 0, 0]]
    assert mask.sum(1).tolist() == [4, 2]
    tb = TaskBatch(inputs, targets, mask, np.array([5, 5]))
    problem = TapeProblem(task)
    with torch.no_grad():  # right on the first 2 output positions: 2/4 and 2/2
        hits, counts = problem.eval_counts(FirstK(task, 2), _to_device(problem.tape_batch(tb),
                                                                        "cpu"))
    assert hits.tolist() == [2, 2] and counts.tolist() == [4, 2]
    assert np.mean(hits.numpy() / counts.numpy()) == 0.75  # per string: (1/2 + 1) / 2
    assert pooled_accuracy(hits, counts) == pytest.approx(4 / 6)  # pooled: 4 tokens of 6
    said = FirstK(task, 2).forward_all(*map(torch.as_tensor, task.tape(tb)[:2]))[:, 5:]
    assert task_batch_accuracy(said.detach().numpy(), tb) == pytest.approx(4 / 6)  # its scalar
    # the reference's sub-batches of 64: each sub-batch weighs the same
    h, c = np.tile([2, 2], 65), np.tile([4, 2], 65)  # 130 strings: 64, 64, then 2
    assert pooled_accuracy(h, c) == pytest.approx(4 / 6)
    h[-2:] = 0
    assert pooled_accuracy(h, c) == pytest.approx((4 / 6 + 4 / 6 + 0) / 3)


def test_evaluation_reports_both_definitions_and_their_disagreement():
    from monoidlab.evaluation import Evaluation, evaluate_kinds

    # the case: right on the first 41 output positions of stack_manipulation at
    # length 100 (0.641 per string, 0.587 pooled): long answers weigh more when pooled
    task = get_task("stack_manipulation")
    paper = TapeProblem(task, protocol="paper")
    ev = evaluate_kinds(FirstK(task, 41), paper, [100], n_per_length=512, seed=0,
                        threshold=0.62)
    per_string = ev.by_measure["per_string"]["task"][100]
    pooled = ev.by_measure["pooled"]["task"][100]
    assert per_string == pytest.approx(0.641, abs=0.02) and pooled == pytest.approx(0.587,
                                                                                      abs=0.02)
    assert ev.measure == "pooled" and ev.accuracy["task"][100] == pooled
    assert not ev.solved and ev.solved_by("per_string") and not ev.solved_by("pooled")
    assert "[per_string accuracy: solved]" in ev.verdict()
    again = Evaluation.from_dict(json.loads(json.dumps(ev.as_dict())))
    assert again.by_measure == ev.by_measure and again.solved_by("per_string")
    # monoidlab's protocol: the same strings, the per-string accuracy decides
    ours = evaluate_kinds(FirstK(task, 41), TapeProblem(task), [100], 512, 0, threshold=0.62)
    assert ours.solved and ours.accuracy["task"][100] == per_string
    # the baseline: the majority symbol of each output position, on the same strings
    assert 0.3 < ev.majority["task"][100] < 0.7


# ------------------------------------------------------------------ the paper protocol


def test_protocol_paper_sets_the_released_task_behaviour():
    odds = make_problem(RunConfig(task="odds_first", model="rnn", protocol="paper"))
    assert odds.task.code_order and odds.measure == "pooled"
    assert odds.task.label(np.array([1, 0, 0]))[0].tolist() == [[0, 1, 0]]
    assert not make_problem(RunConfig(task="odds_first", model="rnn")).task.code_order
    for name in ("binary_addition", "binary_multiplication", "solve_equation",
                 "missing_duplicate_string"):
        p = make_problem(RunConfig(task=name, model="rnn", protocol="paper"))
        assert p.lengths(range(1, 41)).tolist() == list(range(1, 41)), name  # placeholders
        assert make_problem(RunConfig(task=name, model="rnn")).lengths(
            range(1, 41))[0] == get_task(name).min_length
    # an explicit task option wins over the protocol's
    mine = make_problem(RunConfig(task="odds_first", model="rnn", protocol="paper",
                                    task_options={"code_order": False}))
    assert not mine.task.code_order


def test_protocol_errors_are_one_line_config_errors():
    from monoidlab.errors import ConfigError

    with pytest.raises(ConfigError, match="'protocol'.*monoidlab or paper"):
        RunConfig(task="parity_check", model="rnn", protocol="papers")
    with pytest.raises(ConfigError, match="'protocol'.*tape tasks"):
        RunConfig(language="parity", model="rnn", protocol="paper")
    with pytest.raises(ConfigError, match="'protocol'.*tape tasks"):
        RunConfig(task="addition", model="decoder-lm", protocol="paper")


def test_paper_protocol_learns_the_zeros_after_the_terminator():
    task = get_task("binary_addition")
    tb = task.sample(np.random.default_rng(1), 8, 9)
    model = tiny_model("lstm", TapeProblem(task)).eval()
    for protocol, changes in (("paper", True), ("monoidlab", False)):
        problem = TapeProblem(task, protocol=protocol)
        b = _to_device(problem.tape_batch(tb), "cpu")
        noisy = dict(b, targets=torch.where(b["mask"], b["targets"], 1))
        with torch.no_grad():
            same = torch.allclose(problem.loss(model, b)[0], problem.loss(model, noisy)[0])
        assert same != changes, protocol


# ------------------------------------------------------------------ strict kinds on the tape


def test_tape_tasks_have_the_strict_kinds_that_apply():
    kinds = {name: TapeProblem(get_task(name)).kinds for name in DELETANG_TASKS}
    for name in REGULAR:
        assert kinds[name] == ("task", *TASK_KINDS), name
    for name in ("modular_arithmetic_brackets", "solve_equation"):
        assert kinds[name] == ("task", "near_miss"), name
    assert all(k == ("task",) for n, k in kinds.items()
               if n not in REGULAR and n not in ("modular_arithmetic_brackets", "solve_equation"))
    # options the automaton does not model: no automaton kinds
    assert TapeProblem(get_task("cycle_navigation", cycle_length=7)).kinds == ("task",)
    with pytest.raises(ValueError, match="kinds: task, near_miss"):
        TapeProblem(get_task("solve_equation")).check_kinds(["paper"])


def _one_edit_away(task, row: np.ndarray) -> set[int]:
    """Labels of every substitution and adjacent swap of ``row`` (task symbols)."""
    out = set()
    for i in range(len(row)):
        for a in range(len(task.input_vocab)):
            if a != row[i]:
                x = row.copy()
                x[i] = a
                try:
                    out.add(int(task.label(x)[0][0, 0]))
                except ValueError:  # not a task string (e.g. an ill-formed expression)
                    pass
    for i in range(len(row) - 1):
        x = row.copy()
        x[i], x[i + 1] = x[i + 1], x[i]
        try:
            out.add(int(task.label(x)[0][0, 0]))
        except ValueError:
            pass
    return out


@pytest.mark.parametrize("name", sorted(REGULAR))
def test_regular_tape_near_misses_are_one_edit_from_another_class(name):
    problem = TapeProblem(get_task(name))
    L = 7
    b = problem.kind_batch(np.random.default_rng(0), L, 24, "near_miss")
    assert len(b["lengths"]) == 24
    inputs = b["tokens"][:, :L]
    labels = b["targets"][:, 0]
    lang = problem.automaton
    to_lang = np.array([lang.alphabet.index(a) if a in lang.alphabet else -1
                        for a in problem.task.input_vocab])
    np.testing.assert_array_equal(lang.classify(to_lang[inputs], np.full(24, L)), labels)
    for row, y in zip(inputs, labels):  # brute force: some edit reaches another class
        assert _one_edit_away(problem.task, row) - {int(y)}, (name, row)


def test_bracket_and_equation_near_misses():
    from monoidlab.tasks.base import RandomStream
    from monoidlab.tasks.dcf import _edit_until

    mab = get_task("modular_arithmetic_brackets")
    b = mab.sample_near_miss(0, 16, 23)
    np.testing.assert_array_equal(b.targets, mab.label(b.inputs)[0])  # well formed, relabelled
    stream = RandomStream(np.random.default_rng(1))
    for _ in range(20):
        toks, val = generate_bracket_expression(stream, 17, 5, ("+", "-", "*"))
        got = _edit_until(stream, toks, val, 5, [str(d) for d in range(5)], ("+", "-", "*"))
        if got is None:
            continue
        edited, new = got
        assert sum(a != b for a, b in zip(toks, edited)) == 1 and new != val
        assert evaluate_brackets(edited, 5) == new
    se = get_task("solve_equation")
    base = se.sample(np.random.default_rng(4), 32, 15)  # sample_near_miss draws this first
    near = se.sample_near_miss(np.random.default_rng(4), 32, 15)
    assert ((near.inputs != base.inputs).sum(1) == 1).all()  # one digit substituted
    assert (near.targets != base.targets).all()  # every such edit moves the solution


class TapeOracle(torch.nn.Module):
    """Answers every classification task right, reading the task's labeller."""

    def __init__(self, task):
        super().__init__()
        self.task = task
        self.dummy = torch.nn.Parameter(torch.zeros(()))

    def forward_all(self, tokens, lengths):
        x = tokens[:, :-1].numpy()  # the tape minus its one empty token
        y = torch.as_tensor(self.task.label(x)[0][:, 0])
        out = torch.zeros(*tokens.shape, self.task.n_classes)
        out[:, -1] = torch.nn.functional.one_hot(y, self.task.n_classes).float()
        return out + self.dummy


@pytest.mark.parametrize("name", [*sorted(REGULAR), "modular_arithmetic_brackets",
                                  "solve_equation"])
def test_strict_tape_evaluation_solves_an_oracle_and_fails_a_constant(name):
    from monoidlab.evaluation import evaluate_kinds

    problem = TapeProblem(get_task(name), protocol="paper")
    lengths = [21, 22]  # both parities (modular_arithmetic: 22 has no expression of its own)
    ev = evaluate_kinds(TapeOracle(problem.task), problem, lengths, 12, seed=0)
    assert ev.solved and ev.scored_kinds == list(problem.kinds), ev.verdict()

    class Constant(TapeOracle):
        def forward_all(self, tokens, lengths):
            return torch.zeros(*tokens.shape, self.task.n_classes) + self.dummy

    bad = evaluate_kinds(Constant(problem.task), problem, lengths, 12, seed=0)
    assert not bad.solved
    assert all(0 < bad.majority[k][L] <= 1 for k in bad.scored_kinds for L in bad.accuracy[k])


# ------------------------------------------------------------------ sweeps: lrs and the paper


def test_sweep_lrs_axis_and_errors(tmp_path):
    from monoidlab.errors import ConfigError
    from monoidlab.training.sweep import load_sweep

    f = tmp_path / "s.toml"
    f.write_text('[sweep]\ntasks = ["parity_check"]\nmodels = ["rnn"]\nseeds = [0, 1]\n'
                 'lrs = [1e-3, 3e-4]\n[base]\nlr = 0.5\n')
    runs = load_sweep(f)["runs"]
    assert [r["id"] for r in runs] == ["parity_check__rnn__lr0.001__s0",
                                       "parity_check__rnn__lr0.001__s1",
                                       "parity_check__rnn__lr0.0003__s0",
                                       "parity_check__rnn__lr0.0003__s1"]
    assert [r["config"].lr for r in runs] == [1e-3, 1e-3, 3e-4, 3e-4]
    f.write_text('[sweep]\ntasks = ["parity_check"]\nmodels = ["rnn"]\nlrs = [0]\n')
    with pytest.raises(ConfigError, match="'lrs'"):
        load_sweep(f)


def test_summarise_sets_the_paper_beside_and_names_disagreements(tmp_path):
    from monoidlab.training.sweep import summarise

    ev = {"kinds": ["task"], "solved_kinds": ["task"], "threshold": 0.99}

    def row(task, model, lr, score, pooled, per_string, low=None):
        return {"id": f"{task}__{model}__lr{lr}__s0", "problem": task, "model": model,
                "seed": 0, "lr": lr, "paper_score": score,
                "min_task": score if low is None else low,
                "solved": pooled, "solved_pooled": pooled, "solved_per_string": per_string,
                "verdict": "", "steps": 1, "train_seconds": 1.0, "device": "cpu",
                "evaluation": ev}

    rows = [row("a", "rnn", 0.001, 0.75, False, False, low=0.5),
            row("a", "rnn", 0.003, 0.7, False, True, low=0.6),
            row("b", "rnn", 0.001, 1.0, True, True), row("b", "rnn", 0.003, 0.2, False, False)]
    paper = {"source": "Table 2", "scores": {"rnn": {"a": 100.0, "b": 52.0}},
             "solved": {"pr-lstm": 6}}
    res = summarise({"out": str(tmp_path), "title": "T", "runs": [], "source": "x.toml",
                     "paper": paper}, rows)
    md = res["summary_md"]
    # the best run's minimum accuracy, then the best score over the runs (best-of selection)
    assert "| a | 0/2: 0.600 (0.750) · paper 1.000 |" in md
    assert "| b | **1/2: 1.000 (1.000)** · paper 0.520 |" in md
    assert "| paper: score >= 90% | 1/2 |" in md
    assert "disagree on *solved* in 1 of 4 runs: a (rnn, lr0.003__s0: pooled not solved, " \
           "per-string solved)" in md
    csv = (tmp_path / "results.csv").read_text().splitlines()
    assert csv[0].startswith("id,problem,model,seed,lr,solved,solved_pooled,solved_per_string")


@pytest.mark.parametrize("module", ["monoidlab.models.stack_rnn", "monoidlab.models.tape_rnn",
                                    "monoidlab.models.recurrent", "monoidlab.evaluation.packing",
                                    "monoidlab.training.problems", "monoidlab.evaluation",
                                    "monoidlab.tasks.cs", "monoidlab.tasks.dcf"])
def test_doctests(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted and not result.failed
