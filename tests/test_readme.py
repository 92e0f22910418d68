"""README.md's tours run as written: the Python block as a doctest-like script, the shell block
command by command, in order, in a scratch folder that holds only what a fresh clone holds."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, re.S)


def test_the_python_tour_runs():
    import matplotlib

    matplotlib.use("Agg")
    (code,) = blocks("python")
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102 - our own README
    assert namespace["monoid"].size == 141
    assert namespace["gap"].summary()["missing"] > 0  # the D6 gap the tour is about


def shell_commands() -> list[list[str]]:
    shell = [b for b in blocks("bash") if "monoidlab languages" in b]
    assert len(shell) == 1, "one shell tour in README.md"
    lines = [ln.split("#", 1)[0].strip() for ln in shell[0].splitlines()]
    return [shlex.split(ln) for ln in lines if ln]


def test_the_shell_tour_runs_in_order(tmp_path):
    work = tmp_path / "clone"
    work.mkdir()
    shutil.copytree(ROOT / "configs", work / "configs")  # what a fresh clone has
    exe = [sys.executable, "-m", "monoidlab"]
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "MPLBACKEND": "Agg"}
    for cmd in shell_commands():
        assert cmd[0] == "monoidlab", cmd
        done = subprocess.run(exe + cmd[1:], cwd=work, capture_output=True, text=True,
                              env=env, timeout=600)
        assert done.returncode == 0, f"{' '.join(cmd)}:\n{done.stderr[-1500:]}"
    assert (work / "out" / "d6" / "coverage.json").is_file()
    assert (work / "runs" / "parity" / "checkpoint.pt").is_file()
    assert (work / "runs" / "parity" / "probe" / "probe.json").is_file()
    assert (work / "runs" / "sweep-smoke" / "summary.md").is_file()
    assert (work / "reports" / "parity.html").is_file()
    assert not (work / "docs").exists()  # a sweep writes docs only with --write-docs


@pytest.mark.parametrize("page", ["README.md", "docs/index.md"])
def test_every_shell_command_of_the_page_is_in_the_tour_or_a_known_long_run(page):
    """Commands outside the tested tour must be marked as long runs (configs/, make)."""
    text = (ROOT / page).read_text()
    tour = {" ".join(c) for c in shell_commands()}
    for line in re.findall(r"^(monoidlab [^#\n]*)", text, re.M):
        assert line.strip() in tour, f"{page}: untested command {line.strip()!r}"


def test_ci_runs_the_readme_test_command_with_the_browser_step():
    """CI (.ci/run) runs exactly the README's test command, and that command first installs
    chromium when it can (the `browser` target), so the headless-browser test runs in CI."""
    (two,) = [b for b in blocks("bash") if "make test" in b]
    readme_cmd = next(ln.split("#", 1)[0].strip() for ln in two.splitlines()
                      if ln.startswith("make test"))
    ci = (ROOT / ".ci" / "run").read_text()
    commands = [ln.strip() for ln in ci.splitlines()
                if ln.strip() and not ln.lstrip().startswith("#")
                and not ln.startswith(("set ", "cd "))]
    assert commands == [readme_cmd] == ["make test"]
    makefile = (ROOT / "Makefile").read_text()
    deps = re.search(r"^test:(.*)$", makefile, re.M).group(1).split()
    assert "browser" in deps
    recipe = makefile.split("\nbrowser:", 1)[1].split("\n\n", 1)[0]
    assert "apt-get install" in recipe and "chromium" in recipe and 'id -u' in recipe
