"""The 21-task table of MLP-LDRU at CPU scale under strict evaluation: a study whose config is a
sweep file (the bundled ``ldru21-cpu``, ``regular4-seq-cpu`` and ``ldru21-languages``, or any
other), one docs section per sweep.

    monoidlab study ldru21 [--config configs/ldru21-cpu.toml] [--workers 2]
    monoidlab study ldru21 --config configs/ldru21-languages.toml --write-docs

Runs (or resumes) every run of the sweep in the sweep's own run folders (the ones ``monoidlab
sweep`` uses: ``out`` of the sweep file, relative to the current folder, so either command
continues the other's runs), then the table: one row per task, the predicted support length (the
smallest maximum training length whose compositions cover those of the test lengths 41..500;
with the run's padding), the step at which the strict validation was first solved and where
training stopped, the minimum accuracy per test kind over the scored test lengths beside the
trivial models' scores, the papers' balanced score, and what the MLP-LDRU paper reports. The
section of ``ldru21-languages`` also compares its solved tasks with the table of section
"ldru21 cpu" (:data:`COMPARE`).

**No ledger.** The rows are the sweep's run folders (``results.json`` of each run, the refusal
record of a run refused before training), read again whenever the table is made, as the sweep's
own table is; the committed tables' run folders are not in the repository, so a ledger could not
rebuild them. The section's wall time is the sweep's over every invocation of the study, kept
beside the runs (``bench_wall.json``: one entry per invocation).

>>> compare_text({"a": True, "b": False}, {"a": True, "b": True}, "x").split("; ", 1)[1]
'lost here: b; gained here: none.'
"""

from __future__ import annotations

import functools
import json
import os
import time
from pathlib import Path
from typing import Any

from monoidlab.errors import ConfigError
from monoidlab.studies.runner import Study, StudyConfig, solved_in_section

# The MLP-LDRU paper: 100% on lengths 41..500 for 18 of the 21 tasks after training on 1..40;
# the other three reach >= 99.9% with a longer maximum training length (not named in our
# summary of the paper; the coverage prediction names dyck-6, dyck-8 and dyck-12).
PAPER_FULL = "100%"
PAPER_LONGER = "< 100% at L <= 40 (>= 99.9% with longer training)"

#: sweep file stem → the docs section its table is compared with (solved tasks lost / gained)
COMPARE = {"ldru21-languages": "ldru21 cpu", "tasks21-languages-v2": "ldru21 cpu"}
WALLS = "bench_wall.json"  # beside the runs: the wall time of each invocation, in seconds


def section_of(sweep_file: str | os.PathLike) -> str:
    """The docs section of a sweep's table.

    >>> section_of("monoidlab/configs/ldru21-cpu.toml"), section_of("regular4-seq-cpu.toml")
    ('ldru21 cpu', 'regular4-seq-cpu')
    """
    stem = Path(sweep_file).stem
    return "ldru21 cpu" if stem == "ldru21-cpu" else stem


def settings_text(base: dict) -> str:
    """The shared training and validation settings of a sweep, in one sentence (from its
    config, so the text cannot drift from what ran)."""
    steps, restarts = base.get("steps"), base.get("restarts", 0)
    budget = (f"attempts of {steps} steps, at most {1 + restarts} (restarts = {restarts}, "
              "per-task overrides in the config)") if restarts else f"at most {steps} steps"
    extra = [f"{k} = {base[k]}" for k in ("offsets", "assoc_weight", "near_miss_mix", "covering")
             if base.get(k) not in (None, "none", 0, 0.0)]
    d = (base.get("model_options") or {}).get("d")
    extra += [f"d = {d}"] if d is not None else []
    head = "Settings (the config's comments say why)"
    if base.get("recipe") == "languages" and base.get("model", "mlp-ldru") == "mlp-ldru":
        from monoidlab.recipes import frozen_recipe

        head = (f"Settings: recipe 'languages' (the random-language benchmark's frozen "
                f"{frozen_recipe()[0]!r}; configs/random-languages.toml says why)")
    elif base.get("recipe") == "languages":
        from monoidlab.recipes import recipe_advice

        frozen = recipe_advice(model=base["model"])["frozen"]
        head = (f"Settings: model {base['model']}, recipe 'languages' ("
                + (f"the random-language benchmark's frozen {frozen!r}, the default of "
                   "`monoidlab train --language`; docs/training.md says why" if frozen else
                   "the model's own, monoidlab/models/registry.py") + ")")
    return (f"{head}: {base.get('sampler', 'balanced')} "
            f"sampler, {budget}{', ' + ', '.join(extra) if extra else ''}; validation every "
            f"{base.get('eval_every')} steps on fresh strings of lengths "
            f"{base.get('val_lengths')} ({base.get('val_samples', 16)} per length and kind), "
            f"early stopping after {base.get('early_stop')} strictly solved validation(s) in a "
            "row, the best validated weights are tested.")


