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


def shell_block() -> str:
    shell = [b for b in blocks("bash") if "monoidlab languages" in b]
    assert len(shell) == 1, "one shell tour in README.md"
    return shell[0]


def shell_commands() -> list[list[str]]:
    lines = [ln.split("#", 1)[0].strip() for ln in shell_block().splitlines()]
    return [shlex.split(ln) for ln in lines if ln]


def fresh_clone(dest: Path) -> Path:
    """What a clone holds: the tracked (and staged or new, not ignored) files, links kept."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split("\0")
    for f in filter(None, files):
        src, out = ROOT / f, dest / f
        out.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), out)
        elif src.is_file():
            shutil.copy2(src, out)  # mtimes kept: make compares pyproject.toml with the stamp
    return dest


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*")
            if p.is_file()}


def test_the_shell_tour_runs_in_order_from_a_fresh_clone(tmp_path):
    """The README's shell block, verbatim, in one bash process: starting in a fresh clone, with
    no `monoidlab` on PATH, through `make setup` and `source .venv/bin/activate`. The clone's
    `.venv` is this test's own environment (a link), so `make setup` finds it installed; when
    pyproject.toml is newer than that install, setup would reinstall, and the test says so."""
    venv = Path(sys.prefix)
    if not (venv / "bin" / "activate").is_file() or not (venv / ".monoidlab-installed").is_file():
        pytest.skip(f"{venv} is not a venv made by `make setup`")
    work = fresh_clone(tmp_path / "clone")
    os.symlink(venv, work / ".venv")
    if subprocess.run(["make", "-q", "setup"], cwd=work).returncode != 0:
        pytest.skip("pyproject.toml is newer than .venv's install: run `make setup` first")
    # a newcomer's shell: nothing of this environment on PATH, no monoidlab anywhere on it
    path = [d for d in os.environ.get("PATH", "").split(os.pathsep)
            if d and not (Path(d) / "monoidlab").exists()]
    env = {**{k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")},
           "PATH": os.pathsep.join(path), "PYTHONWARNINGS": "ignore", "MPLBACKEND": "Agg"}
    before = subprocess.run(["bash", "-c", "command -v monoidlab"], cwd=work, env=env,
                            capture_output=True, text=True)
    assert before.returncode != 0, f"monoidlab already on PATH: {before.stdout}"
    docs = snapshot(work / "docs")
    script = "set -euo pipefail\n" + shell_block()
    done = subprocess.run(["bash", "-c", script], cwd=work, capture_output=True, text=True,
                          env=env, timeout=1200)
    assert done.returncode == 0, f"the README's shell block failed:\n{done.stderr[-2500:]}"
    # the short parity run says what the README says it says: each validation and restart,
    # the steps it really ran (attempts x 100) and a verdict beside its baselines
    out = done.stdout + done.stderr
    ran = re.search(r"mlp-ldru on parity: (\d+) steps", out)
    assert ran and int(ran.group(1)) % 100 == 0, out[-3000:]
    attempts = int(ran.group(1)) // 100
    assert "validation at step 100 (attempt 1 of 3)" in out
    if attempts > 1:  # each later attempt is named as it runs and is validated
        assert f"validation at step {100 * attempts} (attempt {attempts} of 3)" in out
    assert re.search(r"\n(solved|not solved at threshold 0\.99)", out), out[-3000:]
    assert (work / "out" / "d6" / "coverage.json").is_file()
    assert (work / "runs" / "parity" / "checkpoint.pt").is_file()
    assert (work / "runs" / "parity" / "probe" / "probe.json").is_file()
    assert (work / "runs" / "sweep-smoke" / "summary.md").is_file()
    assert (work / "reports" / "parity.html").is_file()
    assert snapshot(work / "docs") == docs  # a sweep writes docs only with --write-docs


@pytest.mark.parametrize("page", ["README.md", "docs/index.md"])
def test_every_shell_command_of_the_page_is_in_the_tour_or_a_known_long_run(page):
    """Commands outside the tested tour must be marked as long runs (configs/, make)."""
    text = (ROOT / page).read_text()
    tour = {" ".join(c) for c in shell_commands()}
    for line in re.findall(r"^(monoidlab [^#\n]*)", text, re.M):
        assert line.strip() in tour, f"{page}: untested command {line.strip()!r}"


def test_ci_runs_the_readme_test_command_with_the_browser_step():
    """CI (.ci/run) runs exactly the README's test command, and that command first installs
    chromium and gap-core when it can (the `system-tools` target, beside the setup), so the
    headless-browser and GAP oracle tests run in CI."""
    (two,) = [b for b in blocks("bash") if "make test" in b]
    readme_cmd = next(ln.split("#", 1)[0].strip() for ln in two.splitlines()
                      if ln.startswith("make test"))
    ci = (ROOT / ".ci" / "run").read_text()
    commands = [ln.strip() for ln in ci.splitlines()
                if ln.strip() and not ln.lstrip().startswith("#")
                and not ln.startswith(("set ", "cd "))]
    assert commands == [readme_cmd] == ["make test"]
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\ntest:\n", 1)[1].split("\n\n", 1)[0]
    first = recipe.splitlines()[0].split()
    assert "setup" in first and "system-tools" in first and "-j2" in first
    steps = [ln.strip() for ln in recipe.splitlines()[1:]]
    assert [ln.split()[1:3] for ln in steps] == [["check", "monoidlab"], ["-m", "mypy"],
                                                 ["-m", "pytest"]]
    tools = makefile.split("\nsystem-tools:", 1)[1].split("\n\n", 1)[0]
    assert "apt-get install" in tools and "id -u" in tools and "$(APT_WANT)" in tools
    want = makefile.split("\nAPT_WANT :=", 1)[1].split("\nAPT_LOG", 1)[0]
    assert "chromium" in want and "gap-core" in want
