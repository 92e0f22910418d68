"""recipe = "languages" (monoidlab.recipes): the random-language benchmark's frozen recipe,
read from the benchmark's own config, fills what the run does not set, and is the command
line's default for a language once one is frozen."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

import monoidlab as ml
import monoidlab.recipes as recipes
from monoidlab.cli import main
from monoidlab.errors import ConfigError
from monoidlab.training.parse import config_from_dict

ROOT = Path(__file__).resolve().parent.parent

FROZEN = """
[recipes.base]
model = "mlp-ldru"
steps = 4000
sampler = "near_miss"

[recipes.chosen]
frozen = true
basis = "9 of 18 development languages solved on both seeds (the others: base: 3 of 18)"
model = "mlp-ldru"
steps = 12000
restarts = 0
batch_size = 48
lr = 2e-3
sampler = "near_miss"
near_miss_mix = { members = 0.5, near_miss = 0.25, ec_stratified = 0.25 }
test_lengths = "41:500"
test_samples = 64
threads = 1
device = "cpu"
model_options = { d = 24, dropout = 0.0, padding = "identity" }
"""


def _use(monkeypatch, path):
    """The benchmark's frozen recipes read from ``path``: MLP-LDRU's and the default's."""
    monkeypatch.setattr(recipes, "FROZEN", path)
    monkeypatch.setattr(recipes, "DEFAULT_RECIPE", path)


@pytest.fixture
def frozen(tmp_path, monkeypatch):
    path = tmp_path / "random-languages.toml"
    path.write_text(FROZEN)
    _use(monkeypatch, path)
    return path


def test_the_frozen_recipe_fills_what_the_run_does_not_set(frozen):
    cfg = config_from_dict({"language": "parity", "recipe": "languages", "steps": 7,
                            "model_options": {"d": 16}})
    assert cfg.steps == 7 and cfg.model_options.d == 16  # the run's own keys win
    assert (cfg.batch_size, cfg.lr, cfg.restarts, cfg.sampler) == (48, 2e-3, 0, "near_miss")
    assert dict(cfg.near_miss_mix) == {"members": 0.5, "near_miss": 0.25, "ec_stratified": 0.25}
    assert cfg.model_options.padding.value == "identity" and cfg.model_options.dropout == 0.0
    # the run's own settings are never the recipe's: test lengths, threads, device
    default = config_from_dict({"language": "parity"})
    assert (cfg.test_lengths, cfg.threads, cfg.device) == (
        default.test_lengths, default.threads, default.device)


def test_no_frozen_recipe_two_of_them_or_a_task_are_refused(tmp_path, monkeypatch, frozen):
    with pytest.raises(ConfigError, match="recipe 'languages' is for languages"):
        config_from_dict({"task": "reverse_string", "recipe": "languages"})
    with pytest.raises(ConfigError, match="has no settings for model 'rnn'"):
        config_from_dict({"language": "parity", "model": "rnn", "recipe": "languages"})
    none = tmp_path / "none.toml"
    none.write_text(FROZEN.replace("frozen = true\n", ""))
    _use(monkeypatch, none)
    with pytest.raises(ConfigError, match="no recipe is frozen yet"):
        config_from_dict({"language": "parity", "recipe": "languages"})
    two = tmp_path / "two.toml"
    two.write_text(FROZEN.replace('[recipes.base]\n', '[recipes.base]\nfrozen = true\n'))
    _use(monkeypatch, two)
    with pytest.raises(ConfigError, match="2 recipes are frozen"):
        config_from_dict({"language": "parity", "recipe": "languages"})
    assert not recipes.has_frozen_recipe()


def test_the_shipped_benchmark_has_at_most_one_frozen_recipe_and_it_reads():
    data = tomllib.loads(recipes.FROZEN.read_text())
    frozen = [n for n, r in data["recipes"].items() if r.get("frozen") is True]
    assert len(frozen) <= 1
    assert recipes.has_frozen_recipe() == bool(frozen)
    if frozen:
        name, keys, options = recipes.frozen_recipe()
        assert name == frozen[0] and options == data["recipes"][name]["model_options"]
        assert not set(keys) & recipes.RUN_KEYS


def _train_config(tmp_path, *argv) -> dict:
    out = tmp_path / "run"
    assert main(["train", *argv, "--out", str(out), "--steps", "2", "--batch_size=4",
                 "--train_lengths=1:4", "--test_lengths=5:6", "--test_samples=2",
                 "--json"]) in (0, None)
    return json.loads((out / "config.json").read_text())


