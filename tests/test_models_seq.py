"""Tests for the sequence baselines: RNN, LSTM and the Transformer with every position encoding.

Properties checked: the common interface's shapes, invariance to right padding, causality,
agreement with a naive attention reference, and that tiny models memorise parity strings.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from monoidlab.models import build_model
from monoidlab.models.positions import available_position_encodings
from monoidlab.models.recurrent import LSTMClassifier, RNNClassifier
from monoidlab.models.transformer import (
    TransformerClassifier,
    TransformerStack,
    gather_last,
    padding_mask,
)

POSITIONS = available_position_encodings()
VOCAB, CLASSES = 3, 4


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def tiny(kind: str, **kw):
    """A small model of each class; ``kind`` = rnn, lstm or a position encoding name."""
    if kind == "rnn":
        return RNNClassifier(VOCAB, CLASSES, hidden=12)
    if kind == "lstm":
        return LSTMClassifier(VOCAB, CLASSES, hidden=12)
    if kind.startswith("randomized"):
        kw = {"seed": 0, **kw}
    return TransformerClassifier(
        VOCAB, CLASSES, d_model=16, n_layers=2, n_heads=4, position=kind, **kw
    )


KINDS = ["rnn", "lstm", *POSITIONS]


def batch(B=3, T=6, lengths=(6, 4, 1)):
    return torch.randint(0, VOCAB, (B, T)), torch.tensor(lengths)


# ---------------------------------------------------------------- interface


@pytest.mark.parametrize("kind", KINDS)
def test_shapes_of_the_common_interface(kind):
    model = tiny(kind).train()  # training mode too: randomized positions, dropout
    tokens, lengths = batch()
    assert model(tokens, lengths).shape == (3, CLASSES)
    assert model.forward_all(tokens, lengths).shape == (3, 6, CLASSES)
    hidden = 12 if kind in ("rnn", "lstm") else 16
    assert model.eval().prefix_states(tokens, lengths).shape == (3, 6, hidden)


@pytest.mark.parametrize("kind", KINDS)
def test_forward_reads_forward_all_at_length_minus_one(kind):
    model = tiny(kind).eval()
    tokens, lengths = batch()
    assert torch.allclose(
        model(tokens, lengths), gather_last(model.forward_all(tokens, lengths), lengths),
        atol=1e-6,
    )


def test_registry_builds_the_sequence_models():
    for name, cls in [("rnn", RNNClassifier), ("lstm", LSTMClassifier),
                      ("transformer", TransformerClassifier)]:
        model = build_model(name, vocab_size=2, n_classes=2)
        assert type(model) is cls
    defaults = build_model("transformer", vocab_size=2, n_classes=2)
    assert len(defaults.stack.blocks) == 5 and defaults.stack.blocks[0].attn.n_heads == 8
    assert defaults.stack.d_model == 64 and defaults.stack.norm == "post"
    assert build_model("lstm", vocab_size=2, n_classes=2).hidden == 256


# ---------------------------------------------------------------- padding and causality


PADDING_CASES = [("rnn", False, "post"), ("lstm", False, "post")] + [
    (kind, causal, "post") for kind in POSITIONS for causal in (False, True)
] + [("fire", False, "pre"), ("randomized-rope", True, "pre")]


@pytest.mark.parametrize("kind,causal,norm", PADDING_CASES)
def test_right_padding_does_not_change_forward(kind, causal, norm):
    model = (tiny(kind) if kind in ("rnn", "lstm") else tiny(kind, causal=causal, norm=norm))
    model.eval()
    tokens, lengths = batch()
    ref, ref_all = model(tokens, lengths), model.forward_all(tokens, lengths)
    for garbage in (torch.randint(0, VOCAB, (3, 5)), torch.full((3, 5), 99)):  # 99: not an id
        longer = torch.cat([tokens, garbage], dim=1)
        assert torch.allclose(model(longer, lengths), ref, atol=1e-5)
        out_all = model.forward_all(longer, lengths)
        real = ~padding_mask(lengths, 6)
        assert torch.allclose(out_all[:, :6][real], ref_all[real], atol=1e-5)
    # the garbage already inside the batch (rows 1, 2) does not matter either
    scrambled = tokens.clone()
    scrambled[1, 4:], scrambled[2, 1:] = 2, 1
    assert torch.allclose(model(scrambled, lengths), ref, atol=1e-5)


@pytest.mark.parametrize("kind", ["rnn", "lstm", *POSITIONS])
def test_causal_outputs_ignore_later_tokens(kind):
    model = tiny(kind) if kind in ("rnn", "lstm") else tiny(kind, causal=True)
    model.eval()
    tokens, lengths = torch.randint(0, VOCAB, (2, 8)), torch.tensor([8, 8])
    out = model.forward_all(tokens, lengths)
    for t in (0, 3, 6):
        changed = tokens.clone()
        changed[:, t + 1:] = (changed[:, t + 1:] + 1) % VOCAB
        other = model.forward_all(changed, lengths)
        assert torch.allclose(other[:, : t + 1], out[:, : t + 1], atol=1e-5)
        assert not torch.allclose(other[:, t + 1:], out[:, t + 1:], atol=1e-5)


def test_bidirectional_encoder_sees_later_tokens():
    model = tiny("sinusoidal").eval()
    tokens, lengths = torch.zeros(1, 5, dtype=torch.long), torch.tensor([5])
    changed = tokens.clone()
    changed[0, 4] = 1
    assert not torch.allclose(
        model.forward_all(tokens, lengths)[:, 0], model.forward_all(changed, lengths)[:, 0]
    )


def test_sdpa_is_causal_fast_path_equals_explicit_mask():
    stack = TransformerStack(VOCAB, d_model=16, n_layers=2, n_heads=4, position="rope",
                             causal=True).eval()
    tokens = torch.randint(0, VOCAB, (2, 7))
    no_padding = torch.zeros(2, 7, dtype=torch.bool)
    assert torch.allclose(stack.encode(tokens), stack.encode(tokens, key_padding_mask=no_padding),
                          atol=1e-6)


# ---------------------------------------------------------------- reference attention


def _reference_encode(stack, tokens, positions, pad, causal):
    """Naive re-implementation (explicit softmax, Python loops over the mask), post-LN."""
    h = stack.token_embedding(tokens) * math.sqrt(stack.d_model)
    pe = stack.position
    if pe.has_embedding:
        h = h + pe.embed(positions)
    B, T, D = h.shape
    for block in stack.blocks:
        attn = block.attn
        H, dh = attn.n_heads, attn.d_head
        w = attn.qkv.weight
        q, k, v = ((h @ w[i * D:(i + 1) * D].T).view(B, T, H, dh).transpose(1, 2)
                   for i in range(3))
        if pe.has_rotation:
            q, k = pe.rotate(q, k, positions, positions)
        scores = q @ k.transpose(-1, -2) / math.sqrt(dh)
        if pe.has_bias:
            scores = scores + pe.attention_bias(positions, positions, causal)
        for b in range(B):
            for i in range(T):
                for j in range(T):
                    if (causal and j > i) or pad[b, j]:
                        scores[b, :, i, j] = -float("inf")
        y = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, D) @ attn.out.weight.T
        h = block.ln1(h + y)
        h = block.ln2(h + block.ff(h))
    return h


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("position", ["none", "sinusoidal", "alibi", "rope", "fire"])
def test_attention_matches_naive_reference(position, causal):
    stack = TransformerStack(VOCAB, d_model=16, n_layers=2, n_heads=4, position=position,
                             causal=causal).eval()
    tokens, lengths = batch()
    pad = padding_mask(lengths, 6)
    positions = torch.tensor([[0, 2, 3, 7, 8, 9]])  # explicit, non-contiguous positions
    with torch.no_grad():
        ours = stack.encode(tokens, positions, pad)
        ref = _reference_encode(stack, tokens, positions, pad, causal)
    assert torch.allclose(ours, ref, atol=1e-5)


# ---------------------------------------------------------------- positions in the model


def test_explicit_positions_override_the_default():
    model = tiny("learned").eval()
    tokens, lengths = batch()
    same = model(tokens, lengths, positions=torch.arange(6).expand(3, 6))
    assert torch.allclose(same, model(tokens, lengths), atol=1e-6)
    hinted = model(tokens, lengths, positions=torch.arange(6).expand(3, 6) + 10)
    assert not torch.allclose(hinted, same, atol=1e-4)


def test_learned_positions_too_long_for_the_model_raise():
    model = TransformerClassifier(VOCAB, 2, d_model=16, n_layers=1, n_heads=2,
                                  position="learned", max_len=8)
    model(torch.zeros(1, 8, dtype=torch.long), torch.tensor([8]))
    with pytest.raises(ValueError, match="covers positions 0..7, got position 8"):
        model(torch.zeros(1, 9, dtype=torch.long), torch.tensor([9]))


def test_randomized_positions_vary_in_training_and_not_in_eval():
    model = tiny("randomized-sinusoidal", dropout=0.0)
    tokens, lengths = batch()
    model.train()
    assert not torch.allclose(model(tokens, lengths), model(tokens, lengths))
    model.eval()
    assert torch.equal(model(tokens, lengths), model(tokens, lengths))


def test_fire_bias_per_layer_or_shared():
    def fire_params(model):
        return sum(p.numel() for n, p in model.named_parameters() if "mlp" in n)

    shared = tiny("fire")
    separate = tiny("fire", share_position_bias=False)
    assert fire_params(separate) == 2 * fire_params(shared)  # 2 layers
    tokens, lengths = batch()
    assert separate(tokens, lengths).shape == (3, CLASSES)


def test_bos_token_breaks_the_relative_encodings_blind_spot():
    """Without an anchor, purely relative encodings give 1^n the same state for every n."""
    ones = torch.ones(3, 5, dtype=torch.long)
    lengths = torch.tensor([1, 2, 5])
    blind = tiny("rope").eval()
    out = blind(ones, lengths)
    assert torch.allclose(out[0], out[1], atol=1e-5) and torch.allclose(out[0], out[2], atol=1e-5)
    anchored = tiny("rope", bos=True).eval()
    out = anchored(ones, lengths)
    assert not torch.allclose(out[0], out[1], atol=1e-4)
    assert anchored.forward_all(ones, lengths).shape == (3, 5, CLASSES)


# ---------------------------------------------------------------- prefix states


@pytest.mark.parametrize("kind", ["rnn", "lstm", "sinusoidal", "fire"])
def test_prefix_states_are_the_states_read_after_each_prefix(kind):
    model = tiny(kind).eval()
    tokens, lengths = batch()
    states = model.prefix_states(tokens, lengths)
    relu = kind in ("rnn", "lstm")
    for t in range(6):
        sub_lengths = lengths.clamp(max=t + 1)
        want = model(tokens[:, : t + 1], sub_lengths)
        got = model.head(F.relu(states[:, t]) if relu else states[:, t])
        keep = t < lengths  # positions past the length are padding
        assert torch.allclose(got[keep], want[keep], atol=1e-5)


def test_causal_prefix_states_are_one_pass():
    model = tiny("alibi", causal=True).eval()
    tokens, lengths = batch()
    states = model.prefix_states(tokens, lengths)
    for t in range(6):
        want = model(tokens[:, : t + 1], lengths.clamp(max=t + 1))
        keep = t < lengths
        assert torch.allclose(model.head(states[:, t])[keep], want[keep], atol=1e-5)


# ---------------------------------------------------------------- learning


def parity_strings(n=16, max_len=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, max_len + 1, (n,), generator=g)
    tokens = torch.randint(0, 2, (n, max_len), generator=g)
    labels = tokens.masked_fill(padding_mask(lengths, max_len), 0).sum(1) % 2
    return tokens, lengths, labels


OVERFIT = {
    "rnn": lambda: RNNClassifier(2, 2, hidden=32),
    "lstm": lambda: LSTMClassifier(2, 2, hidden=32),
    # Delétang's setting: bidirectional, post-LN, absolute positions
    "transformer-sinusoidal": lambda: TransformerClassifier(
        2, 2, d_model=32, n_layers=2, n_heads=4, dropout=0.0, position="sinusoidal"),
    "transformer-rope": lambda: TransformerClassifier(
        2, 2, d_model=32, n_layers=2, n_heads=4, dropout=0.0, position="rope", bos=True),
    # relative biases memorise easily as causal decoders with a BOS anchor
    "decoder-alibi": lambda: TransformerClassifier(
        2, 2, d_model=32, n_layers=2, n_heads=4, dropout=0.0, position="alibi", causal=True,
        bos=True),
    "decoder-fire": lambda: TransformerClassifier(
        2, 2, d_model=32, n_layers=2, n_heads=4, dropout=0.0, position="fire", causal=True,
        bos=True),
    "decoder-nope": lambda: TransformerClassifier(
        2, 2, d_model=32, n_layers=2, n_heads=4, dropout=0.0, position="none", causal=True,
        bos=True),
}


@pytest.mark.parametrize("name", sorted(OVERFIT))
def test_tiny_models_memorise_sixteen_parity_strings(name):
    torch.manual_seed(0)
    model = OVERFIT[name]()
    tokens, lengths, labels = parity_strings()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(500):
        loss = F.cross_entropy(model(tokens, lengths), labels)
        if loss.item() < 0.02:
            break
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    assert (model(tokens, lengths).argmax(-1) == labels).all(), f"final loss {loss.item():.3f}"
