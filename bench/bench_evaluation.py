"""Strict evaluation cost: 460 lengths x 3 kinds x 64 strings against the single-kind
evaluation of before (460 lengths x 64 class-balanced strings, plain level-by-level MLP-LDRU).

Usage: python bench/bench_evaluation.py [--lengths 41:500] [--samples 64] [--d 64]

Both run in the same process on one thread with the same untrained MLP-LDRU (timing does not
depend on the weights). "before" reproduces the earlier evaluation loop: per length, a seeded
class-balanced batch and the plain reduction over the padded buffer. "now" is
``evaluate_kinds`` (three kinds; the eval forward evaluates each distinct subtree once).
Prints seconds and the ratio now / before; the goal is <= 2.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import torch

import monoidlab as ml
from monoidlab.evaluation import evaluate_kinds
from monoidlab.geometry import Lengths
from monoidlab.models import build_model
from monoidlab.training.problems import LanguageProblem


def before(model, problem, lengths, n, seed=0):
    """The single-kind evaluation as it was: sampler batches, plain reduction."""
    correct = []
    model.memo_limit = 0  # the level-by-level path
    with torch.no_grad():
        for L in lengths:
            rng = np.random.default_rng([seed, 7_777_777, int(L)])
            b = problem.batch(rng, int(L), n, train=False)
            t, ln = torch.as_tensor(b["tokens"]), torch.as_tensor(b["lengths"])
            logits = model(t, ln)
            correct.append((logits.argmax(-1).numpy() == b["targets"]).mean())
    del model.memo_limit  # back to the class default (shared blocks)
    return float(np.mean(correct))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--language", default="dyck-4")
    p.add_argument("--lengths", default="41:500")
    p.add_argument("--samples", type=int, default=64)
    p.add_argument("--d", type=int, default=64)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    lang = ml.load_language(args.language)
    problem = LanguageProblem(lang, "balanced")
    torch.manual_seed(0)
    model = build_model("mlp-ldru", lang.n_symbols, lang.n_classes, d=args.d).eval()
    lengths = problem.lengths(Lengths.parse(args.lengths))
    evaluate_kinds(model, problem, lengths[:2], 4)  # warm-up: numba, caches
    t0 = time.perf_counter()
    before(model, problem, lengths, args.samples)
    t_before = time.perf_counter() - t0
    t0 = time.perf_counter()
    ev = evaluate_kinds(model, problem, lengths, args.samples)
    t_now = time.perf_counter() - t0
    n_now = sum(len(ev.accuracy[k]) + len(ev.single_class[k]) for k in ev.kinds)
    print(f"{args.language}, MLP-LDRU d {args.d}, {len(lengths)} lengths ({args.lengths}), "
          f"{args.samples} strings per length and kind, 1 thread")
    print(f"before: 1 kind,  {len(lengths)} length sets: {t_before:7.1f} s")
    print(f"now:    {len(ev.kinds)} kinds, {n_now} length sets: {t_now:7.1f} s")
    print(f"ratio now / before: {t_now / t_before:.2f} (goal <= 2)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
