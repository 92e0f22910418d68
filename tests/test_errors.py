"""The error tree (monoidlab.errors) and the one place that catches it, the command line.

Every error a user can cause is a :class:`~monoidlab.errors.MonoidlabError` and leaves
``monoidlab`` with status 2 and one line; anything else is a bug and keeps its traceback (the
CLI catches ``MonoidlabError``, ``OSError`` and ``MemoryError`` only). See
docs/architecture.md, "Errors".
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import monoidlab as ml
from monoidlab import cli, errors
from monoidlab.cli import main

ROOT = Path(__file__).resolve().parent.parent

# each error and the builtin its callers caught before the renovation
BUILTIN = {
    "InputError": ValueError, "UnknownName": ValueError, "SpecError": ValueError,
    "ConfigError": ValueError, "UsageError": ValueError, "MonoidTooLarge": RuntimeError,
    "CheckpointError": RuntimeError, "TrainingDiverged": RuntimeError,
    "MissingDependency": ImportError, "OutputPathError": OSError, "RunExists": FileExistsError,
}


def test_every_error_is_a_monoidlab_error_and_its_old_builtin():
    names = [n for n in errors.__all__ if n != "MonoidlabError"]
    assert sorted(names) == sorted(BUILTIN)
    for name in names:
        cls = getattr(errors, name)
        assert issubclass(cls, errors.MonoidlabError) and issubclass(cls, BUILTIN[name]), name
    assert errors.MonoidlabError.__bases__ == (Exception,)
    # the top level re-exports the common ones
    for name in ("MonoidlabError", "InputError", "UnknownName", "SpecError", "ConfigError",
                 "MonoidTooLarge"):
        assert getattr(ml, name) is getattr(errors, name)
    exc = errors.SpecError("x.toml", "alphabet", "empty")
    assert (str(exc), exc.source, exc.field) == ("x.toml: field 'alphabet': empty", "x.toml",
                                                 "alphabet")


@pytest.mark.parametrize("call, error, match", [
    (lambda: ml.load_language("no-such-language"), errors.UnknownName, "no-such-language"),
    (lambda: ml.sample(ml.load_language("parity"), [3], 4, sampler="nope"), errors.UnknownName,
     "nope"),
    (lambda: ml.load_language("addition-interleaved").monoid().table, errors.MonoidTooLarge,
     "115496 elements"),
    (lambda: ml.load_language("dyck-6").monoid(max_elements=100), errors.MonoidTooLarge,
     "max_elements=100"),
    (lambda: ml.exact_coverage(ml.load_language("parity"), [3], sampler="ldru"),
     errors.InputError, "ldru"),
])
def test_api_errors_are_monoidlab_errors(call, error, match):
    with pytest.raises(error, match=match) as info:
        call()
    assert isinstance(info.value, errors.MonoidlabError) and "\n" not in str(info.value)


def one_line(capsys, argv) -> str:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("monoidlab: error: "), err
    return lines[0]


def test_assoc_weight_on_an_rnn_exits_2_naming_the_key(capsys):
    line = one_line(capsys, ["train", "--language", "parity", "--model", "rnn",
                             "--assoc_weight=0.1"])
    assert "key 'assoc_weight'" in line and "'rnn' cannot take assoc_weight" in line
    assert "mlp-ldru" in line


def test_offset_consistency_without_random_offsets_exits_2_naming_the_key(capsys):
    line = one_line(capsys, ["train", "--language", "parity", "--model", "mlp-ldru",
                             "--offset_consistency=1"])
    assert "key 'offset_consistency'" in line and 'needs offsets = "random"' in line


def test_exact_coverage_of_a_huge_monoid_exits_2(capsys):
    line = one_line(capsys, ["coverage", "addition-interleaved", "--exact"])
    assert "addition-interleaved: the monoid has 115496 elements" in line


def test_one_line_from_the_real_entry_point():
    """``python -m monoidlab`` prints no traceback for a user error (the same check for the
    installed script is in test_cli.py)."""
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    env.pop("MONOIDLAB_DEBUG", None)
    done = subprocess.run([sys.executable, "-m", "monoidlab", "coverage", "addition-interleaved",
                           "--exact"], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "MonoidTooLarge" not in done.stderr and "115496 elements" in done.stderr


def _inject(monkeypatch, exc: BaseException) -> None:
    """Make ``monoidlab monoid`` raise ``exc`` from inside the command."""
    real = cli.COMMANDS["monoid"]

    def broken(args):
        raise exc

    broken.configure, broken.cli_name, broken.cli_help = (real.configure, real.cli_name,
                                                          real.cli_help)
    monkeypatch.setitem(cli.COMMANDS, "monoid", broken)


@pytest.mark.parametrize("exc", [ZeroDivisionError("bug"), KeyError("bug"), TypeError("bug"),
                                 ValueError("bug"), RuntimeError("bug"), AttributeError("bug"),
                                 ImportError("bug")])
def test_bugs_are_not_swallowed(monkeypatch, capsys, exc):
    """A plain exception (not a MonoidlabError) is a bug: it propagates with its traceback, even
    the builtins the error classes derive from (ValueError, RuntimeError, ImportError)."""
    _inject(monkeypatch, exc)
    with pytest.raises(type(exc), match="bug"):
        main(["monoid", "parity"])
    assert capsys.readouterr().err == ""


def test_a_bug_deep_in_the_library_is_not_swallowed(monkeypatch):
    def broken(*a, **k):
        return 1 / 0

    monkeypatch.setattr(ml, "load_language", broken)
    with pytest.raises(ZeroDivisionError):
        main(["monoid", "parity"])


@pytest.mark.parametrize("exc, needle", [
    (errors.ConfigError("run.toml: key 'lr': bad"), "run.toml: key 'lr': bad"),
    (errors.MonoidTooLarge("too big"), "too big"),
    (errors.CheckpointError("no checkpoint at x"), "no checkpoint at x"),
    (FileNotFoundError(2, "No such file or directory", "/no/file"),
     "No such file or directory: /no/file"),
    (MemoryError(), "out of memory"),
])
def test_user_errors_are_one_line(monkeypatch, capsys, exc, needle):
    _inject(monkeypatch, exc)
    assert needle in one_line(capsys, ["monoid", "parity"])


def test_debug_mode_keeps_the_traceback(monkeypatch):
    _inject(monkeypatch, errors.ConfigError("shown with a traceback"))
    monkeypatch.setenv("MONOIDLAB_DEBUG", "1")
    with pytest.raises(errors.ConfigError):
        main(["monoid", "parity"])


# Builtin exceptions the package may raise, each with its reason; every other `raise` in the
# package raises a MonoidlabError (one line for the CLI, `except MonoidlabError` for the API).
BUILTIN_RAISES = {
    ("monoidlab/_util.py", "OSError"): "a full disk re-raised with the file kept (the CLI "
                                       "prints OSError as one line)",
    ("monoidlab/cli/_common.py", "TypeError"): "json.dumps' default hook must raise TypeError",
    ("monoidlab/training/keys.py", "TypeError"): "a frozen table refuses changes as dict does",
    ("monoidlab/probing/embeddings.py", "RuntimeError"): "an internal invariant (a bug, not "
                                                         "an input)",
    ("monoidlab/evaluation/certificate.py", "RuntimeError"): "an internal invariant: a "
                                                             "counterexample the fold and the DFA "
                                                             "do not confirm is a bug",
    ("monoidlab/evaluation/scan_certificate.py", "RuntimeError"): "the same invariant for the "
                                                                  "prefix scan's certificate",
    ("monoidlab/models/transform_tree.py", "RuntimeError"): "an internal invariant: a product "
                                                            "outside the closure is a bug",
    ("monoidlab/algebra/automaton.py", "AttributeError"): "a frozen object refuses attribute changes as "
                                                  "frozen dataclasses do",
    ("monoidlab/__init__.py", "AttributeError"): "a module __getattr__ (PEP 562) must raise "
                                                 "AttributeError for names it does not have",
    ("monoidlab/probing/__init__.py", "AttributeError"): "the same, for the probing package's "
                                                         "lazy names",
    ("monoidlab/probing/_lstar.py", "IndexError"): "a sequence's __getitem__ must raise "
                                                   "IndexError past its end (AALpy iterates "
                                                   "words by index)",
}


def _raises():
    """``(file, exception name, line)`` of every ``raise X(...)`` / ``raise X`` in the package."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    out = []
    for path in sorted((root / "monoidlab").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and node.exc is not None:
                exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if isinstance(exc, ast.Name):
                    out.append((path.relative_to(root).as_posix(), exc.id, node.lineno))
    return out


def test_every_error_the_package_raises_is_a_monoidlab_error():
    import builtins

    import monoidlab.errors as errors

    bad = []
    for file, name, line in _raises():
        cls = getattr(errors, name, None) or getattr(builtins, name, None)
        if cls is None:  # a local exception class: it must derive from the tree
            continue
        if isinstance(cls, type) and issubclass(cls, errors.MonoidlabError):
            continue
        if name in ("NotImplementedError", "KeyboardInterrupt", "SystemExit", "AssertionError"):
            continue
        if (file, name) not in BUILTIN_RAISES:
            bad.append(f"{file}:{line}: raise {name}")
    assert not bad, "raise outside the error tree (add a MonoidlabError): " + "; ".join(bad)


# Exception classes that never reach a user, each with the place that catches it.
INTERNAL_EXCEPTIONS = {"HashCollision": "caught in monoid.py: the closure retries with exact keys"}


def test_local_exception_classes_derive_from_the_tree():
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "monoidlab"
    bad = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(b, ast.Name) and b.id.endswith(("Error", "Exception"))
                    for b in node.bases) and path.name != "errors.py":
                bases = {b.id for b in node.bases if isinstance(b, ast.Name)}
                import monoidlab.errors as errors
                if node.name in INTERNAL_EXCEPTIONS:
                    continue
                if not any(isinstance(getattr(errors, b, None), type) for b in bases):
                    bad.append(f"{path.name}: class {node.name}({', '.join(sorted(bases))})")
    assert not bad, bad
