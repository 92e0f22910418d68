"""monoidlab.studies.addition (the study that was bench/bench_addition.py, run as ``monoidlab
study addition``): the variants' configs, a tiny study (two variants, one seed) recorded,
tabulated and drawn, and a picked subset."""

from __future__ import annotations

from pathlib import Path

import pytest

import monoidlab.studies.addition as mod
from monoidlab.bundled import configs_dir
from monoidlab.errors import ConfigError
from monoidlab.studies.ledger import read_ledger
from monoidlab.studies.runner import read_config, run_study, study_sections

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ROOT = Path(__file__).resolve().parent.parent


def _tiny(tmp_path: Path) -> Path:
    text = (configs_dir() / "addition-cpu.toml").read_text()
    for a, b in (("steps = 3000", "steps = 2"), ('test_lengths = "1:15"', 'test_lengths = "1:7"'),
                 ("test_samples = 100", "test_samples = 4"), ("eval_every = 1000", ""),
                 ('val_lengths = "3:15:3"', ""), ("d_model = 64", "d_model = 16"),
                 ("n_layers = 3", "n_layers = 1")):
        assert a in text, a
        text = text.replace(a, b)
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "addition-tiny.toml").write_text(text)
    path = tmp_path / "configs" / "study.toml"
    path.write_text('[study]\ntrain = "configs/addition-tiny.toml"\n'
                    'variants = ["recipe", "baseline"]\nseeds = [0, 1]\n'
                    'ledger = "docs/data/addition.jsonl"\nout = "runs/addition"\n'
                    'figures = "figures"\n')
    return path


def test_variants_change_only_format_and_positions():
    base = mod.base_config(read_config(mod.STUDY, ROOT / "configs" / "addition-study-cpu.toml"))
    recipe = mod.variant_config(base, "recipe", 0)
    baseline = mod.variant_config(base, "baseline", 0)
    assert baseline["task_options"]["format"] == "standard"
    assert baseline["model_options"]["position"] == "sinusoidal"
    assert "max_randomized_len" not in baseline["model_options"]
    assert recipe["model_options"]["position"] == "randomized-fire"
    fire = mod.variant_config(base, "standard-fire", 1)
    assert fire["model_options"] == recipe["model_options"] and fire["seed"] == 1
    with pytest.raises(ConfigError, match="unknown variant 'fast'"):
        mod.variant_config(base, "fast", 0)


def test_a_tiny_study_is_recorded_tabulated_and_drawn(tmp_path, capsys):
    config = read_config(mod.STUDY, _tiny(tmp_path))
    with pytest.raises(ConfigError, match=r"--seeds: \[7\] not in the config's seeds"):
        run_study(mod.STUDY, config, echo=None, seeds="7")
    run_study(mod.STUDY, config, echo=None, seeds="0")  # a picked subset of the runs
    assert "recipe    seed 0: 1:" in capsys.readouterr().out
    ledger = read_ledger(tmp_path / "docs" / "data" / "addition.jsonl")
    assert sorted(ledger) == ["baseline__s0", "recipe__s0"]
    assert sorted(ledger["recipe__s0"]["accuracy"], key=int) == [str(n) for n in range(1, 8)]
    text = study_sections(mod.STUDY, config)["addition tiny"]
    lines = text.splitlines()
    assert lines[0] == ("| variant | seed | **1** | **2** | **3** | **4** | **5** | **6** | 7 "
                        "| train s |")
    assert [ln.split(" | ")[:2] for ln in lines[2:]] == [
        ["| recipe", "0"], ["| recipe", "mean"], ["| baseline", "0"], ["| baseline", "mean"]]
    said = mod.STUDY.actions["figure"](config)
    assert said == f"wrote {tmp_path / 'figures' / 'addition_tiny.png'}"
    assert (tmp_path / "figures" / "addition_tiny.png").stat().st_size > 1000


def test_the_study_configs_read():
    for name in ("addition-study-cpu.toml", "addition-study-paper.toml"):
        config = read_config(mod.STUDY, ROOT / "configs" / name)
        assert mod.train_path(config).parent == configs_dir()  # the bundled training config
    bad = ROOT / "configs" / "addition-study-cpu.toml"
    text = bad.read_text().replace('"standard-fire"', '"fast"')
    with pytest.raises(ConfigError, match=r"unknown variant\(s\) \['fast'\]"):
        mod.STUDY.read(bad, __import__("tomllib").loads(text))
