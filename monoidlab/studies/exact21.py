"""The 21 regular tasks with the depth-exact models: strict verdict, baselines, certificate
(configs/exact21.toml: the sweep files of the snapped MLP-LDRU, the transformation tree model,
the snapped PR-LSTM and the transformation tree with spare states).

    monoidlab study exact21 [--workers 2]            # trains or resumes what the ledger lacks
    monoidlab study exact21 --table [--write-docs]   # the table, from the ledger

Each run of each sweep is trained (or resumed) in the sweep's own run folder, its tested weights
are certified (``monoidlab certify``: cached in the run folder as certificate.json), and one row
is appended to the ledger (docs/data/exact21.jsonl), so the table outlives the run folders. The
table: per task and model, the strict verdict with each kind's minimum beside the
majority-class / count-only baselines, the certificate's verdict, the training time; beside
them the plain MLP-LDRU's verdict from docs/results.md (section "ldru21 cpu").
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

from monoidlab.errors import ConfigError
from monoidlab.studies.runner import Study, StudyConfig, solved_in_section, train_or_resume

#: the first recipe of each depth-exact model: their rows are keyed by the sweep id alone
FIRST = ("configs/exact21-snap-cpu.toml", "configs/exact21-transform-cpu.toml",
         "configs/exact21-prlstm-snap-cpu.toml")


GOAL = 18  # tasks certified correct at every length by at least one depth-exact model
BUDGET_S = 15 * 60  # each within 15 minutes of one core


def certificate_of(run: Path) -> dict:
    """The certificate of a finished run (computed once, then read from certificate.json)."""
    from monoidlab._util import atomic_write_json
    from monoidlab.probing.certify import certify

    cached = run / "certificate.json"
    if cached.is_file():
        c = json.loads(cached.read_text())
        # computed again: a certificate cached before certificates took the run's
        # sub-language (no "within" field; on modular arithmetic the claim differs) and a
        # budget's refusal (a later certifier may decide it: the automaton certificate)
        if "within" in c.get("certificate", {}):
            return c
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


def ledger_id(sweep: str, run_id: str, first: Sequence[str] = FIRST) -> str:
    """A run's key in the ledger: its sweep id, prefixed by the sweep file's name for a sweep
    that reruns a model of the ``first`` ones (a second recipe of the same model).

    >>> ledger_id("configs/exact21-snap-cpu.toml", "parity__mlp-ldru-snap__s0")
    'parity__mlp-ldru-snap__s0'
    >>> ledger_id("configs/exact21-transform-x2-cpu.toml", "parity__transform-tree__s0")
    'exact21-transform-x2-cpu:parity__transform-tree__s0'
    """
    stem = Path(sweep).stem
    return run_id if stem in {Path(x).stem for x in first} else f"{stem}:{run_id}"


#: the training lengths of the depth-exact models' recipe 'languages'
RECIPE_LENGTHS = "1:40"


def label_of(row: dict) -> str:
    """The model as the table names it: a transformation tree with spare states says so, a run
    trained at lengths other than its recipe's (a sweep's per-task lengths) too, and a run with
    a length curriculum.

    >>> label_of({"model": "transform-tree", "model_options": {"state_factor": 2}})
    'transform-tree (n = 2 x minimal)'
    >>> label_of({"model": "transform-tree", "model_options": {"state_factor": 2},
    ...           "train_lengths": "1:9"})
    'transform-tree (n = 2 x minimal, per-task training lengths)'
    >>> label_of({"model": "transform-tree", "model_options": {"state_factor": 2},
    ...           "curriculum_start": 8})
    'transform-tree (n = 2 x minimal, length curriculum from 8)'
    >>> label_of({"model": "transform-tree", "model_options": {"state_factor": 2,
    ...           "relaxation": "soft"}, "curriculum_start": 8, "distil": "lstar"})
    'transform-tree (n = 2 x minimal, length curriculum from 8, soft relaxation, distilled by L*)'
    """
    options = row.get("model_options") or {}
    factor = options.get("state_factor", 1)
    parts = [f"n = {factor} x minimal"] if factor and factor > 1 else []
    if row.get("train_lengths") not in (None, RECIPE_LENGTHS):
        parts.append("per-task training lengths")
    if row.get("curriculum_start"):
        parts.append(f"length curriculum from {row['curriculum_start']}")
    if options.get("relaxation") == "soft":
        parts.append("soft relaxation")
    if row.get("distil"):
        parts.append("distilled by L*")
    return row["model"] + (f" ({', '.join(parts)})" if parts else "")


def row_of(run_id: str, run: Path, results: dict, cfg: dict) -> dict:
    """One table row (JSON) from a finished run folder."""
    cert = certificate_of(run)
    ev = results.get("evaluation") or {}
    return {"id": run_id, "task": results["problem"], "model": cfg["model"],
            "model_options": cfg["model_options"], "seed": cfg["seed"],
            "train_lengths": str(cfg.get("train_lengths", RECIPE_LENGTHS)),
            **_recipe_fields(cfg),
            "solved": results["solved"], "verdict": results.get("verdict", ""),
            "steps": results["steps"], "attempts": results.get("attempts", 1),
            "train_seconds": results["train_seconds"],
            "summary": ev.get("summary", []),
            "certified": bool(cert["correct"]), "certificate": cert["verdict"],
            "certified_all_strings": bool(cert.get("all_strings", cert)["correct"]),
            "certify_seconds": cert.get("seconds")}


def table(rows: list[dict], plain: dict[str, bool], goal: int = 18, budget_s: int = 900
          ) -> str:
    """The results table (markdown): ``goal`` tasks certified, each within ``budget_s``."""
    from monoidlab.evaluation import min_beside_baselines as acc
    from monoidlab.evaluation.result import kinds_of

    kinds = kinds_of({"summary": x["summary"]} for x in rows)  # the rows' kinds: the columns
    lines = ["| task | model | solved | " + " | ".join(f"min {k}" for k in kinds)
             + " | certificate | train s | plain MLP-LDRU solved |",
             "|---|---|---|" + "---|" * len(kinds) + "---|---|---|"]
    for x in sorted(rows, key=lambda x: (TASK_ORDER.get(x["task"], 99), label_of(x))):
        ev = {"summary": x["summary"]}
        # "certificate of MODEL (...): VERDICT" -> VERDICT; a budget's refusal stays whole
        cert = x["certificate"].split("): ", 1)[1] if x["certificate"].startswith(
            "certificate of") and "): " in x["certificate"] else x["certificate"]
        lines.append(f"| {x['task']} | {label_of(x)} | {'**yes**' if x['solved'] else 'no'} | "
                     + " | ".join(acc(ev, k) for k in kinds)
                     + f" | {'**proved** ' if x['certified'] else ''}{cert} | "
                     f"{x['train_seconds']:.0f} | "
                     f"{_yes_no(plain.get(x['task']))} |")
    tasks = sorted({x["task"] for x in rows}, key=lambda t: TASK_ORDER.get(t, 99))
    certified = sorted({x["task"] for x in rows if x["certified"]},
                       key=lambda t: TASK_ORDER.get(t, 99))
    in_budget = sorted({x["task"] for x in rows if x["certified"]
                        and x["train_seconds"] <= budget_s}, key=lambda t: TASK_ORDER.get(t, 99))
    by_model: dict[str, list[int]] = {}
    for x in rows:
        s = by_model.setdefault(label_of(x), [0, 0, 0])
        s[0] += 1
        s[1] += x["solved"]
        s[2] += x["certified"]
    # rows from before certificates took the run's sub-language were over every string
    every = {x["task"] for x in rows if x.get("certified_all_strings", x["certified"])}
    only_sub = [t for t in certified if t not in every]
    lines += ["", f"**Certified correct at every length by at least one depth-exact model: "
              f"{len(certified)} of {len(tasks)} tasks with a finished run** "
              f"({len(in_budget)} within {budget_s // 60} minutes of training; goal: {goal} "
              f"of 21): {', '.join(certified) or 'none'}."
              + (f" Of these, {', '.join(only_sub)} on the run's sub-language only (its "
                 f"well-formed strings: what it is trained and tested on); over every string "
                 f"{len(certified) - len(only_sub)} of {len(tasks)}." if only_sub else ""),
              "Per model (runs / strictly solved / certified): " + "; ".join(
                  f"{m}: {a} / {b} / {c}" for m, (a, b, c) in sorted(by_model.items())) + "."]
    if plain:
        lines.append(f"The plain MLP-LDRU (section 'ldru21 cpu', same budget, per-task "
                     f"overrides chosen after test scores) strictly solved "
                     f"{sum(plain.values())} of {len(plain)}.")
    return "\n".join(lines) + "\n"


def _yes_no(solved: bool | None) -> str:
    return "—" if solved is None else "yes" if solved else "no"


TASK_ORDER = {t: i for i, t in enumerate([
    "parity", "even-pairs", "cycle-navigation", "modular-arithmetic", "dyck-2", "dyck-3", "dyck-4",
    "dyck-6", "dyck-8", "dyck-12", "tomita-3", "tomita-4", "tomita-5", "tomita-6", "tomita-7",
    "prefix-1-2", "prefix-1-4", "prefix-2-2", "prefix-2-4", "prefix-4-2", "prefix-4-4"])}


# ------------------------------------------------------------------------------ the study
def _read(path: Path, data: dict) -> tuple[str, str]:
    study = data.get("study")
    if not isinstance(study, dict) or not isinstance(study.get("sweeps"), list):
        raise ConfigError(f"{path}: [study] needs 'sweeps', the list of sweep files")
    if "ledger" not in study:
        raise ConfigError(f"{path}: [study] is missing 'ledger'")
    return study["ledger"], study.get("out", "runs")


def _sweeps(config: StudyConfig) -> list[tuple[str, dict]]:
    """(the sweep file as the config names it, the sweep read) for every sweep of the study."""
    from monoidlab.training.sweep import load_sweep

    return [(s, load_sweep(config.resolve(s))) for s in config.data["study"]["sweeps"]]


def _plan(config: StudyConfig, ledger: dict, reverse: str = "") -> list[dict]:
    first = config.data["study"].get("first", FIRST)
    runs = [{"id": ledger_id(name, r["id"], first), "run_id": r["id"], "sweep": name,
             "folder": str(config.resolve(sweep["out"]) / r["id"]), "config": r["config"]}
            for name, sweep in _sweeps(config) for r in sweep["runs"]]
    return runs[::-1] if reverse.lower() in ("1", "true", "yes") else runs


def run_one(run: dict, config: StudyConfig) -> dict:
    """Train (or resume) one run of a sweep, certify it: its ledger row. A run refused before
    training (a memory or work limit) is a row too, not the end of the study."""
    import torch

    from monoidlab.errors import MonoidTooLarge

    torch.set_num_threads(1)
    folder = Path(run["folder"])
    cfg = run["config"].as_dict()
    try:
        results = train_or_resume(run["config"], folder)
    except (ConfigError, MonoidTooLarge) as exc:
        if (folder / "checkpoint.pt").is_file():  # trained, then failed to continue: the user's
            raise
        return refused_row(run["id"], cfg, str(exc).splitlines()[0])
    return row_of(run["id"], folder, results, cfg)


def refused_row(run_id: str, cfg: dict, message: str) -> dict:
    """The row of a run refused before training: not solved, not certified, no training time.

    >>> r = refused_row("x", {"language": "prefix-4-4", "model": "transform-tree",
    ...                 "model_options": {}, "seed": 0}, "too big")
    >>> r["certified"], r["certificate"], r["train_seconds"]
    (False, 'refused before training: too big', 0.0)
    """
    return {"id": run_id, "task": Path(str(cfg["language"])).stem, "model": cfg["model"],
            "model_options": cfg["model_options"], "seed": cfg["seed"],
            "train_lengths": str(cfg.get("train_lengths", RECIPE_LENGTHS)),
            **_recipe_fields(cfg), "solved": False, "verdict": "refused", "steps": 0,
            "attempts": 0, "train_seconds": 0.0, "summary": [], "certified": False,
            "certificate": f"refused before training: {message}",
            "certified_all_strings": False, "certify_seconds": None, "refused": message}


def _recipe_fields(cfg: dict) -> dict:
    """What names a run's recipe in its row beyond the model's options."""
    out: dict = {}
    if cfg.get("curriculum_start"):
        out["curriculum_start"] = cfg["curriculum_start"]
    if cfg.get("distil", "none") != "none":
        out["distil"] = cfg["distil"]
    return out


def _rows(config: StudyConfig, ledger: dict) -> list[dict]:
    """The ledger's rows of the study's runs, in the plan's order."""
    return [ledger[r["id"]] for r in _plan(config, ledger) if r["id"] in ledger]


