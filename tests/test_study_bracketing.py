"""monoidlab.studies.bracketing (the study that was bench/bench_bracketing.py, run as
``monoidlab study bracketing``): scoring a string under another bracketing.

The recomputed tree must be the model's own forward at the contiguous placement; an exactly
associative model (element-wise sum, no post block) must give the same logits under every
placement, and the paper's operator at random weights must not (so the check can fail); a run
folder is scored end to end, recorded in the ledger and tabulated; a learned padding is refused.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

import monoidlab.studies.bracketing as mod
from monoidlab.errors import ConfigError
from monoidlab.evaluation.kinds import KINDS
from monoidlab.models.mlp_ldru import MLPLDRU
from monoidlab.studies.ledger import read_ledger
from monoidlab.studies.runner import read_config, run_study, study_sections

ROOT = Path(__file__).resolve().parent.parent


def _strings(L, n=16, seed=0):
    return torch.as_tensor(np.random.default_rng(seed).integers(0, 3, (n, L)))


def _config(tmp_path: Path, runs: list[Path], lengths: str = "9:12:3", buffer: int = 16) -> Path:
    (tmp_path / "configs").mkdir(exist_ok=True)
    path = tmp_path / "configs" / "b.toml"
    path.write_text('[study]\nledger = "docs/data/b.jsonl"\n'
                    f"runs = {json.dumps([r.as_posix() for r in runs])}\n"
                    f'[bracketing]\nlengths = "{lengths}"\nsamples = 8\nbuffer = {buffer}\n'
                    "seed = 0\n")
    return path


def test_random_positions_are_increasing_and_inside_the_buffer():
    pos = mod.random_positions(np.random.default_rng(0), 200, 7, 16)
    assert pos.shape == (200, 7)
    assert (np.diff(pos, axis=1) > 0).all() and pos.min() >= 0 and pos.max() <= 15
    assert len({tuple(r) for r in pos}) > 150  # fresh placements, not one
    with pytest.raises(ValueError, match="buffer 4 < string length 7"):
        mod.random_positions(np.random.default_rng(0), 1, 7, 4)


@pytest.mark.parametrize("L", [1, 2, 5, 8, 13, 40])
def test_the_contiguous_placement_is_the_model_forward(L):
    torch.manual_seed(0)
    model = MLPLDRU(3, 2, d=8, dropout=0.0, padding="identity").eval()
    t = _strings(L)
    with torch.no_grad():
        same = mod.logits_at_positions(model, t, np.tile(np.arange(L), (len(t), 1)), L)
        torch.testing.assert_close(same, model(t, torch.full((len(t),), L)), atol=1e-5,
                                   rtol=1e-5)


def test_an_associative_operator_is_bracketing_invariant_and_the_paper_one_is_not():
    torch.manual_seed(0)
    summed = MLPLDRU(3, 2, d=8, dropout=0.0, padding="identity", operator="sum",
                     post_block=False).eval()
    paper = MLPLDRU(3, 2, d=8, dropout=0.0, padding="identity").eval()
    t = _strings(30)
    pos = mod.random_positions(np.random.default_rng(1), len(t), 30, 512)
    with torch.no_grad():
        torch.testing.assert_close(mod.logits_at_positions(summed, t, pos, 512),
                                   summed(t, torch.full((len(t),), 30)), atol=1e-4, rtol=1e-4)
        moved = mod.logits_at_positions(paper, t, pos, 512)
        gap = (moved - paper(t, torch.full((len(t),), 30))).abs().max()
    assert gap > 1e-2


def test_a_run_folder_is_scored_recorded_and_a_learned_padding_is_refused(tiny_ldru_run,
                                                                        tmp_path, capsys):
    res = mod.measure(tiny_ldru_run, np.array([9, 12]), 8, 16)
    assert set(res) == set(KINDS)
    for bal, rnd, maj in res.values():
        assert len(bal) == len(rnd) == len(maj) == 2
        assert ((0 <= rnd) & (rnd <= 1)).all() and maj.shape == (2, 2)
        assert ((0.5 <= maj) & (maj <= 1)).all() and (maj[:, 1] >= maj[:, 0]).all()
    config = read_config(mod.STUDY, _config(tmp_path, [tiny_ldru_run.parent]))
    threads = torch.get_num_threads()
    torch.set_num_threads(2)  # not the study's 1, so that a thread count left behind shows
    try:
        run_study(mod.STUDY, config, echo=None)  # the folder above a run stands for its runs
        # the study must leave the process as it found it: later tests train
        assert torch.is_grad_enabled() and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(threads)
    assert "| parity | near_miss | " in capsys.readouterr().out  # printed as it ends
    ledger = read_ledger(tmp_path / "docs" / "data" / "b.jsonl")
    row = ledger[tiny_ldru_run.as_posix()]
    assert set(row["kinds"]) == set(KINDS)
    assert all(len(v["random"]) == 2 for v in row["kinds"].values())
    text = study_sections(mod.STUDY, config)["ldru21 bracketing"]
    assert text.startswith("### The same strings under random bracketings\n\n`monoidlab study "
                           "bracketing --config ")
    assert text.count("| parity | ") == len(KINDS)  # one row per kind
    assert "Lengths 9:12:3 (2 lengths), 8 fresh strings per length and kind" in text
    run = tmp_path / tiny_ldru_run.name  # a copy: the shared run stays as it is
    shutil.copytree(tiny_ldru_run, run)
    cfg = json.loads((run / "config.json").read_text())
    cfg["model_options"]["padding"] = "learned"
    (run / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ConfigError, match="padding = 'identity'"):
        mod.measure(run, np.array([9]), 8, 16)


def test_rows_of_other_runs_stay_out_of_the_section_and_bad_settings_are_named(tmp_path):
    config = read_config(mod.STUDY, _config(tmp_path, [Path("runs/sweep")]))
    row = {"kinds": {"paper": {"balanced": [1.0], "random": [0.5], "majority": [0.5],
                               "count_only": [0.75]}}, "wall_s": 1.0}
    ledger = {"runs/sweep/a__mlp-ldru__s0": {**row, "id": "runs/sweep/a__mlp-ldru__s0",
                                             "run": "a"},
              "runs/other/b__mlp-ldru__s0": {**row, "id": "runs/other/b__mlp-ldru__s0",
                                             "run": "b"}}
    text = mod.STUDY.sections(config, ledger)["ldru21 bracketing"]
    assert "| a | paper | 1.000 / 1.000 | 0.500 / 0.500 | 0.500 / 0.750 |" in text
    assert "| b |" not in text
    with pytest.raises(ConfigError, match="no run of the config's runs"):
        mod.STUDY.sections(config, {})
    with pytest.raises(ConfigError, match="lengths reach 40 > buffer 16"):
        read_config(mod.STUDY, _config(tmp_path, [], lengths="9:40"))


def test_the_study_config_names_the_committed_section():
    config = read_config(mod.STUDY, ROOT / "configs" / "bracketing.toml")
    assert config.data["study"]["section"] == "ldru21 bracketing"
    doc = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    body = doc.split("<!-- begin ldru21 bracketing -->")[1].split("<!-- end ldru21 bracketing")[0]
    assert body.startswith("\n### The same strings under random bracketings\n\n"
                           "`monoidlab study bracketing --write-docs`\n")
    s = config.data["bracketing"]
    assert (f"Lengths {s['lengths']} (10 lengths), {s['samples']} fresh strings per length and "
            f"kind (the test's distribution, not its strings), random placements in a buffer of "
            f"{s['buffer']}, seed {s['seed']}; ") in body
