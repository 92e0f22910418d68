"""The training commands: ``monoidlab train``, ``evaluate`` and ``sweep`` (tiny runs, CPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from monoidlab.cli import main
from monoidlab.evaluation.kinds import KINDS

CONFIGS = Path(__file__).resolve().parent.parent / "monoidlab" / "configs"
# the trainer's own defaults: these tests are about the command's mechanics, and the
# default for a language (the random-language benchmark's frozen recipe, tested in
# test_recipes.py) trains with restarts
TINY = ["--device=cpu", "--batch_size=16", "--train_lengths=1:8", "--test_samples=16",
        "--model_options.d=16", "--recipe=default"]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("monoidlab: error: "), err
    return lines[0]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One 3-step run shared by the evaluate tests: (run folder, its JSON result)."""
    out = tmp_path_factory.mktemp("cli") / "run"
    code = main(["train", "--language", "parity", "--model", "mlp-ldru", "--out", str(out),
                 "--steps=3", "--test_lengths=41:42", "--json", *TINY])
    assert code == 0
    return out, json.loads((out / "results.json").read_text())


def test_train_json(capsys, tmp_path):
    out = tmp_path / "run"
    code, stdout, _ = run(capsys, "train", "--language", "parity", "--model", "mlp-ldru",
                          "--out", out, "--steps=3", "--test_lengths=41:42", "--json", *TINY)
    assert code == 0
    res = json.loads(stdout)
    assert res["steps"] == 3 and res["model"] == "mlp-ldru" and res["problem"] == "parity"
    assert set(res["accuracy"]) == set(KINDS)
    assert all(set(per) == {"41", "42"} for per in res["accuracy"].values())
    mins = [min(per.values()) for per in res["accuracy"].values()]
    assert res["solved"] is (min(mins) >= 0.99)  # strict: every length of every kind
    bal = res["accuracy"]["paper"]
    assert res["paper_score"] == pytest.approx(sum(bal.values()) / 2)
    assert res["verdict"].startswith("solved" if res["solved"] else "not solved")
    assert {"checkpoint.pt", "metrics.jsonl", "config.json", "results.json"} <= \
        {p.name for p in out.iterdir()}
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["test_lengths"] == "41:42" and cfg["model_options"]["d"] == 16


def test_train_text_output(capsys, tmp_path):
    code, stdout, _ = run(capsys, "train", "--language", "parity", "--model", "pr-lstm",
                          "--steps", "2", "--test_lengths=9", "--out", tmp_path / "r",
                          "--device=cpu", "--batch_size=8", "--model_options.hidden=8")
    assert code == 0
    assert "pr-lstm on parity: 2 steps" in stdout
    assert "paper_score" in stdout and "solved" in stdout.splitlines()[-2]
    for kind in ("paper", "near_miss", "ec_stratified"):  # one summary row per kind
        assert any(line.split()[:1] == [kind] for line in stdout.splitlines())
    assert f"checkpoint: {tmp_path / 'r'}/checkpoint.pt" in stdout


def test_evaluate_json(capsys, trained):
    out, res = trained
    code, stdout, _ = run(capsys, "evaluate", out, "--lengths", "41:43", "--json")
    assert code == 0
    data = json.loads(stdout)
    assert data["kinds"] == list(KINDS)
    assert all(list(data["accuracy"][k]) == ["41", "42", "43"] for k in data["kinds"])
    bal = data["accuracy"]["paper"]
    assert data["paper_score"] == pytest.approx(sum(bal.values()) / 3)
    worst = min(min(per.values()) for per in data["accuracy"].values())
    assert data["solved"] == (worst >= data["threshold"]) and data["threshold"] == 0.99
    # every accuracy comes with its baselines on the same strings
    assert set(data["majority"]["near_miss"]) == set(data["count_only"]["near_miss"]) == set(bal)
    # same seeded test sets as the run's own final evaluation
    for k in data["kinds"]:
        assert {L: data["accuracy"][k][L] for L in ("41", "42")} == res["accuracy"][k]
    code, again, _ = run(capsys, "evaluate", out / "checkpoint.pt", "--lengths", "41:43",
                         "--json")
    assert json.loads(again)["accuracy"] == data["accuracy"]


