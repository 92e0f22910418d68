"""Reading a sweep file: every run's config, the confined output paths, the paper's scores
(the sweep file's format: :mod:`monoidlab.training.sweep`).

>>> run_id("dyck-6", "mlp-ldru", 0)
'dyck-6__mlp-ldru__s0'
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from monoidlab._paths import check_entry, check_output_dir, is_within, slugify
from monoidlab.errors import ConfigError, OutputPathError
from monoidlab.training.parse import config_from_dict, read_toml

__all__ = ["load_sweep", "run_id"]


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
