"""Tests for monoidlab.tasks: the Delétang et al. (2023) tasks and ListOps.

Each task is checked for shapes, dtypes, masks and seed reproducibility, on
hand-checked examples, and against an independent plain-Python reference (one string
at a time) on a few hundred sampled strings.
"""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from references import task_accuracy

from monoidlab.tasks import (
    DELETANG_TASKS,
    LISTOPS_VOCAB,
    TASKS,
    ListOps,
    RandomStream,
    TextTask,
    evaluate_brackets,
    evaluate_listops,
    generate_bracket_expression,
    get_task,
    listops_depth,
    listops_splits,
)
from monoidlab.tasks.cs import add_bits, bits_to_ints, ints_to_bits

ALL = sorted(n for n, cls in TASKS.items()  # tape tasks (the text tasks need data files)
             if cls.readout == "tape" and not issubclass(cls, TextTask))
REF_LENGTHS = (5, 8, 13, 24, 37)

LEVELS = {
    "even_pairs": "R", "modular_arithmetic": "R", "parity_check": "R",
    "cycle_navigation": "R", "stack_manipulation": "DCF", "reverse_string": "DCF",
    "modular_arithmetic_brackets": "DCF", "solve_equation": "DCF",
    "duplicate_string": "CS", "missing_duplicate_string": "CS", "odds_first": "CS",
    "binary_addition": "CS", "binary_multiplication": "CS", "compute_sqrt": "CS",
    "bucket_sort": "CS", "listops": "listops",
}  # fmt: skip


# -- plain-Python references: one string (list of symbols) → (targets, n_unmasked) ----------
def _bits_le(bits) -> int:
    return int("".join(reversed(bits)) or "0", 2)


def _terminated(value: int, width: int):
    s = [int(c) for c in f"{value:b}"[::-1]] + [2]
    return s + [0] * (width - len(s)), len(s)


def ref_stack(s):
    stack = []
    for a in s:
        if a in ("0", "1"):
            stack.append(int(a))
        elif a == "POP":
            if stack:
                stack.pop()
        else:
            stack.append(int(a[-1]))
    out = stack[::-1] + [2]
    return out + [0] * (len(s) + 1 - len(out)), len(out)


def ref_flat(s):
    return [eval("".join(s).rstrip("_")) % 5], 1  # Python's precedence is the standard one


def ref_missing(s):
    w = "".join(s).rstrip("_")
    i = w.index("?")
    h = len(w) // 2
    return [int(w[i + h] if i < h else w[i - h])], 1


def ref_solve(s):
    expr, rhs = "".join(s[:-2]), int(s[-1])
    sols = [v for v in range(5) if eval(expr.replace("x", str(v))) % 5 == rhs]
    assert len(sols) == 1
    return sols, 1


def ref_add_mul(s, op, width):
    i = s.index(op)
    a, b = _bits_le(s[:i]), _bits_le(s[i + 1 :])
    return _terminated(a + b if op == "+" else a * b, width)


def ref_sqrt(s):
    r = math.isqrt(int("".join(s), 2))
    w = math.ceil(len(s) / 2)
    return [int(c) for c in f"{r:b}".zfill(w)], w


def ref_listops(tokens):
    pos = 0

    def parse():
        nonlocal pos
        tok = tokens[pos]
        pos += 1
        if tok.isdigit():
            return int(tok)
        args = []
        while tokens[pos] != "]":
            args.append(parse())
        pos += 1
        if tok == "[MIN":
            return min(args)
        if tok == "[MAX":
            return max(args)
        if tok == "[MED":
            return int(statistics.median(args))
        return sum(args) % 10

    v = parse()
    assert pos == len(tokens)
    return [v], 1


