"""Bad and hostile inputs, tried as a careless user and as an attacker would (prints; not a test).

Every case runs ``python -m monoidlab ...`` in a fresh copy of a sandbox (a finished tiny run,
crafted checkpoints, specs, configs and sweep files) under a memory cap, and is tallied as

* ``clear error``: exit status 2 and one line ``monoidlab: error: ...``, no traceback;
* ``ok``: exit status 0 and the result checks pass;
* ``traceback``: a Python traceback, or a crash (killed by a signal);
* ``hang``: no answer within the timeout (default 60 s);
* ``oom``: the generic "out of memory" line: it allocated up to the cap before any check;
* ``wrong``: it did something wrong: accepted what it should refuse, wrote outside its output
  folder, left stale files, wrong file modes, failed slowly after minutes of work...;
* ``data lost``: a file that existed before (a finished run, a checkpoint) was modified or removed.

Besides the per-case checks, every case snapshots the whole sandbox: a change outside the
folders the case may write is ``wrong`` (new file) or ``data lost`` (changed/removed file).

Usage::

    .venv/bin/python tools/bench_bad_inputs.py                  # this checkout (~10 min)
    .venv/bin/python tools/bench_bad_inputs.py --repo /work/main # another checkout, same corpus
    .venv/bin/python tools/bench_bad_inputs.py --quick           # skip the slow cases
    .venv/bin/python tools/bench_bad_inputs.py --only sweep      # cases whose name contains it
    .venv/bin/python tools/bench_bad_inputs.py --items 31,32     # the third pass's items 1 and 2
    .venv/bin/python tools/bench_bad_inputs.py --list            # the corpus, no runs

Root cannot be stopped by file modes, so "unwritable folder" uses ``chattr +i`` as root
(``chmod 555`` otherwise); "full disk" is simulated with ``RLIMIT_FSIZE`` (EFBIG), the closest
an unprivileged process gets to ENOSPC.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pickle
import re
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
MEM_CAP = 6 * 2**30  # address-space cap of every command (torch alone maps ~1 GiB)
OUTCOMES = ["clear error", "ok", "traceback", "hang", "oom", "wrong", "data lost"]

TINY = ["--device=cpu", "--batch_size=8", "--test_lengths=41:42", "--test_samples=4",
        "--model_options.d=8", "--checkpoint_every=10", "--log_every=5", "--train_lengths=1:6"]
RUN_ARGS = ["train", "--language", "parity", "--model", "mlp-ldru", "--steps", "30", *TINY]


@dataclasses.dataclass
class Case:
    name: str
    item: int  # the item of the first hostile pass (1..7); 31..37: the third pass's 1..7; 0: others
    argv: list[str]
    expect: str = "error"  # "error", "ok" or "any" (a clear error or a quick success)
    writes: tuple[str, ...] = ()  # sandbox-relative folders the case may change
    setup: Callable[[Path], None] | None = None
    check: Callable[[Path, subprocess.CompletedProcess], tuple[str, str] | None] | None = None
    timeout: float | None = None
    max_seconds: float | None = None  # a clear error after longer is "wrong" (late check)
    fsize: int | None = None  # RLIMIT_FSIZE in bytes (simulated full disk)
    umask: int = 0o022
    env: dict | None = None
    slow: bool = False
    concurrent: bool = False  # run argv twice into one folder, the second while the first runs
    api: bool = False  # argv[0] is Python code run with `python -c` (a MonoidlabError: exit 2)


# ------------------------------------------------------------------------------ the sandbox
def toml_str(s: str) -> str:
    return json.dumps(s)


SWEEP = """[sweep]
languages = [{langs}]
models = ["mlp-ldru"]
seeds = [0]
out = {out}
{extra}
[base]
device = "cpu"
steps = 2
batch_size = 4
train_lengths = "1:4"
test_lengths = "5:6"
test_samples = 4
[models.mlp-ldru]
model_options = {{ d = 8 }}
"""


def sweep_text(out: str, extra: str = "", langs: str = '"parity"') -> str:
    return SWEEP.format(out=toml_str(out), extra=extra, langs=langs)


def build_master(root: Path, py: list[str], env: dict) -> None:
    """Fixtures shared (copied) by every case."""
    import torch

    F, W = root / "fixtures", root / "work"
    for d in (F, W, root / "outside", root / "site", root / "ro"):
        d.mkdir(parents=True)
    (root / "outside" / "keep.txt").write_text("precious\n")
    (root / "site" / "placeholder.py").write_text("# a site-packages folder\n")
    (F / "afile").write_text("a plain file\n")
    # a finished tiny run (30 steps, checkpoints every 10)
    r = subprocess.run([*py, *RUN_ARGS, "--out", str(F / "run"), "--json"], cwd=W, env=env,
                       capture_output=True, text=True, timeout=600)
    if r.returncode:
        raise SystemExit(f"fixture run failed:\n{r.stderr}")
    # its metric lines, which resuming the finished run must leave as they are (how many
    # depends on the recipe's attempts and validations, not on this tool)
    lines = (F / "run" / "metrics.jsonl").read_text().splitlines()
    (F / "run.lines").write_text(f"{sum(1 for ln in lines if ln.strip())}\n")
    # two runs that keep best.pt (validated every 10 steps), on two languages
    for tag, lang in (("run-es", "parity"), ("run-dyck", "dyck-2")):
        argv = [*RUN_ARGS, "--out", str(F / tag), "--eval_every=10", "--early_stop=5",
                "--val_lengths=41:42", "--val_samples=4", "--json"]
        argv[argv.index("parity")] = lang
        r = subprocess.run([*py, *argv], cwd=W, env=env, capture_output=True, text=True,
                           timeout=600)
        if r.returncode:
            raise SystemExit(f"fixture run {tag} failed:\n{r.stderr}")
    ck = torch.load(F / "run" / "checkpoint.pt", weights_only=True)
    # a partial run: the same run as if killed after its checkpoint at step 20
    shutil.copytree(F / "run", F / "partial")
    (F / "partial" / "results.json").unlink()
    part = dict(ck, step=20)
    torch.save(part, F / "partial" / "checkpoint.pt")
    lines = (F / "run" / "metrics.jsonl").read_text().splitlines()
    keep = [ln for ln in lines if json.loads(ln)["step"] <= 20]
    (F / "partial" / "metrics.jsonl").write_text("".join(ln + "\n" for ln in keep))
    # crafted checkpoints
    C = F / "ck"
    C.mkdir()
    (C / "empty.pt").write_bytes(b"")
    (C / "garbage.pt").write_bytes(os.urandom(4096))
    (C / "text.pt").write_text("hello, I am not a checkpoint\n")
    torch.save([1, 2, 3], C / "list.pt")
    torch.save({"model": {}}, C / "missing-keys.pt")
    torch.save(dict(ck, config=5), C / "config-not-dict.pt")
    torch.save(dict(ck, config={**ck["config"], "bogus": 1}), C / "config-unknown-key.pt")
    torch.save(dict(ck, config={**ck["config"], "model_options": {"d": 16}}), C / "wrong-shapes.pt")
    torch.save(dict(ck, model="weights"), C / "model-not-dict.pt")
    torch.save(dict(ck, step="twenty"), C / "step-not-int.pt")
    pwned = root / "outside" / "pwned"
    (C / "evil-pickle.pt").write_bytes(pickle.dumps(_Evil(f"touch {pwned}")))
    torch.save({"model": _Evil(f"touch {pwned}"), "config": ck["config"], "step": 1},
               C / "evil-torch.pt")
    nan = {k: v.clone() for k, v in ck["model"].items()}
    first = next(k for k, v in nan.items() if v.is_floating_point() and v.numel() > 4)
    nan[first].view(-1)[0] = float("nan")
    no_sum = {k: v for k, v in ck.items() if k != "sha256"}  # as written before checksums
    torch.save(dict(no_sum, model=nan), C / "nan.pt")
    inf = {k: v.clone() for k, v in ck["model"].items()}
    inf[first].view(-1)[1] = float("inf")
    torch.save(dict(no_sum, model=inf), C / "inf.pt")
    # one flipped exponent bit inside the largest weight tensor's stored bytes
    raw = bytearray((F / "run" / "checkpoint.pt").read_bytes())
    big = max((v for v in ck["model"].values() if v.is_floating_point()), key=lambda v: v.numel())
    pos = raw.find(big.contiguous().numpy().tobytes()[:64])
    assert pos > 0, "tensor bytes not found in the checkpoint"
    raw[pos + 3] ^= 0x40  # bit 30 of the first float32: its exponent
    (C / "flipped.pt").write_bytes(bytes(raw))
    (C / "emptydir").mkdir()
    # language specs
    S = F / "specs"
    S.mkdir()
    fam = lambda family, **params: (f'family = "{family}"\n[params]\n'  # noqa: E731
                                    + "".join(f"{k} = {json.dumps(v)}\n" for k, v in params.items()))
    specs = {
        "dyck-10000": fam("dyck", n=10000),
        "prefix-16-2": fam("prefix", p=16, q=2),
        "prefix-1-10000": fam("prefix", p=1, q=10000),
        "cycle-10000": fam("cycle-navigation", k=10000),
        "modarith-64": fam("modular-arithmetic", mod=64),
        "modprec-64": fam("modular-arithmetic-precedence", mod=64),
        "fulltrans-10": fam("full-transformation", n=10),
        "countmod-bigalpha": fam("count-mod", k=1000, alphabet=[f"s{i}" for i in range(10000)]),
        "countmod-badsymbol": fam("count-mod", k=3, symbol="x"),
        "huge-int": fam("dyck", n=2**63 - 1),
        "parity2": 'name = "parity2"\nfamily = "parity"\n',
        "name-dotdot": 'name = "../../escaped"\nfamily = "parity"\n',
        "name-absolute": 'name = "{S}/outside/escaped"\nfamily = "parity"\n',  # per case
        "name-weird": 'name = "a/b\\\\c:d<e>|f?*"\nfamily = "parity"\n',
        "name-html": 'name = "<script>alert(1)</script>"\ndescription = "<img src=x onerror=alert(1)>"\n'
                     'family = "parity"\n',
    }
    for name, text in specs.items():
        (S / f"{name}.toml").write_text(text)
    n = 100_000
    for tag, acc in (("cycle-100000", '["q0"]'), ("cycle-100000-trivial", "all")):
        states = [f"q{i}" for i in range(n)]
        accept = "[" + ", ".join(f'"{s}"' for s in states) + "]" if acc == "all" else acc
        rows = "".join(f'q{i} = {{ "a" = "q{(i + 1) % n}" }}\n' for i in range(n))
        (S / f"{tag}.toml").write_text(f'alphabet = ["a"]\nstart = "q0"\naccept = {accept}\n'
                                       f"[transitions]\n{rows}")
    deep = "a = " + "[" * 50_000 + "]" * 50_000 + "\n"
    (S / "deep.toml").write_text(deep)
    (S / "notutf8.toml").write_bytes(b'name = "\xff\xfe"\nfamily = "parity"\n')
    (S / "dir.toml").mkdir()
    os.mkfifo(S / "fifo.toml")
    # training configs
    G = F / "configs"
    G.mkdir()
    base = 'language = "parity"\nsteps = 3\nbatch_size = 4\ndevice = "cpu"\n' \
           'train_lengths = "1:4"\ntest_lengths = "5:6"\ntest_samples = 4\n' \
           'model_options = { d = 8 }\n'
    configs = {
        "toplevel-outside-train": "lr = 1e6\n[train]\n" + base,
        "unknown-table": "[train]\n" + base + "[foo]\nx = 1\n",
        "eval-every-neg": base + "eval_every = -1\n",
        "top-only": base,
        "lr-inf": base + "lr = inf\n",
        "lr-nan": base + "lr = nan\n",
        "deep": deep,
        "batch-huge": base.replace("batch_size = 4", "batch_size = 100000000"),
        "d-string": base.replace("{ d = 8 }", '{ d = "abc" }'),
    }
    for name, text in configs.items():
        (G / f"{name}.toml").write_text(text)
    (G / "notutf8.toml").write_bytes(b"[train]\nlanguage = \"\xff\"\n")
    (G / "dir.toml").mkdir()


class _Evil:
    """Unpickling this runs a shell command (what weights_only must refuse)."""

    def __init__(self, cmd: str):
        self.cmd = cmd

    def __reduce__(self):
        return (os.system, (self.cmd,))


# ------------------------------------------------------------------------------ checks
def files(root: Path) -> dict[str, tuple]:
    out = {}
    for p in root.rglob("*"):
        rel = p.relative_to(root).as_posix()
        try:
            st = p.lstat()
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            out[rel] = (st.st_size, st.st_mtime_ns, _digest(p))
        else:
            out[rel] = ("dir" if stat.S_ISDIR(st.st_mode) else "other",)
    return out


def _digest(p: Path) -> str:
    import hashlib

    try:
        return hashlib.sha1(p.read_bytes()).hexdigest()
    except OSError:
        return "?"


def outside_changes(before: dict, after: dict, writes: tuple[str, ...]) -> tuple[str, str] | None:
    def allowed(rel: str) -> bool:
        return any(rel == w or rel.startswith(w.rstrip("/") + "/") for w in writes)

    lost = [k for k in before if not allowed(k) and before[k] != after.get(k)
            and before[k][0] != "dir"]
    if lost:
        return "data lost", f"changed or removed: {lost[:3]}"
    new = [k for k in after if k not in before and not allowed(k)]
    if new:
        return "wrong", f"wrote outside its folder: {new[:3]}"
    return None


def mode_check(*names: str, mode: int = 0o644):
    def check(root: Path, proc) -> tuple[str, str] | None:
        bad = []
        for n in names:
            p = root / n
            if not p.exists():
                return "wrong", f"{n} missing"
            m = stat.S_IMODE(p.stat().st_mode)
            if m != mode:
                bad.append(f"{n}: {oct(m)}")
        return ("wrong", f"modes {bad} (umask wants {oct(mode)})") if bad else None
    return check


def no_tmp(folder: str):
    def check(root: Path, proc):
        left = [p.name for p in (root / folder).glob(".*.tmp")]
        return ("wrong", f"stale temporary files left: {left[:3]}") if left else None
    return check


def metric_lines(folder: str, n: int | None):
    """``n`` lines of metrics.jsonl in ``folder`` (None: as many as the fixture had,
    ``<folder>.lines``), each whole JSON."""
    def check(root: Path, proc):
        want = n if n is not None else int((root / f"{folder}.lines").read_text())
        lines = (root / folder / "metrics.jsonl").read_text().splitlines()
        good = [ln for ln in lines if ln.strip()]
        try:
            [json.loads(ln) for ln in good]
        except json.JSONDecodeError:
            return "wrong", "metrics.jsonl still holds a broken line"
        return None if len(good) == want else ("wrong",
                                                f"{len(good)} metric lines, expected {want}")
    return check


def not_exists(rel: str):
    def check(root: Path, proc):
        return ("wrong", f"{rel} was created") if (root / rel).exists() else None
    return check


def html_escaped(rel_glob: str):
    def check(root: Path, proc):
        pages = list(root.glob(rel_glob))
        if not pages:
            return "wrong", "no report written"
        text = pages[0].read_text()
        return ("wrong", "raw <script> in the report") if "<script>" in text else None
    return check


def both(*checks):
    def check(root: Path, proc):
        for c in checks:
            r = c(root, proc)
            if r:
                return r
        return None
    return check


def json_stdout(root: Path, proc):
    try:
        json.loads(proc.stdout, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    except ValueError as exc:
        return "wrong", f"--json printed invalid JSON ({exc})"
    return None


def make_immutable(path: Path) -> None:
    path.mkdir(exist_ok=True)
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", str(path)], check=True)
    else:
        path.chmod(0o555)


def undo_immutable(root: Path) -> None:
    for ro in (root / "ro", root / "work" / "ro"):
        if ro.exists() and os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(ro)], check=False)
        elif ro.exists():
            ro.chmod(0o755)


def stale_tmp(root: Path) -> None:
    for i in range(3):
        (root / "fixtures" / "partial" / f".checkpoint.pt.x{i}.tmp").write_bytes(os.urandom(1 << 20))


def truncate_metrics(root: Path) -> None:
    p = root / "fixtures" / "partial" / "metrics.jsonl"
    text = p.read_text()
    p.write_text(text + '{"step": 25, "loss": 0.6')  # killed mid-line


def garbage_metrics(root: Path) -> None:
    p = root / "fixtures" / "partial" / "metrics.jsonl"
    lines = p.read_text().splitlines()
    lines.insert(1, "\x00\x00garbage{")
    p.write_text("\n".join(lines) + "\n")


def write(rel: str, text: str):
    def setup(root: Path) -> None:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text.replace("{S}", str(root)))
    return setup


# ------------------------------------------------------------------------------ the corpus
def corpus() -> list[Case]:
    F, S = "{S}/fixtures", "{S}"
    ck, sp, cf = F + "/ck", F + "/specs", F + "/configs"
    cases: list[Case] = []
    add = cases.append
    tiny = TINY
    train = ["train", "--language", "parity", "--model", "mlp-ldru", "--steps", "3", *tiny]

    # ---- 1. writes stay inside their folder
    evil_notes = 'notes = "import os; os.system(\'touch {S}/outside/pwned\')"'
    for tag, md in [("pth-in-site", "{S}/site/evil.pth"), ("md-outside", "../outside/r.md"),
                    ("txt", "notes.txt"), ("dotdot", "runs/x/../../../outside/y.md"),
                    ("md-in-keepfile", "{S}/outside/keep.txt")]:
        add(Case(f"sweep results_md {tag}", 1, ["sweep", "sweep.toml", "--json"],
                 setup=write("work/sweep.toml", sweep_text(
                     "runs/s", f'results_md = {toml_str(md)}\n{evil_notes}')),
                 writes=("work/runs",)))
    add(Case("sweep results_md inside out", 1, ["sweep", "sweep.toml", "--json"], expect="ok",
             setup=write("work/sweep.toml", sweep_text("runs/s", 'results_md = "runs/s/r.md"')),
             writes=("work/runs",)))
    add(Case("sweep results_md marker injection", 1, ["sweep", "sweep.toml", "--json"],
             expect="any", writes=("work/runs",),
             setup=lambda r: (write("work/sweep.toml", sweep_text(
                 "runs/s", 'results_md = "runs/s/r.md"\nnotes = "x\\n<!-- end sweep sweep -->\\n'
                           'INJECTED\\n<!-- begin sweep sweep -->"'))(r)),
             check=lambda r, p: ("wrong", "notes broke out of the generated section")
             if (r / "work/runs/s/r.md").exists() and
             re.search(r"<!-- end sweep sweep -->\s*INJECTED", (r / "work/runs/s/r.md").read_text())
             else None))
    for tag, out in [("dotdot", "../outside/sw"), ("absolute", "{S}/outside/sw"),
                     ("site", "{S}/site")]:
        add(Case(f"sweep out {tag}", 1, ["sweep", "sweep.toml", "--json"],
                 setup=write("work/sweep.toml", sweep_text(out)), writes=("work/runs",)))
    add(Case("sweep absolute spec path", 1, ["sweep", "sweep.toml", "--json"], expect="ok",
             setup=write("work/sweep.toml", sweep_text(
                 "runs/s", langs=toml_str(sp + "/parity2.toml"))), writes=("work/runs",)))
    add(Case("sweep relative ../ spec path", 1, ["sweep", "sweep.toml", "--json"], expect="ok",
             setup=write("work/sweep.toml", sweep_text(
                 "runs/s", langs=toml_str("../fixtures/specs/parity2.toml"))),
             writes=("work/runs",)))
    rep = ["--out", "rep", "--train", "1:4", "--test", "5:6", "--no-probe", "--no-umap", "--json"]
    for tag in ("name-dotdot", "name-absolute", "name-weird"):
        add(Case(f"report spec {tag}", 1, ["report", f"{sp}/{tag}.toml", *rep], expect="ok",
                 writes=("work/rep",)))
    add(Case("report spec name-html", 0, ["report", f"{sp}/name-html.toml", *rep], expect="ok",
             writes=("work/rep",), check=html_escaped("work/rep/*.html")))
    add(Case("report --train-model absolute spec path", 1,
             ["report", f"{sp}/parity2.toml", "--train-model", *rep], expect="ok",
             writes=("work/rep",), slow=True, timeout=400))

    # ---- 4. output paths that cannot be used (one line, before the work)
    under = F + "/afile/sub"
    outs = {"a file": F + "/afile", "under a file": under, "unwritable": S + "/ro/sub"}
    for tag, out in outs.items():
        add(Case(f"coverage --out {tag}", 4, ["coverage", "parity", "--out", out, "--json"]))
        add(Case(f"report --out {tag}", 4, ["report", "parity", *rep[2:], "--out", out]))
        add(Case(f"train --out {tag}", 4, [*train, "--out", out, "--json"]))
        add(Case(f"probe --out {tag}", 4, ["probe", F + "/run", "--n-strings", "10",
                                           "--no-umap", "--no-init", "--out", out, "--json"]))
        local = {"a file": "afile", "under a file": "afile/sub", "unwritable": "ro/sub"}[tag]
        add(Case(f"sweep out {tag}", 4, ["sweep", "sweep.toml", "--json"],  # inside work/
                 setup=lambda r, o=local: (write("work/sweep.toml", sweep_text(o))(r),
                                           write("work/afile", "a file\n")(r),
                                           (r / "work" / "ro").mkdir())))
    add(Case("train --out under a file, validated first", 4,
             ["train", "--language", "dyck-12", "--steps", "100000", "--out", under, "--json"],
             max_seconds=20))
    add(Case("coverage --out under a file, validated first", 4,
             ["coverage", "dyck-12", "--exact", "--test", "41:3000", "--out", under, "--json"],
             max_seconds=20))
    add(Case("report --out under a file, validated first", 4,
             ["report", "dyck-8", "--test", "41:2000", "--no-probe", "--no-umap", "--out", under,
              "--json"], max_seconds=20))
    add(Case("full disk: train", 4, [*train, "--out", "run", "--json"], fsize=6000,
             writes=("work/run",)))
    add(Case("full disk: report", 4, ["report", "parity", *rep], fsize=20000,
             writes=("work/rep",), check=no_tmp("work/rep")))
    add(Case("full disk: coverage", 4, ["coverage", "parity", "--out", "cov", "--json"],
             fsize=20000, writes=("work/cov",)))
    bad_cks = ["empty", "garbage", "text", "list", "missing-keys", "config-not-dict",
               "config-unknown-key", "wrong-shapes", "model-not-dict", "step-not-int"]
    for name in bad_cks:
        add(Case(f"evaluate {name}.pt", 4, ["evaluate", f"{ck}/{name}.pt", "--json"]))
    refuse = lambda r, p: None if "refusing to load: not a monoidlab checkpoint (or unsafe " \
        "content)" in p.stderr else ("wrong", "no 'refusing to load' message")  # noqa: E731
    for name in ("evil-pickle", "evil-torch"):
        add(Case(f"evaluate {name}.pt", 4, ["evaluate", f"{ck}/{name}.pt", "--json"],
                 check=both(refuse, not_exists("outside/pwned"))))
    add(Case("evaluate folder without checkpoint", 4, ["evaluate", f"{ck}/emptydir"]))
    add(Case("evaluate missing file", 4, ["evaluate", f"{ck}/nope.pt"]))
    for name in ("garbage", "list", "evil-pickle"):
        add(Case(f"probe {name}.pt", 4, ["probe", f"{ck}/{name}.pt", "--out", "p", "--no-umap"],
                 writes=("work/p",)))
        add(Case(f"report --checkpoint {name}.pt", 4,
                 ["report", "parity", "--checkpoint", f"{ck}/{name}.pt", *rep],
                 writes=("work/rep",)))
    for key in ("log_every", "checkpoint_every", "eval_every", "test_samples", "batch_size"):
        add(Case(f"train --{key}=0" if key != "eval_every" else "train --eval_every=-1", 4,
                 [*train, f"--{key}={-1 if key == 'eval_every' else 0}", "--json"]))
    for kw in ("model_options.d=0", "model_options.d=-4", "model_options.dropout=2"):
        add(Case(f"train mlp-ldru {kw}", 4, [*train, f"--{kw}", "--json"]))
    add(Case("train pr-lstm hidden=0", 4, ["train", "--language", "parity", "--model", "pr-lstm",
                                           "--steps", "3", "--device=cpu",
                                           "--model_options.hidden=0", "--json"]))
    add(Case("train transformer d_model=10 n_heads=3", 4,
             ["train", "--language", "parity", "--model", "transformer", "--steps", "3",
              "--device=cpu", "--model_options.d_model=10", "--model_options.n_heads=3", "--json"]))
    add(Case("evaluate --splits on a parity checkpoint", 4,
             ["evaluate", F + "/run", "--splits", "--json"]))

    # ---- 2. never lose a run
    run = F + "/run"
    add(Case("train into a finished run, same config", 2, [*RUN_ARGS, "--out", run, "--json"]))
    add(Case("train into a finished run, 5 steps", 2,
             ["train", "--language", "parity", "--model", "mlp-ldru", "--steps", "5", *tiny,
              "--out", run, "--json"]))
    add(Case("train into a partial run without --resume", 2,
             [*RUN_ARGS, "--out", F + "/partial", "--json"]))
    add(Case("train --overwrite a finished run", 2,
             ["train", "--language", "parity", "--model", "mlp-ldru", "--recipe=default",
              "--steps", "5", *tiny, "--out", run, "--overwrite", "--json"], expect="ok", writes=("fixtures/run",), check=metric_lines("fixtures/run", 1)))
    add(Case("train --resume --overwrite", 2, [*RUN_ARGS, "--out", run, "--resume", "--overwrite"]))
    add(Case("train --resume a finished run", 2, [*RUN_ARGS, "--out", run, "--resume", "--json"],
             expect="ok", writes=("fixtures/run",), check=metric_lines("fixtures/run", None)))
    add(Case("train --resume with stale .tmp files", 2,
             [*RUN_ARGS, "--out", F + "/partial", "--resume", "--json"], expect="ok",
             setup=stale_tmp, writes=("fixtures/partial",), check=no_tmp("fixtures/partial")))
    add(Case("train --resume with a truncated metrics line", 2,
             [*RUN_ARGS, "--out", F + "/partial", "--resume", "--json"], expect="ok",
             setup=truncate_metrics, writes=("fixtures/partial",),
             check=metric_lines("fixtures/partial", 6)))
    add(Case("train --resume with a garbage metrics line", 2,
             [*RUN_ARGS, "--out", F + "/partial", "--resume", "--json"], expect="ok",
             setup=garbage_metrics, writes=("fixtures/partial",),
             check=metric_lines("fixtures/partial", 6)))
    add(Case("train --resume without a checkpoint", 2, [*RUN_ARGS, "--out", "fresh", "--resume"],
             writes=("work/fresh",)))
    add(Case("train --resume with another config", 2,
             ["train", "--language", "parity", "--model", "mlp-ldru", "--steps", "40", *tiny,
              "--out", F + "/partial", "--resume"]))
    add(Case("train into a folder of other files", 2, [*train, "--out", "mine", "--json"],
             expect="ok", setup=write("work/mine/notes.txt", "mine\n"), writes=("work/mine",),
             check=lambda r, p: None if (r / "work/mine/notes.txt").read_text() == "mine\n"
             else ("data lost", "notes.txt changed")))
    add(Case("two trains into one folder", 2,
             # recipe default: one attempt, so a whole run has 300 / 5 metric lines
             ["train", "--language", "parity", "--model", "mlp-ldru", "--recipe=default",
              "--steps", "300", *tiny, "--out", "race", "--json"], concurrent=True, writes=("work/race",), timeout=300))

    # ---- 3. bounded memory and time
    for tag in ("dyck-10000", "prefix-16-2", "prefix-1-10000", "cycle-10000", "modarith-64",
                "modprec-64", "fulltrans-10", "countmod-bigalpha", "cycle-100000",
                "cycle-100000-trivial"):
        add(Case(f"monoid {tag}", 3, ["monoid", f"{sp}/{tag}.toml", "--json"], expect="any"))
    add(Case("languages --max-elements 10^9", 3,
             ["languages", "--suite", "tomita", "--max-elements", "1000000000", "--json"],
             expect="any"))
    add(Case("evaluate --lengths 1:10000000", 3,
             ["evaluate", run, "--lengths", "1:10000000", "--json"], expect="any"))
    add(Case("evaluate --samples 10^8", 3, ["evaluate", run, "--samples", "100000000", "--json"],
             expect="any"))
    add(Case("coverage --test 1:10000000", 3, ["coverage", "parity", "--test", "1:10000000",
                                               "--json"], expect="any"))
    add(Case("coverage --exact --test 1:10000000", 3,
             ["coverage", "parity", "--exact", "--test", "1:10000000", "--json"], expect="any"))
    add(Case("coverage --n-train 10^9", 3, ["coverage", "parity", "--n-train", "1000000000",
                                            "--json"], expect="any"))
    add(Case("min-length --test 1:10000000", 3,
             ["min-length", "parity", "--test", "1:10000000", "--json"], expect="any"))
    add(Case("min-length --max-search 10^7", 3,
             ["min-length", "dyck-2", "--max-search", "10000000", "--json"], expect="any"))
    add(Case("train batch_size = 10^8", 3, ["train", "--config", f"{cf}/batch-huge.toml",
                                            "--json"], expect="any"))
    add(Case("train --train_lengths=1:10000000", 3, [*train, "--train_lengths=1:10000000",
                                                     "--json"], expect="any"))
    add(Case("probe --n-strings 10^8", 3, ["probe", run, "--n-strings", "100000000",
                                           "--no-umap", "--out", "p"], expect="any",
             writes=("work/p",)))
    add(Case("report addition-interleaved", 3, ["report", "addition-interleaved", *rep],
             expect="any", writes=("work/rep",)))
    add(Case("coverage --exact addition-interleaved", 3,
             ["coverage", "addition-interleaved", "--exact", "--json"], expect="any"))

    # ---- 5. validation of what used to be accepted silently
    add(Case("config key outside [train]", 5, ["train", "--config", f"{cf}/toplevel-outside-train.toml"]))
    add(Case("config unknown table", 5, ["train", "--config", f"{cf}/unknown-table.toml"]))
    add(Case("config eval_every = -1", 5, ["train", "--config", f"{cf}/eval-every-neg.toml"]))
    add(Case("config lr = inf", 5, ["train", "--config", f"{cf}/lr-inf.toml"]))
    add(Case("config lr = nan", 5, ["train", "--config", f"{cf}/lr-nan.toml"]))
    add(Case("config model_options d = 'abc'", 5, ["train", "--config", f"{cf}/d-string.toml"]))
    add(Case("config top-level keys only", 5, ["train", "--config", f"{cf}/top-only.toml",
                                               "--json"], expect="ok"))
    for tag in ("deep", "notutf8", "dir"):
        add(Case(f"config {tag}", 5, ["train", "--config", f"{cf}/{tag}.toml"]))
    add(Case("config missing file", 5, ["train", "--config", f"{cf}/nope.toml"]))
    add(Case("evaluate --samples 0", 5, ["evaluate", run, "--samples", "0", "--json"]))
    add(Case("evaluate --samples -3", 5, ["evaluate", run, "--samples", "-3", "--json"]))
    add(Case("evaluate --lengths 5:2", 5, ["evaluate", run, "--lengths", "5:2"]))
    ml = ["min-length", "parity", "--test", "41:60"]
    for tag, extra in [("--delta 2", ["--delta", "2", "--sample-lengths", "1:10"]),
                       ("--delta 0", ["--delta", "0", "--sample-lengths", "1:10"]),
                       ("--delta -1", ["--delta", "-1", "--sample-lengths", "1:10"]),
                       ("--r 0", ["--r", "0"]), ("--r -2", ["--r", "-2"]),
                       ("--max-search 0", ["--max-search", "0"]),
                       ("--delta without lengths", ["--delta", "0.1"]),
                       ("--suite nope", ["--suite", "nope"])]:
        add(Case(f"min-length {tag}", 5, [*ml, *extra]))
    add(Case("count-mod symbol not in alphabet", 5, ["monoid", f"{sp}/countmod-badsymbol.toml"]))
    for tag, extra in [("--n-train 0", ["--n-train", "0"]), ("--n-test -5", ["--n-test", "-5"]),
                       ("--train 5:2", ["--train", "5:2"]), ("--train -1:5", ["--train", "-1:5"]),
                       ("--within all-but:nope", ["--within", "all-but:nope"]),
                       ("--offsets 1,x", ["--exact", "--offsets", "1,x"])]:
        add(Case(f"coverage {tag}", 5, ["coverage", "parity", *extra]))
    for tag, extra in [("--n-strings 0", ["--n-strings", "0"]),
                       ("--n-triples -1", ["--n-triples", "-1"]),
                       ("--max-nodes 0", ["--max-nodes", "0"]),
                       ("--n-strings 1", ["--n-strings", "1"]),
                       ("--clusterers nope", ["--clusterers", "nope"])]:
        add(Case(f"probe {tag}", 5, ["probe", run, *extra, "--no-umap", "--out", "p"],
                 writes=("work/p",)))
    add(Case("monoid --max-elements 0", 5, ["monoid", "parity", "--max-elements", "0"]))
    add(Case("monoid --max-elements -1", 5, ["monoid", "parity", "--max-elements", "-1"]))
    add(Case("train --steps 0", 5, ["train", "--language", "parity", "--steps", "0"]))
    add(Case("train --threads=-1", 5, [*train, "--threads=-1"]))
    add(Case("train --device cuda (none here)", 5, [*train, "--device=cuda"]))
    add(Case("train --device cuda:abc", 5, [*train, "--device=cuda:abc"]))
    add(Case("train unknown language", 5, ["train", "--language", "nope", "--steps", "3"]))
    add(Case("train --offsets=random with pr-lstm", 5,
             ["train", "--language", "parity", "--model", "pr-lstm", "--offsets=random"]))
    add(Case("train positional garbage", 5, [*train, "garbage"]))

    # ---- 6. integrity
    for name in ("flipped", "nan", "inf"):
        add(Case(f"evaluate {name}.pt", 6, ["evaluate", f"{ck}/{name}.pt", "--json"]))
    add(Case("probe flipped.pt", 6, ["probe", f"{ck}/flipped.pt", "--no-umap", "--out", "p"],
             writes=("work/p",)))
    add(Case("report --checkpoint nan.pt", 6,
             ["report", "parity", "--checkpoint", f"{ck}/nan.pt", *rep], writes=("work/rep",)))

    # ---- 7. file modes honour the umask
    add(Case("modes: train", 7, [*train, "--out", "run", "--json"], expect="ok",
             writes=("work/run",), check=mode_check(*(f"work/run/{n}" for n in (
                 "checkpoint.pt", "metrics.jsonl", "config.json", "results.json")))))
    add(Case("modes: train under umask 077", 7, [*train, "--out", "run", "--json"], expect="ok",
             writes=("work/run",), umask=0o077,
             check=mode_check("work/run/checkpoint.pt", "work/run/config.json", mode=0o600)))
    add(Case("modes: report", 7, ["report", "parity", *rep], expect="ok", writes=("work/rep",),
             check=mode_check("work/rep/parity.html")))
    add(Case("modes: coverage", 7, ["coverage", "parity", "--out", "cov", "--json"],
             expect="ok", writes=("work/cov",),
             check=mode_check("work/cov/coverage.json", "work/cov/heatmaps.png")))
    add(Case("modes: sweep", 7, ["sweep", "sweep.toml", "--json"], expect="ok",
             setup=write("work/sweep.toml", sweep_text("runs/s")), writes=("work/runs",),
             check=mode_check("work/runs/s/results.csv", "work/runs/s/summary.md")))
    add(Case("modes: probe", 7, ["probe", run, "--n-strings", "20", "--no-umap", "--no-init",
                                 "--out", "p", "--json"], expect="ok", writes=("work/p",),
             check=mode_check("work/p/probe.json")))

    # ---- 0. other hostile inputs
    for tag in ("deep", "notutf8", "dir", "fifo", "huge-int"):
        add(Case(f"monoid spec {tag}", 0, ["monoid", f"{sp}/{tag}.toml"], timeout=30))
    add(Case("monoid /dev/zero", 0, ["monoid", "/dev/zero"], timeout=30))
    add(Case("monoid ../../etc/passwd", 0, ["monoid", "../../../../../../etc/passwd"]))
    add(Case("monoid with MONOIDLAB_LANGUAGES missing", 0, ["monoid", "parity"],
             env={"MONOIDLAB_LANGUAGES": "/nonexistent"}))
    add(Case("monoid --json is strict JSON", 0, ["monoid", "dyck-2", "--json"], expect="ok",
             check=json_stdout))
    add(Case("evaluate --json is strict JSON", 0, ["evaluate", run, "--json"], expect="ok",
             check=json_stdout))
    cases += third_round()
    cases += fourth_round()
    cases += fifth_round()
    return cases


# ------------------------------------------------------------------------------ third pass
API = """import sys
from monoidlab.errors import MonoidlabError
try:
{code}
except MonoidlabError as exc:
    print(f"monoidlab: error: {{exc}}", file=sys.stderr)
    sys.exit(2)
