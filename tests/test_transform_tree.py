"""Tests for the transformation tree model (monoidlab/models/transform_tree.py): the hard
forward is the left-to-right product of the letters' 0/1 matrices (a DFA), both computation
orders agree in value and gradient, the finite-table view folds like the model, and a short
training run learns parity and tomita-5 exactly."""

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import monoidlab as ml
from monoidlab.errors import InputError, MonoidTooLarge
from monoidlab.models.transform_tree import LearnedDFA, TransformTree, TransformTreeOptions
from monoidlab.strings import schedules

pytestmark = pytest.mark.usefixtures("one_torch_thread")
ORDERS = ("tree", "chain")


def make(V=3, C=3, n=6, seed=0, **kw):
    torch.manual_seed(seed)
    return TransformTree(V, C, states=n, **kw)


def random_batch(B, max_len, V, seed=0, min_len=1):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(min_len, max_len + 1, (B,), generator=g)
    return torch.randint(0, V, (B, max_len), generator=g), lengths


def hard_matrices(model):
    f = model.logits.detach().argmax(1)  # (V, n): column j's one is in row f[a, j]
    return F.one_hot(f, model.n_states).transpose(1, 2).float()


def loop_product(model, tokens, lengths):
    """P(x_L) ... P(x_1) e_0 by a plain Python loop, one string and one letter at a time."""
    H = hard_matrices(model).numpy()
    out = []
    for b in range(len(lengths)):
        s = np.zeros(model.n_states, np.float32)
        s[0] = 1
        for t in tokens[b, : int(lengths[b])].tolist():
            s = H[t] @ s
        out.append(s)
    return torch.as_tensor(np.stack(out))


def test_eval_forward_is_the_left_to_right_product():
    model = make(n=7).eval()
    tokens, lengths = random_batch(4, 2000, 3, seed=1, min_len=1500)
    lengths[0] = 2000
    want_states = loop_product(model, tokens, lengths)
    want_logits = want_states @ model.readout.detach().T
    for order in ORDERS:
        for offsets in (None, torch.tensor([0, 5, 48, 17])):
            with torch.no_grad():
                states = model.final_states(tokens, lengths, offsets, order=order)
                logits = model(tokens, lengths, offsets)
            assert torch.equal(states, want_states)  # 0/1 products: exact in any order
            assert torch.equal(states.sum(1), torch.ones(4))
            torch.testing.assert_close(logits, want_logits)
    # training mode (the straight-through path) computes the same value
    torch.testing.assert_close(model.train()(tokens, lengths), want_logits)


