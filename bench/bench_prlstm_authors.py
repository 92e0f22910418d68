"""PR-LSTM against the authors' JAX code: equal logits, forward and training-step times, one run.

The authors' configuration (issue 35, item 10): H 256, ``num_layers`` 2 (the binary cell and one
unary refinement, "1R"), Delétang's input tape (parity_check: n input bits, then one empty
token; the class is read at the last position), haiku's initialisation. Both sides run on one
thread in this process: ``torch.set_num_threads(1)``, and ``XLA_FLAGS`` /
``OMP_NUM_THREADS`` set below before JAX is imported.

* **Their model**: ``thesis.model.ParallelRecursive(256, "lstm", num_layers=2)`` imported from
  the authors' repository (github tristangaudreault/pr-lstm, tag v1.0.0; pass the folder that
  holds the ``thesis`` package, or the checkout whose ``src/`` does, as ``--authors`` or
  ``MONOIDLAB_PRLSTM_AUTHORS``), under the head of their harness plugin (ReLU then
  ``hk.Linear`` at every position), ``hk.transform``-ed and ``jax.jit``-ted; the input is the
  one-hot tape, as ``make_model_with_empty_targets`` builds it. Missing JAX, haiku, optax or
  the repository: the script says so and exits 0.
* **Weights**: monoidlab's ``PRLSTM(3, 2, hidden=256, num_layers=2, init="haiku")`` copied into
  their parameter tree (haiku's ``w`` is the transpose of a torch weight; gate order
  [i; g; o; f…] is the same on both sides).
* **Logits**: every position of every string, max |ours − theirs| (float32), with
  distinct-subtree sharing on (the default) and off (``memo_limit = 0``).
* **Forward**: batch 64 (the authors' range evaluation runs sub-batches of 64), input lengths
  512 and 4096 (tapes of 513 and 4097 tokens). "every position": their apply, which returns
  logits at every position, against ``forward_all``; "read out": their apply sliced to the
  last position as the harness does (``output[:, -1:]`` inside the jitted function) against
  ``forward_all(...)[:, -1:]`` as ``TapeProblem`` reads it and against ``forward`` (the last
  position only, what a classification tape needs).
* **Training step**: batch 128, input length 40 (their training lengths are 1..40), their loss
  (softmax cross-entropy summed over the output positions, mean over the batch), gradient
  clipping to global norm 1, Adam lr 1e-3: ``optax.chain(clip_by_global_norm(1), adam(1e-3))``
  jitted against ``clip_grad_norm_`` + ``torch.optim.Adam``. Parameters after the timed steps
  are compared too.

Timing: ``time.perf_counter`` around each call (``block_until_ready`` for JAX), every variant
once per round in turn (so a change of load hits all alike), after one warm-up call each (the
JIT compilation is in the warm-up and excluded); the median of the rounds, and ratios
ours / theirs of those medians. The process runs pinned to one CPU (Linux; :func:`pin_to_one_cpu`
says why), so both sides have one core whatever threads JAX starts.

    python bench/bench_prlstm_authors.py --authors /path/to/pr-lstm      # ~10 min on one core
    python bench/bench_prlstm_authors.py --authors ... --lengths 512 --rounds 3   # ~2 min
"""

from __future__ import annotations

import os