REFERENCES = {
    "even_pairs": lambda s: ([sum(a != b for a, b in zip(s, s[1:])) % 2], 1),
    "parity_check": lambda s: ([s.count("1") % 2], 1),
    "cycle_navigation": lambda s: ([sum(int(a) - 1 for a in s) % 5], 1),
    "modular_arithmetic": ref_flat,
    "stack_manipulation": ref_stack,
    "reverse_string": lambda s: ([int(a) for a in s[::-1]], len(s)),
    "modular_arithmetic_brackets": lambda s: ([eval("".join(s)) % 5], 1),
    "solve_equation": ref_solve,
    "duplicate_string": lambda s: ([int(a) for a in s + s], 2 * len(s)),
    "missing_duplicate_string": ref_missing,
    "odds_first": lambda s: ([int(a) for a in s[0::2] + s[1::2]], len(s)),
    "binary_addition": lambda s: ref_add_mul(s, "+", len(s) + 1),
    "binary_multiplication": lambda s: ref_add_mul(s, "*", len(s)),
    "compute_sqrt": ref_sqrt,
    "bucket_sort": lambda s: (sorted(int(a) for a in s), len(s)),
    "listops": ref_listops,
}


def lengths_for(task, lengths=REF_LENGTHS):
    return [n for n in (task.min_length, *lengths) if n >= task.min_length]


# -- registry and base ---------------------------------------------------------------------
def test_registry_has_the_16_tape_tasks_with_levels_and_addition():
    assert set(TASKS) == set(LEVELS) | {"addition", "ag_news", "dbpedia", "sst2"} and len(DELETANG_TASKS) == 15
    assert set(DELETANG_TASKS) == set(LEVELS) - {"listops"}
    for name, level in LEVELS.items():
        task = get_task(name)
        assert task.name == name and task.level == level and task.readout == "tape"
    addition = get_task("addition", format="reversed")
    assert (type(addition).name, addition.level, addition.readout) == \
        ("addition", "LM", "next_token")
    assert addition.name == "addition-reversed"  # a run is named by its format


def test_get_task_errors_and_kwargs():
    with pytest.raises(ValueError, match="unknown task"):
        get_task("no_such_task")
    assert get_task("bucket_sort", vocab_size=3).n_classes == 3
    with pytest.raises(ValueError, match="no option.*bogus"):
        get_task("parity_check", bogus=1)


@pytest.mark.parametrize("name", ALL)
def test_shapes_dtypes_and_masks(name):
    task = get_task(name)
    for n in lengths_for(task, (7, 12)):
        b = task.sample(np.random.default_rng(1), 16, n)
        width = n - 1 if name == "modular_arithmetic" and n % 2 == 0 else n
        m = task.output_length(width)
        assert b.inputs.shape == (16, width) and b.inputs.dtype == np.int64
        assert b.targets.shape == (16, m) and b.targets.dtype == np.int64
        assert b.mask.shape == (16, m) and b.mask.dtype == bool
        assert b.lengths.dtype == np.int64 and (b.lengths == width).all()
        assert 0 <= b.inputs.min() and b.inputs.max() < len(task.input_vocab)
        assert 0 <= b.targets.min() and b.targets.max() < task.n_classes
        assert b.mask[:, 0].all()  # at least one scored position
        assert (b.targets[~b.mask] == 0).all()  # padding holds 0, as officially
        assert task.is_classification == (task.output_length(97) == 1)


