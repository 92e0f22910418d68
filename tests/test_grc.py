"""BBT-GRC and RIR-GRC (monoidlab/models/grc.py): the Gated Recursive Cell against its equation,
both models against a per-string reference that keeps its beams as Python lists, padding and
batch independence, and the models through the trainer (a language, ListOps, resume) and the
registry's refusals."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from monoidlab.errors import ConfigError, InputError
from monoidlab.evaluation.kinds import KINDS, TASK_KINDS
from monoidlab.models import build_model, model_spec
from monoidlab.models.grc import BeamTree, GatedRecursiveCell
from monoidlab.models.protocols import Classifier, PrefixModel
from monoidlab.training import RunConfig, train
from monoidlab.training.parse import config_from_dict

# --------------------------------------------------------------------------- the reference


def reference_beam_tree(tree: BeamTree, nodes: list[torch.Tensor]) -> torch.Tensor:
    """One string's beam tree, the slow way: each beam a Python list of node vectors and a
    score; every pair of every beam scored from scratch at every step; the candidates sorted by
    score and the best ``tree.beam`` kept; the roots averaged with the softmax of the scores."""
    beams = [(list(nodes), torch.zeros(()))]
    while len(beams[0][0]) > 1:
        candidates = []
        for b, (seq, score) in enumerate(beams):
            logits = torch.stack([tree.pair_logits(seq[p][None], seq[p + 1][None])[0]
                                  for p in range(len(seq) - 1)])
            logp = F.log_softmax(logits, 0)
            candidates += [(score + logp[p], b, p) for p in range(len(seq) - 1)]
        candidates.sort(key=lambda c: -float(c[0]))  # best first, ties in order
        new = []
        for score, b, p in candidates[:tree.beam]:
            seq = beams[b][0]
            parent = tree.cell(seq[p][None], seq[p + 1][None])[0]
            new.append((seq[:p] + [parent] + seq[p + 2:], score))
        beams = new
    weights = torch.softmax(torch.stack([s for _, s in beams]), 0)
    return sum(w * seq[0] for w, (seq, _) in zip(weights, beams))


def reference_rir(tree: BeamTree, nodes: list[torch.Tensor], chunk: int) -> torch.Tensor:
    """RIR by hand: chunks of ``chunk`` nodes from the left, each to one vector, repeated."""
    while len(nodes) > 1:
        nodes = [reference_beam_tree(tree, nodes[c:c + chunk])
                 for c in range(0, len(nodes), chunk)]
    return nodes[0]


def reference_logits(model, tokens, lengths) -> torch.Tensor:
    out = []
    for row, L in zip(tokens, lengths.tolist()):
        leaves = model.leaf(model.embed(row[:L]))
        nodes = [leaves[t] for t in range(L)]
        if model.options.__class__.__name__ == "RIRGRCOptions":
            root = reference_rir(model.tree, nodes, model.options.chunk)
        else:
            root = reference_beam_tree(model.tree, nodes)
        out.append(model.head(root))
    return torch.stack(out)


def _batch(seed: int, B: int, T: int, vocab: int):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, T + 1, (B,), generator=g)
    lengths[0] = T  # the longest fills the row; the others are padded
    tokens = torch.randint(0, vocab, (B, T), generator=g)
    pad = torch.arange(T)[None] >= lengths[:, None]
    return tokens.masked_fill(pad, 99), lengths  # padding ids outside the vocabulary


# --------------------------------------------------------------------------- the cell


def test_the_gated_recursive_cell_is_its_equation():
    torch.manual_seed(0)
    cell = GatedRecursiveCell(5).eval()
    left, right = torch.randn(7, 5), torch.randn(7, 5)
    z = cell.w2(F.gelu(cell.w1(torch.cat([left, right], -1))))
    f_l, f_r, i, p = z[:, :5], z[:, 5:10], z[:, 10:15], z[:, 15:]
    x = torch.sigmoid(f_l) * left + torch.sigmoid(f_r) * right + torch.sigmoid(i) * p
    x = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + 1e-5)
    expected = x * cell.norm.weight + cell.norm.bias
    assert torch.allclose(cell(left, right), expected, atol=1e-6)


# --------------------------------------------------------------------------- fast = reference


@pytest.mark.parametrize("name, options", [
    ("bbt-grc", {"d": 8, "beam": 3}),
    ("bbt-grc", {"d": 8, "beam": 1, "scorer": "children"}),
    ("bbt-grc", {"d": 6, "beam": 5, "scorer": "children"}),
    ("rir-grc", {"d": 8, "beam": 2, "chunk": 3}),
    ("rir-grc", {"d": 8, "beam": 3, "chunk": 4, "scorer": "parent"}),
])
def test_the_batched_models_equal_the_per_string_reference(name, options):
    """Random weights, random strings of lengths 1..13 in one padded batch (padding ids out of
    the vocabulary): float32 logits within 1e-5 of the reference, string by string."""
    torch.manual_seed(1)
    model = build_model(name, 5, 4, dropout=0.0, **options).eval()
    with torch.no_grad():  # scores spread wide enough that beams differ
        for p in model.tree.score.parameters():
            p.mul_(4.0)
    tokens, lengths = _batch(2, 9, 13, 5)
    with torch.no_grad():
        fast = model(tokens, lengths)
        slow = reference_logits(model, tokens, lengths)
    assert fast.dtype == torch.float32
    assert (fast - slow).abs().max().item() <= 1e-5


@pytest.mark.parametrize("name", ["bbt-grc", "rir-grc"])
def test_a_string_does_not_depend_on_its_padding_or_its_batch(name):
    torch.manual_seed(3)
    model = build_model(name, 4, 3, d=8, chunk=3, dropout=0.0).eval() if name == "rir-grc" \
        else build_model(name, 4, 3, d=8, dropout=0.0).eval()
    tokens, lengths = _batch(4, 6, 11, 4)
    with torch.no_grad():
        together = model(tokens, lengths)
        alone = torch.cat([model(tokens[b:b + 1, :lengths[b]], lengths[b:b + 1])
                           for b in range(len(lengths))])
        wider = model(torch.cat([tokens, torch.zeros(6, 5, dtype=torch.long)], 1), lengths)
    assert torch.allclose(together, alone, atol=1e-5)
    assert torch.allclose(together, wider, atol=1e-5)


def test_one_node_is_its_own_root_and_the_gradient_reaches_the_scorer():
    torch.manual_seed(5)
    tree = BeamTree(6, beam=4)
    h = torch.randn(3, 7, 6, requires_grad=True)
    out = tree(h, torch.tensor([1, 7, 4]))
    assert torch.equal(out[0], h[0, 0])
    out.sum().backward()
    assert torch.isfinite(h.grad).all()
    assert h.grad[0, 1:].abs().sum() == 0 and h.grad[2, 4:].abs().sum() == 0  # padding
    assert tree.score.weight.grad.abs().sum() > 0  # through the beams' weights


def test_beam_one_is_the_greedy_merge_order():
    """With beam 1 the tree merges, at each step, the pair with the highest score."""
    torch.manual_seed(6)
    tree = BeamTree(4, beam=1).eval()
    h = torch.randn(1, 5, 4)
    nodes = [h[0, t] for t in range(5)]
    with torch.no_grad():
        while len(nodes) > 1:
            s = [tree.pair_logits(nodes[p], nodes[p + 1]).item() for p in range(len(nodes) - 1)]
            p = max(range(len(s)), key=s.__getitem__)
            nodes = nodes[:p] + [tree.cell(nodes[p], nodes[p + 1])] + nodes[p + 2:]
        assert torch.allclose(tree(h, torch.tensor([5]))[0], nodes[0], atol=1e-6)


# --------------------------------------------------------------------------- registry, options


def test_registry_entries_declare_a_classifier_only():
    for name in ("bbt-grc", "rir-grc"):
        spec = model_spec(name)
        assert spec.capabilities == frozenset({Classifier}) and spec.schedule is None
        assert not isinstance(spec.build(3, 2, {"d": 4}), PrefixModel)
    assert model_spec("rir-grc").make_options().chunk == 30
    with pytest.raises(InputError, match="option 'chunk': an integer >= 2, got int 1"):
        model_spec("rir-grc").make_options({"chunk": 1})
    with pytest.raises(InputError, match="option 'scorer': unknown value 'parnet' "
                                         r"\(did you mean 'parent'\?\)"):
        model_spec("bbt-grc").make_options({"scorer": "parnet"})


@pytest.mark.parametrize("keys, needle", [
    ({"task": "reverse_string", "model": "bbt-grc"},
     "model 'bbt-grc' cannot learn a tape task (a prediction at every position)"),
    ({"language": "parity", "model": "rir-grc", "offsets": "random"},
     "key 'offsets': model 'rir-grc' cannot train at random offsets"),
    ({"language": "parity", "model": "bbt-grc", "assoc_weight": 0.1},
     "model 'bbt-grc' cannot take assoc_weight"),
    ({"language": "parity", "model": "bbt-grc", "sampler": "covering"},
     "model 'bbt-grc' has none"),
    ({"task": "listops", "model": "rir-grc", "task_options": {"max_dpth": 3}},
     "key 'task_options': task 'listops' has no option(s) ['max_dpth']"),
])
def test_what_the_models_cannot_serve_is_refused_when_the_config_is_built(keys, needle):
    with pytest.raises(ConfigError) as info:
        config_from_dict(keys, "my.toml")
    assert needle in str(info.value) and "\n" not in str(info.value)


# --------------------------------------------------------------------------- through the trainer


def _cfg(**kw) -> RunConfig:
    base = dict(model="bbt-grc", model_options={"d": 8, "beam": 2}, steps=6, device="cpu",
                batch_size=8, test_samples=8, checkpoint_every=3, log_every=1, seed=0)
    base.update(kw)
    return RunConfig(**base)


@pytest.mark.parametrize("keys", [
    {"language": "parity", "train_lengths": "1:8", "test_lengths": "9:10"},
    {"task": "listops", "train_lengths": "4:12", "test_lengths": "13:14", "model": "rir-grc",
     "model_options": {"d": 8, "chunk": 4}},
])
def test_a_paused_run_resumes_bit_identically_and_is_evaluated_strictly(tmp_path, keys):
    cfg = _cfg(**keys)
    full = train(cfg, tmp_path / "full", progress=False)
    paused = train(cfg, tmp_path / "p", progress=False, stop_at=3)
    assert paused["paused"] and paused["steps"] == 3
    resumed = train(cfg, tmp_path / "p", resume=True, progress=False)
    assert resumed["accuracy"] == full["accuracy"]
    a = torch.load(tmp_path / "full" / "checkpoint.pt", weights_only=True)["model"]
    b = torch.load(tmp_path / "p" / "checkpoint.pt", weights_only=True)["model"]
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    kinds = set(KINDS) if "language" in keys else {"task"}
    assert set(full["accuracy"]) == kinds == set(full["evaluation"]["solved_kinds"])
    assert isinstance(full["solved"], bool) and full["verdict"]
    assert all(0.0 <= v <= 1.0 for acc in full["accuracy"].values() for v in acc.values()
               if not math.isnan(v))


def test_a_one_output_deletang_task_is_read_at_the_end_of_its_tape(tmp_path):
    """parity_check on the tape (input, one empty token): the classifier reads the whole tape;
    the run is scored on the task's strings and on the automaton's near misses."""
    result = train(_cfg(task="parity_check", train_lengths="1:6", test_lengths="7:8", steps=2),
                   tmp_path / "r", progress=False)
    assert set(result["accuracy"]) == {"task", *TASK_KINDS}
    assert result["evaluation"]["summary"][0]["majority"] >= 0.5


@pytest.mark.parametrize("name", ["bbt-grc", "rir-grc"])
def test_ties_between_beams_never_depend_on_the_batch(name):
    """A two-letter language gives many identical children, hence exactly tied pair scores:
    each string gets the same logits alone, in its own length's batch and in a batch of many
    lengths (float64, so that only the tie-breaking could differ)."""
    import monoidlab as ml
    from monoidlab.evaluation import to_device
    from monoidlab.evaluation.packing import concat_batches
    from monoidlab.models import build_model
    from monoidlab.training.problems import LanguageProblem

    p = LanguageProblem(ml.load_language("dyck-2"))
    torch.manual_seed(0)
    m = build_model(name, p.vocab_size, p.n_classes, d=8, dropout=0.0).eval().double()
    batches = [b for L in range(3, 21)
               for b in [p.kind_batch(p.eval_rng(0, "near_miss", L), L, 8, "near_miss")]
               if len(b["lengths"])]
    with torch.no_grad():
        packed = to_device(concat_batches(batches), "cpu")
        together = m(packed["tokens"], packed["lengths"])
        per_length = torch.cat([m(torch.as_tensor(b["tokens"]), torch.as_tensor(b["lengths"]))
                                for b in batches])
        alone = torch.cat([m(packed["tokens"][i:i + 1, :int(n)], packed["lengths"][i:i + 1])
                           for i, n in enumerate(packed["lengths"])])
    torch.testing.assert_close(per_length, alone, rtol=0, atol=1e-12)
    torch.testing.assert_close(together, alone, rtol=0, atol=1e-12)


# --------------------------------------------------------------------------- batched evaluation


def _same(a, b) -> bool:
    import json

    return json.dumps(a.as_dict(), sort_keys=True) == json.dumps(b.as_dict(), sort_keys=True)


def _problem(which):
    import monoidlab as ml
    from monoidlab.tasks import get_task
    from monoidlab.training.problems import LanguageProblem, TapeProblem

    if which in ("parity", "dyck-2"):
        return LanguageProblem(ml.load_language(which))
    return TapeProblem(get_task(which))


@pytest.mark.parametrize("name", ["bbt-grc", "rir-grc"])
@pytest.mark.parametrize("which, lengths", [("parity", range(2, 15)), ("listops", range(6, 19)),
                                            ("parity_check", range(2, 12))])
def test_the_batched_evaluation_equals_the_unbatched_one_exactly(name, which, lengths):
    """float32, random weights with wide scores (beams differ): the test sets of every length
    of the range, 10 strings each in chunks of 4 (which share a call with the other chunks and
    kinds of their length; a tape of one output is read by the classifier), give the same
    evaluation, number for number, as one call per chunk."""
    from monoidlab.evaluation import evaluate_kinds

    p = _problem(which)
    torch.manual_seed(0)
    m = build_model(name, p.vocab_size, p.n_classes, d=8, chunk=3, dropout=0.0).eval() \
        if name == "rir-grc" else build_model(name, p.vocab_size, p.n_classes, d=8).eval()
    with torch.no_grad():
        for q in m.tree.score.parameters():
            q.mul_(4.0)
    fast = evaluate_kinds(m, p, lengths, 10, seed=1, batch_size=4)
    slow = evaluate_kinds(m, p, lengths, 10, seed=1, batch_size=4, batched=False)
    assert _same(fast, slow)
    acc = fast.by_measure["pooled"]["task"] if which != "parity" else fast.accuracy["paper"]
    assert len(acc) >= 8  # every length was scored


@pytest.mark.parametrize("name", ["bbt-grc", "rir-grc"])
def test_rows_of_one_length_get_the_same_bits_in_any_call(name):
    """What eval_group relies on: the kinds of one length stacked in one float32 call give
    each string the logits of its own kind's call and of its call alone up to float rounding
    (the row count changes the matrix products' blocking: ~1e-7, not bit for bit), hence the
    same beams and the same answer; another padded width would move them by up to 0.01."""
    from monoidlab.evaluation import to_device
    from monoidlab.evaluation.packing import concat_batches

    p = _problem("dyck-2")
    torch.manual_seed(2)
    m = build_model(name, p.vocab_size, p.n_classes, d=8, dropout=0.0).eval()
    with torch.no_grad():
        for L in (6, 11, 16):
            batches = [b for k in ("paper", "near_miss", "ec_stratified")
                       for b in [p.kind_batch(p.eval_rng(0, k, L), L, 7, k)] if len(b["lengths"])]
            packed = to_device(concat_batches(batches), "cpu")
            together = m(packed["tokens"], packed["lengths"])
            per_kind = torch.cat([m(torch.as_tensor(b["tokens"]), torch.as_tensor(b["lengths"]))
                                  for b in batches])
            alone = torch.cat([m(packed["tokens"][i:i + 1], packed["lengths"][i:i + 1])
                               for i in range(len(packed["lengths"]))])
            assert len(batches) >= 2
            for other in (per_kind, alone):
                torch.testing.assert_close(together, other, rtol=0, atol=1e-6)
                assert torch.equal(together.argmax(-1), other.argmax(-1))


def test_lengths_never_share_a_call_and_one_output_tapes_are_grouped():
    """Different padded widths round the pair log-softmax differently (near-tied beams flip),
    so each length is its own group; a tape of one output is read by the classifier, one of
    several outputs (reverse_string) cannot be, and is never grouped."""
    from monoidlab.evaluation.packing import length_group

    m = build_model("bbt-grc", 4, 2, d=4)
    lang, listops, reverse = _problem("parity"), _problem("listops"), _problem("reverse_string")
    assert [length_group(m, lang, L) for L in (5, 6, 64)] == [5, 6, 64]
    assert length_group(m, listops, 20) == 20
    assert length_group(m, reverse, 20) is None
    assert length_group(build_model("rnn", 4, 2, hidden=4), reverse, 20) is not None
