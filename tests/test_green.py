"""Green's relations: components vs networkx, egg-box structure, algebraic properties."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from oracle import partition, random_automaton

import monoidlab as ml
from monoidlab import MonoidTooLarge, SyntacticMonoid
from monoidlab.algebra.green import scc_labels

LANGS = ["parity", "even-pairs", "cycle-navigation", "dyck-2", "dyck-6", "tomita-3", "tomita-4",
         "tomita-7", "modular-arithmetic", "modular-arithmetic-precedence", "prefix-2-4",
         "prefix-4-2"]


def random_monoids(count, seed=11, max_elements=3000):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        a = random_automaton(rng, int(rng.integers(2, 8)), int(rng.integers(1, 4)))
        try:
            out.append(SyntacticMonoid(a, max_elements=max_elements))
        except MonoidTooLarge:
            pass
    return out


def nx_components(graph) -> set[frozenset[int]]:
    return {frozenset(c) for c in nx.strongly_connected_components(graph)}


def check_against_networkx(m):
    g = m.green
    right, left = m.cayley_graph("right"), m.cayley_graph("left")
    assert partition(g.r) == nx_components(right)
    assert partition(g.l) == nx_components(left)
    assert partition(g.j) == nx_components(nx.compose(right, left))
    assert partition(g.h) == {r & c for r in partition(g.r) for c in partition(g.l) if r & c}


@pytest.mark.parametrize("name", LANGS)
def test_components_match_networkx(name):
    check_against_networkx(ml.load_language(name).monoid())


def test_components_match_networkx_on_random_monoids():
    for m in random_monoids(60):
        check_against_networkx(m)


def test_cayley_graph(dyck2):
    m = dyck2.monoid()
    for side, table in (("right", m.right), ("left", m.left)):
        g = m.cayley_graph(side)
        assert g.number_of_nodes() == m.size and g.number_of_edges() == m.size * m.n_symbols
        for u, v, data in g.edges(data=True):
            assert table[u, dyck2.alphabet.index(data["letter"])] == v
    with pytest.raises(ValueError, match="side"):
        m.cayley_graph("up")


def test_labels_are_numbered_from_the_identity():
    m = ml.load_language("dyck-6").monoid()
    g = m.green
    assert g.h[0] == 0
    for labels in (g.r, g.l, g.j):
        assert labels[0] == 0
        # first occurrences appear in increasing order
        _, first = np.unique(labels, return_index=True)
        assert (np.diff(labels[np.sort(first)]) > 0).all()
    assert scc_labels(3, np.array([[1], [0], [2]])).tolist() == [0, 0, 1]


def check_egg_boxes(m):
    g = m.green
    idem = set(m.idempotents.tolist())
    seen = []
    for j in range(g.n_j):
        box = g.egg_box(j)
        members = set(np.flatnonzero(g.j == j).tolist())
        cells = [set(c) for row in box.cells for c in row]
        assert all(cells), "in a finite monoid every R-class meets every L-class of its D-class"
        assert set().union(*cells) == members and sum(map(len, cells)) == len(members)
        assert len({len(c) for c in cells}) == 1  # all H-classes of a D-class have one size
        for row, r in zip(box.cells, box.r_classes):
            for cell, l_ in zip(row, box.l_classes):
                assert all(g.r[x] == r and g.l[x] == l_ for x in cell)
        assert box.idempotent_cells == [[bool(set(c) & idem) for c in row] for row in box.cells]
        assert box.is_regular == bool(members & idem)
        if box.is_regular:  # every R-class and L-class of a regular D-class holds an idempotent
            assert all(any(row) for row in box.idempotent_cells)
            assert all(any(col) for col in zip(*box.idempotent_cells))
        seen.extend(members)
    assert sorted(seen) == list(range(m.size))
    with pytest.raises(ValueError, match="no J-class"):
        g.egg_box(g.n_j)


@pytest.mark.parametrize("name", LANGS)
def test_egg_boxes_partition_each_j_class(name):
    check_egg_boxes(ml.load_language(name).monoid())


def test_egg_boxes_on_random_monoids():
    for m in random_monoids(30, seed=5, max_elements=800):
        check_egg_boxes(m)


# ---------------------------------------------------------------------- properties
def brute_properties(m) -> dict:
    T = m.table
    n = m.size
    idx = np.arange(n)
    # x^ω: the idempotent power; aperiodic iff x^n = x^(n+1) for every x
    p = idx.copy()
    for _ in range(n):
        p = T[p, idx]
    aperiodic = bool((T[p, idx] == p).all())
    group = bool(all((T[x] == 0).any() for x in range(n)))
    commutative = bool((T == T.T).all())
    # principal ideals as boolean membership rows: xM, Mx and MxM = union of yM over y in Mx
    right = np.zeros((n, n), bool)
    right[idx[:, None], T] = True
    left = np.zeros((n, n), bool)
    left[idx[:, None], T.T] = True
    two_sided = np.stack([right[T[:, x]].any(axis=0) for x in range(n)])
    n_r, n_l, n_j = (len(np.unique(ideals, axis=0)) for ideals in (right, left, two_sided))
    return {"aperiodic": aperiodic, "group": group, "commutative": commutative,
            "r_trivial": n_r == n, "l_trivial": n_l == n, "j_trivial": n_j == n,
            "n_r": n_r, "n_l": n_l, "n_j": n_j}


def our_properties(m) -> dict:
    g = m.green
    return {"aperiodic": g.is_aperiodic, "group": g.is_group, "commutative": m.is_commutative,
            "r_trivial": g.r_trivial, "l_trivial": g.l_trivial, "j_trivial": g.j_trivial,
            "n_r": g.n_r, "n_l": g.n_l, "n_j": g.n_j}


@pytest.mark.parametrize("name", LANGS)
def test_properties_match_definitions(name):
    m = ml.load_language(name).monoid()
    assert our_properties(m) == brute_properties(m)


def test_properties_match_definitions_on_random_monoids():
    for m in random_monoids(80, seed=2, max_elements=400):
        assert our_properties(m) == brute_properties(m)


@pytest.mark.parametrize("name,expected", [
    ("parity", dict(group=True, commutative=True, aperiodic=False)),
    ("tomita-5", dict(group=True, commutative=True)),
    ("tomita-6", dict(group=True, commutative=True)),
    ("cycle-navigation", dict(group=True, commutative=True)),
    ("dyck-1", dict(aperiodic=True, group=False, commutative=False, j_trivial=False)),
    ("dyck-6", dict(aperiodic=True, group=False)),
    ("tomita-7", dict(j_trivial=True, r_trivial=True, l_trivial=True, aperiodic=True)),
    ("tomita-1", dict(j_trivial=True, commutative=True)),
    ("prefix-2-4", dict(r_trivial=True, l_trivial=False, aperiodic=True)),
    ("prefix-4-2", dict(r_trivial=True, l_trivial=False)),
    ("even-pairs", dict(aperiodic=True, j_trivial=False)),
    ("tomita-3", dict(aperiodic=False)),
    ("modular-arithmetic", dict(aperiodic=False, group=False, commutative=False)),
])
def test_known_properties(name, expected):
    s = ml.load_language(name).monoid().summary()
    for key, value in expected.items():
        assert s[key] is value, key


def test_group_iff_one_idempotent_and_single_h_class():
    m = ml.load_language("cycle-navigation").monoid()
    g = m.green
    assert g.n_h == g.n_j == g.n_r == 1 and m.idempotents.tolist() == [0]
