"""The fast paths of issues 14 and 17 compute what the previous implementations computed.

* PR-LSTM / PR-RNN: ``forward`` (final-prefix reduction, shared distinct blocks, fused cells)
  and ``forward_all`` (the scan with a preallocated interleave) against the previous code kept
  in tests/references.py, on lengths sampled from 1..4096, within 1e-5 (float32).
* MLP-LDRU: outputs and gradients (relative to each gradient's scale) of the new step (input block on V + 1 rows, pair view, one
  V_x/V_y linear, constant padding subtrees, shared blocks) against the previous step, in
  training mode (same dropout masks from the same seed) and in eval mode, with offsets.
* PR-LSTM without gradients (issue 35): ``forward_all`` through the row path
  (``monoidlab.models.pr_lstm_rows``) against the general scan that gradients take
  (tests/references.py), float64 to 1e-12, with blocks small enough that every kind of block
  occurs; gradients through the changed level reduction against the previous code.
* ``SyntacticMonoid.element_of``: the compiled labeller against the numpy lock-step path, on
  mixed lengths and several token dtypes, serial and parallel; bad ids still raise.
"""

import numpy as np
import pytest
import torch
from references import (
    general_scan_forward_all,
    old_mlp_ldru_forward,
    old_scan_forward,
    old_scan_forward_all,
)

import monoidlab as ml
from monoidlab.errors import InputError
from monoidlab.models import pr_lstm_rows
from monoidlab.models.mlp_ldru import MLPLDRU
from monoidlab.models.pr_lstm import PRLSTM, PRRNN

pytestmark = pytest.mark.usefixtures("one_torch_thread")
TOL = dict(atol=1e-5, rtol=1e-5)
# lengths 1..4096: the small ones exhaustively-ish, powers of two and their neighbours, random
LENGTHS = [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 100, 127, 129, 255, 256, 257,
           511, 513, 1000, 1023, 1025, 2047, 2049, 3001, 4095, 4096]


def batch(V, B, T, seed, full=True):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, V, (B, T), generator=g)
    lengths = torch.randint(1, T + 1, (B,), generator=g)
    if full:
        lengths[0] = T
    return tokens, lengths


@pytest.mark.parametrize("make", [
    lambda: PRLSTM(3, 4, hidden=8),
    lambda: PRLSTM(2, 3, hidden=8, num_layers=3, init="haiku"),
    lambda: PRRNN(2, 3, hidden=8, num_layers=2),
    lambda: PRRNN(3, 3, hidden=8, activation="relu", leaf_activation=False, init="haiku"),
], ids=["pr-lstm", "pr-lstm-2R-haiku", "pr-rnn", "pr-rnn-authors"])
def test_prefix_scan_models_equal_previous_implementation(make):
    torch.manual_seed(0)
    model = make().eval()
    new_cell = isinstance(model, PRRNN) and model.activation == "relu"  # no previous version:
    # compared with the new scan here, and with the per-node reference in test_models_tree.py
    for i, T in enumerate(LENGTHS):
        tokens, lengths = batch(model.vocab_size, 3, T, seed=i)
        with torch.no_grad():
            if new_cell:
                ref = model.head(torch.relu(gather_scan(model, tokens, lengths)))
            else:
                ref = old_scan_forward(model, tokens, lengths)
            for memo in (4096, 0):
                model.memo_limit = memo
                torch.testing.assert_close(model(tokens, lengths), ref, **TOL)
            if T <= 257 and not new_cell:  # every prefix: the old scan is the cost here
                mask = torch.arange(T) < lengths[:, None]
                torch.testing.assert_close(model.forward_all(tokens, lengths)[mask],
                                           old_scan_forward_all(model, tokens, lengths)[mask],
                                           **TOL)


def gather_scan(model, tokens, lengths):
    """The final states through the (new) scan: forward's reduction must agree with it."""
    from monoidlab.models.common import gather_last

    with torch.no_grad():
        return gather_last(model._scan(tokens[:, : int(lengths.max())])[0], lengths)


def test_pr_lstm_gradients_equal_previous_implementation():
    torch.manual_seed(0)
    model = PRLSTM(3, 4, hidden=8).train()
    for T in (1, 5, 40, 129):
        tokens, lengths = batch(3, 6, T, seed=T)
        grads = []
        for fn in (model, lambda t, n: old_scan_forward(model, t, n)):
            model.zero_grad()
            step_loss(fn(tokens, lengths)).backward()
            grads.append([None if p.grad is None else p.grad.clone() for p in model.parameters()])
        for a, b in zip(*grads):
            assert (a is None) == (b is None)  # length 1: no cell, no cell gradient
            if a is not None:
                assert_grad_close(a, b)


