"""Strict evaluation of the runs earlier figures were based on (configs/strict-evaluation.toml;
docs/results.md, section "strict evaluation").

    monoidlab study strict-evaluation [--workers 2]          # trains + evaluates what is missing
    monoidlab study strict-evaluation --table [--write-docs]

1. The demo's checkpoint as it was before strict evaluation (dyck-4, MLP-LDRU d 32, 600 steps),
   reported before as "0.924 (solved at threshold 0.9)".
2. The dyck-4 setting of the offsets experiment (MLP-LDRU d 32, dropout 0.1, 3000 steps,
   batch 64, Adam 1e-3), reported before as "score 1.0000 (solved)", trained with the
   balanced, ec_stratified and near_miss samplers.

The runs are this module's own (:func:`runs`, fixed before they ran). Each is trained once into
the config's ``out`` (a killed run resumes from its checkpoint; a trained run is not trained
again) and evaluated as ``monoidlab evaluate`` does on lengths 41..500, ``samples`` strings per
length and kind; the text that command prints is printed, and one ledger row per run
(docs/data/strict-evaluation.jsonl) keeps what the table needs. The committed section was
written by the script this study replaces, from run folders the repository does not hold; its
ledger starts empty.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from monoidlab.errors import ConfigError
from monoidlab.studies.fresh_test import command_line
from monoidlab.studies.runner import Study, StudyConfig

LEDGER = "docs/data/strict-evaluation.jsonl"
SECTION = "strict evaluation"

DYCK4_3000 = dict(language="dyck-4", model="mlp-ldru", steps=3000, batch_size=64, lr=1e-3,
                  model_options={"d": 32, "dropout": 0.1}, train_lengths="1:40",
                  test_lengths="41:500", test_samples=64, checkpoint_every=1000, log_every=100,
                  seed=0, threads=1)

# The demo as it was before strict evaluation (monoidlab.cli.report.DEMO_TRAINING now trains
# dyck-2 to a strict solve; docs/results.md, "the demo").
OLD_DEMO = dict(language="dyck-4", model="mlp-ldru", steps=600, batch_size=64, lr=2e-3,
                model_options={"d": 32, "dropout": 0.0}, train_lengths="1:40",
                test_lengths="41:500", test_samples=32, sampler="balanced",
                checkpoint_every=200, log_every=50, seed=0, threads=1)


def runs() -> list[tuple[str, dict, str]]:
    """(label, run config, what was reported before) of every run, in the table's order."""
    demo = dict(OLD_DEMO)
    return [("demo (600 steps, balanced sampler)", demo, "0.924 mean; 'solved' at 0.9"),
            ("dyck-4, 3000 steps, balanced sampler", {**DYCK4_3000, "sampler": "balanced"},
             "1.000 on 41:500:20 (odd lengths only); 'solved'"),
            ("dyck-4, 3000 steps, ec_stratified sampler",
             {**DYCK4_3000, "sampler": "ec_stratified"}, "not published"),
            ("dyck-4, 3000 steps, near_miss sampler", {**DYCK4_3000, "sampler": "near_miss"},
             "new")]


def folder_of(label: str, cfg: dict) -> str:
    """A run's folder below the study's ``out``.

    >>> folder_of("dyck-4, 3000 steps, near_miss sampler", {"sampler": "near_miss"})
    'dyck-4/near_miss'
    """
    return label.split(",")[0].split(" (")[0].replace(" ", "-") + "/" + \
        cfg.get("sampler", "balanced")


