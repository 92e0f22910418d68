"""Is a strict verdict the model's, or its test strings'? The same weights on fresh test sets
(configs/fresh-test.toml).

    monoidlab study fresh-test [--runs DIR[,DIR...]] [--workers 2]   # scores what the ledger lacks
    monoidlab study fresh-test --table [--write-docs]

A run's test strings are seeded by its ``seed``; a recipe chosen among variants by how they did
on those strings is partly the one luckiest on them (tomita-3 in docs/results.md). For each run
folder of the config's ``runs`` (or of ``--runs``, relative to the repository; a sweep's ``out``
stands for the run folders in it) this reads the wrong strings of the run's own test set from its
results.json, then scores the tested weights on fresh sets of the same lengths, kinds, size and
distribution, one per seed of the config (what ``monoidlab evaluate --test-seed S`` does): one
ledger row per run (docs/data/fresh-test.jsonl), the wrong strings and the strict verdict per set.
``solved_only`` keeps the runs whose own test set was strictly solved. Inference only, one thread.
Each row's table line is printed as its run ends; the section shows the rows of the config's own
``runs`` (rows of ``--runs`` elsewhere are kept in the ledger, not shown).

The committed section (docs/results.md, "fresh test sets") was written by the script this study
replaces, from run folders the repository does not hold; its ledger starts empty.

The run folders of the folder studies (this one, ``bracketing``, ``blame``, ``drift``) are found
by :func:`run_folders` and named in their ledgers by :func:`run_id`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from monoidlab.errors import ConfigError
from monoidlab.studies.runner import Study, StudyConfig, fresh_checks, wrong_strings

LEDGER = "docs/data/fresh-test.jsonl"
SECTION = "fresh test sets"


# ------------------------------------------------------------------------ folder studies
def run_folders(config: StudyConfig, runs: str | None = None, pattern: str = "*",
                finished: bool = True) -> list[Path]:
    """The run folders a folder study measures: ``runs`` (a comma list) else the config's
    ``[study] runs``, relative to the repository; a folder without a config.json stands for the
    run folders in it whose names match ``pattern`` (sorted). ``finished``: only those with a
    results.json. None found is an error naming the folders."""
    given = [r for r in runs.split(",") if r] if runs else config.data["study"].get("runs", [])
    if isinstance(given, str):
        given = [given]
    out: list[Path] = []
    for p in (config.resolve(r) for r in given):
        inside = [p] if (p / "config.json").is_file() else sorted(
            q for q in p.glob(pattern) if q.is_dir())
        out += [r for r in inside if (r / "config.json").is_file()
                and (not finished or (r / "results.json").is_file())]
    if not out:
        what = "finished run folder (config.json, results.json)" if finished else \
            "run folder (config.json)"
        raise ConfigError(f"no {what} in {' '.join(map(str, given)) or '(no runs given)'}")
    return out


def run_id(config: StudyConfig, folder: Path) -> str:
    """A run folder's ledger id: its path relative to the repository (else absolute).

    >>> from pathlib import Path
    >>> c = StudyConfig(Path("/r/configs/x.toml"), Path("/r"), {}, Path("/r/l"), Path("/r/o"))
    >>> run_id(c, Path("/r/runs/a__mlp-ldru__s0")), run_id(c, Path("/elsewhere/b"))
    ('runs/a__mlp-ldru__s0', '/elsewhere/b')
    """
    try:
        return folder.relative_to(config.root).as_posix()
    except ValueError:
        return folder.as_posix()


def configured(config: StudyConfig, ledger: dict) -> list[dict]:
    """The ledger's rows of the config's own ``runs`` (a run named there or inside a folder
    named there), sorted by id: what its section shows (rows of ``--runs`` elsewhere stay out)."""
    given = config.data["study"].get("runs", [])
    names = [run_id(config, config.resolve(r)) for r in ([given] if isinstance(given, str)
                                                         else given)]
    return [r for i, r in sorted(ledger.items())
            if any(i == n or i.startswith(n.rstrip("/") + "/") for n in names)]


def command_line(study: str, config: StudyConfig, default: str) -> str:
    """The command that writes a study's section (``--config`` when not its own config)."""
    own = config.root / "configs" / default
    flag = "" if config.path == own else f" --config {run_id(config, config.path)}"
    return f"`monoidlab study {study}{flag} --write-docs`"


