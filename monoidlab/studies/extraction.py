"""What did the model learn? Extraction cost and results on strictly solved MLP-LDRU models
(configs/extraction.toml; docs/probing.md, "Cost").

    monoidlab study extraction [--workers 2]          # trains (or reuses) the models, extracts
    monoidlab study extraction --runs DIR             # every finished run folder under DIR
    monoidlab study extraction --table [--write-docs]

Trains (or reuses, under the config's ``out``: a run is reused while its config.json is still
the one asked for) MLP-LDRU on dyck-2 and tomita-4 with the recipe of configs/ldru21-cpu.toml
(:data:`BASE`, :data:`MODELS`: d 32, identity padding, near_miss sampler, Adam 3e-3 cosine, batch
64, lengths 1..40, 4000 steps; tomita-4 with assoc_weight 0.1, dyck-2 without: the variants
`monoidlab study ldru21-choices` found solved), plus one deliberately unsolved tomita-4 model
(lengths 1..12, 1000 steps), each strictly evaluated on 41..500. For each model it times
``extract_automaton`` (L*, AALpy; the config's ``max_states``) and ``extract_monoid`` on one core
and records the number of membership queries, the oracle's strings, forward passes and both
comparisons: one ledger row per model (docs/data/extraction.jsonl).

``--runs DIR`` (or ``[study] runs``) instead extracts from every finished run folder under DIR
(e.g. the 21-task sweep's runs/ldru21-cpu); the table then counts, for the strictly solved ones,
how many extract to the true automaton and how many operator tables are isomorphic to the
syntactic monoid. ``[study] solved_only`` keeps the strictly solved runs and those named in
``also``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from monoidlab.errors import ConfigError
from monoidlab.studies.runner import Study, StudyConfig

LEDGER = "docs/data/extraction.jsonl"
BASE: dict[str, Any] = dict(
    model="mlp-ldru", batch_size=64, lr=3e-3, lr_schedule="cosine", clip=1.0,
    model_options={"d": 32, "dropout": 0.0, "padding": "identity"},
    train_lengths="1:40", test_lengths="41:500", test_samples=64, sampler="near_miss",
    checkpoint_every=1000, log_every=250, threads=1, device="cpu", seed=0)
MODELS: dict[str, dict[str, Any]] = {
    "dyck-2": dict(language="dyck-2", steps=4000),
    "tomita-4": dict(language="tomita-4", steps=4000, assoc_weight=0.1),
    "tomita-4 (unsolved: lengths 1..12, 1000 steps)": dict(
        language="tomita-4", steps=1000, assoc_weight=0.1, train_lengths="1:12"),
}


def trained(name: str, keys: dict, out: Path) -> tuple[Path, bool]:
    """A finished run folder for ``keys`` (reused when its config matches) and its verdict."""
    from monoidlab._paths import slugify
    from monoidlab.training import train
    from monoidlab.training.parse import config_from_dict

    cfg = config_from_dict({**BASE, **keys}, name)
    folder = out / slugify(name)
    done = folder / "results.json"
    if done.is_file() and json.loads((folder / "config.json").read_text(
            encoding="utf-8")) == cfg.as_dict():
        res = json.loads(done.read_text(encoding="utf-8"))
    else:
        t0 = time.perf_counter()
        res = train(cfg, folder, progress=False, overwrite=True)
        print(f"  trained {name} in {time.perf_counter() - t0:.0f} s", flush=True)
    return folder, bool(res["solved"])


def extract(run: Path, max_states: int = 64) -> dict:
    """Both extractions of one run folder, timed on one thread."""
    from monoidlab._util import inference
    from monoidlab.probing.extract_automaton import extract_automaton
    from monoidlab.probing.extract_monoid import extract_monoid

    with inference():  # one thread, no gradients; the caller's settings come back
        t0 = time.perf_counter()
        a = extract_automaton(run, max_states=max_states)
        ta = time.perf_counter() - t0
        t0 = time.perf_counter()
        m = extract_monoid(run)
        tm = time.perf_counter() - t0
    return {"automaton_s": round(ta, 1), "monoid_s": round(tm, 1), "automaton": a.to_dict(),
            "monoid": m.to_dict(), "automaton_text": a.text(), "monoid_text": m.text()}


def row(name: str, solved: bool, r: dict) -> str:
    a, m = r["automaton"], r["monoid"]
    return (f"| {name} | {'yes' if solved else 'no'} | {a['n_states']} / "
            f"{a['comparison']['true_states']} | {'yes' if a['comparison']['isomorphic'] else 'no'}"
            f" | {a['membership_queries']} ({a['model_queries']} new) | {a['oracle_strings']} | "
            f"{a['forward_passes']} | {r['automaton_s']} | {m['k']} / {m['true_size']} | "
            f"{m['associativity']['failing']} | "
            f"{'yes' if m['comparison']['isomorphic'] else 'no'} | {r['monoid_s']} |")


HEADER = ("| model | strictly solved | states (extracted / true) | automaton isomorphic | "
          "membership queries | oracle strings | forward passes | L* s | k / true |M| | "
          "non-associative triples | monoid isomorphic | monoid s |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|")


def report(results: list[tuple[str, bool, dict]]) -> str:
    """The table, the counts and the unsolved models' extractions (as printed)."""
    lines = [HEADER] + [row(name, solved, r) for name, solved, r in results]
    solved = [r for _, s, r in results if s]
    lines.append(f"\nstrictly solved: {len(solved)}; extract to the true automaton: "
                 f"{sum(r['automaton']['comparison']['isomorphic'] for r in solved)}; operator "
                 f"table isomorphic to the syntactic monoid: "
                 f"{sum(r['monoid']['comparison']['isomorphic'] for r in solved)}")
    for name, s, r in results:
        if not s:
            lines.append(f"\nunsolved: {name}\n{r['automaton_text']}\n{r['monoid_text']}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------ the study
def _read(path: Path, data: dict) -> tuple[str, str]:
    study = data.get("study")
    if not isinstance(study, dict) or not isinstance(study.get("max_states"), int):
        raise ConfigError(f"{path}: an extraction study needs [study] max_states (L*'s budget "
                          "on hypothesis states)")
    return study.get("ledger", LEDGER), study.get("out", "runs/extraction")


def _plan(config: StudyConfig, ledger: dict, runs: str | None = None) -> list[dict]:
    """The models of :data:`MODELS`, or every finished run folder under ``runs``."""
    from monoidlab._paths import slugify

    study = config.data["study"]
    where = runs or study.get("runs")
    if not where:
        return [{"id": slugify(name), "name": name, "order": i}
                for i, name in enumerate(MODELS)]
    also = set(study.get("also", []))
    out = []
    for run in sorted(p.parent for p in config.resolve(where).glob("*/results.json")):
        solved = bool(json.loads((run / "results.json").read_text(encoding="utf-8"))["solved"])
        if study.get("solved_only", False) and not solved and run.name not in also:
            continue
        out.append({"id": run.name, "name": run.name, "folder": str(run), "solved": solved,
                    "order": len(MODELS)})
    if not out:
        raise ConfigError(f"no finished run folder (results.json) under {where}")
    return out


def run_one(run: dict, config: StudyConfig) -> dict:
    """Train (or reuse) one model, or take one run folder; extract: its ledger row."""
    if "folder" in run:
        folder, solved = Path(run["folder"]), run["solved"]
        print(f"  extracting {run['name']}", flush=True)
    else:
        folder, solved = trained(run["name"], MODELS[run["name"]], config.out)
    return {"id": run["id"], "name": run["name"], "solved": solved, "order": run["order"],
            **extract(folder, config.data["study"]["max_states"])}


def _sections(config: StudyConfig, ledger: dict) -> dict[str, str]:
    if not ledger:
        raise ConfigError(f"{config.ledger}: no model extracted yet (`monoidlab study "
                          "extraction` trains and extracts them)")
    rows = sorted(ledger.values(), key=lambda r: (r.get("order", len(MODELS)), r["name"]))
    return {config.data["study"].get("section", "extraction"):
            report([(r["name"], r["solved"], r) for r in rows])}


STUDY = Study(name="extraction", plan=_plan, run=run_one, sections=_sections, read=_read,
              default_config="extraction.toml", options=("runs",),
              summary="what the models learned: automaton and monoid extraction, cost")
