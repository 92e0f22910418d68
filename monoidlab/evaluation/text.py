"""An evaluation as text: what ``monoidlab train`` and ``monoidlab evaluate`` print.

Example
-------
>>> from monoidlab.evaluation.result import Evaluation
>>> ev = Evaluation("p", ("paper",), 0.99, 8, accuracy={"paper": {9: 1.0}},
...                 baselines={"majority": {"paper": {9: 0.5}}})
>>> print(evaluation_text(ev, lengths=False).splitlines()[-1])
solved (accuracy >= 0.99 at every scored length of: paper)
"""

from __future__ import annotations

from monoidlab._checks import scalar_args
from monoidlab._util import format_table
from monoidlab.evaluation import scores as run_scores
from monoidlab.evaluation.result import Evaluation
from monoidlab.geometry import range_text

__all__ = ["evaluation_text"]


@scalar_args
def evaluation_text(ev: Evaluation, lengths: bool = True, max_rows: int = 24,
                    verdict: str | None = None) -> str:
    """The evaluation as text: (optionally) accuracy per length and kind, then one summary row
    per kind beside its baselines, the single-class lengths, and the verdict (``verdict``
    replaces ``ev.verdict()``: a partial check says so, :mod:`monoidlab.training.run_state`)."""
    parts = []
    if lengths:
        all_l = sorted({L for k in ev.kinds for d in (ev.accuracy, ev.single_class)
                        for L in d.get(k, {})})
        rows = []
        for L in all_l:
            row: dict = {"length": L}
            for k in ev.kinds:
                acc = ev.accuracy[k].get(L, ev.single_class[k].get(L))
                tag = "" if L in ev.accuracy[k] else " (1 class)" if acc is not None else ""
                row[k] = "n/a" if acc is None else f"{acc:.3f}{tag}"
                maj = ev.majority.get(k, {}).get(L)
                row[f"{k} majority"] = "" if maj is None else f"{maj:.3f}"
            rows.append(row)
        if len(rows) > max_rows:
            half = max_rows // 2
            rows = rows[:half] + [{"length": "..."}] + rows[-half:]
        cols = ["length"] + [c for k in ev.kinds for c in (k, f"{k} majority")]
        parts += [format_table(rows, cols), ""]
    summary = [{**r, "scored": r["scored_lengths"]} for r in ev.summary_rows()]
    parts.append(f"{ev.problem}: accuracy per kind over the scored lengths, beside trivial "
                 f"baselines on the same strings ({ev.n_per_length} strings per length and kind)")
    shown = [b.name for b in ev.shown_baselines()]
    parts.append(format_table(summary, ["kind", "scored", "min", "mean", *shown]))
    for m, per in ev.by_measure.items():  # tape tasks: both accuracy definitions
        mins = ", ".join(f"{k} {min(v.values()):.3f}" for k, v in per.items() if v)
        parts.append(f"{m} accuracy{' (decides)' if m == ev.measure else ''}: min {mins}; "
                     f"{'solved' if ev.solved_by(m) else 'not solved'}")
    single = sorted({L for k in ev.kinds for L in ev.single_class.get(k, {})})
    if single:
        parts.append(f"lengths with a single class (reported, never scored): {range_text(single)}")
    missing = {k: v for k, v in ev.unavailable.items() if v}
    for k, v in missing.items():
        parts.append(f"no {k} strings exist at lengths {range_text(v)}")
    parts += [s.text(ev) for s in run_scores.SCORES]
    parts.append(ev.verdict() if verdict is None else verdict)
    return "\n".join(parts)
