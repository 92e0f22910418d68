"""Why configs/ldru21-cpu.toml trains the way it does: each choice against its alternative.

    monoidlab study ldru21-choices [--workers 2]      # trains what its run folders lack
    monoidlab study ldru21-choices --table [--write-docs]

The runs are this module's own (:data:`BASE`, :data:`VARIANTS`, :data:`RUNS`, fixed before they
ran; the study's config is the 21-task sweep whose choices they test, read for nothing else).
Each trains into ``runs/ldru21-choices/<task>__<variant>`` (relative to the current folder; a
finished run is reused while its config.json is still the one asked for); about 20 minutes of
one core in all. **No ledger**: the table (docs/results.md, section "ldru21 choices") is read
from the run folders, which the repository does not hold, so a ledger could not rebuild the
committed table. The last invocation's wall time and how many processes ran its runs are kept
beside the runs (``study_wall.json``).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from monoidlab.studies.runner import Study, StudyConfig

#: what every run does and what each variant is (the section's prose, word for word)
ABOUT = """Every run: MLP-LDRU (d 32 unless said), identity padding, the near_miss sampler, Adam lr 3e-3
with a cosine decay, batch 64, lengths 1..40, seed 0, one torch thread; strict evaluation on
41..500 with 64 strings per length and kind. Variants:

- ``early stop``: 12000-step schedule, stopped after three solved validations in a row (every
  500 steps, lengths 42:300:11, 48 strings): the previous sweep's setting, lr still ~3e-3;
- ``annealed``: 4000 steps, no early stopping (lr decays to 0);
- ``annealed, d 64`` / ``+ random offsets`` / ``+ assoc 0.1``: one change each to ``annealed``."""

OUT = "runs/ldru21-choices"
WALL = "study_wall.json"
BASE: dict[str, Any] = dict(model="mlp-ldru", batch_size=64, lr=3e-3, lr_schedule="cosine", clip=1.0,
            model_options={"d": 32, "dropout": 0.0, "padding": "identity"},
            train_lengths="1:40", test_lengths="41:500", test_samples=64, sampler="near_miss",
            checkpoint_every=1000, log_every=250, threads=1, device="cpu", seed=0)
VARIANTS: dict[str, dict[str, Any]] = {
    "early stop": dict(steps=12000, eval_every=500, val_lengths="42:300:11", val_samples=48,
                       early_stop=3),
    "annealed": dict(steps=4000),
    "annealed, d 64": dict(steps=4000, model_options={**BASE["model_options"], "d": 64}),
    "annealed + random offsets": dict(steps=4000, offsets="random"),
    "annealed + assoc 0.1": dict(steps=4000, assoc_weight=0.1),
}
RUNS = [("even-pairs", "early stop"), ("even-pairs", "annealed"),
        ("dyck-2", "early stop"), ("dyck-2", "annealed"), ("dyck-2", "annealed + assoc 0.1"),
        *[(task, v) for task in ("tomita-4", "prefix-4-2") for v in VARIANTS if v != "early stop"]]


def folder_of(task: str, variant: str, out: str | os.PathLike = OUT) -> Path:
    """A run's folder.

    >>> folder_of("dyck-2", "annealed + assoc 0.1").name
    'dyck-2__annealed-+-assoc-0.1'
    """
    from monoidlab._paths import slugify

    return Path(out) / f"{task}__{slugify(variant)}"


def config_of(task: str, variant: str) -> Any:
    from monoidlab.training.parse import config_from_dict

    return config_from_dict({**BASE, **VARIANTS[variant], "language": task}, variant)


def row_of(task: str, variant: str, res: dict) -> dict:
    """A table row from a run's results.json."""
    return {"task": task, "variant": variant, "solved": res["solved"], "steps": res["steps"],
            "secs": res["train_seconds"], "evaluation": res["evaluation"],
            "where": res["verdict"].split(":", 1)[1].strip() if not res["solved"] else "—"}


def finished(task: str, variant: str, out: str | os.PathLike = OUT) -> dict | None:
    """The run's results when it finished with the config it is asked for, else ``None``."""
    folder = folder_of(task, variant, out)
    done = folder / "results.json"
    if done.is_file() and json.loads((folder / "config.json").read_text(
            encoding="utf-8")) == config_of(task, variant).as_dict():
        result: dict = json.loads(done.read_text(encoding="utf-8"))
        return result
    return None


