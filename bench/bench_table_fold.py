"""A finite model evaluated as a table fold against its own torch forward pass.

Usage: python bench/bench_table_fold.py [--length 4096] [--batch 64] [--repeats 5]

For the snapped MLP-LDRU (k 282 codes, d 32, as on dyck-6) and the transformation tree model
(n 8), one thread: the eval-mode torch forward on a batch of random strings of one length, and
``model.finite_table().fold`` (numpy integer gathers over the balanced tree) on the same
strings; both must give the same classes (checked), and the ratio of their times is printed
(goal: the fold at least 100x faster at length 4096, batch 64). Building the table is timed
apart: it is paid once per model, not per batch.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np


def best_of(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--length", type=int, default=4096)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args(argv)
    import torch

    from monoidlab.models.snap import SnappedMLPLDRU
    from monoidlab.models.transform_tree import TransformTree

    torch.set_num_threads(1)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    models = (("mlp-ldru-snap (k 282, d 32)", SnappedMLPLDRU(2, 2, codes=282).eval()),
              ("transform-tree (n 8)", TransformTree(2, 2, states=8).eval()))
    tables, builds = [], []
    for _, model in models:
        t0 = time.perf_counter()
        tables.append(model.finite_table())
        builds.append(time.perf_counter() - t0)
    # the length asked (a full buffer when it is a power of two) and one that pads
    for length in (args.length, args.length - args.length // 40 - 1):
        run(models, tables, builds, rng, args.batch, length, args.repeats)
    return 0


def run(models, tables, builds, rng, batch: int, length: int, repeats: int) -> None:
    import torch

    tokens = rng.integers(0, 2, (batch, length))
    lengths = np.full(batch, length)
    t, n = torch.as_tensor(tokens), torch.as_tensor(lengths)
    print(f"batch {batch} x length {length}, one thread, best of {repeats}:")
    for (name, model), table, build in zip(models, tables, builds):
        with torch.no_grad():
            torch_out = model(t, n).argmax(-1).numpy()
            t_torch = best_of(lambda m=model: m(t, n), repeats)
        fold_out = table.fold(tokens, lengths)
        assert (torch_out == fold_out).all(), f"{name}: the fold differs from the forward pass"
        t_fold = best_of(lambda tb=table: tb.fold(tokens, lengths), repeats)
        print(f"  {name}: torch {t_torch * 1000:.1f} ms, fold {t_fold * 1000:.2f} ms, ratio "
              f"{t_torch / t_fold:.1f}x (goal >= 100x: "
              f"{'met' if t_torch / t_fold >= 100 else 'NOT met'}); table built once in "
              f"{build:.2f} s ({table.n_codes} codes); same classes on every string")


if __name__ == "__main__":
    sys.exit(main())
