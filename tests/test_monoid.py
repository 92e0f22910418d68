"""SyntacticMonoid against libsemigroups (the oracle) and against plain references.

Properties: ``element_of`` is a homomorphism, the table is associative with identity 0, the class
of a string is the class of its element, the vectorised labellers equal per-string folds, the
representative words are shortlex-least, and on-demand products equal composition.
"""

from __future__ import annotations

import itertools

import numpy as np
import oracle
import pytest
from hypothesis import given
from hypothesis import strategies as st
from oracle import fold_element, random_automaton

import monoidlab as ml
from monoidlab import MonoidTooLarge, SyntacticMonoid
from monoidlab.algebra import families
from monoidlab.algebra import monoid as monoid_module

KNOWN_SIZES = {"parity": 2, "tomita-5": 4, "tomita-7": 9, "dyck-1": 6, "dyck-2": 15,
               "dyck-6": 141}
# small to medium languages for the string-level properties (every alphabet size and shape)
PROPERTY_LANGS = ["parity", "even-pairs", "cycle-navigation", "dyck-2", "dyck-6", "tomita-3",
                  "tomita-7", "modular-arithmetic", "prefix-2-4", "prefix-1-2"]
ALL = ml.language_names()


def random_batch(rng, k, count, max_len):
    lengths = rng.integers(0, max_len + 1, size=count)
    tokens = rng.integers(0, k, size=(count, max(int(lengths.max()), 1)))
    tokens[np.arange(tokens.shape[1])[None, :] >= lengths[:, None]] = 0
    return tokens, lengths


def oracle_fields(m) -> dict:
    s = m.summary()
    return {k: s[k] for k in ("size", "idempotents", "r_classes", "l_classes", "h_classes",
                              "j_classes")}


# ---------------------------------------------------------------------- oracle
@pytest.mark.parametrize("name", ALL)
def test_suite_monoids_match_libsemigroups(name):
    a = ml.load_language(name)
    m = a.monoid()
    assert oracle_fields(m) == oracle.summary(a)
    if name in KNOWN_SIZES:
        assert m.size == KNOWN_SIZES[name]


@pytest.mark.parametrize("name", [n for n in ALL if n != "addition-interleaved"])
def test_element_order_and_cayley_tables_match_froidure_pin(name):
    """Same elements, same (shortlex) order, same right and left Cayley graphs."""
    a = ml.load_language(name)
    m = a.monoid()
    S = oracle.froidure_pin(a)
    assert np.array_equal(oracle.elements(S), m.elements)
    assert np.array_equal(oracle.right_table(S, a.n_symbols), m.right)
    assert np.array_equal(oracle.left_table(S, a.n_symbols), m.left)


def test_random_automata_match_libsemigroups():
    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(300):
        n, k = int(rng.integers(2, 11)), int(rng.integers(1, 4))
        a = random_automaton(rng, n, k)
        try:
            m = SyntacticMonoid(a, max_elements=20_000)
        except MonoidTooLarge:
            continue
        assert oracle_fields(m) == oracle.summary(a), a.delta.tolist()
        if m.size <= 2000:
            S = oracle.froidure_pin(a)
            assert np.array_equal(oracle.elements(S), m.elements), a.delta.tolist()
        checked += 1
    assert checked >= 200  # most draws fit under the cap


def test_oracle_degree_above_64_path():
    """prefix-4-4 has 341 states: the oracle falls back from Konieczny to Gabow components."""
    a = ml.load_language("prefix-4-4")
    assert a.n_states > 64
    assert oracle_fields(a.monoid()) == oracle.summary(a)


# ---------------------------------------------------------------------- algebra of the table
@pytest.mark.parametrize("name", ["parity", "even-pairs", "tomita-3", "dyck-6", "prefix-2-4",
                                  "modular-arithmetic"])