@pytest.mark.parametrize("name", ALL)
def test_reproducible_by_seed(name):
    task = get_task(name)
    n = max(task.min_length, 11)
    a, b = task.sample(7, 32, n), task.sample(np.random.default_rng(7), 32, n)
    for f in ("inputs", "targets", "mask", "lengths"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    rng = np.random.default_rng(7)
    first, second = task.sample(rng, 32, n), task.sample(rng, 32, n)
    assert not np.array_equal(first.inputs, second.inputs)


@pytest.mark.parametrize("name", ALL)
def test_sample_equals_label_and_slow_reference(name):
    task, ref = get_task(name), REFERENCES[name]
    rng = np.random.default_rng(123)
    for n in lengths_for(task):
        b = task.sample(rng, 60, n)
        targets, mask = task.label(b.inputs)
        np.testing.assert_array_equal(targets, b.targets)
        np.testing.assert_array_equal(mask, b.mask)
        for row, tgt, msk in zip(b.inputs, b.targets, b.mask):
            want, n_scored = ref(task.decode(row))
            assert tgt.tolist() == want and msk.sum() == n_scored and msk[:n_scored].all()


@pytest.mark.parametrize("name", ALL)
def test_too_short_lengths_raise(name):
    task = get_task(name)
    with pytest.raises(ValueError, match="length"):
        task.sample(0, 4, task.min_length - 1)
    with pytest.raises(ValueError):
        task.sample(0, 0, max(task.min_length, 5))
    with pytest.raises(ValueError, match="must be an int"):
        task.sample(0, 4, 5.0)


def test_min_lengths():
    got = {name: get_task(name).min_length for name in ALL}
    assert got["binary_addition"] == got["binary_multiplication"] == got["solve_equation"] == 3
    assert got["missing_duplicate_string"] == 2 and got["listops"] == 4
    assert all(v == 1 for k, v in got.items() if k not in (
        "binary_addition", "binary_multiplication", "solve_equation",
        "missing_duplicate_string", "listops"))  # fmt: skip


def test_tape_format():
    task = get_task("binary_addition")
    b = task.sample(0, 5, 9)
    tokens, lengths, out = task.tape(b)
    assert tokens.shape == (5, 9 + 10) and tokens.dtype == np.int64
    assert (tokens[:, :9] == b.inputs).all() and (tokens[:, out] == task.empty_token).all()
    assert out == slice(9, 19) and (lengths == 19).all()
    assert task.empty_token == 3 and task.tape_vocab_size == 4
    t = get_task("parity_check")
    tokens, _, out = t.tape(t.sample(0, 2, 4))
    assert tokens.shape == (2, 5) and out == slice(4, 5)


def test_the_accuracy_reference_per_sample():
    task = get_task("binary_addition")
    b = task.sample(3, 20, 10)
    assert (task_accuracy(b.targets, b) == 1).all()
    pred = np.where(b.mask, b.targets, 1)  # wrong only on masked positions: still perfect
    assert (task_accuracy(pred, b) == 1).all()
    pred = b.targets.copy()
    pred[0, 0] = 1 - pred[0, 0]  # one mistake in sample 0
    acc = task_accuracy(pred, b)
    assert acc[0] == pytest.approx(1 - 1 / b.mask[0].sum()) and (acc[1:] == 1).all()
    logits = np.eye(3)[pred]  # (B, m, C) logits are reduced by argmax
    np.testing.assert_array_equal(task_accuracy(logits, b), acc)


def test_encode_decode():
    task = get_task("stack_manipulation")
    ids = task.encode(["0", "POP", "PUSH1"])
    assert ids.tolist() == [0, 2, 4] and task.decode(ids) == ["0", "POP", "PUSH1"]
    assert task.decode([2], output=True) == ["<end>"]
    with pytest.raises(ValueError, match="not in"):
        task.encode(["PUSH2"])


def test_random_stream_is_reproducible_and_in_range():
    a, b = RandomStream(np.random.default_rng(5), block=7), RandomStream(np.random.default_rng(5))
    xs = [a.randint(2, 9) for _ in range(50)]
    assert xs == [b.randint(2, 9) for _ in range(50)] and set(xs) <= set(range(2, 9))


# -- hand-checked labels -----------------------------------------------------------------------
HAND = [
    ("even_pairs", "001110", [0], None),
    ("even_pairs", "0101001", [1], None),
    ("parity_check", "1010100", [1], None),
    ("parity_check", "01111", [0], None),
    ("cycle_navigation", "20100", [3], None),  # +1 −1 0 −1 −1 = −2
    ("cycle_navigation", "2220", [2], None),
    ("modular_arithmetic", "1+2*3", [2], None),
    ("modular_arithmetic", "1-1-1", [4], None),
    ("modular_arithmetic", "0*1+4*3-2", [0], None),
    ("modular_arithmetic", "4-2*3*4+1", [1], None),  # 4 − 24 + 1 = −19
    ("stack_manipulation", ["0", "1", "1", "0", "PUSH1", "POP", "POP"],
     [1, 1, 0, 2, 0, 0, 0, 0], 4),
    ("stack_manipulation", ["1", "1", "0", "POP", "POP", "POP"], [2, 0, 0, 0, 0, 0, 0], 1),
    ("stack_manipulation", ["1", "POP", "POP", "PUSH0", "PUSH1"], [1, 0, 2, 0, 0, 0], 3),
    ("reverse_string", "011010", [0, 1, 0, 1, 1, 0], None),
    ("modular_arithmetic_brackets", "((1+2)*-3)", [1], None),
    ("modular_arithmetic_brackets", "(-4)", [1], None),
    ("modular_arithmetic_brackets", "-2", [3], None),
    ("modular_arithmetic_brackets", "(4--3)", [2], None),
    ("solve_equation", "(x+3)=1", [3], None),
    ("solve_equation", "-x=2", [3], None),
    ("solve_equation", "((x-1)+(-2))=0", [3], None),
    ("duplicate_string", "101", [1, 0, 1, 1, 0, 1], None),
    ("missing_duplicate_string", "0110?110", [0], None),
    ("missing_duplicate_string", "101?01_", [1], None),
    ("odds_first", "00110101", [0, 1, 0, 0, 0, 1, 1, 1], None),
    ("binary_addition", "11+101", [0, 0, 0, 1, 2, 0, 0], 5),  # 3 + 5 = 8
    ("binary_addition", "001+01101", [0, 1, 0, 1, 1, 2, 0, 0, 0, 0], 6),  # 4 + 22 = 26
    ("binary_addition", "1+1", [0, 1, 2, 0], 3),
    ("binary_multiplication", "11*101", [1, 1, 1, 1, 2, 0], 5),  # 3 * 5 = 15
    ("binary_multiplication", "001*01101", [0, 0, 0, 1, 1, 0, 1, 2, 0], 8),  # 88
    ("compute_sqrt", "1010", [1, 1], None),  # sqrt(10) → 3
    ("compute_sqrt", "100101", [1, 1, 0], None),  # sqrt(37) → 6
    ("compute_sqrt", "111", [1, 0], None),
    ("compute_sqrt", "0001", [0, 1], None),
    ("bucket_sort", "10204112", [0, 0, 1, 1, 1, 2, 2, 4], None),
    ("listops", "[MAX 2 9 [MIN 4 7 ] 0 ]".split(), [9], None),
]  # fmt: skip


@pytest.mark.parametrize(("name", "string", "want", "n_scored"), HAND)
def test_hand_checked_labels(name, string, want, n_scored):
    task = get_task(name)
    targets, mask = task.label(task.encode(string))
    assert targets.tolist() == [want]
    assert mask.sum() == (n_scored or len(want)) and mask[0, : n_scored or len(want)].all()


def test_odds_first_on_five_symbols_and_code_order():
    task = get_task("odds_first", vocab_size=5)
    assert task.label(task.encode("01234"))[0].tolist() == [[0, 2, 4, 1, 3]]  # abcde → acebd
    code = get_task("odds_first", vocab_size=5, code_order=True)
    assert code.label(code.encode("01234"))[0].tolist() == [[1, 3, 0, 2, 4]]


def test_odds_first_both_orders_on_1_0_0():
    x = np.array([1, 0, 0])
    assert get_task("odds_first").label(x)[0].tolist() == [[1, 0, 0]]  # the paper's text
    released = get_task("odds_first", code_order=True)  # the released code (protocol paper)
    assert released.label(x)[0].tolist() == [[0, 1, 0]]
    assert TASKS["odds_first"].paper_options == {"code_order": True}


# the released code's placeholder strings: (task, n) -> (possible inputs, their targets, masks)
PLACEHOLDERS = {
    ("binary_addition", 1): {(0,): ([0, 2], [1, 1])},
    ("binary_addition", 2): {(0, 0): ([0, 2, 0], [1, 1, 0]), (1, 0): ([1, 2, 0], [1, 1, 0]),
                             (0, 1): ([0, 1, 2], [1, 1, 1])},  # 0, 1, 2 (never 3)
    ("binary_multiplication", 1): {(0,): ([2], [1])},
    ("binary_multiplication", 2): {(0, 0): ([0, 2], [1, 1]), (1, 0): ([0, 2], [1, 1]),
                                   (0, 1): ([0, 2], [1, 1])},
    ("solve_equation", 1): {(0,): ([0], [1])},
    ("solve_equation", 2): {(0, 0): ([0], [1])},
    ("missing_duplicate_string", 1): {(1,): ([1], [1])},
}


@pytest.mark.parametrize("name, n", sorted(PLACEHOLDERS))
def test_placeholder_strings_as_the_released_code(name, n):
    task = get_task(name, placeholders=True)
    assert task.min_length == 1 and type(task).min_length > n
    assert TASKS[name].paper_options == {"placeholders": True}
    b = task.sample(np.random.default_rng(0), 300, n)
    want = PLACEHOLDERS[(name, n)]
    seen = {tuple(row) for row in b.inputs.tolist()}
    assert seen == set(want)  # every placeholder input occurs, nothing else
    for row, tgt, msk in zip(b.inputs.tolist(), b.targets.tolist(), b.mask.astype(int).tolist()):
        assert (tgt, msk) == want[tuple(row)]
    targets, mask = task.label(b.inputs)  # the labeller agrees with the sampler
    np.testing.assert_array_equal(targets, b.targets)
    np.testing.assert_array_equal(mask, b.mask)
    # at real lengths nothing changes; without the option the short lengths still raise
    np.testing.assert_array_equal(task.sample(3, 8, 9).inputs, get_task(name).sample(3, 8, 9).inputs)
    with pytest.raises(ValueError, match="no strings of length"):
        get_task(name).sample(0, 4, n)


def test_placeholder_labellers_reject_other_short_inputs():
    with pytest.raises(ValueError, match="placeholder"):
        get_task("solve_equation", placeholders=True).label(np.array([[1, 0]]))
    with pytest.raises(ValueError, match="placeholder"):
        get_task("missing_duplicate_string", placeholders=True).label(np.array([[0]]))
    with pytest.raises(ValueError, match="placeholder"):
        get_task("binary_addition", placeholders=True).label(np.array([[2, 0]]))


def test_malformed_inputs_raise():
    with pytest.raises(ValueError):
        get_task("binary_addition").label(np.array([[0, 1, 1]]))  # no operator
    with pytest.raises(ValueError):
        get_task("modular_arithmetic").label(np.array([[5, 1, 2]]))  # op at a digit slot
    with pytest.raises(ValueError):
        evaluate_brackets(list("(1+2"), 5)
    with pytest.raises(ValueError):
        get_task("missing_duplicate_string").label(np.array([[0, 1, 0, 1]]))


# -- distribution details -------------------------------------------------------------------
def test_modular_arithmetic_even_lengths():
    short = get_task("modular_arithmetic").sample(0, 50, 8)
    assert short.inputs.shape == (50, 7) and (short.lengths == 7).all()
    pad_task = get_task("modular_arithmetic", even_lengths="pad")
    pad = pad_task.sample(0, 50, 8)
    assert (
        pad.inputs.shape == (50, 8) and (pad.inputs[:, -1] == pad_task.input_vocab.index("_")).all()
    )
    for row, t in zip(pad.inputs, pad.targets):
        assert t.tolist() == ref_flat(pad_task.decode(row))[0]
    assert pad_task.label(pad_task.encode("1*_"))[0].tolist() == [[0]]  # blank digit = 0
    assert pad_task.label(pad_task.encode("1_2"))[0].tolist() == [[3]]  # blank op = +
    with pytest.raises(ValueError):
        get_task("modular_arithmetic", modulus=6)


@pytest.mark.parametrize("modulus", [2, 3, 7])
def test_modular_arithmetic_other_prime_moduli(modulus):
    task = get_task("modular_arithmetic", modulus=modulus)
    b = task.sample(modulus, 100, 15)
    for row, t in zip(b.inputs, b.targets):
        assert t[0] == eval("".join(task.decode(row))) % modulus


def test_structural_invariants_of_samplers():
    rng = np.random.default_rng(11)
    stack = get_task("stack_manipulation").sample(rng, 200, 9).inputs
    assert (stack[:, 0] <= 1).all()  # the initial stack is never empty
    first_action = np.argmax(stack >= 2, axis=1)
    assert (first_action >= 1).all() and (stack[:, -1] >= 2).all()  # ≥ 1 action when n ≥ 2
    assert ((np.arange(9) >= first_action[:, None]) == (stack >= 2)).all()
    add = get_task("binary_addition").sample(rng, 200, 8).inputs
    pos = np.argmax(add == 2, axis=1)
    assert ((add == 2).sum(1) == 1).all() and pos.min() >= 1 and pos.max() <= 6
    for row, p in zip(add, pos):
        assert row[:p].any() and row[p + 1 :].any()  # both operands nonzero
    assert len(set(pos.tolist())) == 6  # every split 1..n−2 occurs
    assert get_task("compute_sqrt").sample(rng, 500, 2).inputs.any(1).all()
    mis = get_task("missing_duplicate_string").sample(rng, 100, 7).inputs
    assert ((mis == 2).sum(1) == 1).all() and (mis[:, -1] == 3).all()
    eq = get_task("solve_equation").sample(rng, 100, 10).inputs
    assert ((eq == 9).sum(1) == 1).all() and (eq[:, -2] == 10).all() and (eq[:, -1] < 5).all()
    ma = get_task("modular_arithmetic").sample(rng, 100, 9).inputs
    assert (ma[:, 0::2] < 5).all() and ((ma[:, 1::2] >= 5) & (ma[:, 1::2] <= 7)).all()


def test_bracket_generator_lengths_and_values():
    stream = RandomStream(np.random.default_rng(2))
    for n in range(1, 40):
        toks, val = generate_bracket_expression(stream, n, 5, "+-*")
        assert len(toks) == n and evaluate_brackets(toks, 5) == val == eval("".join(toks)) % 5
    long_toks, _ = generate_bracket_expression(stream, 3000, 5, "+-*")  # no recursion limit
    assert len(long_toks) == 3000


def test_binary_helpers():
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 2, (100, 70)), rng.integers(0, 2, (100, 70))
    got = bits_to_ints(add_bits(a, b))
    assert got == [x + y for x, y in zip(bits_to_ints(a), bits_to_ints(b))]
    assert (ints_to_bits(bits_to_ints(a), 70) == a).all()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["0", "1", "POP", "PUSH0", "PUSH1"]), min_size=1, max_size=30))
