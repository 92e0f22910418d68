"""Speed of the tree models: the ratio table of issues 14/17, inference scaling, training speed.

0. Ratios (one run, one thread, same-run ratios, every variant timed in turn in each round):
   forward of PR-LSTM (H 256, "1R") and MLP-LDRU (d 64, the paper's sizes) against a bare
   ``nn.LSTM`` with embedding input (``nn.Embedding(V, 256)`` then ``nn.LSTM(256, 256)``, the
   last state) and against the previous implementations (tests/references.py), batch 64,
   lengths 512, 513 (just above a power of two) and 4096, parity inputs (V = 2), eval mode,
   no_grad; "shared" = distinct subtrees computed once (the default), "unshared" =
   ``memo_limit = 0`` (what a large alphabet gets). PR-LSTM's every-prefix ``forward_all``
   too. The same PR-LSTM size at the authors' settings (num_layers 2, haiku init, the
   parity_check tape of L bits + the empty token, issue 35): ``forward_all`` and ``forward``,
   shared and unshared, against the previous ``forward_all`` (their JAX code:
   bench/bench_prlstm_authors.py). Training steps (forward, backward, clip, optimiser) at
   length 40 against the previous step. Labelling: ``element_of`` against automata-lib's ``DFA.accepts_input`` per symbol.
1. Forward time and peak memory against length: MLP-LDRU, PR-LSTM, LSTM (torch ``nn.LSTM``)
   and the Transformer encoder at equal hidden size (64), batch 64, parity inputs, lengths
   1, 4, 16, ..., 4096. A model is not run at longer lengths once one call takes more than
   500 ms (the paper's cut-off). The paper used batch 1024 and lengths 1..2495; we use
   batch 64 and powers of 4.
2. Training steps per second at length 40, batch 256 (forward, backward, clip, Adam step: the
   trainer's own problem, loss and optimiser).

Timing: ``time.perf_counter`` around each call (``torch.cuda.synchronize`` on CUDA), in
``torch.no_grad()`` and eval mode, after warm-up calls; mean (and min) over repeated calls
(at least 3, more while under ~1 s per point). Peak memory: on CUDA
``torch.cuda.max_memory_allocated`` minus the memory allocated before the call; on CPU
``torch.profiler`` with ``profile_memory=True``: the running sum, in time order, of every
operator's own allocations and of the allocator's free events, whose maximum is the peak of
the tensors created by the call (activations; weights and inputs excluded), at operator
granularity (scratch memory allocated and freed inside one kernel is not seen).
``tracemalloc`` does not see torch's allocator and RSS is blurred by the C allocator's
caching, hence the profiler.

The device is chosen automatically (CUDA when present) and recorded; CPU runs use one
thread unless ``--threads`` says otherwise (the cores are shared: MACHINE.md). Output: a
markdown table on stdout, ``<out>/speed-<device>.json`` and ``<out>/speed-<device>.png``.

    python -m bench.bench_speed                       # about 10 minutes on one CPU core
    python -m bench.bench_speed --sections ratios     # the ratio table only (about 5 minutes)
    python -m bench.bench_speed --quick               # lengths up to 256, fewer repeats
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch

from monoidlab._util import atomic_write_text

MODELS = {  # equal hidden size 64; everything else at each model's default (docs/models.md)
    "mlp-ldru": {"d": 64},
    "pr-lstm": {"hidden": 64},
    "lstm": {"hidden": 64},
    "transformer": {"d_model": 64},  # Delétang: 5 layers, 8 heads, FFN x4
}
TRAIN_MODELS = {**MODELS, "rnn": {"hidden": 64}, "pr-rnn": {"hidden": 64}}
LENGTHS = [1, 4, 16, 64, 256, 1024, 4096]
CUTOFF_S = 0.5


REPO = Path(__file__).resolve().parent.parent


class BareLSTM(torch.nn.Module):
    """The peer of the ratio table: embedding input, one nn.LSTM layer, the last state."""

    def __init__(self, vocab: int, hidden: int):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, hidden)
        self.core = torch.nn.LSTM(hidden, hidden, batch_first=True)

    def forward(self, tokens, lengths=None):
        return self.core(self.embed(tokens))[0][:, -1]


def round_robin(fns: dict, rounds: int, device) -> dict:
    """Best seconds per call of each function, timing each once per round in turn (so that a
    change of load hits every variant alike); one warm-up call each first."""
    for fn in fns.values():
        fn()
    best = {k: float("inf") for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            sync(device)
            t = time.perf_counter()
            fn()
            sync(device)
            best[k] = min(best[k], time.perf_counter() - t)
    return best


def ratio_table(device, batch: int, lengths: list[int], rounds: int, quick: bool) -> dict:
    """The speed table: forward times, same-run ratios; training steps; labelling."""
    try:  # the previous implementations live with the tests: run from the repository root
        from tests.references import old_mlp_ldru_forward, old_scan_forward, old_scan_forward_all
    except ModuleNotFoundError:
        raise SystemExit("run it from the repository root: python -m bench.bench_speed") from None

    from monoidlab.models.mlp_ldru import MLPLDRU
    from monoidlab.models.pr_lstm import PRLSTM

    torch.manual_seed(0)
    pr = PRLSTM(2, 2, hidden=256).to(device).eval()
    ldru = MLPLDRU(2, 2, d=64).to(device).eval()
    lstm = BareLSTM(2, 256).to(device).eval()

    def shared(model, limit):
        def call(t, n):
            model.memo_limit = limit
            return model(t, n)
        return call

    def shared_all(model, t, n, limit):
        model.memo_limit = limit
        return model.forward_all(t, n)

    rows = []
    for L in lengths:
        g = torch.Generator().manual_seed(L)
        tokens = torch.randint(0, 2, (batch, L), generator=g).to(device)
        n = torch.full((batch,), L, dtype=torch.long)
        variants = {
            "lstm": lambda t=tokens: lstm(t),
            "pr-lstm": lambda t=tokens, n=n: shared(pr, 4096)(t, n),
            "pr-lstm unshared": lambda t=tokens, n=n: shared(pr, 0)(t, n),
            "pr-lstm previous": lambda t=tokens, n=n: old_scan_forward(pr, t, n),
            "pr-lstm forward_all": lambda t=tokens, n=n: shared_all(pr, t, n, 4096),
            "pr-lstm forward_all unshared": lambda t=tokens, n=n: shared_all(pr, t, n, 0),
            "pr-lstm forward_all previous": lambda t=tokens, n=n: old_scan_forward_all(pr, t, n),
            "mlp-ldru": lambda t=tokens, n=n: shared(ldru, 4096)(t, n),
            "mlp-ldru unshared": lambda t=tokens, n=n: shared(ldru, 0)(t, n),
            "mlp-ldru previous": lambda t=tokens, n=n: old_mlp_ldru_forward(ldru, t, n),
        }
        with torch.no_grad():
            # equal outputs first (the table compares equal functions)
            for a, b in [("pr-lstm", "pr-lstm previous"), ("pr-lstm unshared", "pr-lstm"),
                         ("mlp-ldru", "mlp-ldru previous"), ("mlp-ldru unshared", "mlp-ldru")]:
                err = float((variants[a]() - variants[b]()).abs().max())
                assert err < 1e-5, (L, a, b, err)
            best = round_robin(variants, 1 if L > 1024 else rounds, device)
        row = {"length": L, **{k: 1e3 * v for k, v in best.items()}}
        rows.append(row)
        print(f"  L={L}: " + ", ".join(f"{k} {v:.0f} ms" for k, v in row.items()
                                       if k != "length"), file=sys.stderr, flush=True)
    tape = tape_rows(device, batch, lengths, rounds, old_scan_forward_all)
    train = train_step_ratios(device, rounds, old_mlp_ldru_forward, old_scan_forward)
    label = labelling_ratios(2_000 if quick else 20_000)
    return {"forward": rows, "tape": tape, "train": train, "labelling": label}


def tape_rows(device, batch: int, lengths: list[int], rounds: int, old_all) -> list[dict]:
    """PR-LSTM at the authors' settings (issue 35): H 256, num_layers 2, haiku init, on
    Delétang's parity_check tape (L bits, then the empty token; V = 3), every position
    (``forward_all``, what the tape problem reads) and the last position (``forward``), shared
    and unshared, against the previous implementation. The authors' JAX code itself:
    bench/bench_prlstm_authors.py."""
    from monoidlab.models.pr_lstm import PRLSTM
    from monoidlab.tasks import get_task

    task = get_task("parity_check")
    torch.manual_seed(0)
    pr = PRLSTM(task.empty_token + 1, task.n_classes, hidden=256, num_layers=2,
                init="haiku").to(device).eval()

    def run(method, limit, t):
        pr.memo_limit = limit
        return method(t)

    rows = []
    for L in lengths:
        tb = task.sample(np.random.default_rng(L), batch=batch, length=L)
        tokens = torch.from_numpy(task.tape(tb)[0]).to(device)
        variants = {
            "forward_all": lambda t=tokens: run(pr.forward_all, 4096, t),
            "forward_all unshared": lambda t=tokens: run(pr.forward_all, 0, t),
            "forward_all previous": lambda t=tokens: old_all(pr, t),
            "forward": lambda t=tokens: run(pr, 4096, t),
            "forward unshared": lambda t=tokens: run(pr, 0, t),
        }
        with torch.no_grad():
            ref = variants["forward_all previous"]()
            for k in ("forward_all", "forward_all unshared"):
                err = float((variants[k]() - ref).abs().max())
                assert err < 1e-5, (L, k, err)
            best = round_robin(variants, 1 if L > 1024 else rounds, device)
        pr.memo_limit = 4096
        rows.append({"length": L, "tape": L + 1, **{k: 1e3 * v for k, v in best.items()}})
        print(f"  tape L={L}: " + ", ".join(f"{k} {1e3 * v:.0f} ms" for k, v in best.items()),
              file=sys.stderr, flush=True)
    return rows


def labelling_only(quick: bool) -> str:
    rows = labelling_ratios(2_000 if quick else 20_000)
    return ratio_markdown("labelling only", {"forward": [], "tape": [], "train": [],
                                             "labelling": rows}, 0)


def train_step_ratios(device, rounds: int, old_ldru, old_scan) -> list[dict]:
    """One training step at length 40 (forward, cross-entropy, backward, clip 1, optimiser)
    of the new and the previous implementation, same weights, same batch, same seed."""
    from monoidlab.models.mlp_ldru import MLPLDRU
    from monoidlab.models.pr_lstm import PRLSTM
    from monoidlab.training.optim import AMSGradOptax

    out = []
    for name, model, B, old, opt_cls in [
        ("mlp-ldru (d 64, dropout 0.25, batch 256, amsgrad-optax)",
         MLPLDRU(2, 2, d=64), 256, old_ldru, AMSGradOptax),
        ("pr-lstm (H 256, batch 128, adam)", PRLSTM(2, 2, hidden=256), 128, old_scan,
         torch.optim.Adam),
    ]:
        torch.manual_seed(0)
        model = model.to(device).train()
        best = _time_steps(model, opt_cls(model.parameters(), lr=1e-3), B, old, device,
                           3 * rounds)
        out.append({"model": name, "new_ms": 1e3 * best["new"],
                    "previous_ms": 1e3 * best["previous"],
                    "ratio": best["new"] / best["previous"]})
        print(f"  train {name}: {out[-1]['new_ms']:.1f} ms vs {out[-1]['previous_ms']:.1f} ms",
              file=sys.stderr, flush=True)
    return out


def _time_steps(model, opt, B: int, old, device, rounds: int) -> dict:
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, 2, (B, 40), generator=g).to(device)
    n = torch.full((B,), 40, dtype=torch.long)
    y = torch.randint(0, 2, (B,), generator=g).to(device)

    def step(fwd):
        torch.manual_seed(3)
        loss = torch.nn.functional.cross_entropy(fwd(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    return round_robin({"new": lambda: step(lambda: model(tokens, n)),
                        "previous": lambda: step(lambda: old(model, tokens, n))}, rounds, device)


def labelling_ratios(n_strings: int) -> list[dict]:
    """Symbols per second of ``element_of`` (1 and 2 threads) and automata-lib."""
    import monoidlab as ml

    rng = np.random.default_rng(0)
    out = []
    for name in ("parity", "dyck-6"):
        a = ml.load_language(name)
        m = a.monoid()
        tokens = rng.integers(0, a.n_symbols, size=(n_strings, 500))
        lengths = np.full(n_strings, 500)
        m.element_of(tokens[:2048], lengths[:2048], threads=2)  # compile / load the cache
        rates = {"previous": previous_labelling_rate(m, tokens, lengths)}
        for threads in (1, 2):
            best = float("inf")
            for _ in range(5):
                t = time.perf_counter()
                ecs = m.element_of(tokens, lengths, threads=threads)
                best = min(best, time.perf_counter() - t)
            rates[threads] = tokens.size / best
        dfa = a.to_automata_lib()
        strings = a.decode(tokens[:400], lengths[:400])
        t = time.perf_counter()
        accepted = [dfa.accepts_input(s) for s in strings]
        theirs = 400 * 500 / (time.perf_counter() - t)
        assert [int(x) for x in accepted] == m.outputs[ecs[:400]].tolist()
        out.append({"language": name, "previous_Msym_s": rates["previous"] / 1e6,
                    "ours_1_Msym_s": rates[1] / 1e6,
                    "ours_2_Msym_s": rates[2] / 1e6, "automata_lib_Msym_s": theirs / 1e6,
                    "ratio_1": rates[1] / theirs, "ratio_2": rates[2] / theirs,
                    "ratio_previous": rates["previous"] / theirs})
    return out


def previous_labelling_rate(m, tokens, lengths) -> float:
    """Symbols per second of the previous ``element_of``: ``check_batch`` (two passes for the
    token range) then the eight-chain fold over an int32 table (``fold_kernel``)."""
    from monoidlab._kernels import fold_kernel
    from monoidlab._util import check_batch

    fold = fold_kernel()
    table = m.right.astype(np.int32)
    out = np.zeros(len(tokens), np.int64)
    fold(table, tokens[:8], lengths[:8], out[:8])
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        tk, ln = check_batch(tokens, lengths, m.n_symbols)
        fold(table, np.ascontiguousarray(tk), ln.astype(np.int64), out)
        best = min(best, time.perf_counter() - t)
    assert out.tolist() == m.element_of(tokens, lengths).tolist()
    return tokens.size / best


def ratio_markdown(info: str, table: dict, batch: int) -> str:
    rows = table["forward"]
    out = [f"Device: {info}. Batch {batch}, parity inputs (V = 2), fp32, eval, no_grad; best of "
           "the rounds, every variant timed once per round in turn.", "",
           "Forward, ms per call, and same-run ratios:", "",
           "| length | nn.LSTM | PR-LSTM | unshared | previous | MLP-LDRU | unshared | previous "
           "| PR-LSTM / LSTM (unshared) | PR-LSTM / previous (unshared) | MLP-LDRU / LSTM "
           "(unshared) | MLP-LDRU / previous (unshared) | forward_all / previous (unshared) |",
           "|---:|" + "---:|" * 12]
    for r in rows:
        def rat(a, b, r=r):
            return f"{r[a] / r[b]:.2f}"

        out.append(
            f"| {r['length']} | {r['lstm']:.0f} | {r['pr-lstm']:.0f} | {r['pr-lstm unshared']:.0f}"
            f" | {r['pr-lstm previous']:.0f} | {r['mlp-ldru']:.0f} | {r['mlp-ldru unshared']:.0f}"
            f" | {r['mlp-ldru previous']:.0f} | {rat('pr-lstm', 'lstm')} "
            f"({rat('pr-lstm unshared', 'lstm')}) | {rat('pr-lstm', 'pr-lstm previous')} "
            f"({rat('pr-lstm unshared', 'pr-lstm previous')}) | {rat('mlp-ldru', 'lstm')} "
            f"({rat('mlp-ldru unshared', 'lstm')}) | {rat('mlp-ldru', 'mlp-ldru previous')} "
            f"({rat('mlp-ldru unshared', 'mlp-ldru previous')}) | "
            f"{rat('pr-lstm forward_all', 'pr-lstm forward_all previous')} "
            f"({rat('pr-lstm forward_all unshared', 'pr-lstm forward_all previous')}) |")
    if table.get("tape"):
        out += ["", "PR-LSTM at the authors' settings (H 256, num_layers 2, haiku init) on the "
                "parity_check tape (L bits + the empty token), ms per call:", "",
                "| length (tape) | forward_all | unshared | previous | forward (last position) "
                "| unshared | forward_all / previous (unshared) |", "|---:|" + "---:|" * 6]
        for r in table["tape"]:
            out.append(f"| {r['length']} ({r['tape']}) | {r['forward_all']:.0f} | "
                       f"{r['forward_all unshared']:.0f} | {r['forward_all previous']:.0f} | "
                       f"{r['forward']:.0f} | {r['forward unshared']:.0f} | "
                       f"{r['forward_all'] / r['forward_all previous']:.2f} "
                       f"({r['forward_all unshared'] / r['forward_all previous']:.2f}) |")
    out += ["", "Training step at length 40 (forward, backward, clip, optimiser step):", "",
            "| model | new (ms) | previous (ms) | new / previous |", "|---|---:|---:|---:|"]
    for r in table["train"]:
        out.append(f"| {r['model']} | {r['new_ms']:.1f} | {r['previous_ms']:.1f} | "
                   f"{r['ratio']:.2f} |")
    out += ["", "Labelling, M symbols/s (strings of length 500; automata-lib on 400 of them):", "",
            "| language | element_of, 1 thread | 2 threads | previous element_of | automata-lib "
            "accepts_input | ratio (1 thread) | ratio (2 threads) | ratio (previous) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in table["labelling"]:
        out.append(f"| {r['language']} | {r['ours_1_Msym_s']:.0f} | {r['ours_2_Msym_s']:.0f} | "
                   f"{r['previous_Msym_s']:.0f} | {r['automata_lib_Msym_s']:.2f} | "
                   f"{r['ratio_1']:.0f} | {r['ratio_2']:.0f} | {r['ratio_previous']:.0f} |")
    return "\n".join(out) + "\n"


def device_info(device: torch.device) -> str:
    if device.type == "cuda":
        return f"cuda: {torch.cuda.get_device_name(device)}, torch {torch.__version__}"
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"cpu: {cpu}, {torch.get_num_threads()} torch thread(s), torch {torch.__version__}"


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def available_bytes(device) -> int:
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return free
    import psutil

    return psutil.virtual_memory().available


def attention_bytes(name: str, model, B: int, T: int) -> int:
    """A lower bound on the transformer's (B, heads, T, T) attention buffers (0 for others)."""
    if name != "transformer":
        return 0
    heads = model.stack.blocks[0].attn.n_heads if hasattr(model.stack, "blocks") else 8
    return 3 * B * heads * T * T * 4


