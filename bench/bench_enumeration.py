"""Benchmark: the first monoid enumeration in a fresh process, against libsemigroups.

The full transformation monoid T_n (n^n elements, three generators: a cycle, a transposition
and a rank-(n-1) map) is written as an n-state spec file. Each repeat starts two fresh Python
processes, alternating which goes first: one loads the spec and times its first
``lang.monoid(max_elements=...)`` call (everything that call does lazily counts: numba's import
and cache load where a path uses it, the closure, the tables); the other builds and runs
libsemigroups-pybind11's ``FroidurePin`` on the same generators (imports outside both timings).
The sizes are checked equal. Prints the median of each and their ratio (goal: T_7 <= 0.4,
T_8 <= 0.3), and the peak memory of the T_8 enumeration.

    python bench/bench_enumeration.py               # T_7, 5 repeats
    python bench/bench_enumeration.py --n 8 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

OURS = """
import json, resource, sys, time
import monoidlab as ml
lang = ml.load_language(sys.argv[1])
t = time.perf_counter()
m = lang.monoid(max_elements=int(sys.argv[2]))
dt = time.perf_counter() - t
print(json.dumps({"s": dt, "size": m.size, "numba": "numba" in sys.modules,
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

THEIRS = """
import json, resource, sys, time
import libsemigroups_pybind11 as lsg
n = int(sys.argv[1])
cycle = [(q + 1) % n for q in range(n)]
swap = [1, 0] + list(range(2, n))
merge = list(range(n - 1)) + [n - 2]  # state n-1 to n-2: rank n - 1
guard = lsg.ReportGuard(False)
t = time.perf_counter()
S = lsg.FroidurePin([lsg.Transf(list(range(n))), lsg.Transf(cycle), lsg.Transf(swap),
                     lsg.Transf(merge)])
S.run()
dt = time.perf_counter() - t
print(json.dumps({"s": dt, "size": S.size(),
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def spec_for(n: int, folder: Path) -> Path:
    """T_n as a spec file whose letters act as THEIRS's generators (every state its own class,
    so the machine is minimal and its transition monoid is the full T_n)."""
    from monoidlab.algebra.automaton import Automaton
    from monoidlab.algebra.spec import spec_text

    delta = [[(q + 1) % n, (1 - q) if q < 2 else q, q if q < n - 1 else n - 2]
             for q in range(n)]
    a = Automaton(alphabet=("c", "s", "m"), delta=delta, start=0, output=list(range(n)),
                  classes=tuple(f"q{q}" for q in range(n)), name=f"full-transformation-{n}")
    path = folder / f"t{n}.toml"
    path.write_text(spec_text(a, f"T_{n}: cycle, swap, merge"))
    return path


def run(code: str, *argv: str) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                         env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=7, help="T_n (7: 823,543 elements; 8: 16,777,216)")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    import libsemigroups_pybind11 as lsg
    import numpy

    with tempfile.TemporaryDirectory() as tmp:
        spec = spec_for(args.n, Path(tmp))
        limit = str(args.n ** args.n + 1)
        ours, theirs = [], []
        for r in range(args.repeat):
            pair = [("ours", OURS, (str(spec), limit)), ("theirs", THEIRS, (str(args.n),))]
            for who, code, argv in (pair if r % 2 == 0 else pair[::-1]):
                res = run(code, *argv)
                (ours if who == "ours" else theirs).append(res)
    sizes = {x["size"] for x in ours} | {x["size"] for x in theirs}
    assert sizes == {args.n ** args.n}, sizes
    mo = statistics.median(x["s"] for x in ours)
    mt = statistics.median(x["s"] for x in theirs)
    print(f"# bench_enumeration: T_{args.n} ({args.n ** args.n:,} elements), python "
          f"{platform.python_version()}, numpy {numpy.__version__}, libsemigroups-pybind11 "
          f"{getattr(lsg, '__version__', '?')}, {os.cpu_count()} cpus, load average "
          f"{os.getloadavg()[0]:.1f}; first call in a fresh process, {args.repeat} repeats "
          "alternating")
    def times(rows: list[dict]) -> str:
        return ", ".join(f"{x['s']:.3f}" for x in rows)

    print(f"monoidlab      median {mo:.3f} s  (all: {times(ours)}; "
          f"numba loaded: {ours[0]['numba']}; peak RSS {max(x['peak_mib'] for x in ours):.0f} "
          "MiB)")
    print(f"libsemigroups  median {mt:.3f} s  (all: {times(theirs)}"
          f"; peak RSS {max(x['peak_mib'] for x in theirs):.0f} MiB)")
    goal = 0.4 if args.n <= 7 else 0.3
    print(f"ratio monoidlab / libsemigroups: {mo / mt:.2f} (goal <= {goal})")


if __name__ == "__main__":
    main()