def test_stack_labeller_on_arbitrary_programs(program):
    task = get_task("stack_manipulation")
    targets, mask = task.label(task.encode(program))
    want, n = ref_stack(program)
    assert targets[0].tolist() == want and mask[0].sum() == n


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**40), st.integers(0, 2**40), st.integers(0, 3), st.integers(0, 3))
def test_arithmetic_labellers_on_arbitrary_operands(a, b, pad_a, pad_b):
    bits = lambda v, pad: list(f"{v:b}"[::-1]) + ["0"] * pad  # noqa: E731
    for name, op in (("binary_addition", "+"), ("binary_multiplication", "*")):
        task = get_task(name)
        s = bits(a, pad_a) + [op] + bits(b, pad_b)
        targets, mask = task.label(task.encode(s))
        want, n = ref_add_mul(s, op, task.output_length(len(s)))
        assert targets[0].tolist() == want and mask[0].sum() == n


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("+-*"), st.integers(0, 4)), max_size=20),
       st.integers(0, 4))  # fmt: skip
def test_flat_labeller_on_arbitrary_expressions(rest, first):
    s = [str(first)] + [c for op, d in rest for c in (op, str(d))]
    task = get_task("modular_arithmetic")
    assert task.label(task.encode(s))[0].tolist() == [ref_flat(s)[0]]


