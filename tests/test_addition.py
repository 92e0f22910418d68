"""Decimal addition: formats and tokenizer, the decoder LM, the next-token problem, the trainer.

Properties checked: format → parse round trips in every format (random spaces included), hint
alignment (one hint per significance, a random contiguous block), the loss only sees answer
tokens, batched greedy decoding agrees with a one-row-at-a-time reference and stops at
``<eos>``, and the problem runs through ``train`` and the CLI.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from monoidlab.evaluation import to_device as _to_device
from monoidlab.models import build_model
from monoidlab.models.decoder import DecoderLM
from monoidlab.tasks.addition import FORMATS, AdditionTask, AdditionTokenizer, int_to_digits
from monoidlab.training import RunConfig, train
from monoidlab.training.next_token import NextTokenProblem, addition_problem

HINTED = ("index_hints", "combination")


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def segments(tokens: list[str]) -> list[list[str]]:
    """The three numbers' tokens (spaces and padding dropped, up to <eos>)."""
    toks = [t for t in tokens if t not in (" ", "<pad>")]
    toks = toks[: toks.index("<eos>")] if "<eos>" in toks else toks
    i, j = toks.index("+"), toks.index("=")
    return [toks[:i], toks[i + 1: j], toks[j + 1:]]


# -- formats and tokenizer --------------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("space_prob", [0.0, 0.4])
def test_sampled_batches_round_trip(fmt, space_prob, rng):
    task = AdditionTask(fmt, n_hints=32, space_prob=space_prob)
    for L in (1, 3, 12):
        b = task.sample(rng, 64, L, train=True)
        for row, (a, bb, c) in zip(b.tokens, b.numbers()):
            assert c == a + bb
            assert task.parse(row) == (a, bb, c)  # ids
            assert task.parse(task.tokenizer.decode(row)) == (a, bb, c)  # token strings
            assert task.parse(task.render(row)) == (a, bb, c)  # text
        if space_prob:
            assert (b.tokens == task.tokenizer.space_id).any()
        answer = np.arange(b.tokens.shape[1])[None, :] >= b.prompt_lengths[:, None]
        assert not (answer & (b.tokens == task.tokenizer.space_id)).any()  # never in the answer
        assert (b.tokens[np.arange(len(b)), b.lengths - 1] == task.tokenizer.eos_id).all()
        assert (b.tokens[np.arange(len(b)), b.prompt_lengths - 1] == task.tokenizer.eq_id).all()


@given(a=st.integers(0, 10**30), b=st.integers(0, 10**30), fmt=st.sampled_from(FORMATS),
       seed=st.integers(0, 2**16), space_prob=st.sampled_from([0.0, 0.5]))
def test_format_parse_round_trip(a, b, fmt, seed, space_prob):
    task = AdditionTask(fmt, n_hints=40)
    start = seed % (40 - max(len(str(a)), len(str(b))))
    toks = task.format(a, b, hint_start=start, rng=np.random.default_rng(seed),
                       space_prob=space_prob)
    assert toks[-1] == "<eos>"
    assert task.parse(toks) == (a, b, a + b)


def test_the_four_formats_of_one_addition():
    texts = {f: AdditionTask(f, n_hints=8).render(AdditionTask(f, n_hints=8).format(576, 361))
             for f in FORMATS}
    assert texts["standard"] == "576+361=937"
    assert texts["reversed"] == "576+361=739"
    assert texts["index_hints"] == "<h2>5<h1>7<h0>6+<h2>3<h1>6<h0>1=<h2>9<h1>3<h0>7"
    assert texts["combination"] == "<h2>5<h1>7<h0>6+<h2>3<h1>6<h0>1=<h0>7<h1>3<h2>9"
    carry = AdditionTask("combination", n_hints=8).format(99, 1, hint_start=3)
    assert "".join(carry) == "<h4>9<h3>9+<h3>1=<h3>0<h4>0<h5>1<eos>"


def test_tokenizer_is_fixed_and_shared_by_formats():
    vocabs = {AdditionTask(f, n_hints=16).tokenizer.vocab for f in FORMATS}
    assert len(vocabs) == 1
    tok = AdditionTokenizer(16)
    assert tok.vocab_size == 15 + 16 and tok.vocab[tok.eos_id] == "<eos>"
    text = "<h3>1<h2>2 + <h2>9=<h2>1<h3>2<eos><pad>"
    assert "".join(tok.decode(tok.encode(text))) == text
    with pytest.raises(ValueError, match="not in the addition vocabulary"):
        tok.encode("<h16>1")


