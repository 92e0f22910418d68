"""The snapped PR-LSTM and the prefix scan's finite tables: fold, certificate, model."""

import numpy as np
import pytest
import torch

import monoidlab as ml
from monoidlab.errors import InputError
from monoidlab.evaluation.certificate import brute_force_counterexample, certify_table
from monoidlab.models import build_model, model_spec
from monoidlab.models.finite import FiniteTable, monoid_table
from monoidlab.models.snap import SnappedPRLSTM, auto_codes

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _scan_reference(table: FiniteTable, tokens, length: int) -> int:
    """A string's class by the scan's definition, one block at a time in Python: the balanced
    tree of each aligned block of length's binary expansion, folded left, largest first."""
    def tree(block):
        codes = [int(table.leaf[t]) for t in block]
        while len(codes) > 1:
            codes = [int(table.table[a, b]) for a, b in zip(codes[::2], codes[1::2])]
        return codes[0]

    acc, start = None, 0
    for k in reversed(range(length.bit_length())):
        if length >> k & 1:
            code = tree(tokens[start:start + (1 << k)])
            acc = code if acc is None else int(table.table[acc, code])
            start += 1 << k
    return int(table.head[acc])


def test_scan_fold_equals_the_block_by_block_definition():
    """A random (non-associative) table: the vectorised scan fold equals the definition on
    300 strings of lengths 1..200, and differs from the balanced-tree fold somewhere."""
    rng = np.random.default_rng(0)
    k, V = 7, 3
    table = FiniteTable(rng.integers(0, k, V), rng.integers(0, k, (k, k)),
                        rng.integers(0, 3, k), layout="scan")
    balanced = FiniteTable(table.leaf, table.table, table.head)
    tokens = rng.integers(0, V, (300, 200))
    lengths = rng.integers(1, 201, 300)
    got = table.fold(tokens, lengths)
    want = [_scan_reference(table, tokens[i], int(lengths[i])) for i in range(300)]
    np.testing.assert_array_equal(got, want)
    assert (balanced.fold(tokens, lengths) != got).any()


def test_scan_tables_refuse_offsets_padding_and_unknown_layouts():
    exact = monoid_table(ml.load_language("parity"), layout="scan")
    with pytest.raises(InputError, match="no offsets"):
        exact.fold(np.zeros((1, 3), int), np.array([3]), np.array([1]))
    with pytest.raises(InputError, match="no padding"):
        FiniteTable(exact.leaf, exact.table, exact.head, "learned", 0, layout="scan")
    with pytest.raises(InputError, match="layout must be one of"):
        FiniteTable(exact.leaf, exact.table, exact.head, layout="chain")
    with pytest.raises(InputError, match="offsets=True does not apply"):
        certify_table(exact, ml.load_language("parity"), offsets=True)


@pytest.mark.parametrize("name", ["parity", "dyck-2", "tomita-4", "even-pairs"])
def test_exact_scan_tables_are_proved_and_planted_errors_match_brute_force(name):
    """The monoid's own table is proved correct under the scan layout; tables with one or two
    planted wrong entries get the shortest counterexample brute force finds (the same length
    and the lexicographically first failing string), or a proof when no string reaches them."""
    lang = ml.load_language(name)
    exact = monoid_table(lang, layout="scan")
    assert certify_table(exact, lang).correct
    rng = np.random.default_rng(7)
    k, max_length = exact.n_codes, 10
    wrong = proved = 0
    for _ in range(25):
        t = exact.table.copy()
        for _ in range(int(rng.integers(1, 3))):
            i, j = rng.integers(0, k, 2)
            t[i, j] = rng.integers(0, k)
        table = FiniteTable(exact.leaf, t, exact.head, layout="scan")
        cert = certify_table(table, lang)
        brute = brute_force_counterexample(table, lang, max_length)
        if cert.correct:
            assert brute is None
            proved += 1
        elif cert.counterexample_length <= max_length:
            assert brute is not None and brute[0] == cert.counterexample_length
            assert cert.counterexample == brute[1][0][0] and cert.confirmed
            wrong += 1
        else:
            assert brute is None
    assert wrong >= 3 and wrong + proved >= 20