"""


def link(rel: str, target: str):
    """A symbolic link at ``rel`` to ``target`` (both sandbox-relative; the target may not exist)."""
    def setup(root: Path) -> None:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if p.is_symlink() or p.is_file():
            p.unlink()
        elif p.is_dir():
            shutil.rmtree(p)
        os.symlink(root / target, p)
    return setup


def fifo(rel: str):
    def setup(root: Path) -> None:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if p.exists():
            p.unlink()
        os.mkfifo(p)
    return setup


def copy_fixture(name: str, dest: str):
    def setup(root: Path) -> None:
        shutil.copytree(root / "fixtures" / name, root / dest, symlinks=True)
    return setup


def steps(*setups):
    def setup(root: Path) -> None:
        for s in setups:
            s(root)
    return setup


def victim(rel: str = "outside/victim"):
    """A folder of the user's, outside every run: a case that changes it loses data."""
    def setup(root: Path) -> None:
        (root / rel).mkdir(parents=True, exist_ok=True)
        for name in ("config.json", "probe.json", "results.md"):
            (root / rel / name).write_text("precious\n")
    return setup


def edit_checkpoint(rel: str, old: bytes, new: bytes):
    def setup(root: Path) -> None:
        p = root / rel
        data = p.read_bytes()
        assert old in data, f"{old!r} not in {rel}"
        p.write_bytes(data.replace(old, new))
    return setup


