"""Tests for monoidlab.strings.schedules: the example trees of docs/schedules.md, a slow reference, structural invariants."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from references import reference_spans, reference_trees

from monoidlab.strings import schedules
from monoidlab.strings.schedules import node_index_map, render, schedule


def spans_of(s):
    return sorted(
        (int(lv), tuple(map(int, ls)), tuple(map(int, rs)))
        for lv, ls, rs in zip(s.level, s.left_span, s.right_span)
    )


def render_tree(tree, s):
    """Bracket string of a reference nested-tuple tree (leaves are buffer positions)."""
    if isinstance(tree, tuple):
        return f"({render_tree(tree[0], s)}.{render_tree(tree[1], s)})"
    return schedules.PAD if s.padding_leaf[tree] else f"x{tree - s.offset + 1}"


# ------------------------------------------------------------------ docs/schedules.md examples


@pytest.mark.parametrize(
    "L, expected",
    [
        (5, "(((x1.x2).(x3.x4)).((x5.∅).(∅.∅)))"),
        (6, "(((x1.x2).(x3.x4)).((x5.x6).(∅.∅)))"),
        (7, "(((x1.x2).(x3.x4)).((x5.x6).(x7.∅)))"),
        (8, "(((x1.x2).(x3.x4)).((x5.x6).(x7.x8)))"),
    ],
)
def test_balanced_design_trees(L, expected):
    assert render(schedule("balanced", L)) == expected


@pytest.mark.parametrize(
    "t, expected",
    [
        (5, "(((x1.x2).(x3.x4)).x5)"),
        (7, "((((x1.x2).(x3.x4)).(x5.x6)).x7)"),
        (11, "(((((x1.x2).(x3.x4)).((x5.x6).(x7.x8))).(x9.x10)).x11)"),
    ],
)
@pytest.mark.parametrize("n_extra", [0, 1, 6])
def test_scan_design_prefixes(t, expected, n_extra):
    # a prefix's tree does not depend on how many elements follow it
    s = schedule("scan", t + n_extra)
    assert render(s, s.prefix_roots[t - 1]) == expected
    assert render(schedule("scan", t)) == expected


def test_chain_and_small_cases():
    assert render(schedule("chain", 4)) == "(((x1.x2).x3).x4)"
    for name in schedules.SCHEDULES:
        s = schedule(name, 1)
        assert (s.n_nodes, s.buffer, s.root) == (0, 1, 0)
        assert render(s) == "x1"
    assert render(schedule("balanced", 1, offset=1)) == "(∅.x1)"


def test_balanced_offset_layout():
    s = schedule("balanced", 3, offset=2)
    assert s.buffer == 8
    assert render(s) == "(((∅.∅).(x1.x2)).((x3.∅).(∅.∅)))"
    assert s.padding_leaf.tolist() == [True, True, False, False, False, True, True, True]


def test_jax_scan_recursion_literal():
    """Schedule("scan") against a direct transcription of jax's _scan on symbolic trees."""

    def jax_scan(elems):
        f = lambda xs, ys: [(x, y) for x, y in zip(xs, ys)]  # noqa: E731
        n = len(elems)
        if n < 2:
            return elems
        odd = jax_scan(f(elems[0:-1:2], elems[1::2]))
        even = f(odd[:-1] if n % 2 == 0 else odd, elems[2::2])
        even = [elems[0]] + even
        out = [None] * n
        out[0::2], out[1::2] = even, odd
        return out

    for n in range(1, 40):
        s = schedule("scan", n)
        assert [render(s, r) for r in s.prefix_roots] == [
            render_tree(t, s) for t in jax_scan(list(range(n)))
        ]


# ------------------------------------------------------------------ reference, properties


@settings(max_examples=150, deadline=None)
@given(
    name=st.sampled_from(schedules.SCHEDULES),
    L=st.integers(1, 70),
    offset=st.integers(0, 70),
)
def test_spans_match_reference(name, L, offset):
    offset = offset if name == "balanced" else 0
    s = schedule(name, L, offset)
    assert spans_of(s) == reference_spans(name, L, offset)
    roots = list(s.prefix_roots) if name == "scan" else [s.root]
    assert [render(s, r) for r in roots] == [
        render_tree(t, s) for t in reference_trees(name, L, offset)
    ]


