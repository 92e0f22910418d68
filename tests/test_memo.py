"""MLP-LDRU in eval mode computes every distinct subtree once (hash-consing; it replaced
monoidlab/models/memo.py, whose intent these tests keep): the shared reduction equals the plain
level-by-level one on mixed lengths and alphabets, with and without offsets, the low levels are
tables of distinct blocks, and training with dropout never shares."""

import numpy as np
import pytest
import torch
from references import old_mlp_ldru_forward

from monoidlab.models.mlp_ldru import MLPLDRU

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.parametrize(("vocab", "operator"), [(2, "mlp"), (5, "mlp"), (3, "gated-sum")])
def test_eval_forward_equals_the_plain_reduction(vocab, operator):
    torch.manual_seed(0)
    model = MLPLDRU(vocab, 3, d=16, operator=operator).eval()
    rng = np.random.default_rng(0)
    lengths = torch.as_tensor(rng.integers(1, 300, 40))
    tokens = torch.as_tensor(rng.integers(0, vocab, (40, 300)))
    with torch.no_grad():
        shared = model(tokens, lengths)  # eval: distinct blocks shared
        offsets = torch.as_tensor(rng.integers(0, 50, 40))
        shifted = model(tokens, lengths, offsets=offsets)  # shared too, padding on both sides
        model.memo_limit = 0  # level by level
        plain = model(tokens, lengths)
        plain_shifted = model(tokens, lengths, offsets=offsets)
        assert all(lv.ids is None for lv in model._tree(tokens, lengths, 300, None)[0][1:])
        model.memo_limit = MLPLDRU.memo_limit
        torch.testing.assert_close(shared, plain, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(shifted, plain_shifted, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(shared, old_mlp_ldru_forward(model, tokens, lengths),
                                   atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(shifted, old_mlp_ldru_forward(model, tokens, lengths, offsets),
                                   atol=1e-5, rtol=1e-5)
        for offs in (None, offsets):
            levels = model._tree(tokens, lengths, 300, offs)[0]
            assert levels[1].ids is not None and levels[-1].ids is None  # shared, then plain
    model.train()  # dropout differs per node: never shared
    assert all(lv.ids is None for lv in model._tree(tokens, lengths, 300, None)[0])


def test_distinct_subtrees_only():
    """Count the operator's rows: a level computes each distinct pair present once."""
    torch.manual_seed(0)
    model = MLPLDRU(2, 2, d=8).eval()
    model.memo_limit = 1  # no all-pairs tables: only the pairs present
    calls = []
    real = model._post
    model._post = lambda h: calls.append(h.shape[:-1].numel()) or real(h)
    tokens = torch.tensor([[0, 1, 0, 1, 1, 1, 1, 1], [1, 0, 0, 1, 1, 1, 1, 1]] * 8)
    with torch.no_grad():
        out = model(tokens, torch.full((16,), 8))
    # level 1: pairs (0,1), (1,1), (1,0) + the padding pair: 4 rows; level 2: (01,01),
    # (11,11), (10,01) + padding: 4; level 3: 2 distinct strings + padding: 3 rows; level 3 has
    # 16 nodes, so it is computed as a table too; the padding constant: 1 row per level
    assert calls == [1, 4, 1, 4, 1, 3]
    torch.testing.assert_close(out, old_mlp_ldru_forward(model, tokens, torch.full((16,), 8)))
