"""Does a strictly solved MLP-LDRU compute the monoid, or only its balanced bracketing?

Usage: python bench/bench_bracketing.py RUN_DIR_OR_SWEEP_DIR... [--lengths 41:500:51] [--samples 64]
       [--buffer 512] [--seed 0] [--write-docs]

With ``padding = "identity"`` a node with one empty side passes the other side's state up
unchanged, so placing a string's symbols at increasing positions of a longer buffer (identity
everywhere else) computes *the same string* under another bracketing: the one the balanced
tree of the buffer induces. A model whose node states represent the monoid's elements gives
the same answer under every bracketing (the product is associative); a model that learned a
function of the balanced bracketing alone need not. This is the associativity probe
(docs/probing.md) asked at the level of whole strings, on fresh strings of the test's
distribution (the test's kinds and lengths, another seed).

For each run (an mlp-ldru run on a language with identity padding), for each test kind and
every length of ``--lengths``, ``--samples`` strings of the test's distribution are scored:

- *balanced*: the model's own forward (offset 0, the strict test's bracketing);
- *random*: the symbols at uniformly random increasing positions of a ``--buffer`` buffer
  (a fresh bracketing per string); the tree is recomputed with the model's public
  ``embed`` / ``apply_operator`` / ``state_logits``. Its contiguous placement reproduces the
  forward (checked on every batch, to 1e-4).

Printed per run: the minimum and mean accuracy over lengths of each, beside what a
majority-class and a count-only model get on the same strings. A folder holding run folders
(a sweep's ``out``) stands for its ``*__mlp-ldru__*`` runs. Inference only, one thread.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from monoidlab._util import inference
from monoidlab.errors import InputError, MonoidlabError
from monoidlab.evaluation import count_baseline, majority_baseline
from monoidlab.geometry import length_array
from monoidlab.training.parse import config_from_dict
from monoidlab.training.trainer import load_checkpoint

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results.md"


def random_positions(rng: np.random.Generator, n: int, length: int, buffer: int) -> np.ndarray:
    """(n, length) increasing positions in 0..buffer-1, uniformly over all such choices.

    >>> random_positions(np.random.default_rng(0), 2, 3, 8).shape
    (2, 3)
    """
    if buffer < length:
        raise ValueError(f"--buffer {buffer} < string length {length}")
    return np.sort(rng.random((n, buffer)).argsort(axis=1)[:, :length], axis=1)


def logits_at_positions(model, tokens: torch.Tensor, positions: np.ndarray,
                        buffer: int) -> torch.Tensor:
    """Logits of strings (n, L) whose symbols sit at ``positions`` of a ``buffer`` buffer of
    identity padding; the balanced tree of the buffer, one level at a time over the batch.

    A node with both children real applies the model's operator, one with a single real child
    passes it up, one with none stays empty.
    """
    n, L = tokens.shape
    leaves = model.embed(tokens)  # (n, L, d)
    width = 1 << max(0, int(np.ceil(np.log2(buffer))))
    states = leaves.new_zeros((n, width, leaves.shape[-1]))
    real = torch.zeros((n, width), dtype=torch.bool)
    rows = torch.arange(n)[:, None]
    pos = torch.as_tensor(positions)
    states[rows, pos] = leaves
    real[rows, pos] = True
    while states.shape[1] > 1:
        a, b = states[:, 0::2], states[:, 1::2]
        ra, rb = real[:, 0::2], real[:, 1::2]
        out = torch.where(ra[..., None], a, b)  # one real side (or none): pass it up
        both = ra & rb
        if both.any():
            out[both] = model.apply_operator(a[both], b[both])
        states, real = out, ra | rb
    return model.state_logits(states[:, 0])


def measure(run: Path, lengths: np.ndarray, samples: int, buffer: int, seed: int = 0) -> dict:
    """{kind: (balanced accuracies, random accuracies, (n, 2) majority / count-only
    accuracies)} over ``lengths`` (the lengths with strings of that kind)."""
    cfg = config_from_dict(json.loads((run / "config.json").read_text()), str(run / "config.json"),
                           saved=True)
    if cfg.model != "mlp-ldru" or cfg.language is None:
        raise SystemExit(f"{run}: needs an mlp-ldru run on a language, not {cfg.model}")
    if cfg.padding != "identity":
        raise SystemExit(f"{run}: needs model_options.padding = 'identity' (with a learned "
                         "padding another placement is another string)")
    try:  # the weights the run's results were measured on, checked as checkpoints are
        model, cfg, problem, _ = load_checkpoint(run)
    except MonoidlabError as e:
        raise SystemExit(f"{run}: {e}") from None
    model.eval()
    lengths = problem.lengths(lengths)
    rng = np.random.default_rng(seed)
    out = {}
    for kind in problem.check_kinds(cfg.eval_kinds):
        bal, rnd, maj = [], [], []
        for L in lengths:
            # the test's own distribution, with fresh strings (seed + 1: not the test's)
            b = problem.kind_batch(problem.eval_rng(cfg.seed + 1, kind, int(L)), int(L),
                                   samples, kind)
            if not len(b["targets"]):  # no string of this kind at this length (odd Dyck)
                continue
            t = torch.as_tensor(b["tokens"][:, :L])
            y = torch.as_tensor(b["targets"])
            f0 = model(t, torch.as_tensor(b["lengths"]))
            same = logits_at_positions(model, t, np.tile(np.arange(L), (len(t), 1)), int(L))
            if not torch.allclose(same, f0, atol=1e-4):
                raise SystemExit(f"{run}: the recomputed tree differs from the forward at "
                                 f"L={L} by {float((same - f0).abs().max()):.2e}")
            fr = logits_at_positions(model, t, random_positions(rng, len(t), int(L), buffer),
                                     buffer)
            bal.append(float((f0.argmax(1) == y).float().mean()))
            rnd.append(float((fr.argmax(1) == y).float().mean()))
            maj.append((majority_baseline(b["targets"]),
                        count_baseline(b["tokens"][:, :L], b["lengths"], b["targets"],
                                       problem.vocab_size)))
        if bal:  # a kind the language has no strings of (prefix-4-4's near_miss) is left out
            out[kind] = (np.array(bal), np.array(rnd), np.array(maj))
    return out


def table(rows: list[tuple[str, dict]]) -> str:
    head = ("| run | kind | balanced bracketing: min / mean | random bracketings: min / mean "
            "| majority / count-only (mean) |\n|---|---|---|---|---|\n")
    lines = []
    for name, res in rows:
        for kind, (bal, rnd, maj) in res.items():
            lines.append(f"| {name} | {kind} | {bal.min():.3f} / {bal.mean():.3f} | "
                         f"{rnd.min():.3f} / {rnd.mean():.3f} | {maj[:, 0].mean():.3f} / "
                         f"{maj[:, 1].mean():.3f} |")
    return head + "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("runs", nargs="+")
    p.add_argument("--lengths", default="41:500:51", help="lengths a:b:step (inclusive)")
    p.add_argument("--samples", type=int, default=64)
    p.add_argument("--buffer", type=int, default=512)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--write-docs", action="store_true",
                   help="put the table in docs/results.md (section 'ldru21 bracketing')")
    args = p.parse_args(argv)
    with inference():  # one thread, no gradients; the caller's settings come back (tests call main)
        return _main(args)


def _main(args) -> int:
    t0 = time.perf_counter()
    try:
        lengths = length_array(args.lengths, "--lengths")
    except InputError as e:
        sys.exit(str(e))
    if lengths.max() > args.buffer:
        sys.exit(f"--lengths reach {lengths.max()} > --buffer {args.buffer}")
    runs = []
    for run in map(Path, args.runs):
        runs += [run] if (run / "config.json").is_file() else sorted(run.glob("*__mlp-ldru__*"))
    if not runs:
        sys.exit(f"no run folder (config.json) in {' '.join(args.runs)}")
    rows = []
    for run in runs:
        rows.append((run.name.split("__")[0], measure(run, lengths, args.samples, args.buffer,
                                                      args.seed)))
        lines = table(rows[-1:]).splitlines()
        print("\n".join(lines if len(rows) == 1 else lines[2:]), flush=True)
    foot = (f"Lengths {args.lengths} ({len(lengths)} lengths), {args.samples} fresh strings per "
            f"length and kind (the test's distribution, not its strings), random placements in "
            f"a buffer of {args.buffer}, seed {args.seed}; {time.perf_counter() - t0:.0f} s on one "
            f"thread.")
    print(foot)
    if args.write_docs:
        from monoidlab._util import write_section

        text = ("### The same strings under random bracketings\n\n"
                "`python bench/bench_bracketing.py " + " ".join(args.runs) + " --write-docs`\n\n"
                + table(rows) + "\n" + foot)
        write_section(RESULTS, "ldru21 bracketing", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
