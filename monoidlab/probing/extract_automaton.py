"""Which automaton does a trained model implement? L* with the model as membership oracle.

:func:`extract_automaton` learns a Moore machine from any classifier with AALpy's observation
table (the model answers the membership queries, cached and batched: every string is put to
the model once, and each update of the table is one batched call), checks each hypothesis
against the model on monoidlab's own test kinds (``paper``, ``near_miss``, ``ec_stratified``
and uniform strings at lengths up to 500, plus every short string) and compares the result
with the language's minimal automaton (:func:`compare_automata`: isomorphic, else the
shortlex-least string on which they differ, with its class under both).

What it proves: the extracted machine agrees with the model on every string asked, and, when
it is isomorphic to the true automaton, the model agrees with the language on all of them. An
equivalence oracle is a test, not a proof: the model may still differ on a string no oracle
drew (docs/probing.md).

Example
-------
>>> import monoidlab as ml
>>> lang, other = ml.load_language("tomita-4"), ml.load_language("tomita-7")
>>> c = compare_automata(other, lang)
>>> c.isomorphic, c.string, c.classes
(False, '000', ('accept', 'reject'))
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from monoidlab._checks import check_count, check_seed
from monoidlab._util import eval_mode
from monoidlab.errors import InputError, MissingDependency
from monoidlab.probing._target import model_device, resolve_target

if TYPE_CHECKING:
    from torch import nn

    from monoidlab.algebra.automaton import Automaton

__all__ = ["AutomatonComparison", "ExtractedAutomaton", "Membership", "compare_automata",
           "oracle_strings", "extract_automaton", "AALPY_PIN"]

AALPY_PIN = "aalpy>=2.0,<3"  # the extra this extraction needs (its API is checked against 2.0)
MAX_EXHAUSTIVE = 2046  # every string up to the length where their number stays below this


# --------------------------------------------------------------------------- comparison


@dataclass(frozen=True)
class AutomatonComparison:
    """An extracted automaton against the true minimal one.

    ``isomorphic``: the two minimal machines are equal up to renaming states (``state_map``:
    extracted state → true state). Otherwise ``string`` is the shortlex-least string on which
    their classes differ, ``classes`` = (class under the extracted, under the true machine) and
    ``ec`` the string's EC in the true syntactic monoid (its representative word).
    """

    isomorphic: bool
    n_states: int
    true_states: int
    string: str | None = None
    classes: tuple[str, str] | None = None
    ec: str | None = None
    state_map: tuple[int, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"isomorphic": self.isomorphic, "n_states": self.n_states,
                "true_states": self.true_states, "string": self.string,
                "classes": list(self.classes) if self.classes else None, "ec": self.ec,
                "state_map": list(self.state_map) if self.state_map else None}

    def text(self) -> str:
        if self.isomorphic:
            return (f"isomorphic to the minimal automaton ({self.n_states} states)")
        assert self.classes is not None
        return (f"not isomorphic ({self.n_states} states, the minimal automaton has "
                f"{self.true_states}); shortest distinguishing string {self.string!r} "
                f"(EC {self.ec!r}): {self.classes[0]} (extracted) vs {self.classes[1]} (true)")


def compare_automata(extracted: Automaton, true: Automaton) -> AutomatonComparison:
    """Breadth-first search on the product automaton, level by level in shortlex order: the
    first reachable pair of states with different classes gives the shortlex-least
    distinguishing string; none means the two machines are equivalent, and since both are
    minimal, isomorphic (the visited pairs are the isomorphism)."""
    if tuple(extracted.alphabet) != tuple(true.alphabet):
        raise InputError(f"alphabets differ: {list(extracted.alphabet)} (extracted) vs "
                         f"{list(true.alphabet)} ({true.name})")
    d1, d2 = np.asarray(extracted.delta, np.int64), np.asarray(true.delta, np.int64)
    c1 = np.asarray(extracted.classes, dtype=object)[np.asarray(extracted.output)]
    c2 = np.asarray(true.classes, dtype=object)[np.asarray(true.output)]
    n1, n2, k = len(d1), len(d2), d1.shape[1]
    seen = np.zeros((n1, n2), bool)
    parent: dict[int, tuple[int, int]] = {}  # pair key -> (parent key, letter)
    front = np.array([extracted.start * n2 + true.start])
    seen.flat[front] = True
    while len(front):
        a, b = np.divmod(front, n2)
        bad = np.flatnonzero(c1[a] != c2[b])
        if len(bad):
            key, word = int(front[bad[0]]), []
            while key in parent:
                key, letter = parent[key]
                word.append(letter)
            toks = np.array([word[::-1]], np.int64)
            ec = true.monoid().element_of(toks, np.array([len(word)]))  # its EC, by its word
            sep = "" if true.single_char else " "
            string = sep.join(true.alphabet[t] for t in word[::-1])
            p, q = divmod(int(front[bad[0]]), n2)
            return AutomatonComparison(False, n1, n2, string, (str(c1[p]), str(c2[q])),
                                       true.monoid().labels()[int(ec[0])])
        succ = d1[a] * n2 + d2[b]  # (F, k): a letter moves both machines at once
        flat = succ.ravel()  # row-major: (frontier order, letter order) = shortlex order
        fresh = ~seen.flat[flat]
        _, first = np.unique(flat[fresh], return_index=True)
        order = np.flatnonzero(fresh)[np.sort(first)]
        for i in order.tolist():  # parents of the new pairs (one entry per new state pair)
            parent[int(flat[i])] = (int(front[i // k]), i % k)
        front = flat[order]
        seen.flat[front] = True
    pairs = np.flatnonzero(seen)
    a, b = np.divmod(pairs, n2)
    iso = n1 == n2 and len(pairs) == n1
    smap = np.zeros(n1, np.int64)
    smap[a] = b
    return AutomatonComparison(iso, n1, n2, state_map=tuple(smap.tolist()) if iso else None)


# --------------------------------------------------------------------------- the model


class Membership:
    """The model as a membership oracle: class of each string, cached, batched.

    Every distinct string is put to the model once (``queries`` counts them, ``forwards`` the
    batched forward passes, ``asked`` holds the words the learner asked through :meth:`word`
    and :meth:`prefetch`, answered from the cache or not); strings are grouped by length so a batch carries little padding.
    The empty string, which no tree model reads, is answered by the language's class of ε,
    or by ``empty`` when given (a teacher's own class of ε).

    >>> import monoidlab as ml, torch
    >>> from monoidlab.models import build_model
    >>> lang = ml.load_language("parity")
    >>> _ = torch.manual_seed(0)
    >>> m = Membership(build_model("rnn", 2, 2, hidden=8), lang)
    >>> _ = m.classify(*lang.encode(["0", "01", "0", "011"]))
    >>> m.queries, m.forwards, m.word(()) == int(lang.output[lang.start])
    (3, 1, True)
    """

    def __init__(self, model: nn.Module, lang: Automaton, batch_size: int = 256,
                 empty: int | None = None) -> None:
        self.model, self.lang = model, lang
        self.batch_size = check_count(batch_size, "batch_size")
        self.empty = int(lang.output[lang.start]) if empty is None else int(empty)
        self.cache: dict[bytes, int] = {}
        self.asked: set[bytes] = set()  # distinct words the learner asked (cached or not)
        self.queries = 0
        self.forwards = 0

    @staticmethod
    def _key(row: np.ndarray) -> bytes:
        return row.astype(np.int16).tobytes()

    def word(self, w: tuple[int, ...]) -> int:
        """Class of one word (a tuple of letter indices), from the cache when asked before."""
        if not w:
            return self.empty
        key = self._key(np.asarray(w))
        self.asked.add(key)
        if key not in self.cache:
            self.prefetch([w])
        return self.cache[key]

    def prefetch(self, words: list[tuple[int, ...]]) -> None:
        """Answer every uncached word of ``words`` in batched forward passes."""
        keys = {self._key(np.asarray(w)): w for w in words if w}
        self.asked.update(keys)
        words = [w for k, w in keys.items() if k not in self.cache]
        if not words:
            return
        lengths = np.fromiter((len(w) for w in words), np.int64, len(words))
        tokens = np.zeros((len(words), int(lengths.max())), np.int64)
        for i, w in enumerate(words):
            tokens[i, : len(w)] = w
        self.classify(tokens, lengths)

    def classify(self, tokens: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Class of each row of a ``(tokens, lengths)`` batch (uncached ones through the model)."""
        tokens, lengths = np.asarray(tokens), np.asarray(lengths, np.int64)
        keys = [self._key(tokens[i, :L]) for i, L in enumerate(lengths.tolist())]
        out = np.full(len(keys), -1, np.int64)
        todo: dict[bytes, int] = {}
        for i, key in enumerate(keys):
            if lengths[i] == 0:
                out[i] = self.empty
            elif key in self.cache:
                out[i] = self.cache[key]
            else:
                todo.setdefault(key, i)
        if todo:
            rows = np.fromiter(todo.values(), np.int64, len(todo))
            got = self._forward(tokens[rows], lengths[rows])
            self.cache.update(zip(todo, got.tolist()))
            self.queries += len(rows)
            out = np.where(out >= 0, out, [self.cache.get(k, -1) for k in keys])
        return out

    def _forward(self, tokens: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        import torch

        order = np.argsort(lengths, kind="stable")  # similar lengths share a batch
        dev = model_device(self.model)
        out = np.empty(len(lengths), np.int64)
        # a batch holds batch_size strings of the longest length; shorter ones pack more
        budget = self.batch_size * int(lengths.max())
        sorted_len = lengths[order]
        s = 0
        with eval_mode(self.model), torch.no_grad():
            while s < len(order):
                # the longest chunk whose (strings × its longest length) fits the budget
                ends = np.arange(s + 1, len(order) + 1)
                fits = (ends - s) * sorted_len[ends - 1] <= budget
                e = int(ends[fits][-1]) if fits[0] else s + 1
                idx = order[s:e]
                T = int(lengths[idx].max())
                tk = torch.as_tensor(tokens[idx, :T], device=dev)
                ln = torch.as_tensor(lengths[idx], device=dev)
                out[idx] = self.model(tk, ln).argmax(-1).cpu().numpy()
                self.forwards += 1
                s = e
        return out


# --------------------------------------------------------------------------- the oracle strings


def _oracle_lengths(max_length: int) -> np.ndarray:
    """Every length up to 20, then about 16 lengths spaced geometrically up to ``max_length``."""
    short = np.arange(1, min(20, max_length) + 1)
    if max_length <= 20:
        return short
    far = np.unique(np.geomspace(21, max_length, 16).round().astype(np.int64))
    return np.concatenate([short, far])


def oracle_strings(lang: Automaton, max_length: int = 500, n_per_length: int = 16,
                   seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The equivalence oracle's test strings ``(tokens, lengths, kind)``: every string up to
    the length where there are at most :data:`MAX_EXHAUSTIVE` of them (``kind`` "all"), then
    at every length of :func:`_oracle_lengths` ``n_per_length`` strings of each test kind
    (``paper``, ``near_miss``, ``ec_stratified``) and of uniform strings, seeded.

    >>> import monoidlab as ml
    >>> t, n, k = oracle_strings(ml.load_language("parity"), max_length=30, n_per_length=2)
    >>> from monoidlab.evaluation.kinds import KINDS
    >>> int(n.max()), set(k.tolist()) == {"all", "uniform", *KINDS}
    (30, True)
    """
    from monoidlab.evaluation.kinds import KINDS, kind_batch
    from monoidlab.strings.sampling import sample

    max_length = check_count(max_length, "max_length")
    n_per_length = check_count(n_per_length, "n_per_length", minimum=0)
    check_seed(seed, generator=False)
    k = lang.n_symbols
    parts: list[tuple[np.ndarray, np.ndarray, str]] = []
    total, L = 0, 1
    while L <= max_length and total + k ** L <= MAX_EXHAUSTIVE:
        codes = np.arange(k ** L)[:, None] // (k ** np.arange(L - 1, -1, -1))[None, :] % k
        parts.append((codes.astype(np.int64), np.full(k ** L, L, np.int64), "all"))
        total, L = total + k ** L, L + 1
    rng = np.random.default_rng([seed, 3_200_032])
    for length in _oracle_lengths(max_length).tolist():
        if length < L or not n_per_length:
            continue
        for kind in (*KINDS, "uniform"):
            if kind == "uniform":
                b = sample(lang, [length], n_per_length, sampler="uniform", seed=rng)
            else:
                b = kind_batch(lang, kind, length, n_per_length, rng)
            if len(b.lengths):
                parts.append((np.asarray(b.tokens, np.int64), np.asarray(b.lengths), kind))
    T = max(p[0].shape[1] for p in parts)
    tokens = np.concatenate([np.pad(p[0], ((0, 0), (0, T - p[0].shape[1]))) for p in parts])
    lengths = np.concatenate([p[1] for p in parts])
    kinds = np.concatenate([np.full(len(p[1]), p[2], dtype=object) for p in parts])
    return tokens, lengths, kinds


# --------------------------------------------------------------------------- extraction


@dataclass
class ExtractedAutomaton:
    """What :func:`extract_automaton` found.

    ``automaton``: the extracted minimal machine; ``comparison``: against the true one;
    ``status``: ``converged`` (the oracle found no counterexample), ``max_states``,
    ``max_queries`` or ``max_rounds`` (a budget ended the learning first); ``queries``: the
    distinct words the learner asked (membership queries), ``model_queries``: those of them
    the model had not already answered for the oracle, ``oracle_strings``: the equivalence
    oracle's distinct strings; ``agreement``: on the oracle's strings, extracted vs model
    and model vs the language, per kind.
    """

    automaton: Automaton
    comparison: AutomatonComparison
    status: str
    rounds: int
    queries: int
    model_queries: int
    oracle_strings: int
    forwards: int
    seconds: float
    agreement: dict[str, dict[str, float]] = field(default_factory=dict)
    counterexamples: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        a = self.automaton
        return {"status": self.status, "rounds": self.rounds, "membership_queries": self.queries,
                "model_queries": self.model_queries,
                "oracle_strings": self.oracle_strings, "forward_passes": self.forwards,
                "seconds": round(self.seconds, 3), "n_states": a.n_states,
                "comparison": self.comparison.to_dict(), "agreement": self.agreement,
                "counterexamples": self.counterexamples,
                "automaton": {"alphabet": list(a.alphabet), "start": int(a.start),
                              "delta": np.asarray(a.delta).tolist(),
                              "output": [a.classes[c] for c in np.asarray(a.output)]}}

    def text(self) -> str:
        ag = self.agreement.get("all", {})
        return "\n".join([
            f"extracted automaton: {self.automaton.n_states} states, {self.status} after "
            f"{self.rounds} rounds, {self.queries} membership queries ({self.model_queries} not "
            f"among the {self.oracle_strings} oracle strings), {self.forwards} batched forward "
            f"passes, {self.seconds:.1f} s",
            "  " + self.comparison.text(),
            f"  on the oracle's strings: extracted = model {ag.get('extracted_model', 0):.4f}, "
            f"model = language {ag.get('model_language', 0):.4f}"])


def _lstar() -> Any:
    try:
        from monoidlab.probing import _lstar
    except ImportError as exc:
        if (exc.name or "").split(".")[0] != "aalpy":
            raise
        raise MissingDependency(f"extract_automaton needs AALpy: pip install '{AALPY_PIN}'"
                                ) from None
    return _lstar


def extract_automaton(model_or_run: Any, language: Any = None, *, max_states: int = 64,
                      max_queries: int = 200_000, max_rounds: int = 50,
                      oracle: Any = "kinds", max_length: int = 500, n_per_length: int = 16,
                      seed: int = 0, batch_size: int = 256,
                      device: str | None = None) -> ExtractedAutomaton:
    """The automaton a classifier implements, learned by L* and compared with the true one.

    ``model_or_run``: a model (then ``language``: an Automaton or a suite name) or a checkpoint
    / run folder. ``oracle``: ``"kinds"`` (:func:`oracle_strings` with ``max_length``,
    ``n_per_length``, ``seed``) or your own ``(tokens, lengths)`` test strings. Learning stops
    when the oracle finds no counterexample or at a budget: a hypothesis of more than
    ``max_states`` states, more than ``max_queries`` strings put to the model by the learner
    (beyond the oracle's), ``max_rounds``
    equivalence queries. A counterexample is the shortest test string where the hypothesis
    and the model differ.

    >>> import monoidlab as ml
    >>> from monoidlab.probing.extract_automaton import _AutomatonModel
    >>> lang = ml.load_language("tomita-4")
    >>> r = extract_automaton(_AutomatonModel(lang), lang, max_length=40, n_per_length=4)
    >>> r.status, r.comparison.isomorphic, r.automaton.n_states
    ('converged', True, 4)
    """
    max_states = check_count(max_states, "max_states")
    max_queries = check_count(max_queries, "max_queries")
    max_rounds = check_count(max_rounds, "max_rounds")
    check_seed(seed, generator=False)
    lstar = _lstar()
    target = resolve_target(model_or_run, language, device)
    lang = target.language
    t0 = time.perf_counter()
    member = Membership(target.model, lang, batch_size)
    if isinstance(oracle, str):
        if oracle != "kinds":
            raise InputError(f"oracle: 'kinds' or a (tokens, lengths) pair, got {oracle!r}")
        tokens, lengths, kinds = oracle_strings(lang, max_length, n_per_length, seed)
    else:
        try:
            tokens, lengths = (np.asarray(a, np.int64) for a in oracle)
        except (TypeError, ValueError):
            raise InputError("oracle: 'kinds' or a (tokens, lengths) pair of integer "
                             "arrays") from None
        from monoidlab._util import check_batch

        tokens, lengths = check_batch(tokens, lengths, lang.n_symbols, lang.name)
        kinds = np.full(len(lengths), "given", dtype=object)
    answers = member.classify(tokens, lengths)  # one batched pass over the whole test set
    n_oracle = member.queries
    hyp, status, rounds, cexes = lstar.learn(
        member, lang, tokens, lengths, answers, max_states=max_states,
        max_queries=max_queries + n_oracle, max_rounds=max_rounds)
    extracted = lstar.hypothesis_automaton(hyp, lang)
    predicted = extracted.classify(tokens, lengths)
    truth = lang.classify(tokens, lengths)
    agreement = {}
    for kind in ["all", *dict.fromkeys(kinds.tolist())]:
        m = np.ones(len(kinds), bool) if kind == "all" else kinds == kind
        agreement[kind] = {"n": int(m.sum()),
                           "extracted_model": float((predicted[m] == answers[m]).mean()),
                           "model_language": float((answers[m] == truth[m]).mean())}
    sep = "" if lang.single_char else " "
    return ExtractedAutomaton(
        extracted, compare_automata(extracted, lang), status, rounds, len(member.asked),
        member.queries - n_oracle, n_oracle, member.forwards, time.perf_counter() - t0,
        agreement, [sep.join(lang.alphabet[t] for t in c) for c in cexes])


class _AutomatonModel:
    """An automaton answering as a model (for the doctests; the tests have a torch one)."""

    def __new__(cls, lang: Automaton) -> Any:
        import torch

        class Exact(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.dummy = torch.nn.Parameter(torch.zeros(1))

            def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
                cls_ = lang.classify(tokens.cpu().numpy(), lengths.cpu().numpy())
                return torch.nn.functional.one_hot(torch.as_tensor(cls_),
                                                   lang.n_classes).float()

        return Exact()
