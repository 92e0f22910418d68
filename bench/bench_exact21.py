"""The 21 regular tasks with the depth-exact models: strict verdict, baselines, certificate.

Usage: python bench/bench_exact21.py [--config configs/exact21-snap-cpu.toml ...] [--train]
       [--write-docs]

For each config (default: the snapped MLP-LDRU's, the transformation tree model's and the
snapped PR-LSTM's), reads the sweep's run folders (``--train`` first trains or resumes every run
that is neither finished in its folder nor recorded in the ledger, one at a time; run it once
per config on one core each), certifies each finished run's tested weights (``monoidlab
certify``: cached in the run folder as certificate.json), records every finished row in
docs/data/exact21.jsonl (so the table outlives the run folders) and prints one table: per task and model, the strict verdict with each kind's
minimum beside the majority-class / count-only baselines, the certificate's verdict, the
training time; beside them the plain MLP-LDRU's verdict from docs/results.md (section
"ldru21 cpu"). ``--write-docs`` puts the table in docs/results.md (section "exact21").
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LEDGER = ROOT / "docs" / "data" / "exact21.jsonl"
#: the first recipe of each depth-exact model: their rows are keyed by the sweep id alone
FIRST = ("configs/exact21-snap-cpu.toml", "configs/exact21-transform-cpu.toml",
         "configs/exact21-prlstm-snap-cpu.toml")
CONFIGS = (*FIRST, "configs/exact21-transform-x2-cpu.toml")
GOAL = 18  # tasks certified correct at every length by at least one depth-exact model
BUDGET_S = 15 * 60  # each within 15 minutes of one core


def read_ledger(path: Path | None = None) -> dict[str, dict]:
    """``{run id: row}``, the last row of each run (default: :data:`LEDGER`)."""
    path = LEDGER if path is None else path
    if not path.is_file():
        return {}
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {r["id"]: r for r in rows}


def certificate_of(run: Path) -> dict:
    """The certificate of a finished run (computed once, then read from certificate.json)."""
    from monoidlab._util import atomic_write_json
    from monoidlab.probing.certify import certify

    cached = run / "certificate.json"
    if cached.is_file():
        return json.loads(cached.read_text())
    from monoidlab.errors import MonoidlabError

    t0 = time.process_time()
    try:
        c = certify(run).to_dict()
    except MonoidlabError as exc:  # a budget of the certificate: recorded as not certified
        c = {"subject": "model", "correct": False,
             "verdict": f"not certified: {str(exc).splitlines()[0]}"}
    c["seconds"] = round(time.process_time() - t0, 2)
    atomic_write_json(cached, c)
    return c


def train_pending(config: str, reverse: bool = False) -> None:
    """Train (or resume) every run of the sweep that is neither finished in its folder nor
    recorded in the ledger: a later session, whose run folders are gone, trains only what is
    left. ``reverse``: from the last run back, so that a second process on the other core
    meets the first in the middle (a run another process is training is skipped: its folder
    is locked)."""
    from monoidlab.errors import MonoidlabError
    from monoidlab.training import train
    from monoidlab.training.sweep import load_sweep

    sweep = load_sweep(config)
    for r in reversed(sweep["runs"]) if reverse else sweep["runs"]:
        folder = Path(sweep["out"]) / r["id"]
        if ledger_id(config, r["id"]) in read_ledger() or (folder / "results.json").is_file():
            continue
        print(f"training {r['id']}", flush=True)
        try:
            train(r["config"], folder, resume=(folder / "checkpoint.pt").is_file(),
                  progress=False)
        except MonoidlabError as exc:  # locked by the other process, or refused: say so
            print(f"  skipped {r['id']}: {str(exc).splitlines()[0]}", flush=True)
            continue
        collect([config])  # record the finished row at once


def ledger_id(config: str, run_id: str) -> str:
    """A run's key in the ledger: its sweep id, prefixed by the config's name for a config
    that reruns a model of the first three (a second recipe of the same model).

    >>> ledger_id("configs/exact21-snap-cpu.toml", "parity__mlp-ldru-snap__s0")
    'parity__mlp-ldru-snap__s0'
    >>> ledger_id("configs/exact21-transform-x2-cpu.toml", "parity__transform-tree__s0")
    'exact21-transform-x2-cpu:parity__transform-tree__s0'
    """
    stem = Path(config).stem
    return run_id if f"configs/{stem}.toml" in FIRST else f"{stem}:{run_id}"


def label_of(row: dict) -> str:
    """The model as the table names it: a transformation tree with spare states says so."""
    factor = (row.get("model_options") or {}).get("state_factor", 1)
    return row["model"] + (f" (n = {factor} x minimal)" if factor and factor > 1 else "")


def row_of(run_id: str, run: Path, results: dict, cfg: dict) -> dict:
    """One table row (JSON) from a finished run folder."""
    cert = certificate_of(run)
    ev = results.get("evaluation") or {}
    return {"id": run_id, "task": results["problem"], "model": cfg["model"],
            "model_options": cfg["model_options"], "seed": cfg["seed"],
            "solved": results["solved"], "verdict": results.get("verdict", ""),
            "steps": results["steps"], "attempts": results.get("attempts", 1),
            "train_seconds": results["train_seconds"],
            "summary": ev.get("summary", []),
            "certified": bool(cert["correct"]), "certificate": cert["verdict"],
            "certify_seconds": cert.get("seconds")}


def collect(configs: list[str]) -> list[dict]:
    """Rows of every finished run of the configs (ledger rows for folders that are gone),
    recording new rows in the ledger."""
    from monoidlab.training.sweep import load_sweep

    ledger = read_ledger()
    rows = []
    for path in configs:
        sweep = load_sweep(path)
        for r in sweep["runs"]:
            folder = Path(sweep["out"]) / r["id"]
            res = folder / "results.json"
            key = ledger_id(path, r["id"])
            if res.is_file():
                row = row_of(key, folder, json.loads(res.read_text()), r["config"].as_dict())
                if ledger.get(key) != row:
                    LEDGER.parent.mkdir(parents=True, exist_ok=True)
                    with LEDGER.open("a") as fh:
                        fh.write(json.dumps(row) + "\n")
                rows.append(row)
            elif key in ledger:
                rows.append(ledger[key])
    return rows


def table(rows: list[dict], plain: dict[str, bool]) -> str:
    """The results section (markdown)."""
    from monoidlab.evaluation import KINDS
    from monoidlab.evaluation import min_beside_baselines as acc

    lines = ["| task | model | solved | " + " | ".join(f"min {k}" for k in KINDS)
             + " | certificate | train s | plain MLP-LDRU solved |",
             "|---|---|---|" + "---|" * len(KINDS) + "---|---|---|"]
    for x in sorted(rows, key=lambda x: (TASK_ORDER.get(x["task"], 99), label_of(x))):
        ev = {"summary": x["summary"]}
        # "certificate of MODEL (...): VERDICT" -> VERDICT; a budget's refusal stays whole
        cert = x["certificate"].split("): ", 1)[1] if x["certificate"].startswith(
            "certificate of") and "): " in x["certificate"] else x["certificate"]
        lines.append(f"| {x['task']} | {label_of(x)} | {'**yes**' if x['solved'] else 'no'} | "
                     + " | ".join(acc(ev, k) for k in KINDS)
                     + f" | {'**proved** ' if x['certified'] else ''}{cert} | "
                     f"{x['train_seconds']:.0f} | "
                     f"{({True: 'yes', False: 'no'}).get(plain.get(x['task']), '—')} |")
    tasks = sorted({x["task"] for x in rows}, key=lambda t: TASK_ORDER.get(t, 99))
    certified = sorted({x["task"] for x in rows if x["certified"]},
                       key=lambda t: TASK_ORDER.get(t, 99))
    in_budget = sorted({x["task"] for x in rows if x["certified"]
                        and x["train_seconds"] <= BUDGET_S}, key=lambda t: TASK_ORDER.get(t, 99))
    by_model = {}
    for x in rows:
        s = by_model.setdefault(label_of(x), [0, 0, 0])
        s[0] += 1
        s[1] += x["solved"]
        s[2] += x["certified"]
    lines += ["", f"**Certified correct at every length by at least one depth-exact model: "
              f"{len(certified)} of {len(tasks)} tasks with a finished run** "
              f"({len(in_budget)} within {BUDGET_S // 60} minutes of training; goal: {GOAL} "
              f"of 21): {', '.join(certified) or 'none'}.",
              "Per model (runs / strictly solved / certified): " + "; ".join(
                  f"{m}: {a} / {b} / {c}" for m, (a, b, c) in sorted(by_model.items())) + "."]
    if plain:
        lines.append(f"The plain MLP-LDRU (section 'ldru21 cpu', same budget, per-task "
                     f"overrides chosen after test scores) strictly solved "
                     f"{sum(plain.values())} of {len(plain)}.")
    return "\n".join(lines) + "\n"


TASK_ORDER = {t: i for i, t in enumerate([
    "parity", "even-pairs", "cycle-navigation", "modular-arithmetic", "dyck-2", "dyck-3", "dyck-4",
    "dyck-6", "dyck-8", "dyck-12", "tomita-3", "tomita-4", "tomita-5", "tomita-6", "tomita-7",
    "prefix-1-2", "prefix-1-4", "prefix-2-2", "prefix-2-4", "prefix-4-2", "prefix-4-4"])}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", action="append", default=None,
                   help="a sweep config (repeatable); default: the three depth-exact models'")
    p.add_argument("--train", action="store_true",
                   help="train or resume the runs not finished or recorded yet, first")
    p.add_argument("--reverse", action="store_true",
                   help="--train from the last run back (a second process on another core)")
    p.add_argument("--write-docs", action="store_true")
    args = p.parse_args(argv)
    from monoidlab._util import write_section

    configs = args.config or [str(ROOT / c) for c in CONFIGS if (ROOT / c).is_file()]
    if args.train:
        for c in configs:
            train_pending(c, reverse=args.reverse)
    from bench_ldru21 import solved_in_section  # the plain table's record (same folder)

    results = (ROOT / "docs" / "results.md").read_text()
    plain = solved_in_section(results, "ldru21 cpu") if "begin ldru21 cpu" in results else {}
    rows = collect(configs)
    text = ("## The depth-exact models on the 21 tasks\n\n`python bench/bench_exact21.py "
            "--write-docs` (configs: " + ", ".join(Path(c).name for c in configs) + "; each "
            "model's own recipe 'languages', fixed before the runs). Strict evaluation on "
            "41..500, 64 strings per length and kind; in brackets what a majority-class / a "
            "count-only model scores on the same strings. *Certificate*: `monoidlab certify` on "
            "the tested weights (offset 0, the tests' layout): proved correct at every length, "
            "or the shortest string the model gets wrong.\n\n" + table(rows, plain))
    print(text)
    if args.write_docs:
        write_section(ROOT / "docs" / "results.md", "exact21", text, title="Results")
    return 0


if __name__ == "__main__":
    sys.exit(main())
