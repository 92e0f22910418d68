"""The deprecated names of the renovation (issue 12; docs/architecture.md, "What moved where"):
each still works for one release, warns with a DeprecationWarning naming the new name, and gives
the same result as the new name (which itself does not warn)."""

from __future__ import annotations

import importlib
import json
import sys
import warnings

import numpy as np
import pytest

import monoidlab as ml
from monoidlab.cli import main
from monoidlab.coverage import exact_coverage
from monoidlab.min_length import min_training_length
from monoidlab.training.config import TrainConfig, apply_overrides, config_from_dict, load_config

# old module -> the module it re-exports
MODULES = {
    "monoidlab.trees": "monoidlab.schedules",
    "monoidlab.plots": "monoidlab.viz",
    "monoidlab.plots_probe": "monoidlab.viz.probing",
    "monoidlab.associativity": "monoidlab.probing.associativity",
}


def no_warning(fn, *args, **kw):
    """``fn(*args, **kw)``, failing on any DeprecationWarning (the new names are clean)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        return fn(*args, **kw)


@pytest.mark.parametrize("old", sorted(MODULES))
def test_alias_modules_warn_and_re_export_the_new_module(old, monkeypatch):
    new = importlib.import_module(MODULES[old])
    monkeypatch.delitem(sys.modules, old, raising=False)  # the warning fires on first import
    with pytest.warns(DeprecationWarning, match=f"{old} is deprecated; import {MODULES[old]}"):
        alias = importlib.import_module(old)
    monkeypatch.delitem(sys.modules, old)  # leave no half-imported alias behind
    assert alias.__all__ == new.__all__ and new.__all__
    for name in new.__all__:
        assert getattr(alias, name) is getattr(new, name), name


def test_trees_alias_gives_the_same_schedules(monkeypatch):
    from monoidlab import schedules

    monkeypatch.delitem(sys.modules, "monoidlab.trees", raising=False)
    with pytest.warns(DeprecationWarning):
        import monoidlab.trees as trees
    monkeypatch.delitem(sys.modules, "monoidlab.trees")
    for L in (1, 5, 11):
        assert trees.render(trees.schedule("scan", L)) == schedules.render(
            schedules.schedule("scan", L))


def test_sample_method_is_sampler(dyck2):
    with pytest.warns(DeprecationWarning, match=r"sample\(method=...\) is deprecated; use sampler"):
        old = ml.sample(dyck2, range(1, 9), 50, method="balanced", seed=3)
    new = no_warning(ml.sample, dyck2, range(1, 9), 50, sampler="balanced", seed=3)
    np.testing.assert_array_equal(old.tokens, new.tokens)
    np.testing.assert_array_equal(old.labels, new.labels)
    # the old name is honoured, not ignored: it differs from the default sampler
    assert not np.array_equal(old.labels, ml.sample(dyck2, range(1, 9), 50, seed=3).labels)


def test_exact_coverage_distribution_is_sampler(dyck2):
    with pytest.warns(DeprecationWarning, match=r"exact_coverage\(distribution=...\)"):
        old = exact_coverage(dyck2, range(1, 9), distribution="balanced")
    new = no_warning(exact_coverage, dyck2, range(1, 9), sampler="balanced")
    np.testing.assert_array_equal(old.counts, new.counts)
    assert old.sampler == new.sampler == "balanced"
    assert not np.allclose(old.counts, exact_coverage(dyck2, range(1, 9)).counts)


def test_min_training_length_train_offsets_is_offsets(dyck2):
    with pytest.warns(DeprecationWarning, match=r"train_offsets=...\) is deprecated; use offsets"):
        old = min_training_length(dyck2, range(41, 81), train_offsets="random")
    new = no_warning(min_training_length, dyck2, range(41, 81), offsets="random")
    assert old == new and old.support_length == 8  # 12 without offsets


def test_config_key_pad_offset_is_offsets(tmp_path):
    base = {"language": "parity", "model": "mlp-ldru"}
    with pytest.warns(DeprecationWarning, match="config key 'pad_offset' is deprecated; use 'offsets'"):
        old = config_from_dict({**base, "pad_offset": "random"}, "test")
    new = no_warning(config_from_dict, {**base, "offsets": "random"}, "test")
    assert old == new and old.offsets == "random"
    assert "pad_offset" not in old.as_dict()  # saved under the new name
    toml = tmp_path / "run.toml"
    toml.write_text('[train]\nlanguage = "parity"\npad_offset = "random"\n')
    with pytest.warns(DeprecationWarning, match=f"{toml}: config key 'pad_offset'"):
        assert load_config(toml).offsets == "random"
    # as an override (`monoidlab train --pad_offset=random`)
    with pytest.warns(DeprecationWarning, match="override: config key 'pad_offset'"):
        over = apply_overrides(TrainConfig(**base), ["--pad_offset=random"])
    assert over == new
    # still checked like the new key
    with pytest.raises(ml.ConfigError, match="offsets"):
        with pytest.warns(DeprecationWarning):
            config_from_dict({"language": "parity", "model": "lstm", "pad_offset": "random"})


def _cli_json(capsys, *argv):
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("argv, old, new", [
    (["coverage", "dyck-2", "--train", "1:6", "--test", "30:34", "--exact"],
     ["--train-offsets", "random"], ["--offsets", "random"]),
    (["min-length", "dyck-2", "--test", "41:80"],
     ["--train-offsets", "random"], ["--offsets", "random"]),
    (["min-length", "dyck-2", "--test", "30:34", "--delta", "0.01"],
     ["--train", "1:12"], ["--sample-lengths", "1:12"]),
    (["min-length", "dyck-2", "--test", "30:34", "--delta", "0.01"],
     ["--train=1:12"], ["--sample-lengths=1:12"]),
])
def test_cli_old_options_warn_and_equal_the_new_ones(capsys, argv, old, new):
    flag = old[0].split("=")[0]
    with pytest.warns(DeprecationWarning, match=f"{flag} is deprecated; use --"):
        got = _cli_json(capsys, *argv, *old)
    want = no_warning(_cli_json, capsys, *argv, *new)
    assert got == want
    plain = _cli_json(capsys, *argv) if "--delta" not in argv else None
    if plain is not None:  # the old option is honoured, not dropped
        assert plain != got
    else:
        assert got["samples_needed"] > 0
