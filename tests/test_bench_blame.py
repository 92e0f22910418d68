"""bench/bench_blame.py and bench/bench_run_errors.py: the pieces their figures rest on.

The blame recomputes a string's tree node by node with the model's own operator: its root must
be the model's root (both paddings), and a node replaced by its own state must change nothing.
The error count of a run folder (monoidlab.studies.runner.wrong_strings, which
bench_run_errors.row_of uses) must count the strings its results.json scored wrong.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import monoidlab as ml
from monoidlab.models.mlp_ldru import MLPLDRU
from monoidlab.studies.runner import wrong_strings


@pytest.fixture(scope="module")
def blame_mod(bench_script):
    return bench_script("bench_blame")


@pytest.mark.parametrize("padding", ["identity", "learned"])
def test_tree_states_root_is_the_model_root(blame_mod, padding):
    torch.manual_seed(0)
    model = MLPLDRU(2, 2, d=8, dropout=0.0, padding=padding).eval()
    rng = np.random.default_rng(0)
    with torch.no_grad():
        for L in (1, 2, 5, 8, 13, 33):
            tokens = rng.integers(0, 2, L)
            states, top = blame_mod.tree_states(model, tokens)
            root = model.root_states(torch.as_tensor(tokens)[None], torch.tensor([L]))[0]
            torch.testing.assert_close(states[(top, 0)], root, atol=1e-5, rtol=1e-5)


def test_a_node_replaced_by_its_own_state_changes_nothing(blame_mod):
    torch.manual_seed(1)
    lang = ml.load_language("tomita-3")
    model = MLPLDRU(2, 2, d=8, dropout=0.0, padding="identity").eval()
    tokens = np.random.default_rng(1).integers(0, 2, 45)
    with torch.no_grad():
        states, _ = blame_mod.tree_states(model, tokens)
        from monoidlab.coverage.compositions import node_labels

        lab = node_labels(lang.monoid(), tokens[None], np.array([45]))
        ec_of = {(int(s), int(e)): int(ec) for (s, e), ec in zip(lab.span, lab.node)}
        own = {}  # (EC, level) -> the state of the last such node
        for (k, j), v in states.items():
            span = (j << k, min((j + 1) << k, 45))
            if k and span in ec_of:
                own[(ec_of[span], k)] = v
        ranks = blame_mod.blame(model, tokens, 1, own, lang.monoid())
    same = [r for r in ranks if torch.equal(own[(r[3], r[1])],
                                            states[(r[1], r[2][0] >> r[1])])]
    assert len(same) >= len(own) and len(ranks) > len(same)  # others get another node's state
    assert all(abs(r[0]) < 1e-5 for r in same)


def test_run_errors_counts_the_wrong_strings(tmp_path, bench_script):
    mod = bench_script("bench_run_errors")
    acc = {"paper": {"41": 1.0, "42": 63 / 64}, "near_miss": {"41": 62 / 64, "42": 1.0}}
    results = {"evaluation": {"n_per_length": 64, "accuracy": acc}, "solved": False,
               "train_seconds": 12.5}
    run = tmp_path / "r"
    run.mkdir()
    (run / "results.json").write_text(json.dumps(results))
    (run / "metrics.jsonl").write_text(json.dumps({"step": 10, "val_min_accuracy": 0.5}) + "\n")
    assert wrong_strings(results) == (3, 256)
    row = mod.row_of(run)
    assert row["wrong"] == 3 and row["val_min"] == [0.5] and row["variant"] == ""


def test_blame_runs_on_a_trained_run_folder(blame_mod, tmp_path, capsys):
    """The script end to end on a run folder as `monoidlab train` writes it (the model built
    from the run's own saved config and weights)."""
    from monoidlab.training import RunConfig, train

    cfg = RunConfig(language="tomita-3", steps=20, batch_size=8, train_lengths="1:8",
                    test_lengths="41:43", test_samples=4, device="cpu",
                    model_options={"d": 8, "padding": "identity"})
    train(cfg, tmp_path / "run", progress=False)
    assert blame_mod.main([str(tmp_path / "run"), "--margin", "50", "--batches", "3"]) == 0
    assert torch.is_grad_enabled()  # the script leaves the test process as it found it
    out = capsys.readouterr().out
    assert out.startswith("tomita-3, ") and "largest gains:" in out
    assert "Share of the nodes of each tree level in an EC" in out