def test_the_command_line_trains_a_language_with_the_frozen_recipe(tmp_path, frozen, capsys):
    cfg = _train_config(tmp_path / "a", "--language", "parity")
    assert cfg["recipe"] == "languages" and cfg["lr"] == 2e-3 and cfg["steps"] == 2
    assert cfg["model_options"]["d"] == 24 and cfg["batch_size"] == 4
    # another model, or a config file, or an explicit recipe: not the default's business
    assert _train_config(tmp_path / "b", "--language", "parity", "--model", "lstm",
                         "--model_options.hidden=4")["recipe"] == "default"
    assert _train_config(tmp_path / "c", "--language", "parity",
                         "--recipe=default")["recipe"] == "default"


def test_without_a_frozen_recipe_the_command_line_keeps_its_defaults(tmp_path, monkeypatch,
                                                                     capsys):
    none = tmp_path / "none.toml"
    none.write_text(FROZEN.replace("frozen = true\n", ""))
    _use(monkeypatch, none)
    cfg = _train_config(tmp_path / "d", "--language", "parity")
    assert cfg["recipe"] == "default" and cfg["lr"] == config_from_dict(
        {"language": "parity"}).lr


def test_min_length_and_the_report_name_the_recipe_once_one_is_frozen(frozen, capsys):
    from monoidlab.report.summary import summary_box

    advice = recipes.recipe_advice()
    assert (advice["recipe"], advice["frozen"]) == ("languages", "chosen")
    assert "9 of 18 development languages" in advice["basis"]  # the config's measured basis
    assert "the others" not in advice["basis"]  # one line: the comparison stays in the config
    assert main(["min-length", "parity"]) in (0, None)
    out = capsys.readouterr().out
    assert "training recipe: recipe 'languages' (the benchmark's 'chosen'" in out
    assert main(["min-length", "parity", "--json"]) in (0, None)
    assert json.loads(capsys.readouterr().out)["recipe"] == "languages"
    key = {"language": "parity", "monoid_size": 2, "support_length": {"none": 2},
           "recipe": advice}
    assert "<th>training recipe</th><td>recipe &#x27;languages&#x27;" in summary_box(key)


def test_without_a_frozen_recipe_none_is_recommended(tmp_path, monkeypatch, capsys):
    none = tmp_path / "none.toml"
    none.write_text(FROZEN.replace("frozen = true\n", ""))
    _use(monkeypatch, none)
    advice = recipes.recipe_advice()
    assert advice["recipe"] is None and advice["basis"].startswith("none yet")
    assert main(["min-length", "parity"]) in (0, None)
    assert "training recipe: none yet" in capsys.readouterr().out
    # a broken benchmark config is an error that names it, never a silent "none yet"
    two = tmp_path / "two.toml"
    two.write_text(FROZEN.replace("[recipes.base]", "[recipes.base]\nfrozen = true"))
    _use(monkeypatch, two)
    with pytest.raises(ConfigError, match="2 recipes are frozen"):
        recipes.recipe_advice()


def test_doctests():
    import doctest

    res = doctest.testmod(recipes, optionflags=doctest.ELLIPSIS)
    assert res.attempted > 0 and res.failed == 0


@pytest.mark.parametrize("name", ["base", "covering", "offsets", "mix-ec-12k-d64"])
def test_the_21_task_config_takes_every_key_from_whichever_recipe_is_frozen(
        tmp_path, monkeypatch, name):
    """configs/ldru21-languages.toml sets only the run's own keys: every training key of every
    task is the frozen recipe's, whichever recipe the benchmark freezes, but prefix-4-4's
    sampler (near-miss tables of ~60 GiB)."""
    from monoidlab.training.sweep import load_sweep

    # the benchmark's config with no recipe frozen (it may have frozen one by now), then this one
    config = ROOT / "configs" / "random-languages.toml"
    text = "".join(ln for ln in config.read_text().splitlines(keepends=True)
                   if not ln.startswith(("frozen = ", "basis = ")))
    text = text.replace(f"[recipes.{name}]\n", f"[recipes.{name}]\nfrozen = true\n", 1)
    path = tmp_path / "random-languages.toml"
    path.write_text(text)
    _use(monkeypatch, path)
    chosen = tomllib.loads(text)["recipes"][name]
    runs = load_sweep(ROOT / "monoidlab" / "configs" / "ldru21-languages.toml")["runs"]
    assert len(runs) == 21
    for run in runs:
        cfg = run["config"].as_dict()
        for key, value in chosen.items():
            if key in recipes.RUN_KEYS or key == "model_options":
                continue
            if run["problem"] == "prefix-4-4" and key == "sampler":
                assert cfg[key] == "ec_stratified"
                continue
            assert cfg[key] == value, (run["problem"], key)
        assert cfg["model_options"]["d"] == chosen["model_options"]["d"]
        assert cfg["test_lengths"] == "41:500" and cfg["test_samples"] == 64


