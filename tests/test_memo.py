"""Tests for monoidlab.models.memo: the hash-consed eval-mode reduction equals the plain
level-by-level one (MLP-LDRU in eval mode uses it), on mixed lengths and alphabets."""

import numpy as np
import pytest
import torch

from monoidlab.models.memo import memo_levels
from monoidlab.models.mlp_ldru import MLPLDRU

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.parametrize(("vocab", "operator"), [(2, "mlp"), (5, "mlp"), (3, "gated-sum")])
def test_eval_forward_equals_the_plain_reduction(vocab, operator, monkeypatch):
    from monoidlab.models import memo

    calls = []
    real = memo.memo_roots
    monkeypatch.setattr(memo, "memo_roots", lambda *a: calls.append(1) or real(*a))
    torch.manual_seed(0)
    model = MLPLDRU(vocab, 3, d=16, operator=operator).eval()
    rng = np.random.default_rng(0)
    lengths = torch.as_tensor(rng.integers(1, 300, 40))
    tokens = torch.as_tensor(rng.integers(0, vocab, (40, 300)))
    with torch.no_grad():
        memo = model(tokens, lengths)  # eval, no offsets: the memoised path
        plain = model(tokens, lengths, offsets=torch.zeros_like(lengths))  # level by level
    torch.testing.assert_close(memo, plain, atol=1e-4, rtol=1e-4)
    assert calls == [1]  # the eval forward took the memoised path, the offsets one did not
    model.train()
    with torch.no_grad():
        model.drop.p = 0.0
        model(tokens, lengths)  # training mode: dropout differs per node, never memoised
    assert calls == [1]


def test_distinct_subtrees_only():
    leaves = (torch.tensor([[1.0], [10.0], [0.0]]),)
    ids = torch.tensor([[0, 1, 0, 1, 2, 2, 2, 2], [1, 0, 0, 1, 0, 1, 2, 2]])
    calls = []

    def combine(a, b):
        calls.append(len(a[0]))
        return (a[0] * 3 + b[0],)  # not commutative: order matters

    tables, level_ids = memo_levels(leaves, ids, combine)
    # level 1 pairs: (0,1), (0,1), (2,2), (2,2) and (1,0), (0,1), (0,1), (2,2): 3 distinct
    assert calls[0] == 3 and level_ids[1].tolist()[0] == [level_ids[1][0, 0].item()] * 2 + \
        [level_ids[1][0, 2].item()] * 2
    root = tables[-1][0][level_ids[-1][:, 0]].flatten()
    def direct(row):
        v = [leaves[0][i].item() for i in row]
        while len(v) > 1:
            v = [v[i] * 3 + v[i + 1] for i in range(0, len(v), 2)]
        return v[0]
    assert root.tolist() == [direct(r) for r in ids.tolist()]
