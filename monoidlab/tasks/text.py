"""Text classification: AG's News, DBPedia (CSV) and GLUE's SST-2 (TSV), read from local files.

Three tasks, one per layout, all classification on the Delétang tape (m = 1):

* ``ag_news`` (4 classes), ``data/ag_news_csv/train.csv`` and ``test.csv``; ``dbpedia`` (14),
  ``data/dbpedia_csv/``: CSV without a header, rows ``class, title, text``, the class 1-based,
  every field quoted with ``""`` escapes.
* ``sst2`` (2 classes), ``data/SST-2/train.tsv`` and ``dev.tsv`` (the test split: GLUE's
  ``test.tsv`` has no labels): TSV with the header ``sentence<TAB>label``, labels 0 / 1.

Nothing is downloaded: the files are where ``task_options.data`` (``monoidlab train --data
DIR``) says, by default the folder its download unpacks to under ``data/`` in the working
directory (``tar xzf ag_news_csv.tgz -C data``); a missing file is one
error naming the path expected and where to get it. ``monoidlab text-sample DIR --layout
ag_news`` (:mod:`monoidlab.tasks.text_sample`) writes a small synthetic data set of the same
layout.

**Splits.** ``train``: the training file less a held-out ``validation`` share of its rows
(chosen with ``split_seed``, disjoint); ``test``: the test file. Training strings are rows of
``train`` drawn uniformly with the batch's seed. The tokenizer (:mod:`monoidlab.tasks.tokenize`,
``byte`` / ``char`` / ``word``) is fitted on the ``train`` rows only.

**Length.** A "length" L is the reading window: the first L tokens of a text (truncation keeps
the head), left-padded with ``<pad>`` to L, then the empty token where the class is read. So
``train_lengths = "128"`` trains on 128-token windows and ``test_lengths = "128:512:128"`` asks
whether the model still classifies when it reads more of each text than it was trained on.

Examples:
    >>> import tempfile
    >>> from monoidlab.tasks.text_sample import write_sample
    >>> folder = write_sample(tempfile.mkdtemp(), "ag_news", rows=80, seed=0)
    >>> task = AGNews(data=folder)
    >>> b = task.sample(0, batch=4, length=16)
    >>> b.inputs.shape, b.targets.shape, task.n_classes, task.output_vocab[0]
    ((4, 16), (4, 1), 4, 'World')
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import ClassVar, TextIO

import numpy as np

from monoidlab.errors import InputError

from .base import Task, TaskBatch, register_task
from .tokenize import MODES, Ragged, Tokenizer, windows

__all__ = ["LAYOUTS", "DATA_ROOT", "Layout", "TextTask", "AGNews", "DBPedia", "SST2",
           "read_csv_rows", "read_tsv_rows", "SPLITS"]

#: where a text task looks for its folder when ``data`` is not given (relative to the cwd)
DATA_ROOT = "data"
SPLITS = ("train", "validation", "test")


@dataclass(frozen=True)
class Layout:
    """A data set's files: format (``csv`` or ``tsv``), file names, class names, source."""

    name: str
    title: str
    folder: str  # the folder its download unpacks to, under DATA_ROOT by default
    format: str
    train: str
    test: str
    classes: tuple[str, ...]
    url: str


LAYOUTS: dict[str, Layout] = {x.name: x for x in (
    Layout("ag_news", "AG's News", "ag_news_csv", "csv", "train.csv", "test.csv",
           ("World", "Sports", "Business", "Sci/Tech"),
           "https://s3.amazonaws.com/fast-ai-nlp/ag_news_csv.tgz"),
    Layout("dbpedia", "DBPedia", "dbpedia_csv", "csv", "train.csv", "test.csv",
           ("Company", "EducationalInstitution", "Artist", "Athlete", "OfficeHolder",
            "MeanOfTransportation", "Building", "NaturalPlace", "Village", "Animal", "Plant",
            "Album", "Film", "WrittenWork"),
           "https://s3.amazonaws.com/fast-ai-nlp/dbpedia_csv.tgz"),
    Layout("sst2", "GLUE SST-2", "SST-2", "tsv", "train.tsv", "dev.tsv", ("negative", "positive"),
           "https://dl.fbaipublicfiles.com/glue/data/SST-2.zip"),
)}


