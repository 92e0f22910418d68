"""Parametric families of automata (the generators behind ``family = "..."`` specs).

Every function returns a minimal :class:`~monoidlab.automaton.Automaton`. The definitions follow
the MLP-LDRU authors' supplementary code and Delétang et al. (2023); see docs/languages.md.

Example
-------
>>> from monoidlab import families
>>> families.dyck(2).classify(["0101", "0011", "000111"]).tolist()
[1, 1, 0]
>>> families.count_mod(3).n_states
3
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import numpy as np

from monoidlab.automaton import Automaton
from monoidlab.errors import InputError, SpecError

__all__ = ["FAMILIES", "build_family", "count_mod", "parity", "even_pairs", "cycle_navigation",
           "modular_arithmetic", "modular_arithmetic_precedence", "dyck", "tomita", "prefix",
           "full_transformation", "addition_interleaved"]

DIGITS5 = ["0", "1", "2", "3", "4"]


def count_mod(k: int, *, symbol: str = "1", alphabet: Sequence[str] = ("0", "1"),
              name: str | None = None) -> Automaton:
    """Class = (number of ``symbol``) mod k; ``k`` classes named ``"0".."k-1"``."""
    alphabet = list(alphabet)
    delta = np.array([[(q + (a == symbol)) % k for a in alphabet] for q in range(k)])
    return Automaton(alphabet=alphabet, delta=delta, start=0, output=list(range(k)),
                     classes=[str(i) for i in range(k)], name=name or f"count-mod-{k}",
                     description=f"number of {symbol!r} mod {k}")


def parity() -> Automaton:
    """Parity check: (#1) mod 2 (classes ``even``/``odd`` as 0/1)."""
    a = count_mod(2, name="parity")
    return Automaton(alphabet=a.alphabet, delta=a.delta, start=0, output=a.output,
                     classes=["0", "1"], name="parity", description="(number of 1s) mod 2")


def even_pairs() -> Automaton:
    """#("01" or "10") mod 2, which equals [first symbol != last symbol]."""
    # states: 0 = empty, 1 + 2*first + last
    delta = np.zeros((5, 2), np.int64)
    delta[0] = [1, 4]
    for first, last in itertools.product((0, 1), (0, 1)):
        for a in (0, 1):
            delta[1 + 2 * first + last, a] = 1 + 2 * first + a
    output = [0] + [int(f != l_) for f, l_ in itertools.product((0, 1), (0, 1))]
    return Automaton(alphabet=["0", "1"], delta=delta, start=0, output=output, classes=["0", "1"],
                     name="even-pairs", description='#("01" or "10") mod 2 = [first != last]')


def cycle_navigation(k: int = 5) -> Automaton:
    """Position on a k-cycle after the moves: label = sum(a - 1) mod k (0 = -1, 1 = stay, 2 = +1)."""
    delta = np.array([[(q + a - 1) % k for a in range(3)] for q in range(k)])
    return Automaton(alphabet=["0", "1", "2"], delta=delta, start=0, output=list(range(k)),
                     classes=[str(i) for i in range(k)], name="cycle-navigation",
                     description=f"sum(a-1) mod {k}: 0 moves -1, 1 stays, 2 moves +1")


def _expression_machine(step: _LeftToRight | _Precedence, n_vals: int, name: str,
                        description: str, mod: int = 5) -> Automaton:
    """Shared builder for flat expressions ``d (op d)*`` over digits 0..mod-1 and ``+ - *``.

    ``step(state, op, digit) -> state`` on "complete" states (ints 0..n_vals-1 in a value space);
    ``value(state)`` is ``state % mod`` after the caller's encoding. Pending states remember the
    operator. Everything malformed goes to a sink; incomplete strings get class ``incomplete``.
    """
    ops = ["+", "-", "*"]
    alphabet = [str(d) for d in range(mod)] + ops
    # state layout: 0 = start, 1 = sink, 2.. complete (n_vals), then pending (n_vals * 3)
    comp = lambda v: 2 + v  # noqa: E731
    pend = lambda v, o: 2 + n_vals + 3 * v + o  # noqa: E731
    n = 2 + 4 * n_vals
    delta = np.ones((n, len(alphabet)), np.int64)  # default: sink
    output = np.full(n, mod, np.int64)  # class `mod` = incomplete
    for d in range(mod):
        delta[0, d] = comp(step(None, None, d))
    for v in range(n_vals):
        output[comp(v)] = step.value(v)
        for o in range(3):
            delta[comp(v), mod + o] = pend(v, o)
            for d in range(mod):
                delta[pend(v, o), d] = comp(step(v, ops[o], d))
    return Automaton(alphabet=alphabet, delta=delta, start=0, output=output,
                     classes=[str(i) for i in range(mod)] + ["incomplete"], name=name,
                     description=description)


class _LeftToRight:
    """Evaluate strictly left to right, mod 5 after each operation."""

    def __init__(self, mod: int) -> None:
        self.mod = mod

    def __call__(self, v: int | None, op: str | None, d: int) -> int:
        if op is None:
            return d
        assert v is not None  # a value exists once there is an operator
        return {"+": v + d, "-": v - d, "*": v * d}[op] % self.mod

    def value(self, v: int) -> int:
        return v


class _Precedence:
    """Standard precedence: state (s, t) = sum of closed terms s and current signed term t."""

    def __init__(self, mod: int) -> None:
        self.mod = mod

    def __call__(self, v: int | None, op: str | None, d: int) -> int:
        m = self.mod
        if op is None:
            return d  # s = 0, t = d
        assert v is not None  # a value exists once there is an operator
        s, t = divmod(v, m)
        if op == "*":
            return s * m + (t * d) % m
        s = (s + t) % m
        return s * m + (d if op == "+" else (-d) % m)

    def value(self, v: int) -> int:
        s, t = divmod(v, self.mod)
        return (s + t) % self.mod


def modular_arithmetic(mod: int = 5) -> Automaton:
    """MLP-LDRU's modular arithmetic: ``d (op d)*`` evaluated strictly left to right, mod 5.

    Classes 0..4 for complete expressions and ``incomplete`` for everything else.
    """
    return _expression_machine(_LeftToRight(mod), mod, "modular-arithmetic",
                               f"d (op d)* evaluated left to right mod {mod}; else 'incomplete'", mod)


def modular_arithmetic_precedence(mod: int = 5) -> Automaton:
    """Delétang's modular arithmetic: flat expression, standard precedence (* before + -), mod 5."""
    return _expression_machine(_Precedence(mod), mod * mod, "modular-arithmetic-precedence",
                               f"d (op d)* with standard precedence mod {mod}; else 'incomplete'", mod)


def dyck(n: int) -> Automaton:
    """Bounded Dyck language D_n over {0 = "(", 1 = ")"}: balanced with depth never above n."""
    if n < 1:
        raise InputError(f"dyck: depth bound n must be >= 1, got {n}")
    reject = n + 1
    delta = np.full((n + 2, 2), reject, np.int64)
    for d in range(n + 1):
        if d < n:
            delta[d, 0] = d + 1
        if d > 0:
            delta[d, 1] = d - 1
    output = [1] + [0] * (n + 1)
    return Automaton(alphabet=["0", "1"], delta=delta, start=0, output=output, name=f"dyck-{n}",
                     description=f"bounded Dyck D_{n}: 0='(', 1=')', depth <= {n}")


# Tomita grammars as the MLP-LDRU authors coded them (docs/languages.md); rows: state -> (on 0, on 1).
_TOMITA = {
    1: ([[0, 1], [1, 1]], [0], "0*"),
    2: ([[1, 2], [2, 0], [2, 2]], [0], "(01)*"),
    3: ([[0, 1], [3, 0], [3, 1], [2, 4], [4, 4]], [0, 1, 2],
        "no odd run of 1s followed by an odd run of 0s"),
    4: ([[1, 0], [2, 0], [3, 0], [3, 3]], [0, 1, 2], "no 000 substring"),
    5: ([[3, 1], [2, 0], [1, 3], [0, 2]], [0], "even number of 0s and even number of 1s"),
    6: ([[2, 1], [0, 2], [1, 0]], [0], "(#1 - #0) = 0 mod 3"),
    7: ([[0, 1], [2, 1], [2, 3], [4, 3], [4, 4]], [0, 1, 2, 3], "0*1*0*1*"),
}


def tomita(k: int) -> Automaton:
    """Tomita grammar k (1..7) as the MLP-LDRU authors coded them (docs/languages.md)."""
    if k not in _TOMITA:
        raise InputError(f"tomita: k must be 1..7, got {k}")
    rows, accept, desc = _TOMITA[k]
    output = [int(q in accept) for q in range(len(rows))]
    return Automaton(alphabet=["0", "1"], delta=rows, start=0, output=output, name=f"tomita-{k}",
                     description=f"Tomita {k}: {desc}")


def prefix(p: int, q: int) -> Automaton:
    """P_{p,q}: class = the first p symbols (q^p classes) or ``short`` when the string is shorter."""
    alphabet = [str(i) for i in range(q)]
    # States: trie nodes of depth <= p, numbered by (depth, code); leaves absorb.
    nodes = [(d, c) for d in range(p + 1) for c in range(q ** d)]
    index = {node: i for i, node in enumerate(nodes)}
    delta = np.zeros((len(nodes), q), np.int64)
    output = np.zeros(len(nodes), np.int64)
    for (d, c), i in index.items():
        for a in range(q):
            delta[i, a] = index[(d + 1, c * q + a)] if d < p else i
        output[i] = c if d == p else q ** p
    codes = ["".join(w) for w in itertools.product(alphabet, repeat=p)]
    return Automaton(alphabet=alphabet, delta=delta, start=0, output=output,
                     classes=codes + ["short"], name=f"prefix-{p}-{q}",
                     description=f"class = first {p} of {q} symbols; 'short' if shorter than {p}")


def full_transformation(n: int) -> Automaton:
    """n states whose letters act as an n-cycle, a transposition and a collapse.

    They generate the full transformation monoid T_n (n^n elements); every state is its own
    class, so the machine is minimal. Used by the enumeration benchmark.
    """
    cyc = [(q + 1) % n for q in range(n)]
    swap = [1, 0] + list(range(2, n)) if n > 1 else [0]
    collapse = [0, 0] + list(range(2, n)) if n > 1 else [0]
    delta = np.array([cyc, swap, collapse]).T
    return Automaton(alphabet=["c", "t", "e"], delta=delta, start=0, output=list(range(n)),
                     classes=[f"s{q}" for q in range(n)], name=f"full-transformation-{n}",
                     description=f"generators of the full transformation monoid T_{n}")


def addition_interleaved() -> Automaton:
    """Correct decimal additions written digit-interleaved, least significant digit first.

    Symbols are triples ``a0 b0 c0 a1 b1 c1 ...`` over digits 0-9; the machine checks
    c_i = (a_i + b_i + carry) mod 10 with one carry bit and accepts when the final carry is 0.
    """
    # states: 0/1 carry at a triple boundary; (carry, a) after a; (carry, a, b) after b; sink.
    idx: dict[tuple, int] = {}

    def sid(key: tuple) -> int:
        return idx.setdefault(key, len(idx))

    for c in (0, 1):
        sid(("at", c))
    sink = sid(("sink",))
    for c in (0, 1):
        for a in range(10):
            sid(("a", c, a))
            for b in range(10):
                sid(("b", c, a, b))
    delta = np.full((len(idx), 10), sink, np.int64)
    for key, i in idx.items():
        if key[0] == "at":
            delta[i] = [idx[("a", key[1], a)] for a in range(10)]
        elif key[0] == "a":
            delta[i] = [idx[("b", key[1], key[2], b)] for b in range(10)]
        elif key[0] == "b":
            c, a, b = key[1:]
            total = a + b + c
            delta[i, total % 10] = idx[("at", total // 10)]
    output = np.zeros(len(idx), np.int64)
    output[idx[("at", 0)]] = 1
    return Automaton(alphabet=[str(d) for d in range(10)], delta=delta, start=idx[("at", 0)],
                     output=output, name="addition-interleaved",
                     description="a0 b0 c0 a1 b1 c1 ...: correct addition, least significant first")


FAMILIES: dict[str, Callable[..., Automaton]] = {
    "count-mod": count_mod,
    "parity": parity,
    "even-pairs": even_pairs,
    "cycle-navigation": cycle_navigation,
    "modular-arithmetic": modular_arithmetic,
    "modular-arithmetic-precedence": modular_arithmetic_precedence,
    "dyck": dyck,
    "tomita": tomita,
    "prefix": prefix,
    "full-transformation": full_transformation,
    "addition-interleaved": addition_interleaved,
}


# Bounds on size parameters, so that a spec cannot make the loader run for minutes.
_MAX_PARAM = {"n": 10_000, "k": 10_000, "mod": 64, "p": 64, "q": 10_000}


def build_family(family: str, params: dict, *, source: str = "family") -> Automaton:
    """Build ``FAMILIES[family](**params)``, with errors that name the source and the field."""
    try:
        fn = FAMILIES[family]
    except KeyError:
        raise SpecError(source, "family", f"unknown family {family!r}; known: "
                        f"{', '.join(sorted(FAMILIES))}") from None
    import inspect

    allowed = set(inspect.signature(fn).parameters)
    unknown = set(params) - allowed
    if unknown:
        raise SpecError(source, "params", f"unknown parameter(s) {sorted(unknown)} for family "
                        f"{family!r}; allowed: {sorted(allowed)}")
    for key, val in params.items():
        if key in ("n", "k", "p", "q", "mod") and (not isinstance(val, int) or isinstance(val, bool) or val < 1):
            raise SpecError(source, f"params.{key}", f"must be a positive integer, got {val!r}")
        if key in _MAX_PARAM and val > _MAX_PARAM[key]:  # the generators loop in Python
            raise SpecError(source, f"params.{key}", f"at most {_MAX_PARAM[key]}, got {val}")
    if family == "prefix" and params.get("q", 2) ** params.get("p", 1) > 100_000:
        raise SpecError(source, "params", "q ** p must be at most 100000 (the number of classes)")
    try:
        return fn(**params)
    except (ValueError, TypeError) as exc:
        # A SpecError from the Automaton constructor names the generated machine, not the file.
        raise SpecError(source, "params", str(exc)) from None
