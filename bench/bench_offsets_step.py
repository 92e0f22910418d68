"""The MLP-LDRU training step at random offsets: against the step without offsets, and against
the plain level-by-level path that offsets took before.

Usage: python bench/bench_offsets_step.py [--language tomita-3] [--steps 100] [--rounds 3]

The ldru21-cpu settings of tomita-3: d 32, no dropout, identity padding, batch 64, the
near_miss sampler, one length per batch drawn from 1..40, the associativity regulariser
(weight 0.1), Adam. One thread; the three variants take turns on the same pre-drawn batches in
each round (the cores are shared: MACHINE.md). "shared": the default (distinct blocks computed
once, with or without offsets); "plain": ``memo_limit = 0``. Prints ms per step and the ratios.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

import monoidlab as ml
from monoidlab.models import build_model
from monoidlab.training.problems import LanguageProblem


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--language", default="tomita-3")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    lang = ml.load_language(args.language)
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 41, args.steps)
    batches = {}
    for offsets in ("none", "random"):
        problem = LanguageProblem(lang, "near_miss", offsets=offsets)
        batches[offsets] = [{k: torch.as_tensor(v) for k, v in
                             problem.batch(rng, int(L), 64, True).items()} for L in lengths]
    model = build_model("mlp-ldru", lang.n_symbols, lang.n_classes, d=32, dropout=0.0,
                        padding="identity").train()
    opt = torch.optim.Adam(model.parameters(), 1e-3)

    def steps(batch_list, memo):
        model.memo_limit = memo
        t0 = time.perf_counter()
        for b in batch_list:
            loss, _ = problem.loss(model, b)  # offsets come with the batch, when drawn
            loss = loss + 0.1 * model.regulariser(b["tokens"], b["lengths"], b.get("offsets"))
            opt.zero_grad()
            loss.backward()
            opt.step()
        return time.perf_counter() - t0

    variants = {"no offsets, shared": ("none", 4096), "offsets, shared": ("random", 4096),
                "offsets, plain": ("random", 0)}
    steps(batches["random"][:5], 4096)  # warm-up
    total = dict.fromkeys(variants, 0.0)
    for _ in range(args.rounds):
        for name, (offsets, memo) in variants.items():
            total[name] += steps(batches[offsets], memo)
    ms = {k: 1000 * v / (args.rounds * args.steps) for k, v in total.items()}
    print(f"{args.language}, d 32, batch 64, lengths 1..40, one thread, "
          f"{args.rounds} x {args.steps} steps per variant:")
    for name, v in ms.items():
        print(f"  {name:<20} {v:6.1f} ms/step")
    print(f"offsets / no offsets (shared): {ms['offsets, shared'] / ms['no offsets, shared']:.2f}"
          f"; offsets shared / plain: {ms['offsets, shared'] / ms['offsets, plain']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
