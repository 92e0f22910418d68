"""The long runs' bookkeeping (monoidlab.studies.long): run names and pairs, run folders'
checkpoints and validations, the pair rule that picks which recipe of a pair continues and the
ledger of finished runs. Plain functions over files; the study itself (training, state packs,
curves, tables) is ``long.py``.

>>> pair_of("dyck-6-identity-ours__mlp-ldru__s0")
'dyck-6-identity'
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PAIRS_LEDGER = "docs/data/ldru-long-pairs.json"
FINISHED_LEDGER = "docs/data/ldru-long-finished.json"
STATE_DIR = "docs/data/long-state"
FIGURE = "docs/figures/long-curves.png"
# what a started run needs to resume and to draw its curve elsewhere: the snapshots stay
# behind once their points are in curve.jsonl
CARRIED = ("checkpoint.pt", "best.pt", "metrics.jsonl", "config.json", "segments.jsonl",
           "curve.jsonl", "baselines.json")
# a finished row's fields that the prediction table shows (the rest is recomputed)
RECORDED = ("recipe", "steps", "own", "fresh", "solved", "wall_h", "cpu_h", "curve",
            "diagnosis", "baselines")
PAIR_STEP = 20000
FRESH_SEEDS = (1000, 1001)
RECIPES = ("-ours", "-authors")
#: ``until`` of a run trained to its end
END = 10**12



# ------------------------------------------------------------------------------ names
def condition_of(run_id: str) -> str:
    """``dyck-6-identity-ours__mlp-ldru__s0`` -> ``dyck-6-identity-ours``."""
    return run_id.split("__")[0]


def pair_of(run_id: str) -> str:
    """The condition a run's recipe belongs to: ``dyck-6-identity``."""
    name = condition_of(run_id)
    for suffix in RECIPES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def pairs_of(runs: list[dict]) -> dict[str, dict[str, dict]]:
    """{pair: {"ours": run, "authors": run}} (a condition without a recipe suffix: {"": run})."""
    by_pair: dict[str, dict[str, dict]] = {}
    for r in runs:
        pair = pair_of(r["id"])
        by_pair.setdefault(pair, {})[condition_of(r["id"])[len(pair) + 1:]] = r
    return by_pair


# ------------------------------------------------------------------------------ run folders
def checkpoint_step(run: Path) -> int:
    """The step of a run's checkpoint (0 without one)."""
    import torch

    ckpt = run / "checkpoint.pt"
    if not ckpt.is_file():
        return 0
    return int(torch.load(ckpt, map_location="cpu", weights_only=True)["step"])


def validations(run: Path) -> dict[int, dict]:
    """The validation rows of a run's metrics.jsonl, by step."""
    from monoidlab.training.run_folder import read_metrics

    return {int(r["step"]): r for r in read_metrics(run / "metrics.jsonl")
            if "val_min_accuracy" in r}


# ------------------------------------------------------------------------------ the pair rule
def selection_key(row: dict | None) -> tuple:
    """The trainer's rule for the best validated weights, on a metrics.jsonl validation row:
    strictly solved, then the minimum accuracy over kinds, then the mean."""
    if row is None:
        return (False, -1.0, -1.0)
    return (bool(row["val_solved"]), float(row["val_min_accuracy"]),
            float(row["val_mean_accuracy"]))


def favoured(ours: Path, authors: Path, step: int = PAIR_STEP) -> str | None:
    """``"ours"`` or ``"authors"``: the recipe whose validation at ``step`` is better (a tie
    goes to ours); None while either has not been validated there."""
    a, b = validations(ours).get(step), validations(authors).get(step)
    if a is None or b is None:
        return None
    return "authors" if selection_key(b) > selection_key(a) else "ours"


