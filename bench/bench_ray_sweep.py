"""The sweep through Ray (``monoidlab sweep FILE --ray local``) equals the local sweep, and the
local Ray instance listens on loopback only.

Needs the optional extra (``pip install 'monoidlab[ray]'``; Ray 2.60 was used). Steps:

1. a 2-run sweep (parity × MLP-LDRU × seeds 0, 1; tiny, one thread per run) run locally;
2. the same sweep file, a second output folder, through ``run_sweep(..., ray_address="local")``
   (what ``--ray local`` calls), while a thread polls ``ss -ltnp`` every 0.2 s and records
   every listening socket owned by this process or its descendants (the Ray servers and
   workers);
3. checks: every such socket is bound to 127.0.0.1 / ::1 (IPv4-mapped included), no Ray
   process is left afterwards, no ``~/.ray`` auth token was written, and the two sweeps agree:
   the same rows (score, accuracy per length, steps) and bit-identical final weights.

    python bench/bench_ray_sweep.py            # about 30-60 s (Ray start-up is most of it)
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

SWEEP = """[sweep]
title = "ray smoke"
languages = ["parity"]
models = ["mlp-ldru"]
seeds = [0, 1]
out = "{out}"
[base]
device = "cpu"
threads = 1        # Ray gives each task one CPU (OMP_NUM_THREADS=1): match it locally
steps = 40
batch_size = 32
train_lengths = "1:20"
test_lengths = "21:30"
test_samples = 32
checkpoint_every = 20
[models.mlp-ldru]
model_options = {{ d = 16 }}
"""

def listeners() -> list[tuple[str, int, list[int], str]]:
    """(address, port, pids, process text) of every listening TCP socket (``ss -ltnpH``)."""
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        parts = line.split(None, 5)  # state, recv-q, send-q, local, peer, process
        if len(parts) < 5 or parts[0] != "LISTEN":
            continue
        addr, port = parts[3].rsplit(":", 1)
        proc = parts[5].strip() if len(parts) > 5 else ""
        rows.append((addr.strip("[]"), int(port), [int(p) for p in re.findall(r"pid=(\d+)", proc)],
                     proc))
    return rows


def is_loopback(addr: str) -> bool:
    if addr.startswith("::ffff:"):
        addr = addr[len("::ffff:"):]
    addr = addr.split("%")[0]
    try:
        return ipaddress.ip_address(addr).is_loopback
    except ValueError:  # "*" or "0.0.0.0" style wildcards
        return False


def ours() -> set[int]:
    import psutil

    me = psutil.Process()
    return {me.pid} | {p.pid for p in me.children(recursive=True)}


def main() -> int:
    try:
        import ray
    except ImportError:
        print("bench_ray_sweep: needs Ray: pip install 'monoidlab[ray]'", file=sys.stderr)
        return 2
    import torch

    from monoidlab.training.sweep import run_sweep

    token = Path.home() / ".ray" / "auth_token"
    token_before = token.exists()
    tmp = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    local_file, ray_file = tmp / "local.toml", tmp / "ray.toml"
    local_file.write_text(SWEEP.format(out=(tmp / "local").as_posix()))
    ray_file.write_text(SWEEP.format(out=(tmp / "ray").as_posix()))

    t = time.time()
    local = run_sweep(local_file, progress=False)
    t_local = time.time() - t

    seen: dict[tuple[str, int], str] = {}
    stop = threading.Event()

    def poll():
        while not stop.is_set():
            mine = ours()
            for addr, port, pids, proc in listeners():
                if set(pids) & mine:
                    seen[(addr, port)] = proc
            stop.wait(0.2)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    t = time.time()
    remote = run_sweep(ray_file, ray_address="local", progress=False)
    t_ray = time.time() - t
    stop.set()
    poller.join()
    time.sleep(1.0)
    leftover = sorted(ours() - {os.getpid()})  # Ray processes still running

    def key(rows):
        return [{k: r[k] for k in ("id", "score", "solved", "steps", "accuracy")} for r in rows]

    same_rows = key(local["rows"]) == key(remote["rows"])
    same_weights = True
    for r in local["rows"]:
        a = torch.load(tmp / "local" / r["id"] / "checkpoint.pt", weights_only=True)["model"]
        b = torch.load(tmp / "ray" / r["id"] / "checkpoint.pt", weights_only=True)["model"]
        same_weights &= all(torch.equal(a[k], b[k]) for k in a)
    bad = {k: v for k, v in seen.items() if not is_loopback(k[0])}
    report = {
        "ray": ray.__version__,
        "local_seconds": round(t_local, 1), "ray_seconds": round(t_ray, 1),
        "listeners_seen": len(seen),
        "listeners": sorted(f"{a}:{p} {proc}" for (a, p), proc in seen.items()),
        "non_loopback": sorted(f"{a}:{p} {proc}" for (a, p), proc in bad.items()),
        "auth_token_written": token.exists() and not token_before,
        "processes_left": leftover,
        "same_rows": same_rows, "same_weights": same_weights,
        "scores": [r["score"] for r in remote["rows"]],
    }
    print(json.dumps(report, indent=1))
    ok = (same_rows and same_weights and not bad and seen and not leftover
          and not report["auth_token_written"])
    print(("OK" if ok else "FAILED") + f": {len(seen)} Ray listening sockets, all on loopback: "
          f"{not bad}; results equal: {same_rows}, weights bit-identical: {same_weights}; "
          f"local {t_local:.1f} s, Ray {t_ray:.1f} s (start-up included)")
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