def peak_memory(fn, device) -> int:
    """Peak bytes of the tensors ``fn()`` creates (see the module docstring)."""
    if device.type == "cuda":
        sync(device)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        fn()
        sync(device)
        return torch.cuda.max_memory_allocated(device) - base
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = sorted(
        ((e.time_range.start, e.cpu_memory_usage if e.name == "[memory]"
          else e.self_cpu_memory_usage) for e in prof.events()), key=lambda t: t[0])
    cur = peak = 0
    for _, nbytes in events:
        cur += nbytes
        peak = max(peak, cur)
    return peak


def time_calls(fn, device, budget_s: float, min_calls: int = 3, max_calls: int = 100):
    """Mean and min seconds per call after one warm-up call (two when it is fast)."""
    sync(device)
    t = time.perf_counter()
    fn()
    sync(device)
    first = time.perf_counter() - t
    if first < 0.1:
        fn()
        sync(device)
    times = []
    while len(times) < min_calls or (sum(times) < budget_s and len(times) < max_calls):
        t = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - t)
        if len(times) >= min_calls and times[-1] > CUTOFF_S:
            break
    return float(np.mean(times)), float(np.min(times)), len(times)


def build(name: str, kw: dict, device):
    from monoidlab.models import build_model

    torch.manual_seed(0)
    return build_model(name, vocab_size=2, n_classes=2, **kw).to(device)


