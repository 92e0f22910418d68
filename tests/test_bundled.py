"""monoidlab.bundled: the run configs the package ships, found by name from any folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from monoidlab.bundled import config_names, configs_dir, resolve_config
from monoidlab.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent


def test_the_package_ships_run_configs_and_the_studies_configs_stay_in_the_repository():
    """monoidlab/configs holds the run and sweep configs users start by name; the studies'
    configs (top-level configs/) are the repository's own: none is shipped, none is both."""
    assert configs_dir() == ROOT / "monoidlab" / "configs"
    assert set(config_names()) == {p.stem for p in configs_dir().glob("*.toml")}
    studies = {p.stem for p in (ROOT / "configs").glob("*.toml")}
    assert not (ROOT / "configs").is_symlink() and studies and "threshold-study" in studies
    assert not studies & set(config_names())
    assert "ldru21-cpu" in config_names() and "threshold-study" not in config_names()


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
