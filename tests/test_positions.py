"""Tests for monoidlab.models.positions: each encoding's formula and invariances."""

from __future__ import annotations

import math

import pytest
import torch

from monoidlab.models.positions import (
    FIRE,
    ALiBi,
    LearnedPositions,
    RandomizedPositions,
    RoPE,
    alibi_slopes,
    available_position_encodings,
    make_position_encoding,
    sinusoid_table,
)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


# ---------------------------------------------------------------- factory


@pytest.mark.parametrize("name", available_position_encodings())
def test_every_name_builds_with_consistent_hooks(name):
    pe = make_position_encoding(name, d_model=16, n_heads=4, max_len=64)
    pos = pe.eval().make_positions(batch_size=2, length=5, device="cpu")
    assert pos.shape == (1, 5) and pos.dtype == torch.long
    assert torch.equal(pos[0], torch.arange(5))
    emb = pe.embed(pos)
    assert (emb is not None) == pe.has_embedding
    if emb is not None:
        assert emb.shape == (1, 5, 16)
    bias = pe.attention_bias(pos, pos, causal=False)
    assert (bias is not None) == pe.has_bias
    if bias is not None:
        assert bias.shape == (1, 4, 5, 5)
    q, k = torch.randn(2, 4, 5, 4), torch.randn(2, 4, 5, 4)
    q2, k2 = pe.rotate(q, k, pos, pos)
    assert (not torch.equal(q, q2)) == pe.has_rotation


def test_unknown_names_and_options_fail_clearly():
    with pytest.raises(ValueError, match="unknown position encoding 'xpos'.*known: alibi"):
        make_position_encoding("xpos", 16, 4)
    with pytest.raises(ValueError, match="randomized-none"):
        make_position_encoding("randomized-none", 16, 4)
    with pytest.raises(ValueError, match="unknown option.*'c_init'"):
        make_position_encoding("alibi", 16, 4, c_init=0.5)
    with pytest.raises(ValueError, match="eval_positions"):
        make_position_encoding("randomized-rope", 16, 4, eval_positions="sometimes")


def test_randomized_options_reach_wrapper_and_base():
    pe = make_position_encoding(
        "randomized-fire", 16, 4, max_randomized_len=100, seed=3, c_init=0.5, mlp_hidden=8
    )
    assert isinstance(pe, RandomizedPositions) and isinstance(pe.base, FIRE)
    assert pe.max_randomized_len == 100 and pe.seed == 3
    assert pe.base.c.item() == 0.5 and pe.base.mlp[0].out_features == 8
    learned = make_position_encoding("randomized-learned", 16, 4, max_len=50, max_randomized_len=300)
    assert learned.base.max_len == 300  # the table covers every position it can be given


# ---------------------------------------------------------------- sinusoidal, learned


def test_sinusoid_table_values():
    table = sinusoid_table(torch.tensor([[0, 3]]), dim=4, max_timescale=100.0)
    assert torch.allclose(table[0, 0], torch.tensor([0.0, 0.0, 1.0, 1.0]))
    # w_0 = 1, w_1 = 100^(-2/4) = 0.1
    expected = torch.tensor([math.sin(3), math.sin(0.3), math.cos(3), math.cos(0.3)])
    assert torch.allclose(table[0, 1], expected, atol=1e-6)


def test_learned_positions_past_max_len_raise_value_error():
    pe = LearnedPositions(8, 2, max_len=10)
    assert pe.embed(torch.arange(10)[None]).shape == (1, 10, 8)
    with pytest.raises(ValueError, match=r"covers positions 0\.\.9, got position 10.*max_len"):
        pe.embed(torch.arange(11)[None])


# ---------------------------------------------------------------- ALiBi


def test_alibi_slopes_for_eight_heads_are_powers_of_two():
    assert torch.equal(alibi_slopes(8), torch.tensor([2.0**-k for k in range(1, 9)]))
    assert torch.allclose(alibi_slopes(4), torch.tensor([2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8]))


def test_alibi_bias_causal_and_bidirectional():
    pe = ALiBi(16, 8)
    pos = torch.arange(4)[None]
    causal = pe.attention_bias(pos, pos, causal=True)[0]
    bidir = pe.attention_bias(pos, pos, causal=False)[0]
    for h, m in enumerate(alibi_slopes(8).tolist()):
        for i in range(4):
            for j in range(4):
                if j <= i:  # the part a causal mask keeps
                    assert causal[h, i, j].item() == pytest.approx(-m * (i - j))
                # Delétang's encoder: -m|i-j|, plus m/2 for keys on the left
                want = -m * abs(i - j) + (0.5 * m if j < i else 0.0)
                assert bidir[h, i, j].item() == pytest.approx(want)


