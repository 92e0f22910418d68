"""bench/bench_drift.py: per-level drift of each EC's centroid."""

from __future__ import annotations

import doctest

import numpy as np
import pytest


@pytest.fixture(scope="module")
def mod(bench_script):
    return bench_script("bench_drift")


def test_the_docstring_example(mod):
    assert doctest.testmod(mod).failed == 0


def test_states_that_stay_put_do_not_drift_and_moved_ones_do(mod):
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(3, 4)) * 5
    ec = np.repeat(np.arange(3), 40)
    level = np.tile(np.repeat([2, 4, 6], 40 // 3 + 1)[:40], 3)
    X = centres[ec] + rng.normal(scale=0.01, size=(len(ec), 4))
    still, gap = mod.drift_table(X, ec, level, 4, 5)
    assert all(med < 0.05 for med, _, _, _ in still.values())
    assert gap == pytest.approx(min(np.linalg.norm(centres[a] - centres[b])
                                    for a in range(3) for b in range(a)), rel=0.05)
    moved = X + (level[:, None] - 4) * np.array([0.5, 0, 0, 0])  # every EC shifts per level
    table, _ = mod.drift_table(moved, ec, level, 4, 5)
    assert table[6][0] == pytest.approx(1.0, abs=0.05) and table[2][0] == pytest.approx(1.0, abs=0.05)
    assert table[4][0] == 0.0


def test_a_run_folder(mod, tiny_ldru_run):
    table, gap = mod.run_drift(tiny_ldru_run, 3, 4, 5)
    assert table[3][:2] == (0.0, 0.0) and gap > 0 and max(table) >= 7
    assert all(med > 0 for k, (med, _, _, _) in table.items() if k != 3)
