"""Batched evaluation (monoidlab.evaluation.packing): test batches of several lengths stacked
into one padded call give every string the prediction it gets in its own per-length call, for
every model family of the registry, on a regular language and on Delétang tasks; and the
evaluation built on it equals the per-length one (``batched=False``, the slow reference)."""

import json

import numpy as np
import pytest
import torch

import monoidlab as ml
from monoidlab.evaluation import evaluate_kinds, to_device
from monoidlab.evaluation.kinds import KINDS
from monoidlab.evaluation.packing import (
    GroupedModel,
    concat_batches,
    length_group,
    row_splits,
    tape_counts,
)
from monoidlab.models import REGISTRY, build_model, model_spec
from monoidlab.models.positions import available_position_encodings
from monoidlab.models.protocols import GenerativeModel, PrefixModel, TapeModel
from monoidlab.tasks import get_task
from monoidlab.training.problems import LanguageProblem, TapeProblem

pytestmark = pytest.mark.usefixtures("one_torch_thread")

#: small sizes for any option a model has (the tests check equality, not learning)
TINY = {"hidden": 8, "d": 8, "d_model": 16, "n_layers": 1, "n_heads": 2, "stack_size": 4,
        "stack_cell": 2, "memory_size": 6, "memory_cell": 2, "mlp": (8,), "dropout": 0.0}
#: the families whose test batches are stacked (they define ``eval_group``); decoder-lm decodes
#: next tokens prompt by prompt, and a family without ``eval_group`` is scored batch by batch
FAMILIES = sorted(n for n, s in REGISTRY.items() if issubclass(s.model_class(), GroupedModel))
VARIANTS = [(n, {}) for n in FAMILIES] + [
    ("mlp-ldru", {"padding": "identity"}),
    ("transformer", {"bos": True}),
    ("transformer", {"causal": True}),
    *[("transformer", {"position": p}) for p in available_position_encodings()
      if p != "sinusoidal"],
]
LENGTHS = range(3, 21)
#: families whose groups are one length each: rows of another padded width may get other
#: answers (the GRC models' beams; tests/test_grc.py checks rows of one length)
ONE_WIDTH = {"bbt-grc", "rir-grc"}
#: the families that read a tape of several outputs (reverse_string, binary_addition); a
#: Classifier (the GRC models) reads only one-output tapes (parity_tape)
TAPE_FAMILIES = [n for n in FAMILIES
                 if model_spec(n).can(PrefixModel) or model_spec(n).can(TapeModel)]


def tiny_model(name, problem, **options):
    names = model_spec(name).options_class().names()
    opts = {k: v for k, v in TINY.items() if k in names}
    torch.manual_seed(0)
    return build_model(name, problem.vocab_size, problem.n_classes, **{**opts, **options}).eval()


def same(a, b):
    """Two evaluations' JSON forms are equal (NaN baselines included)."""
    return json.dumps(a.as_dict(), sort_keys=True) == json.dumps(b.as_dict(), sort_keys=True)


@pytest.fixture(scope="module")
def dyck2():
    return LanguageProblem(ml.load_language("dyck-2"))


@pytest.fixture(scope="module")
def offsets():
    return LanguageProblem(ml.load_language("parity"), offsets="random")  # tested at offset 0


@pytest.fixture(scope="module")
def reverse():
    return TapeProblem(get_task("reverse_string"))


@pytest.fixture(scope="module")
def addition():  # scored positions differ per string: both accuracy definitions matter
    return TapeProblem(get_task("binary_addition"), protocol="paper")


@pytest.fixture(scope="module")
def parity_tape():  # a classification tape with the automaton's kinds
    return TapeProblem(get_task("parity_check"))


def drawn(problem, kind, lengths, n=6):
    """The test batches of one kind at several lengths, as the evaluation draws them."""
    batches = [problem.kind_batch(problem.eval_rng(0, kind, L), L, n, kind) for L in lengths]
    return [b for b in batches if len(b["lengths"])]  # a kind may have no string at a length


@pytest.mark.parametrize(("name", "options"), [v for v in VARIANTS if v[0] not in ONE_WIDTH],
                         ids=lambda v: str(v))
