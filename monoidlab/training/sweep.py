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

import csv
import io
import json
import math
import os
from pathlib import Path
from typing import Any

from monoidlab._paths import check_entry, check_output_dir, child_dir, is_within, slugify
from monoidlab._util import atomic_write_json, atomic_write_text, json_text, write_section
from monoidlab.errors import (
    CheckpointError,
    ConfigError,
    MonoidTooLarge,
    OutputPathError,
)
from monoidlab.evaluation.result import Evaluation, scores_of_results, upgrade_results
from monoidlab.evaluation.scores import score_names
from monoidlab.training.config import RunConfig
from monoidlab.training.executors import run_jobs
from monoidlab.training.parse import config_from_dict, read_toml
from monoidlab.training.run_folder import check_entries, read_run_json

__all__ = ["load_sweep", "run_sweep", "summarise"]


_SWEEP_KEYS = {"languages", "tasks", "conditions", "models", "seeds", "lrs", "out", "results_md",
               "notes", "title", "workers"}
_MARKERS = ("<!--", "-->")


def load_sweep(path: str | os.PathLike) -> dict[str, Any]:
    """Read and validate a sweep file (every run's config, the confined output paths); errors
    are :class:`ConfigError` naming the file and the key."""
    path = Path(path)
    data = read_toml(path)
    sweep = data.get("sweep")
    if not isinstance(sweep, dict):
        raise ConfigError(f"{path}: missing [sweep] table")
    unknown = set(data) - {"sweep", "base", "models", "tasks", "conditions", "paper"}
    if unknown:
        raise ConfigError(f"{path}: unknown table(s) {sorted(unknown)}")
    unknown = set(sweep) - _SWEEP_KEYS
    if unknown:
        raise ConfigError(f"{path}: [sweep] unknown key(s) {sorted(unknown)}; known: "
                          f"{', '.join(sorted(_SWEEP_KEYS))}")
    languages, tasks, conditions = (_str_list(path, sweep, k, [])
                                    for k in ("languages", "tasks", "conditions"))
    problems = ([("language", x) for x in languages] + [("task", x) for x in tasks]
                + [("condition", x) for x in conditions])
    if not problems:
        raise ConfigError(f"{path}: [sweep] needs 'languages', 'tasks' and/or 'conditions'")
    per_condition = _table(path, data, "conditions")
    models = _str_list(path, sweep, "models", None)
    if not models:
        raise ConfigError(f"{path}: [sweep] key 'models': a non-empty list of model names")
    seeds = sweep.get("seeds", [0])
    if not isinstance(seeds, list) or not seeds or not all(
            isinstance(x, int) and not isinstance(x, bool) for x in seeds):
        raise ConfigError(f"{path}: [sweep] key 'seeds': a non-empty list of integers, got "
                          f"{seeds!r}")
    lrs = sweep.get("lrs")
    if lrs is not None and (not isinstance(lrs, list) or not lrs or any(
            isinstance(x, bool) or not isinstance(x, int | float) or not 0 < x < math.inf
            for x in lrs)):
        raise ConfigError(f"{path}: [sweep] key 'lrs': a non-empty list of positive learning "
                          f"rates, got {lrs!r}")
    base = _table(path, data, "base")
    per_model = _table(path, data, "models")
    per_task = _table(path, data, "tasks")
    runs = []
    for kind, name in problems:
        for model in models:
            for lr in lrs or [None]:  # the lrs axis overrides every other 'lr'
                for seed in seeds:
                    if kind == "condition":  # its own table names the language or task
                        own = _condition(path, per_condition, name)
                        below = {**base, **_table(path, per_model, model, "models.")}
                        keys = {**below, **own, "model": model, "seed": seed}
                        for table in ("model_options", "task_options"):  # merged, option by option
                            if isinstance(below.get(table), dict) and isinstance(
                                    own.get(table), dict):
                                keys[table] = {**below[table], **own[table]}
                    else:
                        keys = {**base, **_table(path, per_model, model, "models."),
                                **_table(path, per_task, name, "tasks."), kind: name,
                                "model": model, "seed": seed}
                    tag = "" if lr is None else f"__lr{lr:g}"
                    if lr is not None:
                        keys["lr"] = float(lr)
                    cfg = config_from_dict(keys, f"{path} ({name}, {model}{tag}, seed {seed})")
                    runs.append({"id": run_id(name, model + tag, seed), "problem": name,
                                 "model": model, "seed": seed, "lr": cfg.lr, "config": cfg})
    ids = [r["id"] for r in runs]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ConfigError(f"{path}: two runs would share the run folder(s) {dup} (two specs "
                          "with one file name?); rename one")
    out = _out(path, sweep)
    workers = sweep.get("workers", 1)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"{path}: [sweep] key 'workers': a positive integer, got {workers!r}")
    paper = _paper(path, data.get("paper", {}))
    title = _text(path, sweep, "title", path.stem)
    if "\n" in title:
        raise ConfigError(f"{path}: [sweep] key 'title': one line, got {title!r}")
    return {"runs": runs, "out": out, "source": str(path), "workers": workers, "title": title,
            "results_md": _results_md(path, sweep, out), "notes": _text(path, sweep, "notes", ""),
            "paper": paper}