def test_parse_rejects_misaligned_hints():
    task = AdditionTask("combination", n_hints=16)
    with pytest.raises(ValueError, match="misaligned"):
        task.parse("<h1>5<h0>7+<h1>3<h0>6=<h1>3<h2>3<h3>1")  # answer block shifted by 1
    with pytest.raises(ValueError, match="contiguous"):
        task.parse("<h1>5<h0>7+<h2>3<h0>6=<h0>3<h1>3<h2>1")
    with pytest.raises(ValueError, match="not an addition"):
        AdditionTask("standard").parse("12=3")


@pytest.mark.parametrize("fmt", HINTED)
def test_hint_alignment(fmt, rng):
    n_hints, L = 24, 9
    task = AdditionTask(fmt, n_hints=n_hints)
    b = task.sample(rng, 200, L, train=True)
    tok = task.tokenizer
    starts = set()
    for i in range(len(b)):
        parts = segments(tok.decode(b.tokens[i]))
        lens = (b.a_len[i], b.b_len[i], b.c_len[i])
        hint_of = {}  # significance -> hint index
        for part, n, lsb_first in zip(parts, lens, (False, False, task.reverse)):
            hints = [int(h[2:-1]) for h in part[0::2]]
            assert len(hints) == n
            sig = range(n) if lsb_first else range(n - 1, -1, -1)
            for k, h in zip(sig, hints):
                assert hint_of.setdefault(k, h) == h  # same hint, same significance
        N = max(b.a_len[i], b.b_len[i])
        s = hint_of[0]
        assert [hint_of[k] for k in sorted(hint_of)] == list(range(s, s + len(hint_of)))
        assert 0 <= s <= n_hints - (N + 1)  # the block of N + 1 hints fits
        assert s == b.hint_start[i]
        starts.add(s)
    assert len(starts) > 5  # a random block, not always the first hints


def test_long_operands_get_distinct_hints(rng):
    task = AdditionTask("combination", n_hints=128)
    b = task.sample(rng, 4, 100, train=False)
    tok = task.tokenizer
    for row in b.tokens:
        a_part = segments(tok.decode(row))[0]
        assert len(set(a_part[0::2])) == 100


def test_operand_lengths_train_vs_eval(rng):
    task = AdditionTask("standard")
    b = task.sample(rng, 2000, 6, train=True)
    assert set(b.a_len) == set(b.b_len) == set(range(1, 7))
    assert abs(np.corrcoef(b.a_len, b.b_len)[0, 1]) < 0.1  # drawn independently
    e = task.sample(rng, 50, 6, train=False)
    assert (e.a_len == 6).all() and (e.b_len == 6).all()
    a, bb, _ = zip(*e.numbers())
    assert min(a) >= 10**5 and min(bb) >= 10**5  # no leading zeros


def test_capacity_and_bad_options():
    with pytest.raises(ValueError, match="n_hints"):
        AdditionTask("combination", n_hints=10).sample(np.random.default_rng(0), 2, 10)
    assert AdditionTask("standard").max_digits is None
    with pytest.raises(ValueError, match="unknown addition format"):
        AdditionTask("scratchpad")
    with pytest.raises(ValueError, match="n_hints"):
        addition_problem(format="index_hints", n_hints=8).lengths(range(1, 21))


def test_int_to_digits():
    d, n = int_to_digits([0, 10, 987])
    assert n.tolist() == [1, 2, 3] and d.tolist() == [[0, 0, 0], [0, 1, 0], [7, 8, 9]]


# -- the next-token problem -------------------------------------------------------------------

def tiny_lm(problem, position="fire", **kw):
    torch.manual_seed(0)
    return DecoderLM(problem.vocab_size, problem.n_classes, d_model=16, n_layers=2, n_heads=2,
                     position=position, **kw)


