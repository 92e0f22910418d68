"""Benchmark: monoid enumeration against libsemigroups, labelling against automata-lib.

Prints ratios measured in the same run (not a test; nothing here fails on a slow machine).

(a) Enumeration. "ours" is the construction of ``SyntacticMonoid(automaton)`` only: the closure
    with its right Cayley table and representative words, *not* Green's relations, the left
    table or the multiplication table (all computed on demand). "libsemigroups" is
    ``FroidurePin([identity, letters...])`` built and fully run (elements, both Cayley graphs,
    rules). Inputs: the full transformation monoid T_7 (823,543 elements) and random complete
    8-10-state machines (every state its own class, seeded) whose monoids have 5*10^4 to
    2*10^6 elements. Goal: ratio ours/theirs <= 1.0.
(b) Labelling. ``SyntacticMonoid.element_of`` on 20,000 random strings of length 500 (parity,
    dyck-6) against automata-lib ``DFA.accepts_input`` on a subset of the same strings,
    compared per symbol. Goal: >= 50x.

Each timing is the best of ``--repeat`` runs. Usage::

    python bench/bench_monoid.py            # full run (about a minute)
    python bench/bench_monoid.py --quick    # a few seconds
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np


def best_of(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def libsemigroups():
    try:
        import libsemigroups_pybind11 as lsg
    except ImportError:  # pragma: no cover
        raise SystemExit("bench_monoid needs libsemigroups-pybind11: pip install -e '.[dev]'") from None
    return lsg


def froidure_pin_run(delta: np.ndarray):
    lsg = libsemigroups()
    n, k = delta.shape
    gens = [lsg.Transf(list(range(n)))] + [lsg.Transf([int(x) for x in delta[:, a]])
                                          for a in range(k)]
    S = lsg.FroidurePin(gens)
    S.run()
    return S


def random_machines(count: int, seed: int, lo: int = 50_000, hi: int = 2_000_000):
    """Seeded random complete machines (8-10 states, 2-3 letters) with lo <= |M| <= hi."""
    from monoidlab import Automaton

    lsg = libsemigroups()
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        n, k = int(rng.integers(8, 11)), int(rng.integers(2, 4))
        a = Automaton(alphabet=[chr(ord("a") + i) for i in range(k)],
                      delta=rng.integers(0, n, size=(n, k)), start=0, output=np.arange(n),
                      classes=[f"s{q}" for q in range(n)], name=f"random-{len(out)}")
        if a.n_states < 8:
            continue
        gens = [lsg.Transf(list(range(a.n_states)))] + [
            lsg.Transf([int(x) for x in a.delta[:, j]]) for j in range(k)]
        S = lsg.FroidurePin(gens)
        S.enumerate(hi + 1)  # cheap size probe
        if S.finished() and lo <= S.current_size() <= hi:
            out.append(a)
    return out


def bench_enumeration(args) -> list[dict]:
    from monoidlab.algebra import families
    from monoidlab.algebra.monoid import SyntacticMonoid

    cases = [families.full_transformation(7)]
    cases += random_machines(2 if args.quick else 5, args.seed)
    rows = []
    for a in cases:
        ours, m = best_of(lambda a=a: SyntacticMonoid(a, max_elements=50_000_000), args.repeat)
        theirs, S = best_of(lambda a=a: froidure_pin_run(np.asarray(a.delta)), args.repeat)
        assert S.size() == m.size, (a.name, S.size(), m.size)
        rows.append({"case": a.name, "states": a.n_states, "letters": a.n_symbols,
                     "size": m.size, "ours_s": ours, "libsemigroups_s": theirs,
                     "ratio": ours / theirs})
        del m, S
    return rows


def bench_labelling(args) -> list[dict]:
    import monoidlab as ml

    n_strings, length = (5_000 if args.quick else 20_000), 500
    subset = 100 if args.quick else 500
    rng = np.random.default_rng(args.seed)
    rows = []
    for name in ("parity", "dyck-6"):
        a = ml.load_language(name)
        m = a.monoid()
        tokens = rng.integers(0, a.n_symbols, size=(n_strings, length))
        lengths = np.full(n_strings, length)
        m.element_of(tokens[:8], lengths[:8])  # warm-up: numba compiles (or loads its cache) once
        ours, ecs = best_of(lambda m=m, t=tokens, n=lengths: m.element_of(t, n), args.repeat)
        dfa = a.to_automata_lib()
        strings = a.decode(tokens[:subset], lengths[:subset])
        theirs, accepted = best_of(lambda d=dfa, ss=strings: [d.accepts_input(s) for s in ss], 1)
        # the two agree on the subset
        assert [int(x) for x in accepted] == m.outputs[ecs[:subset]].tolist()
        ours_rate = n_strings * length / ours
        theirs_rate = subset * length / theirs
        rows.append({"language": name, "strings": n_strings, "length": length,
                     "ours_Msym_s": ours_rate / 1e6, "automata_lib_Msym_s": theirs_rate / 1e6,
                     "automata_lib_strings": subset, "speedup": ours_rate / theirs_rate})
    return rows


def print_table(rows: list[dict], columns: list[str]) -> None:
    def fmt(v):
        return f"{v:.3f}" if isinstance(v, float) else str(v)

    cells = [columns] + [[fmt(r[c]) for c in columns] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    for j, row in enumerate(cells):
        print("  ".join(v.rjust(w) if j and i else v.ljust(w)
                        for i, (v, w) in enumerate(zip(row, widths))))
        if j == 0:
            print("  ".join("-" * w for w in widths))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer machines and strings, 1 repeat")
    parser.add_argument("--repeat", type=int, default=None, help="best of N timings (default 3)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.repeat is None:
        args.repeat = 1 if args.quick else 3
    import libsemigroups_pybind11 as lsg
    import numpy

    guard = libsemigroups().ReportGuard(False)  # noqa: F841 (kept alive: no progress output)
    print(f"# bench_monoid: python {platform.python_version()}, numpy {numpy.__version__}, "
          f"libsemigroups-pybind11 {getattr(lsg, '__version__', '?')}, {os.cpu_count()} cpus, "
          f"best of {args.repeat}{', quick' if args.quick else ''}, load average "
          f"{os.getloadavg()[0]:.1f} (timings on a shared machine are noisy; ratios are same-run)")
    print("\n(a) enumeration: ours = SyntacticMonoid(automaton) construction only "
          "(no Green's relations, no left/full tables); libsemigroups = FroidurePin run()")
    rows = bench_enumeration(args)
    print_table(rows, ["case", "states", "letters", "size", "ours_s", "libsemigroups_s", "ratio"])
    ratios = np.array([r["ratio"] for r in rows])
    print(f"ratio ours/libsemigroups: T_7 {ratios[0]:.2f}, random machines geometric mean "
          f"{np.exp(np.log(ratios[1:]).mean()):.2f} (goal <= 1.0)")

    print("\n(b) labelling: element_of on random strings vs automata-lib DFA.accepts_input "
          "(per symbol, automata-lib on a subset)")
    rows = bench_labelling(args)
    print_table(rows, ["language", "strings", "length", "ours_Msym_s", "automata_lib_Msym_s",
                       "automata_lib_strings", "speedup"])
    speedups = ", ".join(f"{r['language']} {r['speedup']:.0f}x" for r in rows)
    print(f"speedup: {speedups} (goal >= 50x)")


if __name__ == "__main__":
    main()