def test_a_counterexample_past_the_first_levels_is_found():
    """A planted entry only long strings reach: parity's table with odd·odd wrong only when
    both are full blocks of 4 (codes split by block size), refuted at length 8 exactly."""
    lang = ml.load_language("parity")
    # codes: (parity, min(level, 3)) for blocks; a fold's code keeps level 3
    k = 8
    code = lambda p, lv: 2 * lv + p  # noqa: E731
    table = np.zeros((k, k), int)
    for a in range(k):
        for b in range(k):
            pa, la, pb, lb = a % 2, a // 2, b % 2, b // 2
            table[a, b] = code(pa ^ pb, min(max(la, lb) + (la == lb), 3))
    table[code(1, 2), code(1, 2)] = code(1, 3)  # two odd blocks of 4: says odd
    head = np.arange(k) % 2
    t = FiniteTable(np.array([code(0, 0), code(1, 0)]), table, head, layout="scan")
    cert = certify_table(t, lang)
    brute = brute_force_counterexample(t, lang, 9)
    assert not cert.correct and cert.counterexample_length == 8 == brute[0]
    assert cert.counterexample == brute[1][0][0] == "00010001"


def _trained_a_little(codes=24, steps=6, seed=0):
    torch.manual_seed(seed)
    m = SnappedPRLSTM(3, 2, hidden=12, codes=codes)
    opt = torch.optim.Adam(m.parameters(), 1e-2)
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        x = torch.randint(0, 3, (32, 20), generator=g)
        n = torch.randint(1, 21, (32,), generator=g)
        y = torch.randint(0, 2, (32,), generator=g)
        loss = torch.nn.functional.cross_entropy(m(x, n), y) + m.auxiliary_loss()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return m.eval()


def test_eval_forward_equals_scan_table_fold():
    """1,000 random strings of lengths up to 500: the torch forward's class is the finite
    table's scan fold; forward_all at every prefix too."""
    m = _trained_a_little()
    table = m.finite_table()
    assert table.layout == "scan" and table.n_codes == 24 + 3  # k codes, then the 3 leaves
    assert table.leaf.tolist() == [24, 25, 26] and table.table.max() < 24
    rng = np.random.default_rng(1)
    tokens = rng.integers(0, 3, (1000, 500))
    lengths = rng.integers(1, 501, 1000)
    with torch.no_grad():
        got = m(torch.as_tensor(tokens), torch.as_tensor(lengths)).argmax(1).numpy()
        every = m.forward_all(torch.as_tensor(tokens[:20, :120])).argmax(-1).numpy()
    np.testing.assert_array_equal(got, table.fold(tokens, lengths))
    prefixes = np.arange(1, 121)
    for i in range(20):
        np.testing.assert_array_equal(
            every[i], table.fold(np.repeat(tokens[i:i + 1, :120], 120, 0), prefixes))


def test_states_are_codes_and_the_step_updates_the_codebook():
    m = _trained_a_little()
    codes = m.snapper.codebook()
    with torch.no_grad():
        h, c = m._final_state(torch.randint(0, 3, (16, 37)), torch.randint(2, 38, (16,)))
    states = torch.cat([h, c], -1)
    assert bool((states[:, None] == codes[None]).all(-1).any(-1).all())
    m.train()
    before = m.snapper.codebook().clone()
    m(torch.randint(0, 3, (8, 9)), torch.full((8,), 9)).sum().backward()
    assert m.auxiliary_loss() is not None
    assert not torch.equal(before, m.snapper.codebook())


