"""Automaton: minimisation (vs automata-lib and brute force), canonical form, interop, strings."""

from __future__ import annotations

import itertools
import re
import tomllib

import numpy as np
import pytest
from automata.fa.dfa import DFA
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import fold_state, random_automaton

import monoidlab as ml
from monoidlab import Automaton, SpecError
from monoidlab.algebra import families
from monoidlab.algebra.languages import languages_dir


def raw_dfa(delta, start, accept, alphabet) -> DFA:
    """An automata-lib DFA straight from a table (no monoidlab code involved)."""
    n = len(delta)
    return DFA(states=set(range(n)), input_symbols=set(alphabet),
               transitions={q: {a: int(delta[q][i]) for i, a in enumerate(alphabet)}
                            for q in range(n)},
               initial_state=int(start), final_states={q for q in range(n) if accept[q]})


def automata_lib_minimal_states(d: DFA) -> int:
    m = d.minify()
    return len(m.states)


def all_words(k: int, max_len: int):
    for n in range(max_len + 1):
        yield from itertools.product(range(k), repeat=n)


# ---------------------------------------------------------------------- minimisation
def explicit_spec_tables():
    """(name, delta, start, accept, alphabet) read directly from the explicit suite TOML files."""
    out = []
    for path in sorted(languages_dir().glob("*.toml")):
        data = tomllib.loads(path.read_text())
        if "transitions" not in data or "accept" not in data:
            continue
        states = list(data["transitions"])
        idx = {s: i for i, s in enumerate(states)}
        sink = len(states)
        delta = [[idx.get(data["transitions"][s].get(a), sink) for a in data["alphabet"]]
                 for s in states] + [[sink] * len(data["alphabet"])]
        accept = [s in data["accept"] for s in states] + [False]
        out.append((path.stem, delta, idx[data["start"]], accept, data["alphabet"]))
    return out


