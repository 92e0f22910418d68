"""Spec files: every documented error names the file and the field; fuzzed specs never crash."""

from __future__ import annotations

import copy
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import monoidlab as ml
from monoidlab import Automaton, SpecError, UnknownName
from monoidlab.algebra import families
from monoidlab.algebra.languages import languages_dir
from monoidlab.algebra.spec import automaton_from_dict, load_spec


# ---------------------------------------------------------------------- a tiny TOML writer
def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(str(k), ensure_ascii=False)} = {toml_value(x)}"
                                for k, x in v.items()) + " }"
    raise TypeError(type(v))


def to_toml(data: dict) -> str:
    """Top-level keys as ``key = value`` lines, nested tables inline."""
    return "\n".join(f"{json.dumps(str(k), ensure_ascii=False)} = {toml_value(v)}"
                     for k, v in data.items()) + "\n"


def write(tmp_path: Path, data: dict | str, name: str = "lang.toml") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else to_toml(data), encoding="utf-8")
    return path


# ---------------------------------------------------------------------- valid specs
TOMITA4 = {
    "name": "t4", "description": "no 000", "alphabet": ["0", "1"], "start": "q0",
    "accept": ["q0", "q1", "q2"],
    "transitions": {"q0": {"0": "q1", "1": "q0"}, "q1": {"0": "q2", "1": "q0"},
                    "q2": {"0": "q3", "1": "q0"}, "q3": {"0": "q3", "1": "q3"}},
}
MULTI = {
    "name": "mod3", "alphabet": ["inc", "nop"], "start": "z", "classes": ["zero", "one", "two"],
    "output": {"z": "zero", "o": "one", "t": "two"},
    "transitions": {"z": {"inc": "o", "nop": "z"}, "o": {"inc": "t", "nop": "o"},
                    "t": {"inc": "z", "nop": "t"}},
}
PARTIAL = {
    "name": "t7", "alphabet": ["0", "1"], "start": "a", "accept": ["a", "b", "c", "d"],
    "partial": True, "sink_class": "reject",
    "transitions": {"a": {"0": "a", "1": "b"}, "b": {"0": "c", "1": "b"}, "c": {"0": "c", "1": "d"},
                    "d": {"1": "d"}},
}
PARTIAL_PLAIN = {k: v for k, v in PARTIAL.items() if k != "sink_class"}
FAMILY = {"name": "d3", "family": "dyck", "params": {"n": 3}}
PREFIX = {"family": "prefix", "params": {"p": 2, "q": 3}}
VALID = [TOMITA4, MULTI, PARTIAL, FAMILY, PREFIX]


@pytest.mark.parametrize("spec", VALID, ids=["tomita4", "multi", "partial", "family", "prefix"])
def test_valid_specs_load(tmp_path, spec):
    a = load_spec(write(tmp_path, spec))
    assert isinstance(a, Automaton) and a.name == spec.get("name", "lang")


def test_valid_specs_mean_what_they_say(tmp_path):
    assert load_spec(write(tmp_path, TOMITA4)) == ml.load_language("tomita-4")
    assert load_spec(write(tmp_path, PARTIAL)) == ml.load_language("tomita-7")
    m = load_spec(write(tmp_path, MULTI))
    assert m.classes == ("zero", "one", "two") and not m.single_char
    assert m.classify([["inc"] * 4, ["nop", "inc", "inc"], []]).tolist() == [1, 2, 0]
    assert load_spec(write(tmp_path, FAMILY)) == families.dyck(3)


def test_partial_sink_class_and_states_list(tmp_path):
    spec = {"alphabet": ["a", "b"], "start": "p", "classes": ["dead", "live"],
            "output": {"p": "live", "q": "live"}, "partial": True, "sink_class": "dead",
            "states": ["p", "q"], "transitions": {"p": {"a": "q"}}}
    a = load_spec(write(tmp_path, spec))
    assert a.classify(["", "a", "aa", "b"]).tolist() == [1, 1, 0, 0]
    assert a.name == "lang"  # default name: the file stem


