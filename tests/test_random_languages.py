"""monoidlab.algebra.random_languages and the committed random-language set (bench/random-languages):
each generator against a brute-force definition, minimality against automata-lib's own
minimisation, monoid sizes against libsemigroups, the set reproducible from its seed. The
benchmark's held-out protocol (monoidlab.studies.random_languages) is tested in
tests/test_study_random_languages.py."""

from __future__ import annotations

import itertools
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

import monoidlab as ml
from monoidlab.algebra.random_languages import (
    bounded_stack,
    counter_with_reset,
    draw,
    draw_benchmark,
    factor_test,
    long_range,
    mixed_lengths,
    prefix_test,
    product,
    random_dfa,
    suffix_test,
)
from monoidlab.algebra.spec import spec_from_text, spec_text
from monoidlab.errors import InputError

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "bench" / "random-languages"


def words(alphabet, max_len=7):
    return ["".join(w) for n in range(max_len + 1) for w in itertools.product(alphabet, repeat=n)]


@pytest.fixture(scope="module")
def drawn():
    return draw_benchmark(36, 2026, max_monoid=1000)


def test_word_tests_match_python_string_methods():
    ab = "abc"
    ws = words(ab, 6)
    for w in ("ab", "aba", "cc", "abca"):
        assert suffix_test(w, ab).classify(ws).tolist() == [int(x.endswith(w)) for x in ws]
        assert prefix_test(w, ab).classify(ws).tolist() == [int(x.startswith(w)) for x in ws]
        assert factor_test(w, ab).classify(ws).tolist() == [int(w in x) for x in ws]


def test_counter_with_reset_matches_a_fold():
    ws = words("abr", 7)
    for k, clamp in ((3, False), (4, True), (2, False)):
        def fold(s, k=k, clamp=clamp):
            c = 0
            for ch in s:
                c = 0 if ch == "r" else (min(c + 1, k - 1) if clamp else (c + 1) % k) \
                    if ch == "a" else c
            return c
        auto = counter_with_reset(k, "abr", clamp=clamp)
        assert auto.classify(ws).tolist() == [fold(s) for s in ws]


def test_bounded_stack_matches_a_stack():
    ws = words("()[]", 6)
    for depth in (1, 2, 3):
        def ok(s, depth=depth):
            st = []
            for ch in s:
                if ch in "([":
                    st.append(ch)
                    if len(st) > depth:
                        return 0
                elif not st or st.pop() != {")": "(", "]": "["}[ch]:
                    return 0
            return int(not st)
        assert bounded_stack(depth).classify(ws).tolist() == [ok(s) for s in ws]


def test_product_is_the_pair_of_classes():
    a, b = counter_with_reset(3, "abc", count="a", reset="c"), suffix_test("ba", "abc")
    ws = words("abc", 6)
    pair = product(a, b).classify(ws)
    assert pair.tolist() == (a.classify(ws) * 2 + b.classify(ws)).tolist()
    x, y = suffix_test("ab", "ab"), factor_test("bb", "ab")
    ws2 = words("ab", 8)
    for op, f in (("and", np.logical_and), ("or", np.logical_or), ("xor", np.logical_xor)):
        assert product(x, y, op).classify(ws2).tolist() == \
            f(x.classify(ws2), y.classify(ws2)).astype(int).tolist()
    with pytest.raises(InputError, match="alphabets differ"):
        product(x, a)


def test_mixed_lengths_matches_a_matrix_power(drawn):
    """The exact reachable sets, computed again as powers of the adjacency matrix."""
    for d in drawn[:12]:
        auto = d.automaton
        n = auto.n_states
        A = np.zeros((n, n), np.int64)
        for q in range(n):
            A[q, np.asarray(auto.delta)[q]] = 1
        v = np.zeros(n, np.int64)
        v[auto.start] = 1
        expect = []
        for L in range(1, 121):
            v = np.minimum(v @ A, 1)
            if L >= 41:
                expect.append(len(set(np.asarray(auto.output)[v > 0])) > 1)
        assert mixed_lengths(auto, range(41, 121)).tolist() == expect, auto.name


