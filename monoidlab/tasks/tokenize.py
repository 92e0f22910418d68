"""Tokenizers that need no download: bytes, characters, or words with a vocabulary fitted on a
training file; and the left-padded, truncated windows a text classifier reads.

Modes:

``byte``
    The UTF-8 bytes of the text: ids 1..256 (byte value + 1), no vocabulary to fit, every text
    round-trips exactly.
``char``
    The text's characters (case kept); the vocabulary is fitted on the training texts.
``word``
    Lower-cased words and punctuation marks (the regex ``\\w+|[^\\w\\s]``); the vocabulary is
    fitted on the training texts. A text round-trips as its tokens joined by single spaces.

Every mode has ``<pad>`` = id 0; ``char`` and ``word`` have ``<unk>`` = id 1 for symbols out of
the vocabulary. A fitted vocabulary is deterministic: symbols seen at least ``min_count`` times,
by decreasing count then by the symbol itself, cut at ``max_size`` ids (the two specials
included).

Examples:
    >>> tok = Tokenizer.fit(["the cat sat", "the dog"], "word")
    >>> tok.vocab
    ('<pad>', '<unk>', 'the', 'cat', 'dog', 'sat')
    >>> tok.encode("The bird sat").tolist(), tok.decode(tok.encode("the cat"))
    ([2, 1, 5], 'the cat')
    >>> Tokenizer.for_bytes().decode(Tokenizer.for_bytes().encode("héllo"))
    'héllo'
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from monoidlab.errors import InputError

__all__ = ["MODES", "PAD", "UNK", "Tokenizer", "Ragged", "windows"]

MODES = ("byte", "char", "word")
PAD, UNK = "<pad>", "<unk>"
_WORD = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True)
class Tokenizer:
    """A tokenizer: its ``mode`` and its vocabulary (``vocab[id]`` is the symbol of an id).

    Build one with :meth:`for_bytes` or :meth:`fit`; ``encode`` gives int64 ids, ``decode`` text.
    """

    mode: str
    vocab: tuple[str, ...]

    @classmethod
    def for_bytes(cls) -> Tokenizer:
        """The byte tokenizer: ``<pad>`` then the 256 byte values (``<0x41>`` is ``A``)."""
        return cls("byte", (PAD, *(f"<0x{b:02X}>" for b in range(256))))

    @classmethod
    def fit(cls, texts: Iterable[str], mode: str, min_count: int = 1,
            max_size: int | None = None) -> Tokenizer:
        """The tokenizer of ``mode`` with a vocabulary fitted on ``texts`` (``byte``: none)."""
        if mode not in MODES:
            raise InputError(f"unknown tokenizer {mode!r}; tokenizers: {', '.join(MODES)}")
        if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 1:
            raise InputError(f"min_count must be an integer >= 1, got {min_count!r}")
        if max_size is not None and (isinstance(max_size, bool) or not isinstance(max_size, int)
                                     or max_size < 3):
            raise InputError(f"max_size must be an integer >= 3 (<pad>, <unk> and one symbol) "
                             f"or none, got {max_size!r}")
        if mode == "byte":
            return cls.for_bytes()
        counts: Counter[str] = Counter()
        for text in texts:
            counts.update(_symbols(text, mode))
        kept = sorted((s for s, c in counts.items() if c >= min_count and s not in (PAD, UNK)),
                      key=lambda s: (-counts[s], s))  # deterministic: count, then symbol
        if max_size is not None:
            kept = kept[: max_size - 2]
        return cls(mode, (PAD, UNK, *kept))

    @property
    def pad_id(self) -> int:
        return 0

    def symbols(self, text: str) -> list[str]:
        """The symbols of ``text`` before lookup (``byte``: the byte tokens)."""
        if self.mode == "byte":
            return [self.vocab[b + 1] for b in text.encode("utf-8")]
        return _symbols(text, self.mode)

    def encode(self, text: str) -> np.ndarray:
        """Ids (int64) of ``text``; symbols out of the vocabulary are ``<unk>`` (id 1)."""
        if self.mode == "byte":
            return np.frombuffer(text.encode("utf-8"), np.uint8).astype(np.int64) + 1
        index = self._index
        return np.array([index.get(s, 1) for s in _symbols(text, self.mode)], np.int64)

    def decode(self, ids: Sequence[int] | np.ndarray) -> str:
        """Text of ids (``<pad>`` dropped): bytes decoded as UTF-8 (bad bytes replaced), chars
        joined, words joined by spaces."""
        ids = [int(i) for i in np.asarray(ids).ravel() if int(i) != 0]
        if self.mode == "byte":
            return bytes(i - 1 for i in ids).decode("utf-8", errors="replace")
        sep = " " if self.mode == "word" else ""
        return sep.join(self.vocab[i] for i in ids)

    @property
    def _index(self) -> dict[str, int]:
        cached = self.__dict__.get("_index_cache")
        if cached is None:  # the frozen dataclass caches its lookup table once
            cached = {s: i for i, s in enumerate(self.vocab)}
            object.__setattr__(self, "_index_cache", cached)
        return cached

    def encode_all(self, texts: Sequence[str]) -> Ragged:
        """Every text encoded, as one :class:`Ragged` array."""
        parts = [self.encode(t) for t in texts]
        lens = np.array([len(p) for p in parts], np.int64)
        flat = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        return Ragged(flat, np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64), lens)


def _symbols(text: str, mode: str) -> list[str]:
    return _WORD.findall(text.lower()) if mode == "word" else list(text)


@dataclass(frozen=True, eq=False)
class Ragged:
    """Token rows of different lengths in one flat array: row i is
    ``flat[starts[i] : starts[i] + lens[i]]``."""

    flat: np.ndarray
    starts: np.ndarray
    lens: np.ndarray

    def __len__(self) -> int:
        return int(self.lens.shape[0])


def windows(rows: Ragged, index: np.ndarray, length: int) -> np.ndarray:
    """(B, length) int64: the first ``length`` tokens of each row ``index[b]``, left-padded with
    ``<pad>`` (0) so that every row ends at the last position (where a classifier reads it).

    >>> r = Tokenizer.for_bytes().encode_all(["ab", "abcd"])
    >>> windows(r, np.array([0, 1]), 3).tolist()
    [[0, 98, 99], [98, 99, 100]]
    """
    index = np.asarray(index, np.int64)
    n = np.minimum(rows.lens[index], length)  # truncation keeps the head of a text
    pos = np.arange(length)[None, :] - (length - n)[:, None]  # (B, L): -k = padding
    flat = np.concatenate([rows.flat, [0]])  # a row of no tokens indexes the sentinel only
    idx = np.where(pos >= 0, rows.starts[index][:, None] + pos, len(flat) - 1)
    return flat[idx]