def inference_scaling(device, lengths, batch: int, budget_s: float) -> list[dict]:
    rows = []
    for name, kw in MODELS.items():
        model = build(name, kw, device).eval()
        stopped = None
        for L in lengths:
            row = {"model": name, "length": L}
            if stopped:
                rows.append({**row, "skipped": stopped})
                continue
            need = attention_bytes(name, model, batch, L)
            if need > 0.5 * available_bytes(device):
                stopped = f"attention needs > {need / 2**30:.0f} GiB"
                rows.append({**row, "skipped": stopped})
                continue
            g = torch.Generator().manual_seed(L)
            tokens = torch.randint(0, 2, (batch, L), generator=g).to(device)
            lengths_t = torch.full((batch,), L, dtype=torch.long, device=device)

            def call(model=model, tokens=tokens, lengths_t=lengths_t):
                with torch.no_grad():
                    return model(tokens, lengths_t)

            mean, best, n = time_calls(call, device, budget_s)
            mem = peak_memory(call, device)
            rows.append({**row, "ms": 1e3 * mean, "min_ms": 1e3 * best, "calls": n,
                         "peak_mb": mem / 2**20})
            print(f"  {name:12s} L={L:5d}: {1e3 * mean:9.2f} ms (min {1e3 * best:.2f}, "
                  f"{n} calls), peak {mem / 2**20:9.2f} MiB", file=sys.stderr, flush=True)
            if mean > CUTOFF_S:
                stopped = f"previous length > {1e3 * CUTOFF_S:.0f} ms"
        del model
    return rows