def assert_grad_close(a, b):
    """Within 1e-5 of the gradient's own scale (1 at least): the ablation operators' gradients
    reach 1e16 at length 129 from their identity init, where float32 keeps ~7 digits."""
    scale = max(1.0, float(b.abs().max()))
    err = float((a - b).abs().max())
    assert err <= 1e-5 * scale, f"gradient differs by {err:.3g} (scale {scale:.3g})"


def test_pr_lstm_old_checkpoint_loads_unchanged():
    """The state_dict layout did not change: a model saved before loads and computes alike."""
    torch.manual_seed(0)
    old = PRLSTM(2, 2, hidden=8)
    keys = {"embed.weight": (24, 2), "embed.bias": (24,), "binary.weight": (40, 16),
            "binary.bias": (40,), "refine.0.weight": (32, 8), "refine.0.bias": (32,),
            "head.weight": (2, 8), "head.bias": (2,)}
    assert {k: tuple(v.shape) for k, v in old.state_dict().items()} == keys
    new = PRLSTM(2, 2, hidden=8)
    new.load_state_dict(old.state_dict())
    tokens, lengths = batch(2, 4, 37, seed=0)
    torch.testing.assert_close(new(tokens, lengths), old_scan_forward(old, tokens, lengths),
                               **TOL)


def perturbed(model, scale=0.1):
    """Every parameter moved off its init (identity matrices and zero biases would hide a
    swapped V_x / V_y or a dropped bias)."""
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(scale * torch.randn(p.shape, generator=g))
    return model


def step_loss(logits):
    """A training step's loss: cross-entropy, mean over the batch, against fixed targets."""
    targets = torch.arange(logits.shape[0]) % logits.shape[1]
    return torch.nn.functional.cross_entropy(logits, targets)


def grads_of(model):
    return [p.grad.clone() for p in model.parameters() if p.grad is not None]


def step_of(model, forward, *args, seed=None):
    """Logits and gradients of one training step's loss through ``forward(*args)``."""
    if seed is not None:
        torch.manual_seed(seed)  # the same dropout masks for both implementations
    model.zero_grad()
    out = forward(*args)
    step_loss(out).backward()
    return out.detach(), grads_of(model)


def assert_same_step(a, b):
    """Logits within TOL and every gradient within 1e-5 of its scale."""
    torch.testing.assert_close(a[0], b[0], **TOL)
    assert len(a[1]) == len(b[1]) > 0
    for ga, gb in zip(a[1], b[1]):
        assert_grad_close(ga, gb)


@pytest.mark.parametrize("operator", ["mlp", "sum", "linear", "gated-sum"])
def test_mlp_ldru_step_equals_previous_step(operator):
    """Outputs and gradients of the new step equal the old step's (float32, within 1e-5), with
    dropout (the same masks from the same seed), in eval mode, with and without offsets."""
    torch.manual_seed(0)
    model = perturbed(MLPLDRU(3, 4, d=16, operator=operator, dropout=0.25))
    # (the ablations' gradients grow to 1e16 by length 129 from their identity init: shorter)
    for i, T in enumerate([1, 2, 3, 8, 13, 40] + ([129] if operator == "mlp" else [])):
        tokens, lengths = batch(3, 8, T, seed=i, full=True)
        offsets = torch.randint(0, 6, (8,), generator=torch.Generator().manual_seed(i))
        for offs in (None, offsets):
            for train, memo in [(True, 4096), (False, 4096), (False, 0)]:
                model.train(train)
                model.memo_limit = memo
                new = step_of(model, model, tokens, lengths, offs, seed=7)
                old = step_of(model, lambda t, n, o: old_mlp_ldru_forward(model, t, n, o),
                              tokens, lengths, offs, seed=7)
                assert_same_step(new, old)


@pytest.mark.parametrize("padding", ["learned", "identity"])
def test_mlp_ldru_training_with_offsets_shares_blocks_with_the_same_step(padding):
    """Training without dropout, strings at random offsets (padding on both sides): the shared
    blocks give the level-by-level step's logits and gradients (float32, within 1e-5)."""
    torch.manual_seed(0)
    model = perturbed(MLPLDRU(2, 2, d=16, dropout=0.0, padding=padding)).train()
    for i, T in enumerate([3, 17, 40]):
        tokens, lengths = batch(2, 64, T, seed=i, full=False)
        offsets = torch.randint(0, 64 - T + 1, (64,), generator=torch.Generator().manual_seed(i))
        model.memo_limit = 4096
        shared = step_of(model, model, tokens, lengths, offsets)
        model.memo_limit = 0
        assert_same_step(shared, step_of(model, model, tokens, lengths, offsets))


