"""A non-neural peer for the distilled transformation tree: RPNI on the same labelled strings.

The distillation (monoidlab/training/distil.py) scores its machines on 16,384 labelled strings
of the run's training sampler (lengths 1..40); a classical passive learner can be given exactly
those strings. This script runs AALpy's RPNI (generalised state merging of Moore machines;
missing transitions go to a sink, and the sink and any state no labelled string ends in read as
the majority class) on the strings of attempt 0 of the recipe 'distilled' (seed 0) and
certifies the learned DFA as monoidlab certifies a model: correct on every string of length >= 1
of the run's sub-language, or the shortest string it gets wrong. If RPNI learns a language from
these strings, the strings determine it, and the network's part in the distilled model is to
answer L*'s membership queries, not to find a machine the data could not give.

    python bench/bench_distil_peer.py [--batches N] [LANGUAGE ...]
    # default: 256 batches (the distillation's), the 21 tasks and bench/dyck-dev

(prefix-4-4, 341 states and 257 classes, only when named: RPNI's merging ran for more than eight
minutes on it here before it was stopped.)

Output: one line per language (states, the verdict, seconds).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from monoidlab.algebra.automaton import Automaton
from monoidlab.evaluation.automaton_certificate import certify_automaton
from monoidlab.training.config import RunConfig
from monoidlab.training.distil import oracle_batches
from monoidlab.training.problems import make_problem

ROOT = Path(__file__).resolve().parents[1]
TASKS = ["parity", "even-pairs", "cycle-navigation", "modular-arithmetic", "dyck-2", "dyck-3",
         "dyck-4", "dyck-6", "dyck-8", "dyck-12", "tomita-3", "tomita-4", "tomita-5", "tomita-6",
         "tomita-7", "prefix-1-2", "prefix-1-4", "prefix-2-2", "prefix-2-4", "prefix-4-2",
         "prefix-4-4"]
DEV = [str(ROOT / "bench" / "dyck-dev" / f"dyck-{k}.toml") for k in (5, 7, 10)]
FORCED = {"prefix-4-4": {"sampler": "ec_stratified"}}  # as in the 21-task sweep (memory)


def rpni(language: str, batches: int = 256) -> str:
    from aalpy.learning_algs import run_RPNI

    cfg = RunConfig.for_language(language, "transform-tree", recipe="distilled", seed=0,
                                 **FORCED.get(language, {}))
    problem = make_problem(cfg)
    lang = problem.language
    tokens, lengths, labels = oracle_batches(cfg, problem, 0, batches)
    data = [(tuple(tokens[i, : lengths[i]].tolist()), int(labels[i]))
            for i in range(len(lengths))]
    majority = int(np.bincount(labels).argmax())  # the class of the sink and of unlabelled states
    t0 = time.perf_counter()
    machine = run_RPNI(data, "moore", input_completeness="sink_state", print_info=False)
    seconds = time.perf_counter() - t0
    states = list(machine.states)
    index = {id(s): i for i, s in enumerate(states)}
    delta = np.array([[index[id(s.transitions[a])] for a in range(lang.n_symbols)]
                      for s in states])
    output = [int(s.output) if isinstance(s.output, int) else majority for s in states]
    start = index[id(machine.initial_state)]
    learned = Automaton(alphabet=lang.alphabet, delta=delta, start=start, output=output,
                        classes=lang.classes, name=f"rpni({lang.name})")  # minimised
    # the certificate's question, on the strings the run trains and tests on (its within)
    cert = certify_automaton(delta, np.array(output), start, lang, within=problem.within)
    verdict = "correct at every length" if cert.correct else \
        f"wrong on {cert.counterexample!r}"
    where = "" if problem.within is None else " (its sub-language)"
    return (f"{lang.name:20s} {len(lengths)} strings  RPNI {learned.n_states:4d} states "
            f"(minimal {lang.n_states:4d})  {verdict}{where}  {seconds:.1f} s")


def main(argv: list[str]) -> None:
    batches = 256
    if argv[:1] == ["--batches"]:  # fewer strings: how many does RPNI need?
        batches, argv = int(argv[1]), argv[2:]
    for name in argv or [*(t for t in TASKS if t != "prefix-4-4"), *DEV]:
        print(rpni(name, batches), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