def train_speed(device, length: int, batch: int, budget_s: float) -> list[dict]:
    from monoidlab.evaluation import to_device as _to_device
    from monoidlab.training import RunConfig
    from monoidlab.training.problems import make_problem
    from monoidlab.training.trainer import build_for

    rows = []
    for name, kw in TRAIN_MODELS.items():
        cfg = RunConfig(language="parity", model=name, model_options=kw, batch_size=batch)
        problem = make_problem(cfg)
        torch.manual_seed(0)
        model = build_for(cfg, problem).to(device).train()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        rng = np.random.default_rng(0)
        batches = [_to_device(problem.batch(rng, length, batch, train=True), device)
                   for _ in range(4)]
        it = iter(range(10**9))

        def step(model=model, opt=opt, batches=batches, problem=problem, it=it):
            loss, _ = problem.loss(model, batches[next(it) % len(batches)])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()

        mean, best, n = time_calls(step, device, budget_s, min_calls=5)
        rows.append({"model": name, "params": sum(p.numel() for p in model.parameters()),
                     "steps_per_s": 1 / mean, "ms_per_step": 1e3 * mean, "steps": n})
        print(f"  train {name:12s}: {1 / mean:7.2f} steps/s ({1e3 * mean:.1f} ms/step)",
              file=sys.stderr, flush=True)
    return rows


