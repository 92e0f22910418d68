"""Text classification (monoidlab.tasks.text, .tokenize, .text_sample and
monoidlab.training.problems.TextProblem): the readers on the layouts of AG's News, DBPedia and
SST-2, the tokenizers, the errors for missing and malformed files, training through
`monoidlab train` and bit-identical resume."""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from monoidlab.cli import main
from monoidlab.errors import ConfigError, InputError
from monoidlab.evaluation import evaluate_kinds
from monoidlab.evaluation.baselines import length_baseline, majority_baseline
from monoidlab.tasks import get_task
from monoidlab.tasks.text import LAYOUTS, read_csv_rows, read_tsv_rows
from monoidlab.tasks.text_sample import keywords, sample_rows, write_sample
from monoidlab.tasks.tokenize import Tokenizer, windows
from monoidlab.training import RunConfig
from monoidlab.training.problems import make_problem


@pytest.fixture(scope="module")
def ag_folder(tmp_path_factory):
    return write_sample(tmp_path_factory.mktemp("ag"), "ag_news", rows=800, seed=0)


# ------------------------------------------------------------------------------ readers
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_readers_read_the_sample_files_as_the_raw_layout_says(tmp_path, layout):
    lay = LAYOUTS[layout]
    folder = write_sample(tmp_path, layout, rows=120, test_rows=30, seed=3)
    assert sorted(p.name for p in folder.iterdir()) == sorted([lay.train, lay.test])
    raw = (folder / lay.train).read_text(encoding="utf-8")
    if lay.format == "csv":
        labels, texts = read_csv_rows(folder / lay.train, len(lay.classes))
        rows = list(csv.reader(raw.splitlines()))  # an independent parse of the raw file
        assert all(len(r) == 3 for r in rows) and raw.startswith('"')  # every field quoted
        assert labels.tolist() == [int(r[0]) - 1 for r in rows]  # 1-based in the file
        assert {int(r[0]) for r in rows} <= set(range(1, len(lay.classes) + 1))
        assert '""' in raw and any('"' in t for t in texts)  # "" escapes read back as "
        assert texts == [f"{r[1]} {r[2]}" for r in rows]
    else:
        labels, texts = read_tsv_rows(folder / lay.train, len(lay.classes))
        lines = raw.splitlines()
        assert lines[0] == "sentence\tlabel"
        assert labels.tolist() == [int(ln.split("\t")[1]) for ln in lines[1:]]
        assert texts == [ln.split("\t")[0].strip() for ln in lines[1:]]
    assert len(labels) == len(texts) == 120
    assert labels.min() >= 0 and labels.max() < len(lay.classes)
    # the files hold the generator's rows: the class is the one whose keywords occur most
    gen_labels, _ = sample_rows(layout, 120, seed=6)
    assert gen_labels.tolist() == labels.tolist()
    assert (_keyword_rule(layout, texts) == labels).all()


