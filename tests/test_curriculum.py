"""The length curriculum (`curriculum_start`, `curriculum_fraction`): which lengths each step
draws from, that a run follows it (and resumes exactly), that it is off by default (the batches
of every existing run unchanged), and that bad values name their key."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from monoidlab.errors import ConfigError
from monoidlab.training import train
from monoidlab.training.config import RunConfig
from monoidlab.training.loop import curriculum_lengths, plan_text, training_batch
from monoidlab.training.parse import apply_overrides
from monoidlab.training.problems import make_problem


def cfg_of(**kw) -> RunConfig:
    base = dict(language="dyck-2", model="transform-tree", model_options={"states": 6},
                steps=40, batch_size=8, train_lengths="1:24", test_lengths="25:27",
                test_samples=8, checkpoint_every=10, log_every=1, device="cpu")
    return RunConfig(**{**base, **kw})


def bound(start: int, longest: int, fraction: float, steps: int, step: int) -> float:
    """The curriculum's bound, written out independently of the module."""
    grow = max(1, round(fraction * steps))
    return start + (longest - start) * min(1.0, step / max(1, grow - 1))


@pytest.mark.parametrize("lengths", [np.arange(1, 41), np.arange(1, 41, 3), np.arange(10, 31)])
@pytest.mark.parametrize("start,fraction", [(8, 0.5), (3, 1.0), (12, 0.1), (50, 0.5)])
def test_each_step_draws_from_the_lengths_up_to_a_linearly_growing_bound(lengths, start,
                                                                          fraction):
    cfg = RunConfig(language="parity", steps=100, curriculum_start=start,
                    curriculum_fraction=fraction)
    seen_max = []
    for step in range(cfg.steps):
        kept = curriculum_lengths(cfg, lengths, step)
        b = bound(start, int(lengths.max()), fraction, cfg.steps, step)
        want = lengths[lengths <= max(b, start)]
        if want.size == 0:  # nothing that short: the shortest length alone
            want = lengths[:1]
        assert kept.tolist() == want.tolist(), (step, kept, want)
        seen_max.append(int(kept.max()))
    assert seen_max == sorted(seen_max)  # never shrinks
    assert seen_max[-1] == lengths.max()  # every length by the end
    grown = round(fraction * cfg.steps) - 1  # the last step of the growth
    assert curriculum_lengths(cfg, lengths, grown).tolist() == lengths.tolist()


def test_off_by_default_the_batches_are_those_of_a_uniform_length_draw():
    """Runs trained before the curriculum existed draw exactly the same batches."""
    cfg = cfg_of()
    assert cfg.curriculum_start == 0
    problem = make_problem(cfg)
    lens = problem.lengths(cfg.train_lengths)
    for step in range(30):
        L, batch = training_batch(cfg, problem, lens, step)
        rng = np.random.default_rng([cfg.seed, step])
        want = int(rng.choice(lens))
        assert L == want
        again = problem.batch(rng, want, cfg.batch_size, train=True, step=step)
        assert np.array_equal(batch["tokens"], again["tokens"])


def test_a_run_trains_at_short_lengths_first_then_at_all_of_them(tmp_path):
    cfg = cfg_of(curriculum_start=4, curriculum_fraction=0.5)
    train(cfg, tmp_path / "run", progress=False)
    rows = [json.loads(ln) for ln in (tmp_path / "run" / "metrics.jsonl").read_text()
            .splitlines() if '"length"' in ln]
    assert len(rows) == cfg.steps
    for r in rows:  # metrics row of step s + 1 logs the length of step s
        assert r["length"] <= bound(4, 24, 0.5, cfg.steps, r["step"] - 1), r
    assert max(r["length"] for r in rows[:5]) <= 6
    assert max(r["length"] for r in rows[20:]) > 12  # the whole range is reached
    assert "a length curriculum: each attempt starts at lengths up to 4" in plan_text(cfg)


def test_every_attempt_starts_its_own_curriculum(tmp_path):
    cfg = cfg_of(curriculum_start=2, curriculum_fraction=0.5, steps=20, restarts=1,
                 eval_every=20, early_stop=1, val_lengths="25:27", val_samples=4)
    train(cfg, tmp_path / "run", progress=False)
    rows = [json.loads(ln) for ln in (tmp_path / "run" / "metrics.jsonl").read_text()
            .splitlines() if '"length"' in ln]
    by_step = {r["step"]: r["length"] for r in rows}
    if 21 in by_step:  # a second attempt ran (the first failed its validation)
        assert by_step[21] <= 2 and by_step[1] <= 2


def test_a_run_with_a_curriculum_resumes_exactly(tmp_path):
    cfg = cfg_of(curriculum_start=4)
    train(cfg, tmp_path / "full", progress=False)
    paused = train(cfg, tmp_path / "part", progress=False, stop_at=17)
    assert paused["paused"]
    train(cfg, tmp_path / "part", resume=True, progress=False)
    a = torch.load(tmp_path / "full" / "checkpoint.pt", weights_only=True)["model"]
    b = torch.load(tmp_path / "part" / "checkpoint.pt", weights_only=True)["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("override,key", [
    ("curriculum_start=-1", "curriculum_start"),
    ("curriculum_start=2.5", "curriculum_start"),
    ("curriculum_start=true", "curriculum_start"),
    ("curriculum_fraction=0", "curriculum_fraction"),
    ("curriculum_fraction=1.5", "curriculum_fraction"),
    ("curriculum_fraction=fast", "curriculum_fraction"),
])
def test_bad_curriculum_values_name_their_key(override, key):
    with pytest.raises(ConfigError) as info:
        apply_overrides(RunConfig(language="parity"), [override])
    assert repr(key) in str(info.value) or f"`{key}`" in str(info.value), str(info.value)
