"""Language spec files (TOML): parsing and validation with errors that name file and field.

The format is documented in ``languages/README.md``. A spec either lists transitions::

    name = "tomita-4"
    alphabet = ["0", "1"]
    start = "q0"
    accept = ["q0", "q1", "q2"]
    [transitions]
    q0 = { "0" = "q1", "1" = "q0" }
    ...

or names a generator: ``family = "dyck"`` with a ``[params]`` table.

Example
-------
>>> spec = {"name": "t", "alphabet": ["a"], "start": "p", "accept": ["p"],
...         "transitions": {"p": {"a": "q"}, "q": {"a": "p"}}}
>>> automaton_from_dict(spec, source="inline").classify(["aa", "a"]).tolist()
[1, 0]
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import numpy as np

from monoidlab._suggest import known_choices
from monoidlab.algebra.automaton import Automaton
from monoidlab.errors import SpecError

__all__ = ["load_spec", "spec_from_text", "automaton_from_dict", "spec_text"]

_KNOWN = {"name", "description", "alphabet", "start", "accept", "classes", "output",
          "transitions", "partial", "sink_class", "family", "params", "states"}


def load_spec(path: str | Path) -> Automaton:
    """Read and validate a TOML spec; every error is a :class:`SpecError` naming the file."""
    path = Path(path)
    src = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(src, "<file>", f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise SpecError(src, "<file>", "not UTF-8 text") from None
    return spec_from_text(text, src, path.stem)


def spec_from_text(text: str, source: str = "spec", default_name: str = "language") -> Automaton:
    """A spec's TOML text as an automaton (what :func:`load_spec` does after reading the file;
    a run's own copy of its spec is read this way). ``default_name`` names a spec without
    ``name`` (a file's stem).

    >>> spec_from_text('alphabet = ["a"]\\nstart = "s"\\naccept = ["s"]\\n'
    ...                '[transitions]\\ns = {a = "s"}\\n', default_name="all-a").name
    'all-a'
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(source, "<toml>", f"invalid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses once per nesting level
        raise SpecError(source, "<toml>", "invalid TOML: arrays or tables nested too deeply"
                        ) from None
    return automaton_from_dict(data, source=source, default_name=default_name)


def _need(data: dict, key: str, typ: type, src: str, what: str) -> Any:
    if key not in data:
        raise SpecError(src, key, f"missing (required: {what})")
    val = data[key]
    if not isinstance(val, typ) or isinstance(val, bool) and typ is not bool:
        raise SpecError(src, key, f"expected {what}, got {type(val).__name__} {val!r}")
    return val


def _opt_str(data: dict, key: str, src: str, default: str) -> str:
    val = data.get(key, default)
    if not isinstance(val, str):
        raise SpecError(src, key, f"expected a string, got {type(val).__name__} {val!r}")
    return val


def automaton_from_dict(data: dict[str, Any], *, source: str = "spec",
                        default_name: str = "language") -> Automaton:
    """Validate a parsed spec and build the minimal :class:`Automaton`."""
    src = source
    if not isinstance(data, dict):
        raise SpecError(src, "<toml>", "the spec must be a table")
    unknown = set(data) - _KNOWN
    if unknown:
        bad = sorted(unknown)[0]
        raise SpecError(src, bad, f"unknown field(s) {sorted(unknown)}"
                        + known_choices(bad, _KNOWN, "known fields"))
    name = _opt_str(data, "name", src, default_name)
    description = _opt_str(data, "description", src, "")

    if "family" in data:
        from monoidlab.algebra.families import build_family

        family = _need(data, "family", str, src, "a family name string")
        params = data.get("params", {})
        if not isinstance(params, dict):
            raise SpecError(src, "params", f"expected a table, got {type(params).__name__}")
        extra = set(data) - {"name", "description", "family", "params"}
        if extra:
            raise SpecError(src, sorted(extra)[0], "a family spec takes only name, description, "
                            "family and params")
        auto = build_family(family, params, source=src)
        return auto.replace(name=name, description=description or auto.description)

    alphabet = _need(data, "alphabet", list, src, "a list of symbol strings")
    if not alphabet:
        raise SpecError(src, "alphabet", "the alphabet is empty")
    for a in alphabet:
        if not isinstance(a, str) or not a:
            raise SpecError(src, "alphabet", f"symbol {a!r} is not a non-empty string")
    seen: set[str] = set()
    for a in alphabet:
        if a in seen:
            raise SpecError(src, "alphabet", f"duplicate symbol {a!r}")
        seen.add(a)
    trans = _need(data, "transitions", dict, src, "a table state -> {symbol = state}")
    if not trans:
        raise SpecError(src, "transitions", "no states")
    states = list(trans)
    if "states" in data:  # optional explicit list (a state with no row needs partial = true)
        listed = _need(data, "states", list, src, "a list of state names")
        for s in listed:
            if not isinstance(s, str):
                raise SpecError(src, "states", f"state name {s!r} is not a string")
        states += [s for s in listed if s not in trans]
    sidx = {s: i for i, s in enumerate(states)}
    partial = data.get("partial", False)
    if not isinstance(partial, bool):
        raise SpecError(src, "partial", f"expected true or false, got {partial!r}")
    start = _need(data, "start", str, src, "a state name")
    if start not in sidx:
        raise SpecError(src, "start", f"unknown state {start!r}; states: {states}")

    # classes and per-state outputs
    if "accept" in data and "classes" in data:
        raise SpecError(src, "accept", "give either accept (a recogniser) or classes + output")
    if "classes" in data:
        classes = _need(data, "classes", list, src, "a list of class names")
        if not classes or not all(isinstance(c, str) for c in classes):
            raise SpecError(src, "classes", "expected a non-empty list of class-name strings")
        if len(set(classes)) != len(classes):
            raise SpecError(src, "classes", "duplicate class names")
        out_table = _need(data, "output", dict, src, "a table state = class")
        output = np.full(len(states) + 1, -1, np.int64)
        for s, c in out_table.items():
            if s not in sidx:
                raise SpecError(src, f"output.{s}", f"unknown state {s!r}")
            if not isinstance(c, str) or c not in classes:
                raise SpecError(src, f"output.{s}", f"unknown class {c!r}; classes: {classes}")
            output[sidx[s]] = classes.index(c)
        missing = [s for s in states if output[sidx[s]] < 0]
        if missing:
            raise SpecError(src, "output", f"no class for state(s) {missing}")
    else:
        if "output" in data:
            raise SpecError(src, "output", "an [output] table needs classes = [...]; a "
                            "recogniser gives accept = [...] instead")
        classes = ["reject", "accept"]
        accept = _need(data, "accept", list, src, "a list of accepting state names")
        output = np.zeros(len(states) + 1, np.int64)
        for s in accept:
            if not isinstance(s, str) or s not in sidx:
                raise SpecError(src, "accept", f"unknown state {s!r}; states: {states}")
            output[sidx[s]] = 1
    sink_class = _opt_str(data, "sink_class", src, classes[0])
    if sink_class not in classes:
        raise SpecError(src, "sink_class", f"unknown class {sink_class!r}; classes: {classes}")
    if "sink_class" in data and not partial:
        raise SpecError(src, "sink_class", "only meaningful with partial = true")

    sink = len(states)
    delta = np.full((len(states) + 1, len(alphabet)), sink, np.int64)
    aidx = {a: i for i, a in enumerate(alphabet)}
    for s in states:
        row = trans.get(s, {})
        field = f"transitions.{s}"
        if not isinstance(row, dict):
            raise SpecError(src, field, f"expected a table symbol = state, got {type(row).__name__}")
        for a, t in row.items():
            if a not in aidx:
                raise SpecError(src, f"{field}.{a}", f"symbol {a!r} is not in the alphabet {alphabet}")
            if isinstance(t, list):
                raise SpecError(src, f"{field}.{a}", f"a transition to several states {t} "
                                "(the automaton must be deterministic)")
            if not isinstance(t, str):
                raise SpecError(src, f"{field}.{a}", f"target must be a state name, got {t!r}")
            if t not in sidx:
                raise SpecError(src, f"{field}.{a}", f"unknown state {t!r}; states: {states}")
            delta[sidx[s], aidx[a]] = sidx[t]
        if not partial:
            missing = [a for a in alphabet if a not in row]
            if missing:
                raise SpecError(src, field, f"missing transition(s) on {missing} (set partial = "
                                "true to send them to a sink)")
    output[sink] = classes.index(sink_class)
    return Automaton(alphabet=alphabet, delta=delta, start=sidx[start], output=output,
                     classes=classes, name=name, description=description,
                     state_names=states + ["sink"], source=src)


def _toml_str(s: str) -> str:
    """A TOML basic string (JSON's escapes are valid TOML)."""
    import json

    return json.dumps(s, ensure_ascii=False)


def spec_text(auto: Automaton, comment: str = "") -> str:
    """The TOML spec of ``auto`` (states ``q0``, ``q1``, ... in the machine's order), which
    :func:`spec_from_text` reads back to the same automaton; ``comment`` becomes ``#`` lines at
    the top (provenance: a generator and its seed).

    >>> from monoidlab.algebra import families
    >>> text = spec_text(families.parity(), comment="the parity of 1s")
    >>> spec_from_text(text) == families.parity()
    True
    """
    q = [f"q{i}" for i in range(auto.n_states)]
    lines = [f"# {ln}".rstrip() for ln in comment.splitlines()]
    lines += [f"name = {_toml_str(auto.name)}", f"description = {_toml_str(auto.description)}",
              f"alphabet = [{', '.join(_toml_str(a) for a in auto.alphabet)}]",
              f"start = {_toml_str(q[auto.start])}"]
    if auto.is_recogniser:
        lines.append(f"accept = [{', '.join(_toml_str(q[i]) for i in range(auto.n_states) if auto.output[i] == 1)}]")
    else:
        lines.append(f"classes = [{', '.join(_toml_str(c) for c in auto.classes)}]")
    lines.append("[transitions]")
    for i in range(auto.n_states):
        row = ", ".join(f"{_toml_str(a)} = {_toml_str(q[int(t)])}"
                        for a, t in zip(auto.alphabet, auto.delta[i], strict=True))
        lines.append(f"{q[i]} = {{ {row} }}")
    if not auto.is_recogniser:
        lines.append("[output]")
        lines += [f"{q[i]} = {_toml_str(auto.classes[int(auto.output[i])])}"
                  for i in range(auto.n_states)]
    return "\n".join(lines) + "\n"
