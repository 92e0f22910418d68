"""Benchmark of minimisation and of the family bounds (prints; not a test).

(a) ``automaton.minimise`` (Hopcroft's algorithm) against Moore's refinement (the former
    implementation, kept in ``tests/references.py``) on cycles with one accepting state (the
    worst case of Moore's refinement: one pass per state) and on random machines, in the same
    run; goal: a 10^5-state cycle in seconds.
(b) every family at its documented upper bounds (languages/README.md): building plus
    minimising, through ``build_family`` as a spec does; goal: under 5 s each.

Usage::

    .venv/bin/python -m bench.bench_minimise           # ~1-2 min on 2 cores
    .venv/bin/python -m bench.bench_minimise --quick   # smaller Moore reference
"""

from __future__ import annotations

import argparse
import time

import numpy as np

try:  # the slow reference lives with the tests: run from the repository root
    from tests.references import reference_minimise
except ModuleNotFoundError:
    raise SystemExit("run it from the repository root: python -m bench.bench_minimise") from None

from monoidlab.algebra import families  # noqa: E402
from monoidlab.algebra.automaton import minimise  # noqa: E402


def cpu(fn, *args) -> tuple[float, object]:
    t = time.process_time()
    out = fn(*args)
    return time.process_time() - t, out


def cycle(n: int):
    out = np.zeros(n, np.int64)
    out[0] = 1
    return ((np.arange(n) + 1) % n)[:, None], 0, out


def random_machine(n: int, k: int, seed: int):
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, (n, k)), 0, rng.integers(0, 2, n)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    print("(a) minimise: Hopcroft vs Moore refinement (CPU seconds, same run)")
    print(f"{'machine':<28} {'states':>8} {'Hopcroft':>9} {'Moore':>9} {'ratio':>7}")
    ref_max = 1_000 if args.quick else 3_000
    for name, n, make in [("cycle, 1 accepting", 1_000, cycle), ("cycle, 1 accepting", 3_000, cycle),
                          ("cycle, 1 accepting", 10_000, cycle),
                          ("cycle, 1 accepting", 100_000, cycle),
                          ("random, 2 letters", 10_000, lambda n: random_machine(n, 2, 0)),
                          ("random, 2 letters", 100_000, lambda n: random_machine(n, 2, 1))]:
        m = make(n)
        t_new, new = cpu(minimise, *m)
        if n <= ref_max or name.startswith("random"):
            t_old, old = cpu(reference_minimise, *m)
            assert all(np.array_equal(a, b) for a, b in zip(new, old))
            print(f"{name:<28} {n:>8} {t_new:>9.3f} {t_old:>9.3f} {t_old / t_new:>6.0f}x",
                  flush=True)
        else:
            print(f"{name:<28} {n:>8} {t_new:>9.3f}   Moore skipped (n passes of O(n log n))",
                  flush=True)
    print("\n(b) families at their upper bounds: build + minimise (CPU seconds; goal < 5 s)")
    cases = [("count-mod", {"k": 100_000}),
             ("count-mod", {"k": 500, "symbol": "s1", "alphabet": [f"s{i}" for i in range(1000)]}),
             ("cycle-navigation", {"k": 100_000}), ("modular-arithmetic", {"mod": 256}),
             ("modular-arithmetic-precedence", {"mod": 48}), ("dyck", {"n": 100_000}),
             ("prefix", {"p": 16, "q": 2}), ("prefix", {"p": 1, "q": 700}),
             ("prefix", {"p": 2, "q": 70}), ("full-transformation", {"n": 100_000})]
    worst = 0.0
    for family, params in cases:
        t, a = cpu(families.build_family, family, params)
        worst = max(worst, t)
        shown = {k: (f"{len(v)} symbols" if isinstance(v, list) else v) for k, v in params.items()}
        print(f"{family:<30} {str(shown):<38} {t:6.2f} s  {a.n_states:>7} states "
              f"{a.n_symbols:>5} symbols", flush=True)
    print(f"slowest: {worst:.2f} s (goal < 5 s)")


if __name__ == "__main__":
    main()
