"""Benchmark of the diagnosis's data step (prints; not a test): the compositions the wrong and
right strings need, against what the training layout shows.

20,000 near-miss strings of dyck-2, lengths 1..40, in one test set per length (as
:func:`~monoidlab.training.diagnosis.diagnose` re-draws them), half of them marked wrong at
random; the layout of training lengths 1..8 (``level_coverage``). The batched
:func:`~monoidlab.training.diagnosis.tally_sets` against the per-string loop it replaced (kept
in tests/test_diagnosis.py as the reference); both must give the same tally and hits.

Usage::

    .venv/bin/python -m bench.bench_diagnosis            # 20,000 strings (~10 s on one core)
    .venv/bin/python -m bench.bench_diagnosis --n 2000   # a quick look
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import monoidlab as ml
from monoidlab.coverage.levels import level_coverage
from monoidlab.training.diagnosis import tally_sets

try:  # the slow reference lives with the tests: run from the repository root
    from tests.test_diagnosis import reference_tally
except ModuleNotFoundError:
    raise SystemExit("run it from the repository root: python -m bench.bench_diagnosis") from None


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000, help="strings in all (default 20000)")
    ap.add_argument("--language", default="dyck-2")
    ap.add_argument("--padding", default="learned", choices=["learned", "identity"])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    lang = ml.load_language(args.language)
    monoid = lang.monoid()
    rng = np.random.default_rng(args.seed)
    b = ml.sample(lang, range(1, 41), args.n, sampler="near_miss", seed=args.seed)
    sets = []
    for L in np.unique(b.lengths):  # one test set per length, as diagnose draws them
        rows = b.lengths == L
        sets.append((b.tokens[rows, :L], b.lengths[rows], rng.random(int(rows.sum())) < 0.5))
    lc = level_coverage(lang, range(1, 9), sorted(int(L) for L in np.unique(b.lengths)),
                        schedule="balanced", padding=args.padding)
    shown = np.asarray(lc.shown)
    t = time.perf_counter()
    fast = tally_sets(monoid, sets, shown, padding=args.padding)
    t_fast = time.perf_counter() - t
    t = time.perf_counter()
    slow = reference_tally(monoid, sets, shown, padding=args.padding)
    t_slow = time.perf_counter() - t
    assert fast == slow, "the batched tally differs from the per-string loop"
    n = sum(len(c) for _, _, c in sets)
    print(f"{args.language}: {n} near-miss strings, lengths 1..40, {len(sets)} sets, "
          f"|M| = {monoid.size}, padding {args.padding}")
    print(f"  per-string loop (before): {t_slow:.3f} s")
    print(f"  batched tally_sets (now): {t_fast:.3f} s")
    print(f"  ratio: {t_slow / t_fast:.1f}x faster, same tally "
          f"({fast[0]['wrong_level']} of {fast[0]['wrong']} wrong strings need an unshown "
          f"composition; {len(fast[1])} distinct hits)")
    return {"strings": n, "before_s": t_slow, "after_s": t_fast, "ratio": t_slow / t_fast}


if __name__ == "__main__":
    main()
