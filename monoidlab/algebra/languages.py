"""The language suite: find spec files by name, and the named suites.

Example
-------
>>> import monoidlab as ml
>>> ml.load_language("dyck-2").n_states
4
>>> len(ml.suite("ldru21"))
21
>>> as_language("parity") is ml.load_language("parity")   # a name where a language goes
True
"""

from __future__ import annotations

import os
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from monoidlab._suggest import known_choices
from monoidlab.algebra.automaton import Automaton
from monoidlab.algebra.spec import load_spec
from monoidlab.errors import InputError, SpecError, UnknownName

if TYPE_CHECKING:
    from monoidlab.algebra.monoid import SyntacticMonoid

__all__ = ["languages_dir", "load_language", "spec_path", "language_names", "suite", "suite_names",
           "as_language", "as_monoid"]


def languages_dir() -> Path:
    """``$MONOIDLAB_LANGUAGES`` if set, else the suite shipped with the package
    (``monoidlab/suite/``, the repository's top-level ``languages/`` link points there)."""
    env = os.environ.get("MONOIDLAB_LANGUAGES")
    path = Path(env) if env else Path(__file__).resolve().parent.parent / "suite"
    if not path.is_dir():
        raise SpecError(str(path), "<folder>", "language folder not found; set MONOIDLAB_LANGUAGES "
                        "to the folder holding the *.toml specs")
    return path


def language_names() -> list[str]:
    """Names of every spec in the language folder."""
    return sorted(p.stem for p in languages_dir().glob("*.toml") if p.stem != "suites")


@lru_cache(maxsize=128)
def _load_cached(path: str, mtime: float) -> Automaton:
    return load_spec(path)


def load_language(name_or_path: str | os.PathLike) -> Automaton:
    """Load a language by suite name (``"dyck-6"``) or by path to a TOML spec.

    Loaded machines are cached by path and modification time (the monoid is cached on them).
    """
    path = spec_path(name_or_path)
    return _load_cached(str(path.resolve()), path.stat().st_mtime)


def spec_path(name_or_path: str | os.PathLike) -> Path:
    """The spec file a suite name or a path names (the file must exist).

    >>> spec_path("parity").name
    'parity.toml'
    """
    if not isinstance(name_or_path, str | os.PathLike):
        raise InputError(f"language: a suite name or the path of a TOML spec, got "
                         f"{type(name_or_path).__name__} {name_or_path!r}"[:200])
    text = str(name_or_path)
    path = Path(text)
    if not (text.endswith(".toml") or path.is_file()):
        path = languages_dir() / f"{text}.toml"
        if not path.is_file():
            raise UnknownName(f"{text}: no language named {text!r} in {languages_dir()}"
                              + known_choices(text, language_names(),
                                              where="monoidlab languages"))
    if not path.is_file():
        what = ("a folder, not a spec file" if path.is_dir() else "not a regular file"
                if path.exists() else "no such file")
        raise SpecError(text, "<file>", what)
    return path


def as_language(lang: Any, what: str = "lang") -> Automaton:
    """The :class:`~monoidlab.algebra.automaton.Automaton` itself, or the language a suite name or
    spec path names (through :func:`load_language`); anything else is an
    :class:`~monoidlab.errors.InputError` naming ``what``. Every public function that takes
    a language accepts both.

    >>> as_language("tomita-5").n_states
    4
    """
    if isinstance(lang, Automaton):
        return lang
    if isinstance(lang, str | os.PathLike):
        return load_language(lang)
    raise InputError(f"{what}: an Automaton, a suite language name (e.g. 'parity') or the path "
                     f"of a TOML spec, got {type(lang).__name__}")


def as_monoid(value: Any, what: str = "monoid") -> SyntacticMonoid:
    """A :class:`~monoidlab.algebra.monoid.SyntacticMonoid` itself, or the monoid of a language (an
    Automaton, a suite name or a spec path).

    >>> as_monoid("parity").size
    2
    """
    from monoidlab.algebra.monoid import SyntacticMonoid

    if isinstance(value, SyntacticMonoid):
        return value
    if isinstance(value, Automaton | str | os.PathLike):
        return as_language(value, what).monoid()
    raise InputError(f"{what}: a SyntacticMonoid, an Automaton or a suite language name, got "
                     f"{type(value).__name__}")


def _suites() -> dict[str, list[str]]:
    path = languages_dir() / "suites.toml"
    with open(path, "rb") as fh:
        data = tomllib.load(fh)
    return {k: list(v) for k, v in data.items()}


def suite_names() -> list[str]:
    return sorted(_suites())


def suite(name: str) -> list[str]:
    """Language names of a named suite (``ldru21``, ``tomita``, ``deletang-regular``, ``all``)."""
    if not isinstance(name, str):
        raise InputError(f"suite: a suite name (one of {', '.join(suite_names() + ['all'])}), "
                         f"got {type(name).__name__}")  # not a name: nothing to be close to
    if name == "all":
        return language_names()
    suites = _suites()
    if name not in suites:
        raise UnknownName(f"unknown suite {name!r}" + known_choices(name, [*suites, "all"]))
    return suites[name]
