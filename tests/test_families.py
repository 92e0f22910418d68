"""The language suite and the families: every file loads, and every class means what
docs/languages.md says.

Each family is compared with a plain Python definition on *all* strings up to a length (8 for
binary alphabets, fewer for larger ones) plus random longer strings.
"""

from __future__ import annotations

import itertools
import re
import tomllib

import numpy as np
import pytest

import monoidlab as ml
from monoidlab.algebra import families
from monoidlab.algebra.languages import languages_dir


def all_strings(alphabet, max_len):
    return ["".join(w) for n in range(max_len + 1) for w in itertools.product(alphabet, repeat=n)]


def random_strings(rng, alphabet, count, lo, hi):
    alphabet = np.array(list(alphabet))
    return ["".join(alphabet[rng.integers(0, len(alphabet), size=rng.integers(lo, hi + 1))])
            for _ in range(count)]


def check(automaton, reference, strings):
    """Class names from the machine equal the reference's on every string."""
    got = [automaton.classes[c] for c in automaton.classify(strings)]
    want = [str(reference(s)) for s in strings]
    bad = [(s, g, w) for s, g, w in zip(strings, got, want) if g != w]
    assert not bad, f"{automaton.name}: {len(bad)} mismatches, e.g. {bad[:5]}"


# ---------------------------------------------------------------------- the suite
SUITE_21 = ["parity", "even-pairs", "cycle-navigation", "modular-arithmetic", "dyck-2", "dyck-3",
            "dyck-4", "dyck-6", "dyck-8", "dyck-12", "tomita-3", "tomita-4", "tomita-5",
            "tomita-6", "tomita-7", "prefix-1-2", "prefix-1-4", "prefix-2-2", "prefix-2-4",
            "prefix-4-2", "prefix-4-4"]


def test_named_suites():
    assert ml.suite("ldru21") == SUITE_21
    assert ml.suite("tomita") == [f"tomita-{k}" for k in range(1, 8)]
    assert sorted(ml.suite("deletang-regular")) == sorted(
        ["parity", "even-pairs", "cycle-navigation", "modular-arithmetic-precedence"])
    names = set(ml.language_names())
    for s in ml.suite_names():
        assert set(ml.suite(s)) <= names, s
    assert set(ml.suite("all")) == names
    assert {"tomita-1", "tomita-2", "dyck-1", "modular-arithmetic-precedence"} <= names
    with pytest.raises(ValueError, match="unknown suite"):
        ml.suite("nope")


@pytest.mark.parametrize("name", sorted(p.stem for p in languages_dir().glob("*.toml")
                                        if p.stem != "suites"))
def test_every_suite_file_loads(name):
    a = ml.load_language(name)
    assert a.name == name and a.description
    assert a.delta.shape == (a.n_states, a.n_symbols)
    data = tomllib.loads((languages_dir() / f"{name}.toml").read_text())
    if "family" in data:  # the file is exactly its family call
        assert a == families.build_family(data["family"], data.get("params", {}))


@pytest.mark.parametrize("k", range(1, 8))
def test_tomita_family_equals_explicit_spec(k):
    assert families.tomita(k) == ml.load_language(f"tomita-{k}")


def test_parity_family_equals_spec():
    assert families.parity() == ml.load_language("parity")
    assert families.count_mod(2).delta.tolist() == families.parity().delta.tolist()


# ---------------------------------------------------------------------- plain definitions
def ref_dyck(n):
    def f(s):
        d = 0
        for c in s:
            d += 1 if c == "0" else -1
            if d < 0 or d > n:
                return "reject"
        return "accept" if d == 0 else "reject"
    return f


def runs(s):
    return [(c, len(list(g))) for c, g in itertools.groupby(s)]


def ref_tomita3(s):
    r = runs(s)
    bad = any(c == "1" and n % 2 and i + 1 < len(r) and r[i + 1][1] % 2
              for i, (c, n) in enumerate(r))
    return "reject" if bad else "accept"


TOMITA = {
    1: lambda s: set(s) <= {"0"},
    2: lambda s: re.fullmatch("(01)*", s) is not None,
    3: lambda s: ref_tomita3(s) == "accept",
    4: lambda s: "000" not in s,
    5: lambda s: s.count("0") % 2 == 0 and s.count("1") % 2 == 0,
    6: lambda s: (s.count("1") - s.count("0")) % 3 == 0,
    7: lambda s: re.fullmatch("0*1*0*1*", s) is not None,
}


@pytest.mark.parametrize("k", range(1, 8))
def test_tomita_semantics(k, rng):
    strings = all_strings("01", 10) + random_strings(rng, "01", 500, 11, 60)
    check(ml.load_language(f"tomita-{k}"), lambda s: "accept" if TOMITA[k](s) else "reject", strings)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 6, 8, 12])
def test_dyck_semantics(n, rng):
    # random walks near the depth bound as well as uniform strings
    walks = ["0" * d + s + "1" * d for d, s in zip(rng.integers(0, n + 1, 300),
                                                 random_strings(rng, "01", 300, 0, 40))]
    check(ml.load_language(f"dyck-{n}"), ref_dyck(n), all_strings("01", 10) + walks)