def test_table_is_associative_with_identity_zero(name, rng):
    m = ml.load_language(name).monoid()
    T = m.table
    idx = np.arange(m.size)
    assert (T[0] == idx).all() and (T[:, 0] == idx).all()
    if m.size ** 3 <= 3_000_000:
        assert (T[T[:, :, None], idx[None, None, :]] == T[idx[:, None, None], T[None, :, :]]).all()
    else:
        a, b, c = rng.integers(0, m.size, size=(3, 200_000))
        assert (T[T[a, b], c] == T[a, T[b, c]]).all()


@pytest.mark.parametrize("name", ["dyck-2", "tomita-3", "modular-arithmetic", "prefix-2-4"])
def test_table_is_composition_of_transformations(name):
    m = ml.load_language(name).monoid()
    e = m.elements.astype(np.int64)
    # (a then b)(q) = f_b(f_a(q))
    prod = e[:, None, :].repeat(m.size, 1)  # prod[a, b, q] = f_a(q)
    comp = np.take_along_axis(e[None, :, :].repeat(m.size, 0), prod, axis=2)
    assert np.array_equal(e[m.table], comp)


def test_cayley_tables_agree_with_multiply(rng):
    for name in ["dyck-6", "modular-arithmetic-precedence", "even-pairs"]:
        m = ml.load_language(name).monoid()
        idx = np.arange(m.size)
        for a in range(m.n_symbols):
            assert np.array_equal(m.right[:, a], m.multiply(idx, m.letters[a]))
            assert np.array_equal(m.left[:, a], m.multiply(m.letters[a], idx))


def test_letters_and_words():
    a = ml.load_language("dyck-2")
    m = a.monoid()
    assert m.words[0] == "" and m.labels()[0] == "ε"
    assert [m.words[x] for x in m.letters] == ["0", "1"]
    for w, toks in zip(m.words, m.word_tokens):
        assert w == "".join(a.alphabet[t] for t in toks)
    assert m.word_lengths.tolist() == [len(w) for w in m.word_tokens]
    # multi-character alphabets join symbols with spaces
    stack = ml.Automaton(alphabet=["PUSH", "POP"], delta=[[1, 0], [1, 0]], start=0, output=[0, 1],
                         classes=["empty", "full"])
    assert set(stack.monoid().words) == {"", "PUSH", "POP"}


@pytest.mark.parametrize("seed", range(40))
def test_words_are_shortlex_least(seed):
    """Brute force: walk all words in shortlex order; the first hit of each element is its word,
    and the elements are numbered in order of first hit."""
    rng = np.random.default_rng(seed)
    a = random_automaton(rng, int(rng.integers(2, 6)), int(rng.integers(1, 4)))
    try:
        m = SyntacticMonoid(a, max_elements=400)
    except MonoidTooLarge:
        pytest.skip("too large for brute force")
    if m.word_lengths.max() > 8:
        pytest.skip("too deep for brute force")
    index = {tuple(row): i for i, row in enumerate(m.elements.tolist())}
    first: dict[int, tuple] = {}
    for length in range(int(m.word_lengths.max()) + 1):
        for w in itertools.product(range(a.n_symbols), repeat=length):
            f = tuple(fold_state_all(a, w))
            first.setdefault(index[f], w)
    assert len(first) == m.size
    assert [first[i] for i in range(m.size)] == m.word_tokens
    assert list(first) == list(range(m.size))  # numbered in shortlex order of first occurrence


def fold_state_all(a, word):
    """f_w as the tuple of images of every state."""
    return [fold_state_from(a, q, word) for q in range(a.n_states)]


def fold_state_from(a, q, word):
    for x in word:
        q = int(a.delta[q, x])
    return q


