"""Evaluation time of every model family, one call per test batch (before) and lengths stacked
into padded calls (after), beside 1,000 training steps of the same model.

Usage: python bench/bench_eval.py [--lengths 41:500] [--samples 64] [--steps 1000]
       [--models mlp-ldru,rnn,...] [--cases parity,reverse_string]

Per (problem, model family): the default final evaluation (every test kind, ``--samples``
strings per length and kind) with ``batched=False`` (the per-length path of before) and with
``batched=True``, and ``--steps`` training steps of ``monoidlab.training.train`` with the run's
defaults (no evaluation), all on one thread in one process, timed in CPU seconds of the
process (``time.process_time``: the CPU machines are shared, and with one thread CPU time is
the work, whatever else runs beside it). The evaluated model is the
untrained one of the same config: timing does not depend on the weights. Both evaluations
must give the same result (checked). Prints seconds, after / before, and after / training;
the goal is after / training <= 0.25.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings

import torch

from monoidlab.evaluation import evaluate_kinds
from monoidlab.geometry import Lengths
from monoidlab.training import train
from monoidlab.training.config import RunConfig
from monoidlab.training.loop import build_for
from monoidlab.training.problems import make_problem

FAMILIES = ("mlp-ldru", "pr-lstm", "pr-rnn", "rnn", "lstm", "stack-rnn", "tape-rnn",
            "transformer")
#: a language (three kinds) for every family; the issue's tape task for the memory models
CASES = {"parity": FAMILIES, "reverse_string": ("stack-rnn", "tape-rnn")}


def config(case: str, model: str, steps: int) -> RunConfig:
    where = {"task": case} if case == "reverse_string" else {"language": case}
    return RunConfig(model=model, steps=steps, **where)


def time_eval(cfg: RunConfig, lengths, samples: int, batched: bool) -> tuple[float, dict]:
    problem = make_problem(cfg)
    torch.manual_seed(cfg.seed)
    model = build_for(cfg, problem)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        evaluate_kinds(model, problem, lengths[:2], 4, batched=batched)  # warm-up: caches
        t0 = time.process_time()
        ev = evaluate_kinds(model, problem, lengths, samples, cfg.seed, cfg.eval_kinds,
                            batched=batched)
    return time.process_time() - t0, ev.as_dict()


def time_train(cfg: RunConfig) -> float:
    t0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        train(cfg, out_dir=None, progress=False, evaluate_at_end=False)
    return time.process_time() - t0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lengths", default="41:500")
    p.add_argument("--samples", type=int, default=64)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--models", default=",".join(FAMILIES))
    p.add_argument("--cases", default=",".join(CASES))
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    lengths = Lengths.parse(args.lengths).values()
    wanted = args.models.split(",")
    print(f"# evaluation on {args.lengths} x all kinds x {args.samples} strings, "
          f"{args.steps} training steps; torch {torch.__version__}, 1 thread")
    print(f"{'case':<15} {'model':<12} {'before s':>9} {'after s':>8} {'after/before':>12} "
          f"{'train s':>8} {'after/train':>11}")
    worst = 0.0
    for case in args.cases.split(","):
        for model in CASES[case]:
            if model not in wanted:
                continue
            cfg = config(case, model, args.steps)
            t_before, ev_before = time_eval(cfg, lengths, args.samples, batched=False)
            t_after, ev_after = time_eval(cfg, lengths, args.samples, batched=True)
            same = json.dumps(ev_before, sort_keys=True) == json.dumps(ev_after, sort_keys=True)
            t_train = time_train(cfg)
            worst = max(worst, t_after / t_train)
            print(f"{case:<15} {model:<12} {t_before:>9.1f} {t_after:>8.1f} "
                  f"{t_after / t_before:>12.2f} {t_train:>8.1f} {t_after / t_train:>11.2f}"
                  f"{'' if same else '   RESULTS DIFFER'}", flush=True)
    print(f"worst after/train: {worst:.2f} (goal <= 0.25)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