# -- ListOps ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("expr", "value"), [
    ("7", 7),
    ("[MIN 3 8 ]", 3),
    ("[MAX 3 8 1 ]", 8),
    ("[MED 1 2 ]", 1),  # integer median: floor(1.5)
    ("[MED 3 9 1 ]", 3),
    ("[MED 2 9 4 7 ]", 5),  # floor((4 + 7) / 2)
    ("[SM 9 8 ]", 7),
    ("[SM 9 8 [MIN 7 5 ] ]", 2),
    ("[MAX 2 9 [MIN 4 7 ] 0 ]", 9),
    ("[MIN [MAX 1 [SM 5 6 ] ] [MED 4 4 9 ] ]", 1),  # SM 5 6 = 1
])  # fmt: skip
def test_listops_evaluator(expr, value):
    toks = expr.split()
    assert evaluate_listops(toks) == value == ref_listops(toks)[0][0]
    assert evaluate_listops([LISTOPS_VOCAB.index(t) for t in toks]) == value


@pytest.mark.parametrize("bad", ["[MIN 3", "]", "[MIN ]", "3 4", "[MIN 3 ] 4", "[FOO 1 ]"])
def test_listops_evaluator_rejects_malformed(bad):
    with pytest.raises(ValueError):
        evaluate_listops(bad.split())


