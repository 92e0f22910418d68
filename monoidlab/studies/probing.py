"""Probing: small models trained to a near-perfect score, probed against the same models at
initialisation (cluster agreement, linear probe, associativity on held-out triples;
configs/probing.toml; docs/probing.md, "Bench figures").

    monoidlab study probing [--models mlp-ldru,pr-lstm] [--languages parity] [--heldout disjoint]
    monoidlab study probing --table [--write-docs]

Each run is trained with the bundled trainer (its defaults except steps, batch 64, d = 64;
PR-LSTM hidden 64 and lr 3e-3: :data:`RUNS`), scored on lengths 41..500, and kept under the
config's ``out`` (``<language>-<model>``, resumable, reused for both held-out modes). The probes
use held-out strings (``heldout = "lengths"``: lengths 41..80, beyond training; ``"disjoint"``:
lengths 1..40, the training strings regenerated and excluded). One ledger row per language,
model and held-out mode (docs/data/probing.jsonl); the tables print per run the trained and the
initial model's measures. ``--models``, ``--languages`` and ``--heldout`` replace the config's
choices (any of :data:`RUNS`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from monoidlab.errors import ConfigError
from monoidlab.studies.runner import Study, StudyConfig, train_or_resume

LEDGER = "docs/data/probing.jsonl"
HELDOUT = ("lengths", "disjoint")
RUNS = {  # (language, model) -> steps, model_options, other config keys
    ("parity", "mlp-ldru"): (400, {"d": 64}, {}),
    ("cycle-navigation", "mlp-ldru"): (600, {"d": 64}, {}),
    # PR-LSTM needs more steps and a higher lr to solve these on CPU in minutes
    ("parity", "pr-lstm"): (2000, {"hidden": 64}, {"lr": 3e-3}),
    ("cycle-navigation", "pr-lstm"): (5000, {"hidden": 64}, {"lr": 3e-3}),
}


def run_config(lang: str, model: str, test_samples: int) -> Any:
    from monoidlab.training.parse import config_from_dict

    steps, kw, extra = RUNS[(lang, model)]
    return config_from_dict(dict(language=lang, model=model, steps=steps, batch_size=64,
                                 model_options=kw, test_samples=test_samples, threads=1, seed=0,
                                 **extra), f"{lang}-{model}")


def row(m: dict) -> dict:
    """The measures of one model (trained or initial) from the probe's metrics."""
    agr = {a["method"]: a for a in m["agreement"] if a["level"] == "all"}
    levels = [a for a in m["agreement"] if a["method"] == "kmeans" and a["level"] != "all"]
    out = {f"{k}_{s}": agr[k][s] for k in agr for s in ("ari", "nmi")}
    out["kmeans_ari_top_level"] = levels[-1]["ari"] if levels else float("nan")
    out["probe_acc"], out["probe_chance"] = m["probe"]["accuracy"], m["probe"]["chance"]
    a = m.get("associativity", {}).get("overall", {})
    for k in ("cos_mean", "cos_median", "rel_l2_mean", "rel_l2_median", "head_same",
              "head_true", "probe_true", "id_right_rel_mean", "id_left_rel_mean"):
        out[k] = a.get(k, float("nan"))
    return {k: float(v) for k, v in out.items()}


def report(r: dict) -> str:
    """One run's table, as printed."""
    how = " [reused]" if r["reused"] else f", trained in {r['train_s']:.0f} s"
    lines = [f"== {r['model']} on {r['language']}: {r['steps']} steps, score {r['score']:.4f} "
             f"on 41..500 (min {r['min_accuracy']:.3f}){how}; "
             f"probed in {r['probe_seconds']:.0f} s",
             f"   {r['heldout']['description']}; {r['n_nodes']} nodes, {r['n_ecs']} ECs",
             f"   {'measure':<22}{'trained':>10}{'init':>10}"]
    for k in r["trained"]:
        lines.append(f"   {k:<22}{r['trained'][k]:>10.4f}{r['init'][k]:>10.4f}")
    return "\n".join(lines)


def _num(o: Any) -> Any:
    return float(o) if isinstance(o, np.floating | np.integer) else str(o)