@pytest.mark.parametrize("name,delta,start,accept,alphabet", explicit_spec_tables(),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_suite_recognisers_agree_with_automata_lib(name, delta, start, accept, alphabet):
    ours = ml.load_language(name)
    d = raw_dfa(delta, start, accept, alphabet)
    assert ours.n_states == automata_lib_minimal_states(d)
    assert ours.to_automata_lib() == d


@pytest.mark.parametrize("name", ["dyck-2", "dyck-6", "even-pairs", "tomita-3",
                                  "addition-interleaved"])
def test_family_recognisers_are_already_minimal(name):
    a = ml.load_language(name)
    assert automata_lib_minimal_states(a.to_automata_lib()) == a.n_states


def test_random_recognisers_agree_with_automata_lib(rng):
    for _ in range(200):
        n, k = int(rng.integers(1, 11)), int(rng.integers(1, 4))
        delta = rng.integers(0, n, size=(n, k))
        accept = rng.integers(0, 2, size=n).astype(bool)
        start = int(rng.integers(0, n))
        alphabet = list("abc"[:k])
        ours = Automaton(alphabet=alphabet, delta=delta, start=start, output=accept.astype(int))
        d = raw_dfa(delta, start, accept, alphabet)
        assert ours.n_states == automata_lib_minimal_states(d), (delta, start, accept)
        assert ours.to_automata_lib() == d


def test_automata_lib_equality_is_not_vacuous():
    t4, t7 = ml.load_language("tomita-4"), ml.load_language("tomita-7")
    assert t4.to_automata_lib() != t7.to_automata_lib()


def brute_force_minimal_size(delta, start, output) -> int:
    """Reachable states told apart by their class sequences on all words of length < n."""
    n, k = delta.shape
    reach, todo = {start}, [start]
    while todo:
        q = todo.pop()
        for t in delta[q]:
            if int(t) not in reach:
                reach.add(int(t))
                todo.append(int(t))
    words = list(all_words(k, max(n - 1, 0)))

    def signature(q):
        sig = []
        for w in words:
            p = q
            for a in w:
                p = delta[p, a]
            sig.append(int(output[p]))
        return tuple(sig)

    return len({signature(q) for q in reach})


def test_moore_minimisation_matches_brute_force(rng):
    for _ in range(150):
        n, k, c = int(rng.integers(1, 7)), int(rng.integers(1, 3)), int(rng.integers(1, 4))
        delta = rng.integers(0, n, size=(n, k))
        output = rng.integers(0, c, size=n)
        start = int(rng.integers(0, n))
        a = Automaton(alphabet=list("ab"[:k]), delta=delta, start=start, output=output,
                      classes=[f"c{i}" for i in range(c)])
        assert a.n_states == brute_force_minimal_size(delta, start, output)
        # same class on every short word
        for w in all_words(k, 5):
            q = start
            for x in w:
                q = delta[q, x]
            assert a.output[fold_state(a, w)] == output[q]


def test_minimal_machines_are_canonical(rng):
    """Relabelling the states of any machine gives an identical minimal table."""
    for _ in range(100):
        n, k = int(rng.integers(1, 9)), int(rng.integers(1, 4))
        delta = rng.integers(0, n, size=(n, k))
        output = rng.integers(0, 3, size=n)
        start = int(rng.integers(0, n))
        kw = dict(alphabet=list("abc"[:k]), classes=["x", "y", "z"])
        a = Automaton(delta=delta, start=start, output=output, **kw)
        perm = rng.permutation(n)  # old state q becomes perm[q]
        pdelta = np.empty_like(delta)
        pdelta[perm] = perm[delta]
        poutput = np.empty_like(output)
        poutput[perm] = output
        b = Automaton(delta=pdelta, start=int(perm[start]), output=poutput, **kw)
        assert a == b
        assert a.start == b.start == 0
        assert np.array_equal(a.delta, b.delta) and np.array_equal(a.output, b.output)


def test_unreachable_states_are_dropped_and_names_kept():
    a = Automaton(alphabet=["a"], delta=[[0], [0], [1]], start=0, output=[1, 0, 0],
                  state_names=["p", "q", "r"])
    assert a.n_states == 1 and a.state_names == ("p",)


# ---------------------------------------------------------------------- interop
@pytest.mark.parametrize("name", ["tomita-1", "tomita-3", "tomita-7", "dyck-4", "even-pairs",
                                  "parity"])
def test_automata_lib_round_trip(name):
    a = ml.load_language(name)
    b = Automaton.from_dfa(a.to_automata_lib(), alphabet=a.alphabet)
    assert b.alphabet == a.alphabet
    assert np.array_equal(a.delta, b.delta) and np.array_equal(a.output, b.output)


def test_from_dfa_completes_partial_dfas():
    d = DFA(states={"p", "q"}, input_symbols={"a", "b"},
            transitions={"p": {"a": "q"}, "q": {"b": "p"}}, initial_state="p",
            final_states={"p"}, allow_partial=True)
    a = Automaton.from_dfa(d)
    assert a.alphabet == ("a", "b") and a.n_states == 3
    assert a.classify(["", "ab", "abab", "b", "aa", "aba"]).tolist() == [1, 1, 1, 0, 0, 0]


def test_to_automata_lib_needs_two_classes():
    with pytest.raises(ValueError, match="5 classes"):
        families.cycle_navigation().to_automata_lib()


@pytest.mark.parametrize("regex,alphabet,python", [
    ("(01)*", "01", "(01)*"),
    ("0*1*0*1*", "01", "0*1*0*1*"),
    ("(a|b)*abb", "ab", "(a|b)*abb"),
    ("a(b|c)+a?", "abc", "a(b|c)+a?"),
    ("(ab|ba)*c", "abc", "(ab|ba)*c"),
])
def test_from_regex_matches_python_re(regex, alphabet, python):
    a = Automaton.from_regex(regex, list(alphabet))
    words = ["".join(w) for n in range(8) for w in itertools.product(alphabet, repeat=n)]
    expected = [int(re.fullmatch(python, w) is not None) for w in words]
    assert a.classify(words).tolist() == expected


def test_from_regex_hand_classified():
    a = Automaton.from_regex("(a|b)*abb", ["a", "b"])
    assert a.classify(["abb", "aabb", "babb", "", "ab", "abba", "bbb"]).tolist() == [1, 1, 1, 0, 0, 0, 0]
    assert a.n_states == 4  # the textbook minimal DFA of (a|b)*abb
    b = Automaton.from_regex("0(10)*", ["0", "1"])
    assert b.classify(["0", "010", "01010", "", "01", "0110"]).tolist() == [1, 1, 1, 0, 0, 0]


def test_from_regex_gives_the_tomita_languages():
    assert Automaton.from_regex("0*", ["0", "1"]) == ml.load_language("tomita-1")
    assert Automaton.from_regex("(01)*", ["0", "1"]) == ml.load_language("tomita-2")
    assert Automaton.from_regex("0*1*0*1*", ["0", "1"]) == ml.load_language("tomita-7")


def test_from_regex_error_is_a_spec_error():
    with pytest.raises(SpecError, match="regex"):
        Automaton.from_regex("(ab", ["a", "b"])


# ---------------------------------------------------------------------- strings
def random_strings(rng, alphabet, count, max_len):
    return [[alphabet[i] for i in rng.integers(0, len(alphabet), size=rng.integers(0, max_len + 1))]
            for _ in range(count)]


def test_encode_decode_round_trip_single_char(rng):
    a = ml.load_language("modular-arithmetic")
    strings = ["".join(s) for s in random_strings(rng, a.alphabet, 300, 30)] + [""]
    tokens, lengths = a.encode(strings)
    assert tokens.shape == (len(strings), max(map(len, strings))) and tokens.dtype == np.int64
    assert lengths.tolist() == [len(s) for s in strings]
    assert (tokens[np.arange(tokens.shape[1])[None, :] >= lengths[:, None]] == 0).all()
    for s, row in zip(strings, tokens):
        assert [a.alphabet[t] for t in row[: len(s)]] == list(s)
    assert a.decode(tokens, lengths) == strings


def test_encode_non_ascii_symbols():
    a = Automaton(alphabet=["α", "β", "😀"], delta=[[0, 1, 0], [1, 0, 1]], start=0, output=[0, 1])
    tokens, lengths = a.encode(["αβ😀", "😀", ""])
    assert tokens.tolist() == [[0, 1, 2], [2, 0, 0], [0, 0, 0]] and lengths.tolist() == [3, 1, 0]
    assert a.decode(tokens, lengths) == ["αβ😀", "😀", ""]


@pytest.fixture(scope="module")
def stack_machine():
    """A multi-character alphabet (Delétang's stack actions): state = top of a depth-1 stack."""
    alphabet = ["PUSH0", "PUSH1", "POP", "0"]
    delta = [[1, 2, 0, 0], [1, 2, 0, 1], [1, 2, 0, 2]]
    return Automaton(alphabet=alphabet, delta=delta, start=0, output=[0, 1, 2],
                     classes=["empty", "top0", "top1"], name="stack")


def test_encode_decode_round_trip_multi_char(rng, stack_machine):
    a = stack_machine
    assert not a.single_char
    strings = random_strings(rng, a.alphabet, 200, 12) + [[]]
    tokens, lengths = a.encode(strings)
    assert a.decode(tokens, lengths) == strings
    assert a.classify(strings).tolist() == [a.output[fold_state(a, [a.alphabet.index(x) for x in s])]
                                           for s in strings]


def test_encode_accepts_symbol_lists_for_single_char_alphabets(parity):
    assert parity.encode([["1", "0"], "01"])[0].tolist() == [[1, 0], [0, 1]]


@pytest.mark.parametrize("strings,needle", [
    (["01", "0x1"], "'x' in string 1"),
    (["", "2"], "'2' in string 1"),
    ([["0"], ["1", "11"]], "'11' in string 1"),
])
def test_encode_unknown_symbol_is_a_clear_error(parity, strings, needle):
    with pytest.raises(ValueError, match=re.escape(needle)) as exc:
        parity.encode(strings)
    assert "alphabet" in str(exc.value) and "parity" in str(exc.value)


def test_encode_multi_char_errors(stack_machine):
    with pytest.raises(ValueError, match="'PUSH2' in string 0"):
        stack_machine.encode([["PUSH0", "PUSH2"]])
    with pytest.raises(ValueError, match="list of symbols"):
        stack_machine.encode(["PUSH0POP"])


def test_encode_empty_batch(parity):
    tokens, lengths = parity.encode([])
    assert tokens.shape == (0, 0) and lengths.shape == (0,)
    assert parity.classify([]).shape == (0,)


@pytest.mark.parametrize("name", ["parity", "tomita-3", "dyck-6", "cycle-navigation",
                                  "modular-arithmetic-precedence", "prefix-2-4"])
def test_classify_matches_per_string_reference(name, rng):
    a = ml.load_language(name)
    strings = random_strings(rng, a.alphabet, 400, 40)
    expected = [int(a.output[fold_state(a, [a.alphabet.index(x) for x in s])]) for s in strings]
    assert a.classify(strings).tolist() == expected
    tokens, lengths = a.encode(strings)
    assert a.classify(tokens, lengths).tolist() == expected


def test_run_rejects_bad_batches(parity):
    with pytest.raises(ValueError, match="token ids"):
        parity.run(np.array([[0, 2]]), np.array([2]))
    with pytest.raises(ValueError, match="lengths"):
        parity.run(np.array([[0, 1]]), np.array([3]))
    with pytest.raises(ValueError, match="expected tokens"):
        parity.run(np.array([0, 1]), np.array([2]))


@given(st.lists(st.text(alphabet="01", max_size=20), max_size=30))
def test_classify_parity_property(strings):
    a = families.parity()
    assert a.classify(strings).tolist() == [s.count("1") % 2 for s in strings]


# ---------------------------------------------------------------------- constructor checks
@pytest.mark.parametrize("kwargs,field", [
    (dict(alphabet=[], delta=np.zeros((1, 0), int), output=[0]), "alphabet"),
    (dict(alphabet=["a", "a"], delta=[[0, 0]], output=[0]), "alphabet"),
    (dict(alphabet=["a", ""], delta=[[0, 0]], output=[0]), "alphabet"),
    (dict(alphabet=["a"], delta=[[0, 0]], output=[0]), "delta"),
    (dict(alphabet=["a"], delta=[[1]], output=[0]), "delta"),
    (dict(alphabet=["a"], delta=[["x"]], output=[0]), "delta"),
    (dict(alphabet=["a"], delta=[[0]], output=[0, 1]), "output"),
    (dict(alphabet=["a"], delta=[[0]], output=[2]), "output"),
    (dict(alphabet=["a"], delta=[[0]], output=[0], start=3), "start"),
    (dict(alphabet=["a"], delta=[[0]], output=[0], classes=[]), "classes"),
])
def test_constructor_errors_name_the_field(kwargs, field):
    kwargs.setdefault("start", 0)
    with pytest.raises(SpecError) as exc:
        Automaton(name="broken", **kwargs)
    assert exc.value.field == field and "broken" in str(exc.value)


def test_random_machines_keep_every_state_class():
    rng = np.random.default_rng(3)
    a = random_automaton(rng, 6, 2)
    # every reachable state is its own class, so nothing merges
    reach = {fold_state(a, w) for w in all_words(2, 6)}
    assert a.n_states == len(reach)


@settings(max_examples=40)
@given(st.integers(2, 6), st.integers(1, 3), st.integers(0, 10**6))
def test_automata_lib_round_trip_on_random_machines(n, k, seed):
    """to_automata_lib then from_automata_lib gives the same minimal machine."""
    a = random_automaton(np.random.default_rng(seed), n, k, own_classes=False)
    back = Automaton.from_automata_lib(a.to_automata_lib(), alphabet=list(a.alphabet))
    assert back == a
    strings = ["".join(np.random.default_rng(seed + i).choice(list(a.alphabet), size=i % 7))
               for i in range(20)]
    assert back.classify(strings).tolist() == a.classify(strings).tolist()


# ------------------------------------------------------------------ frozen (shared by the cache)
def test_automaton_is_frozen_and_the_cache_stays_clean():
    """The language cache hands every caller the same machine: writes must fail, so that no
    caller can rename (or rewire) parity for the others."""
    parity = ml.load_language("parity")
    for key, value in (("name", "x"), ("classes", ("a", "b")), ("start", 1),
                       ("delta", np.zeros((2, 2), int)), ("brand_new", 1)):
        with pytest.raises(AttributeError, match="immutable.*replace"):
            setattr(parity, key, value)
    with pytest.raises(AttributeError, match="immutable"):
        del parity.name
    with pytest.raises(ValueError, match="read-only"):
        parity.delta[0, 0] = 1
    with pytest.raises(ValueError, match="read-only"):
        parity.output[0] = 1
    again = ml.load_language("parity")
    assert again is parity and again.name == "parity"
    assert again.delta.tolist() == [[0, 1], [1, 0]] and again.output.tolist() == [0, 1]


def test_replace_makes_a_renamed_copy_sharing_the_monoid():
    parity = ml.load_language("parity")
    m = parity.monoid()
    xor = parity.replace(name="x", description="renamed")
    assert (xor.name, xor.description) == ("x", "renamed") and xor is not parity
    assert xor == parity and hash(xor) == hash(parity)  # same machine, same class names
    assert xor.monoid() is m  # the cached enumeration is shared, not recomputed
    with pytest.raises(AttributeError, match="immutable"):
        xor.name = "y"
    # later callers still see parity, unchanged
    assert ml.load_language("parity").name == "parity" and parity.name == "parity"
    assert ml.load_language("parity").monoid() is m
    # new class names: another output function, so the copy gets its own monoid
    named = parity.replace(classes=["zero", "one"])
    assert named.classes == ("zero", "one") and named != parity
    assert named.classify(["011"]).tolist() == parity.classify(["011"]).tolist()
    assert named.monoid() is not m and named.monoid().size == m.size
    with pytest.raises(SpecError, match="expected 2 class names"):
        parity.replace(classes=["only-one"])


# ------------------------------------------------------------------ Hopcroft vs Moore refinement
@settings(max_examples=300)
@given(n=st.integers(1, 30), k=st.integers(1, 3), c=st.integers(1, 4), seed=st.integers(0, 2**32))
def test_hopcroft_minimise_equals_the_moore_reference(n, k, c, seed):
    """Same tables, outputs and state map as the former implementation on random machines."""
    from references import reference_minimise

    from monoidlab.algebra.automaton import minimise

    rng = np.random.default_rng(seed)
    delta, out = rng.integers(0, n, (n, k)), rng.integers(0, c, n)
    start = int(rng.integers(0, n))
    for got, want in zip(minimise(delta, start, out), reference_minimise(delta, start, out)):
        assert np.array_equal(got, want)


def test_minimise_long_cycles():
    """A cycle with one accepting state is already minimal (n states, n suffix lengths apart:
    the case where Moore's refinement needs n passes); all-accepting collapses to one state."""
    from monoidlab.algebra.automaton import minimise

    n = 20_000
    delta = ((np.arange(n) + 1) % n)[:, None]
    out = np.zeros(n, np.int64)
    out[0] = 1
    d, s, o, old_to_new = minimise(delta, 0, out)
    assert d.shape == (n, 1) and np.array_equal(d[:, 0], (np.arange(n) + 1) % n)
    assert np.array_equal(old_to_new, np.arange(n)) and o[0] == 1 and o[1:].sum() == 0
    d, s, o, old_to_new = minimise(delta, 0, np.ones(n, np.int64))
    assert d.tolist() == [[0]] and (old_to_new == 0).all()


def test_minimise_a_cycle_of_100000_states_in_seconds():
    """Issue 15: an explicit 10^5-state cycle was still minimising after 180 s (Moore's
    refinement, n passes). Hopcroft's algorithm takes about a second of CPU; the alarm (60 s,
    ample on a loaded machine) turns a regression into a failure instead of a hang."""
    import signal

    from monoidlab.algebra.automaton import minimise

    def too_slow(signum, frame):
        raise TimeoutError("minimising a 10^5-state cycle took more than 60 s")

    n = 100_000
    delta = ((np.arange(n) + 1) % n)[:, None]
    out = np.zeros(n, np.int64)
    out[0] = 1
    old = signal.signal(signal.SIGALRM, too_slow)
    signal.alarm(60)
    try:
        d, s, o, old_to_new = minimise(delta, 0, out)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert d.shape == (n, 1) and o.sum() == 1 and np.array_equal(old_to_new, np.arange(n))


def test_an_automata_lib_round_trip_keeps_the_state_names(tmp_path):
    """A spec's own state names (e, o) survive to_automata_lib / from_automata_lib."""
    import monoidlab as ml
    from monoidlab.algebra.automaton import Automaton

    spec = tmp_path / "eo.toml"
    spec.write_text('name = "my-parity"\nalphabet = ["a", "b"]\nstart = "e"\naccept = ["e"]\n'
                    '[transitions]\ne = { "a" = "e", "b" = "o" }\no = { "a" = "o", "b" = "e" }\n')
    lang = ml.load_language(str(spec))
    dfa = lang.to_automata_lib()
    assert sorted(dfa.states) == ["e", "o"] and dfa.initial_state == "e"
    back = Automaton.from_automata_lib(dfa)
    assert back == lang and back.state_names == ("e", "o")