@pytest.mark.parametrize("T", [511, 512, 513, 1025, 4096])
def test_mlp_ldru_eval_skips_padding_with_the_same_outputs(T):
    """Lengths just above a power of two: padding subtrees as constants, the same logits."""
    torch.manual_seed(0)
    model = perturbed(MLPLDRU(2, 2, d=8)).eval()
    tokens, lengths = batch(2, 3, T, seed=T)
    with torch.no_grad():
        for memo in (4096, 0):
            model.memo_limit = memo
            torch.testing.assert_close(model(tokens, lengths),
                                       old_mlp_ldru_forward(model, tokens, lengths), **TOL)


@pytest.fixture(scope="module")
def monoids():
    return [ml.load_language(n).monoid() for n in ("parity", "dyck-6", "cycle-navigation")]


def numpy_labels(m, tokens, lengths):
    """The lock-step numpy path of element_of (what runs without numba)."""
    cols, _ = m._padded_columns(tokens, lengths)
    flat = m.identity_letter_right.ravel()
    e = np.zeros(tokens.shape[0], np.int64)
    for col in cols:
        e = flat[e * (m.n_symbols + 1) + col]
    return e


@pytest.mark.parametrize("dtype", [np.int64, np.int8])
def test_compiled_labeller_equals_numpy_path(monoids, dtype):
    rng = np.random.default_rng(0)
    for m in monoids:
        for B, T in [(1, 1), (7, 5), (9, 33), (1500, 70)]:
            tokens = rng.integers(0, m.n_symbols, (B, T)).astype(dtype)
            lengths = rng.integers(0, T + 1, B)
            want = numpy_labels(m, tokens.astype(np.int64), lengths)
            serial = m.element_of(tokens, lengths)
            assert serial.tolist() == want.tolist()
            if dtype == np.int64:  # (serial stays alive: its buffer cannot be reused here)
                assert m.element_of(tokens, lengths, threads=2).tolist() == want.tolist()


def test_labeller_refuses_bad_ids_anywhere(monoids):
    m = monoids[1]
    tokens = np.zeros((20, 6), np.int64)
    lengths = np.full(20, 4)
    for row, col, value in [(3, 1, 2), (17, 2, -1), (12, 5, 9)]:  # inside, inside, padding
        bad = tokens.copy()
        bad[row, col] = value
        with pytest.raises(InputError, match="token ids"):
            m.element_of(bad, lengths)
    with pytest.raises(InputError, match="lengths"):
        m.element_of(tokens, np.full(20, 7))
    with pytest.raises(InputError, match="shapes"):
        m.element_of(tokens, lengths[:3])


def test_pr_lstm_shares_repeated_blocks_exactly():
    """Rows that repeat (a test batch of a small language does): the pairs present are
    computed once (``torch.unique``), with the same outputs, forward and forward_all."""
    torch.manual_seed(0)
    model = PRLSTM(3, 4, hidden=8).eval()
    tokens, lengths = batch(3, 2, 300, seed=4, full=True)
    tokens, lengths = tokens.repeat(8, 1), lengths.repeat(8)
    model.memo_limit = 1  # no all-pairs tables: the pairs present only
    with torch.no_grad():
        levels = model._levels(model._weights(), tokens)
        assert levels[5].ids is not None and levels[5].state[0].shape[0] <= 2 * (300 >> 5)
        torch.testing.assert_close(model(tokens, lengths), old_scan_forward(model, tokens, lengths),
                                   **TOL)
        mask = torch.arange(300) < lengths[:, None]
        torch.testing.assert_close(model.forward_all(tokens, lengths)[mask],
                                   old_scan_forward_all(model, tokens, lengths)[mask], **TOL)


