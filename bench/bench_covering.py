"""Speed of the covering sampler: 20,000 strings of lengths 1..40 for dyck-6 (goal: under 5 s on
one core), beside the samplers it is mixed with, on the same lengths, in the same run.

Usage: python bench/bench_covering.py [--language dyck-6] [--n 20000] [--repeat 3]

Prints the plan's build time (targets, layout, path-count tables: once per run), the draw time
of ``n`` covering strings, and the draw time of ``n`` strings of the near_miss and balanced
samplers (``ml.sample``), with the ratios; the best of ``--repeat`` runs, one thread.
"""

from __future__ import annotations

import argparse
import sys
import time


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--language", default="dyck-6")
    p.add_argument("--n", type=int, default=20_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--padding", default="identity")
    args = p.parse_args(argv)
    import monoidlab as ml
    from monoidlab.coverage.covering import CoveringPlan

    lang = ml.load_language(args.language)
    t = time.perf_counter()
    plan = CoveringPlan(lang, range(1, 41), range(41, 501), padding=args.padding)
    build = time.perf_counter() - t
    draw = best(lambda: plan.sample(args.n, seed=0), args.repeat)
    near = best(lambda: ml.sample(lang, range(1, 41), args.n, sampler="near_miss", seed=0),
                args.repeat)
    bal = best(lambda: ml.sample(lang, range(1, 41), args.n, sampler="balanced", seed=0),
               args.repeat)
    print(f"{args.language}, {args.padding} padding, lengths 1..40, {args.n} strings, "
          f"{len(plan.targets)} targets")
    print(f"  covering plan (once per run): {build:.2f} s")
    print(f"  covering draw:  {draw:.2f} s  (goal < 5 s)")
    print(f"  near_miss draw: {near:.2f} s  (covering / near_miss = {draw / near:.2f})")
    print(f"  balanced draw:  {bal:.2f} s  (covering / balanced = {draw / bal:.2f})")
    return 0 if draw < 5 else 1


if __name__ == "__main__":
    sys.exit(main())