def test_stacked_rows_get_their_own_predictions(name, options, dyck2):
    """The strings of several lengths in one padded call: logits (hence predictions) of each
    string equal those of its own per-length call; MLP-LDRU's stacks hold one buffer."""
    model = tiny_model(name, dyck2, **options)
    # every model reads mixed rows right (MLP-LDRU: within one buffer, all its groups allow)
    buffer = length_group(model, dyck2, 9) if name == "mlp-ldru" else None
    lengths = [L for L in LENGTHS if buffer is None or length_group(model, dyck2, L) == buffer]
    assert len(lengths) >= 4
    batches = drawn(dyck2, "near_miss", lengths) + drawn(dyck2, "ec_stratified", lengths)
    with torch.no_grad():
        packed = to_device(concat_batches(batches), "cpu")
        together = model(packed["tokens"], packed["lengths"])
        alone = torch.cat([model(*(torch.as_tensor(b[k]) for k in ("tokens", "lengths")))
                           for b in batches])
    assert packed["tokens"].shape[1] == max(lengths)  # padded: lengths really mixed
    assert torch.equal(together.argmax(-1), alone.argmax(-1))
    torch.testing.assert_close(together, alone, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", TAPE_FAMILIES, ids=str)
@pytest.mark.parametrize("task", ["reverse", "addition"])
def test_stacked_tapes_score_each_row_at_its_own_outputs(name, task, request):
    """Tapes of several lengths in one call: per row, right and scored positions equal what
    the problem scores on its own tape (Tape-RNN jumps by each row's input length)."""
    problem = request.getfixturevalue(task)
    model = tiny_model(name, problem)
    assert length_group(model, problem, 5) is not None
    batches = drawn(problem, "task", range(3, 12))
    with torch.no_grad():
        h, n = tape_counts(model, to_device(concat_batches(batches), "cpu"))
        ref = [problem.eval_counts(model, to_device(b, "cpu")) for b in batches]
    cuts = row_splits(batches)
    for (hr, nr), hp, np_ in zip(ref, np.split(h.numpy(), cuts), np.split(n.numpy(), cuts)):
        assert np.array_equal(hp, hr.numpy()) and np.array_equal(np_, nr.numpy())


@pytest.mark.parametrize(("name", "options"), VARIANTS[:len(FAMILIES) + 3], ids=lambda v: str(v))
def test_batched_evaluation_equals_the_per_length_one_on_a_language(name, options, dyck2):
    model = tiny_model(name, dyck2, **options)
    # a small budget: several calls, each of several lengths
    fast = evaluate_kinds(model, dyck2, LENGTHS, 8, seed=3, max_tokens=300)
    slow = evaluate_kinds(model, dyck2, LENGTHS, 8, seed=3, batched=False)
    assert same(fast, slow)
    assert fast.accuracy["paper"] and fast.single_class["paper"]  # odd lengths: reported apart


@pytest.mark.parametrize("padding", ["learned", "identity"])
def test_batched_evaluation_of_a_model_trained_at_offsets(padding, offsets):
    """A run with random offsets is tested at offset 0: the same stacked calls."""
    model = tiny_model("mlp-ldru", offsets, padding=padding)
    fast = evaluate_kinds(model, offsets, LENGTHS, 8, seed=1, max_tokens=200)
    assert same(fast, evaluate_kinds(model, offsets, LENGTHS, 8, seed=1, batched=False))


@pytest.mark.parametrize(("task", "name"), [(t, n) for t in ("reverse", "addition", "parity_tape")
                                            for n in FAMILIES
                                            if t == "parity_tape" or n in TAPE_FAMILIES])
def test_batched_evaluation_equals_the_per_length_one_on_tasks(name, task, request):
    problem = request.getfixturevalue(task)
    model = tiny_model(name, problem)
    fast = evaluate_kinds(model, problem, range(2, 14), 8, seed=2, max_tokens=250)
    slow = evaluate_kinds(model, problem, range(2, 14), 8, seed=2, batched=False)
    assert same(fast, slow)
    assert fast.by_measure["pooled"]["task"]


def test_a_length_without_strings_keeps_its_place(dyck2):
    """near_miss has no string at length 1 of dyck-2 (listed unavailable) and the lengths
    around it are still recorded in order."""
    model = tiny_model("rnn", dyck2)
    fast = evaluate_kinds(model, dyck2, range(1, 9), 4, seed=0, max_tokens=64)
    slow = evaluate_kinds(model, dyck2, range(1, 9), 4, seed=0, batched=False)
    assert same(fast, slow)
    assert list(fast.single_class["near_miss"]) == sorted(fast.single_class["near_miss"])


def test_every_classifying_family_is_stacked():
    assert {"mlp-ldru", "pr-lstm", "pr-rnn", "rnn", "lstm", "stack-rnn", "tape-rnn",
            "transformer"} <= set(FAMILIES)
    assert not model_spec("decoder-lm").can(GenerativeModel) or "decoder-lm" not in FAMILIES


def test_what_may_share_a_call(dyck2):
    ldru = tiny_model("mlp-ldru", dyck2)
    assert [length_group(ldru, dyck2, L) for L in (5, 8, 9, 16, 17)] == [8, 8, 16, 16, 32]
    random_eval = tiny_model("transformer", dyck2, position="randomized-rope",
                             eval_positions="random", seed=0)
    assert length_group(random_eval, dyck2, 5) is None  # one draw of positions per call
    assert length_group(torch.nn.Linear(2, 2), dyck2, 5) is None  # a stub: alone
    from monoidlab.training.next_token import addition_problem

    lm = tiny_model("decoder-lm", addition_problem())
    assert length_group(lm, addition_problem(), 5) is None  # decoded prompt by prompt


def test_a_call_holds_at_most_max_tokens(dyck2, monkeypatch):
    import monoidlab.evaluation.run as run

    calls = []
    real = run.concat_batches

    def spy(batches):
        out = real(batches)
        calls.append((len(batches), out["tokens"].shape[0] * out["tokens"].shape[1]))
        return out

    monkeypatch.setattr(run, "concat_batches", spy)
    evaluate_kinds(tiny_model("stack-rnn", dyck2), dyck2, LENGTHS, 8, seed=0, max_tokens=100)
    # stacks of several lengths stay within the budget; a batch over it alone is one call
    assert all(tokens <= 100 for n, tokens in calls if n > 1)
    assert any(n > 1 for n, _ in calls) and any(tokens > 100 for _, tokens in calls)
    assert len(calls) < len(KINDS) * len(LENGTHS)


def test_the_progress_bar_says_kind_and_lengths(dyck2, monkeypatch):
    import monoidlab.evaluation.run as run

    seen = {}

    class Bar:
        def __init__(self, **kw):
            seen["desc"], seen["total"], seen["post"], seen["n"] = kw["desc"], kw["total"], [], 0

        def set_postfix_str(self, s, refresh=True):
            seen["post"].append(s)

        def update(self, n):
            seen["n"] += n

        def close(self):
            pass

    monkeypatch.setattr(run, "progress_bar", Bar)
    three = ["paper", "near_miss", "ec_stratified"]  # named: the bar's text is about these
    evaluate_kinds(tiny_model("stack-rnn", dyck2), dyck2, range(3, 9), 4, seed=0, kinds=three,
                   progress=True)
    assert seen["desc"] == "evaluate dyck-2 (3 kinds x 3:8 x 4)"
    assert seen["n"] == seen["total"] == 18
    # near_miss has strings at the even lengths only (odd ones have a single class)
    assert seen["post"] == ["paper, ec_stratified, near_miss at lengths 3-8 (60 strings)"]
    seen.clear()
    evaluate_kinds(tiny_model("rnn", dyck2), dyck2, [5, 6], 4, seed=0, kinds=["paper"],
                   progress=True)
    assert seen["desc"] == "evaluate dyck-2 (1 kind x 5:6 x 4)"
    assert seen["post"] == ["paper at length 5 (4 strings)", "paper at length 6 (4 strings)"]