def text_of(config: StudyConfig, ledger: dict) -> str:
    study = config.data["study"]
    page = config.root / "docs" / "results.md"
    results = page.read_text(encoding="utf-8") if page.is_file() else ""
    section = study.get("plain_section", "ldru21 cpu")
    plain = solved_in_section(results, section) if f"begin {section}" in results else {}
    names = ", ".join(Path(s).name for s in study["sweeps"])
    return ("## The depth-exact models on the 21 tasks\n\n`monoidlab study exact21 "
            f"--write-docs` (configs/{config.path.name}; sweeps: {names}; each "
            "model's own recipe ('languages', or the one its sweep file names), fixed before "
            "the runs). Strict evaluation on "
            "41..500, 64 strings per length and kind; in brackets what a majority-class / a "
            "count-only model scores on the same strings. *Certificate*: `monoidlab certify` on "
            "the tested weights (offset 0, the tests' layout): proved correct at every length, "
            "or the shortest string the model gets wrong.\n\n"
            + table(_rows(config, ledger), plain, study.get("goal", GOAL),
                    study.get("budget_s", BUDGET_S)))


def _sections(config: StudyConfig, ledger: dict) -> dict[str, str]:
    return {config.data["study"].get("section", "exact21"): text_of(config, ledger)}


STUDY = Study(name="exact21", plan=_plan, run=run_one, sections=_sections, read=_read,
              layout="appended", default_config="exact21.toml", options=("reverse",),
              summary="the 21 tasks with the depth-exact models and their certificates")
