"""Tests for monoidlab.coverage.compositions: vectorised node labels against the per-string reference,
padding semantics, and the fast composition counter against the generic one."""

import numpy as np
import pytest
from references import reference_node_labels

import monoidlab as ml
from monoidlab.coverage.compositions import composition_counts, node_labels
from monoidlab.strings.sampling import sample
from monoidlab.strings.schedules import SCHEDULES, schedule

LANGS = ["parity", "dyck-2", "tomita-3", "prefix-1-2", "modular-arithmetic"]


def labels_as_rows(lab, n_strings):
    """NodeLabels → per string list of (left, right, node), in node order."""
    out = [[] for _ in range(n_strings)]
    for s, i, x, y, v in zip(lab.string, lab.node_index, lab.left, lab.right, lab.node):
        assert i == len(out[s])  # rows sorted by (string, node_index)
        out[s].append((int(x), int(y), int(v)))
    return out


def counts_from_labels(monoid, lab, n_levels):
    """The generic count: bincount of (level, left, right) over composition-carrying nodes."""
    M = monoid.size
    keep = lab.has_composition
    code = (lab.level[keep] * M + lab.left[keep]) * M + lab.right[keep]
    return np.bincount(code, minlength=n_levels * M * M).reshape(n_levels, M, M)


# ------------------------------------------------------------------ labels vs reference
@pytest.mark.parametrize("sched", SCHEDULES)
@pytest.mark.parametrize("name", LANGS)
def test_node_labels_equal_reference(name, sched):
    lang = ml.load_language(name)
    m = lang.monoid()
    b = sample(lang, range(1, 14), 40, seed=LANGS.index(name))
    lab = node_labels(m, b.tokens, b.lengths, sched)
    ref = reference_node_labels(m, b.strings(), sched)
    assert labels_as_rows(lab, len(b)) == [[tuple(r) for r in rows] for rows in ref]
    # node EC = left · right, and each string's root is its own EC
    np.testing.assert_array_equal(lab.node, m.table[lab.left, lab.right])
    for i in range(len(b)):
        s = schedule(sched, int(b.lengths[i]))
        rows = lab.node[lab.string == i]
        if s.n_nodes:
            assert rows[s.root - s.buffer] == b.elements()[i]


@pytest.mark.parametrize("name", ["dyck-2", "tomita-3", "modular-arithmetic"])
def test_node_labels_with_offsets_equal_reference(name):
    lang = ml.load_language(name)
    m = lang.monoid()
    b = sample(lang, range(1, 12), 60, seed=1)
    offsets = np.random.default_rng(2).integers(0, 9, size=len(b))
    lab = node_labels(m, b.tokens, b.lengths, "balanced", offsets)
    ref = reference_node_labels(m, b.strings(), "balanced", offsets)
    assert labels_as_rows(lab, len(b)) == [[tuple(r) for r in rows] for rows in ref]
    # the buffer of each string grows with its offset
    for i in range(len(b)):
        assert (lab.string == i).sum() == schedule("balanced", int(b.lengths[i]),
                                                   int(offsets[i])).n_nodes


def test_padding_nodes(dyck2):
    m = dyck2.monoid()
    t, n = dyck2.encode(["00101"])  # L = 5: (((x1.x2).(x3.x4)).((x5.∅).(∅.∅)))
    lab = node_labels(m, t, n, "balanced")
    s = schedule("balanced", 5)
    x5 = int(m.letters[1])
    node = {(lv, tuple(ls), tuple(rs)): i for i, (lv, ls, rs) in
            enumerate(zip(s.level.tolist(), s.left_span.tolist(), s.right_span.tolist()))}
    for one_pad in (node[1, (4, 5), (5, 5)], node[2, (4, 5), (5, 5)]):
        # (x5.∅) and ((x5.∅).(∅.∅)): composition (x5, identity)
        assert (lab.left[one_pad], lab.right[one_pad], lab.node[one_pad]) == (x5, 0, x5)
        assert lab.has_composition[one_pad]
    all_pad = node[1, (5, 5), (5, 5)]  # (∅.∅): no composition, identity
    assert (lab.left[all_pad], lab.right[all_pad], lab.node[all_pad]) == (0, 0, 0)
    assert not lab.has_composition[all_pad]
    assert lab.has_composition.sum() == 6  # 7 nodes, one all-padding
    # left padding (offset): the composition (identity, x)
    lab = node_labels(m, t[:, :1], np.array([1]), "balanced", offsets=[1])
    assert (lab.left.tolist(), lab.right.tolist(), lab.has_composition.tolist()) == \
        ([0], [int(m.letters[0])], [True])