# one thread for XLA and for OpenMP, before JAX (or torch) is imported
os.environ["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
os.environ["OMP_NUM_THREADS"] = "1"

import argparse  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
ENV = "MONOIDLAB_PRLSTM_AUTHORS"
HIDDEN, LAYERS, FWD_BATCH, TRAIN_BATCH, TRAIN_LENGTH = 256, 2, 64, 128, 40


def find_authors(path: str | None) -> Path | None:
    """The folder holding the authors' ``thesis`` package (``path`` or its ``src/``)."""
    if not path:
        return None
    for p in (Path(path), Path(path) / "src"):
        if (p / "thesis" / "model.py").is_file():
            return p
    return None


def load_jax(authors: Path):
    """(jax, jnp, hk, optax, thesis.model), or a message saying what is missing."""
    try:
        jax = importlib.import_module("jax")
        hk = importlib.import_module("haiku")
        optax = importlib.import_module("optax")
    except ImportError as e:
        return f"needs jax, dm-haiku and optax ({e}); pip install jax dm-haiku optax"
    sys.path.insert(0, str(authors))
    return jax, jax.numpy, hk, optax, importlib.import_module("thesis.model")


def their_net(hk, jax, tm, n_classes: int, last: int | None):
    """Their encoder under their harness's head; ``last``: keep the last positions only."""
    def net(x):
        h = tm.ParallelRecursive(HIDDEN, "lstm", num_layers=LAYERS)(x)
        out = hk.Linear(n_classes)(jax.nn.relu(h))
        return out if last is None else out[:, -last:]
    return hk.without_apply_rng(hk.transform(net))


def their_params(model, template: dict, jnp) -> dict:
    """Our weights in their tree (checked against the tree ``init`` gives)."""
    def w(layer):
        return {"w": jnp.asarray(layer.weight.detach().numpy().T),
                "b": jnp.asarray(layer.bias.detach().numpy())}

    params = {"parallel_recursive/~get_elems/linear": w(model.embed), "linear": w(model.head)}
    for i, layer in enumerate([model.binary, *model.refine]):
        params[f"parallel_recursive/~get_cell/nary_lstm{f'_{i}' if i else ''}/linear"] = w(layer)
    for name in template.keys() | params.keys():
        got, want = params.get(name), template.get(name)
        if got is None or want is None or any(got[k].shape != want[k].shape for k in "wb"):
            raise SystemExit(f"parameter {name!r}: theirs "
                             f"{None if want is None else {k: want[k].shape for k in want}}, "
                             f"ours {None if got is None else {k: got[k].shape for k in got}}")
    return params


def tape(task, n: int, batch: int, seed: int):
    tb = task.sample(np.random.default_rng(seed), batch=batch, length=n)
    tokens, _, out = task.tape(tb)
    return torch.from_numpy(tokens), torch.from_numpy(tb.targets.astype(np.int64)), out


CPU_TIMES: dict = {}  # median process CPU seconds per call, by variant (the last rounds_median)


def rounds_median(fns: dict, rounds: int, sync: dict) -> dict:
    """Median wall seconds per call of each function, one call each per round in turn, after
    one warm-up call each (JIT compilation happens there). The median process CPU time of the
    same calls goes to :data:`CPU_TIMES` (time the process was not scheduled is left out)."""
    for k, fn in fns.items():
        sync[k](fn())
    times: dict = {k: [] for k in fns}
    cpu: dict = {k: [] for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            t, c = time.perf_counter(), time.process_time()
            sync[k](fn())
            times[k].append(time.perf_counter() - t)
            cpu[k].append(time.process_time() - c)
    CPU_TIMES.clear()
    CPU_TIMES.update({k: statistics.median(v) for k, v in cpu.items()})
    return {k: statistics.median(v) for k, v in times.items()}


def forward_rows(ours, lengths, rounds, mods, batch: int = FWD_BATCH) -> list[dict]:
    jax, jnp, hk, optax, tm, task = mods
    V, C = task.empty_token + 1, task.n_classes
    template = their_net(hk, jax, tm, C, None).init(jax.random.PRNGKey(0), jnp.zeros((1, 4, V)))
    params = their_params(ours, template, jnp)
    every = jax.jit(their_net(hk, jax, tm, C, None).apply)
    last = jax.jit(their_net(hk, jax, tm, C, 1).apply)
    rows = []
    for n in lengths:
        tokens, _, out = tape(task, n, batch, seed=n)
        x = jax.nn.one_hot(jnp.asarray(tokens.numpy()), V)

        def ours_all(memo, tokens=tokens):
            ours.memo_limit = memo
            return ours.forward_all(tokens)

        def ours_read(memo, tokens=tokens, out=out):
            ours.memo_limit = memo
            return ours.forward_all(tokens)[:, out]

        def ours_last(memo, tokens=tokens):
            ours.memo_limit = memo
            return ours(tokens)

        with torch.inference_mode():
            theirs = np.asarray(every(params, x))
            diff = {}
            for memo, tag in ((4096, "shared"), (0, "unshared")):
                diff[f"every position, {tag}"] = float(np.abs(ours_all(memo).numpy() - theirs).max())
                diff[f"last position (forward), {tag}"] = float(
                    np.abs(ours_last(memo).numpy() - theirs[:, -1]).max())
            diff["their sliced apply vs their full apply"] = float(
                np.abs(np.asarray(last(params, x)) - theirs[:, -1:]).max())
            fns = {"theirs every": lambda x=x: every(params, x),
                   "theirs read": lambda x=x: last(params, x),
                   "forward_all": lambda: ours_all(4096),
                   "forward_all unshared": lambda: ours_all(0),
                   "read": lambda: ours_read(4096),
                   "read unshared": lambda: ours_read(0),
                   "forward": lambda: ours_last(4096),
                   "forward unshared": lambda: ours_last(0)}
            sync = {k: (lambda r: r.block_until_ready()) if k.startswith("theirs")
                    else (lambda r: r) for k in fns}
            med = rounds_median(fns, rounds if n <= 1024 else max(1, rounds // 2), sync)
        ours.memo_limit = 4096
        row = {"length": n, "tape": n + 1, "batch": batch, "max_abs_diff": diff,
               "ms": {k: 1e3 * v for k, v in med.items()},
               "cpu_ms": {k: 1e3 * v for k, v in CPU_TIMES.items()}}
        rows.append(row)
        print(f"  n={n}: " + ", ".join(f"{k} {v:.0f} ms" for k, v in row["ms"].items())
              + f"; max |diff| {max(diff.values()):.2g}", file=sys.stderr, flush=True)
    return rows


def train_row(ours, rounds, mods) -> dict:
    """Training steps of both on the same batch from the same weights."""
    jax, jnp, hk, optax, tm, task = mods
    V, C = task.empty_token + 1, task.n_classes
    tokens, targets, out = tape(task, TRAIN_LENGTH, TRAIN_BATCH, seed=1)
    net = their_net(hk, jax, tm, C, targets.shape[1])
    template = net.init(jax.random.PRNGKey(0), jnp.zeros((1, 4, V)))
    params = their_params(ours, template, jnp)
    x = jax.nn.one_hot(jnp.asarray(tokens.numpy()), V)
    y = jax.nn.one_hot(jnp.asarray(targets.numpy()), C)
    opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-3))

    def loss_fn(p):
        logp = jax.nn.log_softmax(net.apply(p, x))
        return jnp.mean(jnp.sum(-jnp.sum(y * logp, axis=-1), axis=-1))

    @jax.jit
    def update(p, s):
        loss, g = jax.value_and_grad(loss_fn)(p)
        upd, s = opt.update(g, s, p)
        return optax.apply_updates(p, upd), s, loss

    state = {"p": params, "s": opt.init(params)}

    def theirs():
        state["p"], state["s"], loss = update(state["p"], state["s"])
        return loss

    torch_opt = torch.optim.Adam(ours.parameters(), lr=1e-3)
    ours.train()

    def mine():
        logits = ours.forward_all(tokens)[:, out]
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, C), targets.reshape(-1),
                                                 reduction="sum") / tokens.shape[0]
        torch_opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(ours.parameters(), 1.0)
        torch_opt.step()
        return loss

    steps = 3 * rounds
    med = rounds_median({"theirs": theirs, "ours": mine}, steps,
                        {"theirs": lambda r: r.block_until_ready(), "ours": lambda r: r})
    ours.eval()
    mine_now = their_params(ours, template, jnp)  # both took 1 + steps steps from equal weights
    diff = max(float(np.abs(np.asarray(a) - np.asarray(b)).max()) for a, b in
               zip(jax.tree.leaves(mine_now), jax.tree.leaves(state["p"])))
    print(f"  train: theirs {1e3 * med['theirs']:.1f} ms, ours {1e3 * med['ours']:.1f} ms; "
          f"parameters after {1 + steps} steps differ by {diff:.2g}", file=sys.stderr, flush=True)
    return {"batch": TRAIN_BATCH, "length": TRAIN_LENGTH, "steps": 1 + steps,
            "ms": {k: 1e3 * v for k, v in med.items()}, "ratio": med["ours"] / med["theirs"],
            "cpu_ratio": CPU_TIMES["ours"] / CPU_TIMES["theirs"],
            "param_max_abs_diff": diff}