def recorded_choice(pair: str, ledger: Path) -> str | None:
    """The recipe the recorded pair validations in ``ledger`` favour (higher minimum accuracy;
    a tie goes to ours); None when the pair is not recorded or one side was never validated.

    >>> import tempfile; p = Path(tempfile.mkdtemp()) / "pairs.json"
    >>> _ = p.write_text(json.dumps({"pairs": {"a": {"ours": 0.438, "authors": 0.531},
    ...     "b": {"ours": 0.031, "authors": 0.0}, "c": {"ours": 0.5, "authors": None}}}))
    >>> recorded_choice("a", p), recorded_choice("b", p)  # b: min 0.031 against 0.000
    ('authors', 'ours')
    >>> recorded_choice("c", p) is None, recorded_choice("d", p) is None
    (True, True)
    """
    if not ledger.is_file():
        return None
    rec = json.loads(ledger.read_text())["pairs"].get(pair) or {}
    ours, authors = rec.get("ours"), rec.get("authors")
    if ours is None or authors is None:
        return None
    return "authors" if authors > ours else "ours"


def recorded_start(members: dict[str, dict], out: Path, ledger: Path) -> str | None:
    """The recorded choice of a pair whose folders were lost (``--phase long`` starts it from
    step 0): when neither folder exists, or only that choice's; None otherwise (the pair's
    own validations decide) or when nothing is recorded."""
    recorded = recorded_choice(pair_of(members["ours"]["id"]), ledger)
    started = [name for name in ("ours", "authors") if (out / members[name]["id"]).exists()]
    return recorded if recorded is not None and started in ([], [recorded]) else None


def choice_of(pair: str, members: dict[str, dict], out: Path, ledger: Path,
              step: int = PAIR_STEP) -> tuple[str | None, str]:
    """(recipe to continue, where the choice comes from): the pair's own validations at
    ``step``; when its run folders were lost, the recorded ones in ``ledger`` (recorded_start)."""
    # a started recorded choice must not make the pair look undecided when it resumes
    recorded = recorded_start(members, out, ledger)
    if recorded is not None:
        return recorded, f"recorded in {ledger.name}; run folders absent"
    ours, authors = out / members["ours"]["id"], out / members["authors"]["id"]
    return favoured(ours, authors, step), f"validation at step {step}"


def continued_run(members: dict[str, dict], out: Path, pair_step: int,
                  ledger: Path | None = None) -> dict | None:
    """The member a pair continued past the pair step (or the only member of a plain
    condition), or the member its recorded choice in ``ledger`` started from step 0 (the
    pair's folders lost: that one folder alone); None while none has."""
    if set(members) != {"ours", "authors"}:
        return next(iter(members.values()))
    past = [r for r in members.values() if (out / r["id"] / "results.json").is_file()
            or checkpoint_step(out / r["id"]) > pair_step]
    if past:
        return past[0]
    started = recorded_start(members, out, ledger) if ledger is not None else None
    return members[started] if started and (out / members[started]["id"]).exists() else None


# ------------------------------------------------------------------------------ the finished ledger
def recorded_finished(pair: str, ledger: Path) -> dict | None:
    """The recorded prediction-table row of a pair whose continued run finished (its run
    folder may be gone since: a session's machine does not outlive it); None if not recorded.
    """
    if not ledger.is_file():
        return None
    return json.loads(ledger.read_text())["rows"].get(pair)


def finished_text(rows: list[dict], ledger: Path) -> str | None:
    """The finished ledger with every finished row of a prediction table (``solved`` known)
    recorded, so that the table outlives the run folders; None when no row is new or changed
    (the file stays as it is)."""
    data: dict[str, Any] = (json.loads(ledger.read_text()) if ledger.is_file() else
            {"why": "the prediction-table rows of the finished long runs, written by "
                    "monoidlab study long --write-docs or --action save-state; the table reads "
                    "a row from here when the run's folder is gone", "rows": {}})
    changed = 0
    for r in rows:
        if r["solved"] is None:
            continue
        rec = json.loads(json.dumps({k: r[k] for k in RECORDED}))
        if data["rows"].get(r["condition"]) != rec:
            data["rows"][r["condition"]] = rec
            changed += 1
    return json.dumps(data, indent=1, ensure_ascii=True) + "\n" if changed else None


def record_finished(rows: list[dict], ledger: Path) -> bool:
    """Write :func:`finished_text` when it changed; True when it did."""
    from monoidlab._util import atomic_write_text

    text = finished_text(rows, ledger)
    if text is not None:
        ledger.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(ledger, text)
    return text is not None
