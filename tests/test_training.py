"""The trainer: configs, the learning-rate schedule, the loop (overfitting, resumption,
divergence, checkpoints), evaluation by length and sweeps.

Everything runs on CPU with tiny models and a handful of steps; the learning benchmarks with
real settings live in ``bench/bench_training.py``.
"""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from monoidlab.errors import CheckpointError, MissingDependency
from monoidlab.geometry import Lengths
from monoidlab.models import REGISTRY, build_model
from monoidlab.training import (
    ConfigError,
    RunConfig,
    TrainingDiverged,
    apply_overrides,
    evaluate,
    load_checkpoint,
    load_config,
    train,
)
from monoidlab.training import loop as loop_mod
from monoidlab.training import trainer as trainer_mod
from monoidlab.training.parse import config_from_dict
from monoidlab.training.problems import LanguageProblem, make_problem
from monoidlab.training.run_folder import save_checkpoint
from monoidlab.training.sweep import load_sweep, run_sweep
from monoidlab.training.trainer import build_for, lr_at

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "monoidlab" / "configs"  # the run configs the package ships
STUDY_CONFIGS = ROOT / "configs"  # the studies' configs (not shipped)

# the smallest sensible instance of every registered model
TINY = {
    "mlp-ldru": {"d": 8},
    "pr-lstm": {"hidden": 8},
    "pr-rnn": {"hidden": 8},
    "rnn": {"hidden": 8},
    "lstm": {"hidden": 8},
    "stack-rnn": {"hidden": 8, "stack_size": 4, "stack_cell": 2},
    "tape-rnn": {"hidden": 8, "memory_size": 5, "memory_cell": 2, "mlp": [4]},
    "transformer": {"d_model": 16, "n_layers": 1, "n_heads": 2},
    "decoder-lm": {"d_model": 16, "n_layers": 1, "n_heads": 2},
    "bbt-grc": {"d": 8, "beam": 2},
    "rir-grc": {"d": 8, "chunk": 3},
    "gated-deltanet": {"d_model": 16, "n_layers": 1, "n_heads": 2},
    "mlp-ldru-snap": {"d": 8, "codes": 8},
    "pr-lstm-snap": {"hidden": 8, "codes": 8},
    "transform-tree": {"states": 4},
}
LANGUAGE_MODELS = {"decoder-lm"}  # next-token models: (B, T, vocab) logits, no classifier head


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def tiny_config(**kw) -> RunConfig:
    """A run that takes well under a second: MLP-LDRU d=8 on parity, batch 8."""
    base = dict(language="parity", model="mlp-ldru", model_options={"d": 8}, steps=12,
                device="cpu", batch_size=8, train_lengths="1:8", test_lengths="9:11", test_samples=8,
                checkpoint_every=4, log_every=1)
    base.update(kw)
    return RunConfig(**base)


def temp_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.name.endswith(".tmp")]


# ----------------------------------------------------------------------------- models


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_registry_entry_has_the_common_shapes(name):
    assert set(TINY) == set(REGISTRY), "add the new model to TINY"
    torch.manual_seed(0)
    tokens = torch.randint(0, 3, (4, 7))
    lengths = torch.tensor([7, 1, 4, 6])
    if name in LANGUAGE_MODELS:
        lm = build_model(name, vocab_size=3, n_classes=3, **TINY[name]).eval()
        assert lm(tokens, lengths).shape == (4, 7, 3)
        return
    model = build_model(name, vocab_size=3, n_classes=5, **TINY[name]).eval()
    assert model(tokens, lengths).shape == (4, 5)
    from monoidlab.models import model_spec
    from monoidlab.models.protocols import PrefixModel

    if model_spec(name).can(PrefixModel):  # the tree baselines (bbt-grc, ...) read strings whole
        assert model.forward_all(tokens, lengths).shape == (4, 7, 5)


@pytest.mark.parametrize("name", sorted(set(REGISTRY) - LANGUAGE_MODELS))
def test_build_for_sizes_the_model_for_the_problem(name):
    cfg = RunConfig(language="cycle-navigation", model=name, model_options=TINY[name])
    problem = make_problem(cfg)
    model = build_for(cfg, problem)
    b = problem.batch(np.random.default_rng(0), 5, 3, train=True)
    logits = model(torch.as_tensor(b["tokens"]), torch.as_tensor(b["lengths"]))
    assert (problem.vocab_size, problem.n_classes) == (3, 5)
    assert logits.shape == (3, 5)


# ----------------------------------------------------------------------------- configs


def test_config_round_trip_through_toml(tmp_path):
    toml = tmp_path / "run.toml"
    toml.write_text(
        '[train]\nlanguage = "dyck-2"\nmodel = "pr-lstm"\nsteps = 123\nlr = 3e-4\n'
        'optimizer = "amsgrad"\nwarmup = 0.2\nlr_schedule = "cosine"\n'
        'grad_centralisation = true\ntest_lengths = "41:60"\nwithin = ["accept", "reject"]\n'
        '[train.model_options]\nhidden = 32\nnum_layers = 3\n')
    cfg = load_config(toml)
    assert (cfg.language, cfg.model, cfg.steps, cfg.lr) == ("dyck-2", "pr-lstm", 123, 3e-4)
    assert (cfg.model_options.hidden, cfg.model_options.num_layers) == (32, 3)
    assert cfg.grad_centralisation is True and cfg.within == ("accept", "reject")
    data = cfg.as_dict()
    again = config_from_dict(json.loads(json.dumps(data)))  # through JSON, as in config.json
    assert again == cfg and again.as_dict() == data
    # top-level keys (no [train] table) work too
    flat = tmp_path / "flat.toml"
    flat.write_text('language = "parity"\nsteps = 7\n')
    assert load_config(flat) == RunConfig(language="parity", steps=7)


@pytest.mark.parametrize("path", sorted([*CONFIGS.glob("*.toml"), *STUDY_CONFIGS.glob("*.toml")]),
                         ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}/{p.name}")