# ---------------------------------------------------------------------- every documented error
def mutate(base: dict, path: str, value=..., delete: bool = False) -> dict:
    data = copy.deepcopy(base)
    keys = path.split("/")
    node = data
    for k in keys[:-1]:
        node = node[k]
    if delete:
        del node[keys[-1]]
    else:
        node[keys[-1]] = value
    return data


ERRORS = [
    # (id, base spec, mutation (path, value | DELETE), field, words in the message)
    ("unknown state in transition", TOMITA4, ("transitions/q0/0", "q9"), "transitions.q0.0", "unknown state"),
    ("unknown start state", TOMITA4, ("start", "q9"), "start", "unknown state"),
    ("unknown accepting state", TOMITA4, ("accept", ["q0", "zz"]), "accept", "unknown state"),
    ("unknown state in output", MULTI, ("output/w", "one"), "output.w", "unknown state"),
    ("missing transition", TOMITA4, ("transitions/q1/1", None), "transitions.q1", "missing transition"),
    ("symbol outside alphabet", TOMITA4, ("transitions/q2/2", "q0"), "transitions.q2.2", "not in the alphabet"),
    ("duplicate symbol", TOMITA4, ("alphabet", ["0", "1", "0"]), "alphabet", "duplicate"),
    ("several target states", TOMITA4, ("transitions/q0/1", ["q0", "q1"]), "transitions.q0.1", "several states"),
    ("missing start", TOMITA4, ("start", None), "start", "missing"),
    ("unknown class", MULTI, ("output/o", "four"), "output.o", "unknown class"),
    ("state without class", MULTI, ("output/t", None), "output", "no class"),
    ("empty alphabet", TOMITA4, ("alphabet", []), "alphabet", "empty"),
    ("empty symbol", TOMITA4, ("alphabet", ["0", ""]), "alphabet", "non-empty"),
    ("alphabet not a list", TOMITA4, ("alphabet", "01"), "alphabet", "expected"),
    ("symbol not a string", TOMITA4, ("alphabet", ["0", 1]), "alphabet", "not a non-empty string"),
    ("start not a string", TOMITA4, ("start", 0), "start", "expected"),
    ("transitions not a table", TOMITA4, ("transitions", ["q0"]), "transitions", "expected"),
    ("row not a table", TOMITA4, ("transitions/q0", "q1"), "transitions.q0", "expected a table"),
    ("target not a string", TOMITA4, ("transitions/q0/0", 3), "transitions.q0.0", "state name"),
    ("no states", TOMITA4, ("transitions", {}), "transitions", "no states"),
    ("accept not a list", TOMITA4, ("accept", "q0"), "accept", "expected"),
    ("missing accept", TOMITA4, ("accept", None), "accept", "missing"),
    ("accept and classes", TOMITA4, ("classes", ["a", "b"]), "accept", "either"),
    ("classes not strings", MULTI, ("classes", ["zero", 1, "two"]), "classes", "class-name"),
    ("duplicate classes", MULTI, ("classes", ["zero", "one", "one"]), "classes", "duplicate"),
    ("missing output", MULTI, ("output", None), "output", "missing"),
    ("name not a string", TOMITA4, ("name", 4), "name", "expected a string"),
    ("description not a string", TOMITA4, ("description", ["x"]), "description", "expected a string"),
    ("partial not a bool", PARTIAL, ("partial", "yes"), "partial", "true or false"),
    ("sink class unknown", PARTIAL, ("sink_class", "maybe"), "sink_class", "unknown class"),
    ("sink class without partial", TOMITA4, ("sink_class", "reject"), "sink_class", "partial"),
    ("partial transitions without partial", PARTIAL_PLAIN, ("partial", None), "transitions.d", "partial = true"),
    ("states not a list", PARTIAL, ("states", "abcd"), "states", "expected"),
    ("state name not a string", PARTIAL, ("states", ["a", 2]), "states", "not a string"),
    ("unknown top-level field", TOMITA4, ("acept", ["q0"]), "acept", "unknown field"),
    ("unknown family", FAMILY, ("family", "dick"), "family", "unknown family"),
    ("family not a string", FAMILY, ("family", 3), "family", "family name"),
    ("unknown family parameter", FAMILY, ("params/depth", 3), "params", "unknown parameter"),
    ("family parameter wrong type", FAMILY, ("params/n", "three"), "params.n", "positive integer"),
    ("family parameter not positive", FAMILY, ("params/n", 0), "params.n", "positive integer"),
    ("family parameter out of range", {"family": "tomita", "params": {"k": 9}}, ("name", "t9"), "params", "1..7"),
    ("family parameter too large", FAMILY, ("params/n", 10**9), "params.n", "at most"),
    ("prefix too large", PREFIX, ("params/p", 40), "params", "q ** p"),
    ("params not a table", FAMILY, ("params", [3]), "params", "expected a table"),
    ("family with transitions", FAMILY, ("start", "q0"), "start", "family spec"),
    ("family generator error", {"family": "count-mod", "params": {"k": 2}}, ("params/alphabet", []), "params", "alphabet"),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_documented_errors_name_file_and_field(tmp_path, case):
    _, base, (path, value), field, words = case
    data = mutate(base, path, delete=value is None) if value is None else mutate(base, path, value)
    file = write(tmp_path, data)
    with pytest.raises(SpecError) as exc:
        load_spec(file)
    err = exc.value
    assert err.source == str(file) and str(file) in str(err)
    assert err.field == field, str(err)
    assert repr(field) in str(err)
    assert words in str(err), str(err)


@pytest.mark.parametrize("text,field", [
    ('alphabet = ["0"\n', "<toml>"),                       # invalid TOML
    ('[transitions]\nq0 = {"0" = "q0"}\nq0 = {"0" = "q0"}\n', "<toml>"),  # duplicate state row
])
def test_invalid_toml(tmp_path, text, field):
    file = write(tmp_path, text)
    with pytest.raises(SpecError) as exc:
        load_spec(file)
    assert exc.value.field == field and str(file) in str(exc.value)


def test_unreadable_files(tmp_path):
    missing = tmp_path / "nope.toml"
    with pytest.raises(SpecError, match="cannot read") as exc:
        load_spec(missing)
    assert str(missing) in str(exc.value)
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"name = \"\xff\xfe\"\n")
    with pytest.raises(SpecError, match="UTF-8") as exc:
        load_spec(binary)
    assert str(binary) in str(exc.value)