def test_random_dfas_are_minimal_at_their_size_by_automata_lib(drawn):
    dfas = [d for d in drawn if d.kind == "dfa"]
    sizes = {(d.params["n_states"], d.params["n_symbols"]) for d in dfas}
    assert {n for n, _ in sizes} == set(range(3, 9)) and {k for _, k in sizes} == {2, 3, 4}
    for d in dfas[:10]:
        assert d.automaton.n_states == d.params["n_states"]
        assert d.automaton.n_symbols == d.params["n_symbols"]
        # automata-lib's minimisation (an independent implementation) finds nothing to merge
        assert len(d.automaton.to_automata_lib().minify().states) == d.params["n_states"]


def test_monoid_sizes_match_libsemigroups(drawn):
    sys.path.insert(0, str(Path(__file__).parent))
    from oracle import froidure_pin

    for d in drawn[:10]:
        assert froidure_pin(d.automaton).size() == d.monoid_size == d.automaton.monoid().size


def test_monoid_sizes_and_aperiodicity_match_gap(drawn):
    """GAP, a second independent oracle, on 10 languages of every kind drawn."""
    sys.path.insert(0, str(Path(__file__).parent))
    from oracle import gap_monoid_facts

    kinds: dict[str, list] = {}
    for d in drawn:
        kinds.setdefault(d.kind, []).append(d)
    pick = [d for i in range(len(drawn)) for v in kinds.values() if i < len(v)
            for d in [v[i]]][:10]
    assert len({d.kind for d in pick}) == len(kinds) and len(pick) == 10
    facts = gap_monoid_facts([d.automaton for d in pick])
    assert [f["size"] for f in facts] == [d.monoid_size for d in pick]
    assert [f["aperiodic"] for f in facts] == [d.aperiodic for d in pick]


def test_every_drawn_language_has_two_classes_at_long_lengths(drawn):
    for d in drawn:
        mixed = mixed_lengths(d.automaton)
        assert mixed.mean() >= 0.5 and mixed[-10:].any() and long_range(d.automaton)
        assert d.monoid_size <= 1000
    # "shorter than 3": one class at every long length, so it is refused
    short = ml.Automaton(alphabet=["a"], delta=[[1], [2], [3], [3]], start=0,
                         output=[1, 1, 1, 0])
    assert not long_range(short) and not mixed_lengths(short).any()
    # two classes only at lengths 0, 1 mod 5 (40 % of them): refused; at 0, 1, 2 mod 5: kept
    for residues, kept in (({0, 1}, False), ({0, 1, 2}, True)):
        delta = [[((r + 1) % 5) * 2 + (1 - p), ((r + 1) % 5) * 2 + p]
                 for r in range(5) for p in range(2)]
        out = [int(r in residues and p == 0) for r in range(5) for p in range(2)]
        auto = ml.Automaton(alphabet=["a", "b"], delta=delta, start=0, output=out)
        assert mixed_lengths(auto).mean() == pytest.approx(len(residues) / 5, abs=0.01)
        assert long_range(auto) is kept
    # the bracket languages are single-class at odd lengths and still kept
    assert mixed_lengths(bounded_stack(2)).mean() == pytest.approx(0.5, abs=0.01)


def test_same_seed_same_languages_and_different_seed_different():
    a = draw_benchmark(8, 7)
    b = draw_benchmark(8, 7)
    c = draw_benchmark(8, 8)
    assert [x.automaton for x in a] == [x.automaton for x in b]
    assert [x.automaton for x in a] != [x.automaton for x in c]
    assert len({x.automaton for x in a}) == 8  # no duplicates
    rng1, rng2 = np.random.default_rng(5), np.random.default_rng(5)
    assert random_dfa(rng1, 6, 3) == random_dfa(rng2, 6, 3)