@pytest.mark.parametrize("fmt", ["standard", "combination"])
def test_loss_is_masked_to_the_answer(fmt, rng):
    p = addition_problem(format=fmt, n_hints=16, space_prob=0.3)
    batch = _to_device(p.batch(rng, 5, 8, train=True), "cpu")
    model = tiny_lm(p)
    tokens, mask = batch["tokens"], batch["loss_mask"]
    # the mask selects exactly the predictions of the answer tokens and <eos>
    n_answer = batch["lengths"] - batch["prompt_lengths"]
    assert mask.sum(1).tolist() == n_answer.tolist()
    for i in range(len(tokens)):
        predicted = tokens[i, 1:][mask[i, :-1]].tolist()
        assert predicted[-1] == p.eos_id and p.task.tokenizer.eq_id not in predicted
        assert p.task.tokenizer.plus_id not in predicted
    loss, correct = p.loss(model, batch)
    assert correct.shape == (8,)
    other = dict(batch, targets=batch["targets"].masked_fill(~mask, 7))  # prompt targets
    assert torch.equal(p.loss(model, other)[0], loss)
    flipped = batch["targets"].clone()
    i, t = mask.nonzero()[0]
    flipped[i, t] = (flipped[i, t] + 1) % p.vocab_size
    assert not torch.equal(p.loss(model, dict(batch, targets=flipped))[0], loss)


def test_eval_correct_is_exact_match(rng, monkeypatch):
    p = addition_problem(format="combination", n_hints=16)
    batch = _to_device(p.batch(rng, 4, 6, train=False), "cpu")
    model = tiny_lm(p).eval()
    tokens, plen, lens = batch["tokens"], batch["prompt_lengths"], batch["lengths"]
    width = int((lens - plen).max())
    truth = torch.full((6, width), p.pad_id)
    for i in range(6):
        n = int(lens[i] - plen[i])
        truth[i, :n] = tokens[i, plen[i]: lens[i]]
    wrong = truth.clone()
    wrong[0, 1] = (wrong[0, 1] + 1) % p.vocab_size
    for answer, expected in ((truth, [1.0] * 6), (wrong, [0.0] + [1.0] * 5)):
        monkeypatch.setattr(model, "generate", lambda *a, answer=answer, **k: answer)
        assert p.eval_correct(model, batch).tolist() == expected


# -- greedy decoding --------------------------------------------------------------------------

def reference_greedy(model, prompt: list[int], n: int, eos: int, positions) -> list[int]:
    """One row, one token at a time, no padding: the obviously correct decoder."""
    seq = list(prompt)
    out = []
    for _ in range(n):
        x = torch.tensor([seq])
        nxt = int(model(x, positions=positions[:, : len(seq)])[0, -1].argmax())
        out.append(nxt)
        seq.append(nxt)
        if nxt == eos:
            break
    return out


@pytest.mark.parametrize("position", ["fire", "randomized-fire", "learned", "rope"])
def test_batched_greedy_matches_reference(position, rng):
    p = addition_problem(format="combination", n_hints=16, space_prob=0.5)
    b = _to_device(p.batch(rng, 3, 5, train=True), "cpu")  # ragged prompts (spaces)
    kw = {"max_randomized_len": 128, "eval_positions": "random"} if "randomized" in position else {}
    model = tiny_lm(p, position, **kw).eval()
    plen = b["prompt_lengths"]
    prompt = b["tokens"][:, : int(plen.max())]
    out = model.generate(prompt, plen, 12, eos_id=p.eos_id, pad_id=p.pad_id, seed=3)
    assert out.shape == (5, 12) and out.dtype == torch.long
    positions = model.make_positions(5, int(plen.max()) + 12, "cpu", seed=3)
    for i in range(5):
        ref = reference_greedy(model, prompt[i, : plen[i]].tolist(), 12, p.eos_id, positions)
        assert out[i, : len(ref)].tolist() == ref
        assert (out[i, len(ref):] == p.pad_id).all()


class ScriptedHead(torch.nn.Module):
    """Logits that prefer token 7 at positions < 4 and <eos> from position 4 on."""

    def __init__(self, vocab_size: int, eos: int):
        super().__init__()
        self.vocab_size, self.eos, self.calls = vocab_size, eos, 0

    def forward(self, h):
        self.calls += 1
        logits = torch.zeros(*h.shape[:2], self.vocab_size)
        logits[:, 4:, self.eos] = 1.0
        logits[:, :4, 7] = 1.0
        return logits


def test_generate_stops_at_eos_and_is_deterministic():
    p = addition_problem(format="reversed")
    model = tiny_lm(p).eval()
    prompt = torch.tensor([[5, 6, 2, 7, 3], [5, 2, 7, 3, 0]])
    first = model.generate(prompt, torch.tensor([5, 4]), 6, eos_id=p.eos_id, pad_id=p.pad_id)
    again = model.generate(prompt, torch.tensor([5, 4]), 6, eos_id=p.eos_id, pad_id=p.pad_id)
    assert torch.equal(first, again)
    model.head = ScriptedHead(p.vocab_size, p.eos_id)
    out = model.generate(prompt, torch.tensor([5, 4]), 10, eos_id=p.eos_id, pad_id=p.pad_id)
    # row 0 reads position 4 first: <eos> at once; row 1 writes 7 at position 4, then <eos>
    assert out.tolist() == [[p.eos_id] + [p.pad_id] * 9, [7, p.eos_id] + [p.pad_id] * 8]
    assert model.head.calls == 2  # stopped once every row had produced <eos>