def markdown(info: str, rows: list[dict], train_rows: list[dict], batch: int) -> str:
    models = list(MODELS)
    lengths = sorted({r["length"] for r in rows})
    get = {(r["model"], r["length"]): r for r in rows}

    def cell(m, L, key, fmt):
        r = get.get((m, L))
        return "–" if r is None or key not in r else fmt.format(r[key])

    out = [f"Device: {info}. Batch {batch}, parity inputs, hidden size 64, fp32, no_grad. "
           f"'–': not run (a shorter length took > {1e3 * CUTOFF_S:.0f} ms).", "",
           "Mean forward time (ms per call):", "",
           "| length | " + " | ".join(models) + " | pr-lstm / lstm | mlp-ldru / lstm |",
           "|---:|" + "---:|" * (len(models) + 2)]
    for L in lengths:
        ratios = []
        for m in ("pr-lstm", "mlp-ldru"):
            a, b = get.get((m, L), {}), get.get(("lstm", L), {})
            ratios.append(f"{a['ms'] / b['ms']:.2f}" if "ms" in a and "ms" in b else "–")
        out.append(f"| {L} | " + " | ".join(cell(m, L, "ms", "{:.2f}") for m in models)
                   + " | " + " | ".join(ratios) + " |")
    out += ["", "Peak memory of the call's tensors (MiB):", "",
            "| length | " + " | ".join(models) + " |", "|---:|" + "---:|" * len(models)]
    for L in lengths:
        out.append(f"| {L} | " + " | ".join(cell(m, L, "peak_mb", "{:.2f}") for m in models)
                   + " |")
    if train_rows:
        base = next((r for r in train_rows if r["model"] == "lstm"), None)
        out += ["", "Training speed at length 40, batch 256 (forward + backward + clip + Adam):",
                "", "| model | parameters | steps/s | ms/step | time / lstm |",
                "|---|---:|---:|---:|---:|"]
        for r in train_rows:
            rel = f"{r['ms_per_step'] / base['ms_per_step']:.2f}" if base else "–"
            out.append(f"| {r['model']} | {r['params']:,} | {r['steps_per_s']:.2f} | "
                       f"{r['ms_per_step']:.1f} | {rel} |")
    return "\n".join(out) + "\n"