def test_evaluate_on_a_fresh_test_set(capsys, trained):
    """--test-seed draws the test strings from another seed: the result is evaluate_kinds'
    on that seed (accuracies and baselines), and the seed is reported; without it, the
    config's seed."""
    import torch

    from monoidlab.training import evaluate_kinds, load_checkpoint

    out, _ = trained
    code, stdout, _ = run(capsys, "evaluate", out, "--lengths", "41:46", "--json")
    assert code == 0 and json.loads(stdout)["test_seed"] == 0
    code, stdout, _ = run(capsys, "evaluate", out, "--lengths", "41:46", "--test-seed", "7",
                          "--json")
    assert code == 0
    data = json.loads(stdout)
    model, cfg, problem, _ = load_checkpoint(out, torch.device("cpu"))
    with torch.no_grad():
        want = json.loads(json.dumps(  # the JSON output has string keys
            evaluate_kinds(model.eval(), problem, "41:46", cfg.test_samples, 7).as_dict()))
    assert data["test_seed"] == 7
    for key in ("accuracy", "majority", "count_only", "class_mix"):
        assert data[key] == want[key], key


def test_evaluate_table(capsys, trained):
    """The table shows the JSON's accuracies and baselines per length, its score and verdict."""
    out, _ = trained
    code, stdout, _ = run(capsys, "evaluate", out, "--samples", "8", "--lengths", "41:43")
    assert code == 0
    data = json.loads(run(capsys, "evaluate", out, "--samples", "8", "--lengths", "41:43",
                          "--json")[1])
    lines = stdout.splitlines()
    # first the weights and the test set scored, the sampled coverage of the run's training
    # strings by level, then the table
    assert lines[0].startswith("weights: ") and lines[0] == data["weights"]["text"]
    assert lines[1].startswith("test set: lengths 41:43 (3 lengths), 8 strings per length")
    assert lines[3].startswith("sampled coverage of ") and "level any" in stdout
    assert data["training_coverage"]["sampled"]["rows"][-1]["level"] == "any"
    lines = lines[lines.index(next(x for x in lines if x.startswith("length"))):]
    assert lines[0].split()[:3] == ["length", "paper", "paper"]
    assert "near_miss majority" in lines[0]
    # one row per length: each kind's accuracy (as the JSON has it), then its majority baseline
    for line, L in zip(lines[2:5], ("41", "42", "43")):
        cells = line.split()
        assert cells[0] == L
        assert cells[1::2] == [f"{data['accuracy'][k][L]:.3f}" for k in data["kinds"]]
        assert cells[2::2] == [f"{data['majority'][k][L]:.3f}" for k in data["kinds"]]
    assert (f"paper_score (the papers' mean over lengths of the paper kind) "
            f"{data['paper_score']:.4f}") in lines
    # 3 of the run's lengths, 8 strings: a partial check, never 'solved'
    assert data["solved"] is None and "8 strings per length and kind" in data["partial"]
    assert lines[-1] == data["verdict"] and lines[-1].startswith(
        "PARTIAL CHECK, not the strict verdict")


def test_train_from_a_config_file_with_overrides(capsys, tmp_path):
    code, stdout, _ = run(capsys, "train", "--config", CONFIGS / "parity-mlp-ldru.toml",
                          "--steps=2", "--test_lengths=41", "--out", tmp_path / "r", "--json",
                          "--batch_size=8", "--device=cpu")
    assert code == 0 and json.loads(stdout)["steps"] == 2
    cfg = json.loads((tmp_path / "r" / "config.json").read_text())
    file_cfg = __import__("monoidlab.training", fromlist=["load_config"]).load_config(
        CONFIGS / "parity-mlp-ldru.toml").as_dict()
    changed = {k for k in cfg if cfg[k] != file_cfg[k]}
    assert changed == {"steps", "test_lengths", "batch_size", "device"}


def test_resume_from_the_cli(capsys, tmp_path):
    args = ["train", "--language", "parity", "--out", tmp_path / "r", "--steps=4",
            "--test_lengths=9", "--json", "--checkpoint_every=2", *TINY]
    assert run(capsys, *args)[0] == 0
    first = json.loads((tmp_path / "r" / "results.json").read_text())
    code, stdout, _ = run(capsys, *args, "--resume")
    assert code == 0 and json.loads(stdout)["accuracy"] == first["accuracy"]
    code, _, err = run(capsys, *args, "--resume", "--lr=0.01")
    assert code == 2 and "config differs" in one_line_error(err) and "lr" in err