def test_node_labels_frame_and_errors(parity):
    m = parity.monoid()
    t, n = parity.encode(["1101", "1"])
    df = node_labels(m, t, n, "scan").to_frame()
    assert len(df) == schedule("scan", 4).n_nodes  # a length-1 string has no node
    assert {"left_ec", "right_ec", "node_ec", "level", "has_composition"} <= set(df.columns)
    with pytest.raises(ValueError, match="length >= 1"):
        node_labels(m, t, np.array([4, 0]))
    with pytest.raises(ValueError, match="offsets"):
        node_labels(m, t, n, "balanced", offsets=[0])
    with pytest.raises(ValueError, match="offsets"):
        node_labels(m, t, n, "balanced", offsets=[0, -1])
    with pytest.raises(ValueError, match="offset is only defined"):
        node_labels(m, t, n, "scan", offsets=[0, 1])
    assert len(node_labels(m, t[:0], n[:0])) == 0


# ------------------------------------------------------------------ counts
@pytest.mark.parametrize("name", ["dyck-2", "tomita-3", "prefix-1-2", "modular-arithmetic"])
def test_fast_balanced_counts_equal_generic(name):
    lang = ml.load_language(name)
    m = lang.monoid()
    b = sample(lang, range(1, 40), 500, seed=3)
    lab = node_labels(m, b.tokens, b.lengths, "balanced")
    n_levels = int(lab.level.max()) + 1
    generic = counts_from_labels(m, lab, n_levels)
    for chunk in (7, 64, 20_000):  # chunks mix short strings with long ones (wider buffers)
        fast = composition_counts(m, b.tokens, b.lengths, "balanced", per_level=True, chunk=chunk)
        np.testing.assert_array_equal(fast[:n_levels], generic)
        assert fast[n_levels:].sum() == 0
        np.testing.assert_array_equal(composition_counts(m, b.tokens, b.lengths, chunk=chunk),
                                      generic.sum(axis=0))
    # one count per composition-carrying node
    assert generic.sum() == lab.has_composition.sum()


@pytest.mark.parametrize("sched", ["scan", "chain"])
def test_generic_counts_other_schedules(dyck2, sched):
    m = dyck2.monoid()
    b = sample(dyck2, range(1, 20), 300, seed=4)
    lab = node_labels(m, b.tokens, b.lengths, sched)
    c = composition_counts(m, b.tokens, b.lengths, sched, per_level=True)
    np.testing.assert_array_equal(c, counts_from_labels(m, lab, c.shape[0]))
    assert c.sum() == sum(schedule(sched, int(L)).n_nodes for L in b.lengths)


def test_counts_with_offsets(dyck2):
    m = dyck2.monoid()
    b = sample(dyck2, range(1, 20), 300, seed=5)
    offsets = np.random.default_rng(6).integers(0, 12, size=len(b))
    lab = node_labels(m, b.tokens, b.lengths, "balanced", offsets)
    c = composition_counts(m, b.tokens, b.lengths, "balanced", offsets, per_level=True)
    np.testing.assert_array_equal(c, counts_from_labels(m, lab, c.shape[0]))
    # all-zero offsets are the offset-free case
    z = composition_counts(m, b.tokens, b.lengths, "balanced", np.zeros(len(b), int))
    np.testing.assert_array_equal(z, composition_counts(m, b.tokens, b.lengths))
    # with offsets, (identity, x) compositions appear; without, the left child always holds string
    assert c.sum(axis=0)[0, 1:].sum() > 0
    assert z[0].sum() == 0


def test_counts_single_and_short_strings(parity):
    m = parity.monoid()
    t, n = parity.encode(["1", "0", "11"])
    c = composition_counts(m, t, n)
    assert c.sum() == 1 and c[1, 1] == 1
    t, n = parity.encode(["1"])
    assert composition_counts(m, t, n).sum() == 0


def test_doctests():
    import doctest

    import monoidlab.coverage.compositions as mod

    assert doctest.testmod(mod, optionflags=doctest.ELLIPSIS).failed == 0
