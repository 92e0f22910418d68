"""Speed of Gated DeltaNet beside nn.LSTM and PR-LSTM: forward and training step at lengths 512
and 4096, one thread, same run.

Rows (each model at its documented default size, docs/models.md):

* ``gated-deltanet``: the registry model (d_model 64, 2 layers, 4 heads, short convolution 4,
  SwiGLU MLP x4), the chunked form (chunks of 64);
* ``gated-deltanet (recurrent)``: the same weights through the loop over positions (the
  reference form), to show what the chunked form buys; at lengths up to ``--recurrent-max``
  (512: its 4096-long training step builds a graph of ~10^5 nodes and takes minutes);
* ``nn.LSTM``: ``nn.Embedding(V, 256)`` then one ``nn.LSTM(256, 256)``, the last state, a linear
  head (bench_speed.py's peer);
* ``pr-lstm``: H 256, the paper's "1R" (the registry model).

Forward: eval mode, ``torch.no_grad()``, logits at the last position. Training step: train
mode, forward, cross-entropy on the last position, backward, clip 1.0, an Adam step. Parity
inputs (V = 2), batch ``--batch`` (16: PR-LSTM's 4096-long training step at batch 64 would
take most of the run). Timing: one warm-up call, then the best of ``--rounds`` calls (3; one
above length 1024, as bench_speed.py), every variant timed once per round in turn
(bench_speed.round_robin), so that a change of the shared machine's load hits all of them
alike; ratios are against ``nn.LSTM`` of the same run.

    python bench/bench_gdn.py                    # minutes on one CPU core (more if loaded)
    python bench/bench_gdn.py --lengths 512      # the short length only
    python bench/bench_gdn.py --json out.json    # also the numbers as JSON
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from bench_speed import BareLSTM, device_info, round_robin  # the script's own folder is on the path

from monoidlab.models import build_model


class LSTMPeer(torch.nn.Module):
    """bench_speed's bare nn.LSTM plus a linear head, so that it can take a training step."""

    def __init__(self, vocab: int, hidden: int = 256, n_classes: int = 2) -> None:
        super().__init__()
        self.core, self.head = BareLSTM(vocab, hidden), torch.nn.Linear(hidden, n_classes)

    def forward(self, tokens, lengths=None):
        return self.head(self.core(tokens))


def models(with_recurrent: bool) -> dict[str, torch.nn.Module]:
    """The rows, built from seed 0."""
    torch.manual_seed(0)
    gdn = build_model("gated-deltanet", 2, 2)
    out = {"gated-deltanet": gdn}
    if with_recurrent:
        looped = build_model("gated-deltanet", 2, 2, kernel="recurrent")
        looped.load_state_dict(gdn.state_dict())
        out["gated-deltanet (recurrent)"] = looped
    out["nn.LSTM"] = LSTMPeer(2)
    out["pr-lstm"] = build_model("pr-lstm", 2, 2, hidden=256)
    return out


def forward_fn(model, tokens, lengths):
    def call():
        model.eval()
        with torch.no_grad():
            model(tokens, lengths)
    return call


def step_fn(model, tokens, lengths, labels):
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def call():
        model.train()
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(tokens, lengths), labels).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    return call


def run(lengths: list[int], batch: int, rounds: int, recurrent_max: int) -> list[dict]:
    """One row per model and length: forward and training-step milliseconds, ratios."""
    rows = []
    device = torch.device("cpu")
    for T in lengths:
        gen = torch.Generator().manual_seed(T)
        tokens = torch.randint(0, 2, (batch, T), generator=gen)
        n = torch.full((batch,), T)
        labels = tokens.sum(1) % 2  # parity
        ms = models(T <= recurrent_max)
        r = rounds if T <= 1024 else 1
        fwd = round_robin({k: forward_fn(m, tokens, n) for k, m in ms.items()}, r, device)
        step = round_robin({k: step_fn(m, tokens, n, labels) for k, m in ms.items()}, r,
                           device)
        for k in ms:
            rows.append({"model": k, "length": T, "batch": batch,
                         "forward_ms": 1000 * fwd[k], "step_ms": 1000 * step[k],
                         "forward_vs_lstm": fwd[k] / fwd["nn.LSTM"],
                         "step_vs_lstm": step[k] / step["nn.LSTM"]})
        print(f"# length {T} done", file=sys.stderr, flush=True)
    return rows


def markdown(info: str, rows: list[dict]) -> str:
    lines = [f"{info}; batch {rows[0]['batch']}; best of the rounds; ratio = time / nn.LSTM's "
             "time in the same run", "",
             "| model | L | forward ms | forward / LSTM | training step ms | step / LSTM |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['length']} | {r['forward_ms']:.1f} | "
                     f"{r['forward_vs_lstm']:.2f} | {r['step_ms']:.1f} | {r['step_vs_lstm']:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lengths", type=int, nargs="+", default=[512, 4096])
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--recurrent-max", type=int, default=512,
                    help="time the recurrent form of Gated DeltaNet up to this length")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    rows = run(args.lengths, args.batch, args.rounds, args.recurrent_max)
    info = device_info(torch.device("cpu"))
    print(markdown(info, rows))
    if args.json:
        args.json.write_text(json.dumps({"device": info, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