def table(rows: list[dict], command: str) -> str:
    """The section (markdown)."""
    lines = ["## Strict evaluation of earlier figures (issue 13)", "",
             "Per test length 41..500, 64 strings of each kind: `balanced` (the papers' "
             "protocol), `near_miss` (one edit away from another class), `ec_stratified` "
             "(every reachable EC equally). Min/mean accuracy over the scored lengths (even "
             "lengths: odd lengths of a Dyck language have one class and are never scored), "
             "and the majority-class / best count-only baselines on the same strings. "
             f"Produced by {command}.", "",
             "| run | reported before | verdict (threshold 0.99) | balanced min / mean | "
             "near_miss min / mean | ec_stratified min / mean | majority (nm) | count-only "
             "(nm / ec) | score_balanced |", "|---|---|---|---|---|---|---|---|---|"]

    def mm(s: dict, k: str) -> str:
        return f"{s[k]['min']:.3f} / {s[k]['mean']:.3f}"

    for r in rows:
        s = r["summary"]
        lines.append(f"| {r['label']} | {r['before']} | "
                     f"{'**solved**' if r['solved'] else 'not solved'} | "
                     f"{mm(s, 'paper')} | {mm(s, 'near_miss')} | {mm(s, 'ec_stratified')} | "
                     f"{s['near_miss']['majority']:.3f} | {s['near_miss']['count_only']:.3f} / "
                     f"{s['ec_stratified']['count_only']:.3f} | {r['paper_score']:.3f} |")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------ the study
def _read(path: Path, data: dict) -> tuple[str, str]:
    study = data.get("study")
    if not isinstance(study, dict) or not isinstance(study.get("samples"), int):
        raise ConfigError(f"{path}: a strict-evaluation study needs [study] samples (strings "
                          "per length and kind)")
    return study.get("ledger", LEDGER), study.get("out", "runs/strict")


def _plan(config: StudyConfig, ledger: dict) -> list[dict]:
    return [{"id": folder_of(label, cfg).replace("/", "__"), "label": label, "config": cfg,
             "before": before, "folder": str(config.out / folder_of(label, cfg))}
            for label, cfg, before in runs()]


def run_one(run: dict, config: StudyConfig) -> dict:
    """Train one run (unless trained) and evaluate it strictly: its ledger row."""
    from monoidlab._util import inference
    from monoidlab.evaluation import evaluation_text
    from monoidlab.training import RunConfig, evaluate_kinds, load_checkpoint, train

    out = Path(run["folder"])
    t0 = time.time()
    if not (out / "results.json").is_file():  # trained, not evaluated: the study does that
        resume = (out / "checkpoint.pt").is_file()
        train(RunConfig(**run["config"]), out, resume=resume, overwrite=not resume,
              progress=False, evaluate_at_end=False)
        (out / "results.json").write_text(json.dumps({"trained": True}, ensure_ascii=True), encoding="utf-8")
    train_s = time.time() - t0
    model, cfg, problem, _ = load_checkpoint(out)
    t0 = time.time()
    with inference():  # one thread, no gradients; the caller's settings come back
        ev = evaluate_kinds(model, problem, cfg.test_lengths, config.data["study"]["samples"],
                            cfg.seed)
    eval_s = time.time() - t0
    print(f"\n=== {run['label']} (train {train_s:.0f} s this call, evaluate {eval_s:.0f} s)\n"
          f"$ monoidlab evaluate {out}\n{evaluation_text(ev, lengths=False)}", flush=True)
    summary = {r["kind"]: {k: r.get(k) for k in ("min", "mean", "majority", "count_only")}
               for r in ev.summary_rows()}
    return {"id": run["id"], "label": run["label"], "before": run["before"],
            "solved": bool(ev.solved), "paper_score": ev.paper_score, "summary": summary,
            "eval_s": round(eval_s, 1)}


def _sections(config: StudyConfig, ledger: dict) -> dict[str, str]:
    order = [label for label, _, _ in runs()]
    rows = sorted((r for r in ledger.values() if r["label"] in order),
                  key=lambda r: order.index(r["label"]))
    if not rows:
        raise ConfigError(f"{config.ledger}: no run evaluated yet (`monoidlab study "
                          "strict-evaluation` trains and evaluates them)")
    return {config.data["study"].get("section", SECTION):
            table(rows, command_line("strict-evaluation", config, "strict-evaluation.toml"))}


STUDY = Study(name="strict-evaluation", plan=_plan, run=run_one, sections=_sections,
              read=_read, default_config="strict-evaluation.toml",
              summary="the runs of earlier figures, evaluated strictly")
