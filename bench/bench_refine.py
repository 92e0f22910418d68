"""Counterexample-guided refinement of finished finite-model runs: does it turn a refuted run
into a proved one, within the 15-minute budget?

Usage: python bench/bench_refine.py --config configs/refine-exact21.toml --roots DIR [DIR ...]
       [--write-docs]

For each task, source sweep and variant of the config, loads the run's tested weights (the
folder ``<root>/<source>/<task>__<model>__s0`` under one of ``--roots``), refines them with
the config's settings (:func:`monoidlab.training.refine.refine`) and, when a proof replaced the
weights, scores the refined weights on the run's own strict test set (a proof must pass it:
a second check of the certificate). Rows go to docs/data/refine-exact21.jsonl as they finish
(a row already there is not run again: resumable); the table prints the run's training time,
the refinement's, their sum against the budget, the rounds and the outcome. ``--write-docs``
puts the table in docs/results.md (section "refinement").
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LEDGER = ROOT / "docs" / "data" / "refine-exact21.jsonl"
BUDGET_S = 15 * 60


def read_ledger(path: Path = LEDGER) -> dict[str, dict]:
    if not path.is_file():
        return {}
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return {r["id"]: r for r in rows}


def find_run(roots: list[Path], sweep: str, task: str) -> Path | None:
    for root in roots:
        hits = sorted((root / sweep).glob(f"{task}__*__s0"))
        if hits:
            return hits[0]
    return None


def refine_one(run: Path, rounds: int, steps: int, share: float, mine: int) -> dict:
    """Refine one run's tested weights; the row of the ledger."""
    import torch

    from monoidlab.evaluation.run import evaluate_kinds
    from monoidlab.training.loop import Session
    from monoidlab.training.refine import refine
    from monoidlab.training.trainer import load_checkpoint

    torch.set_num_threads(1)
    model, cfg, problem, _ = load_checkpoint(run)
    cfg = cfg.replace(refine_rounds=rounds, refine_steps=steps, refine_share=share,
                      refine_mine=mine)
    trained = json.loads((run / "results.json").read_text())
    t0 = time.time()
    r = refine(Session.around(cfg, problem, model))
    row = {"train_s": trained["train_seconds"], "refine_s": round(time.time() - t0, 1),
           "solved_before": trained["solved"], "refinement": r.to_dict()}
    if r.kept == "refined":  # the proof, checked once more by the run's own strict test
        ev = evaluate_kinds(model, problem, problem.lengths(cfg.test_lengths), cfg.test_samples,
                            cfg.seed, cfg.eval_kinds, cfg.solved_threshold)
        row["solved_after"] = ev.solved
        row["min_after"] = {k: ev.min_accuracy(k) for k in ev.scored_kinds}
    return row


def table(rows: list[dict]) -> str:
    out = ["| task | model | variant | train s | refine s | total s | rounds | counterexamples "
           "| outcome | strict after |", "|" + "---|" * 10]
    for r in rows:
        f = r["refinement"]
        last = f["rounds"][-1]
        outcome = {"proved": "**proved**", "last": "no proof in 8 rounds",
                   "beyond": f"stopped: counterexample of length {last['length']} > 40",
                   "refused": "certificate refused (budget)"}.get(last["outcome"],
                                                                   last["outcome"])
        total = r["train_s"] + r["refine_s"]
        budget = "" if total <= BUDGET_S else " (over 15 min)"
        after = "n/a" if "solved_after" not in r else (
            "solved" if r["solved_after"] else "NOT solved")
        out.append(f"| {r['task']} | {r['model']} | {r['variant']} | {r['train_s']:.0f} | "
                   f"{r['refine_s']:.0f} | {total:.0f}{budget} | {len(f['rounds']) - 1} | "
                   f"{f['counterexamples']} | {outcome} | {after} |")
    proved = {r["task"] for r in rows if r["refinement"]["kept"] == "refined"
              and r["train_s"] + r["refine_s"] <= BUDGET_S}
    out.append("")
    out.append(f"Tasks proved by a refinement within 15 minutes: {len(proved)} "
               f"({', '.join(sorted(proved)) or 'none'}), of {len({r['task'] for r in rows})} "
               "refined.")
    return "\n".join(out)


def write_docs(text: str) -> None:
    path = ROOT / "docs" / "results.md"
    doc = path.read_text()
    start, end = "<!-- refinement -->", "<!-- end refinement -->"
    block = f"{start}\n{text}\n{end}"
    if start in doc:
        doc = doc[: doc.index(start)] + block + doc[doc.index(end) + len(end):]
    else:
        doc += "\n## Refinement\n\n" + block + "\n"
    path.write_text(doc)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/refine-exact21.toml")
    ap.add_argument("--roots", nargs="+", type=Path, default=[ROOT])
    ap.add_argument("--write-docs", action="store_true")
    args = ap.parse_args(argv)
    spec = tomllib.loads((ROOT / args.config).read_text())
    ref = spec["refine"]
    done = read_ledger()
    for task in spec["tasks"]["names"]:
        for model, sweep in spec["sources"].items():
            for variant, mine in ref["variants"].items():
                rid = f"{task}__{model}__{variant}"
                if rid in done:
                    continue
                run = find_run(args.roots, sweep, task)
                if run is None or not (run / "results.json").is_file():
                    print(f"{rid}: no finished run under {[str(r) for r in args.roots]}",
                          flush=True)
                    continue
                print(f"refining {rid} ({run})", flush=True)
                row = {"id": rid, "task": task, "model": model, "variant": variant,
                       "run": str(run), **refine_one(run, ref["rounds"], ref["steps"],
                                                     ref["share"], mine)}
                LEDGER.parent.mkdir(parents=True, exist_ok=True)
                with LEDGER.open("a") as fh:
                    fh.write(json.dumps(row) + "\n")
                done[rid] = row
                print(f"  {row['refinement']['text']}", flush=True)
    rows = sorted(done.values(), key=lambda r: (spec["tasks"]["names"].index(r["task"])
                                                if r["task"] in spec["tasks"]["names"] else 99,
                                                r["model"], r["variant"]))
    text = table(rows)
    print(text)
    if args.write_docs:
        write_docs(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