def test_load_language_errors(tmp_path):
    with pytest.raises(UnknownName, match="no language named 'dyck-99'"):
        ml.load_language("dyck-99")
    with pytest.raises(SpecError, match="no such file"):
        ml.load_language(str(tmp_path / "missing.toml"))
    (tmp_path / "dir.toml").mkdir()
    with pytest.raises(SpecError, match="a folder, not a spec file"):
        ml.load_language(str(tmp_path / "dir.toml"))
    os.mkfifo(tmp_path / "fifo.toml")
    with pytest.raises(SpecError, match="not a regular file"):  # never opened: no hang
        ml.load_language(str(tmp_path / "fifo.toml"))
    file = write(tmp_path, TOMITA4, "mine.toml")
    assert ml.load_language(str(file)) == ml.load_language("tomita-4")


def test_spec_as_dict_source_is_named():
    with pytest.raises(SpecError, match="^inline: field 'start'"):
        automaton_from_dict(mutate(TOMITA4, "start", "nowhere"), source="inline")
    with pytest.raises(SpecError, match="must be a table"):
        automaton_from_dict(["not", "a", "table"], source="inline")


# ---------------------------------------------------------------------- fuzzing
KEYS = sorted({"name", "description", "alphabet", "start", "accept", "classes", "output",
               "transitions", "partial", "sink_class", "family", "params", "states", "q0", "0",
               "n", "k", "p", "q", "mod", "a", "zero"} | set(families.FAMILIES))
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 12),
    st.sampled_from([64, 65, 10_000, 10_001, 2**31, -(2**63), 2**63 - 1]),
    st.floats(allow_nan=True), st.sampled_from(KEYS), st.text(max_size=6))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=4)), inner, max_size=4)),
    max_leaves=10)


