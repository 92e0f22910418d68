"""What a run's weights are, and whether an evaluation is the run's strict one.

Every surface that shows a verdict (``evaluate``, the report, the demo) says which weights it
scored (file, step, whether the run finished) and whether it scored the run's whole strict test
set. An evaluation on fewer lengths, fewer strings or fewer kinds than the run's is a *partial
check*: its headline says so and it never reads as solved (``solved`` is None in JSON).

Example
-------
>>> from monoidlab.evaluation import Evaluation
>>> ev = Evaluation("parity", ("paper",), 0.99, 8, accuracy={"paper": {41: 1.0, 60: 1.0}})
>>> partial_reason(ev, test_lengths=range(41, 61), samples=8, kinds=("paper",))
"2 of the run's 20 test lengths"
>>> verdict_line(ev, "2 of the run's 20 test lengths")
"PARTIAL CHECK, not the strict verdict (2 of the run's 20 test lengths): no scored length below 0.99; `monoidlab evaluate RUN` scores the whole test set"
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["weights_of", "partial_reason", "verdict_line"]


def weights_of(path: str | Path, ckpt: dict[str, Any], cfg: Any) -> dict[str, Any]:
    """Which weights a loaded checkpoint holds (``load_checkpoint``'s dict): the file, the
    step, the run's last step and whether the run finished (its results.json), as plain values
    with a one-line ``text``."""
    path = Path(path)
    folder = path if path.is_dir() else path.parent
    best = "last_step" in ckpt  # load_checkpoint swapped in best.pt's (or refined.pt's) weights
    file = folder / "best.pt" if best else (path / "checkpoint.pt" if path.is_dir() else path)
    if ckpt.get("refined"):
        file = folder / "refined.pt"
    step, last = int(ckpt["step"]), int(ckpt.get("last_step", ckpt["step"]))
    planned = int(cfg.steps) * (int(getattr(cfg, "restarts", 0) or 0) + 1)
    finished = (folder / "results.json").is_file()
    text = f"weights: {file} (step {step}"
    text += f"; the run's last checkpoint is step {last})" if last != step else ")"
    if not finished:
        text += (f"; the run has NOT finished (no results.json: stopped, or still training, "
                 f"at step {last} of up to {planned})")
    return {"file": str(file), "step": step, "last_step": last, "finished": finished,
            "planned_steps": planned, "text": text}


def partial_reason(ev: Any, test_lengths: Any, samples: int, kinds: Any,
                   threshold: float | None = None) -> str | None:
    """Why ``ev`` is not the run's strict evaluation (fewer lengths, strings per length or
    kinds than the run's test set, or another threshold than the run's), or None when it is."""
    run_lengths = {int(x) for x in test_lengths}
    seen = {int(L) for per in (ev.accuracy, ev.single_class) for k in per for L in per[k]}
    seen |= {int(L) for v in getattr(ev, "unavailable", {}).values() for L in v}
    why = []
    if not run_lengths <= seen:
        why.append(f"{len(seen & run_lengths)} of the run's {len(run_lengths)} test lengths")
    if ev.n_per_length < samples:
        why.append(f"{ev.n_per_length} strings per length and kind, not the run's {samples}")
    missing = [k for k in kinds if k not in ev.kinds]
    if missing:
        why.append(f"kinds {', '.join(ev.kinds)} without {', '.join(missing)}")
    if threshold is not None and abs(ev.threshold - threshold) > 1e-12:
        why.append(f"threshold {ev.threshold:g}, not the run's {threshold:g}")
    return "; ".join(why) or None


def verdict_line(ev: Any, partial: str | None) -> str:
    """The evaluation's verdict; a partial check says so first and is never 'solved'."""
    if partial is None:
        return str(ev.verdict())
    found = ("no scored length below " + f"{ev.threshold:g}" if ev.solved else
             ev.verdict())
    return (f"PARTIAL CHECK, not the strict verdict ({partial}): {found}; "
            "`monoidlab evaluate RUN` scores the whole test set")
