"""The certificate of a model that is a DFA: right on every string, or its shortest failure.

The transformation tree model composes column-one-hot matrices, so with identity padding its
root is the product of its letters' functions whatever the tree, the padding or the offset:
the model *is* its learned automaton (n states, start 0, a class per state). Two DFAs agree on
every non-empty string iff every pair (learned state, language state) that a non-empty string
reaches reads the same class in both: a breadth-first search over at most n · |Q| pairs, level
by level (level = string length), each pair kept with its shortlex-least witness. It never
enumerates the model's transformation semigroup (up to n^n elements), which is what the
table certificate (:mod:`monoidlab.evaluation.certificate`) must do for this model and where
its budget refuses large learned automata.

Example
-------
>>> import numpy as np, monoidlab as ml
>>> lang = ml.load_language("parity")
>>> print(certify_automaton(np.array([[0, 1], [1, 0]]), np.array([0, 1]), 0, lang))
correct at every length (proved: the model's 2 states and the language's 2 states agree on all 2 reachable state pairs; every pair is reached by a string of length <= 1)
>>> wrong = certify_automaton(np.array([[0, 1], [1, 1]]), np.array([0, 1]), 0, lang)
>>> wrong.counterexample, wrong.predicted, wrong.expected
('11', 1, 0)
>>> certify_automaton(np.array([[0, 1], [1, 1]]), np.array([0, 1]), 0, lang, within="1").correct
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from monoidlab.errors import InputError, MonoidTooLarge
from monoidlab.evaluation.certificate import Certificate
from monoidlab.evaluation.certificate_scope import kept_classes, misread

__all__ = ["certify_automaton"]


def certify_automaton(delta: Any, output: Any, start: int, lang: Any, *, within: Any = None,
                      max_pairs: int = 50_000_000) -> Certificate:
    """Decide whether the DFA (``delta`` (n, V), ``output`` (n,) classes, ``start``) classifies
    every string of every length >= 1 as ``lang`` does; the counterexample, when there is one,
    is the shortest and, among the shortest, the shortlex-least string.

    ``within``: only the strings of these classes (a sub-language, as training's ``within``;
    None: every string). ``max_pairs``: the product's size n · |Q| allowed (past it
    :class:`MonoidTooLarge` says so).
    """
    from monoidlab.algebra.languages import as_language

    lang = as_language(lang)
    delta = np.asarray(delta)
    output = np.asarray(output)
    if delta.ndim != 2 or not np.issubdtype(delta.dtype, np.integer):
        raise InputError(f"certify_automaton: delta must be an (n, V) integer array, got shape "
                         f"{delta.shape} of {delta.dtype}")
    n, V = delta.shape
    if V != lang.n_symbols:
        raise InputError(f"certify_automaton: the automaton has {V} letters, the language "
                         f"{lang.name!r} {lang.n_symbols} ({list(lang.alphabet)})")
    if output.shape != (n,) or not 0 <= start < n or n == 0 or (
            delta.size and (delta.min() < 0 or delta.max() >= n)):
        raise InputError(f"certify_automaton: an automaton with {n} states needs output of "
                         f"shape ({n},), a start state and transitions in 0..{n - 1}")
    true_delta = np.asarray(lang.delta, np.int64)
    true_out = np.asarray(lang.output, np.int64)
    kept, names = kept_classes(lang, within)
    Q = true_delta.shape[0]
    if n * Q > max_pairs:
        raise MonoidTooLarge(f"certify_automaton: {n} x {Q} state pairs exceed "
                             f"max_pairs={max_pairs}")
    delta = delta.astype(np.int64)
    output = output.astype(np.int64)
    seen = np.zeros(n * Q, bool)
    # one BFS level: pairs in shortlex order of their witnesses, each with its parent's index
    # in the previous level and its last letter
    letters = np.arange(V)
    pair = delta[start, letters] * Q + true_delta[lang.start, letters]
    parent = np.full(V, -1)
    levels: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    total = 0
    while True:
        _, first = np.unique(pair, return_index=True)
        keep = np.sort(first)  # the first (shortlex-least) witness of each pair
        keep = keep[~seen[pair[keep]]]
        pair, parent, last = pair[keep], parent[keep], (keep % V if levels else keep)
        if not len(pair):
            break
        seen[pair] = True
        total += len(pair)
        levels.append((pair, parent, last))
        bad = np.flatnonzero(misread(output, true_out, pair, Q, kept))
        if len(bad):
            return _refuted(levels, int(bad[0]), lang, delta, output, start, total, names)
        # children in (parent rank, letter) order: shortlex order of their witnesses
        pair = (delta[(pair // Q)[:, None], letters[None, :]] * Q
                + true_delta[(pair % Q)[:, None], letters[None, :]]).ravel()
        parent = np.repeat(np.arange(len(levels[-1][0])), V)
    return Certificate(language=lang.name, correct=True, levels=len(levels), period=0,
                       pairs=total, n_codes=n, monoid_size=Q, padding="identity",
                       offsets=False, layout="automaton", within=names)


def _refuted(levels: list, i: int, lang: Any, delta: np.ndarray, output: np.ndarray,
             start: int, total: int, within: tuple[str, ...] | None) -> Certificate:
    """The certificate of a refuted automaton: the witness of pair ``i`` of the last level,
    rebuilt from the parent pointers and confirmed by running both automata on it."""
    Q = int(np.asarray(lang.delta).shape[0])
    target = int(levels[-1][0][i])
    word: list[int] = []
    for _, parent, last in reversed(levels):
        word.append(int(last[i]))
        i = int(parent[i])
    word.reverse()
    q, t = start, int(lang.start)
    true_delta = np.asarray(lang.delta, np.int64)
    for a in word:
        q, t = int(delta[q, a]), int(true_delta[t, a])
    true_out = np.asarray(lang.output, np.int64)
    predicted, expected = int(output[q]), int(true_out[t])
    names = list(lang.classes)
    return Certificate(language=lang.name, correct=False, levels=len(levels), period=0,
                       pairs=total, n_codes=int(delta.shape[0]), monoid_size=Q,
                       padding="identity", offsets=False,
                       counterexample="".join(str(lang.alphabet[a]) for a in word),
                       counterexample_tokens=tuple(word), counterexample_offset=0,
                       counterexample_length=len(word), counterexample_level=None,
                       expected=expected, predicted=predicted, expected_name=names[expected],
                       predicted_name=names[predicted],
                       confirmed=q * Q + t == target and predicted != expected,
                       layout="automaton", within=within)