def table_text(rows: list[dict], wall: float, workers: int) -> str:
    """The section (markdown)."""
    from monoidlab.evaluation import min_beside_baselines as acc
    from monoidlab.evaluation.result import kinds_of

    kinds = kinds_of(r["evaluation"] for r in rows)  # the rows' kinds: the table's columns

    lines = ["## Choices of the 21-task sweep, each against its alternative", "",
             f"`monoidlab study ldru21-choices`: {len(rows)} runs, "
             f"{sum(r['secs'] for r in rows) / 60:.0f} min of training in all (one core each; "
             f"the *train s* column); its last invocation took {wall / 60:.0f} min wall with "
             f"{workers} workers (finished runs are reused). "
             + " ".join(ABOUT.replace("``", "`").split()), "",
             "| task | variant | solved | steps | "
             + " | ".join(f"min {'balanced' if k == 'paper' else k}" for k in kinds)
             + " | train s | where it fails |",  # 'balanced': the name these rows were run under
             "|---|---|---|---|" + "---|" * len(kinds) + "---|---|"]
    for r in rows:
        lines.append(f"| {r['task']} | {r['variant']} | {'**yes**' if r['solved'] else 'no'} | "
                     f"{r['steps']} | "
                     + " | ".join(acc(r["evaluation"], k) for k in kinds) +
                     f" | {r['secs']:.0f} | {r['where']} |")
    lines += ["", "In brackets: what a majority-class model / a count-only model scores on the "
              "same strings (mean over the scored lengths)."]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------ the study
def _read(path: Path, data: dict) -> tuple[str, str]:
    return os.devnull, OUT  # no ledger (see the module); out: relative to the current folder


def _plan(config: StudyConfig, ledger: dict) -> list[dict]:
    """Every run, in order; opens this invocation's wall-time record."""
    from monoidlab._paths import slugify

    out = Path(OUT).absolute()
    out.mkdir(parents=True, exist_ok=True)
    _write(out / WALL, {"started": time.time(), "wall": 0.0, "pids": []})
    return [{"id": f"{task}__{slugify(variant)}", "task": task, "variant": variant,
             "out": str(out)} for task, variant in RUNS]


def run_one(run: dict, config: StudyConfig) -> None:
    """Train one run (a finished one with the same config is reused); nothing for a ledger."""
    from monoidlab.training import train

    task, variant, out = run["task"], run["variant"], run["out"]
    if finished(task, variant, out) is None:
        train(config_of(task, variant), folder_of(task, variant, out), progress=False,
              overwrite=True)
    path = Path(out) / WALL
    if path.is_file():  # (a run on another machine has none to update)
        rec = json.loads(path.read_text(encoding="utf-8"))
        rec["wall"] = max(rec["wall"], round(time.time() - rec["started"], 1))
        rec["pids"] = sorted({*rec["pids"], os.getpid()})
        _write(path, rec)
    return None


def _write(path: Path, data: Any) -> None:
    from monoidlab._util import atomic_write_text

    atomic_write_text(path, json.dumps(data, ensure_ascii=True))


def _sections(config: StudyConfig, ledger: dict) -> dict[str, str]:
    """The table of the finished runs (those asked for), from their run folders."""
    from monoidlab.errors import ConfigError

    rows = [row_of(t, v, res) for t, v in RUNS if (res := finished(t, v)) is not None]
    if not rows:
        raise ConfigError(f"{Path(OUT).absolute()}: no finished run of the ldru21 choices "
                          "(`monoidlab study ldru21-choices` trains them)")
    path = Path(OUT) / WALL
    rec = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    return {"ldru21 choices": table_text(rows, rec.get("wall", 0.0),
                                         max(1, len(rec.get("pids", []))))}


STUDY = Study(name="ldru21-choices", plan=_plan, run=run_one, sections=_sections, read=_read,
              default_config="ldru21-cpu.toml",
              summary="the 21-task sweep's choices, each against its alternative")
