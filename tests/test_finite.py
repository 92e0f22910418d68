"""FiniteTable: a finite tree model as tables, and its fold over the balanced tree."""

import numpy as np
import pytest

import monoidlab as ml
from monoidlab.errors import InputError
from monoidlab.models.finite import FiniteTable, monoid_table


@pytest.mark.parametrize("name", ["parity", "dyck-2", "tomita-3", "cycle-navigation"])
@pytest.mark.parametrize("padding", ["identity", "learned"])
def test_the_monoids_table_folds_to_the_language(name, padding):
    """The exact model (the syntactic monoid as codes) gives every string its class, at any
    length and any left offset (identity and learned padding alike: its pad code is the
    identity)."""
    lang = ml.load_language(name)
    m = lang.monoid()
    table = monoid_table(lang, padding)
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, lang.n_symbols, (300, 90))
    lengths = rng.integers(1, 91, 300)
    want = m.outputs[m.element_of(tokens, lengths)]
    np.testing.assert_array_equal(table.fold(tokens, lengths), want)
    np.testing.assert_array_equal(table.fold(tokens, lengths, rng.integers(0, 70, 300)), want)


def _reference_root(table, tokens, length, offset=0):
    """A node-by-node reference: the balanced tree of one string, padding as the layout says."""
    M = 1
    while M < offset + length:
        M *= 2
    nodes = [None] * M  # None = all padding
    for i in range(length):
        nodes[offset + i] = int(table.leaf[tokens[i]])
    if table.padding == "learned":
        nodes = [table.pad_leaf if v is None else v for v in nodes]
    while len(nodes) > 1:
        nxt = []
        for a, b in zip(nodes[0::2], nodes[1::2]):
            if a is None or b is None:
                nxt.append(b if a is None else a)
            else:
                nxt.append(int(table.table[a, b]))
        nodes = nxt
    return nodes[0]


@pytest.mark.parametrize("padding", ["identity", "learned"])
def test_a_random_table_folds_as_the_node_by_node_tree(padding):
    """Any table (not only a monoid's): the vectorised fold, on batches of one length (its
    fast path) and of mixed lengths and offsets (its general path), equals a node-by-node
    reference; the root of a string sits at level ceil(log2(offset + length))."""
    rng = np.random.default_rng(3)
    k, V = 7, 3
    table = FiniteTable(rng.integers(0, k, V), rng.integers(0, k, (k, k)), rng.integers(0, 2, k),
                        padding, 0 if padding == "learned" else None)
    for L in (1, 2, 3, 5, 8, 9, 31, 64):
        tokens = rng.integers(0, V, (20, L))
        ref = [table.head[_reference_root(table, t, L)] for t in tokens]
        np.testing.assert_array_equal(table.fold(tokens, np.full(20, L)), ref)
    tokens = rng.integers(0, V, (60, 40))
    lengths = rng.integers(1, 41, 60)
    offsets = rng.integers(0, 30, 60)
    ref = [table.head[_reference_root(table, t, n, r)]
           for t, n, r in zip(tokens, lengths, offsets)]
    np.testing.assert_array_equal(table.fold(tokens, lengths, offsets), ref)


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(leaf=[0, 5], table=[[0]], head=[0]), "leaf holds codes outside"),
    (dict(leaf=[0], table=[[0, 0]], head=[0]), "table must be"),
    (dict(leaf=[0], table=[[0]], head=[0], padding="learned"), "needs pad_leaf"),
    (dict(leaf=[0], table=[[0]], head=[0], pad_leaf=0), "identity padding has no pad_leaf"),
    (dict(leaf=[0.5], table=[[0]], head=[0]), "integer array"),
])
def test_bad_tables_are_refused_by_name(kwargs, fragment):
    with pytest.raises(InputError, match=fragment):
        FiniteTable(**{k: np.asarray(v) if k != "padding" and k != "pad_leaf" else v
                       for k, v in kwargs.items()})


def test_bad_batches_are_refused():
    t = monoid_table(ml.load_language("parity"))
    with pytest.raises(InputError, match="lengths must lie in 1"):
        t.fold(np.zeros((2, 3), int), np.array([0, 3]))
    with pytest.raises(InputError, match="tokens must lie in 0..1"):
        t.fold(np.full((1, 2), 5), np.array([2]))
    assert t.fold(np.zeros((0, 3), int), np.zeros(0, int)).shape == (0,)