def test_drawing_is_bounded_and_errors_are_clear():
    with pytest.raises(InputError, match="no dfa language from seed 1 passed the filters in 5"):
        draw("dfa", 1, size=(8, 4), max_monoid=2, max_tries=5)
    with pytest.raises(InputError, match="unknown kind 'dfaa'"):
        draw("dfaa", 1)
    with pytest.raises(InputError, match="non-empty word over"):
        suffix_test("az", "ab")


def test_the_committed_set_is_the_drawn_set(drawn):
    """bench/random-languages holds exactly draw_benchmark(36, 2026, max_monoid=1000), each spec
    reading back to its machine; the split's halves are disjoint, 18 each, every kind in both."""
    split = tomllib.loads((SPECS / "split.toml").read_text())
    dev, held = split["dev"], split["held_out"]
    assert len(dev) == len(held) == 18 and not set(dev) & set(held)
    files = sorted(SPECS.glob("rl-*.toml"))
    assert [f.stem for f in files] == sorted(dev + held)
    kind_of = {}
    for i, d in enumerate(drawn):
        name = f"rl-{i:02d}-{d.automaton.name}"
        text = (SPECS / f"{name}.toml").read_text()
        assert f"seed {d.seed}" in text
        assert ml.load_language(str(SPECS / f"{name}.toml")) == d.automaton
        kind_of[name] = d.kind
    assert {kind_of[n] for n in dev} == {kind_of[n] for n in held} == set(kind_of.values())


def test_spec_text_round_trips(drawn):
    for d in drawn:
        again = spec_from_text(spec_text(d.automaton, comment="a\nb"))
        assert again == d.automaton and again.classes == d.automaton.classes
    dyck = ml.load_language("dyck-3")
    assert spec_from_text(spec_text(dyck)) == dyck


def test_a_benchmark_place_with_no_new_language_is_an_error_not_a_hang(monkeypatch):
    """A kind with few distinct languages (bounded stacks) runs out: the draw says which place
    instead of trying seeds forever; ``exclude`` skips an earlier benchmark's languages."""
    from monoidlab.algebra import random_languages as rl
    from monoidlab.errors import InputError

    first = rl.draw_benchmark(2, 5, max_monoid=1000)
    again = rl.draw_benchmark(2, 5, max_monoid=1000, exclude=[first[1].automaton])
    assert again[0].automaton == first[0].automaton  # the place before is drawn as it was
    assert again[1].automaton != first[1].automaton  # the excluded one is skipped
    monkeypatch.setattr(rl, "MAX_REPEATS", 1)
    with pytest.raises(InputError, match=r"place 0 \(dfa 3x2\) found only languages already "
                                         r"drawn or excluded in 1 seeds"):
        rl.draw_benchmark(2, 5, max_monoid=1000, exclude=[first[0].automaton])


def test_the_wide_stack_kind_draws_stacks_the_suite_and_the_narrow_kind_lack():
    """``stack`` (WIDE_KINDS): 1-3 bracket types, depth 1-5, never a suite dyck-k under other
    letters; each is the bounded stack it says, checked against a Python stack."""
    from monoidlab.algebra import random_languages as rl

    seen = set()
    for seed in range(40):
        d = rl.draw("stack", seed, max_monoid=1000)
        t, depth = d.params["types"], d.params["depth"]
        assert 1 <= t <= 3 and 1 <= depth <= 5 and d.monoid_size <= 1000
        assert t > 1 or depth not in rl.SUITE_DYCK_DEPTHS
        seen.add((t, depth))
        assert d.automaton == bounded_stack(depth, rl.BRACKETS[:t])
    assert (1, 5) in seen and (3, 1) in seen  # more than the narrow kind's three
    with pytest.raises(InputError, match="kinds must start with 'dfa'"):
        rl.draw_benchmark(2, 5, kinds=("stack", "dfa"))
    with pytest.raises(InputError, match="unknown kind 'stak'"):
        rl.draw_benchmark(2, 5, kinds=("dfa", "stak"))
