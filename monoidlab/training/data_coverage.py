"""What a run's training strings show, by tree level: the exact level coverage of its layout
(training lengths, the model's schedule and padding, the run's offsets) against its test
lengths, and the sampled coverage of the strings its trainer actually draws (regenerated from
the run's own sampler and seeds, without training).

Example
-------
>>> from monoidlab.training.config import RunConfig
>>> cfg = RunConfig(language="dyck-2", train_lengths="1:8", test_lengths="41:60", batch_size=16,
...                 model_options={"padding": "identity"})
>>> rep = training_coverage(cfg, steps=50)
>>> rep["exact"]["uncovered"], rep["sampled"]["n_strings"], rep["sampled"]["rows"][-1]["level"]
(0, 800, 'any')
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from monoidlab.training.config import RunConfig

if TYPE_CHECKING:
    from monoidlab.training.problems import Problem

__all__ = ["training_coverage", "sampled_counts", "plan_floor", "DEFAULT_STEPS"]

#: Steps whose batches the sampled coverage regenerates by default (a run's first ones): the
#: whole of a 4000- to 20000-step run (seconds: dyck-6, 5000 steps in 4 s; a minute for strings
#: at offsets in a deep buffer). Fewer would
#: call rare compositions unseen that the run's later batches show (dyck-6: 8475 distinct
#: compositions in the first 500 steps, 15249 in the first 5000).
DEFAULT_STEPS = 20_000
#: Training batches counted together (their strings in one call)
CHUNK = 64


def sampled_counts(cfg: RunConfig, problem: Problem, steps: int | None = None
                   ) -> tuple[np.ndarray, int]:
    """Per-level composition counts ``(levels, |M|, |M|)`` of the first ``steps`` training
    batches of the run (default :data:`DEFAULT_STEPS`, at most the run's), regenerated from its
    sampler and seeds, and the number of strings they hold; the targets of a run's plan (the
    covering sampler's) are counted over all of its steps (:func:`plan_floor`)."""
    from monoidlab.coverage.compositions import composition_counts
    from monoidlab.models import model_spec
    from monoidlab.training.loop import training_batch

    schedule = model_spec(cfg.model).schedule
    if schedule is None or problem.language is None:
        from monoidlab.errors import InputError

        raise InputError(f"sampled_counts: {cfg.model} on {problem.name} has no reduction tree "
                         "over a language's strings")
    lens = problem.lengths(cfg.train_lengths)
    steps = min(cfg.steps, DEFAULT_STEPS if steps is None else int(steps))
    monoid = problem.language.monoid()
    counts = np.zeros((1, monoid.size, monoid.size), np.int64)
    n = 0
    held: list[dict] = []

    def add(batches: list[dict]) -> None:
        # one call per chunk of batches, not per batch: fewer calls and table additions
        # (|M| 650 at offsets in a 512 buffer, 4000 steps: 92 s batch by batch, 72 s in chunks)
        nonlocal counts
        width = max(b["tokens"].shape[1] for b in batches)
        tokens = np.concatenate([np.pad(b["tokens"], ((0, 0), (0, width - b["tokens"].shape[1])))
                                 for b in batches])
        lengths = np.concatenate([b["lengths"] for b in batches])
        offsets = (np.concatenate([b["offsets"] for b in batches])
                   if "offsets" in batches[0] else None)
        c = composition_counts(monoid, tokens, lengths, schedule, offsets, per_level=True,
                               padding=cfg.padding)
        if c.shape[0] > counts.shape[0]:
            counts = np.concatenate([counts, np.zeros((c.shape[0] - counts.shape[0],
                                                       *counts.shape[1:]), np.int64)])
        counts[: c.shape[0]] += c

    for step in range(steps):
        _, b = training_batch(cfg, problem, lens, step)
        held.append(b)
        n += len(b["lengths"])
        if len(held) == CHUNK:
            add(held)
            held = []
    if held:
        add(held)
    return plan_floor(cfg, problem, counts), n


def plan_floor(cfg: RunConfig, problem: Problem, counts: np.ndarray) -> np.ndarray:
    """``counts`` raised, for a run that draws a plan (a sampler laid out along the model's
    tree: ``covering``), to what the plan shows over ALL of its steps
    (:meth:`~monoidlab.strings.samplers.RunPlan.floor`): the first batches show only part of
    the plan. Other runs: unchanged."""
    plan = getattr(problem, "plan", None)
    return counts if plan is None else plan.floor(counts, cfg.steps, cfg.batch_size)


def training_coverage(cfg: RunConfig, problem: Problem | None = None,
                      steps: int | None = None, k: int = 1,
                      attempt: tuple[int, int] | None = None) -> dict[str, Any] | None:
    """``{"exact": level coverage summary, "sampled": per-level counts of the first ``steps``
    training batches (default :data:`DEFAULT_STEPS`, at most the run's), "steps": ...}``, or
    None for a problem without a language or a model without a reduction tree. ``attempt``
    ``(a, n)``: ``cfg`` is attempt a's (0-based) of a run of n attempts (the text says whose
    strings were counted)."""
    from monoidlab.coverage.levels import level_coverage
    from monoidlab.models import model_spec
    from monoidlab.training.problems import make_problem

    schedule = model_spec(cfg.model).schedule
    problem = problem or make_problem(cfg)
    if problem.language is None or schedule is None:
        return None
    lang = problem.language
    lens = problem.lengths(cfg.train_lengths)
    lc = level_coverage(lang, lens, problem.lengths(cfg.test_lengths), schedule=schedule,
                        padding=cfg.padding, offsets=cfg.offsets, within=cfg.within)
    steps = min(cfg.steps, DEFAULT_STEPS if steps is None else int(steps))
    counts, n = sampled_counts(cfg, problem, steps)
    sampled = lc.sampled(counts, n, k)
    text = sampled.text() + _plan_note(cfg, problem, attempt)
    out: dict[str, Any] = {"exact": lc.summary(), "sampled": sampled.as_dict(), "steps": steps,
                           "sampler": cfg.sampler}
    if attempt is not None:
        out["attempt"] = attempt[0] + 1
        text = (f"the strings of attempt {attempt[0] + 1} of {attempt[1]}, whose weights are "
                f"scored ({cfg.steps} steps from its own seed):\n" + text)
    out["text"] = text
    return out


def _plan_note(cfg: RunConfig, problem: Problem,
               attempt: tuple[int, int] | None = None) -> str:
    plan = getattr(problem, "plan", None)
    if plan is None:
        return ""
    return plan.note(cfg.steps, "of the run" if attempt is None else f"of attempt {attempt[0] + 1}")