# ------------------------------------------------------------------------------ the study
def _read(path: Path, data: dict) -> tuple[str, str]:
    study = data.get("study")
    if not isinstance(study, dict):
        raise ConfigError(f"{path}: a probing study needs the table [study]")
    missing = [k for k in ("languages", "models", "heldout", "n_strings", "n_triples",
                           "test_samples") if k not in study]
    if missing:
        raise ConfigError(f"{path}: a probing study is missing {', '.join(missing)}")
    if study["heldout"] not in HELDOUT:
        raise ConfigError(f"{path}: heldout is one of {', '.join(HELDOUT)}, got "
                          f"{study['heldout']!r}")
    return study.get("ledger", LEDGER), study.get("out", "runs/probing")


def _plan(config: StudyConfig, ledger: dict, models: str | None = None,
          languages: str | None = None, heldout: str | None = None) -> list[dict]:
    """Every model × language (models first), each probed held out the chosen way."""
    study = config.data["study"]
    chosen_models = models.split(",") if models else study["models"]
    chosen_langs = languages.split(",") if languages else study["languages"]
    mode = heldout or study["heldout"]
    if mode not in HELDOUT:
        raise ConfigError(f"--heldout: one of {', '.join(HELDOUT)}, got {mode!r}")
    unknown = [f"{lang}/{model}" for model in chosen_models for lang in chosen_langs
               if (lang, model) not in RUNS]
    if unknown:
        raise ConfigError(f"no probing run for {', '.join(unknown)}; the runs: "
                          + ", ".join(f"{lang}/{model}" for lang, model in RUNS))
    return [{"id": f"{lang}__{model}__{mode}", "language": lang, "model": model,
             "heldout": mode, "order": i}
            for i, (model, lang) in enumerate((m, la) for m in chosen_models
                                              for la in chosen_langs)]


def run_one(run: dict, config: StudyConfig) -> dict:
    """Train (or reuse) one model and probe it against its initialisation: its ledger row."""
    from monoidlab._util import inference
    from monoidlab.probing import probe_checkpoint

    study = config.data["study"]
    lang, model = run["language"], run["model"]
    folder = config.out / f"{lang}-{model}"
    reused = (folder / "results.json").is_file()
    t0 = time.time()
    tr = train_or_resume(run_config(lang, model, study["test_samples"]), folder)
    t1 = time.time()
    lengths = None if run["heldout"] == "lengths" else range(1, 41)
    with inference():  # one thread, no gradients; the caller's settings come back
        res = probe_checkpoint(folder, n_strings=study["n_strings"], lengths=lengths,
                               mode=run["heldout"], n_triples=study["n_triples"], seed=0)
    m = res["metrics"]
    out = {"id": run["id"], "language": lang, "model": model, "order": run["order"],
           "steps": tr["steps"], "score": tr["paper_score"],
           "min_accuracy": min(tr["min_accuracy"].values()), "reused": reused,
           "train_s": round(t1 - t0, 1), "probe_seconds": round(time.time() - t1, 1),
           "heldout": m["heldout"], "n_nodes": m["trained"]["n_nodes"],
           "n_ecs": m["trained"]["n_ecs"], "trained": row(m["trained"]), "init": row(m["init"])}
    out = json.loads(json.dumps(out, default=_num))  # numpy scalars in the metrics: plain JSON
    print(report(out), flush=True)
    return out


def _sections(config: StudyConfig, ledger: dict) -> dict[str, str]:
    if not ledger:
        raise ConfigError(f"{config.ledger}: no model probed yet (`monoidlab study probing` "
                          "trains and probes them)")
    rows = sorted(ledger.values(),  # by held-out mode (the id's end), then in the plan's order
                  key=lambda r: (r["id"].rsplit("__", 1)[-1], r["order"], r["id"]))
    return {config.data["study"].get("section", "probing"):
            "```\n" + "\n\n".join(report(r) for r in rows) + "\n```"}


STUDY = Study(name="probing", plan=_plan, run=run_one, sections=_sections, read=_read,
              default_config="probing.toml", options=("models", "languages", "heldout"),
              summary="probes of trained tree models against the same models at initialisation")