def test_bundled_configs_load(path):
    import tomllib

    data = tomllib.loads(path.read_text())
    if "study" in data and "sweeps" in data["study"]:  # a study of sweeps (exact21)
        for sweep in data["study"]["sweeps"]:
            assert load_sweep(ROOT / sweep)["runs"]
    elif "study" in data and "conditions" in data["study"]:  # the identity-padding study
        from monoidlab.studies import identity_padding as ip

        st = data["study"]
        for task in st["tasks"]:
            for condition in st["conditions"]:
                keys = ip.run_config(task, condition, 0, st["steps"], 40, st["recipe"])
                cfg = config_from_dict(keys, f"{path.name}: {task} {condition}")
                assert cfg.language == task and cfg.steps == st["steps"]
    elif "study" in data and "samplers" in data["study"]:  # the threshold study's runs
        from monoidlab.studies import threshold as mod

        for name in data["study"]["languages"]:
            for sampler in data["study"]["samplers"]:
                run = {"id": f"{name}-{sampler}", "language": name, "max_length": 8,
                       "sampler": sampler, "seed": 0}
                cfg = mod.config_of(run, data["base"])
                assert (cfg.language, cfg.sampler, cfg.train_lengths.last) == (name, sampler, 8)
    elif "benchmark" in data:  # the random-language benchmark: every recipe on every language
        from monoidlab.training.parse import config_from_dict as from_dict

        meta = data["benchmark"]
        folder = ROOT / meta.get("specs", "bench/random-languages")
        specs = sorted(folder.glob(f"{meta.get('prefix', 'rl')}-*.toml"))
        assert len(specs) == meta["n"]
        for name, recipe in data["recipes"].items():
            keys = {k: v for k, v in recipe.items() if k not in ("frozen", "basis")}
            for spec in specs[:3]:
                cfg = from_dict({**keys, "language": str(spec), "seed": 0}, name)
                assert cfg.language == str(spec) and cfg.model == recipe["model"]
    elif "table" in data:  # the ListOps table (monoidlab study listops): every entry's config
        from monoidlab.training.parse import config_from_dict as from_dict

        for name, entry in data["models"].items():
            cfg = from_dict({**data["base"], **entry, "seed": data["table"]["seed"]}, name)
            assert (cfg.task, cfg.model) == ("listops", entry["model"])
    elif "refine" in data:  # a refinement of finished runs (monoidlab study refine)
        ref = data["refine"]
        for variant, mine in ref["variants"].items():
            cfg = RunConfig(language="parity", model="mlp-ldru-snap", refine_rounds=ref["rounds"],
                            refine_steps=ref["steps"], refine_share=ref["share"],
                            refine_mine=mine)
            assert cfg.refine_rounds >= 1 and variant
        assert data["tasks"]["names"] and data["sources"]
    elif "sweep" in data:
        sweep = load_sweep(path)
        assert sweep["runs"]
        for run in sweep["runs"]:  # a run's config survives its config.json
            assert config_from_dict(run["config"].as_dict(), saved=True) == run["config"]
    elif path.parent == STUDY_CONFIGS:  # another study's: read by its study, tests/test_studies.py
        assert any(k in data for k in ("study", "runs", "table", "benchmark")), path
    else:
        cfg = load_config(path)
        assert cfg.language or cfg.task


@pytest.mark.parametrize("language", ["parity", "cycle-navigation"])
def test_benchmark_configs_spell_out_the_cli_defaults(language):
    """`monoidlab train --language L --model mlp-ldru` == configs/L-mlp-ldru.toml."""
    file = load_config(CONFIGS / f"{language}-mlp-ldru.toml")
    assert file == RunConfig(language=language, model="mlp-ldru")


def test_every_config_key_is_documented():
    import dataclasses

    doc = (ROOT / "docs" / "training.md").read_text()
    missing = [f.name for f in dataclasses.fields(RunConfig) if f"`{f.name}`" not in doc
               and not f.metadata.get("internal")]
    assert not missing, f"docs/training.md lacks {missing}"


def test_overrides():
    cfg = RunConfig(language="parity")
    cfg = apply_overrides(cfg, ["--steps=5", "model_options.d=8", "--lr=3e-3", "batch-size=16",
                                "train_lengths=2:9", "--bf16=false", "lr_schedule=cosine",
                                "--model_options.operator=gated-sum", "val_lengths=50"])
    assert cfg.steps == 5 and cfg.lr == 3e-3 and cfg.batch_size == 16
    assert (cfg.model_options.d, cfg.model_options.operator) == (8, "gated-sum")
    assert cfg.explicit >= {"steps", "model_options.d", "model_options.operator"}
    assert cfg.train_lengths == Lengths(2, 9) and cfg.val_lengths == Lengths(50, 50)
    assert cfg.as_dict()["train_lengths"] == "2:9"  # text form in files and checkpoints
    assert cfg.bf16 is False and cfg.lr_schedule == "cosine"
    # an int where a float is expected is fine; the original config is untouched
    assert apply_overrides(cfg, ["lr=1"]).lr == 1.0 and cfg.lr == 3e-3
    # switching the problem
    cfg2 = apply_overrides(cfg, ["language=dyck-2"])
    assert cfg2.language == "dyck-2" and cfg2.task is None


@pytest.mark.parametrize("override, key", [
    ("stepz=3", "stepz"),
    ("steps=abc", "steps"),
    ("steps=1.5", "steps"),
    ("steps=0", "steps"),
    ("lr=-1", "lr"),
    ("lr=fast", "lr"),
    ("optimizer=sgd", "optimizer"),
    ("warmup=1.5", "warmup"),
    ("lr_schedule=linear", "lr_schedule"),
    ("test_lengths=9:2", "test_lengths"),
    ("train_lengths=a:b", "train_lengths"),
    ("model=gpt", "model"),
    ("bf16=maybe", "bf16"),
    ("sampler=magic", "sampler"),
    ("model_options.dd=8", "model_options"),
    ("foo.bar=1", "foo.bar"),
    ("task=reverse_string", "language"),  # both a language and a task
])
def test_bad_overrides_name_the_key(override, key):
    with pytest.raises(ConfigError) as info:
        apply_overrides(RunConfig(language="parity"), [override])
    msg = str(info.value)
    assert repr(key) in msg or f"'{key}'" in msg, msg
    assert "\n" not in msg


def test_bad_override_syntax():
    with pytest.raises(ConfigError, match="key=value"):
        apply_overrides(RunConfig(language="parity"), ["steps"])


