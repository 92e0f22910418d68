"""A normal install works away from the checkout: the wheel ships the language suite.

The wheel is built from a copy of the tracked files (so no ``build/`` is left in the checkout),
installed with ``--no-deps`` into a fresh virtual environment that sees the already-installed
dependencies (torch included) through a ``.pth`` file, and the CLI runs from a folder outside
the checkout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run(cmd, cwd, env=None, timeout=300):
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    files = run(["git", "ls-files", "-z"], ROOT).split("\0")
    if not any(files):
        pytest.skip("not a git checkout")
    for f in filter(None, files):
        dest = src / f
        dest.parent.mkdir(parents=True, exist_ok=True)
        p = ROOT / f
        if p.is_symlink():
            os.symlink(os.readlink(p), dest)
        elif p.is_file():
            dest.write_bytes(p.read_bytes())
    dist = tmp / "dist"
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", dist, src], tmp)
    wheel = next(dist.glob("monoidlab-*.whl"))
    venv = tmp / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", venv], tmp)
    site = next((venv / "lib").glob("python3*/site-packages"))
    # the dependencies already installed here (torch, numpy, ...), but not this checkout
    deps = sysconfig.get_paths()["purelib"]
    (site / "deps.pth").write_text(deps + "\n")
    py = venv / "bin" / "python"
    run([sys.executable, "-m", "pip", "--python", py, "install", "--no-deps", "-q", wheel], tmp)
    return wheel, py, tmp


def test_the_wheel_contains_the_suite_and_the_type_marker(wheel_venv):
    wheel, _, _ = wheel_venv
    names = zipfile.ZipFile(wheel).namelist()
    suite = {Path(n).name for n in names if n.startswith("monoidlab/suite/")}
    assert {"parity.toml", "dyck-6.toml", "suites.toml", "README.md"} <= suite
    assert len([n for n in suite if n.endswith(".toml")]) == len(list(
        (ROOT / "languages").glob("*.toml")))
    assert "monoidlab/py.typed" in names


def test_the_installed_cli_runs_outside_the_checkout(wheel_venv):
    _, py, tmp = wheel_venv
    away = tmp / "elsewhere"
    away.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MONOIDLAB_LANGUAGES")}
    where = run([py, "-c", "import monoidlab; print(monoidlab.__file__)"], away, env)
    assert str(ROOT) not in where  # the installed copy, not the checkout
    out = json.loads(run([py, "-m", "monoidlab", "monoid", "parity", "--json"], away, env))
    assert out["size"] == 2 and out["name"] == "parity"
    table = run([py, "-m", "monoidlab", "languages", "--suite", "ldru21"], away, env)
    assert len(table.strip().splitlines()) == 2 + 21 and "dyck-12" in table


def test_the_wheel_ships_the_run_configs_and_the_licence(wheel_venv):
    """The run configs (monoidlab/configs, which the README's commands use) and the frozen
    training recipe are in the wheel, the studies' configs (top-level configs/) are not, and the
    licence is an SPDX expression with its file (setuptools' deprecated `license = {text = ...}`
    table is gone)."""
    wheel, _, _ = wheel_venv
    names = zipfile.ZipFile(wheel).namelist()
    configs = {Path(n).name for n in names if n.startswith("monoidlab/configs/")}
    assert configs == {p.name for p in (ROOT / "monoidlab" / "configs").glob("*.toml")} and configs
    assert not configs & {p.name for p in (ROOT / "configs").glob("*.toml")}
    assert {"monoidlab/data/frozen-recipe.toml", "monoidlab/data/default-recipe.toml"} <= set(names)
    meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(meta).decode()
    assert "License-Expression: MIT" in text
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)


def test_the_installed_cli_finds_a_bundled_config_by_name(wheel_venv):
    """Outside a clone, `--config configs/NAME.toml` (as the README spells it) and `NAME` name
    the installed copy; a misspelt name is one error with the closest names first."""
    _, py, tmp = wheel_venv
    away = tmp / "elsewhere-configs"
    away.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MONOIDLAB_LANGUAGES")}
    code = ("from monoidlab.bundled import resolve_config as r; "
            "print(r('configs/ldru21-cpu.toml')); print(r('sweep-smoke'))")
    a, b = run([py, "-c", code], away, env).split()
    assert "site-packages" in a and a.endswith("monoidlab/configs/ldru21-cpu.toml")
    assert b.endswith("monoidlab/configs/sweep-smoke.toml") and str(ROOT) not in a + b
    done = subprocess.run([str(py), "-m", "monoidlab", "train", "--config", "ldru12-cpu"],
                          cwd=away, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "ldru12-cpu: no such file" in done.stderr and "closest: 'ldru21-cpu'" in done.stderr