def test_train_until_pauses_and_resume_continues(capsys, tmp_path):
    args = ["train", "--language", "parity", "--out", tmp_path / "r", "--steps=6",
            "--test_lengths=9", "--checkpoint_every=2", *TINY]
    code, stdout, _ = run(capsys, *args, "--until", "4")
    assert code == 0 and "paused before step 4" in stdout
    assert not (tmp_path / "r" / "results.json").exists()
    code, stdout, _ = run(capsys, *args, "--resume", "--json")
    assert code == 0 and json.loads(stdout)["steps"] == 6
    code, _, err = run(capsys, "train", "--language", "parity", "--until", "4", *TINY)
    assert code == 2 and "--until" in one_line_error(err) and "--out" in err


@pytest.mark.parametrize("extra, needle", [
    (["--stepz=3"], "unknown key 'stepz'"),
    (["--lr=abc"], "key 'lr'"),
    (["--model_options.dd=8"], "key 'model_options'"),
    (["--optimizer=sgd"], "key 'optimizer'"),
    (["--test_lengths=9:2"], "key 'test_lengths'"),
    (["--steps", "0"], "key 'steps'"),
    (["--model", "gpt"], "unknown model 'gpt'"),
    (["--lr", "0.1"], "look like --key=value (here: --lr=0.1)"),
    (["--lr"], "unrecognised argument(s) ['--lr']"),
    (["--config", "/nonexistent/run.toml"], "cannot read"),
])
def test_bad_train_arguments_exit_2_with_one_line(capsys, tmp_path, extra, needle):
    code, stdout, err = run(capsys, "train", "--language", "parity", "--steps=3",
                            "--out", tmp_path / "r", *extra)
    assert code == 2 and stdout == ""
    assert needle in one_line_error(err)
    assert not (tmp_path / "r" / "checkpoint.pt").exists()


def test_train_needs_a_problem(capsys):
    code, _, err = run(capsys, "train", "--steps=3")
    assert code == 2 and "exactly one of 'language' or 'task'" in one_line_error(err)


def test_evaluate_errors(capsys, tmp_path, trained):
    code, _, err = run(capsys, "evaluate", tmp_path / "none")
    assert code == 2 and "no checkpoint" in one_line_error(err)
    code, _, err = run(capsys, "evaluate", trained[0], "--lengths", "x:y")
    assert code == 2 and "--lengths" in one_line_error(err)