def resave_checkpoint(rel: str, **changes):
    """The checkpoint loaded and saved again with ``changes``, its checksums kept as they were."""
    def setup(root: Path) -> None:
        import torch

        p = root / rel
        ck = torch.load(p, weights_only=True)
        torch.save({**ck, **changes}, p)
    return setup


def title_has(rel: str, *words: str):
    def check(root: Path, proc):
        page = root / rel
        if not page.is_file():
            return "wrong", f"{rel} not written"
        h1 = re.search(r"<h1>(.*?)</h1>", page.read_text())
        title = h1.group(1) if h1 else ""
        return None if all(w in title for w in words) else ("wrong", f"title {title!r}")
    return check


def stdout_has(text: str):
    def check(root: Path, proc):
        return None if text in proc.stdout else ("wrong", f"stdout lacks {text!r}")
    return check


def third_round() -> list[Case]:
    """The third hostile pass: links and FIFOs inside run folders (31), edited or foreign
    checkpoints (32), reports of one language showing another's model (33), cached arrays
    (34), public arguments at the API (35), failed starts (36), sweeps meeting garbage (37)."""
    F = "{S}/fixtures"
    run, es, dyck = F + "/run", F + "/run-es", F + "/run-dyck"
    tiny = TINY
    train = ["train", "--language", "parity", "--model", "mlp-ldru", "--steps", "3", *tiny]
    sw = lambda extra="": write("work/sweep.toml", sweep_text("runs/s", extra))  # noqa: E731
    sweep = ["sweep", "sweep.toml", "--json"]
    rid = "work/runs/s/parity__mlp-ldru__s0"
    cases: list[Case] = []
    add = cases.append

    # ---- 31. links and special files inside run and output folders
    add(Case("sweep run folder is a link to the user's folder", 31, sweep,
             setup=steps(sw(), victim(), link(rid, "outside/victim")), writes=("work/runs",)))
    add(Case("sweep run folder is a dangling link", 31, sweep,
             setup=steps(sw(), link(rid, "outside/new-folder")), writes=("work/runs",)))
    add(Case("probe default folder is a link (a downloaded run)", 31,
             ["probe", "dl", "--n-strings", "20", "--no-umap", "--no-init"],
             setup=steps(copy_fixture("run", "work/dl"), victim("outside/victim3"),
                         link("work/dl/probe", "outside/victim3")), writes=("work/dl",)))
    for name in ("metrics.jsonl", "config.json", "results.json", "checkpoint.pt", "best.pt"):
        add(Case(f"new run, dangling {name} link", 31, [*train, "--out", "r"],
                 setup=link(f"work/r/{name}", "outside/made-by-monoidlab"), writes=("work/r",)))
    add(Case("new run, --overwrite, config.json links to a user's file", 31,
             [*train, "--out", "r", "--overwrite"],
             setup=link("work/r/config.json", "outside/keep.txt"), writes=("work/r",)))
    add(Case("resumed run, metrics.jsonl links outside", 31,
             [*RUN_ARGS, "--out", "p", "--resume"],
             setup=steps(copy_fixture("partial", "work/p"),
                         link("work/p/metrics.jsonl", "outside/keep.txt")), writes=("work/p",)))
    add(Case("resumed run, tb/ links outside", 31, [*RUN_ARGS, "--out", "p", "--resume"],
             setup=steps(copy_fixture("partial", "work/p"), victim(),
                         link("work/p/tb", "outside/victim")), writes=("work/p",)))
    add(Case("--resume with a FIFO for metrics.jsonl", 31, [*RUN_ARGS, "--out", "p", "--resume"],
             setup=steps(copy_fixture("partial", "work/p"), fifo("work/p/metrics.jsonl")),
             writes=("work/p",), timeout=60))
    add(Case("--resume with a FIFO for config.json", 31, ["train", "--resume", "--out", "p"],
             setup=steps(copy_fixture("partial", "work/p"), fifo("work/p/config.json")),
             writes=("work/p",), timeout=60))
    add(Case("evaluate a FIFO checkpoint", 31, ["evaluate", "f/checkpoint.pt"],
             setup=fifo("work/f/checkpoint.pt"), timeout=60))
    add(Case("evaluate a run whose checkpoint.pt is a FIFO", 31, ["evaluate", "f"],
             setup=fifo("work/f/checkpoint.pt"), timeout=60))
    add(Case("sweep run folder holds a FIFO results.json", 31, sweep,
             setup=steps(sw(), fifo(f"{rid}/results.json")), writes=("work/runs",), timeout=60))
    add(Case("sweep --write-docs through a linked docs folder", 31,
             ["sweep", "proj/configs/sweep.toml", "--write-docs", "--json"],
             setup=steps(write("work/proj/configs/sweep.toml", sweep_text(
                 "runs/s", 'results_md = "proj/docs/results.md"')), victim("outside/docs"),
                 link("work/proj/docs", "outside/docs")), writes=("work/runs",)))
    add(Case("sweep results_md is a link inside docs", 31,
             ["sweep", "proj/configs/sweep.toml", "--write-docs", "--json"],
             setup=steps(write("work/proj/configs/sweep.toml", sweep_text(
                 "runs/s", 'results_md = "proj/docs/results.md"')),
                 write("work/proj/docs/mine.txt", "mine\n"),
                 link("work/proj/docs/results.md", "work/proj/docs/mine.txt")),
             writes=("work/runs",)))
    add(Case("report --train-model run folder is a link", 31,
             ["report", "parity", "--train-model", "--out", "rep", "--no-probe", "--no-umap",
              "--test", "41:42"],
             setup=steps(victim(), link("work/rep/parity-mlp-ldru", "outside/victim")),
             writes=("work/rep",)))
    add(Case("report file is a link", 31,
             ["report", "parity", "--out", "rep", "--test", "41:42", "--no-probe"],
             setup=link("work/rep/parity.html", "outside/keep.txt"), writes=("work/rep",)))
    add(Case("coverage --out folder given as a link (the user's choice)", 31,
             ["coverage", "parity", "--test", "41:42", "--out", "mine", "--json"], expect="ok",
             setup=steps(lambda r: (r / "outside" / "figs").mkdir(),
                         link("work/mine", "outside/figs")), writes=("outside/figs",)))

    # ---- 32. the whole checkpoint is checked
    add(Case("checkpoint.pt with 'parity' edited to 'dyck-1'", 32, ["evaluate", "e"],
             setup=steps(copy_fixture("run", "work/e"),
                         edit_checkpoint("work/e/checkpoint.pt", b"parity", b"dyck-1"))))
    add(Case("checkpoint.pt with another step, checksums kept", 32, ["evaluate", "e"],
             setup=steps(copy_fixture("run", "work/e"),
                         resave_checkpoint("work/e/checkpoint.pt", step=7))))
    add(Case("checkpoint.pt with an extra entry", 32, ["evaluate", "e"],
             setup=steps(copy_fixture("run", "work/e"),
                         resave_checkpoint("work/e/checkpoint.pt", extra="x"))))
    add(Case("best.pt copied from another language's run", 32, ["evaluate", "e"],
             setup=steps(copy_fixture("run-es", "work/e"),
                         lambda r: shutil.copy(r / "fixtures/run-dyck/best.pt",
                                               r / "work/e/best.pt"))))
    add(Case("best.pt copied from another run, --resume", 32,
             [*RUN_ARGS, "--out", "e", "--resume", "--eval_every=10", "--early_stop=5",
              "--val_lengths=41:42", "--val_samples=4"],
             setup=steps(copy_fixture("run-es", "work/e"),
                         lambda r: (r / "work/e/results.json").unlink(),
                         lambda r: shutil.copy(r / "fixtures/run-dyck/best.pt",
                                               r / "work/e/best.pt")), writes=("work/e",)))
    add(Case("probe a run whose best.pt is foreign", 32,
             ["probe", "e", "--n-strings", "20", "--no-umap", "--out", "pp"],
             setup=steps(copy_fixture("run-es", "work/e"),
                         lambda r: shutil.copy(r / "fixtures/run-dyck/best.pt",
                                               r / "work/e/best.pt")), writes=("work/pp",)))
    add(Case("evaluate a run with its own best.pt", 32, ["evaluate", es, "--json"], expect="ok",
             check=json_stdout))

    # ---- 33. a report and its checkpoint agree
    rep = ["--out", "rep", "--test", "41:42", "--no-probe", "--no-umap"]
    add(Case("report parity --checkpoint a dyck-2 run", 33,
             ["report", "parity", "--checkpoint", dyck, *rep]))
    add(Case("report dyck-2 --checkpoint a parity run", 33,
             ["report", "dyck-2", "--checkpoint", run, *rep]))
    add(Case("report parity --checkpoint dyck-2 --other-language", 33,
             ["report", "parity", "--checkpoint", dyck, "--other-language", *rep, "--json"],
             expect="ok", writes=("work/rep",),
             check=title_has("work/rep/parity.html", "parity", "dyck-2")))
    add(Case("report parity.toml copy --checkpoint a parity run", 33,
             ["report", f"{F}/specs/parity2.toml", "--checkpoint", run, *rep, "--json"],
             expect="ok", writes=("work/rep",)))

    # ---- 34. cached results cannot be corrupted
    corrupt = [
        ("monoid outputs", "m.outputs[:] = 0", "m2.outputs.tolist() == before.outputs"),
        ("monoid words", "m.words[1] = 'HACKED'", "m2.words[1] != 'HACKED'"),
        ("monoid idempotents", "m.idempotents[0] = 1", "m2.idempotents.tolist() == "
                                                      "before.idempotents"),
        ("monoid table", "m.table[0, 0] = 1", "m2.table.tolist() == before.table"),
        ("automaton delta", "L.delta[0, 0] = 1", "L2.delta.tolist() == before.delta"),
        ("batch elements", "b.elements()[:] = 0", "b.elements().tolist() == before.el"),
    ]
    for tag, attack, holds in corrupt:
        code = f"""
    import types
    import monoidlab as ml
    L = ml.load_language("dyck-2")
    m = L.monoid()
    b = ml.sample(L, [4, 5], 8, seed=0)
    before = types.SimpleNamespace(outputs=m.outputs.tolist(), idempotents=m.idempotents.tolist(),
                                   table=m.table.tolist(), delta=L.delta.tolist(),
                                   el=b.elements().tolist())
    try:
        {attack}
    except (ValueError, TypeError) as exc:  # read-only array, immutable tuple
        print("refused:", type(exc).__name__)
    L2 = ml.load_language("dyck-2")
    m2 = L2.monoid()
    print("intact" if {holds} else "CORRUPTED")"""
        add(Case(f"API: {tag} cannot be corrupted", 34, [code], api=True, expect="ok",
                 check=stdout_has("intact")))
    for tag, call in [("multiply(-1, 0)", "m.multiply(-1, 0)"),
                      ("multiply(0.7, 1.9)", "m.multiply(0.7, 1.9)"),
                      ("multiply(|M|, 0): one past the last element", "m.multiply(m.size, 0)"),
                      ("multiply(True, 0)", "m.multiply(True, 0)")]:
        add(Case(f"API: {tag}", 34, [f"""
    import monoidlab as ml
    m = ml.load_language("parity").monoid()
    print({call})"""], api=True))
    add(Case("API: Batch.concat across languages", 34, ["""
    import monoidlab as ml
    a = ml.sample(ml.load_language("parity"), [4], 4, seed=0)
    b = ml.sample(ml.load_language("dyck-2"), [4], 4, seed=0)
    print(ml.Batch.concat([a, b]).automaton.name)"""], api=True))

    # ---- 35. every public argument checked
    for tag, extra in [("--threshold nan", ["--threshold", "nan"]),
                       ("--threshold -1", ["--threshold", "-1"]),
                       ("--threshold 2", ["--threshold", "2"]),
                       ("--threads 100000", ["--threads", "100000"]),
                       ("--test-seed -1", ["--test-seed", "-1"]),
                       ("--test-seed 2^64", ["--test-seed", str(2**64)])]:
        add(Case(f"evaluate {tag}", 35, ["evaluate", run, *extra]))
    for tag, extra in [("--threads=100000", ["--threads=100000"]), ("--seed -1", ["--seed", "-1"]),
                       ("--seed 10^20", ["--seed", "99999999999999999999"]),
                       ("--solved_threshold=nan", ["--solved_threshold=nan"])]:
        add(Case(f"train {tag}", 35, [*train, *extra, "--out", "r"],
                 check=not_exists("work/r")))
    add(Case("sweep seeds = [-1]", 35, sweep,
             setup=write("work/sweep.toml", sweep_text("runs/s").replace("seeds = [0]",
                                                                         "seeds = [-1]"))))
    add(Case("coverage --seed -1", 35, ["coverage", "parity", "--test", "41:42", "--seed", "-1",
                                        "--out", "c"]))
    add(Case("probe --seed -1", 35, ["probe", run, "--seed", "-1", "--no-umap", "--out", "pp"]))
    for tag, call in [
            ("sample by name", 'print(len(ml.sample("parity", [3], 3, seed=0)))'),
            ("sample seed=-1", 'ml.sample(L, [3], 3, seed=-1)'),
            ("sample seed='abc'", 'ml.sample(L, [3], 3, seed="abc")'),
            ("sample seed=10^20", 'ml.sample(L, [3], 3, seed=10**20)'),
            ("sample n=10^9", 'ml.sample(L, range(1, 41), 10**9)'),
            ("sample length 10^9", 'ml.sample(L, [10**9], 1)'),
            ("sample n=2.5", 'ml.sample(L, [3], 2.5)'),
            ("sample of a number", 'ml.sample(3, [3], 3)'),
            ("exact_coverage 1..10^6", 'ml.exact_coverage(L, range(1, 10**6))'),
            ("length_batches seed=-1",
             'ml.length_batches(L, range(1, 41), 8, seed=-1)')]:
        ok = tag == "sample by name"
        add(Case(f"API: {tag}", 35, [f"""
    import monoidlab as ml
    L = ml.load_language("parity")
    {call}"""], api=True, expect="ok" if ok else "error", max_seconds=20,
                 check=stdout_has("3") if ok else None))
    math_spec = 'name = "$\\frac{$"\ndescription = "$x_1^2$"\nfamily = "parity"\n'
    add(Case("coverage of a language named with mathtext", 35,
             ["coverage", "math.toml", "--test", "41:42", "--out", "c", "--json"], expect="ok",
             setup=write("work/math.toml", math_spec), writes=("work/c",)))
    add(Case("report of a language named with mathtext", 35,
             ["report", "math.toml", "--test", "41:42", "--out", "rep", "--no-probe", "--json"],
             expect="ok", setup=write("work/math.toml", math_spec), writes=("work/rep",)))

    # ---- 36. failed starts leave nothing that blocks the retry
    add(Case("train --seed -1, then nothing left", 36, [*train, "--seed", "-1", "--out", "r"],
             check=not_exists("work/r")))
    add(Case("train into an empty folder with a bad config", 36,
             [*train, "--lr=nan", "--out", "r"], setup=lambda r: (r / "work/r").mkdir(),
             writes=("work/r",), check=lambda r, p: ("wrong", "files left") if any(
                 (r / "work/r").iterdir()) else None))

    # ---- 37. sweeps meet garbage
    for tag, text in [("garbage{", "garbage{"), ("[1]", "[1]"),
                      ('{"evaluation": {}}', '{"evaluation": {}}'),
                      ("evaluation of the wrong shape",
                       '{"solved": true, "verdict": "x", "paper_score": 1, "min_accuracy": {}, '
                       '"train_seconds": 1, "steps": 2, "device": "cpu", '
                       '"evaluation": {"kinds": 5}}')]:
        add(Case(f"sweep meets a results.json {tag}", 37, sweep,
                 setup=steps(sw(), write(f"{rid}/results.json", text)), writes=("work/runs",)))
    add(Case("sweep meets a config.json that is not JSON", 37, sweep,
             setup=steps(sw(), write(f"{rid}/results.json", "{}"),
                         write(f"{rid}/config.json", "garbage{")), writes=("work/runs",)))
    for tag, paper in [("scores = 5", "scores = 5"),
                       ("scores of text", 'scores = { mlp-ldru = { parity = "high" } }'),
                       ("solved_at text", 'solved_at = "x"'), ("unknown key", "bogus = 1")]:
        add(Case(f"sweep [paper] {tag}", 37, sweep, max_seconds=15,
                 setup=write("work/sweep.toml", sweep_text("runs/s") + f"[paper]\n{paper}\n"),
                 check=not_exists("work/runs/s/parity__mlp-ldru__s0")))
    return cases


