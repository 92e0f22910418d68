"""Benchmark of the coverage analysis (prints; not a test).

(a) compositions of 1,000,000 uniform strings of length 500 under ``balanced`` (dyck-6) with
    ``composition_counts`` (goal: < 10 s), sampling timed separately, and the ratio against
    per-string Python references measured on a subset and extrapolated;
(b) exact coverage of every ``ldru21`` language over test lengths 41..500 (goal: < 30 s total),
    per language, monoid construction timed apart;
(c) ``monoidlab min-length --suite ldru21 --test 41:500``: in process (monoids already built)
    and as a fresh process (imports and monoids included).

Usage::

    .venv/bin/python -m bench.bench_coverage            # full run (~2-3 min on 2 cores)
    .venv/bin/python -m bench.bench_coverage --quick    # 100k strings, test lengths 41..200
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import platform
import subprocess
import sys
import time

import numpy as np

import monoidlab as ml

try:  # the slow reference lives with the tests: run from the repository root
    from tests.references import reference_node_labels
except ModuleNotFoundError:
    raise SystemExit("run it from the repository root: python -m bench.bench_coverage") from None

from monoidlab.cli import main as cli_main
from monoidlab.coverage.compositions import composition_counts
from monoidlab.coverage.exact import exact_coverage
from monoidlab.strings.sampling import sample
from monoidlab.strings.schedules import schedule


def clock():
    return time.perf_counter()


class Timer:
    """Wall and CPU seconds of a block. numpy is single-threaded here, so on a shared machine
    the CPU time is the better estimate of the wall time on an idle one."""

    def __enter__(self):
        self.w, self.c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.w
        self.cpu = time.process_time() - self.c

    def __str__(self):
        return f"{self.wall:.2f} s wall / {self.cpu:.2f} s CPU"


def python_loop_counts(monoid, strings_tokens, length):
    """Plain per-string loop: pair (0,1),(2,3),... level by level over Python lists."""
    table = monoid.table.tolist()
    letters = monoid.letters.tolist()
    counts: dict = {}
    buf = 1 << (length - 1).bit_length()
    for row in strings_tokens:
        vals = [letters[a] for a in row[:length]]
        filled = length  # cells holding string (the rest is padding = identity)
        vals += [0] * (buf - length)
        while len(vals) > 1:
            nxt = []
            for i in range(0, len(vals), 2):
                x, y = vals[i], vals[i + 1]
                if i < filled:  # the left child holds string: a composition
                    counts[x, y] = counts.get((x, y), 0) + 1
                nxt.append(table[x][y])
            vals = nxt
            filled = (filled + 1) // 2
    return counts


def bench_compositions(n: int, length: int, ref_n: int, slow_ref_n: int) -> None:
    print(f"(a) compositions of {n:,} uniform dyck-6 strings of length {length}, balanced")
    lang = ml.load_language("dyck-6")
    with Timer() as t:
        monoid = lang.monoid()
        _ = monoid.table
    print(f"    monoid + table (|M| = {monoid.size}): {t}")
    tokens = np.empty((n, length), np.uint8)  # 1 byte per symbol: 500 MB for 1M x 500
    chunk = 50_000
    with Timer() as t:
        for i, s in enumerate(range(0, n, chunk)):
            b = sample(lang, [length], min(chunk, n - s), sampler="uniform", seed=i)
            tokens[s: s + len(b)] = b.tokens
    lengths = np.full(n, length)
    print(f"    sampling (sample(), uniform, labels included, chunks of {chunk:,}): {t}")

    with Timer() as t:
        counts = composition_counts(monoid, tokens, lengths, "balanced")
    t_fast = t.cpu
    n_nodes = schedule("balanced", length).n_nodes
    per_string = int(counts.sum()) // n
    scale = 1_000_000 / n
    print(f"    composition_counts: {t}  ({counts.sum():,} compositions, {per_string} per "
          f"string; {n_nodes} nodes, {n_nodes - per_string} all-padding)")
    print(f"    -> 1,000,000 strings: ~{t.wall * scale:.1f} s wall / ~{t.cpu * scale:.1f} s CPU; "
          f"goal < 10 s: {'met' if t.cpu * scale < 10 else 'NOT met'} (judged on CPU time)")

    sub = tokens[:ref_n].astype(np.int64)
    with Timer() as t:
        ref = python_loop_counts(monoid, sub.tolist(), length)
    fast_sub = composition_counts(monoid, sub, lengths[:ref_n])
    assert all(fast_sub[x, y] == c for (x, y), c in ref.items()) and \
        sum(ref.values()) == fast_sub.sum(), "per-string loop and composition_counts disagree"
    est = t.cpu / ref_n * n
    print(f"    plain per-string Python loop: {t} for {ref_n} strings -> ~{est:,.0f} s CPU "
          f"for {n:,} (extrapolated); ratio {est / t_fast:,.0f}x")

    strings = lang.decode(sub[:slow_ref_n], lengths[:slow_ref_n])
    with Timer() as t:
        reference_node_labels(monoid, strings, "balanced")
    est = t.cpu / slow_ref_n * n
    print(f"    reference_node_labels (element_of per child substring): {t} for {slow_ref_n} "
          f"strings -> ~{est:,.0f} s CPU for {n:,}; ratio {est / t_fast:,.0f}x")


def bench_exact(test_lengths: range) -> None:
    print(f"(b) exact coverage, ldru21, test lengths {test_lengths.start}..{test_lengths.stop - 1}"
          ", balanced schedule, uniform strings")
    print(f"    {'language':<20}{'|M|':>6}{'monoid s':>10}{'wall s':>8}{'CPU s':>8}{'needed':>9}")
    wall = cpu = total_monoid = 0.0
    for name in ml.suite("ldru21"):
        lang = ml.load_language(name)
        with Timer() as tm:
            m = lang.monoid()
            _ = m.table
        with Timer() as t:
            cov = exact_coverage(lang, test_lengths)
        wall, cpu, total_monoid = wall + t.wall, cpu + t.cpu, total_monoid + tm.cpu
        print(f"    {name:<20}{m.size:>6}{tm.cpu:>10.2f}{t.wall:>8.2f}{t.cpu:>8.2f}"
              f"{int(cov.support.sum()):>9}")
    print(f"    total exact coverage: {wall:.2f} s wall / {cpu:.2f} s CPU (goal < 30 s: "
          f"{'met' if cpu < 30 else 'NOT met'}); monoids + tables: {total_monoid:.2f} s CPU")
    lang = ml.load_language("modular-arithmetic")
    wf = [c for c in lang.classes if c != "incomplete"]
    for dist in ("uniform", "balanced"):
        with Timer() as t:
            exact_coverage(lang, test_lengths, within=wf, sampler=dist)
        print(f"    modular-arithmetic within well-formed expressions, {dist}: {t}")


def bench_min_length(test: str) -> None:
    print(f"(c) monoidlab min-length --suite ldru21 --test {test}")
    buf = io.StringIO()
    with Timer() as t, contextlib.redirect_stdout(buf):
        code = cli_main(["min-length", "--suite", "ldru21", "--test", test])
    print(f"    in process (monoids cached from (b)): {t}, exit {code}")
    # a fresh interpreter pays imports and monoid construction (``python -m monoidlab.cli``
    # would not register the analysis commands, hence the -c form)
    cmd = [sys.executable, "-c", "import sys; from monoidlab.cli import main; sys.exit(main())",
           "min-length", "--suite", "ldru21", "--test", test]
    with Timer() as t:
        proc = subprocess.run(cmd, capture_output=True, text=True)
    child = os.times()
    print(f"    fresh process (imports + monoids): {t.wall:.2f} s wall / "
          f"{child.children_user + child.children_system:.2f} s CPU, exit {proc.returncode}"
          + (f": {proc.stderr.strip()}" if proc.returncode else ""))
    print("    " + buf.getvalue().rstrip().replace("\n", "\n    "))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="100k strings, test lengths 41..200")
    p.add_argument("--only", choices=["a", "b", "c"], default=None)
    args = p.parse_args(argv)
    n = 100_000 if args.quick else 1_000_000
    test = range(41, 201) if args.quick else range(41, 501)
    print(f"monoidlab {ml.__version__}, numpy {np.__version__}, Python "
          f"{platform.python_version()}, {os.cpu_count()} CPUs, {platform.machine()}")
    t = clock()
    if args.only in (None, "a"):
        bench_compositions(n, 500, ref_n=200, slow_ref_n=10)
    if args.only in (None, "b"):
        bench_exact(test)
    if args.only in (None, "c"):
        bench_min_length(f"{test.start}:{test.stop - 1}")
    print(f"total benchmark time {clock() - t:.1f} s")


if __name__ == "__main__":
    main()