def test_sweep_json(capsys, tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(f"""[sweep]
languages = ["parity"]
models = ["mlp-ldru", "pr-lstm"]
out = "{(tmp_path / 'out').as_posix()}"
[base]
device = "cpu"
steps = 2
batch_size = 8
test_lengths = "9:10"
test_samples = 8
[models.mlp-ldru]
model_options = {{ d = 8 }}
[models.pr-lstm]
model_options = {{ hidden = 8 }}
""")
    code, stdout, _ = run(capsys, "sweep", f, "--json")
    assert code == 0
    data = json.loads(stdout)
    assert [r["model"] for r in data["rows"]] == ["mlp-ldru", "pr-lstm"]
    assert set(data["solved"]) == {"mlp-ldru", "pr-lstm"}
    assert (tmp_path / "out" / "results.csv").is_file()
    code, stdout, _ = run(capsys, "sweep", f)  # rerun: nothing trained, the table again
    assert code == 0 and "| parity |" in stdout and "results.csv" in stdout
    f.write_text("[sweep]\nmodels = []\n")
    code, _, err = run(capsys, "sweep", f)
    assert code == 2 and "s.toml" in one_line_error(err)


def test_installed_entry_point(tmp_path):
    exe = Path(sys.executable).with_name("monoidlab")
    if not exe.exists():
        pytest.skip("the monoidlab entry point is not installed (pip install -e .)")
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    done = subprocess.run([str(exe), "train", "--language", "parity", "--model", "mlp-ldru",
                           "--out", str(tmp_path / "r"), "--steps=3", "--test_lengths=41:42",
                           "--json", *TINY, "--threads=1"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert set(json.loads(done.stdout)["accuracy"]["paper"]) == {"41", "42"}


def test_train_help_lists_every_config_key(capsys):
    """`monoidlab train --help` names every RunConfig key as --KEY=DEFAULT with its type and
    meaning, and the model names."""
    import dataclasses

    from monoidlab.models import REGISTRY
    from monoidlab.training.config import RunConfig
    from monoidlab.training.config_docs import config_keys

    with pytest.raises(SystemExit) as done:
        main(["train", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    flat = " ".join(out.split())  # meanings are wrapped over lines
    keys = [f.name for f in dataclasses.fields(RunConfig) if not f.metadata.get("internal")]
    assert [r["key"] for r in config_keys() if r["key"] != "offset_buffer"] == keys
    for row in config_keys():
        assert f"--{row['key']}={row['default']} ({row['type']}) " in flat, row["key"]
        assert " ".join(row["meaning"].replace("`", "").split()) in flat, row["key"]
    assert "--steps=1000 (integer) optimiser steps" in flat
    assert "--sampler=balanced (text) training strings" in flat
    assert "--train_lengths=1:40 (lengths)" in flat and "--bf16=true (true/false)" in flat
    assert all(name in out for name in REGISTRY)
    assert "--model_options.d=32" in out


def test_config_keys_have_meanings_and_true_defaults():
    import dataclasses

    from monoidlab.training.config import RunConfig
    from monoidlab.training.config_docs import config_keys

    fields = {f.name: f for f in dataclasses.fields(RunConfig)}
    for row in config_keys():
        assert len(row["meaning"]) > 10 and "\n" not in row["meaning"], row["key"]
        assert row["section"] in ("problem", "model", "data", "optimisation", "evaluation",
                                  "run"), row["key"]
        if row["key"] == "offset_buffer":  # beside offsets in files, one value in memory
            assert RunConfig(language="parity").offsets.buffer is None
            continue
        value = fields[row["key"]].default
        assert row["default"] == ("none" if value is None else
                                  str(value).lower() if isinstance(value, bool) else
                                  "{}" if value == {} else getattr(value, "mode", str(value))
                                  ), row["key"]


def test_training_md_config_table_is_fresh():
    """docs/training.md's table of config keys is generated from RunConfig; regenerate it
    when a key, default or meaning changes."""
    from monoidlab.training.config_docs import config_table_markdown

    doc = (Path(__file__).resolve().parent.parent / "docs" / "training.md").read_text()
    start = doc.index("<!-- config keys:")
    start = doc.index("-->\n", start) + len("-->\n")
    end = doc.index("<!-- end config keys -->", start)
    assert doc[start:end] == config_table_markdown() + "\n", (
        "docs/training.md's config table is stale: python -c \"from monoidlab.training.config_docs "
        "import config_table_markdown as t; print(t())\" and paste it between the markers")


def test_api_errors_name_arguments_and_the_cli_names_its_options(capsys, tmp_path):
    """The API speaks of resume=True / overwrite=True / out_dir; the same error on the command
    line says --resume / --overwrite / --out."""
    from monoidlab.errors import RunExists
    from monoidlab.training import RunConfig, train

    args = ["train", "--language", "parity", "--out", tmp_path / "r", "--steps=2",
            "--test_lengths=9", *TINY]
    assert run(capsys, *args)[0] == 0
    with pytest.raises(RunExists) as info:
        train(RunConfig(language="parity", steps=2), tmp_path / "r", progress=False)
    assert "resume=True" in str(info.value) and "--resume" not in str(info.value)
    code, _, err = run(capsys, *args)
    line = one_line_error(err)
    assert code == 2 and "--resume" in line and "--overwrite" in line and "resume=True" not in line


def test_resume_alone_continues_the_run_with_its_own_config(capsys, tmp_path):
    args = ["train", "--language", "parity", "--out", tmp_path / "r", "--steps=6",
            "--test_lengths=9", "--checkpoint_every=2", *TINY]
    assert run(capsys, *args, "--until", "4")[0] == 0
    code, stdout, _ = run(capsys, "train", "--out", tmp_path / "r", "--resume", "--json")
    assert code == 0 and json.loads(stdout)["steps"] == 6
    code, _, err = run(capsys, "train", "--out", tmp_path / "r", "--resume", "--lr=0.5")
    assert code == 2 and "config differs" in one_line_error(err) and "lr" in err
