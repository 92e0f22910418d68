"""The development runs behind the recipe 'distilled' (bench/dyck-dev/distil-dev.md).

Trains the transformation tree's soft relaxation for one attempt on a development language,
then runs L* with the soft machine as membership oracle and, as equivalence oracle, the
labelled training-distribution strings on which the soft machine is right; prints one JSON line
(the lines of distil-dev-runs.jsonl).

    SF=2 STEPS=12000 python bench/dyck-dev/distil_prototype.py bench/dyck-dev/dyck-7.toml 1 0 0 OUT

Arguments: language, seed, final temperature (0: no annealing), anneal steps, run folder.
``--reextract`` as a sixth argument skips training and extracts from OUT's checkpoint.
(The first grid's runs, before rule 1's oracle restriction, put every oracle string to L*.)
"""

import json
import os
import sys
import time

import numpy as np
import torch

from monoidlab.probing import _lstar
from monoidlab.probing.extract_automaton import Membership, compare_automata
from monoidlab.training.config import RunConfig
from monoidlab.training.distil import _Teacher as Teacher  # the soft relaxation as a classifier
from monoidlab.training.loop import build_for, training_batch
from monoidlab.training.problems import make_problem
from monoidlab.training.trainer import train


def main() -> None:
    lang_path, seed, tau_end, anneal, out = sys.argv[1:6]
    seed, tau_end, anneal = int(seed), float(tau_end), int(anneal)
    options = {"relaxation": "soft", "temperature": 1.0,
               "state_factor": int(os.environ.get("SF", "2"))}
    if tau_end > 0:
        options.update(final_temperature=tau_end, anneal_steps=anneal)
    cfg = RunConfig.for_language(lang_path, "transform-tree", seed=seed, restarts=0,
                                 model_options=options, test_lengths="41:500:20",
                                 test_samples=16, threads=1, device="cpu", early_stop=0,
                                 eval_every=0, steps=int(os.environ.get("STEPS", "4000")))
    t0 = time.time()
    if sys.argv[6:] != ["--reextract"]:
        train(cfg, out, overwrite=True, evaluate_at_end=False, progress=False)
    train_s = time.time() - t0
    problem = make_problem(cfg)
    model = build_for(cfg, problem)
    model.load_state_dict(torch.load(out + "/checkpoint.pt", weights_only=False)["model"])
    model.eval()
    lang = problem.language
    toks, lens = [], []
    for step in range(256):  # steps past the training's: batches it never saw
        _, b = training_batch(cfg, problem, problem.lengths(cfg.train_lengths), 10**6 + step,
                              curriculum=False)
        toks.append(np.asarray(b["tokens"]))
        lens.append(np.asarray(b["lengths"]))
    T = max(t.shape[1] for t in toks)
    tokens = np.concatenate([np.pad(t, ((0, 0), (0, T - t.shape[1]))) for t in toks])
    lengths = np.concatenate(lens)
    labels = lang.classify(tokens, lengths)
    member = Membership(Teacher(model), lang)
    answers = member.classify(tokens, lengths)
    ok = answers == labels
    t1 = time.time()
    hyp, status, rounds, _ = _lstar.learn(member, lang, tokens[ok], lengths[ok], answers[ok],
                                          max_states=model.n_states, max_queries=200000,
                                          max_rounds=50)
    extracted = _lstar.hypothesis_automaton(hyp, lang)
    c = compare_automata(extracted, lang)
    print(json.dumps(dict(
        lang=lang_path.split("/")[-1], sf=options["state_factor"], teacher=float(ok.mean()),
        seed=seed, tau_end=tau_end, train_s=round(train_s, 1),
        lstar_s=round(time.time() - t1, 1), status=status, rounds=rounds,
        states=extracted.n_states, n=model.n_states, iso=c.isomorphic, diff=c.string,
        ex_acc=float((extracted.classify(tokens, lengths) == labels).mean()),
        argmax_cex=str(model.learned_automaton().counterexample(lang)))))


if __name__ == "__main__":
    main()
