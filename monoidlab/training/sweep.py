"""Sweeps: a grid of (language or task) × model × seed runs, locally or as Ray tasks.

A sweep file is TOML::

    [sweep]
    languages = ["parity", "cycle-navigation"]   # and/or tasks = ["reverse_string", ...]
                                                   # and/or conditions = ["dyck-6-identity"]
    models = ["mlp-ldru", "pr-lstm"]
    seeds = [0, 1]
    lrs = [1e-3, 3e-4]                             # optional: learning rates × seeds per cell
    out = "runs/sweep"                             # default: runs/<file stem>
    results_md = "docs/results.md"                 # optional: the table + settings + notes
    notes = "Markdown placed under the table in results_md (caveats, references)."
    [base]                                         # config keys shared by every run
    steps = 2000
    [models.pr-lstm]                               # per-model overrides
    model_options = { hidden = 64 }
    [conditions.dyck-6-identity]                   # a named condition: a language or task
    language = "dyck-6"                            # with its own keys (several per language)
    model_options = { padding = "identity" }
    [paper]                                        # optional: published scores beside ours
    source = "Delétang et al. (2023), Table 2"
    scores = { rnn = { parity_check = 100.0 } }    # percent, per model and task

The results are ``results.csv`` (one row per run) and ``summary.md`` (per task and model: how
many runs (seeds × learning rates) are strictly solved, the best run's minimum accuracy per
test kind, the best paper score over the runs (the papers' best-of selection) and the
published score), written atomically.

A sweep file is data from anyone, so its writes are confined: ``out`` must lie inside the
current folder or the sweep file's folder; each run folder is a slug of its id inside ``out``
(a language given as a spec path becomes its file stem); ``results_md`` must be a ``.md`` file
inside ``out`` or a repository's ``docs/`` folder (the one beside the sweep file's folder, or
monoidlab's own), and only the sweep's generated section (between its ``<!-- begin -->`` and
``<!-- end -->`` markers) is ever rewritten; ``title`` and ``notes`` may not contain markers.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from monoidlab._paths import child_dir
from monoidlab._util import atomic_write_json
from monoidlab.errors import CheckpointError, ConfigError, MonoidTooLarge
from monoidlab.evaluation.result import Evaluation, scores_of_results, upgrade_results
from monoidlab.evaluation.scores import score_names
from monoidlab.training.config import RunConfig
from monoidlab.training.executors import run_jobs
from monoidlab.training.parse import config_from_dict
from monoidlab.training.run_folder import check_entries, read_run_json

# reading a sweep file and writing its tables are modules of their own; the sweep's API is here
from monoidlab.training.sweep_file import load_sweep, run_id
from monoidlab.training.sweep_table import summarise

__all__ = ["load_sweep", "run_sweep", "summarise", "run_id"]


#: a run refused before training leaves this file (its message) in its folder
REFUSED = "refused.json"


def refused_row(run: dict[str, Any], message: str) -> dict[str, Any]:
    """The table row of a run refused before training: not solved, no evaluation, and the
    refusal's message as its verdict (``row["refused"]``)."""
    return {**{k: run[k] for k in ("id", "problem", "model", "seed")}, "lr": run.get("lr"),
            "solved": False, "refused": message, "verdict": f"refused: {message}",
            **dict.fromkeys(score_names(), math.nan), "train_seconds": 0.0, "steps": 0,
            "first_solved_step": None, "stopped_early": False, "attempts": 0,
            "device": run["config"].device, "evaluation": None}


def _read_refused(run: dict[str, Any], path: Path) -> dict[str, Any] | None:
    """The row of a run refused when last asked; ``None`` when the sweep now asks for it with
    other settings (then it is not finished: the next run of the sweep asks again)."""
    hint = "delete it: the sweep asks for the run again"
    data = read_run_json(path, hint)
    if not isinstance(data.get("refused"), str) or not isinstance(data.get("config"), dict):
        raise CheckpointError(f"{path}: not a refused run's record (no 'refused' message and "
                              f"'config'); {hint}")
    if config_from_dict(data["config"], str(path), saved=True) != run["config"]:
        return None
    return refused_row(run, data["refused"])


