"""Length generalisation on decimal addition: the Zhou et al. (2024) recipe against a baseline
(configs/addition-study-cpu.toml, configs/addition-study-paper.toml; docs/addition.md).

    monoidlab study addition [--workers 2] [--variants recipe,baseline] [--seeds 0,1]
    monoidlab study addition --table [--write-docs]       # exact match per length, per seed
    monoidlab study addition --action figure              # docs/figures/addition_<config>.png

Variants, each trained with the study's seeds from the same training config (``[study] train``,
default the bundled ``configs/addition-cpu.toml``):

* ``recipe``: the config as is (FIRE + randomized positions, reversed answer + index hints);
* ``baseline``: the same model and training, ``standard`` format and ``sinusoidal`` (absolute)
  positions;
* two ablations: ``recipe-sinusoidal`` (the recipe's format, absolute positions) and
  ``standard-fire`` (standard format, the recipe's positions).

Each run trains into ``out/<variant>__s<seed>`` (resumable); one ledger row per finished run
(exact match per operand length). The table gives exact match per length, one row per variant
and seed plus the mean; the figure (a panel per seed, a line per variant) is drawn from the
ledger. ``--variants`` and ``--seeds`` (comma lists) pick some of the config's runs.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from monoidlab.errors import ConfigError
from monoidlab.studies.runner import Study, StudyConfig, train_or_resume

RANDOMIZED_KEYS = ("max_randomized_len", "eval_positions", "share_across_batch", "seed")

# variant -> (format, position); None keeps the config's value
VARIANTS = {
    "recipe": (None, None),
    "baseline": ("standard", "sinusoidal"),
    "recipe-sinusoidal": (None, "sinusoidal"),  # ablation: the recipe's format, absolute positions
    "standard-fire": ("standard", None),  # ablation: standard format, the recipe's positions
}


def variant_config(base: dict, variant: str, seed: int) -> dict:
    """The run config (as a dict) of one variant and seed of the training config ``base``."""
    from monoidlab.training.parse import config_from_dict

    try:
        fmt, position = VARIANTS[variant]
    except KeyError:
        raise ConfigError(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}") from None
    cfg = {**base, "seed": seed}
    if fmt:
        cfg["task_options"] = {**base["task_options"], "format": fmt}
    if position:
        mk = base["model_options"]
        if not position.startswith("randomized-"):
            mk = {k: v for k, v in mk.items() if k not in RANDOMIZED_KEYS}
        cfg["model_options"] = {**mk, "position": position}
    return config_from_dict(cfg).as_dict()


def exact_match(accuracy: dict) -> dict:
    """Exact match per length of a run's results: the one test kind of a task (``task``), or
    a table already per length.

    >>> exact_match({"task": {"1": 1.0, "2": 0.5}}), exact_match({"1": 1.0})
    ({'1': 1.0, '2': 0.5}, {'1': 1.0})
    """
    per_kind = [v for v in accuracy.values() if isinstance(v, dict)]
    if not per_kind:
        return accuracy
    if len(per_kind) != 1:
        raise ConfigError(f"exact match needs one test kind, got {sorted(accuracy)}")
    return per_kind[0]


def summary_table(results: dict, train_max: int) -> str:
    """Markdown: exact match (%) per length, one row per variant and seed, plus the mean."""
    lengths = sorted({int(L) for per_seed in results.values() for r in per_seed.values()
                      for L in r["accuracy"]})
    head = "| variant | seed | " + " | ".join(
        f"**{L}**" if L <= train_max else str(L) for L in lengths) + " | train s |"
    lines = [head, "|---|---|" + "---|" * (len(lengths) + 1)]
    for variant, per_seed in results.items():
        rows = []
        for seed, r in sorted(per_seed.items()):
            acc = [r["accuracy"][str(L)] if str(L) in r["accuracy"] else r["accuracy"][L]
                   for L in lengths]
            rows.append(acc)
            lines.append(f"| {variant} | {seed} | " + " | ".join(f"{100 * a:.0f}" for a in acc)
                         + f" | {r['train_seconds']:.0f} |")
        mean = np.mean(rows, axis=0)
        lines.append(f"| {variant} | mean | " + " | ".join(f"{100 * a:.0f}" for a in mean)
                     + " | |")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------ the study
def train_path(config: StudyConfig) -> Path:
    """The training config the variants start from: a path of the repository, else the
    bundled config it names (``configs/addition-cpu.toml``)."""
    from monoidlab.bundled import resolve_config

    given = config.data["study"]["train"]
    path = config.resolve(given)
    return path if path.is_file() else resolve_config(given)


def base_config(config: StudyConfig) -> dict:
    from monoidlab.training import load_config

    return load_config(train_path(config)).as_dict()


def config_name(config: StudyConfig) -> str:
    """The training config's short name (``addition-cpu.toml``: ``cpu``)."""
    return train_path(config).stem.removeprefix("addition-")