# ---------------------------------------------------------------------- labelling
@pytest.mark.parametrize("name", PROPERTY_LANGS)
def test_element_of_is_a_homomorphism(name, rng):
    a = ml.load_language(name)
    m = a.monoid()
    tu, lu = random_batch(rng, a.n_symbols, 500, 30)
    tv, lv = random_batch(rng, a.n_symbols, 500, 30)
    # concatenate u and v per row
    T = tu.shape[1] + tv.shape[1]
    tuv = np.zeros((500, T), np.int64)
    for i in range(500):
        tuv[i, : lu[i] + lv[i]] = np.concatenate([tu[i, : lu[i]], tv[i, : lv[i]]])
    euv = m.element_of(tuv, lu + lv)
    assert np.array_equal(euv, m.multiply(m.element_of(tu, lu), m.element_of(tv, lv)))


@pytest.mark.parametrize("name", PROPERTY_LANGS + ["addition-interleaved"])
def test_element_of_matches_per_string_fold(name, rng):
    a = ml.load_language(name)
    m = a.monoid()
    tokens, lengths = random_batch(rng, a.n_symbols, 300, 60)
    expected = [fold_element(m.right, tokens[i, : lengths[i]]) for i in range(300)]
    assert m.element_of(tokens, lengths).tolist() == expected
    # the element's transformation is the word's action on every state
    e = m.element_of(tokens[:50], lengths[:50])
    for i in range(50):
        assert m.elements[e[i]].tolist() == fold_state_all(a, tokens[i, : lengths[i]])


@pytest.mark.parametrize("name", PROPERTY_LANGS)
def test_class_of_string_is_class_of_element(name, rng):
    a = ml.load_language(name)
    m = a.monoid()
    tokens, lengths = random_batch(rng, a.n_symbols, 1000, 80)
    assert np.array_equal(m.outputs[m.element_of(tokens, lengths)], a.classify(tokens, lengths))
    assert m.outputs[0] == a.output[a.start]  # the empty string


@pytest.mark.parametrize("name", PROPERTY_LANGS)
def test_prefix_elements_are_elements_of_prefixes(name, rng):
    a = ml.load_language(name)
    m = a.monoid()
    tokens, lengths = random_batch(rng, a.n_symbols, 200, 25)
    pre = m.prefix_elements(tokens, lengths)
    assert pre.shape == tokens.shape
    for t in range(tokens.shape[1]):
        valid = lengths > t
        assert (pre[~valid, t] == -1).all()
        expect = m.element_of(tokens[:, : t + 1], np.minimum(lengths, t + 1))
        assert np.array_equal(pre[valid, t], expect[valid])
    last = pre[np.arange(200), np.maximum(lengths - 1, 0)]
    assert np.array_equal(np.where(lengths > 0, last, 0), m.element_of(tokens, lengths))


def test_element_of_words_and_edge_cases(dyck2):
    m = dyck2.monoid()
    assert m.element_of_words(["", "0", "1", "01"]).tolist() == [0, m.letters[0], m.letters[1],
                                                                m.multiply(m.letters[0], m.letters[1])]
    assert m.element_of(np.zeros((3, 0), int), np.zeros(3, int)).tolist() == [0, 0, 0]
    with pytest.raises(ValueError, match="token ids"):
        m.element_of(np.array([[2]]), np.array([1]))
    with pytest.raises(ValueError, match="lengths"):
        m.prefix_elements(np.array([[0]]), np.array([2]))
    with pytest.raises(ValueError, match="expected tokens"):
        m.element_of(np.array([0, 1]), np.array([2]))


@given(st.data())
def test_homomorphism_on_random_machines(data):
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n, k = data.draw(st.integers(1, 7)), data.draw(st.integers(1, 3))
    a = random_automaton(rng, n, k)
    try:
        m = SyntacticMonoid(a, max_elements=2000)
    except MonoidTooLarge:
        return
    u = data.draw(st.lists(st.integers(0, k - 1), max_size=20))
    v = data.draw(st.lists(st.integers(0, k - 1), max_size=20))
    eu, ev, euv = (fold_element(m.right, w) for w in (u, v, u + v))
    assert int(m.multiply(eu, ev)) == euv
    assert m.elements[euv].tolist() == fold_state_all(a, u + v)