def fourth_round() -> list[Case]:
    """The fourth hostile pass: the user's files replaced (41), verdicts a trivial model also
    reaches and misnamed causes (42), options that would exhaust the machine (43), empty or
    degenerate inputs (44), removed keywords and options (46)."""
    run = "{S}/fixtures/run"
    cases: list[Case] = []
    add = cases.append
    # ---- 41. a command that writes a file the user owns
    add(Case("text-sample over the user's train.csv", 41,
             ["text-sample", "data", "--layout", "ag_news", "--rows", "10"],
             setup=write("work/data/train.csv", "my data\n"), writes=("work/data",)))
    # ---- 42. verdicts and messages
    add(Case("API: load a run on cuda without CUDA names the device", 42, [f"""
    import monoidlab as ml
    ml.extract_automaton("{run}", device="cuda")"""], api=True,
             check=lambda r, p: None if "CUDA is not available" in p.stderr
             else ("wrong", "the error does not name the missing device")))
    add(Case("API: a one-class test set is never solved", 42, ["""
    from monoidlab.evaluation import Evaluation
    ev = Evaluation("t", ("task",), 0.99, 1, accuracy={"task": {3: 1.0}},
                    baselines={"majority": {"task": {3: 1.0}}})
    print("SOLVED" if ev.solved else "not solved")"""], api=True, expect="ok",
             check=stdout_has("not solved")))
    # ---- 43. option sizes bounded by the memory they imply, before any allocation
    for model, option in (("bbt-grc", "beam=100000"), ("stack-rnn", "stack_size=100000000"),
                          ("tape-rnn", "memory_size=100000000"),
                          ("transformer", "n_layers=100000000"),
                          ("pr-lstm", "hidden=10000000")):
        add(Case(f"train {model} --model_options.{option}", 43,
                 ["train", "--language", "parity", "--model", model, "--steps", "1",
                  f"--model_options.{option}", "--out", "r"], writes=("work/r",),
                 max_seconds=30))
    # ---- 44. empty and degenerate inputs
    add(Case("API: coverage_gap with an empty test batch", 44, ["""
    import monoidlab as ml
    L = ml.load_language("dyck-2")
    tr = ml.sample(L, range(2, 9), 30, seed=0); te = ml.sample(L, [20], 0, seed=1)
    ml.coverage_gap(L, tr, te).heatmap()"""], api=True))
    add(Case("API: extract_monoid(lengths='0:0')", 44, [f"""
    import monoidlab as ml
    ml.extract_monoid("{run}", lengths="0:0")"""], api=True))
    # ---- 46. removed keywords and options
    add(Case("API: exact_coverage(offset_buffer=2)", 46, ["""
    import monoidlab as ml
    ml.exact_coverage("parity", [3], offset_buffer=2)"""], api=True,
             check=lambda r, p: None if "was removed; use offsets=" in p.stderr
             else ("wrong", "the error does not name the replacement")))
    add(Case("coverage --train-offsets random", 46,
             ["coverage", "parity", "--train-offsets", "random"],
             check=lambda r, p: None if "--train-offsets is now --offsets" in p.stderr
             else ("wrong", "the error does not name the new option")))
    add(Case("probe --extrakt (a typo)", 46, ["probe", run, "--extrakt"],
             check=lambda r, p: None if "did you mean '--extract'" in p.stderr
             else ("wrong", "no suggestion")))
    return cases