def markdown(info: str, rows: list[dict], train: dict | None) -> str:
    batch = rows[0]["batch"] if rows else FWD_BATCH
    out = [f"{info}. H {HIDDEN}, num_layers {LAYERS}, parity_check tape (n bits + 1 empty "
           f"token), haiku init, fp32, batch {batch}; median of the rounds after warm-up "
           "(JIT compilation excluded); ratio = ours / theirs in the same run.", "",
           "| input length (tape) | theirs, every position (ms) | forward_all (ms) | "
           "unshared | ratio | ratio unshared | theirs, read out (ms) | forward_all[:, -1:] "
           "| forward | forward unshared | ratio forward | ratio forward unshared | "
           "max abs diff |",
           "|---:|" + "---:|" * 12]
    for r in rows:
        ms = r["ms"]

        def q(a, b, ms=ms):
            return f"{ms[a] / ms[b]:.2f}"

        out.append(
            f"| {r['length']} ({r['tape']}) | {ms['theirs every']:.0f} | {ms['forward_all']:.0f}"
            f" | {ms['forward_all unshared']:.0f} | {q('forward_all', 'theirs every')} | "
            f"{q('forward_all unshared', 'theirs every')} | {ms['theirs read']:.0f} | "
            f"{ms['read']:.0f} | {ms['forward']:.0f} | {ms['forward unshared']:.0f} | "
            f"{q('forward', 'theirs read')} | {q('forward unshared', 'theirs read')} | "
            f"{max(r['max_abs_diff'].values()):.2g} |")
    out += ["", "The same ratios by process CPU time (the calls' own CPU seconds, medians):", "",
            "| input length | forward_all | unshared | forward | forward unshared |",
            "|---:|---:|---:|---:|---:|"]
    for r in rows:
        c = r["cpu_ms"]
        out.append(f"| {r['length']} | {c['forward_all'] / c['theirs every']:.2f} | "
                   f"{c['forward_all unshared'] / c['theirs every']:.2f} | "
                   f"{c['forward'] / c['theirs read']:.2f} | "
                   f"{c['forward unshared'] / c['theirs read']:.2f} |")
    if train:
        out += ["", f"Training step (batch {train['batch']}, input length {train['length']}, "
                "clip 1, Adam 1e-3): theirs "
                f"{train['ms']['theirs']:.1f} ms, ours {train['ms']['ours']:.1f} ms, ratio "
                f"{train['ratio']:.2f} (by CPU time {train['cpu_ratio']:.2f}); parameters after {train['steps']} steps from equal "
                f"weights differ by at most {train['param_max_abs_diff']:.2g}."]
    return "\n".join(out) + "\n"