# ---------------------------------------------------------------------- large monoids
def test_multiply_without_table_equals_the_table(monkeypatch, rng):
    m = ml.load_language("dyck-6").monoid()
    T = m.table  # built under the normal limit
    monkeypatch.setattr(monoid_module, "TABLE_LIMIT", 10)
    a, b = np.meshgrid(np.arange(m.size), np.arange(m.size), indexing="ij")
    assert np.array_equal(m.multiply(a, b), T)
    assert m.multiply(3, 5).shape == ()


def test_multiply_beyond_the_table_limit_is_composition(rng):
    a = families.full_transformation(6)  # 46656 elements > TABLE_LIMIT
    m = a.monoid()
    assert m.size == 6 ** 6 > monoid_module.TABLE_LIMIT
    with pytest.raises(MonoidTooLarge, match="multiply"):
        _ = m.table
    index = {tuple(row): i for i, row in enumerate(m.elements.tolist())}
    x, y = rng.integers(0, m.size, size=(2, 3000))
    got = m.multiply(x, y)
    ex, ey = m.elements[x].tolist(), m.elements[y].tolist()
    assert got.tolist() == [index[tuple(fy[q] for q in fx)] for fx, fy in zip(ex, ey)]
    # broadcasting and associativity on samples
    assert m.multiply(x[:5, None], y[None, :7]).shape == (5, 7)
    z = rng.integers(0, m.size, size=3000)
    assert np.array_equal(m.multiply(m.multiply(x, y), z), m.multiply(x, m.multiply(y, z)))
    assert m.index_of(np.array([[0, 0, 0, 0, 0, 9]])).tolist() == [-1]


def test_full_transformation_sizes_and_oracle():
    for n in range(2, 6):
        a = families.full_transformation(n)
        assert a.monoid().size == n ** n
    assert oracle_fields(families.full_transformation(4).monoid()) == oracle.summary(
        families.full_transformation(4))


def test_max_elements():
    a = families.full_transformation(5)
    with pytest.raises(MonoidTooLarge, match=r"full-transformation-5.*max_elements=1000") as exc:
        a.monoid(max_elements=1000)
    assert "raise max_elements" in str(exc.value)
    assert a.monoid(max_elements=3125).size == 3125  # a failed enumeration is not cached
    SyntacticMonoid(families.tomita(7), max_elements=9)
    with pytest.raises(MonoidTooLarge):
        SyntacticMonoid(families.tomita(7), max_elements=8)


def test_summary_and_repr(parity):
    m = parity.monoid()
    s = m.summary()
    assert s["size"] == 2 and s["group"] and s["commutative"] and not s["aperiodic"]
    assert s["d_classes"] == s["j_classes"]
    assert "|M|=2" in repr(m) and "group" in repr(m)
    assert len(m) == 2 and m.n_symbols == 2


@pytest.mark.parametrize("name", ["tomita-7", "dyck-3", "cycle-navigation"])
def test_to_libsemigroups_and_to_networkx_round_trip(name):
    pytest.importorskip("libsemigroups_pybind11")
    lang = ml.load_language(name)
    m = lang.monoid()
    lsg = pytest.importorskip("libsemigroups_pybind11")
    p = m.to_libsemigroups()  # a monoid presentation over the letters (test_ergonomics.py)
    assert p.alphabet() == "".join(lang.alphabet) and p.contains_empty_word()
    S = lsg.to(lsg.ToddCoxeter(lsg.congruence_kind.twosided, p), rtype=(lsg.FroidurePin,))
    assert S.size() == m.size
    g = m.to_networkx("right")
    assert g.number_of_nodes() == m.size and g.number_of_edges() == m.size * m.n_symbols
    for u, v, data in list(g.edges(data=True))[:50]:
        a = lang.alphabet.index(data["letter"])
        assert m.right[u, a] == v
    gl = m.to_networkx("left")
    assert all(m.left[u, lang.alphabet.index(d["letter"])] == v for u, v, d in gl.edges(data=True))


