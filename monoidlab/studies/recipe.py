"""The authors' recipe against the defaults at CPU scale (why ``recipe = "authors"`` is not the
default; configs/recipe.toml): MLP-LDRU trained with each recipe for the same number of steps on
the same language and seed, one torch thread, then the strict evaluation on a few test lengths.

    monoidlab study recipe [--workers 2]            # parity and dyck-4, 1000 steps each
    monoidlab study recipe --table [--write-docs]

The recipe differs in optimiser (optax's AMSGrad), lr (1e-4 for D_n), 20% warm-up from 1e-8,
gradient centralisation, batch 256, the ``ldru`` sampler for D_n and Tomita, haiku init and
dropout; ``steps`` is the same for both (a recipe never sets it). Each run trains into
``out/<language>__<recipe>`` (resumable); one ledger row per run (docs/data/recipe.jsonl).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from monoidlab.errors import ConfigError
from monoidlab.studies.runner import Study, StudyConfig, train_or_resume

LEDGER = "docs/data/recipe.jsonl"
SECTION = "recipe against defaults"


def run_config(language: str, recipe: str, steps: int, seed: int, train: dict) -> Any:
    """One run's config: the recipe's settings, the study's shared keys."""
    from monoidlab.training.parse import config_from_dict

    return config_from_dict({"language": language, "recipe": recipe, "steps": steps,
                             "seed": seed, **train})


def row_of(folder: Path, cfg: Any, result: dict, language: str, recipe: str,
           wall: float) -> dict:
    """A table row from a finished run (its metrics.jsonl for the last logged losses)."""
    lines = [json.loads(x) for x in (folder / "metrics.jsonl").read_text(
        encoding="utf-8").splitlines()]
    losses = [x["loss"] for x in lines if "loss" in x]
    return {"language": language, "recipe": recipe, "steps": cfg.steps,
            "optimizer": cfg.optimizer, "lr": cfg.lr, "batch": cfg.batch_size,
            "sampler": cfg.sampler, "loss_last_100": sum(losses[-2:]) / max(1, len(losses[-2:])),
            "paper_score": result["paper_score"], "min_accuracy": result["min_accuracy"],
            "solved": result["solved"], "wall_s": round(wall, 1)}


def table(rows: list[dict], steps: int, seed: int, test_lengths: str, samples: int) -> str:
    """The table and its footnote (markdown)."""
    from monoidlab.geometry import length_array

    out = ["| language | recipe | optimiser, lr, batch, sampler | training loss (last two "
           "logged steps) | balanced score | min accuracy per kind | strictly solved | wall (s) |",
           "|---|---|---|---:|---:|---|---|---:|"]
    for r in rows:
        mins = ", ".join(f"{k} {v:.2f}" for k, v in r["min_accuracy"].items())
        out.append(f"| {r['language']} | {r['recipe']} | {r['optimizer']}, {r['lr']:g}, "
                   f"{r['batch']}, {r['sampler']} | {r['loss_last_100']:.3f} | "
                   f"{r['paper_score']:.3f} | {mins} | {'yes' if r['solved'] else 'no'} | "
                   f"{r['wall_s']:.0f} |")
    lengths = ", ".join(map(str, length_array(test_lengths, "test_lengths")))
    out += ["", f"{steps} steps each, seed {seed}, MLP-LDRU at each recipe's settings, one "
            f"thread; test lengths {lengths} with {samples} strings per length and kind."]
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------ the study
def _read(path: Path, data: dict) -> tuple[str, str]:
    study = data.get("study")
    if not isinstance(study, dict) or not isinstance(data.get("train"), dict):
        raise ConfigError(f"{path}: a recipe study needs the tables [study] and [train]")
    missing = [k for k in ("languages", "recipes", "steps", "seed") if k not in study]
    missing += [f"train.{k}" for k in ("test_lengths", "test_samples") if k not in data["train"]]
    if missing:
        raise ConfigError(f"{path}: a recipe study is missing {', '.join(missing)}")
    return study.get("ledger", LEDGER), study.get("out", "runs/recipe")


def _plan(config: StudyConfig, ledger: dict) -> list[dict]:
    study = config.data["study"]
    return [{"id": f"{language}__{recipe}", "language": language, "recipe": recipe}
            for language in study["languages"] for recipe in study["recipes"]]


def run_one(run: dict, config: StudyConfig) -> dict:
    """Train one run with its recipe (or read it, finished): its ledger row."""
    study = config.data["study"]
    cfg = run_config(run["language"], run["recipe"], study["steps"], study["seed"],
                     config.data["train"])
    folder = config.out / run["id"]
    t0 = time.time()
    result = train_or_resume(cfg, folder)
    return {"id": run["id"], **row_of(folder, cfg, result, run["language"], run["recipe"],
                                      time.time() - t0)}


def _sections(config: StudyConfig, ledger: dict) -> dict[str, str]:
    order = [r["id"] for r in _plan(config, ledger)]
    rows = sorted((r for r in ledger.values() if r["id"] in order),
                  key=lambda r: order.index(r["id"]))
    if not rows:
        raise ConfigError(f"{config.ledger}: no run yet (`monoidlab study recipe` trains them)")
    study, train = config.data["study"], config.data["train"]
    return {study.get("section", SECTION): table(rows, study["steps"], study["seed"],
                                                 train["test_lengths"], train["test_samples"])}


STUDY = Study(name="recipe", plan=_plan, run=run_one, sections=_sections, read=_read,
              default_config="recipe.toml",
              summary="the authors' recipe against the defaults at CPU scale")