# ---------------------------------------------------------------- RoPE


def _rope_scores(pe, q, k, pos):
    qr, kr = pe.rotate(q, k, pos, pos)
    return qr @ kr.transpose(-1, -2)


def test_rope_scores_depend_only_on_relative_offsets():
    pe = RoPE(32, 4)  # d_head 8
    q, k = torch.randn(2, 4, 6, 8), torch.randn(2, 4, 6, 8)
    pos = torch.tensor([[0, 1, 2, 3, 4, 5], [0, 3, 4, 9, 20, 21]])
    base = _rope_scores(pe, q, k, pos)
    for shift in (1, 17, 400):
        assert torch.allclose(_rope_scores(pe, q, k, pos + shift), base, atol=1e-3)
    # and positions matter: spreading them out changes the scores
    assert not torch.allclose(_rope_scores(pe, q, k, pos * 3), base, atol=1e-3)


def test_rope_is_a_rotation_and_identity_at_zero():
    pe = RoPE(16, 2)
    q = torch.randn(1, 2, 3, 8)
    qr, _ = pe.rotate(q, q, torch.tensor([[0, 5, 9]]), torch.tensor([[0, 5, 9]]))
    assert torch.allclose(qr[..., 0, :], q[..., 0, :])
    assert torch.allclose(qr.norm(dim=-1), q.norm(dim=-1), atol=1e-5)
    # pair (0, 1) turns by angle p * 1, as in Delétang's apply_rotary_encoding
    c, s = math.cos(5), math.sin(5)
    x0, x1 = q[0, 0, 1, 0].item(), q[0, 0, 1, 1].item()
    assert qr[0, 0, 1, 0].item() == pytest.approx(x0 * c - x1 * s, abs=1e-5)
    assert qr[0, 0, 1, 1].item() == pytest.approx(x0 * s + x1 * c, abs=1e-5)


# ---------------------------------------------------------------- FIRE


def _fire_by_hand(pe: FIRE, i: int, j: int) -> list[float]:
    c, L = pe.c.item(), abs(pe.L_mult.item() * pe.L_base)

    def psi(x):
        return math.log(abs(c * x) + 1)

    x = math.copysign(1, i - j) * psi(i - j) / psi(max(L, i)) if i != j else 0.0
    w1, b1 = pe.mlp[0].weight[:, 0].tolist(), pe.mlp[0].bias.tolist()
    w2, b2 = pe.mlp[2].weight.tolist(), pe.mlp[2].bias.tolist()
    hidden = [max(0.0, w * x + b) for w, b in zip(w1, b1)]
    return [sum(wh * hh for wh, hh in zip(row, hidden)) + bh for row, bh in zip(w2, b2)]


def test_fire_bias_matches_hand_computation():
    # L_base 2 so that the normaliser max(L, i) switches from L to i inside the example
    pe = FIRE(8, 2, mlp_hidden=4, c_init=0.3, L_base=2.0, L_mult_init=1.5)
    pos = torch.tensor([[0, 1, 2, 3, 5]])
    for causal in (True, False):
        bias = pe.attention_bias(pos, pos, causal=causal)
        assert bias.shape == (1, 2, 5, 5)
        for a, i in enumerate(pos[0].tolist()):
            for b, j in enumerate(pos[0].tolist()):
                if causal and j > i:
                    continue
                want = _fire_by_hand(pe, i, j)
                assert bias[0, :, a, b].tolist() == pytest.approx(want, abs=1e-5)


def test_fire_defaults_match_design():
    pe = FIRE(64, 8)
    assert pe.c.item() == pytest.approx(0.1) and pe.L_mult.item() == 1.0 and pe.L_base == 512
    assert [type(m).__name__ for m in pe.mlp] == ["Linear", "ReLU", "Linear"]
    assert (pe.mlp[0].in_features, pe.mlp[0].out_features, pe.mlp[2].out_features) == (1, 32, 8)