def _run_one(run: dict[str, Any], out_root: str, progress: bool) -> dict[str, Any]:
    from monoidlab.training.trainer import train

    cfg: RunConfig = run["config"]
    # a folder the sweep names itself: never a link (it would write the run elsewhere)
    out = child_dir(out_root, run["id"], "sweep run folder")
    if out.is_dir():
        check_entries(out, "sweep run folder")
    done = out / "results.json"
    res = _read_results(done) if done.is_file() else None
    if res is not None:
        _check_same_config(cfg, out)
    if res is None:
        # a checkpoint: continue it; none: whatever a killed start left is replaced
        resume = (out / "checkpoint.pt").is_file()
        try:
            res = train(cfg, out, resume=resume, overwrite=not resume, progress=progress)
        except (ConfigError, MonoidTooLarge) as exc:
            if resume:  # a run that trained and now fails to continue is the user's to see
                raise
            # refused before any training (say, a covering plan larger than the run can
            # show): one row of the table, never the end of the other runs; tried again
            # whenever the sweep runs, since it costs seconds
            out.mkdir(parents=True, exist_ok=True)
            atomic_write_json(out / REFUSED, {"refused": str(exc), "config": cfg.as_dict()})
            return refused_row(run, str(exc))
        (out / REFUSED).unlink(missing_ok=True)  # refused with other settings once: no more
    elif "evaluation" not in res:  # finished before strict evaluation: evaluate it again
        res = _reevaluate(cfg, out, res, progress)
    res = json.loads(json.dumps(res))  # one form, fresh or reloaded: lengths as JSON keys
    _check_results(res, done)
    solved_by = res["evaluation"].get("solved_by", {})  # tape tasks: per_string and pooled
    return {**{k: run[k] for k in ("id", "problem", "model", "seed")}, "lr": run.get("lr"),
            "solved": res["solved"], "verdict": res["verdict"],
            **{f"solved_{m}": v for m, v in solved_by.items()},
            **scores_of_results(res),
            **{f"min_{k}": v for k, v in res["min_accuracy"].items()},
            "train_seconds": res["train_seconds"], "steps": res["steps"],
            "first_solved_step": res.get("first_solved_step"),
            "stopped_early": res.get("stopped_early", False),
            "attempts": res.get("attempts", 1),
            # a finite model's proof over every length (None: no certificate for this model)
            "certified": (res["certificate"] or {}).get("correct") if res.get("certificate")
            else None,
            "certificate": (res["certificate"] or {}).get("verdict") if res.get("certificate")
            else None,
            "device": res["device"], "evaluation": res["evaluation"]}


_RESULT_KEYS: dict[str, type | tuple[type, ...]] = {
    "solved": bool, "verdict": str, "min_accuracy": dict,
    "train_seconds": (int, float), "steps": int, "device": str, "evaluation": dict}


def _read_results(path: Path) -> dict[str, Any]:
    """A finished run's ``results.json`` in today's vocabulary (one error naming a file that
    is not a JSON table)."""
    return upgrade_results(read_run_json(path, _RESULTS_HINT))


def _check_results(res: dict[str, Any], path: Path) -> None:
    """The keys the sweep's table reads, with their types, and an evaluation that parses."""
    for key, types in _RESULT_KEYS.items():
        v = res.get(key)
        ok = isinstance(v, bool) if types is bool else (isinstance(v, types)
                                                         and not isinstance(v, bool))
        if not ok:
            want = getattr(types, "__name__", "a number")
            raise _bad_results(path, f"key {key!r} missing or not {want}")
    for key in score_names():  # a score added after the run was written is computed instead
        v = res.get(key, 0.0)
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise _bad_results(path, f"key {key!r} not a number")
    try:
        Evaluation.from_dict(res["evaluation"])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise _bad_results(path, f"its 'evaluation' does not parse ({type(exc).__name__}: "
                                 f"{exc})") from None


_RESULTS_HINT = ("delete it (the run is then evaluated again from its checkpoint) or give the "
                 "sweep a new 'out'")


def _bad_results(path: Path, reason: str) -> CheckpointError:
    return CheckpointError(f"{path}: not the results of a monoidlab run ({reason}); "
                           f"{_RESULTS_HINT}")