# ------------------------------------------------------------------ bounded enumeration
@pytest.mark.parametrize("make", [lambda: ml.load_language("dyck-4"),
                                  lambda: families.modular_arithmetic(6),
                                  lambda: families.full_transformation(4)])
def test_chunked_enumeration_is_identical(monkeypatch, make):
    """The frontier multiplied a few rows at a time gives the same elements, order and table."""
    from monoidlab.algebra import _enumerate

    lang = make()
    whole = SyntacticMonoid(lang)
    monkeypatch.setattr(_enumerate, "CHUNK_BYTES", 1)  # one frontier row per chunk
    parts = SyntacticMonoid(lang)
    assert np.array_equal(whole.elements, parts.elements)
    assert np.array_equal(whole.right, parts.right) and whole.words == parts.words


def test_enumeration_stops_at_the_memory_budget_before_allocating(monkeypatch):
    """A monoid over the byte budget is refused with one line, and the enumeration never held
    much more than the budget (tracemalloc sees numpy's allocations)."""
    import tracemalloc

    from monoidlab.algebra import _enumerate

    lang = families.modular_arithmetic(16)  # 63 states, 19 letters, 11966 elements
    monkeypatch.setattr(_enumerate, "MAX_BYTES", 1 << 20)
    monkeypatch.setattr(_enumerate, "CHUNK_BYTES", 1 << 18)
    tracemalloc.start()
    try:
        with pytest.raises(MonoidTooLarge, match=r"at least \d+ elements of 63 states.*GiB") as e:
            SyntacticMonoid(lang)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "\n" not in str(e.value) and peak < 6 << 20, peak
    assert _enumerate.bytes_per_element(63, 19, "packed") == 63 + 8 * 19 + 48


