"""bench/bench_bracketing.py: scoring a string under another bracketing.

The recomputed tree must be the model's own forward at the contiguous placement; an exactly
associative model (element-wise sum, no post block) must give the same logits under every
placement, and the paper's operator at random weights must not (so the check can fail); a run
folder is scored end to end.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

from monoidlab.models.mlp_ldru import MLPLDRU


@pytest.fixture(scope="module")
def mod(bench_script):
    return bench_script("bench_bracketing")


def _strings(L, n=16, seed=0):
    return torch.as_tensor(np.random.default_rng(seed).integers(0, 3, (n, L)))


def test_random_positions_are_increasing_and_inside_the_buffer(mod):
    pos = mod.random_positions(np.random.default_rng(0), 200, 7, 16)
    assert pos.shape == (200, 7)
    assert (np.diff(pos, axis=1) > 0).all() and pos.min() >= 0 and pos.max() <= 15
    assert len({tuple(r) for r in pos}) > 150  # fresh placements, not one
    with pytest.raises(ValueError, match="buffer 4 < string length 7"):
        mod.random_positions(np.random.default_rng(0), 1, 7, 4)


@pytest.mark.parametrize("L", [1, 2, 5, 8, 13, 40])
def test_the_contiguous_placement_is_the_model_forward(mod, L):
    torch.manual_seed(0)
    model = MLPLDRU(3, 2, d=8, dropout=0.0, padding="identity").eval()
    t = _strings(L)
    with torch.no_grad():
        same = mod.logits_at_positions(model, t, np.tile(np.arange(L), (len(t), 1)), L)
        torch.testing.assert_close(same, model(t, torch.full((len(t),), L)), atol=1e-5,
                                   rtol=1e-5)


def test_an_associative_operator_is_bracketing_invariant_and_the_paper_one_is_not(mod):
    torch.manual_seed(0)
    summed = MLPLDRU(3, 2, d=8, dropout=0.0, padding="identity", operator="sum",
                     post_block=False).eval()
    paper = MLPLDRU(3, 2, d=8, dropout=0.0, padding="identity").eval()
    t = _strings(30)
    pos = mod.random_positions(np.random.default_rng(1), len(t), 30, 512)
    with torch.no_grad():
        torch.testing.assert_close(mod.logits_at_positions(summed, t, pos, 512),
                                   summed(t, torch.full((len(t),), 30)), atol=1e-4, rtol=1e-4)
        moved = mod.logits_at_positions(paper, t, pos, 512)
        gap = (moved - paper(t, torch.full((len(t),), 30))).abs().max()
    assert gap > 1e-2


def test_a_run_folder_is_scored_and_a_learned_padding_is_refused(mod, tiny_ldru_run, tmp_path):
    res = mod.measure(tiny_ldru_run, np.array([9, 12]), 8, 16)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)  # not main's 1, so that a thread count left behind shows
    try:
        assert mod.main([str(tiny_ldru_run.parent), "--lengths", "9:12:3", "--samples", "8",
                         "--buffer", "16"]) == 0  # the folder above a run stands for its runs
        # main must leave the process as it found it: later tests train
        assert torch.is_grad_enabled() and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(threads)
    assert set(res) == {"paper", "near_miss", "ec_stratified"}
    for bal, rnd, maj in res.values():
        assert len(bal) == len(rnd) == len(maj) == 2
        assert ((0 <= rnd) & (rnd <= 1)).all() and maj.shape == (2, 2)
        assert ((0.5 <= maj) & (maj <= 1)).all() and (maj[:, 1] >= maj[:, 0]).all()
    run = tmp_path / tiny_ldru_run.name  # a copy: the shared run stays as it is
    shutil.copytree(tiny_ldru_run, run)
    cfg = json.loads((run / "config.json").read_text())
    cfg["model_options"]["padding"] = "learned"
    (run / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(SystemExit, match="padding = 'identity'"):
        mod.measure(run, np.array([9]), 8, 16)