def plot(rows: list[dict], info: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for m in MODELS:
        pts = [r for r in rows if r["model"] == m and "ms" in r]
        if not pts:
            continue
        x = [r["length"] for r in pts]
        axes[0].plot(x, [r["ms"] for r in pts], marker="o", label=m)
        axes[1].plot(x, [max(r["peak_mb"], 1e-3) for r in pts], marker="o", label=m)
    axes[0].axhline(1e3 * CUTOFF_S, color="grey", ls=":", lw=1)
    for ax, ylabel in zip(axes, ["mean forward time (ms)", "peak memory (MiB)"]):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("sequence length")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="major", alpha=0.3)
    axes[0].legend()
    fig.suptitle(f"Inference scaling, batch 64, hidden 64 — {info}", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lengths", default=",".join(map(str, LENGTHS)))
    ap.add_argument("--budget", type=float, default=1.0, help="seconds of timed calls per point")
    ap.add_argument("--quick", action="store_true", help="lengths <= 256, 0.3 s per point")
    ap.add_argument("--no-train", action="store_true", help="skip the training-speed table")
    ap.add_argument("--sections", default="ratios,scaling",
                    help="comma list of: ratios (the speed table), labelling (its labelling "
                         "part alone), scaling (+ training)")
    ap.add_argument("--rounds", type=int, default=3, help="timing rounds of the ratio table")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "docs" /
                                         "figures"))
    args = ap.parse_args(argv)
    from monoidlab.training import pick_device

    torch.set_num_threads(args.threads)
    device = pick_device(args.device)
    lengths = [int(x) for x in args.lengths.split(",")]
    budget = args.budget
    if args.quick:
        lengths, budget = [L for L in lengths if L <= 256], 0.3
    info = device_info(device)
    print(f"# {info}", file=sys.stderr, flush=True)
    t0 = time.time()
    sections = set(args.sections.split(","))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tag = device.type
    if "ratios" in sections:
        table = ratio_table(device, args.batch, [512, 513] if args.quick else [512, 513, 4096],
                            1 if args.quick else args.rounds, args.quick)
        md = ratio_markdown(info, table, args.batch)
        print(md)
        atomic_write_text(out / f"speed-ratios-{tag}.json", json.dumps(
            {"device": info, "threads": torch.get_num_threads(), **table, "markdown": md,
             "seconds": round(time.time() - t0, 1)}, indent=1))
    if "labelling" in sections:
        print(labelling_only(args.quick))
    if "scaling" not in sections:
        return 0
    rows = inference_scaling(device, lengths, args.batch, budget)
    train_rows = [] if args.no_train else train_speed(device, 40, 256, 2 * budget)
    md = markdown(info, rows, train_rows, args.batch)
    print(md)
    atomic_write_text(out / f"speed-{tag}.json", json.dumps(
        {"device": info, "batch": args.batch, "threads": torch.get_num_threads(),
         "inference": rows, "train": train_rows, "markdown": md,
         "seconds": round(time.time() - t0, 1)}, indent=1))
    plot(rows, info, out / f"speed-{tag}.png")
    print(f"wrote {out / f'speed-{tag}.json'} and {out / f'speed-{tag}.png'} "
          f"({time.time() - t0:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
