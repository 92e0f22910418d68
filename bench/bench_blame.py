"""Where a strictly evaluated MLP-LDRU run goes wrong: its wrong (and nearly wrong) test strings,
the tree node to blame for each, and how often that node's EC occurs per tree level in training
and in the test strings.

Usage: python bench/bench_blame.py RUN_DIR [--margin 1] [--batches 400]

RUN_DIR is a run folder of `monoidlab train` / a sweep (config.json and best.pt, else
checkpoint.pt), MLP-LDRU on a language. Three parts, all on one thread:

1. Margins: every test string of the run (its test lengths, kinds and seed: the very strings of
   its results.json) is scored; the margin is the true class's logit minus the best other one.
   Strings with margin < ``--margin`` are listed (negative: wrong).
2. Blame, per listed string: every internal node of its tree is replaced in turn by the mean
   state of its EC at its tree level (over the nodes of 16 test strings per 7th length) and the
   tree above it recomputed with the model's own operator (``apply_operator``). The nodes whose
   replacement raises the margin most carry the error; a node whose replacement changes little
   computed its state from typical children.
3. EC shares per level: for the ECs of the nodes listed in 2., the share of nodes in that EC at
   each tree level, in the run's training batches (``--batches`` batches as the trainer draws
   them: its sampler, lengths and offsets) and in the test strings.

Measured on tomita-3: docs/results.md quotes the output.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

from monoidlab.coverage.compositions import node_labels
from monoidlab.probing.embeddings import node_embeddings
from monoidlab.training.loop import training_batch
from monoidlab.training.parse import config_from_dict
from monoidlab.training.trainer import load_checkpoint


def margins_of(model, problem, cfg, margin):
    """Every test string's margin; the strings below ``margin`` (tokens, L, margin, y, kind)."""
    low, n = [], 0
    for kind in problem.check_kinds(cfg.eval_kinds):
        for L in problem.lengths(cfg.test_lengths):
            b = problem.kind_batch(problem.eval_rng(cfg.seed, kind, int(L)), int(L),
                                   cfg.test_samples, kind)
            logits = model(torch.as_tensor(b["tokens"]), torch.as_tensor(b["lengths"])).float()
            y = torch.as_tensor(b["targets"])
            own = logits.gather(1, y[:, None])[:, 0]
            other = logits.scatter(1, y[:, None], -torch.inf).max(1).values
            m = (own - other).numpy()
            n += len(m)
            low += [(b["tokens"][i, :L].copy(), int(L), float(m[i]), int(y[i]), kind)
                    for i in np.flatnonzero(m < margin)]
    return low, n


def tree_states(model, tokens):
    """{(level, index): state} of one string's balanced tree; an all-padding child is skipped
    (identity padding) or is the padding state (learned padding)."""
    L = len(tokens)
    M = 1 << int(np.ceil(np.log2(L))) if L > 1 else 1
    leaves = model.embed(torch.as_tensor(tokens)[None])[0]
    states = {(0, j): leaves[j] for j in range(L)}
    pad = model.padding_state()
    if pad is not None:
        states.update({(0, j): pad for j in range(L, M)})
    k, width = 0, M if pad is not None else L
    while (1 << k) < M:
        k, width = k + 1, (width + 1) // 2
        for j in range(width):
            states[(k, j)] = _node(model, states, k, j)
    return states, k


def _node(model, states, k, j):
    a, b = states.get((k - 1, 2 * j)), states.get((k - 1, 2 * j + 1))
    return a if b is None else model.apply_operator(a[None], b[None])[0]


def blame(model, tokens, y, centroids, monoid):
    """(margin gain, level, span, EC) of every internal node, largest gain first."""
    L = len(tokens)
    states, top = tree_states(model, tokens)

    def margin(root):
        logits = model.state_logits(root[None])[0]
        return float(logits[y] - torch.cat([logits[:y], logits[y + 1:]]).max())

    base = margin(states[(top, 0)])
    lab = node_labels(monoid, tokens[None], np.array([L]))
    ec_of = {(int(s), int(e)): int(ec) for (s, e), ec in zip(lab.span, lab.node)}
    out = []
    for (k, j) in states:
        span = (j << k, min((j + 1) << k, L))
        if k == 0 or k == top or span[0] >= L or span not in ec_of:
            continue
        ec = ec_of[span]
        c = centroids.get((ec, k))
        if c is None:
            continue
        changed = dict(states)
        changed[(k, j)] = c
        kk, jj = k, j
        while kk < top:
            kk, jj = kk + 1, jj >> 1
            changed[(kk, jj)] = _node(model, changed, kk, jj)
        out.append((margin(changed[(top, 0)]) - base, k, span, ec))
    return sorted(out, key=lambda r: -r[0])