def test_dyck_recursive_definition():
    """D_1 = (01)*, D_n = (0 D_{n-1} 1)*: build the words up to length 10 and compare."""
    def grow(prev, max_len):
        blocks = {"0" + w + "1" for w in prev if len(w) + 2 <= max_len}
        out, frontier = {""}, {""}
        while frontier:
            frontier = {w + b for w in frontier for b in blocks if len(w + b) <= max_len} - out
            out |= frontier
        return out

    lang = {""}
    for n in range(1, 5):
        lang = grow(lang, 10)
        a = ml.load_language(f"dyck-{n}")
        words = all_strings("01", 10)
        assert {w for w, c in zip(words, a.classify(words)) if c == 1} == lang


def test_parity_and_count_mod(rng):
    strings = all_strings("01", 9) + random_strings(rng, "01", 300, 10, 80)
    check(ml.load_language("parity"), lambda s: s.count("1") % 2, strings)
    check(families.count_mod(3), lambda s: s.count("1") % 3, strings)
    check(families.count_mod(4, symbol="b", alphabet="abc"), lambda s: s.count("b") % 4,
          all_strings("abc", 6))


def test_even_pairs(rng):
    strings = all_strings("01", 10) + random_strings(rng, "01", 300, 11, 60)
    a = ml.load_language("even-pairs")
    check(a, lambda s: sum(x != y for x, y in zip(s, s[1:])) % 2, strings)
    check(a, lambda s: int(len(s) > 0 and s[0] != s[-1]), strings)


def test_cycle_navigation(rng):
    strings = all_strings("012", 7) + random_strings(rng, "012", 300, 8, 60)
    check(ml.load_language("cycle-navigation"), lambda s: sum(int(c) - 1 for c in s) % 5, strings)


EXPR = re.compile(r"[0-4]([-+*][0-4])*")


def ref_left_to_right(s):
    if not EXPR.fullmatch(s):
        return "incomplete"
    v = int(s[0])
    for op, d in zip(s[1::2], s[2::2]):
        v = {"+": v + int(d), "-": v - int(d), "*": v * int(d)}[op] % 5
    return v


def ref_precedence(s):
    if not EXPR.fullmatch(s):
        return "incomplete"
    # Only binary operators on single digits reach eval (the regex rules out unary minus,
    # "**" and leading zeros); Python's precedence is the standard one.
    return eval(s) % 5  # noqa: S307


def random_expressions(rng, count, max_terms):
    out = []
    for _ in range(count):
        n = int(rng.integers(1, max_terms + 1))
        digits = rng.integers(0, 5, n).astype(str)
        ops = rng.choice(list("+-*"), n - 1)
        out.append("".join(d + o for d, o in zip(digits, list(ops) + [""])))
    return out


@pytest.mark.parametrize("name,ref", [("modular-arithmetic", ref_left_to_right),
                                      ("modular-arithmetic-precedence", ref_precedence)])
def test_modular_arithmetic(name, ref, rng):
    a = ml.load_language(name)
    strings = (all_strings("01234+-*", 5) + random_expressions(rng, 3000, 25)
               + random_strings(rng, "01234+-*", 300, 6, 30))
    check(a, ref, strings)


def test_modular_arithmetic_conventions_differ():
    lr, prec = ml.load_language("modular-arithmetic"), ml.load_language("modular-arithmetic-precedence")
    s = ["1+2*3", "4-3*2", "2*3+4"]
    assert [lr.classes[c] for c in lr.classify(s)] == ["4", "2", "0"]
    assert [prec.classes[c] for c in prec.classify(s)] == ["2", "3", "0"]


@pytest.mark.parametrize("p,q", [(1, 2), (1, 4), (2, 2), (2, 4), (4, 2), (4, 4), (3, 3)])
def test_prefix(p, q, rng):
    alphabet = "".join(str(i) for i in range(q))
    a = families.prefix(p, q) if (p, q) == (3, 3) else ml.load_language(f"prefix-{p}-{q}")
    assert a.n_classes == q ** p + 1

    def ref(s):
        return "short" if len(s) < p else s[:p]

    strings = all_strings(alphabet, max(p + 2, 8 if q == 2 else 5)) + random_strings(rng, alphabet, 200, 0, 30)
    check(a, ref, strings)
    # the class index is the base-q code of the prefix
    long = [s for s in strings if len(s) >= p]
    assert a.classify(long).tolist() == [int(s[:p], q) for s in long]


def ref_addition(s):
    if len(s) % 3:
        return "reject"
    carry = 0
    for a, b, c in zip(s[0::3], s[1::3], s[2::3]):
        total = int(a) + int(b) + carry
        if int(c) != total % 10:
            return "reject"
        carry = total // 10
    return "accept" if carry == 0 else "reject"


