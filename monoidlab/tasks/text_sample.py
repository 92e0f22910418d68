"""Synthetic text data sets in the layouts of AG's News, DBPedia and GLUE SST-2, for tests and
first runs where the real files cannot be downloaded.

Every class has a few keywords (pseudo-words built from the same syllables as every other
word). A row is filler words with two occurrences of keywords of its class and up to two
*distractors*, one keyword each of other classes: the class is the one whose keywords occur
most often. So the label is a function of the text, learnable by counting keywords, but not by
the text's length (drawn independently of the class), not by any single byte (every word uses
the same letters) and not by the presence of any one word (distractors put keywords in rows of
other classes). Titles and texts carry commas and double-quoted phrases, so the CSV files
exercise the quoting of the real ones.

Example:
    >>> import tempfile
    >>> folder = write_sample(tempfile.mkdtemp(), "sst2", rows=20, seed=1)
    >>> sorted(p.name for p in folder.iterdir())
    ['dev.tsv', 'train.tsv']
    >>> labels, texts = sample_rows("ag_news", 3, seed=0)
    >>> labels.tolist(), len(texts)
    ([0, 3, 2], 3)
"""

from __future__ import annotations

import csv
import io
import os
from functools import cache, lru_cache
from pathlib import Path

import numpy as np

from monoidlab._checks import check_count, check_seed
from monoidlab._paths import ensure_dir
from monoidlab._suggest import known_choices
from monoidlab._util import atomic_write_text
from monoidlab.errors import UnknownName

from .text import LAYOUTS, Layout

__all__ = ["write_sample", "sample_rows", "keywords"]

_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"
_KEYWORDS_PER_CLASS = 5
_FILLER_WORDS = 150


@cache
def _lexicon(n_classes: int) -> tuple[tuple[tuple[str, ...], ...], tuple[str, ...]]:
    """Keywords per class and filler words: distinct pseudo-words of 2-3 syllables, fixed for
    a number of classes (the same words whatever the rows' seed)."""
    rng = np.random.default_rng([20_260, n_classes])
    need = n_classes * _KEYWORDS_PER_CLASS + _FILLER_WORDS
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < need:
        k = int(rng.integers(2, 4))
        w = "".join(_CONSONANTS[int(rng.integers(len(_CONSONANTS)))]
                    + _VOWELS[int(rng.integers(len(_VOWELS)))] for _ in range(k))
        if w not in seen:
            seen.add(w)
            words.append(w)
    kw = tuple(tuple(words[c * _KEYWORDS_PER_CLASS:(c + 1) * _KEYWORDS_PER_CLASS])
               for c in range(n_classes))
    return kw, tuple(words[n_classes * _KEYWORDS_PER_CLASS:])


def keywords(layout: str) -> tuple[tuple[str, ...], ...]:
    """The keywords of each class of a layout's synthetic data (class order of the layout).

    >>> len(keywords("dbpedia")), len(keywords("sst2")[0])
    (14, 5)
    """
    return _lexicon(len(_layout(layout).classes))[0]


def _layout(name: str) -> Layout:
    if name not in LAYOUTS:
        raise UnknownName(f"unknown text layout {name!r}" + known_choices(name, LAYOUTS,
                                                                          "layouts"))
    return LAYOUTS[name]


def _row(rng: np.random.Generator, label: int, kw: tuple, filler: tuple, n_words: int,
         n_classes: int) -> list[str]:
    """The words of one row: filler, two keywords of ``label``, 0-2 distractors."""
    words = [filler[int(i)] for i in rng.integers(0, len(filler), n_words)]
    others = [c for c in range(n_classes) if c != label]
    n_distract = int(rng.integers(0, min(2, len(others)) + 1))
    distract = rng.choice(others, n_distract, replace=False).tolist() if n_distract else []
    inserts = [kw[label][int(rng.integers(_KEYWORDS_PER_CLASS))] for _ in range(2)]
    inserts += [kw[c][int(rng.integers(_KEYWORDS_PER_CLASS))] for c in distract]
    slots = np.sort(rng.choice(n_words, len(inserts), replace=False))
    for slot, w in zip(slots, rng.permutation(np.array(inserts, dtype=object))):
        words[int(slot)] = str(w)  # replaces filler: the length stays independent of the class
    return words