# ------------------------------------------------------------------------------ readers
def read_csv_rows(path: str | os.PathLike, n_classes: int) -> tuple[np.ndarray, list[str]]:
    """``(labels, texts)`` of an AG's News / DBPedia CSV: no header, rows ``class, title,
    text`` with the class 1-based (labels come back 0-based) and the text ``title + " " +
    text``. A malformed row is an error naming the file and the line.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
    >>> _ = p.write_text('"2","A ""quoted"" title","text, with a comma"\\n')
    >>> read_csv_rows(p, 4)
    (array([1]), ['A "quoted" title text, with a comma'])
    """
    path = Path(path)
    labels: list[int] = []
    texts: list[str] = []
    with _open(path) as fh:
        reader = csv.reader(fh, strict=True)
        try:
            for row in reader:
                if not row:  # a blank line (the files end with at most one)
                    continue
                where = f"{path}, line {reader.line_num}"
                if len(row) != 3:
                    raise InputError(f"{where}: expected 3 fields (class, title, text), got "
                                     f"{len(row)}")
                labels.append(_label(row[0], 1, n_classes, where))
                texts.append(f"{row[1].strip()} {row[2].strip()}".strip())
        except csv.Error as exc:
            raise InputError(f"{path}, line {reader.line_num}: bad CSV ({exc})") from None
        except UnicodeDecodeError as exc:
            raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})"
                             ) from None
    return _checked(path, labels, texts)


def read_tsv_rows(path: str | os.PathLike, n_classes: int) -> tuple[np.ndarray, list[str]]:
    """``(labels, texts)`` of a GLUE TSV (SST-2): a header naming the columns ``sentence`` and
    ``label`` (0-based), then one tab-separated row per line, unquoted. A file without a
    ``label`` column (GLUE's test.tsv) cannot train or score a model: an error says so.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.tsv"
    >>> _ = p.write_text("sentence\\tlabel\\na fine , warm film \\t1\\n")
    >>> read_tsv_rows(p, 2)
    (array([1]), ['a fine , warm film'])
    """
    path = Path(path)
    labels: list[int] = []
    texts: list[str] = []
    with _open(path) as fh:
        try:
            header = fh.readline().rstrip("\r\n").split("\t")
            if "sentence" not in header:
                raise InputError(f"{path}, line 1: the header {header} has no 'sentence' column "
                                 "(GLUE SST-2: 'sentence<TAB>label')")
            if "label" not in header:
                raise InputError(f"{path}, line 1: no 'label' column (header {header}): GLUE's "
                                 "test.tsv has no labels; train on train.tsv and test on dev.tsv")
            s, y = header.index("sentence"), header.index("label")
            for number, line in enumerate(fh, start=2):
                line = line.rstrip("\r\n")
                if not line:
                    continue
                row = line.split("\t")
                where = f"{path}, line {number}"
                if len(row) != len(header):
                    raise InputError(f"{where}: expected {len(header)} tab-separated fields "
                                     f"({', '.join(header)}), got {len(row)}")
                labels.append(_label(row[y], 0, n_classes, where))
                texts.append(row[s].strip())
        except UnicodeDecodeError as exc:
            raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})"
                             ) from None
    return _checked(path, labels, texts)


def _open(path: Path) -> TextIO:
    if not path.is_file():
        raise InputError(f"no file {path}")
    return open(path, encoding="utf-8", newline="")