def kept(rel: str, text: str):
    """The user's file at ``rel`` still holds ``text`` byte for byte."""
    def check(root: Path, proc) -> tuple[str, str] | None:
        p = root / rel
        if not p.is_file() or p.read_bytes() != text.encode():
            return "data lost", f"{rel} was replaced"
        return None
    return check


def fifth_round() -> list[Case]:
    """The fourth pass's classes, walked over every instance: every command that writes a
    file the user owns (41), public functions given bad arguments (45), more empty inputs (44)."""
    run = "{S}/fixtures/run"
    mine = "the user's own file\n"
    cases: list[Case] = []
    add = cases.append
    # ---- 41. every command that writes into the user's folder
    for name, argv, rel in (
            ("coverage --out over the user's heatmaps.png",
             ["coverage", "parity", "--train", "1:6", "--test", "7:9", "--out", "c"],
             "c/heatmaps.png"),
            ("probe --out over the user's probe.json",
             ["probe", run, "--n-strings", "12", "--n-triples", "12", "--no-umap", "--out", "p"],
             "p/probe.json"),
            ("report --out over the user's parity.html",
             ["report", "parity", "--test", "41:42", "--no-probe", "--out", "rep"],
             "rep/parity.html"),
            ("demo --out over the user's dyck-2.json",
             ["demo", "--out", "rep"], "rep/dyck-2.json")):
        add(Case(name, 41, argv, setup=write(f"work/{rel}", mine),
                 writes=(f"work/{rel.split('/')[0]}",), check=kept(f"work/{rel}", mine),
                 max_seconds=30))
    # ---- 45. the public API's arguments (tests/api_walk.py walks all of them)
    for label, code in (
            ("viz.shift_bars(top=2.5)", """
    import monoidlab as ml
    from monoidlab.viz import shift_bars
    L = ml.load_language("parity")
    shift_bars(ml.coverage_gap(L, ml.sample(L, [3], 8), ml.sample(L, [5], 8)), top=2.5)"""),
            ("evaluation.kind_batch(L='3')", """
    import numpy as np, monoidlab as ml
    from monoidlab.evaluation import kind_batch
    kind_batch(ml.load_language("parity"), "paper", "3", 4, np.random.default_rng(0))"""),
            ("models.build_model(vocab_size=-1)", """
    from monoidlab.models import build_model
    build_model("mlp-ldru", -1, 2)"""),
            ("tasks.get_task('odds_first', vocab_size=2.5)", """
    from monoidlab.tasks import get_task
    get_task("odds_first", vocab_size=2.5)"""),
            ("tasks.evaluate_listops(a 2-D array)", """
    import numpy as np
    from monoidlab.tasks import evaluate_listops
    evaluate_listops(np.array([[0, 1], [2, 3]]))"""),
            ("probing.drift(seed=2.5)", f"""
    from monoidlab.probing import drift
    drift("{run}", seed=2.5)"""),
            ("probing.ClusterAgreement(seed=-1)", """
    from monoidlab.probing import ClusterAgreement
    ClusterAgreement(seed=-1)"""),
            ("minimise(start=-1)", """
    import monoidlab as ml
    ml.minimise([[1, 0], [0, 1]], -1, [0, 1])"""),
            ("build_report(progress='no')", """
    from monoidlab.report import build_report
    build_report("parity", "rep", progress="no", probe=False)"""),
            ("training.train(cfg, resume=None)", """
    from monoidlab.training import config_from_dict, train
    train(config_from_dict({"language": "parity", "steps": 2}), "r", resume=None)"""),
            ("MinLength record with a string length", """
    from monoidlab import MinLength
    MinLength("parity", "balanced", "5:6", 4, "3", 0)""")):
        add(Case(f"API: {label}", 45, [code], api=True, writes=("work/rep", "work/r"),
                 max_seconds=30))
    # ---- 44. more empty inputs
    add(Case("API: evaluate_kinds on no lengths", 44, [f"""
    from monoidlab.training import evaluate_kinds, load_checkpoint
    model, cfg, problem, _ = load_checkpoint("{run}")
    evaluate_kinds(model, problem, [])"""], api=True))
    add(Case("API: node_embeddings of no strings", 44, [f"""
    import numpy as np, monoidlab as ml
    from monoidlab.probing import node_embeddings
    from monoidlab.training import load_checkpoint
    model, cfg, problem, _ = load_checkpoint("{run}")
    node_embeddings(model, ml.load_language("parity"), np.zeros((0, 0), int), np.zeros(0, int))
    """], api=True, expect="any"))
    return cases