@pytest.mark.parametrize("name", schedules.SCHEDULES)
def test_invariants(name):
    for L in range(1, 70):
        for offset in ([0, 1, 3, 17] if name == "balanced" else [0]):
            s = schedule(name, L, offset)
            N = s.n_nodes
            expected_n = {
                "balanced": s.buffer - 1,
                "chain": L - 1,
                "scan": _jax_scan_calls(L),
            }[name]
            assert N == expected_n
            # node ids: children precede parents, each id used as a child at most once
            # (except scan, whose prefix trees share subtrees)
            ids = np.arange(s.buffer, s.buffer + N)
            assert (s.left_child < ids).all() and (s.right_child < ids).all()
            assert (np.diff(s.stage) >= 0).all() and (s.stage >= 1).all()
            if N:
                assert set(s.stage.tolist()) == set(range(1, s.n_stages + 1))
            # a stage never depends on itself: children are in earlier stages (or leaves)
            stage_of = np.concatenate([np.zeros(s.buffer, int), s.stage])
            assert (stage_of[s.left_child] < s.stage).all()
            assert (stage_of[s.right_child] < s.stage).all()
            # span = union of children spans; spans as sets of positions
            for i in range(N):
                u = set(range(*s.left_span[i])) | set(range(*s.right_span[i]))
                assert set(range(*s.span[i])) == u
            # the root covers the whole string
            all_span = s.span[s.root - s.buffer] if N else s.leaf_span[s.root]
            assert tuple(all_span) == (0, L)
            assert s.padding_leaf.sum() == s.buffer - L
            if name == "balanced":
                assert s.buffer == 2 ** int(np.ceil(np.log2(offset + L)))
                assert (s.level == s.stage).all()
            if name == "scan":  # no node computed twice
                assert len({tuple(c) for c in s.cover}) == N
            if name != "balanced":  # no padding; prefix_roots[t] holds x1..x_{t+1}
                assert [tuple(s.span[r - L]) if r >= L else (r, r + 1)
                        for r in s.prefix_roots] == [(0, t + 1) for t in range(L)]


def _jax_scan_calls(n: int) -> int:
    # S(n) = n//2 pairs + S(n//2) + even combines (n//2 - [n even])
    return 0 if n < 2 else 2 * (n // 2) - (n % 2 == 0) + _jax_scan_calls(n // 2)


def test_offset_zero_is_plain():
    for L in range(1, 40):
        a, b = schedule("balanced", L), schedule("balanced", L, offset=0)
        assert a is b
        assert render(a) == render(schedule("balanced", L, 0))
        assert spans_of(a) == reference_spans("balanced", L)


@pytest.mark.parametrize("name", ["balanced", "scan"])
def test_node_index_map_nests(name):
    for big_L in [1, 5, 16, 23]:
        big = schedule(name, big_L)
        for L in range(1, big_L + 1):
            small = schedule(name, L)
            idx = node_index_map(small, big)
            assert (big.cover[idx] == small.cover).all()
            if name == "scan":  # same trees, not only the same cells
                for i, j in enumerate(idx):
                    assert render(small, small.buffer + i) == render(big, big.buffer + j)


def test_errors_and_cache():
    with pytest.raises(ValueError, match="unknown schedule"):
        schedule("fold", 3)
    with pytest.raises(ValueError, match="length must be >= 1"):
        schedule("scan", 0)
    with pytest.raises(ValueError, match="int"):
        schedule("scan", 2.5)
    with pytest.raises(ValueError, match="offset"):
        schedule("scan", 3, offset=1)
    with pytest.raises(ValueError, match="offset"):
        schedule("balanced", 3, offset=-1)
    with pytest.raises(ValueError, match="out of range"):
        render(schedule("chain", 3), 99)
    with pytest.raises(ValueError, match="not contained"):
        node_index_map(schedule("balanced", 9), schedule("balanced", 4))
    s = schedule("scan", 9)
    assert s is schedule("scan", np.int64(9))
    with pytest.raises(ValueError):
        s.level[0] = 5  # read-only: shared through the cache


def test_stage_slices_partition_nodes():
    s = schedule("scan", 13)
    covered = []
    for k in range(1, s.n_stages + 1):
        sl = s.stage_slice(k)
        assert (s.stage[sl] == k).all()
        covered += list(range(sl.start, sl.stop))
    assert covered == list(range(s.n_nodes))