def _label(text: str, first: int, n_classes: int, where: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise InputError(f"{where}: class {text[:40]!r} is not an integer (the first field is "
                         "the class index; these files have no header)" if first else
                         f"{where}: label {text[:40]!r} is not an integer") from None
    if not first <= value < first + n_classes:
        raise InputError(f"{where}: class {value} is outside {first}..{first + n_classes - 1}")
    return value - first


def _checked(path: Path, labels: list[int], texts: list[str]) -> tuple[np.ndarray, list[str]]:
    if not labels:
        raise InputError(f"{path}: no rows")
    return np.array(labels, np.int64), texts


# ------------------------------------------------------------------------------ the task
@dataclass(frozen=True, eq=False)
class Split:
    """One split, tokenized: its token rows and their labels."""

    rows: Ragged
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)


class TextTask(Task):
    """A text classification task on local files (a subclass per :class:`Layout`).

    Options: ``data`` (the folder; default ``data/`` and the folder the download unpacks to),
    ``tokenizer`` (``byte``, ``char``, ``word``), ``min_count`` and ``vocab_size`` (the fitted
    vocabulary: symbols seen at least ``min_count`` times, at most ``vocab_size`` ids with
    ``<pad>`` and ``<unk>``),
    ``validation`` (the share of training rows held out, in [0, 1)), ``split_seed`` (which
    rows), ``train_file`` / ``test_file`` (file names inside ``data``, default the layout's).
    The files are read on first use, not when the task is made.
    """

    level = "text"
    layout: ClassVar[Layout]

    def __init__(self, data: str | os.PathLike | None = None, tokenizer: str = "word",
                 min_count: int = 1, vocab_size: int = 20_000, validation: float = 0.1,
                 split_seed: int = 0, train_file: str | None = None,
                 test_file: str | None = None) -> None:
        if not hasattr(type(self), "layout"):
            raise InputError("TextTask is the base of the text tasks: make one of them "
                             "(get_task('ag_news'), 'dbpedia' or 'sst2')")
        if tokenizer not in MODES:
            raise InputError(f"task {self.name!r}: unknown tokenizer {tokenizer!r}; "
                             f"tokenizers: {', '.join(MODES)}")
        if isinstance(validation, bool) or not isinstance(validation, int | float) \
                or not 0 <= validation < 1:
            raise InputError(f"task {self.name!r}: validation must be a share in [0, 1), got "
                             f"{validation!r}")
        if isinstance(split_seed, bool) or not isinstance(split_seed, int) or split_seed < 0:
            raise InputError(f"task {self.name!r}: split_seed must be an integer >= 0, got "
                             f"{split_seed!r}")
        for key, value in (("data", data), ("train_file", train_file), ("test_file", test_file)):
            if value is not None and not isinstance(value, str | os.PathLike):
                raise InputError(f"task {self.name!r}: {key} must be a path, got {value!r}")
        Tokenizer.fit([], "byte", min_count, vocab_size)  # checks the two counts, reads nothing
        self.folder = Path(data) if data else Path(DATA_ROOT) / self.layout.folder
        self.tokenizer_mode, self.min_count, self.vocab_size = tokenizer, min_count, vocab_size
        self.validation, self.split_seed = float(validation), split_seed
        self.train_path = self.folder / (train_file or self.layout.train)
        self.test_path = self.folder / (test_file or self.layout.test)
        self.output_vocab = list(self.layout.classes)

    # -- files ---------------------------------------------------------------------------
    def check_files(self) -> None:
        """Raise one error naming the first file that is missing (before any training)."""
        for path in (self.train_path, self.test_path):
            if not path.is_file():
                lay = self.layout
                raise InputError(
                    f"{lay.title} ({self.name}): no file {path}. Download {lay.url}, unpack it "
                    f"and put {lay.train} and {lay.test} in {self.folder}, or point "
                    f"task_options.data (monoidlab train --data DIR) at the folder holding "
                    f"them; 'monoidlab text-sample {self.folder} --layout {self.name}' writes "
                    "a small synthetic one (docs/text.md)")

    def _read(self, path: Path) -> tuple[np.ndarray, list[str]]:
        self.check_files()
        read = read_csv_rows if self.layout.format == "csv" else read_tsv_rows
        return read(path, self.n_classes)

    @cached_property
    def _train_rows(self) -> tuple[np.ndarray, list[str], np.ndarray]:
        """The training file's labels and texts, and which rows are held out (a bool mask)."""
        labels, texts = self._read(self.train_path)
        n = len(labels)
        k = int(round(self.validation * n)) if self.validation else 0
        k = min(max(k, 1 if self.validation else 0), n - 1)  # both sides keep a row
        held = np.zeros(n, bool)
        held[np.random.default_rng([self.split_seed, 1]).permutation(n)[:k]] = True
        return labels, texts, held

    @cached_property
    def tokenizer(self) -> Tokenizer:
        """The tokenizer, fitted on the ``train`` rows (``byte``: nothing to fit)."""
        if self.tokenizer_mode == "byte":
            return Tokenizer.for_bytes()
        _, texts, held = self._train_rows
        return Tokenizer.fit((t for t, h in zip(texts, held) if not h), self.tokenizer_mode,
                             self.min_count, self.vocab_size)

    @property
    def input_vocab(self) -> list[str]:
        return list(self.tokenizer.vocab)

    @input_vocab.setter
    def input_vocab(self, value: list[str]) -> None:  # Task declares a settable attribute
        raise InputError(f"task {self.name!r}: the vocabulary is the tokenizer's (fitted on the "
                         "training file); set the task options tokenizer, min_count, vocab_size")

    def split(self, name: str) -> Split:
        """The ``train``, ``validation`` or ``test`` split, tokenized (cached)."""
        if name not in SPLITS:
            raise InputError(f"unknown split {name!r}; splits: {', '.join(SPLITS)}")
        cache = self.__dict__.setdefault("_splits", {})
        if name not in cache:
            if name == "test":
                labels, texts = self._read(self.test_path)
            else:
                all_labels, all_texts, held = self._train_rows
                keep = held if name == "validation" else ~held
                labels = all_labels[keep]
                texts = [t for t, k in zip(all_texts, keep) if k]
            cache[name] = Split(self.tokenizer.encode_all(texts), labels)
        return cache[name]

    # -- sampling ------------------------------------------------------------------------
    def rows(self, name: str, index: np.ndarray, length: int) -> TaskBatch:
        """The rows ``index`` of split ``name`` in windows of ``length`` tokens."""
        s = self.split(name)
        index = np.asarray(index, np.int64)
        return self._batch(windows(s.rows, index, length), s.labels[index][:, None])

    def _sample(self, rng: np.random.Generator, batch: int, length: int) -> TaskBatch:
        train = self.split("train")
        return self.rows("train", rng.integers(0, len(train), batch), length)

    def label(self, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise InputError(f"task {self.name!r}: a text's class comes from its file, not from "
                         "its tokens (no standalone labeller)")

    def __repr__(self) -> str:  # the vocabulary may hold thousands of words: its size only
        return (f"{type(self).__name__}(data={str(self.folder)!r}, "
                f"tokenizer={self.tokenizer_mode!r}, n_classes={self.n_classes})")

    def decode_text(self, ids: np.ndarray) -> str:
        """The text of one window (padding dropped)."""
        return self.tokenizer.decode(ids)


@register_task
class AGNews(TextTask):
    """AG's News topics (4 classes) from ``data/ag_news_csv/{train,test}.csv``."""

    name = "ag_news"
    layout = LAYOUTS["ag_news"]


@register_task
class DBPedia(TextTask):
    """DBPedia ontology classes (14) from ``data/dbpedia_csv/{train,test}.csv``."""

    name = "dbpedia"
    layout = LAYOUTS["dbpedia"]


@register_task
class SST2(TextTask):
    """GLUE SST-2 sentiment (2 classes) from ``data/SST-2/train.tsv`` and ``dev.tsv``."""

    name = "sst2"
    layout = LAYOUTS["sst2"]
