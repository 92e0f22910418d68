"""Counterexample-guided refinement of finished finite-model runs: does it turn a refuted run
into a proved one, within the 15-minute budget? (configs/refine-exact21.toml)

    monoidlab study refine --roots DIR[,DIR...] [--workers 2]   # refines what the ledger lacks
    monoidlab study refine --table [--write-docs]                # the table, from the ledger

For each task, source sweep and variant of the config, loads the run's tested weights (the
folder ``<root>/<source>/<task>__<model>__s0`` under one of the ``--roots``, default the
repository), refines them with the config's settings (:func:`monoidlab.training.refine.refine`)
and, when a proof replaced the weights, scores the refined weights on the run's own strict test
set (a proof must pass it: a second check of the certificate). One row per refinement is
appended to the ledger (docs/data/refine-exact21.jsonl) as it finishes, so a row already there
is not run again; the table gives the run's training time, the refinement's, their sum against
the budget, the rounds and the outcome (docs/results.md, section "refinement").
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from monoidlab.errors import ConfigError
from monoidlab.studies.runner import Study, StudyConfig

BUDGET_S = 15 * 60  # the run's training plus its refinement
LEDGER = "docs/data/refine-exact21.jsonl"  # the config's [study] ledger, when it has none


def find_run(roots: list[Path], sweep: str, task: str) -> Path | None:
    """The first run folder ``<root>/<sweep>/<task>__*__s0`` under the roots, in their order."""
    for root in roots:
        hits = sorted((root / sweep).glob(f"{task}__*__s0"))
        if hits:
            return hits[0]
    return None


def refine_one(run: Path, rounds: int, steps: int, share: float, mine: int) -> dict[str, Any]:
    """Refine one run's tested weights; the ledger row's measurements."""
    import torch

    from monoidlab.evaluation.run import evaluate_kinds
    from monoidlab.training.loop import Session
    from monoidlab.training.refine import refine
    from monoidlab.training.trainer import load_checkpoint

    torch.set_num_threads(1)
    model, cfg, problem, _ = load_checkpoint(run)
    cfg = cfg.replace(refine_rounds=rounds, refine_steps=steps, refine_share=share,
                      refine_mine=mine)
    trained = json.loads((run / "results.json").read_text(encoding="utf-8"))
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


def table(rows: list[dict], rounds: int = 8, budget_s: int = BUDGET_S) -> str:
    """The refinement table (markdown) and the count of tasks proved within ``budget_s``."""
    minutes = budget_s // 60
    out = ["| task | model | variant | train s | refine s | total s | rounds | counterexamples "
           "| outcome | strict after |", "|" + "---|" * 10]
    for r in rows:
        f = r["refinement"]
        last = f["rounds"][-1]
        outcome = {"proved": "**proved**", "last": f"no proof in {rounds} rounds",
                   "beyond": f"stopped: counterexample of length {last['length']} > 40",
                   "refused": "certificate refused (budget)"}.get(last["outcome"],
                                                                   last["outcome"])
        total = r["train_s"] + r["refine_s"]
        budget = "" if total <= budget_s else f" (over {minutes} min)"
        after = "n/a" if "solved_after" not in r else (
            "solved" if r["solved_after"] else "NOT solved")
        out.append(f"| {r['task']} | {r['model']} | {r['variant']} | {r['train_s']:.0f} | "
                   f"{r['refine_s']:.0f} | {total:.0f}{budget} | {len(f['rounds']) - 1} | "
                   f"{f['counterexamples']} | {outcome} | {after} |")
    proved = {r["task"] for r in rows if r["refinement"]["kept"] == "refined"
              and r["train_s"] + r["refine_s"] <= budget_s}
    out.append("")
    out.append(f"Tasks proved by a refinement within {minutes} minutes: {len(proved)} "
               f"({', '.join(sorted(proved)) or 'none'}), of {len({r['task'] for r in rows})} "
               "refined.")
    return "\n".join(out)


# ------------------------------------------------------------------------------ the study
def _read(path: Path, data: dict) -> tuple[str, str]:
    missing = [t for t in ("refine", "sources", "tasks") if not isinstance(data.get(t), dict)]
    if missing:
        raise ConfigError(f"{path}: a refinement study needs the tables {missing}")
    gone = [k for k in ("rounds", "steps", "share", "variants") if k not in data["refine"]]
    if gone or "names" not in data["tasks"]:
        raise ConfigError(f"{path}: [refine] needs rounds, steps, share and variants, [tasks] "
                          "its names")
    study = data.get("study", {})
    return study.get("ledger", LEDGER), study.get("out", "runs")  # out: unused (no training)


def _plan(config: StudyConfig, ledger: dict, roots: str | None = None) -> list[dict]:
    """Every (task, source, variant) whose run folder is found under the roots (comma list,
    relative to the repository; default: the repository), in the config's order."""
    ref = config.data["refine"]
    folders = [config.resolve(r) for r in roots.split(",") if r] if roots else [config.root]
    runs = []
    for task in config.data["tasks"]["names"]:
        for model, sweep in config.data["sources"].items():
            for variant, mine in ref["variants"].items():
                rid = f"{task}__{model}__{variant}"
                if rid in ledger:
                    runs.append({"id": rid})  # recorded: the runner skips it
                    continue
                run = find_run(folders, sweep, task)
                if run is None or not (run / "results.json").is_file():
                    print(f"{rid}: no finished run under {[str(r) for r in folders]}",
                          file=sys.stderr, flush=True)
                    continue
                runs.append({"id": rid, "task": task, "model": model, "variant": variant,
                             "run": str(run), "mine": mine})
    return runs


def run_one(run: dict, config: StudyConfig) -> dict:
    """Refine one run: its ledger row."""
    ref = config.data["refine"]
    return {**{k: run[k] for k in ("id", "task", "model", "variant", "run")},
            **refine_one(Path(run["run"]), ref["rounds"], ref["steps"], ref["share"],
                         run["mine"])}


def _sections(config: StudyConfig, ledger: dict) -> dict[str, str]:
    names = config.data["tasks"]["names"]
    rows = sorted(ledger.values(), key=lambda r: (names.index(r["task"]) if r["task"] in names
                                                  else 99, r["model"], r["variant"]))
    section = config.data.get("study", {}).get("section", "refinement")
    return {section: table(rows, config.data["refine"]["rounds"])}


STUDY = Study(name="refine", plan=_plan, run=run_one, sections=_sections, read=_read,
              layout="appended", default_config="refine-exact21.toml", options=("roots",),
              summary="counterexample-guided refinement of the unproved 21-task runs")