# ------------------------------------------------------------------------------ running
def limits(case: Case):
    def pre():
        os.setsid()
        os.umask(case.umask)
        resource.setrlimit(resource.RLIMIT_AS, (MEM_CAP, MEM_CAP))
        if case.fsize:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes fail with EFBIG instead
            resource.setrlimit(resource.RLIMIT_FSIZE, (case.fsize, case.fsize))
    return pre


def run_case(case: Case, master: Path, py: list[str], env: dict, timeout: float) -> dict:
    root = Path(tempfile.mkdtemp(prefix="badin-"))
    try:
        shutil.copytree(master, root, dirs_exist_ok=True, symlinks=True,
                        ignore_dangling_symlinks=True, copy_function=_copy)
        spec = root / "fixtures" / "specs" / "name-absolute.toml"  # the case's own sandbox path
        spec.write_text(spec.read_text().replace("{S}", str(root)))
        if case.setup:
            case.setup(root)
        make_immutable(root / "ro")
        if (root / "work" / "ro").exists():
            make_immutable(root / "work" / "ro")
        before = files(root)
        argv = [a.replace("{S}", str(root)) for a in case.argv]
        e = {**env, **(case.env or {})}
        t0 = time.time()
        limit = case.timeout or timeout
        if case.concurrent:
            proc, second = _race(argv, py, root, e, case, limit)
        else:
            proc, second = _run(argv, py, root, e, case, limit), None
        wall = time.time() - t0
        after = files(root)
        outcome, why = classify(case, proc, second, before, after, root, wall)
        line = _error_line(proc.stderr if proc else "") if proc else ""
        return {"name": case.name, "item": case.item, "outcome": outcome, "why": why,
                "seconds": round(wall, 1), "message": line}
    finally:
        undo_immutable(root)
        shutil.rmtree(root, ignore_errors=True)