def test_listops_depth():
    assert listops_depth(["4"]) == 0
    assert listops_depth("[MAX 1 [MIN 2 [SM 3 4 ] ] [MED 1 2 ] ]".split()) == 3


def _arg_counts(tokens):
    """Number of arguments of every operator in a ListOps token list."""
    counts, stack = [], []
    for tok in tokens:
        if tok == "]":
            counts.append(stack.pop())
            if stack:
                stack[-1] += 1  # the closed list is an argument of its parent
        elif tok.startswith("["):
            stack.append(0)
        elif stack:
            stack[-1] += 1
    return counts


@pytest.mark.parametrize(("min_depth", "max_depth", "max_args"), [(1, 3, 3), (2, 6, 5), (5, 5, 2)])
def test_listops_limits_respected(min_depth, max_depth, max_args):
    task = ListOps(min_depth=min_depth, max_depth=max_depth, max_args=max_args)
    rng = np.random.default_rng(4)
    seen_depths = set()
    for n in range(task.min_length, 60, 3):
        if not task.feasible_depths(n):
            with pytest.raises(ValueError, match="no ListOps"):
                task.sample(rng, 2, n)
            continue
        b = task.sample(rng, 20, n)
        assert b.inputs.shape == (20, n)
        for row, t in zip(b.inputs, b.targets):
            toks = task.decode(row)
            depth = listops_depth(toks)
            seen_depths.add(depth)
            assert min_depth <= depth <= max_depth
            assert all(2 <= c <= max_args for c in _arg_counts(toks))
            assert t[0] == ref_listops(toks)[0][0]
    assert len(seen_depths) == max_depth - min_depth + 1  # every allowed depth occurs


