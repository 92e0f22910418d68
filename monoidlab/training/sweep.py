"""Sweeps: a grid of (language or task) × model × seed runs, locally or as Ray tasks.

A sweep file is TOML::

    [sweep]
    languages = ["parity", "cycle-navigation"]   # and/or tasks = ["reverse_string", ...]
    models = ["mlp-ldru", "pr-lstm"]
    seeds = [0, 1]
    out = "runs/sweep"                             # default: runs/<file stem>
    results_md = "docs/results.md"                 # optional: the table + settings + notes
    notes = "Markdown placed under the table in results_md (caveats, references)."
    [base]                                         # TrainConfig keys shared by every run
    steps = 2000
    [models.pr-lstm]                               # per-model overrides
    model_kwargs = { hidden = 64 }

The results are ``results.csv`` (one row per run) and ``summary.md`` (score per language per
model, best seed and mean over seeds, solved counts), written atomically.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

from monoidlab._util import atomic_write_text, write_section
from monoidlab.training.config import ConfigError, config_from_dict, read_toml

__all__ = ["load_sweep", "run_sweep", "summarise"]


def load_sweep(path) -> dict:
    path = Path(path)
    data = read_toml(path)
    sweep = data.get("sweep")
    if not isinstance(sweep, dict):
        raise ConfigError(f"{path}: missing [sweep] table")
    unknown = set(data) - {"sweep", "base", "models", "tasks"}
    if unknown:
        raise ConfigError(f"{path}: unknown table(s) {sorted(unknown)}")
    problems = [("language", x) for x in sweep.get("languages", [])] + \
               [("task", x) for x in sweep.get("tasks", [])]
    if not problems:
        raise ConfigError(f"{path}: [sweep] needs 'languages' and/or 'tasks'")
    models = sweep.get("models")
    if not models or not isinstance(models, list):
        raise ConfigError(f"{path}: [sweep] key 'models': a non-empty list of model names")
    seeds = sweep.get("seeds", [0])
    base = data.get("base", {})
    per_model = data.get("models", {})
    per_task = data.get("tasks", {})
    runs = []
    for kind, name in problems:
        for model in models:
            for seed in seeds:
                cfg = {**base, **per_model.get(model, {}), **per_task.get(name, {}),
                       kind: name, "model": model, "seed": seed}
                cfg = config_from_dict(cfg, f"{path} ({name}, {model}, seed {seed})")
                runs.append({"id": f"{name}__{model}__s{seed}", "problem": name,
                             "model": model, "seed": seed, "config": cfg.as_dict()})
    out = sweep.get("out", f"runs/{path.stem}")
    return {"runs": runs, "out": out, "source": str(path),
            "title": sweep.get("title", path.stem), "results_md": sweep.get("results_md"),
            "notes": sweep.get("notes", "")}


def _run_one(run: dict, out_root: str, progress: bool) -> dict:
    from monoidlab.training.config import config_from_dict as _c
    from monoidlab.training.trainer import train

    cfg = _c(run["config"])
    out = Path(out_root) / run["id"]
    done = out / "results.json"
    if done.is_file():  # resumable sweeps: finished runs are not repeated
        res = json.loads(done.read_text())
    else:
        resume = (out / "checkpoint.pt").is_file()
        res = train(cfg, out, resume=resume, progress=progress)
    return {**{k: run[k] for k in ("id", "problem", "model", "seed")}, "score": res["score"],
            "solved": res["solved"], "train_seconds": res["train_seconds"],
            "steps": res["steps"], "device": res["device"], "accuracy": res["accuracy"]}


def run_sweep(path, ray_address: str | None = None, progress: bool = True) -> dict:
    """Run every run of the sweep (skipping finished ones); returns the summary dict."""
    sweep = load_sweep(path)
    out = Path(sweep["out"])
    out.mkdir(parents=True, exist_ok=True)
    if ray_address:
        rows = _run_ray(sweep, ray_address)
    else:
        rows = [_run_one(r, str(out), progress) for r in sweep["runs"]]
    return summarise(sweep, rows)


# A local Ray instance binds every server to the machine's network address and writes an auth
# token under ~/.ray unless told otherwise; these keep it on loopback and side-effect free
# (verified with `ss -ltnp` in bench/bench_ray_sweep.py). setdefault: the caller may override.
_RAY_LOCAL_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "disabled",
                  "RAY_USAGE_STATS_ENABLED": "0"}


def _run_ray(sweep: dict, address: str) -> list[dict]:
    if address == "local":  # before `import ray`: some settings are read at import time
        for key, value in _RAY_LOCAL_ENV.items():
            os.environ.setdefault(key, value)
    try:
        import ray
    except ImportError:
        raise ImportError("--ray needs the optional extra: pip install 'monoidlab[ray]'") from None
    import shutil
    import tempfile

    import torch

    started, temp_dir = False, None
    if not ray.is_initialized():
        if address == "local":
            if os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] == "0":
                # Ray reads that variable once, when imported: if it was imported before us,
                # tell it directly (private API; bench/bench_ray_sweep.py checks the result)
                try:
                    from ray._private import ray_constants

                    ray_constants.ENABLE_RAY_CLUSTER = False
                except (ImportError, AttributeError):
                    pass
            temp_dir = tempfile.mkdtemp(prefix="monoidlab-ray-")
            ray.init(include_dashboard=False, log_to_driver=False, _temp_dir=temp_dir,
                     object_store_memory=100 * 2**20)
        else:
            ray.init(address=address)
        started = True
    try:
        gpus = 1 if torch.cuda.is_available() or ray.cluster_resources().get("GPU", 0) else 0
        remote = ray.remote(num_cpus=1, num_gpus=gpus)(_run_one)
        out = str(Path(sweep["out"]).resolve())
        return ray.get([remote.remote(r, out, False) for r in sweep["runs"]])
    finally:
        if started:  # leave no Ray processes (or, locally, temp files) behind
            ray.shutdown()
        if temp_dir:
            shutil.rmtree(temp_dir, ignore_errors=True)


def summarise(sweep: dict, rows: list[dict]) -> dict:
    """Write results.csv and summary.md (and ``results_md`` if the sweep names one)."""
    out = Path(sweep["out"])
    buf = io.StringIO()
    fields = ["id", "problem", "model", "seed", "score", "solved", "steps", "train_seconds", "device"]
    w = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
    atomic_write_text(out / "results.csv", buf.getvalue())
    problems = list(dict.fromkeys(r["problem"] for r in rows))
    models = list(dict.fromkeys(r["model"] for r in rows))
    table = {}
    for r in rows:
        table.setdefault((r["problem"], r["model"]), []).append(r["score"])
    lines = [f"# {sweep['title']}", "", "Score = mean accuracy over test lengths; best seed "
             "(mean over seeds in brackets); **bold** = solved (≥ threshold).", "",
             "| task | " + " | ".join(models) + " |", "|---|" + "---|" * len(models)]
    solved = dict.fromkeys(models, 0)
    for p in problems:
        cells = []
        for m in models:
            s = table.get((p, m))
            if not s:
                cells.append("–")
                continue
            best = max(s)
            ok = any(r["solved"] for r in rows if r["problem"] == p and r["model"] == m
                     and r["score"] == best)
            solved[m] += ok
            txt = f"{100 * best:.1f} ({100 * sum(s) / len(s):.1f})"
            cells.append(f"**{txt}**" if ok else txt)
        lines.append(f"| {p} | " + " | ".join(cells) + " |")
    lines.append("| solved | " + " | ".join(f"{solved[m]}/{len(problems)}" for m in models) + " |")
    md = "\n".join(lines) + "\n"
    atomic_write_text(out / "summary.md", md)
    if sweep.get("results_md"):  # e.g. docs/results.md, with the settings used
        settings = json.dumps(sweep["runs"][0]["config"], indent=1) if sweep["runs"] else "{}"
        per_model = {}  # what differs between models: their kwargs and optimisation keys
        for r in sweep["runs"]:
            c = r["config"]
            per_model.setdefault(r["model"], {k: c[k] for k in (
                "model_kwargs", "steps", "batch_size", "optimizer", "lr", "warmup")})
        hours = sum(r["train_seconds"] for r in rows) / 3600
        notes = sweep.get("notes", "").strip()
        # one generated section per sweep: other sections of the page are kept
        write_section(sweep["results_md"], f"sweep {Path(sweep['source']).stem}",
                      md.replace("# ", "## ", 1) + (f"\n{notes}\n" if notes else "") +
                          f"\nSweep file: `{sweep['source']}`; {len(rows)} runs, "
                          f"{hours:.2f} h of training in total (evaluation not included). "
                          "Per-model settings (first run of each model):\n\n" +
                          "".join(f"- `{m}`: `{json.dumps(v)}`\n" for m, v in per_model.items())
                          + "\nSettings of the first run (others differ only by task, model, "
                          f"seed and the per-model/per-task overrides):\n\n```json\n"
                          f"{settings}\n```\n", title="Results")
    return {"rows": rows, "summary_md": md, "solved": solved, "out": str(out)}