@pytest.mark.parametrize("make", [
    lambda: PRLSTM(3, 4, hidden=8),
    lambda: PRLSTM(2, 3, hidden=8, num_layers=3, init="haiku"),
    lambda: PRLSTM(5, 2, hidden=8, num_layers=1),
], ids=["1R", "2R-haiku", "0R"])
@pytest.mark.parametrize("rows", [8, 256])
def test_pr_lstm_row_path_equals_general_scan(make, rows, monkeypatch):
    """Every prefix's logits of the no-gradient row path equal the general scan's (float64,
    within 1e-12), shared (all pairs, pairs present) and unshared; ``rows`` 8 splits every
    level into many blocks of one string and of several strings."""
    torch.manual_seed(0)
    model = perturbed(make()).double().eval()
    monkeypatch.setattr(pr_lstm_rows, "ROWS", rows)
    calls = []
    fast = pr_lstm_rows.prefix_h
    monkeypatch.setattr(pr_lstm_rows, "prefix_h", lambda *a: calls.append(1) or fast(*a))
    for i, T in enumerate([1, 2, 3, 4, 5, 8, 9, 16, 17, 33, 64, 100, 129, 257, 600]):
        tokens, lengths = batch(model.vocab_size, 5, T, seed=i)
        ref = general_scan_forward_all(model, tokens)
        for memo in (4096, 1, 0):
            model.memo_limit = memo
            with torch.no_grad():
                got = model.forward_all(tokens, lengths)
            torch.testing.assert_close(got, ref, atol=1e-12, rtol=1e-12)
        with torch.no_grad():  # forward (its levels take the row path too)
            last = ref[torch.arange(5), lengths - 1]
            torch.testing.assert_close(model(tokens, lengths), last, atol=1e-12, rtol=1e-12)
    assert len(calls) == 15 * 3  # the row path did run


@pytest.mark.parametrize("memo", [4096, 0])
def test_pr_lstm_gradients_through_table_pairs_equal_previous(memo):
    """Levels built from a table (the leaves, unshared) in training: forward and forward_all
    gradients equal the previous code's (float64, within 1e-10)."""
    torch.manual_seed(0)
    model = perturbed(PRLSTM(3, 4, hidden=8)).double().train()
    model.memo_limit = memo
    for T in (2, 7, 40, 129):
        tokens, lengths = batch(3, 6, T, seed=T)
        for new, old in [(model, lambda t, n: old_scan_forward(model, t, n)),
                         (lambda t, n: model.forward_all(t, n)[:, -1],
                          lambda t, n: old_scan_forward_all(model, t, n)[:, -1])]:
            a = step_of(model, new, tokens, lengths)
            b = step_of(model, old, tokens, lengths)
            torch.testing.assert_close(a[0], b[0], atol=1e-10, rtol=1e-10)
            for ga, gb in zip(a[1], b[1]):
                torch.testing.assert_close(ga, gb, atol=1e-10, rtol=1e-10)


def test_pr_lstm_inference_weights_follow_parameter_changes():
    """The permuted weights kept between no-gradient calls are rebuilt when a parameter
    changes: in place (an optimiser step), by ``load_state_dict`` and by ``.double()``."""
    torch.manual_seed(0)
    model = PRLSTM(3, 2, hidden=8).eval()
    tokens, lengths = batch(3, 4, 21, seed=0)

    def check():
        with torch.no_grad():
            got = model.forward_all(tokens, lengths)
        torch.testing.assert_close(got, general_scan_forward_all(model, tokens), **TOL)
        return got

    before = check()
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    step_loss(model(tokens, lengths)).backward()
    opt.step()
    assert not torch.allclose(check(), before)
    model.load_state_dict(perturbed(PRLSTM(3, 2, hidden=8)).state_dict())
    check()
    model.double()
    assert check().dtype == torch.float64


def test_pr_lstm_modules_doctests():
    import doctest

    from monoidlab.models import pr_lstm

    for mod in (pr_lstm_rows, pr_lstm):
        result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
        assert result.attempted > 0 and result.failed == 0, mod.__name__


@pytest.mark.parametrize("n, k, groups, steps", [(1, 1, 1, 4), (7, 2, 3, 50), (30, 9, 5, 100),
                                                 (200, 4, 17, 300)])