def test_fire_is_shift_invariant_only_up_to_the_normaliser():
    pe = FIRE(16, 4, L_base=64.0)
    pos = torch.arange(10)[None]
    base = pe.attention_bias(pos, pos, causal=True)
    # while every query position stays below L, psi(max(L, i)) = psi(L): a pure function of i-j
    assert torch.allclose(pe.attention_bias(pos + 30, pos + 30, causal=True), base, atol=1e-6)
    # past L the normaliser grows with i, so the bias changes under a shift ...
    far = pe.normalised_offsets(pos + 1000, pos + 1000)
    assert not torch.allclose(far, pe.normalised_offsets(pos, pos), atol=1e-4)
    # ... but multiplying the normaliser back out leaves a function of i-j only
    def unnormalised(p):
        return pe.normalised_offsets(p, p) * pe.psi(torch.maximum(
            torch.tensor(64.0), p.float()))[..., None]

    assert torch.allclose(unnormalised(pos + 1000), unnormalised(pos), atol=1e-4)


def test_fire_bidirectional_uses_the_signed_offset_and_trains_c_and_L():
    pe = FIRE(16, 4)
    pos = torch.arange(6)[None]
    x = pe.normalised_offsets(pos, pos)[0]
    assert (x.triu(1) <= 0).all() and (x.tril(-1) >= 0).all() and (x.diagonal() == 0).all()
    # below L the normaliser is the same for every i, so x is antisymmetric
    assert torch.allclose(x, -x.T, atol=1e-6)
    pe.attention_bias(pos, pos, causal=False).sum().backward()
    assert pe.c.grad is not None and pe.c.grad != 0 and pe.L_mult.grad != 0


# ---------------------------------------------------------------- randomized


def test_randomized_training_positions_are_sorted_distinct_and_in_range():
    pe = make_position_encoding("randomized-rope", 16, 4, max_randomized_len=50, seed=0).train()
    for length in (1, 7, 50):
        pos = pe.make_positions(batch_size=3, length=length, device="cpu")
        assert pos.shape == (1, length)
        assert (pos[:, 1:] > pos[:, :-1]).all()  # strictly increasing = sorted and distinct
        assert pos.min() >= 0 and pos.max() < 50
    per_row = make_position_encoding(
        "randomized-rope", 16, 4, max_randomized_len=50, share_across_batch=False, seed=0
    ).make_positions(batch_size=3, length=7, device="cpu")
    assert per_row.shape == (3, 7) and (per_row[:, 1:] > per_row[:, :-1]).all()
    assert not torch.equal(per_row[0], per_row[1])
    with pytest.raises(ValueError, match="cannot draw 51 distinct positions"):
        pe.make_positions(batch_size=1, length=51, device="cpu")


def test_randomized_positions_are_reproducible_by_seed():
    def draws(seed):
        pe = make_position_encoding("randomized-learned", 16, 4, seed=seed)
        return [pe.make_positions(2, 10, "cpu") for _ in range(3)]

    a, b, c = draws(7), draws(7), draws(8)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not torch.equal(a[0], a[1])  # successive draws differ
    assert not torch.equal(a[0], c[0])
    # without a seed, torch's global RNG decides
    torch.manual_seed(5)
    g1 = make_position_encoding("randomized-alibi", 16, 4).make_positions(1, 10, "cpu")
    torch.manual_seed(5)
    g2 = make_position_encoding("randomized-alibi", 16, 4).make_positions(1, 10, "cpu")
    assert torch.equal(g1, g2)


def test_randomized_eval_positions_arange_by_default_and_random_on_request():
    pe = make_position_encoding("randomized-sinusoidal", 16, 4, seed=0).eval()
    assert torch.equal(pe.make_positions(4, 9, "cpu"), torch.arange(9)[None])
    rnd = make_position_encoding(
        "randomized-sinusoidal", 16, 4, seed=0, eval_positions="random", max_randomized_len=30
    ).eval()
    pos = rnd.make_positions(4, 9, "cpu")
    assert (pos[:, 1:] > pos[:, :-1]).all() and not torch.equal(pos, torch.arange(9)[None])


def test_randomized_delegates_contributions_to_its_base():
    pe = make_position_encoding("randomized-fire", 16, 4, seed=0)
    pos = pe.make_positions(1, 6, "cpu")
    assert pe.has_bias and not pe.has_embedding and not pe.has_rotation
    assert torch.equal(pe.attention_bias(pos, pos, True), pe.base.attention_bias(pos, pos, True))
    assert sum(p.numel() for p in pe.parameters()) == sum(p.numel() for p in pe.base.parameters())
