"""L* on AALpy's observation table, with membership queries answered in batches.

AALpy's ``run_Lstar`` asks its SUL one word at a time (``ObservationTable.update_obs_table``
loops over rows × suffixes and calls ``sul.query`` for each cell). A forward pass per word
would make extraction from a neural model slow, so :class:`BatchedTable` first collects every
cell an update will fill and hands them to the model as one batch
(:meth:`~monoidlab.probing.extract_automaton.Membership.prefetch`), then fills the cells from
the cache. :func:`learn` is ``run_Lstar``'s loop (closing strategy ``shortest_first``,
Rivest–Schapire counterexample processing, one suffix per counterexample), with the budgets of
:func:`~monoidlab.probing.extract_automaton.extract_automaton`. The table keeps only the last
output of each word (``prefixes_in_cell=False``): a Moore machine's row needs no more, and
:class:`ModelSUL` computes the outputs of a word's proper prefixes only when someone reads them.

This module imports AALpy at module level; it is imported only inside ``extract_automaton``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

# AALpy ships no type information (no py.typed): its names are Any here
from aalpy.base import SUL, Oracle  # type: ignore[import-untyped]
from aalpy.learning_algs.deterministic.CounterExampleProcessing import (  # type: ignore[import-untyped]
    counterexample_successfully_processed,
    rs_cex_processing,
)
from aalpy.learning_algs.deterministic.ObservationTable import (  # type: ignore[import-untyped]
    ObservationTable,
)
from aalpy.utils.HelperFunctions import extend_set  # type: ignore[import-untyped]

from monoidlab.algebra.automaton import Automaton

if TYPE_CHECKING:
    from monoidlab.probing.extract_automaton import Membership

__all__ = ["ModelSUL", "BatchedTable", "KindsOracle", "hypothesis_automaton", "learn"]


class _Trace(Sequence):
    """The outputs after each letter of a word, computed on demand from the membership cache
    (the learner reads the last one; AALpy's SUL contract lists all of them)."""

    def __init__(self, member: Membership, word: tuple[int, ...]) -> None:
        self.member, self.word = member, word

    def __len__(self) -> int:
        return max(len(self.word), 1)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        i = i + n if i < 0 else i
        if not 0 <= i < n:
            raise IndexError(i)
        return self.member.word(self.word[: i + 1])


class ModelSUL(SUL):
    """A model as AALpy's system under learning: ``step`` reads one more letter, ``query`` a
    whole word; both answer from the shared cache of :class:`Membership`."""

    def __init__(self, member: Membership) -> None:
        super().__init__()
        self.member = member
        self._word: list[int] = []

    def pre(self) -> None:
        self._word = []

    def post(self) -> None:
        pass

    def step(self, letter: Any) -> int:
        if letter is not None:
            self._word.append(int(letter))
        return self.member.word(tuple(self._word))

    def query(self, word: tuple) -> list:
        self.num_queries += 1
        self.num_steps += len(word)
        return _Trace(self.member, tuple(int(a) for a in word))  # type: ignore[return-value]


class BatchedTable(ObservationTable):
    """AALpy's observation table whose updates ask the model once per update, not per cell."""

    def update_obs_table(self, s_set: list | None = None, e_set: list | None = None) -> None:
        update_s = s_set if s_set else list(self.S) + list(self.s_dot_a())
        update_e = e_set if e_set else self.E
        # the cells the base class would fill: for row s, the first len(E) - len(T[s]) suffixes
        cells = [(s, update_e[: len(self.E) - len(self.T[s])]) for s in update_s]
        member: Membership = self.sul.member
        member.prefetch([s + e for s, es in cells for e in es])
        for s, es in cells:
            self.T[s] += tuple(member.word(s + e) for e in es)


class KindsOracle(Oracle):
    """Equivalence oracle on fixed test strings whose model answers are known: the shortest
    string (first in the given order among equals) where the hypothesis differs."""

    def __init__(self, sul: ModelSUL, lang: Automaton, tokens: np.ndarray, lengths: np.ndarray,
                 answers: np.ndarray) -> None:
        super().__init__(list(range(lang.n_symbols)), sul)
        self.lang, self.tokens, self.lengths, self.answers = lang, tokens, lengths, answers
        self.found: list[tuple[int, ...]] = []

    def find_cex(self, hypothesis: Any) -> tuple[int, ...] | None:
        self.num_queries += len(self.lengths)
        self.num_steps += int(self.lengths.sum())
        guess = hypothesis_automaton(hypothesis, self.lang).classify(self.tokens, self.lengths)
        wrong = np.flatnonzero(guess != self.answers)
        if not len(wrong):
            return None
        i = int(wrong[np.argmin(self.lengths[wrong])])
        cex = tuple(self.tokens[i, : self.lengths[i]].tolist())
        self.found.append(cex)
        return cex


def hypothesis_automaton(hyp: Any, lang: Automaton) -> Automaton:
    """An AALpy Moore machine over letter indices as a (minimised) monoidlab Automaton."""
    states = list(hyp.states)
    index = {id(s): i for i, s in enumerate(states)}
    delta = np.array([[index[id(s.transitions[a])] for a in range(lang.n_symbols)]
                      for s in states], np.int64)
    return Automaton(alphabet=lang.alphabet, delta=delta, start=index[id(hyp.initial_state)],
                     output=[int(s.output) for s in states], classes=lang.classes,
                     name=f"extracted({lang.name})")


def learn(member: Membership, lang: Automaton, tokens: np.ndarray, lengths: np.ndarray,
          answers: np.ndarray, *, max_states: int, max_queries: int,
          max_rounds: int, on_hypothesis: Any = None
          ) -> tuple[Any, str, int, list[tuple[int, ...]]]:
    """``(hypothesis, status, rounds, counterexamples)`` of L* against the model;
    ``on_hypothesis`` (optional) is called with every hypothesis the table produces."""
    alphabet = list(range(lang.n_symbols))
    sul = ModelSUL(member)
    oracle = KindsOracle(sul, lang, tokens, lengths, answers)
    table = BatchedTable(alphabet, sul, "moore", prefixes_in_cell=False)
    table.update_obs_table()
    cex: tuple[int, ...] | None = None
    rounds, status = 0, "converged"
    while True:
        rows = table.get_rows_to_close("shortest_first")
        while rows is not None:
            new: list[tuple[int, ...]] = []
            for row in rows:
                table.S.append(row)
                new.extend(row + (a,) for a in alphabet)
            table.update_obs_table(s_set=new)
            rows = table.get_rows_to_close("shortest_first")
        hypothesis = table.gen_hypothesis()
        if on_hypothesis is not None:
            on_hypothesis(hypothesis)
        if len(hypothesis.states) > max_states:
            status = "max_states"
            break
        if member.queries > max_queries:
            status = "max_queries"
            break
        if cex is None or counterexample_successfully_processed(sul, cex, hypothesis):
            if rounds == max_rounds:
                status = "max_rounds"
                break
            rounds += 1
            cex = oracle.find_cex(hypothesis)
        if cex is None:
            break
        suffixes = rs_cex_processing(sul, cex, hypothesis, False, closedness="suffix")
        added = extend_set(table.E, suffixes)
        if not added:  # the one suffix was known already: add every suffix of the cex
            added = extend_set(table.E, [cex[i:] for i in range(len(cex))])
        if not added:  # nothing left to learn from it (never seen; guards an endless loop)
            status = "stalled"
            break
        table.update_obs_table(e_set=added)
    return hypothesis, status, rounds, oracle.found