def test_parity_is_learned_the_leaves_never_collapse():
    """The leaves are not snapped: snapping them put both letters on one code at
    initialisation, after which every state was the same and parity's loss stayed at chance.
    300 steps on lengths 1..10 now fit it."""
    import monoidlab as ml

    lang = ml.load_language("parity")
    torch.manual_seed(0)
    m = SnappedPRLSTM(2, 2, hidden=32, codes=16)
    opt = torch.optim.Adam(m.parameters(), 3e-3)
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(300):
        L = int(rng.integers(1, 11))
        x = rng.integers(0, 2, (64, L))
        y = torch.as_tensor(lang.classify(x, np.full(64, L)))
        loss = torch.nn.functional.cross_entropy(m(torch.as_tensor(x), torch.full((64,), L)), y)
        aux = m.auxiliary_loss()  # None when nothing was snapped (length-1 strings)
        opt.zero_grad()
        (loss if aux is None else loss + aux).backward()
        opt.step()
        losses.append(loss.item())
    assert np.mean(losses[-50:]) < 0.2, np.mean(losses[-50:])
    leaves = torch.cat(m._leaf_table(m._weights()), -1)
    assert not torch.equal(leaves[0], leaves[1])


def test_registry_recipe_and_sizing():
    spec = model_spec("pr-lstm-snap")
    assert spec.schedule == "scan" and "languages" in spec.recipes
    opts = spec.make_options({}).for_language(ml.load_language("dyck-4"))
    assert opts.codes == auto_codes(ml.load_language("dyck-4").monoid().size)
    assert build_model("pr-lstm-snap", 2, 2).snapper.k == 64
    with pytest.raises(InputError, match="option 'codes'"):
        spec.make_options({"codes": 1})


def test_certify_a_trained_run(tmp_path):
    """Trained by the trainer on parity: results.json carries the certificate, and
    monoidlab.certify on the run says the same about the model itself (scan layout)."""
    from monoidlab.training import train
    from monoidlab.training.parse import config_from_dict

    cfg = config_from_dict({"language": "parity", "model": "pr-lstm-snap", "steps": 60,
                            "batch_size": 32, "train_lengths": "1:12", "test_lengths": "13:40:9",
                            "test_samples": 16, "eval_every": 60, "log_every": 30,
                            "threads": 1, "lr": 0.01, "seed": 0,
                            "model_options": {"hidden": 8, "codes": 8}}, "t")
    result = train(cfg, tmp_path / "run", progress=False)
    cert = result["certificate"]
    assert cert["subject"] == "model" and "prefix-scan layout" in cert["verdict"]
    again = ml.certify(tmp_path / "run")
    assert again.certificate.correct == cert["correct"] and again.confirmed
    assert again.agreement == 1.0


def test_products_in_small_slices_give_the_same_certificates(monkeypatch):
    """The products of pair sets run in row slices (memory bounded); slices of 3 products give
    the certificates of one slice, and a product past MAX_PRODUCTS is refused by name."""
    from monoidlab.errors import MonoidTooLarge
    from monoidlab.evaluation import scan_certificate

    lang = ml.load_language("dyck-2")
    exact = monoid_table(lang, layout="scan")
    rng = np.random.default_rng(3)
    tables = []
    for _ in range(12):
        t = exact.table.copy()
        i, j = rng.integers(0, exact.n_codes, 2)
        t[i, j] = rng.integers(0, exact.n_codes)
        tables.append(FiniteTable(exact.leaf, t, exact.head, layout="scan"))
    whole = [certify_table(t, lang).to_dict() for t in tables]
    monkeypatch.setattr(scan_certificate, "_CHUNK", 3)
    assert [certify_table(t, lang).to_dict() for t in tables] == whole
    monkeypatch.setattr(scan_certificate, "MAX_PRODUCTS", 10)
    with pytest.raises(MonoidTooLarge, match="products of reachable"):
        certify_table(exact, lang)
    # the proof's set products are bounded by their word operations
    with pytest.raises(MonoidTooLarge, match="word operations"):
        scan_certificate.certify_scan_table(exact, lang, refute_budget=0, max_work=5)