def test_listops_infeasible_lengths():
    task = ListOps(max_depth=2, max_args=2)  # longest: [OP [OP d d ] [OP d d ] ] = 10
    assert task.feasible_depths(10) == [2] and task.feasible_depths(11) == []
    for n in (2, 3, 11):
        with pytest.raises(ValueError):
            task.sample(0, 1, n)
    assert ListOps(min_depth=7, max_depth=10).min_length == 22


def test_listops_splits():
    splits = listops_splits()
    assert set(splits) == {"train", "test_longer", "test_deeper", "test_longer_deeper"}
    tr, lo, de = splits["train"], splits["test_longer"], splits["test_deeper"]
    assert (tr.lengths.start, tr.lengths.stop - 1, tr.min_depth, tr.max_depth) == (4, 100, 1, 6)
    assert (lo.lengths.start, lo.lengths.stop - 1, lo.max_depth) == (101, 500, 6)
    assert (de.lengths.start, de.lengths.stop - 1, de.min_depth, de.max_depth) == (22, 100, 7, 10)
    rng = np.random.default_rng(0)
    for split in (tr, de):
        b = split.sample(rng, 8)
        assert b.inputs.shape[1] in split.lengths
        d = split.task.depths(b.inputs)
        assert ((d >= split.min_depth) & (d <= split.max_depth)).all()