# ------------------------------------------------------------------------------ one run
def fresh_scores(run: Path, seeds: list[int]) -> dict:
    """{"own": (wrong, scored, solved), seed: (wrong, scored, solved), ...} for one run."""
    from monoidlab._util import inference
    from monoidlab.errors import MonoidlabError

    results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    out: dict[Any, tuple[int, int, bool]] = {
        "own": (*wrong_strings(results), bool(results["solved"]))}
    try:  # the weights the run's results were measured on, checked as checkpoints are
        with inference():  # one thread, no gradients; the caller's settings come back
            checks = fresh_checks(run, seeds)
    except MonoidlabError as e:
        raise ConfigError(f"{run}: {e}") from None
    for c in checks:
        out[c["seed"]] = (c["wrong"], c["scored"], bool(c["solved"]))
    return out


def table(rows: list[tuple[str, dict]], seeds: list[int]) -> str:
    def cell(wrong: int, scored: int, solved: bool) -> str:
        return f"{wrong} of {scored} ({'**solved**' if solved else 'not solved'})"

    head = ("| run | own test set | " + " | ".join(f"fresh set, seed {s}" for s in seeds)
            + " |\n|---|---|" + "---|" * len(seeds) + "\n")
    return head + "\n".join(
        f"| {name} | {cell(*res['own'])} | " + " | ".join(cell(*res[s]) for s in seeds) + " |"
        for name, res in rows) + "\n"


# ------------------------------------------------------------------------------ the study
def _seeds(config: StudyConfig) -> list[int]:
    return [int(s) for s in config.data["study"]["seeds"]]


def _read(path: Path, data: dict) -> tuple[str, str]:
    study = data.get("study")
    if not isinstance(study, dict) or not isinstance(study.get("seeds"), list) \
            or not all(isinstance(s, int) for s in study["seeds"]):
        raise ConfigError(f"{path}: a fresh-test study needs [study] seeds, a list of integers "
                          "(test-string seeds, not a run's own seed)")
    return study.get("ledger", LEDGER), "runs"  # out: unused (nothing is trained)


def _plan(config: StudyConfig, ledger: dict, runs: str | None = None) -> list[dict]:
    """Every finished run folder of the config (or of ``runs``), in order of their paths."""
    folders = run_folders(config, runs)
    if config.data["study"].get("solved_only", False):
        folders = [r for r in folders if json.loads(
            (r / "results.json").read_text(encoding="utf-8"))["solved"]]
    return [{"id": run_id(config, r), "folder": str(r)} for r in folders]


def run_one(run: dict, config: StudyConfig) -> dict:
    """Score one run on its own and on the fresh test sets: its ledger row."""
    seeds, folder = _seeds(config), Path(run["folder"])
    t0 = time.perf_counter()
    res = fresh_scores(folder, seeds)
    if seeds and res["own"][1] != res[seeds[0]][1]:
        raise ConfigError(f"{folder}: results.json scored {res['own'][1]} strings, the fresh "
                          f"set {res[seeds[0]][1]}: not the run's own test settings")
    name = folder.name.split("__")[0]
    print(table([(name, res)], seeds).splitlines()[-1], flush=True)  # the row, as it ends
    return {"id": run["id"], "run": name, "own": list(res["own"]),
            "fresh": {str(s): list(res[s]) for s in seeds}, "solved": res["own"][2],
            "wall_s": round(time.perf_counter() - t0, 1)}


def section(rows: list[dict], seeds: list[int], command: str) -> str:
    """The section (markdown): the table and its footnote."""
    done = [(r["run"], {"own": tuple(r["own"]), **{s: tuple(r["fresh"][str(s)]) for s in seeds}})
            for r in rows]
    n_own = sum(res["own"][2] for _, res in done)
    n_all = sum(res["own"][2] and all(res[s][2] for s in seeds) for _, res in done)
    foot = (f"{len(done)} runs: {n_own} strictly solved on their own test set, {n_all} on it and "
            f"on every fresh set (seeds {','.join(map(str, seeds))}; each set: the run's test "
            f"lengths, kinds and strings per length); "
            f"{sum(r['wall_s'] for r in rows):.0f} s on one thread.")
    return ("### The same weights on fresh test sets\n\n" + command + "\n\n"
            + table(done, seeds) + "\n" + foot)


def _sections(config: StudyConfig, ledger: dict) -> dict[str, str]:
    seeds = _seeds(config)
    rows = [r for r in configured(config, ledger) if all(str(s) in r["fresh"] for s in seeds)]
    if not rows:
        raise ConfigError(f"{config.ledger}: no run scored on the fresh sets of seeds {seeds} "
                          "yet (`monoidlab study fresh-test` scores them)")
    return {config.data["study"].get("section", SECTION):
            section(rows, seeds, command_line("fresh-test", config, "fresh-test.toml"))}


STUDY = Study(name="fresh-test", plan=_plan, run=run_one, sections=_sections, read=_read,
              default_config="fresh-test.toml", options=("runs",),
              summary="the same weights on fresh test sets: the model's verdict or its strings'")