def compare_text(here: dict[str, bool], there: dict[str, bool], section: str) -> str:
    """One sentence: the tasks the other table solved that this one loses, and the reverse."""
    both = sorted(t for t in here if t in there)
    lost = [t for t in both if there[t] and not here[t]]
    gained = [t for t in both if here[t] and not there[t]]
    return (f"Against the table of section {section!r} (docs/results.md), on the {len(both)} "
            f"tasks both have: solved there {sum(there[t] for t in both)}, here "
            f"{sum(here[t] for t in both)}; lost here: {', '.join(lost) or 'none'}; gained "
            f"here: {', '.join(gained) or 'none'}.")


@functools.lru_cache(maxsize=128)
def support_length(language: str, padding: str) -> int | None:
    """The predicted support length of the test lengths 41..500 with ``padding``."""
    import monoidlab as ml
    from monoidlab.coverage.min_length import min_training_length

    return min_training_length(ml.load_language(language), range(41, 501), within="auto",
                               padding=padding).support_length


def table_row(r: dict, cfg: dict) -> dict:
    """One row of the table from a sweep row (``monoidlab.training.sweep``) and its config."""
    padding = cfg["model_options"].get("padding", "learned")
    # the support length is a balanced-tree notion: MLP-LDRU and PR-LSTM, not the LSTM
    tree = cfg["model"] in ("mlp-ldru", "pr-lstm")
    support = {pad: support_length(cfg.get("language") or r["problem"], pad) if tree else None
               for pad in ("learned", padding)}
    ev = r["evaluation"] or {}  # none: refused before training (the sweep's row says why)
    verdict = ev.get("verdict", "")
    where = verdict.split(":", 1)[1].strip() if not r["solved"] and ":" in verdict else "—"
    if r.get("refused"):
        where = f"refused before training: {r['refused']}"
    return {"task": r["problem"], "model": cfg["model"], "where": where,
            "support": support, "padding": padding,
            "solved": r["solved"], "first": r.get("first_solved_step"),
            "steps": r["steps"], "attempts": r.get("attempts", 1),
            # the trivial models' mean accuracy per kind on the same strings
            "base": {row["kind"]: (row["majority"], row["count_only"])
                     for row in ev.get("summary", [])},
            "score": r["paper_score"], "secs": r["train_seconds"], "evaluation": ev,
            "certified": r.get("certified"), "certificate": r.get("certificate")}


def certificate_cell(row: dict) -> str:
    """A finite model's certificate in a table cell: proved, or its shortest counterexample.

    >>> certificate_cell({"certified": False, "certificate": "...: WRONG: shortest "
    ...                   "counterexample '011' (length 3): ..."})
    "refuted: '011'"
    >>> certificate_cell({"certified": None}), certificate_cell({"certified": True})
    ('—', '**proved**')
    """
    import re

    if row.get("certified") is None:
        return "—"
    if row["certified"]:
        return "**proved**"
    found = re.search(r"counterexample ('[^']*')", row.get("certificate") or "")
    return f"refuted: {found.group(1)}" if found else "refuted"


