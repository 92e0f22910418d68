"""bench/bench_fresh_test.py: the same weights on fresh test sets.

Re-scoring a run on its own seed must give its results.json exactly (the reference); another
seed must give what evaluate_kinds gives on that seed; main prints a row per run and restores
the process's settings; bad input is one line naming it.
"""

from __future__ import annotations

import json

import pytest
import torch

from monoidlab.training import evaluate_kinds, load_checkpoint


@pytest.fixture(scope="module")
def mod(bench_script):
    return bench_script("bench_fresh_test")


def test_own_seed_reproduces_the_results_and_a_fresh_seed_is_evaluate_kinds(mod, tiny_ldru_run):
    res = mod.fresh_scores(tiny_ldru_run, [0, 5])
    results = json.loads((tiny_ldru_run / "results.json").read_text())
    assert res[0] == res["own"]  # seed 0 is the run's own test set
    assert res["own"][2] == results["solved"]
    model, cfg, problem, _ = load_checkpoint(tiny_ldru_run)
    with torch.no_grad():
        ev = evaluate_kinds(model.eval(), problem, cfg.test_lengths, cfg.test_samples, 5,
                            cfg.eval_kinds, cfg.solved_threshold).as_dict()
    n = ev["n_per_length"]
    wrong = sum(round((1 - a) * n) for kind in ev["accuracy"].values() for a in kind.values())
    assert res[5][0] == wrong and res[5][1] == res["own"][1] and res[5][2] == ev["solved"]


def test_main_prints_a_row_per_run_and_restores_settings(mod, tiny_ldru_run, capsys):
    threads = torch.get_num_threads()
    torch.set_num_threads(2)  # not main's 1, so that a thread count left behind shows
    try:
        assert mod.main([str(tiny_ldru_run.parent), "--seeds", "5,6"]) == 0
        assert torch.is_grad_enabled() and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    assert "| parity | " in out and "fresh set, seed 6" in out
    assert "1 runs: " in out and "on every fresh set (seeds 5,6" in out


def test_bad_input_is_one_line(mod, tmp_path, tiny_ldru_run):
    with pytest.raises(SystemExit, match="--seeds: a comma list of integers"):
        mod.main([str(tiny_ldru_run), "--seeds", "a,b"])
    with pytest.raises(SystemExit, match=f"no finished run folder .* in {tmp_path}"):
        mod.main([str(tmp_path)])