def _check_same_config(cfg: RunConfig, out: Path) -> None:
    """A finished run is reused only when the sweep file still asks for it: a changed setting
    (say, more steps) must not silently keep the old results in the new table."""
    from monoidlab.training.trainer import _differences

    saved_path = out / "config.json"
    if not saved_path.is_file():
        return  # a run from before config.json was written: nothing to compare
    # through the config reader: keys added since the run was trained take their defaults
    keys = read_run_json(saved_path, "delete the run folder to train it again")
    saved = config_from_dict(keys, str(saved_path), saved=True)
    diff = _differences(saved, cfg) if saved != cfg else []
    if diff:
        raise ConfigError(f"{out}: this finished run was trained with other settings than the "
                          f"sweep file now gives (keys {', '.join(diff)}); give the sweep a new "
                          f"'out' or delete the run folder to train it again")


def _reevaluate(cfg: RunConfig, out: Path, res: dict[str, Any],
                progress: bool) -> dict[str, Any]:
    """Strict evaluation of a finished run whose results predate it (results.json updated)."""
    from monoidlab.evaluation.run import evaluate_kinds
    from monoidlab.training.trainer import load_checkpoint, pick_device, results_of

    device = pick_device(cfg.device)
    model, cfg, problem, _ = load_checkpoint(out, device)
    ev = evaluate_kinds(model, problem, cfg.test_lengths, cfg.test_samples, cfg.seed,
                        cfg.eval_kinds, cfg.solved_threshold, device=device, progress=progress)
    res = {k: v for k, v in res.items() if k not in ("score", "accuracy")} | results_of(ev)
    atomic_write_json(out / "results.json", res)
    return res


def run_sweep(path: str | os.PathLike, ray_address: str | None = None, progress: bool = True,
              workers: int | None = None, write_docs: bool = False,
              table_only: bool = False) -> dict[str, Any]:
    """Run every run of the sweep (skipping finished ones); returns the summary dict.

    ``workers`` local processes run side by side (default: the sweep file's ``workers``, else
    1), each on one torch thread unless its config sets ``threads``: on a CPU, one thread per
    run and one run per core is the fastest layout. ``table_only`` trains nothing: the table
    of the runs finished so far (a long sweep's partial result; its title says how many).
    """
    sweep = load_sweep(path)
    if table_only:
        return _finished_table(sweep, write_docs)
    out = Path(sweep["out"])
    out.mkdir(parents=True, exist_ok=True)
    workers = int(workers or sweep.get("workers") or 1)
    if workers < 1:
        raise ConfigError(f"{path}: workers must be >= 1, got {workers}")
    runs = sweep["runs"]
    if workers > 1 and not ray_address:  # one torch thread per run and one run per core
        runs = [{**r, "config": r["config"].replace(threads=r["config"].threads or 1)}
                for r in runs]
    alone = workers == 1 and not ray_address  # the progress bar only where one run trains
    out_dir = str(out.resolve()) if ray_address else str(out)
    rows = run_jobs(_run_one, [(r, out_dir, progress and alone) for r in runs], workers,
                    ray_address)
    return summarise(sweep, rows, write_docs)


def _finished_table(sweep: dict[str, Any], write_docs: bool) -> dict[str, Any]:
    out = Path(sweep["out"])
    finished = [r for r in sweep["runs"] if (out / r["id"] / "results.json").is_file()
                or (out / r["id"] / REFUSED).is_file()]
    if not finished:
        raise ConfigError(f"{out}: no finished run of this sweep yet (no <run>/results.json)")
    read = [_run_one(r, str(out), False) if (out / r["id"] / "results.json").is_file()
            else _read_refused(r, out / r["id"] / REFUSED)
            for r in finished]  # reads, checks: trains nothing
    rows = [r for r in read if r is not None]
    finished = [r for r, x in zip(finished, read, strict=True) if x is not None]
    n, k = len(sweep["runs"]), len(finished)
    title = sweep["title"] if k == n else f"{sweep['title']} (partial: {k} of {n} runs finished)"
    return summarise({**sweep, "title": title}, rows, write_docs)