@pytest.mark.parametrize("make, mode", [
    (lambda: families.full_transformation(5), "packed"),  # 15-bit keys: direct-address table
    (lambda: ml.load_language("dyck-12"), "packed"),  # 56-bit keys: the open-addressing table
    (lambda: families.modular_arithmetic(16), "hash"),  # 63 states: verified 64-bit row hashes
])
def test_numba_indices_match_the_numpy_enumeration(monkeypatch, make, mode):
    """The numba paths (open-addressing tables, candidate and verification kernels) give the
    same elements, order and table as the plain numpy path (sorted runs, no kernels)."""
    from monoidlab.algebra import _enumerate

    lang = make()
    fast = SyntacticMonoid(lang)
    assert fast._index.mode == mode and fast.left is not None  # left: built with the kernels
    from monoidlab import _kernels

    for name in ("probe_kernels", "candidates_kernel", "rows_equal_kernel", "row_hash_kernel"):
        monkeypatch.setattr(_enumerate, name, lambda: None)
    monkeypatch.setattr(_kernels, "candidates_kernel", lambda: None)  # Monoid.left's gather
    plain = SyntacticMonoid(lang)
    assert type(plain._index) is _enumerate.KeyIndex
    assert np.array_equal(fast.elements, plain.elements)
    assert np.array_equal(fast.right, plain.right) and fast.words == plain.words
    assert np.array_equal(fast.left, plain.left) and (fast.left >= 0).all()
    # left[m, a] = a·m: apply the letter, then m
    m = np.arange(0, fast.size, max(1, fast.size // 50))
    for a in range(fast.n_symbols):
        fa = fast.elements[fast.letters[a]].astype(np.int64)
        assert np.array_equal(fast.elements[fast.left[m, a]], fast.elements[m][:, fa])


def test_hash_collisions_are_caught_and_enumeration_falls_back_to_exact_keys(monkeypatch):
    """A (forced) 64-bit hash collision is detected by the row verification, and the monoid is
    enumerated again with exact keys: the same monoid, never a merged pair of elements."""
    from monoidlab.algebra import _enumerate

    lang = families.modular_arithmetic(16)
    right = SyntacticMonoid(lang)

    def weak_hash():  # every row hashes to its first two states: collisions galore
        def kernel(rows, mult, out):
            out[:] = rows[:, 0].astype(np.int64) * 1000 + rows[:, 1]
        return kernel

    monkeypatch.setattr(_enumerate, "row_hash_kernel", weak_hash)
    tried = []
    real = _enumerate.enumerate_monoid

    def spy(delta, max_elements, name, exact_bytes, max_bytes=None):
        tried.append(exact_bytes)
        return real(delta, max_elements, name, exact_bytes, max_bytes)

    monkeypatch.setattr("monoidlab.algebra.monoid.enumerate_monoid", spy)
    m = SyntacticMonoid(lang)
    assert tried == [False, True] and m._index.mode == "bytes"
    assert np.array_equal(m.elements, right.elements) and np.array_equal(m.right, right.right)


def test_the_first_call_builds_only_the_closure():
    """Constructing a monoid is the closure and nothing else: no cached property (Green's
    relations, the left or full table, words) is computed, no array is copied (peak memory at
    most 1.4x what the monoid holds; a copy of the right table alone is 1.5x for T_7), and the
    key-space path loads no numba (its import and cache load cost more than T_7's closure)."""
    import subprocess
    import sys
    import tracemalloc
    from functools import cached_property

    lazy = {n for n, v in vars(SyntacticMonoid).items() if isinstance(v, cached_property)}
    assert {"green", "left", "table", "words"} <= lazy
    lang = families.full_transformation(7)
    tracemalloc.start()
    try:
        m = SyntacticMonoid(lang, max_elements=10**6)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert m.size == 7**7 and not lazy & set(vars(m)), lazy & set(vars(m))
    held = sum(a.nbytes for a in (m.elements, m.right, m._parent, m._letter, m._index.direct))
    assert peak <= 1.4 * held, (peak / held)
    code = ("import sys; from monoidlab.algebra import families; "
            "families.full_transformation(6).monoid(); print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("make", [lambda: families.full_transformation(6),
                                  lambda: ml.load_language("dyck-4"),
                                  lambda: ml.load_language("tomita-5"),
                                  lambda: ml.load_language("even-pairs")])
def test_the_key_space_closure_matches_the_row_closure(monkeypatch, make):
    """Direct-table languages enumerated on keys give the same elements, order, words and
    tables as the row-based closure (the direct table switched off)."""
    from monoidlab.algebra import _enumerate

    lang = make()
    keyed = SyntacticMonoid(lang)
    assert keyed._index.direct is not None
    monkeypatch.setattr(_enumerate.KeyIndex, "DIRECT_BITS", 0)
    rows = SyntacticMonoid(lang)
    assert rows._index.direct is None
    assert np.array_equal(keyed.elements, rows.elements)
    assert keyed.elements.dtype == rows.elements.dtype and keyed.right.dtype == np.int64
    assert np.array_equal(keyed.right, rows.right) and keyed.words == rows.words
    assert np.array_equal(keyed.left, rows.left)
    idx = np.arange(0, keyed.size, 3)
    assert np.array_equal(keyed.index_of(rows.elements[idx]), idx)


def test_a_monoid_past_max_bytes_names_the_memory_it_needs():
    with pytest.raises(MonoidTooLarge, match=r"needs at least \d+\.\d\d GiB.*max_bytes=1000000; "
                                             r"monoid\(max_bytes=\.\.\.\) raises it"):
        SyntacticMonoid(families.full_transformation(6), max_bytes=10**6)
    assert SyntacticMonoid(families.full_transformation(6), max_bytes=10**7).size == 6**6
