"""A sweep's tables: ``results.csv`` (one row per run), ``summary.md`` (per task and model:
runs solved, the best run's minimum per kind, the papers' score, the trivial baselines) and,
on request, the sweep's section of a docs page (:mod:`monoidlab.training.sweep`).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from monoidlab._paths import slugify
from monoidlab._util import atomic_write_text, json_text, write_section
from monoidlab.errors import ConfigError
from monoidlab.evaluation.scores import score_names

__all__ = ["summarise"]


def _disagreements(rows: list[dict[str, Any]]) -> str:
    """One sentence: the runs where the two accuracy definitions (per string, pooled) disagree
    on *solved*, by task and model."""
    diff = [r for r in rows if "solved_pooled" in r and r["solved_pooled"] != r["solved_per_string"]]
    n = sum("solved_pooled" in r for r in rows)
    if not diff:
        return (f"The per-string and pooled accuracies agree on *solved* in all {n} runs of tape "
                "tasks.")
    items = [f"{r['problem']} ({r['model']}, {r['id'].split('__', 2)[2]}: pooled "
             f"{'solved' if r['solved_pooled'] else 'not solved'}, per-string "
             f"{'solved' if r['solved_per_string'] else 'not solved'})" for r in diff]
    return (f"The per-string and pooled accuracies disagree on *solved* in {len(diff)} of {n} "
            "runs: " + "; ".join(items) + ".")


def _fmt_acc(v: float | None) -> str:
    return "n/a" if v is None or v != v else f"{v:.3f}"


def _baseline_lines(rows: list[dict[str, Any]], problems: list[str],
                    kinds: list[str]) -> list[str]:
    """What trivial models score on each task's test strings (the first run's: every run of
    a task with the same test seed and lengths has the same strings): the mean over scored
    lengths of the majority class and of the count-only model, per kind. A baseline that
    does not apply to any task (count-only on text) is left out."""
    names = {"majority": "majority", "count_only": "count-only"}
    per: dict[str, dict[str, dict[str, float]]] = {}
    for p in problems:
        run = next((r for r in rows if r["problem"] == p and r["evaluation"] is not None), None)
        per[p] = {x["kind"]: x for x in run["evaluation"].get("summary", [])} if run else {}
    used = [b for b in names if any(isinstance(v.get(b), float | int) and v.get(b) == v.get(b)
                                    for d in per.values() for v in d.values())]
    if not used or not per:
        return []
    out = ["", "What a trivial model scores on the same test strings (mean over the scored "
           f"lengths; {' / '.join(names[b] for b in used)}):", "",
           "| task | " + " | ".join(kinds) + " |", "|---|" + "---|" * len(kinds)]
    for p in problems:
        cells = []
        for k in kinds:
            v = per[p].get(k, {})
            cells.append(" / ".join(_fmt_acc(v.get(b)) for b in used) if v else "–")
        out.append(f"| {p} | " + " | ".join(cells) + " |")
    return out


def summarise(sweep: dict[str, Any], rows: list[dict[str, Any]],
              write_docs: bool = False) -> dict[str, Any]:
    """Write results.csv and summary.md in the sweep's folder, and, only with ``write_docs``,
    the sweep's section of ``results_md`` (a page of the repository's docs)."""
    out = Path(sweep["out"])
    buf = io.StringIO()
    scored = [r for r in rows if r["evaluation"] is not None]  # the others: refused runs
    kinds = list(dict.fromkeys(k for r in scored for k in r["evaluation"]["kinds"]))
    measures = list(dict.fromkeys(k for r in rows for k in r if k.startswith("solved_")))
    fields = ["id", "problem", "model", "seed", "lr", "solved", *measures, *score_names(),
              *[f"min_{k}" for k in kinds], "steps", "train_seconds", "device", "verdict"]
    w = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
    atomic_write_text(out / "results.csv", buf.getvalue())
    problems = list(dict.fromkeys(r["problem"] for r in rows))
    models = list(dict.fromkeys(r["model"] for r in rows))
    threshold = scored[0]["evaluation"]["threshold"] if scored else 0.99
    paper = sweep.get("paper") or {}
    pscores = paper.get("scores", {})
    lines = [f"# {sweep['title']}", "",
             f"Per task and model: runs strictly solved (accuracy >= {threshold:g} at every "
             "scored test length of every test kind), then the best run's minimum accuracy per "
             f"kind ({' / '.join(kinds)}) and, in brackets, the best paper score over the "
             "runs (the papers' mean over lengths, best-of selection); *refused*: runs "
             "refused before training (their message: results.csv's verdict)"
             + (f"; `paper`: {paper.get('source', 'the published score')}" if pscores else "")
             + ". **Bold**: at least one run solved.", "",
             "| task | " + " | ".join(models) + " |", "|---|" + "---|" * len(models)]
    solved = dict.fromkeys(models, 0)
    for p in problems:
        cells = []
        for m in models:
            runs = [r for r in rows if r["problem"] == p and r["model"] == m]
            if not runs:
                cells.append("–")
                continue
            n_ok = sum(bool(r["solved"]) for r in runs)
            ran = [r for r in runs if r["evaluation"] is not None]
            refused = f"{len(runs) - len(ran)} refused" if len(ran) < len(runs) else ""
            if not ran:
                cells.append(f"0/{len(runs)}: {refused}")
                continue
            best = max(ran, key=lambda r: (r["solved"], min(
                (r[f"min_{k}"] for k in r["evaluation"]["solved_kinds"]), default=0.0)))
            mins = " / ".join(_fmt_acc(best.get(f"min_{k}")) for k in kinds)
            top = max(r["paper_score"] for r in ran)
            txt = f"{n_ok}/{len(runs)}: {mins} ({_fmt_acc(top)})" + (f", {refused}" if refused
                                                                      else "")
            solved[m] += n_ok > 0
            cell = f"**{txt}**" if n_ok else txt
            if pscores:
                ref = pscores.get(m, {}).get(p)
                cell += f" · paper {'n/r' if ref is None else f'{ref / 100:.3f}'}"
            cells.append(cell)
        lines.append(f"| {p} | " + " | ".join(cells) + " |")
    lines.append("| tasks solved | " + " | ".join(f"{solved[m]}/{len(problems)}" for m in models)
                 + " |")
    if pscores:  # the paper's own criterion on its scores; a count published alone as is
        at = paper.get("solved_at", 90.0)
        cells = []
        for m in models:
            if m in pscores:
                n_ok = sum(pscores[m].get(p, 0.0) >= at for p in problems)
                cells.append(f"{n_ok}/{len(problems)}")
            else:
                count = paper.get("solved", {}).get(m)
                cells.append("n/r" if count is None else f"{count} (all its tasks)")
        lines.append(f"| paper: score >= {at:g}% | " + " | ".join(cells) + " |")
    lines += _baseline_lines(rows, problems, kinds)
    lines += ["", _disagreements(rows)] if measures else []
    md = "\n".join(lines) + "\n"
    atomic_write_text(out / "summary.md", md)
    if write_docs and sweep.get("results_md"):  # e.g. docs/results.md, with the settings used
        # (load_sweep confined it to the sweep's out folder or a docs folder)
        if not str(sweep["results_md"]).endswith(".md"):
            raise ConfigError(f"results_md: a .md file, got {sweep['results_md']!r}")
        settings = (json_text(sweep["runs"][0]["config"].as_dict(), indent=1)
                    if sweep["runs"] else "{}")
        per_model: dict[str, dict[str, Any]] = {}  # what differs between models: their kwargs and optimisation keys
        for r in sweep["runs"]:
            c = r["config"].as_dict()
            per_model.setdefault(r["model"], {k: c[k] for k in (
                "model_options", "steps", "batch_size", "optimizer", "lr", "warmup")})
        hours = sum(r["train_seconds"] for r in rows) / 3600
        notes = sweep.get("notes", "").strip()
        # one generated section per sweep: other sections of the page are kept
        write_section(sweep["results_md"], f"sweep {slugify(Path(sweep['source']).stem)}",
                      md.replace("# ", "## ", 1) + (f"\n{notes}\n" if notes else "") +
                          f"\nSweep file: `{sweep['source']}`; {len(rows)} runs, "
                          f"{hours:.2f} h of training in total (evaluation not included). "
                          "Per-model settings (first run of each model):\n\n" +
                          "".join(f"- `{m}`: `{json_text(v, indent=None)}`\n" for m, v in per_model.items())
                          + "\nSettings of the first run (others differ only by task, model, "
                          f"seed and the per-model/per-task overrides):\n\n```json\n"
                          f"{settings}\n```\n", title="Results")
    return {"rows": rows, "summary_md": md, "solved": solved, "out": str(out)}