def test_generate_with_random_positions_is_reproducible():
    p = addition_problem(format="combination", n_hints=16)
    model = tiny_lm(p, "randomized-fire", max_randomized_len=128,
                    eval_positions="random").eval()
    prompt = torch.tensor(p.task.tokenizer.encode("<h1>5<h0>7+<h1>3<h0>6="))[None].repeat(2, 1)
    torch.manual_seed(123)
    state = torch.get_rng_state()
    a = model.generate(prompt, None, 8, eos_id=p.eos_id, seed=1)
    b = model.generate(prompt, None, 8, eos_id=p.eos_id, seed=1)
    assert torch.equal(a, b) and torch.equal(a[0], a[1])
    assert torch.equal(torch.get_rng_state(), state)  # the global RNG is untouched


def test_decoder_registry_and_errors():
    m = build_model("decoder-lm", vocab_size=9, n_classes=9, d_model=8, n_layers=1, n_heads=2)
    assert m(torch.zeros(2, 3, dtype=torch.long)).shape == (2, 3, 9)
    with pytest.raises(ValueError, match="n_classes"):
        DecoderLM(vocab_size=9, n_classes=2)


# -- the trainer and the CLI ------------------------------------------------------------------

def test_problem_trains_and_evaluates_per_length(tmp_path):
    cfg = RunConfig(task="addition", model="decoder-lm", steps=3, batch_size=8,
                      train_lengths="4", test_lengths="1:3", test_samples=4, device="cpu",
                      task_options={"format": "combination", "n_hints": 16, "space_prob": 0.2},
                      model_options={"d_model": 16, "n_layers": 1, "n_heads": 2,
                                    "position": "randomized-fire", "max_randomized_len": 64,
                                    "eval_positions": "random"})
    from monoidlab.training import evaluate, load_checkpoint

    res = train(cfg, out_dir=tmp_path / "a", progress=False)
    assert list(res["accuracy"]) == ["task"]  # no automaton: one test kind, the task's own
    assert sorted(res["accuracy"]["task"]) == [1, 2, 3]
    assert res["problem"] == "addition-combination"
    # the accuracies are evaluate()'s exact match on the saved model (3 steps: mostly 0, so
    # equal accuracies alone would say nothing about reproducibility; the weights do)
    model, _, problem, _ = load_checkpoint(tmp_path / "a")
    assert isinstance(problem, NextTokenProblem)
    assert evaluate(model, problem, [1, 2, 3], n_per_length=4,
                    seed=cfg.seed) == res["accuracy"]["task"]
    again = train(cfg, out_dir=tmp_path / "b", progress=False)
    assert again["accuracy"] == res["accuracy"]
    wa, wb = (torch.load(tmp_path / r / "checkpoint.pt", weights_only=True)["model"]
              for r in ("a", "b"))
    assert all(torch.equal(wa[k], wb[k]) for k in wa)  # seeded data, weights and positions
    init = build_model("decoder-lm", vocab_size=problem.vocab_size,
                       n_classes=problem.n_classes, **cfg.model_options.as_dict()).state_dict()
    assert any(not torch.equal(init[k], wa[k]) for k in wa if k in init)
    assert isinstance(addition_problem(), NextTokenProblem)


def test_cli_train_addition(capsys, tmp_path):
    from monoidlab.cli import main

    code = main(["train", "--task", "addition", "--model", "decoder-lm", "--steps=2",
                 "--device=cpu", "--batch_size=8", "--train_lengths=3", "--test_lengths=1:2",
                 "--test_samples=4", "--task_options.format=reversed",
                 "--model_options.d_model=16", "--model_options.n_layers=1",
                 "--model_options.n_heads=2", "--out", str(tmp_path / "run"), "--json"])
    out, err = capsys.readouterr()
    assert code in (0, None), err
    res = json.loads(out)
    assert res["problem"] == "addition-reversed" and set(res["accuracy"]["task"]) == {"1", "2"}
    assert (tmp_path / "run" / "checkpoint.pt").is_file()
