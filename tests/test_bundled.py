"""monoidlab.bundled: the run configs the package ships, found by name from any folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from monoidlab.bundled import config_names, configs_dir, resolve_config
from monoidlab.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent


def test_the_top_level_configs_folder_is_the_bundled_one():
    assert (ROOT / "configs").resolve() == configs_dir()
    assert set(config_names()) == {p.stem for p in (ROOT / "configs").glob("*.toml")}


def test_names_resolve_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for spelling in ("ldru21-cpu", "ldru21-cpu.toml", "configs/ldru21-cpu.toml"):
        assert resolve_config(spelling) == configs_dir() / "ldru21-cpu.toml"
    # a file of the same name in the current folder wins over the bundled one
    (tmp_path / "configs").mkdir()
    mine = tmp_path / "configs" / "ldru21-cpu.toml"
    mine.write_text("steps = 3\n")
    assert resolve_config("configs/ldru21-cpu.toml") == Path("configs/ldru21-cpu.toml")
    assert resolve_config(os.fspath(mine)) == mine


def test_a_misspelt_name_names_the_closest_and_other_paths_pass_through(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"ldru12-cpu: no such file, and no bundled config of "
                                          r"that name \(closest: 'ldru21-cpu'"):
        resolve_config("ldru12-cpu")
    with pytest.raises(ConfigError, match="closest: 'sweep-smoke'"):
        resolve_config("configs/sweep-smok.toml")
    assert resolve_config("elsewhere/run.toml") == Path("elsewhere/run.toml")