def table_text(sweep: dict, name: str, rows: list[dict], walls: list[float],
               there: dict[str, bool] | None = None, section: str = "") -> str:
    """The section (markdown): heading, settings, the table, the counts; ``there``: the solved
    tasks of the table in ``section``, to compare with."""
    from monoidlab.evaluation import min_beside_baselines as acc
    from monoidlab.evaluation.result import kinds_of

    kinds = kinds_of(x["evaluation"] for x in rows)  # the rows' kinds: the tables' columns
    finite = any(x.get("certified") is not None for x in rows)  # a certificate column then

    solved = sum(x["solved"] for x in rows)
    base = sweep["runs"][0]["config"].as_dict()  # the settings every run shares ([base])
    title = sweep.get("title", Path(name).stem)
    if len(rows) < len(sweep["runs"]):
        title += f" (partial: {len(rows)} of {len(sweep['runs'])} runs finished)"
    wall = sum(walls)
    lines = [f"## {title}", "",
             f"`monoidlab study ldru21 --config configs/{name} "
             f"--write-docs` (one sweep): {wall / 60:.0f} min wall on a "
             f"shared 2-core machine over {len(walls)} invocation(s) (a rerun reuses finished "
             "runs and adds only its own time). " + settings_text(base) + " Strict evaluation "
             f"on 41..500, {base.get('test_samples', 64)} strings per length and kind; "
             "*solved* = accuracy >= 0.99 at every scored length of every kind. *First "
             "solved* is the step of the first strictly solved validation (with *attempts* "
             "of `steps` steps each, counted over all of them); a run can pass its validation "
             "and still fail the larger test (column *where it fails*: the "
             "lowest length per failing kind and how many lengths fall below 0.99). Beside "
             "each minimum, in brackets: what a majority-class model / a count-only model "
             "scores on the same strings (mean over the scored lengths).", "",
             "| task | model | support length (learned / model's padding) | solved | first "
             "solved at step (stopped at) | attempts | "
             + " | ".join(f"min {k}" for k in kinds) + " | paper score | train s | "
             "where it fails | " + ("certificate | " if finite else "") + "paper |",
             "|---|---|---|---|---|---|" + "---|" * len(kinds) + "---|---|---|"
             + ("---|" if finite else "") + "---|"]
    for x in rows:
        first = "—" if x["first"] is None else str(x["first"])
        paper = PAPER_LONGER if (x["support"]["learned"] or 999) > 40 else PAPER_FULL
        if x["model"] != "mlp-ldru":
            paper = "—"
        sup = ("—" if x["support"]["learned"] is None else
               f"{x['support']['learned']} / {x['support'][x['padding']]} ({x['padding']})")
        lines.append(f"| {x['task']} | {x['model']} | {sup} | "
                     f"{'**yes**' if x['solved'] else 'no'} | "
                     f"{first} ({x['steps']}) | {x['attempts']} | "
                     + " | ".join(acc(x["evaluation"], k) if x["evaluation"] else "—"
                                  for k in kinds) +
                     f" | {'—' if x['score'] != x['score'] else format(x['score'], '.3f')}"
                     f" | {x['secs']:.0f} | "
                     f"{x['where']} | "
                     + (f"{certificate_cell(x)} | " if finite else "") + f"{paper} |")
    total = sum(x["secs"] for x in rows)
    # a solved run shows more than counting only where a count-only model fails some kind
    beyond = [x["task"] for x in rows if x["solved"] and any(
        cnt == cnt and cnt is not None and cnt < 0.99 for _, cnt in x["base"].values())]
    proved = (f" Proved correct at every length by the certificate: "
              f"{sum(bool(x.get('certified')) for x in rows)} of {len(rows)}." if finite else "")
    lines += ["", f"**Strictly solved: {solved} of {len(rows)} runs.**{proved} Training time "
              "over all "
              f"runs: {total / 60:.0f} min of one core each (the *train s* column; evaluation "
              "comes on top). Solved where a count-only model is not (its mean < 0.99 on some "
              f"kind): {len(beyond)} ({', '.join(beyond) or 'none'}); on the others the "
              "answer is a function of the symbol counts."]
    if "mlp-ldru" in {x["model"] for x in rows}:
        lines += ["The MLP-LDRU paper: 18 of 21 at 100% (training lengths 1..40, 100k-1M steps "
                  "on a GPU; its evaluation is the balanced protocol)."]
    if there is not None:
        lines += ["", compare_text({x["task"]: x["solved"] for x in rows}, there, section)]
    if sweep.get("notes"):
        lines += ["", " ".join(sweep["notes"].split())]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ the wall time, per call