def test_the_21_task_config_needs_a_frozen_recipe(tmp_path, monkeypatch):
    from monoidlab.training.sweep import load_sweep

    none = tmp_path / "none.toml"
    none.write_text("[recipes.base]\nmodel = 'mlp-ldru'\n")
    _use(monkeypatch, none)
    with pytest.raises(ConfigError, match="no recipe is frozen yet"):
        load_sweep(ROOT / "monoidlab" / "configs" / "ldru21-languages.toml")


COVERING = FROZEN.replace('sampler = "near_miss"\nnear_miss_mix', 'sampler = "covering"\n'
                          'covering = { share = 0.5, k = 1, uncovered = "skip" }\n'
                          'near_miss_mix').replace("steps = 12000", "steps = 40")


def test_min_length_and_the_report_say_when_the_recipe_refuses_a_language(tmp_path, monkeypatch,
                                                                          capsys):
    """A covering recipe of 40 steps × 24 strings (960) shows parity's plan, not dyck-4's: the
    recommendation says so before `monoidlab train` would stop on it."""
    import monoidlab as ml
    from monoidlab.report.summary import summary_box
    from monoidlab.training.problems import recipe_refusal

    path = tmp_path / "covering.toml"
    path.write_text(COVERING)
    _use(monkeypatch, path)
    assert recipe_refusal(ml.load_language("parity")) is None
    why = recipe_refusal(ml.load_language("dyck-4"))
    assert why is not None and why.startswith("key 'covering':") and "need" in why
    # the trainer itself refuses it with the same words
    cfg = config_from_dict({"language": "dyck-4", "recipe": "languages"})
    from monoidlab.training.problems import make_problem

    with pytest.raises(ConfigError) as refused:
        make_problem(cfg)
    assert str(refused.value) == why
    assert main(["min-length", "dyck-4"]) in (0, None)
    assert f"recipe 'languages' refuses dyck-4: {why}" in capsys.readouterr().out
    assert main(["min-length", "parity", "--json"]) in (0, None)
    assert json.loads(capsys.readouterr().out)["recipe_refusal"] is None
    from monoidlab.report.page import _recipe_for

    advice = _recipe_for(ml.load_language("dyck-4"), range(41, 501))  # what the report asks
    assert advice["refusal"] == why and advice["recipe"] == "languages"
    key = {"language": "dyck-4", "monoid_size": 7, "support_length": {"none": 2},
           "recipe": advice}
    assert "it refuses dyck-4 before training: key &#x27;covering&#x27;" in summary_box(key)
    # no frozen recipe: nothing is recommended, so nothing is refused
    none = tmp_path / "none.toml"
    none.write_text(COVERING.replace("frozen = true\n", ""))
    _use(monkeypatch, none)
    assert recipe_refusal(ml.load_language("dyck-4")) is None


@pytest.mark.parametrize("model", ["mlp-ldru", "mlp-ldru-snap", "transform-tree",
                                   "pr-lstm-snap", "transformer"])
def test_python_and_the_command_line_train_a_language_alike(tmp_path, frozen, capsys, model):
    """RunConfig.for_language is `monoidlab train --language L --model M`, key for key; the
    recipe named in Python is applied, not a label; a bare RunConfig says what it differs in."""
    import argparse

    from monoidlab.cli.training import _config
    from monoidlab.training import RunConfig
    from monoidlab.training.loop import plan_text

    spec = tmp_path / "mine.toml"
    spec.write_text((Path(ml.__file__).parent / "suite" / "tomita-5.toml").read_text().replace(
        'name = "tomita-5"', 'name = "mine"'))
    args = argparse.Namespace(config=None, language=str(spec), task=None, model=model,
                              steps=None, seed=7, resume=False, out=None, data=None)
    cli = _config(args, [])
    py = RunConfig.for_language(str(spec), model, seed=7)
    assert cli == py and cli.as_dict() == py.as_dict()
    if cli.recipe != "default":  # named in Python, the recipe fills what is not given
        assert RunConfig(language=str(spec), model=model, recipe=cli.recipe, seed=7) == py
        bare = RunConfig(language=str(spec), model=model, seed=7)
        assert bare.steps != py.steps or bare.model_options != py.model_options
        assert f"with recipe {cli.recipe!r}" in plan_text(bare)
        assert "RunConfig.for_language" not in plan_text(py)


# ------------------------------------------------------------ the shipped default (round 2)
MEASURED = json.loads((ROOT / "tests" / "data" / "languages-v2-dev-run.json").read_text())