def _copy(src, dst):
    if stat.S_ISFIFO(os.lstat(src).st_mode):
        os.mkfifo(dst)
        return dst
    return shutil.copy2(src, dst)


def _run(argv, py, root, env, case, limit):
    if case.api:  # Python code: a MonoidlabError is the one-line error, anything else a bug
        code = textwrap.indent(textwrap.dedent(argv[0]).strip("\n"), "    ")
        cmd = [py[0], "-c", API.format(code=code)]
    else:
        cmd = [*py, *argv]
    try:
        p = subprocess.Popen(cmd, cwd=root / "work", env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             preexec_fn=limits(case))
        out, err = p.communicate(timeout=limit)
        return subprocess.CompletedProcess(argv, p.returncode, out, err)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None


def _race(argv, py, root, env, case, limit):
    """The first process starts; the second starts once the run folder exists."""
    first = subprocess.Popen([*py, *argv], cwd=root / "work", env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             preexec_fn=limits(case))
    folder = root / "work" / argv[argv.index("--out") + 1]
    t0 = time.time()
    while not folder.exists() and time.time() - t0 < 60 and first.poll() is None:
        time.sleep(0.05)
    second = _run(argv, py, root, env, case, limit)
    try:
        out, err = first.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(first.pid, signal.SIGKILL)
        return None, second
    return subprocess.CompletedProcess(argv, first.returncode, out, err), second