def _paper(path: Path, paper: Any) -> dict[str, Any]:
    """``[paper]``, checked before any training (the table reads it only at the end):
    ``scores = { model = { task = percent } }``, ``solved_at`` a percent, ``solved = { model =
    count }``, ``source`` text."""
    def bad(what: str, value: Any) -> ConfigError:
        return ConfigError(f"{path}: [paper] {what}, got {value!r}")

    def number(v: Any) -> bool:
        return isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v <= 100

    if not isinstance(paper, dict):
        raise bad("must be a table", paper)
    unknown = sorted(set(paper) - {"scores", "solved_at", "solved", "source"})
    if unknown:
        raise ConfigError(f"{path}: [paper] has unknown key(s) {unknown} (keys: scores, "
                          "solved_at, solved, source)")
    scores = paper.get("scores", {})
    if not isinstance(scores, dict):
        raise bad("needs 'scores' = { model = { task = percent } }", scores)
    for model, per in scores.items():
        if not isinstance(per, dict):
            raise bad(f"scores.{model}: a table of task = percent", per)
        for task, v in per.items():
            if not number(v):
                raise bad(f"scores.{model}.{task}: a percent in 0..100", v)
    if "solved_at" in paper and not number(paper["solved_at"]):
        raise bad("solved_at: a percent in 0..100", paper["solved_at"])
    solved = paper.get("solved", {})
    if not isinstance(solved, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in solved.values()):
        raise bad("solved: a table of model = number of tasks", solved)
    if not isinstance(paper.get("source", ""), str):
        raise bad("source: text", paper["source"])
    return paper


def run_id(name: str, model: str, seed: int) -> str:
    """The run folder's name: a slug of ``name__model__sSEED`` (a spec path gives its stem).

    >>> run_id("parity", "mlp-ldru", 0), run_id("/abs/dir/../mine.toml", "lstm", 2)
    ('parity__mlp-ldru__s0', 'mine__lstm__s2')
    """
    if name.endswith(".toml"):
        name = Path(name).stem
    return slugify(f"{name}__{model}__s{seed}")


def _str_list(path: Path, sweep: dict[str, Any], key: str, default: list[str] | None
              ) -> list[str]:
    value = sweep.get(key, default)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(x, str) and x for x in value):
        raise ConfigError(f"{path}: [sweep] key {key!r}: a list of names, got {value!r}")
    return value


def _table(path: Path, data: dict, key: str, prefix: str = "") -> dict:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: [{prefix}{key}] must be a table, got "
                          f"{type(value).__name__} {value!r}")
    return value


def _condition(path: Path, conditions: dict, name: str) -> dict:
    """A named condition's keys: exactly one of ``language`` / ``task``, and any config key
    (they override ``[base]`` and ``[models.X]``, ``model_options`` option by option; the run's
    folder is named by the condition)."""
    if name not in conditions:
        raise ConfigError(f"{path}: [sweep] key 'conditions': no table [conditions.{name}]")
    own = _table(path, conditions, name, "conditions.")
    if ("language" in own) == ("task" in own):
        raise ConfigError(f"{path}: [conditions.{name}] needs exactly one of 'language' or "
                          "'task'")
    return {"language": None, "task": None, **own}


def _text(path: Path, sweep: dict, key: str, default: str) -> str:
    value = sweep.get(key, default)
    if not isinstance(value, str):
        raise ConfigError(f"{path}: [sweep] key {key!r}: a string, got {type(value).__name__}")
    if any(m in value for m in _MARKERS):
        raise ConfigError(f"{path}: [sweep] key {key!r}: may not contain '<!--' or '-->' (the "
                          "markers of generated sections)")
    return value


def _out(path: Path, sweep: dict) -> str:
    """``out``, checked: inside the current folder or the sweep file's folder, usable."""
    out = sweep.get("out", f"runs/{slugify(path.stem)}")
    if not isinstance(out, str) or not out:
        raise ConfigError(f"{path}: [sweep] key 'out': a folder path, got {out!r}")
    roots = (Path.cwd(), path.resolve().parent)
    if not any(is_within(out, r) for r in roots):
        raise ConfigError(f"{path}: [sweep] key 'out': {Path(out).resolve()} lies outside the "
                          f"current folder and the sweep file's folder")
    check_output_dir(out, f"{path}: [sweep] key 'out'")
    return out


def _results_md(path: Path, sweep: dict, out: str) -> str | None:
    """``results_md``, checked: a ``.md`` file inside ``out`` or a repository's docs folder."""
    md = sweep.get("results_md")
    if md is None:
        return None
    if not isinstance(md, str) or not md.endswith(".md"):
        raise ConfigError(f"{path}: [sweep] key 'results_md': a .md file, got {md!r}")
    # the repository's docs beside the folder the file was named in: configs/ is a link into
    # monoidlab/configs, so the resolved file's grandparent is the package, not the repository
    roots = [Path(out), path.absolute().parent.parent / "docs",
             path.resolve().parent.parent / "docs", Path(__file__).resolve().parents[2] / "docs"]
    # a docs folder that is itself a link to elsewhere does not count as a docs folder
    if not any(is_within(md, r, follow_root=i == 0) for i, r in enumerate(roots)):
        raise ConfigError(f"{path}: [sweep] key 'results_md': {Path(md).resolve()} must lie in "
                          f"the sweep's out folder or a docs folder ({', '.join(map(str, roots))})")
    try:
        check_entry(md, f"{path}: [sweep] key 'results_md'")
    except OutputPathError as exc:
        raise ConfigError(str(exc)) from None
    return md


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