def test_the_shipped_default_trains_as_its_development_runs_did():
    """The default of `monoidlab train --language` is the benchmark's frozen choice; its keys,
    resolved today (through the model's own recipe 'languages' when it names one), are those of
    a development run that chose it (tests/data/languages-v2-dev-run.json, the config.json of
    transform-curriculum on rl-00-dfa-3x2, seed 0): a later change of the registry's recipe
    cannot move the default away from what was measured without this test failing."""
    name, table = recipes._frozen(recipes.DEFAULT_RECIPE)
    if name != "languages-v2":
        pytest.skip(f"the shipped default is {name!r}, not languages-v2")
    language = str(ROOT / MEASURED["language"])
    keys = {k: v for k, v in table.items() if k not in ("frozen", "basis")}
    study = config_from_dict({**keys, "language": language, "seed": 0}).as_dict()
    want = {**MEASURED, "language": language}
    # an option added since the runs must sit at its default (the behaviour they ran with)
    from monoidlab.models import model_spec

    defaults = model_spec(table["model"]).make_options({}).as_dict()
    added = {k: v for k, v in study["model_options"].items() if k not in want["model_options"]}
    assert added == {k: defaults[k] for k in added}
    study["model_options"] = {k: study["model_options"][k] for k in want["model_options"]}
    from monoidlab.training.config import _FIELDS

    new_keys = {k: study.pop(k) for k in list(study) if k not in want}  # keys added since
    assert new_keys == {k: _FIELDS[k].default for k in new_keys}
    assert study == want
    # the command line's path: no model named, the run's own keys left at theirs
    from monoidlab.training import RunConfig

    cli = RunConfig.for_language(language, seed=0).as_dict()
    cli["model_options"] = {k: cli["model_options"][k] for k in want["model_options"]}
    assert recipes.default_model() == table["model"] == cli["model"]
    differ = sorted(k for k in want if cli[k] != want[k] and k not in recipes.RUN_KEYS)
    assert differ == []


def test_with_no_model_named_the_command_line_min_length_and_the_report_agree(tmp_path, capsys):
    """`monoidlab train --language L` trains the default's model with its recipe, and
    min-length and the report recommend that model and recipe (not MLP-LDRU's); naming
    `--model mlp-ldru` gives MLP-LDRU's own frozen recipe (round 1's)."""
    from monoidlab.report.page import _recipe_for

    model = recipes.default_model()
    cfg = _train_config(tmp_path / "a", "--language", "parity")
    assert cfg["model"] == model and cfg["recipe"] == "languages"
    advice = recipes.recipe_advice()
    assert advice["model"] == model and advice["frozen"] == recipes._frozen(
        recipes.DEFAULT_RECIPE)[0]
    capsys.readouterr()
    assert main(["min-length", "parity", "--json"]) in (0, None)
    row = json.loads(capsys.readouterr().out)
    assert row["recipe"] == "languages" and f"model {model}" in row["recommendation"]
    assert _recipe_for(ml.load_language("parity"), range(41, 501))["model"] == model
    ldru = recipes.recipe_advice(model="mlp-ldru")
    assert ldru["frozen"] == recipes.frozen_recipe()[0] and "--model mlp-ldru" in ldru["basis"] \
        if model != "mlp-ldru" else ldru["frozen"] == advice["frozen"]
    import argparse

    from monoidlab.cli.training import _config

    args = argparse.Namespace(config=None, language="parity", task=None, model="mlp-ldru",
                              steps=None, seed=None, resume=False, out=None, data=None)
    cfg = _config(args, [])
    assert (cfg.model, cfg.recipe) == ("mlp-ldru", "languages")
    assert (cfg.lr, cfg.sampler) == (recipes.frozen_recipe()[1]["lr"],
                                     recipes.frozen_recipe()[1]["sampler"])


def test_an_option_of_another_model_names_the_default_model_when_none_was_given(capsys):
    """`monoidlab train --language L --model_options.d=32` (an MLP-LDRU option, no --model):
    the error says which model the command line picked and how to name another."""
    model = recipes.default_model()
    if model == "mlp-ldru":
        pytest.skip("the default model is MLP-LDRU: its option d is valid")
    assert main(["train", "--language", "parity", "--model_options.d=32", "--steps", "2"]) == 2
    err = capsys.readouterr().err
    assert f"model '{model}' has no option 'd'" in err
    assert f"no --model given: `monoidlab train --language` trains the benchmark's choice, " \
           f"{model}; name another with --model" in err
    # a model named: no such hint (the user chose it)
    assert main(["train", "--language", "parity", "--model", model, "--model_options.d=32",
                 "--steps", "2"]) == 2
    assert "no --model given" not in capsys.readouterr().err