def _error_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.startswith("monoidlab: error:")]
    return lines[-1][:160] if lines else ""


def _one_line_error(p) -> bool:
    if p.returncode != 2 or "Traceback (most recent call last)" in p.stderr:
        return False
    return len([ln for ln in p.stderr.splitlines() if ln.startswith("monoidlab: error:")]) == 1


def classify(case, proc, second, before, after, root, wall):
    if case.concurrent:
        if proc is None or second is None:
            return "hang", "no answer"
        for p in (proc, second):
            if "Traceback (most recent call last)" in p.stderr:
                return "traceback", p.stderr.strip().splitlines()[-1][:120]
        if proc.returncode == 0 and second.returncode == 0:
            return "data lost", "both processes trained into one folder and exited 0"
        if not (proc.returncode == 0 and _one_line_error(second)):
            return "wrong", f"exit statuses {proc.returncode}, {second.returncode}"
        return metric_lines("work/race", 60)(root, proc) and ("data lost", "run damaged") \
            or ("ok", "the second process was refused: " + _error_line(second.stderr)[:80])
    if proc is None:
        return "hang", f"no answer in {case.timeout or 'the timeout'} s"
    err = proc.stderr
    if "Traceback (most recent call last)" in err:
        return "traceback", err.strip().splitlines()[-1][:120]
    if proc.returncode < 0:
        return "traceback", f"killed by signal {-proc.returncode}"
    changed = outside_changes(before, after, case.writes)
    if changed and changed[0] == "data lost":
        return changed
    if case.check:
        bad = case.check(root, proc)
        if bad and bad[0] == "data lost":
            return bad
    if changed:
        return changed
    if proc.returncode == 0:
        if case.expect == "error":
            return "wrong", "accepted (exit 0) what it should refuse"
        if case.check:
            bad = case.check(root, proc)
            if bad:
                return bad
        return "ok", ""
    if _one_line_error(proc):
        line = _error_line(err)
        if "out of memory" in line:
            return "oom", line
        if case.max_seconds and wall > case.max_seconds:
            return "wrong", f"refused only after {wall:.0f} s of work"
        if case.check and case.expect == "error":
            bad = case.check(root, proc)
            if bad:
                return bad
        return "clear error", "" if case.expect != "ok" else "(refused a valid input)"
    return "wrong", f"exit {proc.returncode}, stderr: {err.strip()[-120:]!r}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repo", default=str(HERE), help="checkout whose monoidlab is tried")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds before 'hang'")
    ap.add_argument("--quick", action="store_true", help="skip the slow cases")
    ap.add_argument("--only", default=None, help="cases whose name contains this text")
    ap.add_argument("--items", default=None, help="comma list of items (e.g. 31,32,33)")
    ap.add_argument("--list", action="store_true", help="print the corpus and exit")
    ap.add_argument("--json", default=None, help="also write the per-case results here")
    args = ap.parse_args()
    items = {int(i) for i in args.items.split(",")} if args.items else None
    cases = [c for c in corpus() if not (args.quick and c.slow)
             and (args.only is None or args.only in c.name)
             and (items is None or c.item in items)]
    if args.list:
        for c in cases:
            print(f"[{c.item}] {c.name}: monoidlab {' '.join(c.argv)}  (expect {c.expect})")
        print(f"{len(cases)} cases")
        return
    repo = Path(args.repo).resolve()
    env = {**os.environ, "PYTHONPATH": str(repo), "OMP_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1", "MPLBACKEND": "Agg", "COLUMNS": "200"}
    env.pop("MONOIDLAB_DEBUG", None)
    py = [sys.executable, "-m", "monoidlab"]
    master = Path(tempfile.mkdtemp(prefix="badin-master-"))
    try:
        t0 = time.time()
        build_master(master, py, env)
        print(f"repo {repo} (commit {_commit(repo)}); {len(cases)} cases; timeout "
              f"{args.timeout:.0f} s; memory cap {MEM_CAP >> 30} GiB; fixtures in "
              f"{time.time() - t0:.0f} s", flush=True)
        results = []
        for i, case in enumerate(cases, 1):
            r = run_case(case, master, py, env, args.timeout)
            results.append(r)
            print(f"{i:3d} [{r['item']}] {r['outcome']:<11} {r['seconds']:6.1f}s  {r['name']}"
                  + (f"  -- {r['why']}" if r["why"] else "")
                  + (f"  | {r['message'][17:]}" if r["message"] and r["outcome"] != "ok" else ""),
                  flush=True)
    finally:
        shutil.rmtree(master, ignore_errors=True)
    tally = Counter(r["outcome"] for r in results)
    print("\ntotals over", len(results), "inputs:",
          ", ".join(f"{k} {tally.get(k, 0)}" for k in OUTCOMES))
    by_item = {}
    for r in results:
        by_item.setdefault(r["item"], Counter())[r["outcome"]] += 1
    for item in sorted(by_item):
        print(f"  item {item}: " + ", ".join(f"{k} {v}" for k, v in sorted(by_item[item].items())))
    if args.json:
        Path(args.json).write_text(json.dumps({"repo": str(repo), "commit": _commit(repo),
                                               "totals": dict(tally), "cases": results}, indent=1))


def _commit(repo: Path) -> str:
    r = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
                       capture_output=True, text=True)
    return r.stdout.strip() or "?"


if __name__ == "__main__":
    main()
