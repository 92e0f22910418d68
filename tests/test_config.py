"""The config reader: damaged and hostile config files load or raise a ConfigError naming the
file, never another exception (a Hypothesis fuzz, like the spec fuzz of tests/test_spec.py)."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_spec import to_toml, toml_value

from monoidlab.errors import ConfigError
from monoidlab.training.config import RunConfig
from monoidlab.training.parse import apply_overrides, load_config

VALID = [
    {"language": "parity", "model": "mlp-ldru", "steps": 3, "batch_size": 4,
     "train_lengths": "1:4", "test_lengths": "5:6", "test_samples": 4,
     "model_options": {"d": 8}},
    {"task": "reverse_string", "model": "lstm", "steps": 10, "lr": 0.003, "eval_every": 5,
     "val_lengths": [41, 60], "optimizer": "adamw", "warmup": 0.1, "lr_schedule": "cosine"},
    {"language": "dyck-2", "model": "mlp-ldru", "offsets": "random", "assoc_weight": 0.1,
     "sampler": "ec_stratified", "eval_kinds": ["paper", "near_miss"], "early_stop": 2,
     "eval_every": 10, "within": "auto"},
]
FIELDS = sorted(RunConfig.__dataclass_fields__)
KEYS = st.sampled_from(FIELDS + ["stepz", "train", "lr ", "", "model_options.d"])
scalars = st.one_of(
    st.booleans(), st.integers(-3, 12),
    st.sampled_from([0, -1, 2**31, -(2**63), 2**63 - 1, 10**8, 1e6, 1e-300]),
    st.floats(allow_nan=True), st.text(max_size=8),
    st.sampled_from(["1:40", "41:500:45", "5:2", "-1:3", "1:10000000", "a:b", "auto", "all",
                     "random", "none", "cpu", "cuda:x", "mlp-ldru", "parity", "nope.toml"]))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.dictionaries(st.one_of(KEYS, st.text(max_size=4)), inner, max_size=4)), max_leaves=8)


@st.composite
def broken_configs(draw):
    data = copy.deepcopy(draw(st.sampled_from(VALID)))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["drop", "replace", "add"]))
        if kind == "drop" and data:
            del data[draw(st.sampled_from(sorted(data)))]
        elif kind == "replace" and data:
            data[draw(st.sampled_from(sorted(data)))] = draw(values)
        else:
            data[draw(KEYS)] = draw(values)
    layout = draw(st.sampled_from(["top", "train", "train+extra"]))
    if layout == "train":
        data = {"train": data}
    elif layout == "train+extra":
        data = {"train": data, draw(KEYS): draw(values)}
    return data


def _writable(v):
    """TOML has no null and no empty key names in our writer: keep what it can write."""
    if isinstance(v, dict):
        return {k: _writable(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_writable(x) for x in v if x is not None]
    return v


def check_loads_or_config_error(file: Path) -> None:
    try:
        cfg = load_config(file)
    except ConfigError as exc:
        text = str(exc)
        assert str(file) in text and "\n" not in text, text
    else:
        assert isinstance(cfg, RunConfig)
        assert cfg.steps >= 1 and cfg.batch_size >= 1 and math.isfinite(cfg.lr)


def test_valid_configs_load(tmp_path):
    for i, data in enumerate(VALID):
        file = tmp_path / f"c{i}.toml"
        file.write_text(to_toml(data))
        assert isinstance(load_config(file), RunConfig)
        file.write_text("[train]\n" + to_toml(data))
        assert isinstance(load_config(file), RunConfig)


@pytest.mark.parametrize("text, needle", [
    ("lr = 1e6\n[train]\nlanguage = 'parity'\n", "outside the [train] table"),
    ("[train]\nlanguage = 'parity'\n[foo]\nx = 1\n", "outside the [train] table"),
    ("language = 'parity'\neval_every = -1\n", "eval_every"),
    ("language = 'parity'\nlr = inf\n", "'lr'"),
    ("language = 'parity'\nlr = nan\n", "'lr'"),
    ("language = 'parity'\nbatch_size = 100000000\n", "'batch_size'"),
    ("language = 'parity'\ntest_lengths = '1:10000000'\n", "test_lengths"),
    ("language = 'parity'\nval_lengths = '41:500'\nval_samples = 100000\n", "val_lengths"),
    ("language = 'parity'\nval_samples = 100000\n", "val_samples"),  # on the test lengths
    ("language = 'parity'\nassoc_weight = inf\n", "assoc_weight"),
    ("a = " + "[" * 20_000 + "]" * 20_000 + "\n", "nested too deeply"),
    (b"language = 'par\xffity'\n", "not UTF-8"),
])
def test_config_errors_name_the_file(tmp_path, text, needle):
    file = tmp_path / "bad.toml"
    if isinstance(text, bytes):
        file.write_bytes(text)
    else:
        file.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(file)
    assert str(file) in str(info.value) and needle in str(info.value)


def test_deep_override_is_a_string_not_a_crash():
    cfg = RunConfig(language="parity")
    with pytest.raises(ConfigError, match="'steps': expected an integer, got str"):
        apply_overrides(cfg, ["steps=" + "[" * 5000 + "]" * 5000])


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=broken_configs())
def test_fuzzed_configs_load_or_raise_config_error(tmp_path, data):
    file = tmp_path / "fuzz.toml"
    try:
        text = to_toml(_writable(data))
    except TypeError:
        return
    file.write_text(text, encoding="utf-8")
    check_loads_or_config_error(file)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base=st.sampled_from(VALID), data=st.data())
def test_fuzzed_config_text_loads_or_raises_config_error(tmp_path, base, data):
    """Byte-level damage to a valid file: TOML errors, bad UTF-8, truncation."""
    raw = bytearray(("[train]\n" + to_toml(base)).encode())
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
    check_loads_or_config_error(file)


@settings(max_examples=100)
@given(key=KEYS, value=values)
def test_fuzzed_overrides_apply_or_raise_config_error(key, value):
    """``--key=value`` overrides from the command line: a ConfigError or a valid config."""
    cfg = RunConfig(**VALID[0])
    try:
        text = toml_value(_writable(value))
    except TypeError:
        return
    try:
        new = apply_overrides(cfg, [f"--{key}={text}"])
    except ConfigError as exc:
        assert "\n" not in str(exc)
    else:
        assert isinstance(new, RunConfig)