def interleave(x: int, y: int, width: int) -> str:
    z = x + y
    digits = lambda v: [(v // 10 ** i) % 10 for i in range(width)]  # noqa: E731
    return "".join(f"{a}{b}{c}" for a, b, c in zip(digits(x), digits(y), digits(z)))


def test_addition_interleaved(rng):
    a = ml.load_language("addition-interleaved")
    good = [interleave(int(x), int(y), int(w)) for x, y, w in
            zip(rng.integers(0, 10**6, 400), rng.integers(0, 10**6, 400), rng.integers(7, 9, 400))]
    assert a.classify(good).tolist() == [1] * len(good)
    # corrupt one digit of each: always wrong
    bad = []
    for s in good:
        i = int(rng.integers(0, len(s)))
        bad.append(s[:i] + str((int(s[i]) + int(rng.integers(1, 10))) % 10) + s[i + 1:])
    strings = all_strings("0123456789", 4) + good + bad + random_strings(rng, "0123456789", 300, 3, 30)
    check(a, ref_addition, strings)
    # a carry out of the top digit is rejected unless written as one more triple
    assert a.classify(["559", "550", "550001"]).tolist() == [0, 0, 1]


def test_full_transformation_family():
    for n in range(1, 5):
        a = families.full_transformation(n)
        assert a.n_states == n and a.monoid().size == n ** n


@pytest.mark.parametrize("call,match", [
    (lambda: families.tomita(8), "1..7"),
    (lambda: families.dyck(0), "n must be"),
    (lambda: families.build_family("nope", {}), "unknown family"),
    (lambda: families.build_family("dyck", {"n": 2, "m": 1}), "unknown parameter"),
])
def test_family_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ------------------------------------------------------------------ documented bounds
AT_BOUND = [  # every family at its documented upper bounds (languages/README.md)
    ("count-mod", {"k": 100_000}), ("count-mod", {"k": 500, "symbol": "s1",
                                                  "alphabet": [f"s{i}" for i in range(1000)]}),
    ("cycle-navigation", {"k": 100_000}), ("modular-arithmetic", {"mod": 256}),
    ("modular-arithmetic-precedence", {"mod": 48}), ("dyck", {"n": 100_000}),
    ("prefix", {"p": 16, "q": 2}), ("prefix", {"p": 1, "q": 700}),
    ("full-transformation", {"n": 100_000}),
]
OVER = [("count-mod", {"k": 100_001}), ("count-mod", {"k": 600, "alphabet": [f"s{i}" for i in
                                                                             range(1000)]}),
        ("count-mod", {"k": 2, "alphabet": [str(i) for i in range(1001)]}),
        ("cycle-navigation", {"k": 100_001}), ("modular-arithmetic", {"mod": 257}),
        ("modular-arithmetic-precedence", {"mod": 49}), ("dyck", {"n": 100_001}),
        ("prefix", {"p": 17, "q": 2}), ("prefix", {"p": 1, "q": 701}),
        ("prefix", {"p": 2, "q": 300}), ("prefix", {"p": 10**9, "q": 2}),
        ("full-transformation", {"n": 100_001})]


@pytest.mark.parametrize("family, params", AT_BOUND, ids=[f"{f}-{sorted(p)}" for f, p in AT_BOUND])
def test_families_load_at_their_bounds(family, params):
    """Loading and minimising at a bound works (about a second each; the time itself is
    measured by bench/bench_minimise.py, not asserted here)."""
    a = families.build_family(family, params)
    assert a.n_states >= 1 and families.table_cells(family, params) <= families.MAX_CELLS


@pytest.mark.parametrize("family, params", OVER, ids=[f"{f}-{i}" for i, (f, _) in enumerate(OVER)])
def test_families_refuse_beyond_their_bounds_before_building(family, params, monkeypatch):
    import functools

    @functools.wraps(families.FAMILIES[family])  # same signature: same parameter check
    def never(*a, **k):
        raise AssertionError("the generator ran")

    monkeypatch.setitem(families.FAMILIES, family, never)
    with pytest.raises(ml.SpecError, match="at most") as info:
        families.build_family(family, params, source="x.toml")
    assert info.value.field.startswith("params")


@pytest.mark.parametrize("family, params", [
    ("count-mod", {"k": 4, "alphabet": ["a", "b", "c"], "symbol": "a"}), ("cycle-navigation", {"k": 7}),
    ("modular-arithmetic", {"mod": 3}), ("modular-arithmetic-precedence", {"mod": 3}),
    ("dyck", {"n": 5}), ("prefix", {"p": 3, "q": 2}), ("prefix", {"p": 4, "q": 1}),
    ("full-transformation", {"n": 5})])
def test_table_cells_counts_the_generated_table(family, params, monkeypatch):
    """The cell bound is checked from the parameters: the formula matches the table built."""
    import monoidlab.algebra.automaton as automaton_mod

    seen = {}
    real = automaton_mod.minimise

    def spy(delta, start, output):
        seen["cells"] = np.asarray(delta).size
        return real(delta, start, output)

    monkeypatch.setattr(automaton_mod, "minimise", spy)
    families.build_family(family, params)
    assert families.table_cells(family, params) == seen["cells"]


def test_count_mod_symbol_must_be_in_the_alphabet():
    with pytest.raises(ml.SpecError, match="'x' is not in the alphabet"):
        families.build_family("count-mod", {"k": 3, "symbol": "x"}, source="x.toml")