def test_hard_forward_is_a_dfa():
    model = make(V=3, C=3, n=5, seed=3).eval()
    tokens, lengths = random_batch(1000, 500, 3, seed=4)
    with torch.no_grad():
        pred = model(tokens, lengths).argmax(1).numpy()
    table = model.finite_table()
    np.testing.assert_array_equal(table.fold(tokens.numpy(), lengths.numpy()), pred)
    dfa = model.learned_automaton()
    assert dfa.delta.shape == (5, 3) and dfa.start == 0 and dfa.output.shape == (5,)
    np.testing.assert_array_equal(dfa.classify(tokens.numpy(), lengths.numpy()), pred)
    # a plain walk over the tables, string by string
    for b in range(0, 1000, 97):
        q = 0
        for t in range(int(lengths[b])):
            q = dfa.delta[q, tokens[b, t]]
        assert dfa.output[q] == pred[b]
    # offsets move the string inside its buffer, not its class
    offsets = torch.randint(0, 300, (1000,), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        moved = model(tokens, lengths, offsets).argmax(1).numpy()
    np.testing.assert_array_equal(moved, pred)
    np.testing.assert_array_equal(table.fold(tokens.numpy(), lengths.numpy(), offsets.numpy()),
                                  pred)


def test_finite_table_is_the_transformation_semigroup():
    model = make(V=2, C=2, n=4, seed=7)
    f = model.transformations()
    table = model.finite_table()
    k = table.n_codes
    # rebuild the closure by brute force: functions as tuples, composed "i then j"
    closure = {tuple(row) for row in f}
    frontier = list(closure)
    while frontier:
        new = []
        for g in frontier:
            for row in f:
                h = tuple(int(row[q]) for q in g)
                if h not in closure:
                    closure.add(h)
                    new.append(h)
        frontier = new
    assert k == len(closure)
    # each code's transformation, from its letters: the code of a letter is its function
    func = {}
    for a in range(2):
        func.setdefault(int(table.leaf[a]), tuple(f[a]))
    changed = True
    while changed:
        changed = False
        for i in list(func):
            for j in list(func):
                h = tuple(func[j][q] for q in func[i])
                c = int(table.table[i, j])
                if c in func:
                    assert func[c] == h
                else:
                    func[c], changed = h, True
    assert set(func.values()) == closure and len(func) == k
    classes = model.readout_classes()
    for c, h in func.items():
        assert table.head[c] == classes[h[0]]


def test_finite_table_refuses_above_max_codes():
    model = make(V=3, C=2, n=6, seed=0)
    k = model.finite_table().n_codes
    assert k > 2
    with pytest.raises(MonoidTooLarge, match="max_codes=2"):
        model.finite_table(max_codes=2)
    assert model.finite_table(max_codes=k).n_codes == k
    with pytest.raises(InputError, match="max_codes"):
        model.finite_table(max_codes=0)


def reference_gradients(model, tokens, lengths, labels):
    """The loss through P = H + (S − S.detach()) composed by a Python loop, left to right."""
    S = torch.softmax(model.logits / model.temperature, dim=1)
    P = hard_matrices(model) + S - S.detach()
    states = []
    for b in range(len(lengths)):
        s = torch.zeros(model.n_states)
        s[0] = 1
        for t in range(int(lengths[b])):
            s = P[tokens[b, t]] @ s
        states.append(s)
    loss = F.cross_entropy(torch.stack(states) @ model.readout.T, labels)
    return torch.autograd.grad(loss, [model.logits, model.readout])


@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_straight_through_gradient_in_both_orders(temperature):
    model = make(V=3, C=3, n=6, seed=2, temperature=temperature).train()
    tokens, lengths = random_batch(12, 30, 3, seed=8)
    labels = torch.arange(12) % 3
    offsets = torch.randint(0, 9, (12,), generator=torch.Generator().manual_seed(9))
    want = reference_gradients(model, tokens, lengths, labels)
    assert all(torch.isfinite(g).all() and g.abs().sum() > 0 for g in want)
    for order in ORDERS:
        for off in (None, offsets):
            loss = F.cross_entropy(
                model.final_states(tokens, lengths, off, order=order) @ model.readout.T, labels)
            got = torch.autograd.grad(loss, [model.logits, model.readout])
            for g, w in zip(got, want):
                torch.testing.assert_close(g, w, atol=1e-6, rtol=1e-5)


def test_chain_backward_without_the_buffer(monkeypatch):
    """The one-scatter-per-step backward (large B · T · n) equals the buffered one."""
    from monoidlab.models import transform_tree

    model = make(V=2, C=2, n=9, seed=4)
    tokens, lengths = random_batch(8, 50, 2, seed=1)
    labels = torch.arange(8) % 2

    def grads():
        loss = F.cross_entropy(model.final_states(tokens, lengths, order="chain")
                               @ model.readout.T, labels)
        return torch.autograd.grad(loss, model.logits)[0]

    buffered = grads()
    monkeypatch.setattr(transform_tree._Chain, "buffered", 0)
    torch.testing.assert_close(grads(), buffered)


def test_matrices_are_exactly_hard_in_training():
    model = make(n=5, temperature=0.3).train()
    P = model.matrices()
    assert P.requires_grad and torch.equal(P.detach(), hard_matrices(model))


def test_auto_order_and_inputs():
    model = make(n=4)
    assert model.order_for(64, 40) == "chain"  # the CPU
    assert model.order_for(64, 40, "cuda") == "tree"
    assert model.order_for(64, 10**6, "cuda") == "chain"
    with pytest.raises(InputError, match="order"):
        model.final_states(torch.zeros(1, 3, dtype=torch.long), order="sideways")
    with pytest.raises(InputError, match="offsets"):
        model(torch.zeros(2, 3, dtype=torch.long), torch.tensor([3, 2]), torch.tensor([0, -1]))
    empty = model(torch.zeros(0, 4, dtype=torch.long), torch.zeros(0, dtype=torch.long))
    assert empty.shape == (0, 3)
    assert model.eval_group(300) == 512


def test_node_states_and_operator():
    model = make(V=3, C=3, n=4, seed=5).eval()
    tokens, lengths = random_batch(6, 13, 3, seed=2)
    offsets = torch.tensor([0, 3, 1, 0, 7, 2])
    H = hard_matrices(model)
    n = model.n_states
    for off in (None, offsets):
        ns = model.node_states(tokens, lengths, off)
        for b in range(6):
            r = 0 if off is None else int(off[b])
            s = schedules.schedule("balanced", int(lengths[b]), r)
            assert int(ns.valid[b].sum()) == s.n_nodes
            assert ns.span[b, : s.n_nodes].tolist() == s.span.tolist()
            for node in range(s.n_nodes):  # a node is the product of the letters it spans
                lo, hi = s.span[node]
                want = torch.eye(n)
                for t in range(lo, hi):
                    want = H[tokens[b, t]] @ want
                assert torch.equal(ns.states[b, node].view(n, n), want)
    roots = model.root_states(tokens, lengths)
    torch.testing.assert_close(model.state_logits(roots), model(tokens, lengths))
    # the operator on roots: root(u) then root(v) = root(uv)
    u, v = tokens[:, :4], tokens[:, 4:9]
    four, five = torch.full((6,), 4), torch.full((6,), 5)
    joined = model.apply_operator(model.root_states(u, four), model.root_states(v, five))
    assert torch.equal(joined, model.root_states(tokens[:, :9], torch.full((6,), 9)))
    assert model.padding_state() is None
    assert torch.equal(model.visible_state(roots), roots)


def product_check(dfa, lang):
    """Every (learned state, true state) pair reachable by a non-empty word has equal
    classes (a plain BFS, independent of LearnedDFA.counterexample)."""
    delta, out = np.asarray(lang.delta), np.asarray(lang.output)
    seen, frontier = set(), [(0, int(lang.start))]
    while frontier:
        nxt = []
        for p, q in frontier:
            for a in range(lang.n_symbols):
                pair = (int(dfa.delta[p, a]), int(delta[q, a]))
                if pair not in seen:
                    seen.add(pair)
                    nxt.append(pair)
        frontier = nxt
    return all(dfa.output[p] == out[q] for p, q in seen)


def test_counterexample_search():
    lang = ml.load_language("tomita-5")
    exact = LearnedDFA(np.array(lang.delta), np.array(lang.output))
    assert exact.counterexample(lang) is None and product_check(exact, lang)
    # the start state's class is read again after "00" (and the empty word is never read)
    out = np.array(lang.output)
    out[0] = 1 - out[0]
    assert LearnedDFA(np.array(lang.delta), out).counterexample(lang) == [0, 0]
    even = LearnedDFA(np.array([[1, 1], [0, 0]]), np.array([1, 0]))  # even length
    word = even.counterexample(lang)
    assert word == [0, 1] and not product_check(even, lang)
    assert even.classify(np.array([word]), [2])[0] != lang.classify(np.array([word]), [2])[0]
    ones = LearnedDFA(np.array(lang.delta), np.array([0, 0, 0, 0]))
    assert LearnedDFA(ones.delta, ones.output, 0).counterexample(lang) == [0, 0]
    assert exact.to_automaton(lang.alphabet, lang.classes) == lang


def train(name, steps, seed=0):
    lang = ml.load_language(name)
    m = lang.monoid()
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = TransformTree(lang.n_symbols, lang.n_classes, states=2 * lang.n_states)
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    for _ in range(steps):
        lengths = rng.integers(1, 41, 64)
        tokens = rng.integers(0, lang.n_symbols, (64, 40))
        labels = torch.as_tensor(m.outputs[m.element_of(tokens, lengths)])
        loss = F.cross_entropy(model(torch.as_tensor(tokens), torch.as_tensor(lengths)), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return lang, model.eval()


@pytest.mark.parametrize("name, steps", [("parity", 200), ("tomita-5", 400)])
def test_training_learns_the_language_exactly(name, steps):
    lang, model = train(name, steps)
    dfa = model.learned_automaton()
    assert product_check(dfa, lang)
    assert dfa.counterexample(lang) is None
    rng = np.random.default_rng(1)
    lengths = rng.integers(1, 501, 1000)
    tokens = rng.integers(0, lang.n_symbols, (1000, 500))
    truth = lang.classify(tokens, lengths)
    with torch.no_grad():
        pred = model(torch.as_tensor(tokens), torch.as_tensor(lengths)).argmax(1).numpy()
    np.testing.assert_array_equal(pred, truth)
    np.testing.assert_array_equal(model.finite_table().fold(tokens, lengths), truth)


@pytest.mark.parametrize("kw, match", [
    (dict(states=-2), "option 'states': an integer >= 0"),
    (dict(states=2.5), "option 'states': an integer"),
    (dict(states="8"), "option 'states': an integer"),
    (dict(states=True), "option 'states': an integer"),
    (dict(states=5000), "option 'states': at most 1024"),
    (dict(temperature=-1.0), "option 'temperature': a finite number > 0"),
    (dict(temperature=0), "option 'temperature'"),
    (dict(init_scale=float("nan")), "option 'init_scale'"),
    (dict(start="learned"), "option 'start'"),
    (dict(state_factor=0), "option 'state_factor': an integer >= 1"),
    (dict(state_factor=17), "option 'state_factor': at most 16"),
    (dict(stats=4), "no option 'stats' .*did you mean 'states'"),
    (dict(relaxation="gumbel"), "option 'relaxation': unknown value 'gumbel'"),
    (dict(relaxation="soft", anneal_steps=-1), "option 'anneal_steps': an integer >= 0"),
    (dict(relaxation="soft", final_temperature=0.1), "needs relaxation = 'soft' and anneal_steps"),
    (dict(final_temperature=0.1, anneal_steps=10), "needs relaxation = 'soft'"),
    (dict(relaxation="soft", final_temperature=-0.1, anneal_steps=10),
     "option 'final_temperature': a finite number > 0"),
])
def test_options_errors_are_clear(kw, match):
    with pytest.raises(InputError, match=match):
        TransformTree(2, 2, **kw)


def test_states_default_to_the_minimal_automaton():
    """states = 0 (auto): a run sizes n from its language's minimal automaton; a model built
    without a language gets the standalone default."""
    import monoidlab as ml
    from monoidlab.models import model_spec
    from monoidlab.models.transform_tree import STANDALONE_STATES

    lang = ml.load_language("dyck-4")
    opts = model_spec("transform-tree").make_options({}).for_language(lang)
    assert opts.states == lang.n_states == 6
    assert TransformTreeOptions(states=9).for_language(lang).states == 9
    assert TransformTree(2, 2).n_states == STANDALONE_STATES
    # state_factor multiplies the auto count only, and never passes MAX_STATES
    assert TransformTreeOptions(state_factor=3).for_language(lang).states == 18
    assert TransformTreeOptions(states=9, state_factor=3).for_language(lang).states == 9
    big = ml.load_language("prefix-4-4")
    assert TransformTreeOptions(state_factor=16).for_language(big).states == min(
        1024, 16 * big.n_states)


def test_options_object_and_keywords():
    opts = TransformTreeOptions(states=3, temperature=0.5)
    model = TransformTree(2, 4, opts)
    assert model.options is opts and model.n_states == 3
    assert model.logits.shape == (2, 3, 3) and model.readout.shape == (4, 3)
    assert TransformTree(2, 4, states=3).options == opts.__class__(states=3)


def test_certificate_of_a_model_of_expressions_tests_only_lengths_with_strings():
    """modular-arithmetic's well-formed expressions have odd lengths only: the certificate's
    agreement check draws the strict test's strings at the lengths that have some (it asked
    for length 50 and stopped), and returns a verdict."""
    from monoidlab.evaluation.kinds import lengths_with_strings
    from monoidlab.evaluation.model_certificate import certify_finite_model

    lang = ml.load_language("modular-arithmetic")
    assert lengths_with_strings(lang, range(41, 52), "auto").tolist() == [41, 43, 45, 47, 49, 51]
    torch.manual_seed(0)
    model = TransformTree(lang.n_symbols, lang.n_classes, TransformTreeOptions(states=4))
    from monoidlab.training import RunConfig

    cfg = RunConfig(language="modular-arithmetic", model="transform-tree",
                    test_lengths="41:52")
    cert = certify_finite_model(model, lang, cfg)
    assert cert.agreement == 1.0 and cert.agreement_strings > 0  # the DFA is the model
    assert not cert.certificate.correct and cert.confirmed


# ------------------------------------------------------------------ the soft relaxation
def soft_loop(model, tokens, lengths, temperature):
    """S(x_L) ... S(x_1) e_0 by a plain loop, S the column softmax at ``temperature``."""
    S = torch.softmax(model.logits.detach() / temperature, dim=1).numpy()
    out = []
    for b in range(len(lengths)):
        s = np.zeros(model.n_states)
        s[0] = 1
        for t in tokens[b, : int(lengths[b])].tolist():
            s = S[t] @ s
        out.append(s)
    return torch.as_tensor(np.stack(out), dtype=torch.float32)


def test_the_soft_relaxation_trains_on_the_soft_product_and_evaluates_the_argmax_machine():
    """relaxation = "soft": a training forward is the readout of the product of the soft
    matrices (a plain loop agrees, and the gradient reaches every column); in eval mode the
    model is the hard machine, exactly as the straight-through model of the same weights."""
    model = make(V=3, C=2, n=5, relaxation="soft", temperature=0.7)
    tokens, lengths = random_batch(16, 12, 3, seed=4)
    model.train()
    logits = model(tokens, lengths)
    want = soft_loop(model, tokens, lengths, 0.7) @ model.readout.detach().T
    torch.testing.assert_close(logits.detach(), want, rtol=1e-5, atol=1e-6)
    assert not torch.equal(logits.detach(), (loop_product(model, tokens, lengths)
                                             @ model.readout.detach().T))  # not the hard value
    logits.sum().backward()
    assert (model.logits.grad.abs().sum(1) > 0).float().mean() > 0.9  # soft: every column moves
    model.eval()
    with torch.no_grad():
        hard = model(tokens, lengths)
    twin = make(V=3, C=2, n=5).eval()
    twin.load_state_dict({k: v for k, v in model.state_dict().items() if k != "trained_steps"})
    with torch.no_grad():
        torch.testing.assert_close(hard, twin(tokens, lengths))
    torch.testing.assert_close(hard, loop_product(model, tokens, lengths) @ model.readout.T)


def test_the_annealing_counts_training_steps_and_resumes_from_the_weights():
    model = make(V=2, C=2, n=4, relaxation="soft", temperature=1.0, final_temperature=0.01,
                 anneal_steps=4)
    tokens, lengths = random_batch(8, 6, 2, seed=1)
    temps = []
    for _ in range(6):
        temps.append(model.current_temperature())
        model(tokens, lengths).sum().backward()
    np.testing.assert_allclose(temps, [1.0, 10**-0.5, 0.1, 10**-1.5, 0.01, 0.01], rtol=1e-9)
    with torch.no_grad():  # neither evaluation nor a no-grad call is a training step
        model(tokens, lengths)
        model.eval()(tokens, lengths)
    assert int(model.trained_steps) == 6
    again = make(V=2, C=2, n=4, seed=5, relaxation="soft", temperature=1.0,
                 final_temperature=0.01, anneal_steps=4)
    again.load_state_dict(model.state_dict())  # a resumed run: the count is in the weights
    assert again.current_temperature() == pytest.approx(0.01)
    plain = make(V=2, C=2, n=4)  # the straight-through model keeps its old weights' keys
    assert "trained_steps" not in plain.state_dict()


def test_a_soft_run_trains_and_is_certified_from_the_command_line(tmp_path, capsys):
    from monoidlab.cli import main

    out = tmp_path / "run"
    assert main(["train", "--language", "parity", "--model", "transform-tree", "--steps=60",
                 "--train_lengths=1:8", "--test_lengths=41:60:19", "--test_samples=8",
                 "--threads=1", "--lr=0.05", "--seed=0", "--out", str(out), "--json",
                 '--model_options={relaxation = "soft", final_temperature = 0.05, '
                 'anneal_steps = 50}']) == 0
    res = json.loads(capsys.readouterr().out)
    saved = json.loads((out / "config.json").read_text())["model_options"]
    assert saved["relaxation"] == "soft" and saved["anneal_steps"] == 50
    assert res["certificate"]["correct"] and res["solved"], res["certificate"]["verdict"]


def test_the_soft_relaxation_is_sized_by_its_n_squared_activations():
    """The soft forward keeps each step's n x n matrices for its backward pass: the memory
    check refuses a soft 682-state model (the suite's largest automaton) that the
    straight-through one, whose walk keeps n per step, trains."""
    from monoidlab.models.memory import check_model_memory

    check_model_memory("transform-tree", 3, 2, {"states": 682}, 64, 40)
    check_model_memory("transform-tree", 3, 2, {"states": 14, "relaxation": "soft"}, 64, 40)
    with pytest.raises(InputError, match="states 682.*GiB"):
        check_model_memory("transform-tree", 3, 2, {"states": 682, "relaxation": "soft"}, 64, 40)