def paths(data, prefix=()):
    """Every key path of a nested dict (lists are leaves)."""
    for k, v in data.items():
        yield prefix + (k,)
        if isinstance(v, dict):
            yield from paths(v, prefix + (k,))


@st.composite
def broken_specs(draw):
    data = copy.deepcopy(draw(st.sampled_from(VALID)))
    for _ in range(draw(st.integers(1, 4))):
        all_paths = list(paths(data))
        kind = draw(st.sampled_from(["drop", "replace", "add", "swap"]))
        if kind == "add" or not all_paths:
            parents = [()] + [p for p in all_paths if isinstance(_get(data, p), dict)]
            parent = draw(st.sampled_from(parents))
            _get(data, parent)[draw(st.sampled_from(KEYS))] = draw(values)
            continue
        path = draw(st.sampled_from(all_paths))
        parent = _get(data, path[:-1])
        if kind == "drop":
            del parent[path[-1]]
        elif kind == "replace":
            parent[path[-1]] = draw(values)
        else:  # swap in another valid spec's value for the same key (plausible but mismatched)
            other = draw(st.sampled_from(VALID))
            if path[-1] in other:
                parent[path[-1]] = copy.deepcopy(other[path[-1]])
    return data


def _get(data, path):
    for k in path:
        data = data[k]
    return data


def _none_free(v):
    """TOML has no null: drop Nones (a dropped key is a mutation too)."""
    if isinstance(v, dict):
        return {k: _none_free(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_none_free(x) for x in v if x is not None]
    return v


def check_loads_or_spec_error(file: Path):
    try:
        a = load_spec(file)
    except SpecError as exc:
        assert exc.source == str(file) and str(file) in str(exc)
        assert f"field {exc.field!r}" in str(exc)
    else:
        assert isinstance(a, Automaton)
        assert a.n_states >= 1 and a.delta.shape == (a.n_states, a.n_symbols)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=broken_specs())
def test_fuzzed_specs_load_or_raise_spec_error(tmp_path, spec):
    check_loads_or_spec_error(write(tmp_path, _none_free(spec)))


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base=st.sampled_from(VALID), data=st.data())
def test_fuzzed_spec_text_loads_or_raises_spec_error(tmp_path, base, data):
    """Byte-level damage to a valid file: TOML errors, bad UTF-8, truncation."""
    raw = bytearray(to_toml(base).encode())
    for _ in range(data.draw(st.integers(1, 3))):
        pos = data.draw(st.integers(0, len(raw) - 1))
        op = data.draw(st.sampled_from(["flip", "cut", "dup"]))
        if op == "flip":
            raw[pos] = data.draw(st.integers(0, 255))
        elif op == "cut":
            del raw[pos: pos + data.draw(st.integers(1, 8))]
        else:
            raw[pos:pos] = raw[pos: pos + data.draw(st.integers(1, 12))]
        if not raw:
            break
    file = tmp_path / "damaged.toml"
    file.write_bytes(bytes(raw))
    check_loads_or_spec_error(file)


def test_suite_files_survive_the_checker():
    """Sanity: the writer round-trips and every suite spec passes the same checks."""
    for path in languages_dir().glob("*.toml"):
        if path.stem != "suites":
            check_loads_or_spec_error(path)
    assert np.array_equal(automaton_from_dict(TOMITA4).delta, ml.load_language("tomita-4").delta)