def test_compiled_backward_counts_equal_the_numpy_path_bit_for_bit(monkeypatch, n, k, groups,
                                                                   steps):
    """The sampler's rescaled path counts (monoidlab.laws.backward_laws): the numba kernel adds
    in numpy's order, so the strings a seed draws do not depend on which path ran."""
    import monoidlab.laws as laws
    from monoidlab._kernels import backward_sum_kernel

    if backward_sum_kernel() is None:
        pytest.skip("no numba: only the numpy path exists")
    rng = np.random.default_rng(n * k)
    table = rng.integers(0, n, (n, k))
    final = (rng.random((n, groups)) < 0.3).astype(float)
    final[rng.integers(0, n), :] = 1.0  # every group reachable from somewhere
    fast = laws.backward_laws(table, final, steps, rescale=True)
    monkeypatch.setattr(laws, "USE_KERNEL", False)
    slow = laws.backward_laws(table, final, steps, rescale=True)
    assert fast.tobytes() == slow.tobytes()
    # and a sampler draw is the same strings either way
    lang = ml.load_language("tomita-3")
    monkeypatch.setattr(laws, "USE_KERNEL", True)
    from monoidlab.strings import sampling
    sampling._PATHS.clear()
    a = ml.sample(lang, [30, 31], 40, sampler="ec_stratified", seed=5).tokens
    monkeypatch.setattr(laws, "USE_KERNEL", False)
    sampling._PATHS.clear()
    b = ml.sample(lang, [30, 31], 40, sampler="ec_stratified", seed=5).tokens
    assert np.array_equal(a, b)


@pytest.mark.parametrize("n, k, groups", [(1, 1, 1), (5, 2, 3), (40, 4, 7), (300, 3, 20)])
def test_compiled_walks_draw_the_numpy_paths_letters(monkeypatch, n, k, groups):
    """monoidlab.laws.draw_walks: the numba kernel sums and compares as numpy does, so a seed
    draws the same letters on either path (random tables, zero weights, ties, empty strings)."""
    import monoidlab.laws as laws
    from monoidlab._kernels import walk_kernel

    if walk_kernel() is None:
        pytest.skip("no numba: only the numpy path exists")
    rng = np.random.default_rng(n + k + groups)
    table = rng.integers(0, n, (n, k))
    final = (rng.random((n, groups)) < 0.4).astype(float)
    final[rng.integers(0, n), :] = 1.0
    C = laws.backward_laws(table, final, 60, rescale=True)
    C[:, rng.integers(0, n)] = 0.0  # a dead node: zero weights
    lengths = rng.integers(0, 61, 97)
    lengths[:3] = 0
    targets = rng.integers(0, groups, 97)
    start = rng.integers(0, n, 97)
    for C_ in (C, C[:, :, ::-1]):  # contiguous and strided counts
        fast = laws.draw_walks(np.random.default_rng(1), table, C_, start, lengths, targets)
        monkeypatch.setattr(laws, "USE_KERNEL", False)
        slow = laws.draw_walks(np.random.default_rng(1), table, C_, start, lengths, targets)
        monkeypatch.setattr(laws, "USE_KERNEL", True)
        assert fast.dtype == slow.dtype and np.array_equal(fast, slow)
        assert (fast[lengths == 0] == 0).all()


@pytest.mark.parametrize("sampler", ["ec_stratified", "near_miss", "covering"])
def test_samplers_draw_the_same_strings_with_or_without_the_walk_kernel(monkeypatch, sampler):
    import monoidlab.laws as laws
    from monoidlab.coverage.covering import covering_sample
    from monoidlab.strings import sampling

    lang = ml.load_language("tomita-3")
    drawn = []
    for use in (True, False):
        monkeypatch.setattr(laws, "USE_KERNEL", use)
        sampling._PATHS.clear()
        if sampler == "covering":
            s = covering_sample(lang, range(1, 41), 64, test_lengths=range(41, 61),
                                padding="identity", seed=3)
        else:
            s = ml.sample(lang, [5, 17, 30], 64, sampler=sampler, seed=3)
        drawn.append((s.tokens.copy(), np.asarray(s.lengths).copy()))
    assert np.array_equal(drawn[0][0], drawn[1][0]) and np.array_equal(drawn[0][1], drawn[1][1])


def test_walks_beyond_the_counts_raise_instead_of_reading_past_them():
    """The kernel checks no bounds: counts shorter than the strings, or a target beyond them,
    take the numpy path, which raises."""
    import monoidlab.laws as laws

    table = np.array([[0, 1], [1, 0]])
    C = laws.backward_laws(table, np.eye(2), 5, rescale=True)
    rng = np.random.default_rng(0)
    assert laws.draw_walks(rng, table, C, 0, np.array([6, 3]), np.array([1, 0])).shape == (2, 6)
    with pytest.raises(IndexError):
        laws.draw_walks(rng, table, C, 0, np.array([7]), np.array([1]))
    with pytest.raises(IndexError):
        laws.draw_walks(rng, table, C, 0, np.array([3]), np.array([2]))
