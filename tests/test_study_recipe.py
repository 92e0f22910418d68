"""monoidlab.studies.recipe (the study that was bench/bench_recipe.py, run as ``monoidlab study
recipe``): each recipe trained with the same steps and seed, one ledger row each, the table."""

from __future__ import annotations

from pathlib import Path

import pytest

import monoidlab.studies.recipe as mod
from monoidlab.errors import ConfigError
from monoidlab.evaluation.kinds import KINDS
from monoidlab.studies.ledger import read_ledger
from monoidlab.studies.runner import read_config, run_study, study_sections

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ROOT = Path(__file__).resolve().parent.parent


def test_both_recipes_train_with_the_same_steps_and_are_tabulated(tmp_path):
    (tmp_path / "configs").mkdir()
    path = tmp_path / "configs" / "recipe.toml"
    path.write_text('[study]\nledger = "docs/data/recipe.jsonl"\nout = "runs/recipe"\n'
                    'languages = ["parity"]\nrecipes = ["default", "authors"]\nsteps = 4\n'
                    'seed = 0\n[train]\nthreads = 1\ntest_lengths = "9:12:3"\ntest_samples = 4\n'
                    "log_every = 1\n")
    config = read_config(mod.STUDY, path)
    run_study(mod.STUDY, config, echo=None)
    ledger = read_ledger(tmp_path / "docs" / "data" / "recipe.jsonl")
    assert sorted(ledger) == ["parity__authors", "parity__default"]
    default, authors = ledger["parity__default"], ledger["parity__authors"]
    assert default["steps"] == authors["steps"] == 4  # a recipe never sets the steps
    assert (default["optimizer"], default["batch"]) != (authors["optimizer"], authors["batch"])
    assert set(default["min_accuracy"]) == set(KINDS)
    assert default["loss_last_100"] > 0
    text = study_sections(mod.STUDY, config)["recipe against defaults"]
    lines = text.splitlines()
    assert lines[2].startswith("| parity | default | ") and lines[3].startswith(
        "| parity | authors | ")
    assert lines[-1] == ("4 steps each, seed 0, MLP-LDRU at each recipe's settings, one thread; "
                         "test lengths 9, 12 with 4 strings per length and kind.")
    said: list[str] = []
    run_study(mod.STUDY, config, echo=said.append)
    assert said[0] == "0 runs to do (2 in the ledger)"


def test_the_study_config_and_a_bad_one():
    config = read_config(mod.STUDY, ROOT / "configs" / "recipe.toml")
    assert [r["id"] for r in mod.STUDY.plan(config, {})] == [
        "parity__default", "parity__authors", "dyck-4__default", "dyck-4__authors"]
    assert mod.table([], 1000, 0, config.data["train"]["test_lengths"], 32).endswith(
        "test lengths 41, 94, 147, 200 with 32 strings per length and kind.\n")
    with pytest.raises(ConfigError, match="no run yet"):
        mod.STUDY.sections(config, {})


def test_a_config_without_its_keys_is_named(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("[study]\nsteps = 1\n[train]\nthreads = 1\n")
    with pytest.raises(ConfigError, match="recipe study is missing languages, recipes, seed, "
                                          "train.test_lengths"):
        read_config(mod.STUDY, path)