def test_text_sample_command_writes_the_layout_and_names_its_files(tmp_path, capsys):
    folder = tmp_path / "glue"
    assert main(["text-sample", str(folder), "--layout", "sst2", "--rows", "30", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["files"] == [str(folder / "train.tsv"), str(folder / "dev.tsv")]
    assert len(read_tsv_rows(folder / "train.tsv", 2)[0]) == 30
    assert len(read_tsv_rows(folder / "dev.tsv", 2)[0]) == 15
    assert main(["text-sample", str(folder), "--rows", "0"]) == 2  # one line, no traceback
    assert "--rows must be >= 1" in capsys.readouterr().err


def test_csv_reader_handles_quoting_commas_and_newlines_inside_fields(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text('"3","Title, with a comma","He said ""hi""\nand left"\n'
                 '"1","plain","text"\n', encoding="utf-8")
    labels, texts = read_csv_rows(p, 4)
    assert labels.tolist() == [2, 0]
    assert texts == ['Title, with a comma He said "hi"\nand left', "plain text"]


def test_tsv_reader_takes_the_columns_from_the_header(tmp_path):
    p = tmp_path / "swapped.tsv"
    p.write_text("label\tsentence\n1\ta warm film \n0\tdull\n", encoding="utf-8")
    assert read_tsv_rows(p, 2)[0].tolist() == [1, 0]
    assert read_tsv_rows(p, 2)[1] == ["a warm film", "dull"]


@pytest.mark.parametrize("content, line, what", [
    ('"1","a","b"\n"2","only two"\n', 2, "expected 3 fields"),
    ('"1","a","b"\n"1","a","b"\n"5","a","b"\n', 3, "class 5 is outside 1..4"),
    ('"0","a","b"\n', 1, "class 0 is outside 1..4"),
    ('"class","title","text"\n"1","a","b"\n', 1, "is not an integer"),
    ('"1","a","b"\n"2","a "broken" quote","c"\n', 2, "bad CSV"),
])
def test_malformed_csv_rows_name_the_file_and_the_line(tmp_path, content, line, what):
    p = tmp_path / "bad.csv"
    p.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=re.escape(f"{p}, line {line}: ") + ".*" + what):
        read_csv_rows(p, 4)


@pytest.mark.parametrize("content, line, what", [
    ("sentence\tlabel\ngood\t1\nbad\n", 3, "expected 2 tab-separated fields"),
    ("sentence\tlabel\ngood\t2\n", 2, "class 2 is outside 0..1"),
    ("sentence\tlabel\ngood\tyes\n", 2, "label 'yes' is not an integer"),
    ("index\tsentence\n0\tan unlabelled test row\n", 1, "no 'label' column"),
])
def test_malformed_tsv_rows_name_the_file_and_the_line(tmp_path, content, line, what):
    p = tmp_path / "bad.tsv"
    p.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=re.escape(f"{p}, line {line}: ") + ".*" + what):
        read_tsv_rows(p, 2)


def test_training_on_an_unlabelled_glue_test_file_is_refused(tmp_path):
    folder = write_sample(tmp_path, "sst2", rows=20)
    (folder / "test.tsv").write_text("index\tsentence\n0\ta film\n", encoding="utf-8")
    task = get_task("sst2", data=str(folder), train_file="test.tsv")
    with pytest.raises(InputError, match="test.tsv, line 1: no 'label' column.*train.tsv"):
        task.sample(0, 2, 8)


# ------------------------------------------------------------------------------ missing files
def test_a_missing_file_is_one_error_naming_the_path_and_the_source(tmp_path, capsys):
    where = tmp_path / "nowhere"
    task = get_task("ag_news", data=str(where))  # making the task reads nothing
    with pytest.raises(InputError) as exc:
        task.check_files()
    msg = str(exc.value)
    assert f"no file {where / 'train.csv'}" in msg and LAYOUTS["ag_news"].url in msg
    assert main(["train", "--task", "ag_news", "--data", str(where), "--steps", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(where / "train.csv") in err
    # the default folder, relative to the working directory
    assert get_task("sst2").train_path == Path("data/SST-2/train.tsv")
    # the test file is checked too, before any training
    write_sample(tmp_path / "half", "dbpedia", rows=30)
    (tmp_path / "half" / "test.csv").unlink()
    with pytest.raises(InputError, match=re.escape(f"no file {tmp_path / 'half' / 'test.csv'}")):
        make_problem(RunConfig(task="dbpedia", model="lstm",
                               task_options={"data": str(tmp_path / "half")}))


# ------------------------------------------------------------------------------ tokenizers
def test_tokenizers_round_trip():
    rng = np.random.default_rng(0)
    texts = ["Héllo, wörld! 3 × 4", "tab\there", ""] + [
        "".join(chr(int(c)) for c in rng.integers(32, 0x2FF, 30)) for _ in range(20)]
    byte = Tokenizer.for_bytes()
    for t in texts:
        ids = byte.encode(t)
        assert ids.tolist() == [b + 1 for b in t.encode("utf-8")] and byte.decode(ids) == t
    char = Tokenizer.fit(texts, "char")
    word = Tokenizer.fit(texts, "word")
    for t in texts:
        assert char.decode(char.encode(t)) == t  # every char of the fitted texts is known
        assert word.decode(word.encode(t)) == " ".join(re.findall(r"\w+|[^\w\s]", t.lower()))
        assert 1 not in word.encode(t).tolist()  # no <unk> on the texts it was fitted on
    assert word.encode("zzzunseen the").tolist()[0] == 1  # <unk>


def test_a_fitted_vocabulary_is_deterministic_and_ordered_by_count_then_symbol():
    texts = sample_rows("ag_news", 200, seed=2)[1]
    counts = Counter(w for t in texts for w in re.findall(r"\w+|[^\w\s]", t.lower()))
    tok = Tokenizer.fit(texts, "word", min_count=2, max_size=60)
    shuffled = [texts[i] for i in np.random.default_rng(1).permutation(len(texts))]
    assert Tokenizer.fit(shuffled, "word", min_count=2, max_size=60) == tok
    expect = sorted((w for w, c in counts.items() if c >= 2), key=lambda w: (-counts[w], w))
    assert tok.vocab == ("<pad>", "<unk>", *expect[:58])
    with pytest.raises(InputError, match="unknown tokenizer 'bpe'"):
        Tokenizer.fit(texts, "bpe")


def test_windows_keep_the_head_and_pad_on_the_left():
    rows = Tokenizer.for_bytes().encode_all(["abcdef", "xy", ""])
    w = windows(rows, np.array([0, 1, 2, 0]), 4)
    assert w.tolist() == [[98, 99, 100, 101], [0, 0, 121, 122], [0, 0, 0, 0],
                          [98, 99, 100, 101]]


# ------------------------------------------------------------------------------ the task
def test_validation_rows_are_held_out_disjoint_seeded_and_unseen_by_the_vocabulary(tmp_path):
    p = tmp_path / "train.csv"
    p.write_text("".join(f'"{1 + i % 4}","word{i}","shared"\n' for i in range(40)),
                 encoding="utf-8")
    (tmp_path / "test.csv").write_text('"1","t","shared"\n', encoding="utf-8")
    task = get_task("ag_news", data=str(tmp_path), validation=0.25, split_seed=7)
    labels, texts, held = task._train_rows
    assert held.sum() == 10 and len(task.split("validation")) == 10
    assert len(task.split("train")) == 30
    assert task.split("validation").labels.tolist() == labels[held].tolist()
    train_words = {texts[i].split()[0] for i in np.flatnonzero(~held)}
    # the vocabulary knows the training rows' words and none of the held-out rows'
    assert {w for w in task.tokenizer.vocab if w.startswith("word")} == train_words
    val = task.split("validation")
    assert (windows(val.rows, np.arange(10), 1) == 1).all()  # each starts with <unk>
    again = get_task("ag_news", data=str(tmp_path), validation=0.25, split_seed=7)
    other = get_task("ag_news", data=str(tmp_path), validation=0.25, split_seed=8)
    assert np.array_equal(again._train_rows[2], held)
    assert not np.array_equal(other._train_rows[2], held)


def test_a_test_set_reads_every_row_of_its_split_once_at_every_length(ag_folder):
    problem = make_problem(RunConfig(task="ag_news", model="lstm",
                                     task_options={"data": str(ag_folder)}))
    test = problem.task.split("test")
    for L in (8, 40):
        rng = problem.eval_rng(0, "test", L)
        seen = []
        while True:  # batches of 64 as the evaluation draws them, until the split is read
            b = problem.kind_batch(rng, L, 64, "test")
            if not len(b["lengths"]):
                break
            seen.append(b)
        tokens = np.concatenate([b["tokens"][:, :L] for b in seen])
        assert len(tokens) == len(test)
        expect = problem.task.rows("test", np.arange(len(test)), L).inputs
        assert sorted(map(tuple, tokens.tolist())) == sorted(map(tuple, expect.tolist()))
        assert np.concatenate([b["text_lengths"] for b in seen]).max() <= L


def test_the_sample_is_not_solved_by_length_majority_or_one_word():
    layout = "ag_news"
    labels, texts = sample_rows(layout, 4000, seed=9)
    assert (_keyword_rule(layout, texts) == labels).all()  # learnable: a function of the text
    tok = Tokenizer.fit(texts, "word")
    enc = tok.encode_all(texts)
    assert majority_baseline(labels) < 0.3
    assert length_baseline(enc.lens, labels) < 0.33  # the length tells little
    # the best rule "word w present -> class c, else the majority class" stays far from 1
    best = 0.0
    words = [set(re.findall(r"\w+", t.lower())) for t in texts]
    majority = np.bincount(labels).argmax()
    for w in {w for kw in keywords(layout) for w in kw}:
        has = np.array([w in s for s in words])
        for c in range(4):
            best = max(best, float(np.mean(np.where(has, c, majority) == labels)))
    assert best < 0.5


def test_a_model_that_cannot_serve_text_classification_is_refused(ag_folder):
    with pytest.raises(ConfigError, match="decoder-lm"):
        RunConfig(task="ag_news", model="decoder-lm", task_options={"data": str(ag_folder)})


# ------------------------------------------------------------------------------ training
_TRAIN = ["--train_lengths=40", "--test_lengths=40", "--batch_size=32", "--threads=1",
          "--test_samples=200", "--lr=3e-3", "--log_every=5"]
_MODELS = {"mlp-ldru": ["--model_options.d=32", "--model_options.dropout=0"],
           "lstm": ["--model_options.hidden=32"],
           "transformer": ["--model_options.d_model=32", "--model_options.n_layers=1"]}


def _train_cli(capsys, *args: str) -> dict:
    assert main(["train", *args, "--json"]) == 0
    out = capsys.readouterr().out
    return json.loads(out)


@pytest.mark.parametrize("model", sorted(_MODELS))
def test_each_model_beats_the_majority_baseline_through_monoidlab_train(
        ag_folder, tmp_path, capsys, model):
    res = _train_cli(capsys, "--task", "ag_news", "--data", str(ag_folder), "--model", model,
                     "--steps", "200", *_TRAIN, *_MODELS[model], "--out", str(tmp_path / "r"))
    ev = res["evaluation"]
    assert ev["kinds"] == ["test", "validation"]
    test = res["accuracy"]["test"]["40"] if "40" in res["accuracy"]["test"] else \
        res["accuracy"]["test"][40]
    majority = ev["majority"]["test"]
    majority = majority.get("40", majority.get(40))
    assert ev["length_only"]["test"]  # the length-only bound is reported beside it
    assert test > majority + 0.2, (model, test, majority)
    # monoidlab evaluate scores the same checkpoint the same way (200 rows = the whole split)
    assert main(["evaluate", str(tmp_path / "r"), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["accuracy"]["test"] == res["accuracy"]["test"]


def test_a_paused_text_run_resumes_bit_identically(ag_folder, tmp_path, capsys):
    args = ["--task", "ag_news", "--data", str(ag_folder), "--model", "transformer", "--steps",
            "16", *_TRAIN, "--model_options.d_model=16", "--model_options.n_layers=1",
            "--model_options.dropout=0.1", "--lr_schedule=cosine", "--warmup=0.25",
            "--task_options.tokenizer=byte", "--test_samples=50"]
    full = _train_cli(capsys, *args, "--out", str(tmp_path / "full"))
    paused = _train_cli(capsys, *args, "--out", str(tmp_path / "p"), "--until", "7")
    assert paused["paused"] and paused["steps"] == 7
    resumed = _train_cli(capsys, "--resume", "--out", str(tmp_path / "p"))
    a = torch.load(tmp_path / "full" / "checkpoint.pt", weights_only=True)
    b = torch.load(tmp_path / "p" / "checkpoint.pt", weights_only=True)
    assert a["step"] == b["step"] == 16
    for k in a["model"]:
        assert torch.equal(a["model"][k], b["model"][k]), k  # bit for bit
    for sa, sb in zip(a["optimizer"]["state"].values(), b["optimizer"]["state"].values()):
        assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert resumed["accuracy"] == full["accuracy"]
    metrics = [[{k: v for k, v in json.loads(x).items() if k not in ("elapsed_s", "cpu_s")}
                for x in (tmp_path / run / "metrics.jsonl").read_text().splitlines()]
               for run in ("full", "p")]
    assert metrics[0] == metrics[1] and [m["step"] for m in metrics[0]] == [5, 10, 15, 16]


def test_evaluate_kinds_scores_text_beside_majority_and_length_only(ag_folder):
    from monoidlab.models import build_model

    problem = make_problem(RunConfig(task="sst2", model="lstm", task_options={
        "data": str(write_sample(ag_folder.parent / "sst", "sst2", rows=100))}))
    model = build_model("lstm", problem.vocab_size, problem.n_classes, hidden=8)
    ev = evaluate_kinds(model, problem, [6, 30], n_per_length=1000, seed=0)
    assert ev.kinds == ("test", "validation") and sorted(ev.accuracy["test"]) == [6, 30]
    labels = problem.task.split("test").labels
    assert ev.majority["test"][6] == pytest.approx(majority_baseline(labels))
    lens = problem.task.split("test").rows.lens
    assert len(set(np.minimum(lens, 30).tolist())) > 5  # windows of 30 show the lengths
    for L in (6, 30):
        assert ev.baselines["length_only"]["test"][L] == pytest.approx(
            length_baseline(np.minimum(lens, L), labels))
    assert ev.baselines["length_only"]["test"][30] > ev.majority["test"][30]
    # a text has no symbol counts: no count_only column of "nan" in the tables
    assert [b.name for b in ev.shown_baselines()] == ["majority", "length_only"]
    from monoidlab.evaluation.text import evaluation_text

    assert "count_only" not in evaluation_text(ev) and "nan" not in evaluation_text(ev)


def _keyword_rule(layout: str, texts: list[str]) -> np.ndarray:
    """The class whose keywords occur most often in each text (the generator's rule)."""
    kw = keywords(layout)
    out = []
    for t in texts:
        words = Counter(re.findall(r"\w+", t.lower()))
        out.append(int(np.argmax([sum(words[w] for w in ws) for ws in kw])))
    return np.array(out)


def test_a_run_refuses_data_files_that_changed_since_it_trained(tmp_path, capsys):
    import shutil

    from monoidlab.errors import CheckpointError
    from monoidlab.training import load_checkpoint

    data = write_sample(tmp_path / "data", "sst2", rows=120, seed=1)
    args = ["--task", "sst2", "--data", str(data), "--model", "lstm", "--steps", "4",
            "--model_options.hidden=8", "--train_lengths=12", "--test_lengths=12",
            "--batch_size=8", "--threads=1", "--test_samples=20"]
    _train_cli(capsys, *args, "--out", str(tmp_path / "run"), "--until", "2")
    ckpt = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=True)
    assert set(ckpt["data_sha256"]) == {"train.tsv", "dev.tsv"}
    load_checkpoint(tmp_path / "run")  # unchanged files: loads
    original = (data / "train.tsv").read_text()
    shutil.copy(data / "train.tsv", tmp_path / "train.bak")
    # the same rows, two of them swapped: same vocabulary size, another word order
    lines = original.splitlines(keepends=True)
    lines[1], lines[2] = lines[2], lines[1]
    (data / "train.tsv").write_text("".join(lines))
    with pytest.raises(CheckpointError, match=r"train\.tsv is not the file this run was trained"):
        load_checkpoint(tmp_path / "run")
    assert main(["train", "--resume", "--out", str(tmp_path / "run")]) != 0  # one line, no trace
    err = capsys.readouterr().err
    assert "train.tsv is not the file this run was trained on" in err and "Traceback" not in err
    shutil.copy(tmp_path / "train.bak", data / "train.tsv")
    res = _train_cli(capsys, "--resume", "--out", str(tmp_path / "run"))  # restored: resumes
    assert res["steps"] == 4