def pin_to_one_cpu() -> int | None:
    """Put this process on one CPU (Linux), before JAX starts its threads; returns the CPU.

    jax 0.10's CPU runtime runs work on a thread pool of its own that the XLA flags above do
    not reach: measured 2026-12-03, the authors' L 512 forward took 666 ms of wall time and
    about 1.8 times that in CPU time on two cores, and 1120 ms pinned to one. Unpinned, their
    wall time would count two cores against our one."""
    if not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2:
        return None
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    return cpu


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--authors", default=os.environ.get(ENV),
                    help=f"the authors' checkout (or its src/); default ${ENV}")
    ap.add_argument("--lengths", default="512,4096", help="input lengths (the tape adds one)")
    ap.add_argument("--rounds", type=int, default=5, help="timing rounds (half above 1024)")
    ap.add_argument("--batch", type=int, default=FWD_BATCH, help="forward batch (default 64)")
    ap.add_argument("--no-train", action="store_true")
    ap.add_argument("--out", default=str(REPO / "docs" / "figures"))
    args = ap.parse_args(argv)
    authors = find_authors(args.authors)
    if authors is None:
        print(f"skipped: the authors' code was not found (--authors or ${ENV}: a checkout of "
              "github tristangaudreault/pr-lstm v1.0.0, or its src/ folder)")
        return 0
    pinned = pin_to_one_cpu()
    mods = load_jax(authors)
    if isinstance(mods, str):
        print(f"skipped: {mods}")
        return 0
    torch.set_num_threads(1)
    from monoidlab.models.pr_lstm import PRLSTM
    from monoidlab.tasks import get_task

    task = get_task("parity_check")
    torch.manual_seed(0)
    ours = PRLSTM(task.empty_token + 1, task.n_classes, hidden=HIDDEN, num_layers=LAYERS,
                  init="haiku").eval()
    jax = mods[0]
    cpu = f", the process pinned to CPU {pinned}" if pinned is not None else ""
    info = (f"torch {torch.__version__} (1 thread), jax {jax.__version__} "
            f"({jax.devices()[0].platform}, XLA one thread{cpu})")
    print(f"# {info}", file=sys.stderr, flush=True)
    t0 = time.time()
    lengths = [int(x) for x in args.lengths.split(",")]
    rows = forward_rows(ours, lengths, args.rounds, (*mods, task), args.batch)
    train = None if args.no_train else train_row(ours, args.rounds, (*mods, task))
    md = markdown(info, rows, train)
    print(md)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from monoidlab._util import atomic_write_text

    atomic_write_text(out / "prlstm-authors-cpu.json", json.dumps(
        {"info": info, "forward": rows, "train": train, "markdown": md,
         "seconds": round(time.time() - t0, 1)}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