def test_the_set_product_is_the_product_with_witnesses_as_a_set():
    """The proof's bit-set product of two pair sets equals the distinct pairs of the product
    that keeps witnesses (every a·b computed), on random non-associative tables."""
    from monoidlab.evaluation.scan_certificate import _product, _product_set

    rng = np.random.default_rng(11)
    sizes = []
    for _ in range(150):
        k, m = int(rng.integers(1, 25)), int(rng.integers(1, 150))  # m past 64 and 128: words
        tau, mul = rng.integers(0, k, (k, k)), rng.integers(0, m, (m, m))
        a = np.unique(rng.integers(0, k * m, int(rng.integers(0, 120))))
        b = np.unique(rng.integers(0, k * m, int(rng.integers(0, 120))))
        want = np.unique(_product(tau, mul, m, a, b)[0])
        got = _product_set(tau, mul, m, a, b, 1 << 40)
        assert np.array_equal(got, want)
        sizes.append(len(want))
    assert max(sizes) > 100 and min(sizes) == 0


@pytest.mark.parametrize("name", ["dyck-2", "tomita-4"])
def test_refuting_first_gives_the_certificates_of_proving_first(name):
    """The cheap search for a counterexample that runs before the proof returns what the proof
    followed by the search returns (verdict, shortest counterexample, its level), on tables with
    planted wrong entries, with and without a budget that stops the search at once."""
    from monoidlab.evaluation.scan_certificate import certify_scan_table

    lang = ml.load_language(name)
    exact = monoid_table(lang, layout="scan")
    rng = np.random.default_rng(5)
    fields = ("correct", "counterexample", "counterexample_length", "counterexample_level",
              "predicted", "expected")
    verdicts = []
    for _ in range(20):
        t = exact.table.copy()
        for _ in range(int(rng.integers(1, 3))):
            i, j = rng.integers(0, exact.n_codes, 2)
            t[i, j] = rng.integers(0, exact.n_codes)
        table = FiniteTable(exact.leaf, t, exact.head, layout="scan")
        runs = [certify_scan_table(table, lang, refute_budget=b) for b in (0, 1, 1 << 26)]
        got = [tuple(r.get(f) for f in fields) for r in runs]
        assert got[0] == got[1] == got[2]
        verdicts.append(got[0][0])
    assert 0 < sum(verdicts) < len(verdicts)  # both proofs and refutations were compared


@pytest.mark.parametrize("which", ["mlp-ldru-snap", "pr-lstm-snap", "transform-tree"])
def test_evaluation_as_a_table_fold_equals_the_torch_forward(which):
    """The evaluation a finite model gets from its table's fold (table_forward) is the one its
    torch forward gives, kind by kind and length by length (offsets too where the model has
    them); a continuous model is left as it is."""
    from monoidlab.evaluation import evaluate_kinds
    from monoidlab.evaluation.table_forward import TableForward, table_forward
    from monoidlab.training.problems import LanguageProblem

    lang = ml.load_language("dyck-2")
    torch.manual_seed(1)
    opts = {"mlp-ldru-snap": {"d": 8, "codes": 12}, "pr-lstm-snap": {"hidden": 8, "codes": 12},
            "transform-tree": {"states": 5}}[which]
    model = build_model(which, 2, 2, **opts).eval()
    fast = table_forward(model, lang, 2)
    assert isinstance(fast, TableForward)
    offsets = "random" if which != "pr-lstm-snap" else None
    problem = LanguageProblem(lang, offsets=offsets)
    lengths = [41, 64, 97, 130]
    slow = evaluate_kinds(model, problem, lengths, 16, 0)
    quick = evaluate_kinds(fast, problem, lengths, 16, 0)
    assert quick.accuracy == slow.accuracy and quick.verdict() == slow.verdict()
    assert table_forward(build_model("mlp-ldru", 2, 2, d=8), lang, 2).__class__.__name__ \
        == "MLPLDRU"