def start_call(path: Path) -> dict[str, Any]:
    """Open one invocation's entry in the wall-time record ``path`` (a JSON list of seconds);
    each run of the invocation then stretches it to its own end (:func:`end_run`)."""
    walls = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else []
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_json(path, [*walls, 0.0])
    return {"file": str(path), "index": len(walls), "started": time.time()}


def end_run(call: dict[str, Any]) -> None:
    """A run of the invocation ``call`` ended: its wall time is at least until now."""
    path = Path(call["file"])
    walls = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else []
    if call["index"] < len(walls):
        walls[call["index"]] = max(walls[call["index"]], round(time.time() - call["started"], 1))
        _write_json(path, walls)


def _write_json(path: Path, data: Any) -> None:
    from monoidlab._util import atomic_write_text

    atomic_write_text(path, json.dumps(data, ensure_ascii=True))


# ------------------------------------------------------------------------------ the study
def repository(config: StudyConfig) -> Path:
    """The repository of a study whose config may be a bundled sweep file
    (``monoidlab/configs/``): then the current folder, where ``monoidlab sweep`` puts the
    sweep's runs too; else the config's own repository."""
    from monoidlab.bundled import configs_dir

    return Path.cwd() if config.path.resolve().parent == configs_dir() else config.root


def _read(path: Path, data: dict) -> tuple[str, str]:
    if not isinstance(data.get("sweep"), dict):
        raise ConfigError(f"{path}: the ldru21 study's config is a sweep file ([sweep] missing)")
    # no ledger (see the module): rows are the run folders; out as the sweep names it
    return os.devnull, data["sweep"].get("out", f"runs/{path.stem}")


def _sweep(config: StudyConfig) -> dict:
    from monoidlab.training.sweep import load_sweep

    return load_sweep(config.path)


def _plan(config: StudyConfig, ledger: dict) -> list[dict]:
    """Every run of the sweep (a finished one is read, not trained); opens this invocation's
    entry of the wall-time record."""
    sweep = _sweep(config)
    out = Path(sweep["out"]).absolute()
    call = start_call(out / WALLS)
    return [{"id": r["id"], "run": r, "out": str(out), "call": call} for r in sweep["runs"]]


def run_one(run: dict, config: StudyConfig) -> None:
    """Train, resume or read one run of the sweep in its run folder (a run refused before
    training leaves its refusal there, as in ``monoidlab sweep``). Nothing for a ledger."""
    from monoidlab.training.sweep import _run_one

    _run_one(run["run"], run["out"], False)
    end_run(run["call"])
    return None


def _sections(config: StudyConfig, ledger: dict) -> dict[str, str]:
    """The sweep's section, from its run folders (an error when none has finished)."""
    from monoidlab.training.sweep import run_sweep

    sweep = _sweep(config)
    finished = run_sweep(config.path, progress=False, table_only=True)["rows"]  # trains nothing
    configs = {x["id"]: x["config"].as_dict() for x in sweep["runs"]}
    rows = [table_row(r, configs[r["id"]]) for r in finished]
    walls_file = Path(sweep["out"]) / WALLS
    walls = json.loads(walls_file.read_text(encoding="utf-8")) if walls_file.is_file() else []
    other = COMPARE.get(config.path.stem)
    there = None
    if other:
        page = repository(config) / "docs" / "results.md"
        there = solved_in_section(page.read_text(encoding="utf-8") if page.is_file() else "",
                                  other)
    return {section_of(config.path): table_text(sweep, config.path.name, rows, walls, there,
                                                other or "")}


STUDY = Study(name="ldru21", plan=_plan, run=run_one, sections=_sections, read=_read,
              default_config="ldru21-cpu.toml",
              summary="MLP-LDRU (and the sequence models) on the 21 tasks, one sweep a section")