def test_bad_config_file_names_file_and_key(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('language = "parity"\nbatch = 12\n')
    with pytest.raises(ConfigError, match=r"bad\.toml.*'batch'"):
        load_config(bad)
    bad.write_text('language = "parity"\nsteps = "many"\n')
    with pytest.raises(ConfigError, match=r"bad\.toml: key 'steps': expected an integer"):
        load_config(bad)
    bad.write_text('language = "parity"\nsteps = \n')
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_config(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.toml")


def test_bad_model_options_value_is_a_config_error_when_the_config_is_built():
    with pytest.raises(ConfigError, match="key 'model_options': unknown position encoding "
                                          "'nope'"):
        RunConfig(language="parity", model="transformer",
                  model_options={"d_model": 16, "n_heads": 2, "position": "nope"})


# ----------------------------------------------------------------------------- lr schedule


def test_lr_warmup_starts_at_1e8_and_is_linear():
    cfg = RunConfig(language="parity", steps=100, warmup=0.2, lr=1e-3)
    assert lr_at(cfg, 0) == pytest.approx(1e-8)
    assert lr_at(cfg, 10) == pytest.approx(1e-8 + (1e-3 - 1e-8) / 2)
    assert lr_at(cfg, 20) == pytest.approx(1e-3)
    assert all(lr_at(cfg, s) < lr_at(cfg, s + 1) for s in range(19))
    assert all(lr_at(cfg, s) == 1e-3 for s in range(20, 100))  # then constant


def test_lr_cosine_after_warmup():
    cfg = RunConfig(language="parity", steps=110, warmup=10 / 110, lr=2e-3,
                      lr_schedule="cosine")
    assert lr_at(cfg, 10) == pytest.approx(2e-3)
    assert lr_at(cfg, 60) == pytest.approx(1e-3)  # halfway through the decay
    assert lr_at(cfg, 109) == pytest.approx(2e-3 * 0.5 * (1 + math.cos(math.pi * 99 / 100)))
    assert all(lr_at(cfg, s) > lr_at(cfg, s + 1) for s in range(10, 109))
    no_warm = RunConfig(language="parity", steps=10, lr=1.0, lr_schedule="cosine")
    assert lr_at(no_warm, 0) == 1.0


# ----------------------------------------------------------------------------- the loop


def test_tiny_model_overfits_a_few_strings():
    # lengths 2..4 of parity: 28 strings in all, seen over and over
    cfg = tiny_config(model_options={"d": 32, "dropout": 0.0}, steps=100, batch_size=16,
                      train_lengths="2:4", test_lengths="2:4", test_samples=32, lr=3e-3,
                      sampler="uniform", log_every=50)
    res = train(cfg, None, progress=False)
    for kind in ("paper", "near_miss", "ec_stratified"):
        assert res["accuracy"][kind] == {2: 1.0, 3: 1.0, 4: 1.0}, kind
    assert res["paper_score"] == 1.0 and res["solved"] and res["steps"] == 100


def test_run_folder_and_checkpoint(tmp_path):
    out = tmp_path / "run"
    res = train(tiny_config(), out, progress=False)
    assert {p.name for p in out.iterdir()} >= {"checkpoint.pt", "config.json", "metrics.jsonl",
                                               "results.json"}
    assert temp_files(out) == []  # atomic writes leave no temporary files behind
    ckpt = torch.load(out / "checkpoint.pt", weights_only=True)
    assert {"model", "optimizer", "step", "config"} <= set(ckpt)
    assert "rng" not in ckpt  # the per-step seeding makes a saved RNG state redundant
    assert ckpt["step"] == 12 and ckpt["config"] == tiny_config().as_dict()
    assert json.loads((out / "config.json").read_text()) == tiny_config().as_dict()
    saved = json.loads((out / "results.json").read_text())
    assert saved["paper_score"] == res["paper_score"]
    assert set(saved["accuracy"]["near_miss"]) == {"9", "10", "11"}
    steps = [json.loads(ln)["step"] for ln in (out / "metrics.jsonl").read_text().splitlines()]
    assert steps == list(range(1, 13))
    model, cfg, problem, _ = load_checkpoint(out)
    assert cfg == tiny_config() and not model.training
    again = evaluate(model, problem, range(9, 12), 8, cfg.seed)
    assert again == res["accuracy"]["paper"]  # the checkpoint is the final model


def test_checkpoint_write_is_atomic(tmp_path, monkeypatch):
    """A crash while writing a checkpoint leaves the previous one intact and no temp file."""
    out = tmp_path / "run"
    import monoidlab._util

    real_replace = monoidlab._util.os.replace
    written = []

    def crash(src, dst):  # the second checkpoint write fails (the first one, step 4, landed)
        if Path(dst).name == "checkpoint.pt":
            if written:
                raise OSError("disk full")
            written.append(Path(src).read_bytes())
        real_replace(src, dst)

    monkeypatch.setattr(monoidlab._util.os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        train(tiny_config(steps=8), out, progress=False)
    assert (out / "checkpoint.pt").read_bytes() == written[0]
    assert temp_files(out) == []


def _kill_at(monkeypatch, kill_step: int) -> None:
    """Make the training loop die (as a kill would) when it reaches ``kill_step``."""
    real = loop_mod._seed_torch

    def seed_or_die(cfg, step):
        if step == kill_step:
            raise KeyboardInterrupt(f"killed at step {step}")
        real(cfg, step)

    monkeypatch.setattr(loop_mod, "_seed_torch", seed_or_die)


def _metrics(path: Path) -> list[dict]:
    rows = [json.loads(ln) for ln in path.read_text().splitlines()]
    return [{k: v for k, v in r.items() if k not in ("elapsed_s", "cpu_s")} for r in rows]


@pytest.mark.parametrize("model", ["mlp-ldru", "pr-lstm"])
def test_resume_equals_uninterrupted_run(tmp_path, monkeypatch, model):
    # every stateful part at once: dropout (torch RNG), AMSGrad state, warm-up + cosine lr,
    # gradient centralisation, the sampler's RNG
    kw = {"d": 8, "dropout": 0.25} if model == "mlp-ldru" else {"hidden": 8}
    cfg = tiny_config(model=model, model_options=kw, optimizer="amsgrad", warmup=0.25,
                      lr_schedule="cosine", grad_centralisation=True, lr=3e-3)
    full = train(cfg, tmp_path / "full", progress=False)

    with monkeypatch.context() as m:  # killed after the step-8 checkpoint, before step 11
        _kill_at(m, 11)
        with pytest.raises(KeyboardInterrupt):
            train(cfg, tmp_path / "killed", progress=False)
    assert torch.load(tmp_path / "killed" / "checkpoint.pt", weights_only=True)["step"] == 8
    assert not (tmp_path / "killed" / "results.json").exists()
    resumed = train(cfg, tmp_path / "killed", resume=True, progress=False)

    a = torch.load(tmp_path / "full" / "checkpoint.pt", weights_only=True)
    b = torch.load(tmp_path / "killed" / "checkpoint.pt", weights_only=True)
    assert a["step"] == b["step"] == 12
    assert a["model"].keys() == b["model"].keys()
    for k in a["model"]:
        assert torch.equal(a["model"][k], b["model"][k]), k  # bit for bit
    for sa, sb in zip(a["optimizer"]["state"].values(), b["optimizer"]["state"].values()):
        for k in sa:
            assert torch.equal(sa[k], sb[k]), k
    assert resumed["accuracy"] == full["accuracy"]
    assert resumed["paper_score"] == full["paper_score"]
    assert _metrics(tmp_path / "killed" / "metrics.jsonl") == \
        _metrics(tmp_path / "full" / "metrics.jsonl")


def test_resume_from_a_copied_intermediate_checkpoint(tmp_path):
    """Same property without a kill: a run stopped at step 8 (steps=8) is not a prefix of a
    12-step run when the lr schedule depends on ``steps``; with a constant lr it is."""
    cfg = tiny_config(steps=12)
    full = train(cfg, tmp_path / "full", progress=False)
    train(tiny_config(steps=8), tmp_path / "short", progress=False)
    (tmp_path / "cont").mkdir()
    ck = torch.load(tmp_path / "short" / "checkpoint.pt", weights_only=True)
    ck["config"] = cfg.as_dict()  # continue it as the 12-step run (checksums made afresh)
    save_checkpoint({k: v for k, v in ck.items() if k != "sha256"},
                    tmp_path / "cont" / "checkpoint.pt")
    cont = train(cfg, tmp_path / "cont", resume=True, progress=False)
    assert cont["accuracy"] == full["accuracy"]
    a = torch.load(tmp_path / "full" / "checkpoint.pt", weights_only=True)["model"]
    b = torch.load(tmp_path / "cont" / "checkpoint.pt", weights_only=True)["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_paused_run_resumes_to_the_uninterrupted_run(tmp_path):
    """stop_at pauses after the step's validation and checkpoint; resuming gives the same
    weights, validations and results as the run that never paused."""
    cfg = tiny_config(steps=12, eval_every=4, early_stop=3, val_lengths="9:10", val_samples=4,
                      lr_schedule="cosine")
    full = train(cfg, tmp_path / "full", progress=False)
    paused = train(cfg, tmp_path / "p", progress=False, stop_at=8)
    assert paused["paused"] and paused["steps"] == 8 and "evaluation" not in paused
    assert not (tmp_path / "p" / "results.json").exists()
    ck = torch.load(tmp_path / "p" / "checkpoint.pt", weights_only=True)
    assert ck["step"] == 8 and ck["early_stop"]["best_step"] == 8  # the step-8 validation
    again = train(cfg, tmp_path / "p", resume=True, progress=False, stop_at=8)  # already there
    assert again["paused"] and again["steps"] == 8
    resumed = train(cfg, tmp_path / "p", resume=True, progress=False)
    assert resumed["accuracy"] == full["accuracy"] and resumed["best_step"] == full["best_step"]
    a = torch.load(tmp_path / "full" / "checkpoint.pt", weights_only=True)["model"]
    b = torch.load(tmp_path / "p" / "checkpoint.pt", weights_only=True)["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert _metrics(tmp_path / "p" / "metrics.jsonl") == _metrics(tmp_path / "full" /
                                                                  "metrics.jsonl")
    with pytest.raises(ValueError, match="stop_at"):
        train(cfg, tmp_path / "q", progress=False, stop_at=0)


def test_resume_refuses_a_different_config(tmp_path):
    train(tiny_config(steps=4), tmp_path / "run", progress=False)
    with pytest.raises(ValueError, match="lr"):
        train(tiny_config(steps=4, lr=5e-3), tmp_path / "run", resume=True, progress=False)
    with pytest.raises(CheckpointError, match="no checkpoint"):
        train(tiny_config(), tmp_path / "nothing", resume=True, progress=False)


def test_nan_loss_stops_and_keeps_the_last_good_checkpoint(tmp_path, monkeypatch):
    real = LanguageProblem.loss
    calls = {"n": 0}

    def loss(self, model, batch):
        value, correct = real(self, model, batch)
        calls["n"] += 1
        return (value * float("nan"), correct) if calls["n"] == 7 else (value, correct)

    monkeypatch.setattr(LanguageProblem, "loss", loss)
    out = tmp_path / "run"
    with pytest.raises(TrainingDiverged) as info:
        train(tiny_config(), out, progress=False)
    msg = str(info.value)
    assert "nan" in msg and "step 6" in msg and "checkpoint.pt" in msg and "kept" in msg
    ckpt = torch.load(out / "checkpoint.pt", weights_only=True)
    assert ckpt["step"] == 4
    assert all(torch.isfinite(v).all() for v in ckpt["model"].values())
    assert not (out / "results.json").exists() and temp_files(out) == []
    load_checkpoint(out)  # still usable


def test_nan_gradient_with_a_finite_loss_stops_before_the_weights_are_poisoned(
        tmp_path, monkeypatch):
    """A finite loss with a NaN gradient used to turn the weights into NaN after the step,
    and the next checkpoint (written before the next loss is checked) saved them."""
    real = LanguageProblem.loss
    calls = {"n": 0}

    def loss(self, model, batch):
        value, correct = real(self, model, batch)
        calls["n"] += 1
        if calls["n"] == 6:  # d sqrt(x)/dx at 0 is inf, times 0: NaN gradient, loss unchanged
            value = value + torch.sqrt(next(model.parameters()).sum() * 0)
        return value, correct

    monkeypatch.setattr(LanguageProblem, "loss", loss)
    out = tmp_path / "run"
    with pytest.raises(TrainingDiverged, match="gradient norm is nan at step 5.*kept"):
        train(tiny_config(checkpoint_every=1), out, progress=False)
    ckpt = torch.load(out / "checkpoint.pt", weights_only=True)
    assert ckpt["step"] == 5
    assert all(torch.isfinite(v).all() for v in ckpt["model"].values())


def test_huge_lr_diverges_with_a_clear_message(tmp_path):
    out = tmp_path / "run"
    cfg = tiny_config(lr=1e30, clip=0.0, steps=40, checkpoint_every=1,
                      model_options={"d": 8, "dropout": 0.0})
    with pytest.raises(TrainingDiverged, match=r"at step \d+ .*Try a lower lr"):
        train(cfg, out, progress=False)
    ckpt = torch.load(out / "checkpoint.pt", weights_only=True)
    assert all(torch.isfinite(v).all() for v in ckpt["model"].values())


def test_nan_without_out_dir_says_no_checkpoint(monkeypatch):
    monkeypatch.setattr(LanguageProblem, "loss",
                        lambda self, m, b: (torch.tensor(float("inf")), torch.zeros(1)))
    with pytest.raises(TrainingDiverged, match="inf at step 0.*no checkpoint"):
        train(tiny_config(), None, progress=False)


def _trained_weights(monkeypatch, cfg, **kw) -> tuple[dict, torch.Tensor]:
    """``(train()'s result, the trained model's flat weights)``."""
    built = []
    real = loop_mod.build_for
    with monkeypatch.context() as mp:
        mp.setattr(loop_mod, "build_for", lambda c, p: built.append(real(c, p)) or built[-1])
        res = train(cfg, None, progress=False, **kw)
    return res, torch.cat([p.detach().ravel() for p in built[0].parameters()])


def test_training_is_reproducible_and_seeded(monkeypatch):
    """Same seed: the same weights bit for bit; another seed: other weights (accuracies alone
    cannot tell: an untrained parity model scores 0.5 on balanced test sets whatever it does)."""
    a, wa = _trained_weights(monkeypatch, tiny_config(steps=6))
    b, wb = _trained_weights(monkeypatch, tiny_config(steps=6))
    assert torch.equal(wa, wb) and a["accuracy"] == b["accuracy"]
    c, wc = _trained_weights(monkeypatch, tiny_config(steps=6, seed=1), evaluate_at_end=False)
    assert "accuracy" not in c and c["steps"] == 6
    assert not torch.allclose(wa, wc)


@pytest.mark.parametrize("model", ["mlp-ldru", "pr-lstm"])
def test_tape_task_trains(model, monkeypatch):
    kw = dict(model=model, model_options=TINY[model], steps=3, task="reverse_string",
              language=None, test_lengths="5:6", train_lengths="2:4")
    cfg = tiny_config(**kw)
    res, w = _trained_weights(monkeypatch, cfg)
    assert set(res["accuracy"]["task"]) == {5, 6}
    torch.manual_seed(cfg.seed)
    init = build_for(cfg, make_problem(cfg))
    assert not torch.allclose(w, torch.cat([p.detach().ravel() for p in init.parameters()]))


def _first_step_loss(out: Path, **kw) -> float:
    """The logged loss of the first step of a one-step tiny run."""
    train(tiny_config(steps=1, **kw), out, progress=False, evaluate_at_end=False)
    return json.loads((out / "metrics.jsonl").read_text().splitlines()[0])["loss"]


def test_assoc_weight_adds_the_regulariser_to_the_loss(tmp_path, monkeypatch):
    """The logged loss of step 1 is the task loss plus assoc_weight × the regulariser, linear
    in the weight; the regulariser is called on each step's batch; the weights it trains
    differ from a run without it."""
    from monoidlab.models.mlp_ldru import MLPLDRU

    calls = []
    real = MLPLDRU.regulariser

    def spy(self, tokens, lengths, offsets=None):
        out = real(self, tokens, lengths, offsets)
        calls.append((tokens.shape, float(out.detach())))
        return out

    monkeypatch.setattr(MLPLDRU, "regulariser", spy)

    def first_loss(weight: float) -> float:
        return _first_step_loss(tmp_path / f"w{weight}", assoc_weight=weight)

    base = first_loss(0.0)
    assert calls == []  # weight 0: never called
    l1, l2 = first_loss(0.5), first_loss(1.0)
    assert len(calls) == 2 and calls[0] == calls[1] and calls[0][1] > 1e-4
    assert l1 - base == pytest.approx(0.5 * calls[0][1], rel=1e-4, abs=1e-6)
    assert l2 - base == pytest.approx(calls[0][1], rel=1e-4, abs=1e-6)
    monkeypatch.undo()
    _, plain = _trained_weights(monkeypatch, tiny_config(steps=3), evaluate_at_end=False)
    _, reg = _trained_weights(monkeypatch, tiny_config(steps=3, assoc_weight=1.0),
                              evaluate_at_end=False)
    assert not torch.allclose(plain, reg)


@pytest.mark.parametrize("model", ["rnn", "lstm", "pr-lstm", "transformer"])
def test_assoc_weight_on_a_model_without_regulariser_is_a_config_error(model):
    """Before any work: a ConfigError naming the key and the models that can take it."""
    with pytest.raises(ConfigError, match="key 'assoc_weight'.*lacks an associativity "
                                          "regulariser.*models that can: mlp-ldru"):
        tiny_config(model=model, model_options=TINY[model], assoc_weight=0.1)
    with pytest.raises(ConfigError, match="assoc_weight"):
        train(RunConfig(language="parity", model=model, assoc_weight=0.1), None,
              progress=False)
    tiny_config(model=model, model_options=TINY[model], assoc_weight=0.0)  # 0 is fine


def test_offset_consistency_is_zero_for_an_associative_operator_and_not_for_the_papers():
    """At offset 0 the term is 0 (to float32 rounding); at random offsets an exactly associative operator (sum, no
    post block) keeps it at 0 while the paper's operator at random weights does not, and its
    gradient reaches the operator."""
    from monoidlab.models.mlp_ldru import MLPLDRU

    torch.manual_seed(0)
    summed = MLPLDRU(3, 2, d=8, dropout=0.0, padding="identity", operator="sum",
                     post_block=False)
    paper = MLPLDRU(3, 2, d=8, dropout=0.0, padding="identity")
    tokens = torch.randint(0, 3, (16, 21))
    lengths = torch.randint(3, 22, (16,))
    offsets = torch.randint(0, 43, (16,))
    zero = torch.zeros(16, dtype=torch.long)
    for m in (summed, paper):
        assert m.consistency_loss(tokens, lengths, zero).item() < 1e-6  # cos(x, x) in float32
    assert summed.consistency_loss(tokens, lengths, offsets).item() < 1e-6
    loss = paper.consistency_loss(tokens, lengths, offsets)
    assert loss.item() > 1e-4
    loss.backward()
    grad = paper.gates[0].weight.grad
    assert grad is not None and torch.isfinite(grad).all() and grad.abs().sum() > 0


def test_offset_consistency_adds_its_term_to_the_loss(tmp_path, monkeypatch):
    """The logged loss of step 1 is the task loss plus offset_consistency × the term, linear in
    the weight, computed on the step's batch at its offsets; weight 0 never calls it; the
    trained weights differ from a run without it."""
    from monoidlab.models.mlp_ldru import MLPLDRU

    calls = []
    real = MLPLDRU.consistency_loss

    def spy(self, tokens, lengths, offsets):
        out = real(self, tokens, lengths, offsets)
        calls.append((tokens.shape, offsets.tolist(), float(out.detach())))
        return out

    monkeypatch.setattr(MLPLDRU, "consistency_loss", spy)
    cfg = dict(offsets="random", model_options={"d": 8, "padding": "identity"})

    def first_loss(weight: float) -> float:
        return _first_step_loss(tmp_path / f"w{weight}", offset_consistency=weight, **cfg)

    base = first_loss(0.0)
    assert calls == []  # weight 0: never called
    l1, l2 = first_loss(0.5), first_loss(1.0)
    assert len(calls) == 2 and calls[0] == calls[1] and calls[0][2] > 1e-6
    assert any(calls[0][1])  # the batch's own (random, not all zero) offsets
    assert l1 - base == pytest.approx(0.5 * calls[0][2], rel=1e-3, abs=1e-6)
    assert l2 - base == pytest.approx(calls[0][2], rel=1e-3, abs=1e-6)
    monkeypatch.undo()
    _, plain = _trained_weights(monkeypatch, tiny_config(steps=3, **cfg), evaluate_at_end=False)
    _, cons = _trained_weights(monkeypatch, tiny_config(steps=3, offset_consistency=1.0, **cfg),
                               evaluate_at_end=False)
    assert not torch.allclose(plain, cons)


@pytest.mark.parametrize("kw, match", [
    ({}, "key 'offset_consistency': needs offsets = \"random\".*offsets is 'none'"),
    ({"offsets": "random"}, "key 'offset_consistency': needs model_options padding = "
                            "\"identity\", not 'learned'"),
    ({"model": "rnn", "model_options": TINY["rnn"]},
     "key 'offset_consistency': model 'rnn' cannot take offset_consistency: it lacks an "
     "offset-consistency term .ConsistentModel.; models that can: mlp-ldru"),
    ({"offset_consistency": -1.0}, "key 'offset_consistency': must be finite and >= 0"),
])
def test_offset_consistency_needs_random_offsets_identity_padding_and_an_able_model(kw, match):
    """Before any work: a ConfigError naming the key and what it needs."""
    base = {"offset_consistency": 1.0, "model_options": {"d": 8}, **kw}
    with pytest.raises(ConfigError, match=match):
        tiny_config(**base)


# ----------------------------------------------------------------------------- evaluation


def test_evaluate_every_length_fixed_sets():
    cfg = tiny_config()
    problem = make_problem(cfg)
    torch.manual_seed(0)
    model = build_for(cfg, problem)
    model.train()
    a = evaluate(model, problem, range(5, 12), n_per_length=20, seed=3, batch_size=8)
    b = evaluate(model, problem, range(5, 12), n_per_length=20, seed=3, batch_size=8)
    assert list(a) == list(range(5, 12)) and a == b
    assert all(0 <= v <= 1 and abs(v * 20 - round(v * 20)) < 1e-4 for v in a.values())
    assert model.training  # the mode is restored (dropout off only while evaluating)
    # the test set depends on the seed, not on the model's RNG state
    torch.manual_seed(123)
    assert evaluate(model, problem, range(5, 12), 20, seed=3, batch_size=8) == a


def test_evaluate_skips_lengths_without_strings():
    cfg = RunConfig(language="modular-arithmetic", model="rnn", model_options={"hidden": 8})
    problem = make_problem(cfg)
    model = build_for(cfg, problem)
    acc = evaluate(model, problem, range(2, 8), n_per_length=4)
    assert list(acc) == [3, 5, 7]  # expressions have odd lengths only


# ----------------------------------------------------------------------------- sweeps


def _sweep_file(tmp_path: Path) -> Path:
    f = tmp_path / "tiny-sweep.toml"
    f.write_text(f"""
[sweep]
languages = ["parity"]
models = ["mlp-ldru"]
seeds = [0, 1]
out = "{(tmp_path / 'sweep').as_posix()}"
title = "tiny sweep"
[base]
device = "cpu"
steps = 3
batch_size = 8
train_lengths = "1:6"
test_lengths = "7:8"
test_samples = 8
[models.mlp-ldru]
model_options = {{ d = 8 }}
""")
    return f


def test_sweep_writes_results_and_skips_finished_runs(tmp_path, monkeypatch):
    f = _sweep_file(tmp_path)
    res = run_sweep(f, progress=False)
    out = tmp_path / "sweep"
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert [r["id"] for r in rows] == ["parity__mlp-ldru__s0", "parity__mlp-ldru__s1"]
    assert all(r["steps"] == "3" and r["device"] == "cpu" for r in rows)
    md = (out / "summary.md").read_text()
    assert md.startswith("# tiny sweep") and "| parity |" in md and "mlp-ldru" in md
    assert "| tasks solved | 0/1 |" in md  # 3 steps solve nothing
    # beside the verdict, what trivial models score on the same strings (run 0's evaluation)
    ev = res["rows"][0]["evaluation"]["summary"]
    base = {x["kind"]: f"{x['majority']:.3f} / {x['count_only']:.3f}" for x in ev}
    assert "mean over the scored lengths; majority / count-only" in md
    kinds = res["rows"][0]["evaluation"]["kinds"]
    assert "| parity | " + " | ".join(base[k] for k in kinds) + " |" in md
    assert rows[0]["solved"] == "False" and float(rows[0]["min_near_miss"]) < 0.99
    assert md == res["summary_md"] and len(res["rows"]) == 2
    for r in res["rows"]:
        assert (out / r["id"] / "checkpoint.pt").is_file()
    assert temp_files(out) == []

    def no_training(*a, **k):
        raise AssertionError("a finished run was trained again")

    monkeypatch.setattr(trainer_mod, "train", no_training)
    again = run_sweep(f, progress=False)
    assert [r["evaluation"] for r in again["rows"]] == [r["evaluation"] for r in res["rows"]]
    assert (out / "summary.md").read_text() == md


def test_sweep_table_tabulates_the_finished_runs_and_trains_nothing(tmp_path, monkeypatch):
    from monoidlab.cli import main

    f = _sweep_file(tmp_path)
    with pytest.raises(ConfigError, match="no finished run"):
        run_sweep(f, table_only=True)
    full = run_sweep(f, progress=False)
    shutil.rmtree(tmp_path / "sweep" / "parity__mlp-ldru__s1")  # as if still to run

    def no_training(*a, **k):
        raise AssertionError("--table trained a run")

    monkeypatch.setattr(trainer_mod, "train", no_training)
    part = run_sweep(f, table_only=True)
    assert [r["id"] for r in part["rows"]] == ["parity__mlp-ldru__s0"]
    assert part["rows"][0] == full["rows"][0]
    assert part["summary_md"].startswith("# tiny sweep (partial: 1 of 2 runs finished)")
    assert "| parity | 0/1:" in part["summary_md"]
    assert not (tmp_path / "sweep" / "parity__mlp-ldru__s1").exists()
    assert main(["sweep", str(f), "--table", "--json"]) == 0


def test_a_run_refused_before_training_is_a_row_of_the_sweep_not_its_end(tmp_path, monkeypatch):
    """dyck-2's covering plan needs more strings than 3 steps draw: that run is refused, the
    parity run beside it trains, and the table (fresh or --table) says which was refused."""
    f = _sweep_file(tmp_path)
    f.write_text(f.read_text().replace('languages = ["parity"]', 'languages = ["parity"]\n'
                                       'conditions = ["dyck-2-covering"]')
                 .replace("seeds = [0, 1]", "seeds = [0]") +
                 '[conditions.dyck-2-covering]\nlanguage = "dyck-2"\nsampler = "covering"\n'
                 'covering = { share = 0.5, k = 1, uncovered = "skip" }\n'
                 'model_options = { d = 8, padding = "identity" }\n')
    res = run_sweep(f, progress=False)
    out = tmp_path / "sweep"
    by_id = {r["problem"]: r for r in res["rows"]}
    assert set(by_id) == {"parity", "dyck-2-covering"}
    refused = by_id["dyck-2-covering"]
    assert refused["evaluation"] is None and refused["solved"] is False
    assert "key 'covering'" in refused["refused"] and refused["train_seconds"] == 0.0
    assert by_id["parity"]["evaluation"] is not None
    md = res["summary_md"]
    assert "| dyck-2-covering | 0/1: 1 refused |" in md and "| tasks solved | 0/2 |" in md
    csv_rows = {r["problem"]: r for r in csv.DictReader((out / "results.csv").open())}
    assert csv_rows["dyck-2-covering"]["verdict"].startswith("refused: key 'covering'")
    run_dir = out / refused["id"]
    assert json.loads((run_dir / "refused.json").read_text())["refused"] == refused["refused"]

    def no_training(*a, **k):
        raise AssertionError("--table trained a run")

    monkeypatch.setattr(trainer_mod, "train", no_training)
    table = run_sweep(f, table_only=True)
    assert [r["id"] for r in table["rows"]] == [r["id"] for r in res["rows"]]
    assert table["rows"][1] == refused or table["rows"][0] == refused
    assert "| dyck-2-covering | 0/1: 1 refused |" in table["summary_md"]
    # asked with other settings, the refusal is not this sweep's any more: not finished
    f.write_text(f.read_text().replace("k = 1,", "k = 2,"))
    assert [r["problem"] for r in run_sweep(f, table_only=True)["rows"]] == ["parity"]
    # and once settings that train it are given, it trains and its refusal is gone
    monkeypatch.undo()
    f.write_text(f.read_text().replace("k = 2,", "k = 1,").replace(
        'language = "dyck-2"', 'language = "dyck-2"\nsteps = 400'))
    trained = {r["problem"]: r for r in run_sweep(f, progress=False)["rows"]}
    assert trained["dyck-2-covering"]["evaluation"] is not None
    assert not (run_dir / "refused.json").exists()


def test_sweep_refuses_to_reuse_a_run_trained_with_other_settings(tmp_path, monkeypatch):
    f = _sweep_file(tmp_path)
    run_sweep(f, progress=False)
    f.write_text(f.read_text().replace("steps = 3", "steps = 4"))

    def no_training(*a, **k):
        raise AssertionError("the changed run was trained over the old one")

    monkeypatch.setattr(trainer_mod, "train", no_training)
    with pytest.raises(ConfigError, match=r"parity__mlp-ldru__s0.*other settings.*steps"):
        run_sweep(f, progress=False)


def test_sweep_resumes_an_unfinished_run(tmp_path, monkeypatch):
    f = _sweep_file(tmp_path)
    run_sweep(f, progress=False)
    out = tmp_path / "sweep" / "parity__mlp-ldru__s1"
    (out / "results.json").unlink()  # as if it had been killed after its last checkpoint
    seen = []
    real = trainer_mod.train

    def spy(cfg, out_dir, resume=False, **kw):
        seen.append((Path(out_dir).name, resume))
        return real(cfg, out_dir, resume=resume, **kw)

    monkeypatch.setattr(trainer_mod, "train", spy)
    run_sweep(f, progress=False)
    assert seen == [("parity__mlp-ldru__s1", True)]


def test_sweep_conditions_name_their_runs_and_merge_model_options(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text(f"""[sweep]
conditions = ["d2-id", "d2-learned"]
models = ["mlp-ldru"]
out = "{(tmp_path / 'c').as_posix()}"
[base]
steps = 3
[models.mlp-ldru]
model_options = {{ d = 8, dropout = 0.0 }}
[conditions.d2-id]
language = "dyck-2"
model_options = {{ padding = "identity" }}
[conditions.d2-learned]
language = "dyck-2"
train_lengths = "1:12"
""")
    runs = load_sweep(f)["runs"]
    assert [r["id"] for r in runs] == ["d2-id__mlp-ldru__s0", "d2-learned__mlp-ldru__s0"]
    a, b = (r["config"].model_options for r in runs)
    assert (a.d, a.dropout, a.padding) == (8, 0.0, "identity")
    assert (b.d, b.dropout, b.padding) == (8, 0.0, "learned")
    assert str(runs[1]["config"].train_lengths) == "1:12" and runs[0]["config"].steps == 3
    assert all(r["config"].language == "dyck-2" for r in runs)
    f.write_text(f.read_text().replace('language = "dyck-2"\ntrain', 'train'))
    with pytest.raises(ConfigError, match=r"\[conditions.d2-learned\].*language"):
        load_sweep(f)
    f.write_text(f.read_text().replace('"d2-learned"]', '"d2-other"]'))
    with pytest.raises(ConfigError, match=r"no table \[conditions.d2-other\]"):
        load_sweep(f)


def test_sweep_errors(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[sweep]\nlanguages = ["parity"]\nmodels = ["mlp-ldru"]\n[base]\nstepz = 3\n')
    with pytest.raises(ConfigError, match="stepz"):
        load_sweep(bad)
    bad.write_text('[sweep]\nmodels = ["mlp-ldru"]\n')
    with pytest.raises(ConfigError, match="languages"):
        load_sweep(bad)
    bad.write_text('[base]\nsteps = 3\n')
    with pytest.raises(ConfigError, match=r"\[sweep\]"):
        load_sweep(bad)


def test_a_sweep_named_through_a_linked_configs_folder_may_write_the_repositorys_docs(
        tmp_path, monkeypatch):
    # the repository's layout: configs/ is a link to monoidlab/configs, results in docs/ (a
    # checkout whose package is installed from another folder, e.g. a git worktree)
    (tmp_path / "monoidlab" / "configs").mkdir(parents=True)
    (tmp_path / "docs").mkdir()
    (tmp_path / "configs").symlink_to("monoidlab/configs")
    (tmp_path / "monoidlab" / "configs" / "s.toml").write_text(
        '[sweep]\nlanguages = ["parity"]\nmodels = ["mlp-ldru"]\nresults_md = "docs/results.md"'
        '\n[base]\nsteps = 3\n')
    monkeypatch.chdir(tmp_path)
    assert load_sweep("configs/s.toml")["results_md"] == "docs/results.md"
    elsewhere = tmp_path / "a" / "b"
    elsewhere.mkdir(parents=True)
    (elsewhere / "s.toml").write_text((tmp_path / "configs" / "s.toml").read_text())
    with pytest.raises(ConfigError, match="must lie in"):  # a/docs is not the docs written
        load_sweep(elsewhere / "s.toml")


def test_sweep_ray_without_ray_is_a_clear_error(tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_ray(name, *a, **k):
        if name == "ray":
            raise ImportError("No module named 'ray'")
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(MissingDependency, match=r"monoidlab\[ray\]"):
        run_sweep(_sweep_file(tmp_path), ray_address="local", progress=False)
    shutil.rmtree(tmp_path / "sweep", ignore_errors=True)
    # the command line: one line, exit 2, no traceback
    import io
    from contextlib import redirect_stderr

    from monoidlab.cli import main

    err = io.StringIO()
    with redirect_stderr(err):
        code = main(["sweep", str(_sweep_file(tmp_path)), "--ray", "local"])
    lines = err.getvalue().strip().splitlines()
    assert code == 2 and len(lines) == 1 and "pip install 'monoidlab[ray]'" in lines[0]
    assert "Traceback" not in err.getvalue()


# ----------------------------------------------------------------------------- early stopping

ES = dict(language="parity", model="mlp-ldru", steps=400, batch_size=16, lr=3e-3,
          model_options={"d": 16, "dropout": 0.0}, train_lengths="1:12", test_lengths="13:30",
          val_lengths="13:30:3", test_samples=16, eval_every=20, early_stop=2,
          checkpoint_every=20, threads=1)


@pytest.fixture(scope="module")
def early_stopped(one_torch_thread, tmp_path_factory):
    """The ES run trained once for the two early-stop tests (read only): (results, folder)."""
    run = tmp_path_factory.mktemp("early-stop") / "r"
    return train(RunConfig(**ES), run, progress=False), run


def test_early_stop_after_k_solved_validations(early_stopped):
    res, run = early_stopped
    assert res["stopped_early"] and res["steps"] < 400
    val = [json.loads(ln) for ln in (run / "metrics.jsonl").read_text().splitlines()
           if "val_solved" in ln]
    solved = [v["step"] for v in val if v["val_solved"]]
    assert res["first_solved_step"] == solved[0]
    # stopped at the second of two solved validations in a row, not before
    assert res["steps"] == solved[1] == solved[0] + 20 and val[-1]["step"] == res["steps"]
    assert (run / "best.pt").is_file() and res["best_step"] in solved
    assert res["solved"]  # the best validated weights are the ones evaluated
    never = train(RunConfig(**{**ES, "early_stop": 0}), None, progress=False,
                  evaluate_at_end=False)
    assert never["steps"] == 400 and not never["stopped_early"]
    assert never["first_solved_step"] == res["first_solved_step"]  # recorded all the same
    with pytest.raises(ConfigError, match="early_stop.*eval_every"):
        RunConfig(**{**ES, "eval_every": 0})


def test_early_stop_survives_a_resume(tmp_path, monkeypatch, early_stopped):
    full, _ = early_stopped  # the uninterrupted run
    kill = full["first_solved_step"] + 10  # between the two solved validations
    with monkeypatch.context() as m:
        _kill_at(m, kill)
        with pytest.raises(KeyboardInterrupt):
            train(RunConfig(**ES), tmp_path / "killed", progress=False)
    resumed = train(RunConfig(**ES), tmp_path / "killed", resume=True, progress=False)
    assert resumed["steps"] == full["steps"] and resumed["best_step"] == full["best_step"]
    assert resumed["evaluation"] == full["evaluation"]
    again = train(RunConfig(**ES), tmp_path / "killed", resume=True, progress=False)
    assert again["steps"] == full["steps"]  # a stopped run resumes to nothing more


def test_sweep_workers_give_the_same_rows(tmp_path):
    for sub in "abc":
        (tmp_path / sub).mkdir()
    one = run_sweep(_sweep_file(tmp_path / "a"), progress=False)
    two = run_sweep(_sweep_file(tmp_path / "b"), progress=False, workers=2)
    assert [r["id"] for r in two["rows"]] == [r["id"] for r in one["rows"]]
    assert [r["evaluation"] for r in two["rows"]] == [r["evaluation"] for r in one["rows"]]
    with pytest.raises(ConfigError, match="workers"):
        run_sweep(_sweep_file(tmp_path / "c"), progress=False, workers=-1)


def test_inference_gives_the_callers_threads_and_grad_mode_back():
    """``_util.inference`` (bench scripts whose main tests call): one thread and no gradients
    inside, the caller's settings afterwards, also after an exception."""
    import torch

    from monoidlab._util import inference

    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with inference():
            assert not torch.is_grad_enabled() and torch.get_num_threads() == 1
        assert torch.is_grad_enabled() and torch.get_num_threads() == 2
        with pytest.raises(KeyError), inference():
            raise KeyError("inside")
        assert torch.is_grad_enabled() and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(threads)


def test_the_trainer_says_its_plan_each_validation_and_each_restart(tmp_path, capsys):
    """With a progress bar, the trainer prints (on stderr, above the bar) the recipe's plan,
    then each validation (minimum per kind, passed or failed) and each restart as it happens;
    the bar's description names the attempt."""
    cfg = tiny_config(steps=6, restarts=1, eval_every=6, early_stop=1, val_lengths="9:10",
                      val_samples=4, test_lengths="9:10", test_samples=4)
    capsys.readouterr()
    train(cfg, tmp_path / "run", progress=True)
    err = capsys.readouterr().err
    lines = [x.strip() for x in err.replace("\r", "\n").splitlines() if x.strip()]
    said = [x for x in lines if x.startswith(("recipe ", "validation at step", "restart:",
                                               "no validation passed"))]
    assert said[0].startswith("recipe 'default': up to 2 attempts of 6 steps (12 in all), each "
                              "validated at its end on fresh strings of lengths 9:10")
    assert said[1].startswith("validation at step 6 (attempt 1 of 2): min paper ")
    assert said[1].endswith(("-> PASSED", "-> failed"))
    if said[1].endswith("failed"):  # then a restart and its validation
        assert said[2].startswith("restart: attempt 2 of 2, fresh weights and batches")
        assert said[3].startswith("validation at step 12 (attempt 2 of 2): min paper ")
    assert any("attempt 1 of 2" in x and "%" in x for x in lines)  # the bar names the attempt
    quiet = train(cfg, tmp_path / "quiet", progress=False)
    assert quiet["steps"] in (6, 12) and "recipe" not in capsys.readouterr().err