def _punctuate(rng: np.random.Generator, words: list[str]) -> str:
    """Words joined with a comma or two and, in one row of three, a double-quoted phrase."""
    out = list(words)
    for i in rng.choice(max(1, len(out) - 1), min(2, len(out) - 1), replace=False):
        out[int(i)] += ","
    if len(out) > 3 and rng.random() < 1 / 3:
        i = int(rng.integers(0, len(out) - 2))
        out[i], out[i + 1] = '"' + out[i], out[i + 1].rstrip(",") + '"'
    text = " ".join(out)
    return text[0].upper() + text[1:]


def sample_rows(layout: str, rows: int, seed: int = 0) -> tuple[np.ndarray, list[str]]:
    """``(labels, texts)`` of ``rows`` synthetic rows (classes uniform; a CSV layout's text
    is ``title + " " + text``, as :func:`~monoidlab.tasks.text.read_csv_rows` joins them)."""
    labels, fields = _labels_and_fields(layout, rows, seed)
    return labels.copy(), [" ".join(f) for f in fields]


@lru_cache(maxsize=8)
def _labels_and_fields(layout: str, rows: int, seed: int) -> tuple[np.ndarray, list[tuple]]:
    lay = _layout(layout)
    rows = check_count(rows, "rows")
    seed = check_seed(seed, "seed", none=False)
    n = len(lay.classes)
    kw, filler = _lexicon(n)
    rng = np.random.default_rng([seed, 5_150])
    labels = rng.integers(0, n, rows)
    fields: list[tuple] = []
    for y in labels.tolist():
        if lay.format == "tsv":  # SST-2: one lower-case sentence, spaced punctuation
            words = _row(rng, y, kw, filler, int(rng.integers(6, 19)), n)
            text = _punctuate(rng, words).lower().replace(",", " ,").replace('"', "")
            fields.append((text,))
        else:
            # the title is filler only: the class is in the text, as a headline alone rarely
            # names a topic's keyword twice
            title = [filler[int(i)] for i in rng.integers(0, len(filler), int(rng.integers(2, 5)))]
            body = _row(rng, y, kw, filler, int(rng.integers(6, 19)), n)
            fields.append((_punctuate(rng, title).rstrip(","), _punctuate(rng, body)))
    return labels, fields


def write_sample(folder: str | os.PathLike, layout: str, rows: int = 400,
                 test_rows: int | None = None, seed: int = 0, overwrite: bool = False) -> Path:
    """Write a synthetic data set of ``layout`` (``ag_news``, ``dbpedia``, ``sst2``) into
    ``folder`` (created): its training file with ``rows`` rows and its test file with
    ``test_rows`` (default ``rows // 2``), named as the real ones. Returns the folder.
    Existing files of those names are the user's: refused unless ``overwrite``."""
    from monoidlab._paths import refuse_clobber

    lay = _layout(layout)
    test_rows = max(1, rows // 2) if test_rows is None else test_rows
    folder = ensure_dir(folder, "text sample folder")  # one-line errors, links refused
    refuse_clobber([folder / lay.train, folder / lay.test], "text-sample", overwrite,
                   "overwrite=True")
    for name, n, s in ((lay.train, rows, 2 * seed), (lay.test, test_rows, 2 * seed + 1)):
        labels, fields = _labels_and_fields(layout, n, s)
        buf = io.StringIO()
        if lay.format == "tsv":  # GLUE: a header, tabs, no quoting, a space before the tab
            buf.write("sentence\tlabel\n")
            buf.writelines(f"{f[0]} \t{y}\n" for y, f in zip(labels.tolist(), fields))
        else:  # the real files quote every field, 1-based classes, no header
            w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
            w.writerows([str(y + 1), *f] for y, f in zip(labels.tolist(), fields))
        atomic_write_text(folder / name, buf.getvalue())
    return folder
