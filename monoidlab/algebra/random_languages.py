"""Seeded random languages of the kinds users bring: random minimal DFAs and random compositions
of the suite's families (products, counters with resets, bounded stacks with two bracket
types, prefix / suffix / factor tests).

Every generator returns a minimal :class:`~monoidlab.algebra.automaton.Automaton`, and the same seed
gives the same machine. :func:`draw` keeps a candidate only when it is *useful for a length
generalisation test*: minimal with the stated number of states (random DFAs), strings of at
least two classes at every length 41..500 (so no length is a constant answer), and a monoid of
at most ``max_monoid`` elements (so its support lengths can be computed). Drawing never loops
without bound: after ``max_tries`` candidates it raises an error naming the kind and seed.

Example
-------
>>> import numpy as np
>>> a = random_dfa(np.random.default_rng(3), n_states=5, n_symbols=3)
>>> a.n_states, a.n_symbols
(5, 3)
>>> suffix_test("ab", "abc").classify(["cab", "abc", "ab"]).tolist()
[1, 0, 1]
>>> bounded_stack(2).classify(["([])", "([)]", "((()))"]).tolist()
[1, 0, 0]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from monoidlab.algebra.automaton import Automaton
from monoidlab.errors import InputError, MonoidTooLarge

__all__ = ["random_dfa", "counter_with_reset", "bounded_stack", "prefix_test", "suffix_test",
           "factor_test", "product", "mixed_lengths", "long_range", "Drawn", "draw",
           "draw_benchmark", "KINDS", "WIDE_KINDS",
           "DFA_SIZES"]

#: The kinds :func:`draw` can make, in the order the benchmark cycles through them.
KINDS = ("dfa", "counter-reset", "bounded-stack", "suffix", "prefix", "factor", "product")
#: the kinds with the wider stack generator ``stack`` (1-3 bracket types, depth 1-5) in place
#: of ``bounded-stack`` (2 types, depth 1-3: only three languages, all drawn by the first
#: benchmark); a later benchmark draws from these
WIDE_KINDS = ("dfa", "counter-reset", "stack", "suffix", "prefix", "factor", "product")
#: the bounded Dyck depths the suite has (dyck-k): a one-type ``stack`` of one of these depths
#: is a suite task under other letters, and is not drawn
SUITE_DYCK_DEPTHS = (1, 2, 3, 4, 6, 8, 12)
BRACKETS = (("(", ")"), ("[", "]"), ("{", "}"))


def _letters(n: int) -> list[str]:
    return list("abcdefgh"[:n])


# ------------------------------------------------------------------------------ generators
def random_dfa(rng: np.random.Generator, n_states: int, n_symbols: int,
               n_classes: int = 2) -> Automaton:
    """A uniformly random complete DFA (start 0, each state's class uniform), minimised.

    The result may have fewer states than asked: :func:`draw` keeps only those that do not.
    """
    if not (1 <= n_states <= 64 and 1 <= n_symbols <= 8 and 2 <= n_classes <= n_states):
        raise InputError(f"random_dfa: need 1 <= n_states <= 64, 1 <= n_symbols <= 8 and "
                         f"2 <= n_classes <= n_states, got {n_states}, {n_symbols}, {n_classes}")
    delta = rng.integers(0, n_states, size=(n_states, n_symbols))
    output = rng.integers(0, n_classes, size=n_states)
    classes = ("reject", "accept") if n_classes == 2 else tuple(f"c{i}" for i in range(n_classes))
    return Automaton(alphabet=_letters(n_symbols), delta=delta, start=0, output=output,
                     classes=classes, name=f"dfa-{n_states}x{n_symbols}")


def counter_with_reset(k: int, alphabet: Sequence[str] = ("a", "b", "r"), *, count: str = "a",
                       reset: str = "r", clamp: bool = False) -> Automaton:
    """Class = the number of ``count`` symbols since the last ``reset``, mod ``k`` (or clamped at
    ``k - 1`` when ``clamp``): ``k`` classes. Other symbols leave the counter alone.

    >>> counter_with_reset(3).classify(["aaaa", "aara", "aa"]).tolist()
    [1, 1, 2]
    """
    alphabet = list(alphabet)
    if count not in alphabet or reset not in alphabet or count == reset or k < 2:
        raise InputError(f"counter_with_reset: count {count!r} and reset {reset!r} must be two "
                         f"symbols of {alphabet}, and k >= 2 (got {k})")
    delta = np.empty((k, len(alphabet)), np.int64)
    for q in range(k):
        for j, a in enumerate(alphabet):
            delta[q, j] = (0 if a == reset else
                           (min(q + 1, k - 1) if clamp else (q + 1) % k) if a == count else q)
    kind = "clamped" if clamp else "mod"
    return Automaton(alphabet=alphabet, delta=delta, start=0, output=list(range(k)),
                     classes=[str(i) for i in range(k)], name=f"counter-{kind}-{k}",
                     description=f"#{count} since the last {reset}, {kind} {k}")


def bounded_stack(depth: int, brackets: Sequence[tuple[str, str]] = (("(", ")"), ("[", "]"))
                  ) -> Automaton:
    """Well-nested strings over several bracket types with nesting depth at most ``depth``:
    the states are the stacks of open brackets (plus a reject sink), accept = empty stack."""
    if depth < 1 or len(brackets) < 1:
        raise InputError(f"bounded_stack: depth >= 1 and at least one bracket pair, got {depth}")
    alphabet = [s for pair in brackets for s in pair]
    stacks: list[tuple[int, ...]] = [()]
    for d in range(depth):  # every stack of length <= depth, shortest first
        stacks += [s + (t,) for s in stacks if len(s) == d for t in range(len(brackets))]
    index = {s: i for i, s in enumerate(stacks)}
    sink = len(stacks)
    delta = np.full((sink + 1, len(alphabet)), sink, np.int64)
    for s, i in index.items():
        for t in range(len(brackets)):
            if len(s) < depth:
                delta[i, 2 * t] = index[s + (t,)]
            if s and s[-1] == t:
                delta[i, 2 * t + 1] = index[s[:-1]]
    output = [1] + [0] * sink
    return Automaton(alphabet=alphabet, delta=delta, start=0, output=output,
                     name=f"stack-{len(brackets)}x{depth}",
                     description=f"{len(brackets)} bracket types nested at most {depth} deep")


def _kmp(word: str, alphabet: Sequence[str]) -> np.ndarray:
    """The string-matching automaton of ``word``: state = longest prefix of ``word`` that is a
    suffix of the input so far (``len(word)`` = just matched)."""
    m = len(word)
    delta = np.zeros((m + 1, len(alphabet)), np.int64)
    for q in range(m + 1):
        for j, a in enumerate(alphabet):
            s = word[:q] + a
            k = min(m, len(s))
            while k > 0 and s[len(s) - k:] != word[:k]:
                k -= 1
            delta[q, j] = k
    return delta


def _check_word(word: str, alphabet: Sequence[str], who: str) -> None:
    bad = sorted(set(word) - set(alphabet))
    if not word or bad:
        raise InputError(f"{who}: a non-empty word over {list(alphabet)}, got {word!r}")


def suffix_test(word: str, alphabet: Sequence[str] = "ab") -> Automaton:
    """Accept iff the string ends with ``word``."""
    _check_word(word, alphabet, "suffix_test")
    m = len(word)
    return Automaton(alphabet=list(alphabet), delta=_kmp(word, alphabet), start=0,
                     output=[int(q == m) for q in range(m + 1)], name=f"suffix-{word}",
                     description=f"ends with {word}")


def factor_test(word: str, alphabet: Sequence[str] = "ab") -> Automaton:
    """Accept iff ``word`` occurs somewhere in the string (a matched state absorbs)."""
    _check_word(word, alphabet, "factor_test")
    m = len(word)
    delta = _kmp(word, alphabet)
    delta[m] = m
    return Automaton(alphabet=list(alphabet), delta=delta, start=0,
                     output=[int(q == m) for q in range(m + 1)], name=f"factor-{word}",
                     description=f"contains {word}")


def prefix_test(word: str, alphabet: Sequence[str] = "ab") -> Automaton:
    """Accept iff the string starts with ``word``."""
    _check_word(word, alphabet, "prefix_test")
    m, sink = len(word), len(word) + 1
    delta = np.full((m + 2, len(alphabet)), sink, np.int64)
    for q in range(m):
        delta[q, list(alphabet).index(word[q])] = q + 1
    delta[m] = m
    return Automaton(alphabet=list(alphabet), delta=delta, start=0,
                     output=[int(q == m) for q in range(m + 2)], name=f"prefix-{word}",
                     description=f"starts with {word}")


_OPS = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}


def product(a: Automaton, b: Automaton, op: str = "pair") -> Automaton:
    """The product machine over the shared alphabet: class = the pair of classes (``"pair"``) or
    a Boolean combination of two recognisers (``"and"``, ``"or"``, ``"xor"``)."""
    if a.alphabet != b.alphabet:
        raise InputError(f"product: the alphabets differ: {list(a.alphabet)} and "
                         f"{list(b.alphabet)}")
    if op not in (*_OPS, "pair"):
        raise InputError(f"product: op must be pair, and, or or xor, got {op!r}")
    na, nb = a.n_states, b.n_states
    da, db = np.asarray(a.delta, np.int64), np.asarray(b.delta, np.int64)
    delta = (da[:, None, :] * nb + db[None, :, :]).reshape(na * nb, len(a.alphabet))
    oa, ob = np.asarray(a.output)[:, None], np.asarray(b.output)[None, :]
    if op == "pair":
        output = (oa * b.n_classes + ob).reshape(-1)
        classes = [f"{x}|{y}" for x in a.classes for y in b.classes]
    else:
        if not (a.is_recogniser and b.is_recogniser):
            raise InputError(f"product: {op!r} combines two recognisers (classes reject/accept)")
        output = _OPS[op](oa == 1, ob == 1).astype(np.int64).reshape(-1)
        classes = ["reject", "accept"]
    return Automaton(alphabet=a.alphabet, delta=delta, start=a.start * nb + b.start,
                     output=output, classes=classes, name=f"{a.name}-{op}-{b.name}",
                     description=f"({a.description or a.name}) {op} ({b.description or b.name})")


# ------------------------------------------------------------------------------ filters
def mixed_lengths(auto: Automaton, lengths: range = range(41, 501)) -> np.ndarray:
    """For each length of ``lengths``: whether its strings fall in at least two classes (exact:
    the set of states reachable in exactly L steps, advanced one letter at a time)."""
    delta = np.asarray(auto.delta, np.int64)
    out = np.asarray(auto.output)
    reach = np.zeros(auto.n_states, bool)
    reach[auto.start] = True
    mixed = np.zeros(len(lengths), bool)
    for L in range(1, lengths.stop):
        nxt = np.zeros_like(reach)
        nxt[delta[reach].ravel()] = True
        reach = nxt
        if L in lengths:
            mixed[L - lengths.start] = len(np.unique(out[reach])) > 1
    return mixed


def long_range(auto: Automaton, lengths: range = range(41, 501)) -> bool:
    """Two classes at half the lengths of ``lengths`` or more, and at one of its last ten: no
    constant answer at long lengths (bracket languages are single-class at odd lengths, which
    evaluation reports apart)."""
    mixed = mixed_lengths(auto, lengths)
    return bool(mixed.mean() >= 0.5 and mixed[-10:].any())


# ------------------------------------------------------------------------------ drawing
@dataclass(frozen=True)
class Drawn:
    """A language :func:`draw` kept: the machine, how it was made (kind, seed, parameters),
    its monoid size and whether the monoid is aperiodic."""

    automaton: Automaton
    kind: str
    seed: int
    params: dict[str, Any] = field(default_factory=dict)
    monoid_size: int = 0
    aperiodic: bool = True


def _candidate(kind: str, rng: np.random.Generator, size: tuple[int, int] | None
               ) -> tuple[Automaton, dict[str, Any]]:
    if kind == "dfa":
        n, k = size or (int(rng.integers(3, 9)), int(rng.integers(2, 5)))
        return random_dfa(rng, n, k), {"n_states": n, "n_symbols": k}
    if kind == "counter-reset":
        k, clamp = int(rng.integers(2, 6)), bool(rng.integers(0, 2))
        alphabet = _letters(int(rng.integers(3, 5)))
        return (counter_with_reset(k, alphabet, count="a", reset=alphabet[-1], clamp=clamp),
                {"k": k, "clamp": clamp, "alphabet": alphabet})
    if kind == "bounded-stack":
        depth = int(rng.integers(1, 4))
        return bounded_stack(depth), {"depth": depth, "types": 2}
    if kind == "stack":
        while True:
            types, depth = int(rng.integers(1, 4)), int(rng.integers(1, 6))
            if types > 1 or depth not in SUITE_DYCK_DEPTHS:
                break
        return bounded_stack(depth, BRACKETS[:types]), {"depth": depth, "types": types}
    if kind in ("suffix", "prefix", "factor"):
        alphabet = _letters(int(rng.integers(2, 4)))
        word = "".join(rng.choice(alphabet, size=int(rng.integers(2, 5))))
        make = {"suffix": suffix_test, "prefix": prefix_test, "factor": factor_test}[kind]
        return make(word, alphabet), {"word": word, "alphabet": alphabet}
    if kind == "product":
        alphabet = _letters(int(rng.integers(2, 4)))
        k = int(rng.integers(2, 4))
        left = counter_with_reset(k, alphabet, count=alphabet[0], reset=alphabet[-1]) \
            if len(alphabet) > 2 else _count_mod(k, alphabet)
        word = "".join(rng.choice(alphabet, size=int(rng.integers(2, 4))))
        right = suffix_test(word, alphabet) if rng.integers(0, 2) else factor_test(word, alphabet)
        return product(left, right, "pair"), {"left": left.name, "right": right.name,
                                              "alphabet": alphabet}
    raise InputError(f"draw: unknown kind {kind!r}; kinds: "
                     f"{', '.join(dict.fromkeys(KINDS + WIDE_KINDS))}")


def _count_mod(k: int, alphabet: Sequence[str]) -> Automaton:
    delta = np.array([[(q + (a == alphabet[0])) % k for a in alphabet] for q in range(k)])
    return Automaton(alphabet=list(alphabet), delta=delta, start=0, output=list(range(k)),
                     classes=[str(i) for i in range(k)], name=f"count-{alphabet[0]}-mod-{k}")


def draw(kind: str, seed: int, *, size: tuple[int, int] | None = None, max_monoid: int = 500,
         max_tries: int = 2000) -> Drawn:
    """The first candidate of ``kind`` drawn from ``seed`` that is minimal at its stated size
    (random DFAs: ``size = (states, symbols)``, drawn from 3..8 x 2..4 when ``None``), has two
    classes at long lengths (:func:`long_range`) and a monoid of at most ``max_monoid``
    elements. Raises :class:`InputError` after ``max_tries`` candidates."""
    rng = np.random.default_rng(seed)
    for _ in range(max_tries):
        auto, params = _candidate(kind, rng, size)
        if kind == "dfa" and auto.n_states != params["n_states"]:
            continue  # not minimal (or not all reachable) at the drawn size
        if not long_range(auto):
            continue
        try:
            monoid = auto.monoid(max_elements=max_monoid)
        except MonoidTooLarge:
            continue
        return Drawn(auto, kind, seed, params, monoid.size, bool(monoid.summary()["aperiodic"]))
    raise InputError(f"draw: no {kind} language from seed {seed} passed the filters in "
                     f"{max_tries} tries (max_monoid = {max_monoid})")


#: The random DFAs' sizes (states, symbols), cycled: every state count 3..8, alphabets 2..4.
DFA_SIZES = tuple((n, 2 + (i % 3)) for i, n in enumerate(range(3, 9))) + \
    tuple((n, 2 + ((i + 1) % 3)) for i, n in enumerate(range(3, 9))) + \
    tuple((n, 2 + ((i + 2) % 3)) for i, n in enumerate(range(3, 9)))


#: seeds tried for one place of a benchmark before it is refused: the small kinds have few
#: distinct languages (3-state, 2-letter DFAs), and all of them may be taken already
MAX_REPEATS = 200


def draw_benchmark(n: int = 36, seed: int = 2026, *, max_monoid: int = 500,
                   exclude: Iterable[Automaton] = (), kinds: Sequence[str] = KINDS
                   ) -> list[Drawn]:
    """``n`` languages, half random DFAs (sizes cycling through :data:`DFA_SIZES`) and half
    compositions cycling through the other ``kinds`` (:data:`KINDS`, or :data:`WIDE_KINDS`),
    each from its own seed ``seed * 1000 + i``; the same arguments give the same list.
    Duplicates (the same minimal machine twice, or one of ``exclude``: an earlier benchmark's
    languages) are skipped by moving to the next seed; a place that finds no new language in
    :data:`MAX_REPEATS` seeds is an error naming it."""
    kinds = tuple(kinds)
    if not kinds or kinds[0] != "dfa" or len(kinds) < 2 or len(set(kinds)) != len(kinds):
        raise InputError(f"draw_benchmark: kinds must start with 'dfa' and name each other kind "
                         f"once, got {list(kinds)}")
    for k in kinds:
        if k not in KINDS + WIDE_KINDS:
            raise InputError(f"draw_benchmark: unknown kind {k!r}; kinds: "
                             f"{', '.join(dict.fromkeys(KINDS + WIDE_KINDS))}")
    out: list[Drawn] = []
    seen: set[Automaton] = {a.replace(name="x", description="") for a in exclude}
    others = kinds[1:]
    i = repeats = 0
    while len(out) < n:
        kind = "dfa" if len(out) % 2 == 0 else others[(len(out) // 2) % len(others)]
        size = DFA_SIZES[(len(out) // 2) % len(DFA_SIZES)] if kind == "dfa" else None
        d = draw(kind, seed * 1000 + i, size=size, max_monoid=max_monoid)
        i += 1
        key = d.automaton.replace(name="x", description="")
        if key in seen:
            repeats += 1
            if repeats >= MAX_REPEATS:
                raise InputError(f"draw_benchmark: place {len(out)} ({kind}"
                                 f"{'' if size is None else f' {size[0]}x{size[1]}'}) found only "
                                 f"languages already drawn or excluded in {MAX_REPEATS} seeds; "
                                 "draw fewer languages or exclude fewer")
            continue
        repeats = 0
        seen.add(key)
        out.append(d)
    return out