def train_max(base: dict) -> int:
    return max(int(x) for x in str(base["train_lengths"]).split(":")[:2])


def _read(path: Path, data: dict) -> tuple[str, str]:
    study = data.get("study")
    if not isinstance(study, dict):
        raise ConfigError(f"{path}: an addition study needs the table [study]")
    missing = [k for k in ("train", "variants", "seeds", "ledger", "out") if k not in study]
    if missing:
        raise ConfigError(f"{path}: an addition study needs [study] with train, variants, "
                          f"seeds, ledger and out (missing: {', '.join(missing)})")
    unknown = [v for v in study["variants"] if v not in VARIANTS]
    if unknown:
        raise ConfigError(f"{path}: unknown variant(s) {unknown}; known: {', '.join(VARIANTS)}")
    return study["ledger"], study["out"]


def _pick(given: str | None, allowed: list, what: str, cast: Any = str) -> list:
    if not given:
        return list(allowed)
    try:
        chosen = [cast(x) for x in given.split(",") if x]
    except ValueError:
        raise ConfigError(f"--{what}: a comma list, got {given!r}") from None
    outside = [x for x in chosen if x not in allowed]
    if outside:
        raise ConfigError(f"--{what}: {outside} not in the config's {what} {allowed}")
    return chosen


def _plan(config: StudyConfig, ledger: dict, variants: str | None = None,
          seeds: str | None = None) -> list[dict]:
    """Every variant × seed of the config (or the ones picked), variants first."""
    study = config.data["study"]
    base = base_config(config)
    return [{"id": f"{v}__s{s}", "variant": v, "seed": s, "config": variant_config(base, v, s)}
            for v in _pick(variants, study["variants"], "variants")
            for s in _pick(seeds, study["seeds"], "seeds", int)]


def run_one(run: dict, config: StudyConfig) -> dict:
    """Train one variant and seed (or read it, finished): its ledger row."""
    from monoidlab.training.parse import config_from_dict

    t0 = time.time()
    res = train_or_resume(config_from_dict(run["config"]), config.out / run["id"])
    acc = {str(L): a for L, a in exact_match(res["accuracy"]).items()}
    print(f"{run['variant']:9s} seed {run['seed']}: "
          + " ".join(f"{int(L)}:{a:.2f}" for L, a in acc.items())
          + f"  ({res['train_seconds']:.0f} s)", flush=True)
    return {"id": run["id"], "variant": run["variant"], "seed": run["seed"], "accuracy": acc,
            "train_seconds": res["train_seconds"], "wall_s": round(time.time() - t0, 1)}


def results_of(config: StudyConfig, ledger: dict) -> dict:
    """{variant: {seed: row}} in the config's order of variants."""
    results: dict = {}
    for v in config.data["study"]["variants"]:
        for r in sorted((r for r in ledger.values() if r["variant"] == v),
                        key=lambda r: r["seed"]):
            results.setdefault(v, {})[r["seed"]] = r
    if not results:
        raise ConfigError(f"{config.ledger}: no run yet (`monoidlab study addition` trains them)")
    return results


def _sections(config: StudyConfig, ledger: dict) -> dict[str, str]:
    section = config.data["study"].get("section", f"addition {config_name(config)}")
    return {section: summary_table(results_of(config, ledger),
                                   train_max(base_config(config)))}


def _figure(config: StudyConfig, **_: str) -> str:
    """``--action figure``: one panel per seed, a line per variant, from the ledger."""
    from monoidlab.studies.ledger import read_ledger
    from monoidlab.viz.training import exact_match_figure

    results = results_of(config, read_ledger(config.ledger))
    curves = {v: {s: {int(L): a for L, a in r["accuracy"].items()} for s, r in per.items()}
              for v, per in results.items()}
    name = config_name(config)
    fig = exact_match_figure(curves, train_length=train_max(base_config(config)),
                             title=f"decimal addition, exact match ({train_path(config).name})")
    folder = config.resolve(config.data["study"].get("figures", "docs/figures"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"addition_{name}.png"
    fig.savefig(path, dpi=120)
    return f"wrote {path}"


STUDY = Study(name="addition", plan=_plan, run=run_one, sections=_sections, read=_read,
              default_config="addition-study-cpu.toml", options=("variants", "seeds"),
              actions={"figure": _figure},
              summary="decimal addition: the Zhou et al. recipe against a baseline, ablations")
