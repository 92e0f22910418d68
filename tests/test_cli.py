"""The ``monoidlab`` command: JSON output, tables, and one-line errors with exit status 2."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import monoidlab as ml
from monoidlab.cli import UsageError, format_table, main, parse_lengths

MONOID_KEYS = {"name", "states", "alphabet", "size", "idempotents", "r_classes", "l_classes",
               "h_classes", "j_classes", "group", "aperiodic", "commutative"}


def run_main(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name", ["parity", "dyck-6", "tomita-7", "modular-arithmetic",
                                  "prefix-2-4"])
def test_monoid_json(capsys, name):
    code, out, err = run_main(capsys, "monoid", name, "--json")
    assert code == 0 and err == ""
    data = json.loads(out)
    assert MONOID_KEYS <= set(data)
    a = ml.load_language(name)
    m = a.monoid()
    g = m.green
    assert data["name"] == name and data["states"] == a.n_states
    assert data["alphabet"] == list(a.alphabet)
    assert (data["size"], data["idempotents"]) == (m.size, len(m.idempotents))
    assert (data["r_classes"], data["l_classes"], data["h_classes"], data["j_classes"]) == (
        g.n_r, g.n_l, g.n_h, g.n_j)
    assert (data["group"], data["aperiodic"], data["commutative"]) == (
        g.is_group, g.is_aperiodic, m.is_commutative)
    assert all(isinstance(data[k], bool) for k in ("group", "aperiodic", "commutative"))


def test_monoid_known_values(capsys):
    _, out, _ = run_main(capsys, "monoid", "dyck-2", "--json")
    data = json.loads(out)
    assert (data["size"], data["idempotents"], data["j_classes"], data["aperiodic"]) == (15, 7, 4, True)


def test_monoid_from_a_path(capsys, tmp_path):
    spec = tmp_path / "mine.toml"
    spec.write_text('alphabet = ["a"]\nstart = "p"\naccept = ["p"]\n'
                    '[transitions]\np = { "a" = "q" }\nq = { "a" = "p" }\n')
    code, out, _ = run_main(capsys, "monoid", str(spec), "--json")
    assert code == 0 and json.loads(out)["size"] == 2 and json.loads(out)["name"] == "mine"


def test_monoid_table_and_elements(capsys):
    code, out, _ = run_main(capsys, "monoid", "tomita-7", "--elements")
    assert code == 0
    assert "size: 9" in out and "index" in out and "accept" in out
    code, out, _ = run_main(capsys, "monoid", "tomita-7", "--elements", "--json")
    elements = json.loads(out)["elements"]
    assert [e["word"] for e in elements] == ml.load_language("tomita-7").monoid().words


def test_languages_json(capsys):
    code, out, err = run_main(capsys, "languages", "--suite", "tomita", "--json")
    assert code == 0 and err == ""
    rows = json.loads(out)
    assert [r["name"] for r in rows] == ml.suite("tomita")
    sizes = {r["name"]: r["size"] for r in rows}
    assert sizes["tomita-5"] == 4 and sizes["tomita-7"] == 9
    for r in rows:
        assert {"states", "alphabet", "size", "idempotents", "r_classes", "l_classes",
                "h_classes", "j_classes", "group", "aperiodic"} <= set(r)
    t5 = next(r for r in rows if r["name"] == "tomita-5")  # a group: one class of each kind
    assert (t5["r_classes"], t5["l_classes"], t5["h_classes"], t5["j_classes"]) == (1, 1, 1, 1)


def test_languages_table(capsys):
    code, out, _ = run_main(capsys, "languages", "--suite", "deletang-regular")
    lines = out.splitlines()
    assert code == 0 and lines[0].split()[:3] == ["name", "states", "alphabet"]
    assert set(lines[1]) <= {"-", " "} and len(lines) == 2 + len(ml.suite("deletang-regular"))


def one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("monoidlab: error: ")
    return lines[0]


@pytest.mark.parametrize("argv,needle", [
    (["monoid", "no-such-language"], "no language named 'no-such-language'"),
    (["monoid", "/no/such/dir/spec.toml"], "no such file"),
    (["monoid", "full-transformation-7"], "no language named"),
    (["languages", "--suite", "nope"], "unknown suite"),
])
def test_errors_exit_2_with_one_line(capsys, argv, needle):
    code, out, err = run_main(capsys, *argv)
    assert code == 2 and out == ""
    assert needle in one_line_error(err)


def test_broken_spec_file_error_names_file_and_field(capsys, tmp_path):
    spec = tmp_path / "broken.toml"
    spec.write_text('alphabet = ["a"]\nstart = "p"\naccept = ["p"]\n[transitions]\np = { "a" = "r" }\n')
    code, _, err = run_main(capsys, "monoid", str(spec), "--json")
    line = one_line_error(err)
    assert code == 2 and str(spec) in line and "'transitions.p.a'" in line


def test_too_large_is_a_one_line_error(capsys, tmp_path):
    spec = tmp_path / "t5.toml"
    spec.write_text('family = "full-transformation"\n[params]\nn = 5\n')
    code, _, err = run_main(capsys, "monoid", str(spec), "--max-elements", "100")
    assert code == 2 and "max_elements=100" in one_line_error(err)


def test_no_command_prints_help(capsys):
    code, out, _ = run_main(capsys)
    assert code == 0 and "languages" in out and "monoid" in out


def test_helpers():
    assert list(parse_lengths("41:500", "--test")) == list(range(41, 501))
    assert list(parse_lengths("7", "--test")) == [7]
    for bad in ("a:b", "5:3", "-1:4"):
        with pytest.raises(UsageError):
            parse_lengths(bad, "--test")
    table = format_table([{"a": 1, "b": True, "c": 0.5}], ["a", "b", "c"])
    assert table.splitlines() == ["a  b    c", "-  ---  -----", "1  yes  0.500"]


def entry_point() -> str | None:
    exe = Path(sys.executable).with_name("monoidlab")
    return str(exe) if exe.exists() else shutil.which("monoidlab")


def test_installed_entry_point():
    exe = entry_point()
    if exe is None:
        pytest.skip("the monoidlab entry point is not installed (pip install -e .)")
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    done = subprocess.run([exe, "monoid", "dyck-1", "--json"], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["size"] == 6 and MONOID_KEYS <= set(data)
    done = subprocess.run([exe, "monoid", "nope"], capture_output=True, text=True, timeout=120,
                          env=env)
    assert done.returncode == 2 and done.stdout == ""
    assert "no language named 'nope'" in one_line_error(done.stderr)


def test_cli_reference_is_up_to_date():
    """docs/cli.md is generated from the parser; regenerate it when a command changes."""
    from pathlib import Path

    from monoidlab.cli import markdown_reference

    doc = Path(__file__).resolve().parent.parent / "docs" / "cli.md"
    assert doc.read_text() == markdown_reference() + "\n", (
        "docs/cli.md is stale: python -c \"from monoidlab.cli import markdown_reference as m; "
        "print(m())\" > docs/cli.md")