def level_shares(monoid, tokens, lengths, offsets, ecs):
    lab = node_labels(monoid, tokens, lengths, offsets=offsets)
    real = lab.span[:, 1] > lab.span[:, 0]
    lv, node = lab.level[real], lab.node[real]
    return {int(k): (int((lv == k).sum()), {e: float((node[lv == k] == e).mean()) for e in ecs})
            for k in np.unique(lv)}


def _share(shares: dict, level: int, ec: int) -> str:
    return f"{shares[level][1][ec]:.4f}"[1:] if level in shares else "-"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("run")
    p.add_argument("--margin", type=float, default=1.0)
    p.add_argument("--batches", type=int, default=400)
    p.add_argument("--top", type=int, default=3, help="blamed nodes printed per string")
    p.add_argument("--ecs", type=int, default=6, help="ECs in the share table")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    with torch.no_grad():  # inference only; the caller's grad mode is left as it was
        return _blame_run(args)


def _blame_run(args: argparse.Namespace) -> int:
    run = Path(args.run)
    cfg = config_from_dict(json.loads((run / "config.json").read_text()), str(run / "config.json"),
                           saved=True)
    if cfg.model != "mlp-ldru" or cfg.language is None:
        sys.exit(f"{run}: blame needs an mlp-ldru run on a language, not {cfg.model} / {cfg.task}")
    weights = run / "best.pt" if (run / "best.pt").is_file() else run / "checkpoint.pt"
    # the run's own model, options and language copy, as its results were measured
    model, cfg, problem, _ = load_checkpoint(run)
    lang = problem.language
    monoid = lang.monoid()
    model.eval()

    low, n = margins_of(model, problem, cfg, args.margin)
    print(f"{cfg.language}, {weights}: {n} test strings, {sum(m < 0 for _, _, m, _, _ in low)} "
          f"wrong, {len(low)} with margin < {args.margin}")

    # centroids of every (EC, level) over reference test strings
    toks, lens = [], []
    for kind in problem.check_kinds(cfg.eval_kinds):
        for L in problem.lengths(cfg.test_lengths)[::7]:
            b = problem.kind_batch(problem.eval_rng(cfg.seed + 1, kind, int(L)), int(L), 16, kind)
            toks.append(np.pad(b["tokens"][:, :L], ((0, 0), (0, cfg.test_lengths.stop - L))))
            lens.append(b["lengths"])
    ref = node_embeddings(model, lang, np.concatenate(toks), np.concatenate(lens))
    groups = ref.meta.groupby(["ec", "level"]).indices
    centroids = {(int(e), int(k)): torch.as_tensor(ref.X[i].mean(0)) for (e, k), i in
                 groups.items()}

    blamed: dict[int, int] = {}
    for tokens, L, m, y, kind in low:
        ranks = blame(model, tokens, y, centroids, monoid)
        print(f"  {kind} L={L} class {lang.classes[y]} margin {m:+.2f}; largest gains:")
        for gain, k, (s, e), ec in ranks[: args.top]:
            image = monoid.elements[ec].tolist()
            print(f"    {gain:+6.2f}  level {k} span {s}..{e} EC {ec} (states -> {image})")
        for r in ranks[: args.top]:
            blamed[r[3]] = blamed.get(r[3], 0) + 1
    if not blamed:
        return 0

    ecs = sorted(blamed, key=lambda e: -blamed[e])[: args.ecs]
    tt, tl, to = [], [], []
    train_lengths = problem.lengths(cfg.train_lengths)
    for step in range(args.batches):
        L, b = training_batch(cfg, problem, train_lengths, step)
        tt.append(np.pad(b["tokens"][:, :L], ((0, 0), (0, train_lengths.max() - L))))
        tl.append(b["lengths"])
        to.append(b.get("offsets", np.zeros_like(b["lengths"])))
    train = level_shares(monoid, np.concatenate(tt), np.concatenate(tl), np.concatenate(to), ecs)
    test = level_shares(monoid, np.concatenate(toks), np.concatenate(lens), None, ecs)
    levels = [k for k in sorted(set(train) | set(test)) if k >= 2]
    print(f"Share of the nodes of each tree level in an EC, training batches / test strings "
          f"(the {len(ecs)} ECs listed most often above; '-': no such level):")
    print("  EC (states ->)      listed  " + " ".join(f"{'level ' + str(k):>13}" for k in levels))
    for e in ecs:
        cells = [f"{_share(train, k, e)}/{_share(test, k, e)}" for k in levels]
        print(f"  {e:>2} {str(monoid.elements[e].tolist()):<17} {blamed[e]:>4}x  "
              + " ".join(f"{c:>13}" for c in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
