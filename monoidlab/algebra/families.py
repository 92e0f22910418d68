"""Parametric families of automata (the generators behind ``family = "..."`` specs).

Every function returns a minimal :class:`~monoidlab.algebra.automaton.Automaton`. The definitions follow
the MLP-LDRU authors' supplementary code and Delétang et al. (2023); see docs/languages.md.

Size parameters are bounded (:data:`MAX_PARAMS`, and at most :data:`MAX_CELLS` cells in the
generated transition table): at the bounds, building and minimising a machine takes about a
second on a 2-core machine (``tools/bench_bad_inputs.py`` and ``tests/test_families.py``
check it), so a spec cannot make the loader run for minutes. The *monoid* of such a machine is
usually far too large; its enumeration stops at ``max_elements`` or at the memory budget
(:mod:`monoidlab.algebra._enumerate`).

Example
-------
>>> from monoidlab.algebra import families
>>> families.dyck(2).classify(["0101", "0011", "000111"]).tolist()
[1, 1, 0]
>>> families.count_mod(3).n_states
3
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from monoidlab._suggest import known_choices
from monoidlab.algebra.automaton import Automaton
from monoidlab.errors import InputError, SpecError

__all__ = ["FAMILIES", "MAX_PARAMS", "MAX_CELLS", "check_params", "table_cells",
           "build_family", "count_mod", "parity", "even_pairs", "cycle_navigation",
           "modular_arithmetic", "modular_arithmetic_precedence", "dyck", "tomita", "prefix",
           "full_transformation", "addition_interleaved"]

DIGITS5 = ["0", "1", "2", "3", "4"]


def count_mod(k: int, *, symbol: str = "1", alphabet: Sequence[str] = ("0", "1"),
              name: str | None = None) -> Automaton:
    """Class = (number of ``symbol``) mod k; ``k`` classes named ``"0".."k-1"``.

    Bounds: ``k`` <= 100000, at most 1000 symbols, ``k * len(alphabet)`` <= 500000; ``symbol``
    must be one of ``alphabet``.
    """
    alphabet = list(alphabet)
    check_params("count-mod", {"k": k, "alphabet": alphabet})
    if symbol not in alphabet:
        shown = alphabet if len(alphabet) <= 10 else [*alphabet[:10], f"... {len(alphabet)} symbols"]
        raise InputError(f"count-mod: symbol {symbol!r} is not in the alphabet {shown}")
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
    """Position on a k-cycle after the moves: label = sum(a - 1) mod k (0 = -1, 1 = stay, 2 = +1).

    Bound: ``k`` <= 100000.
    """
    check_params("cycle-navigation", {"k": k})
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
    Bound: ``mod`` <= 256.
    """
    check_params("modular-arithmetic", {"mod": mod})
    return _expression_machine(_LeftToRight(mod), mod, "modular-arithmetic",
                               f"d (op d)* evaluated left to right mod {mod}; else 'incomplete'", mod)


def modular_arithmetic_precedence(mod: int = 5) -> Automaton:
    """Delétang's modular arithmetic: flat expression, standard precedence (* before + -), mod 5.

    Bound: ``mod`` <= 48 (the machine has 4 mod² + 2 states).
    """
    check_params("modular-arithmetic-precedence", {"mod": mod})
    return _expression_machine(_Precedence(mod), mod * mod, "modular-arithmetic-precedence",
                               f"d (op d)* with standard precedence mod {mod}; else 'incomplete'", mod)


def dyck(n: int) -> Automaton:
    """Bounded Dyck language D_n over {0 = "(", 1 = ")"}: balanced with depth never above n.

    Bound: ``n`` <= 100000.
    """
    check_params("dyck", {"n": n})
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
    if isinstance(k, bool) or k not in _TOMITA:
        raise InputError(f"tomita: k must be 1..7, got {k}")
    rows, accept, desc = _TOMITA[k]
    output = [int(q in accept) for q in range(len(rows))]
    return Automaton(alphabet=["0", "1"], delta=rows, start=0, output=output, name=f"tomita-{k}",
                     description=f"Tomita {k}: {desc}")


def prefix(p: int, q: int) -> Automaton:
    """P_{p,q}: class = the first p symbols (q^p classes) or ``short`` when the string is shorter.

    Bounds: ``q`` <= 700, ``q ** p`` <= 100000 classes, and (1 + q + ... + q^p) * q <= 500000
    table cells (so p <= 16 for q = 2, p = 1 for q > 316).
    """
    check_params("prefix", {"p": p, "q": q})
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
    class, so the machine is minimal. Used by the enumeration benchmark. Bound: ``n`` <= 100000
    (the monoid stops at ``max_elements`` long before: T_8 already has 16.7 million elements).
    """
    check_params("full-transformation", {"n": n})
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


# Upper bounds of the size parameters (languages/README.md). At the bounds, building and
# minimising takes about a second (measured in tools/bench_bad_inputs.py), well under 5 s.
MAX_PARAMS: dict[str, dict[str, int]] = {
    "count-mod": {"k": 100_000, "alphabet": 1000},
    "cycle-navigation": {"k": 100_000},
    "modular-arithmetic": {"mod": 256},
    "modular-arithmetic-precedence": {"mod": 48},
    "dyck": {"n": 100_000},
    "prefix": {"p": 100_000, "q": 700},
    "full-transformation": {"n": 100_000},
}
MAX_CELLS = 500_000  # states x symbols of the generated table (before minimisation)
MAX_PREFIX_CLASSES = 100_000  # q ** p


def table_cells(family: str, params: dict[str, Any]) -> int:
    """States × symbols of the table the generator builds (before minimisation), computed from
    the parameters alone (no table is built).

    >>> table_cells("dyck", {"n": 6}), table_cells("prefix", {"p": 2, "q": 3})
    (16, 39)
    """
    def g(key: str, default: Any) -> Any:
        return params.get(key, default)

    if family == "count-mod":
        return g("k", 0) * len(g("alphabet", ("0", "1")))
    if family in ("cycle-navigation", "full-transformation"):
        return 3 * g("k" if family == "cycle-navigation" else "n", 5)
    if family == "modular-arithmetic":
        m = g("mod", 5)
        return (4 * m + 2) * (m + 3)
    if family == "modular-arithmetic-precedence":
        m = g("mod", 5)
        return (4 * m * m + 2) * (m + 3)
    if family == "dyck":
        return 2 * (g("n", 1) + 2)
    if family == "prefix":
        p, q = g("p", 1), g("q", 2)
        if q > 1 and p > 64:
            return 2**63  # far beyond any bound (and q ** p not computed)
        return (p + 1 if q == 1 else (q ** (p + 1) - 1) // (q - 1)) * q
    return 0  # fixed machines


def check_params(family: str, params: dict[str, Any]) -> None:
    """Refuse (:class:`~monoidlab.errors.InputError`, naming the parameter) size parameters that
    are not positive integers or exceed :data:`MAX_PARAMS` / :data:`MAX_CELLS`. Cheap: nothing
    is built.

    >>> check_params("dyck", {"n": 200_000})
    Traceback (most recent call last):
    ...
    monoidlab.errors.InputError: dyck: parameter 'n' is at most 100000 (so that loading takes seconds), got 200000
    """
    bounds = MAX_PARAMS.get(family, {})
    for key, limit in bounds.items():
        if key not in params:
            continue
        val = params[key]
        if key == "alphabet":
            if not isinstance(val, list | tuple) or not val:
                raise InputError(f"{family}: parameter 'alphabet' must be a non-empty list of "
                                 f"symbols, got {val!r}")
            val = len(val)
        elif isinstance(val, bool) or not isinstance(val, int) or val < 1:
            raise InputError(f"{family}: {key} must be a positive integer, got {val!r}")
        if val > limit:
            what = "symbols" if key == "alphabet" else f"parameter {key!r}"
            raise InputError(f"{family}: {what} is at most {limit} (so that loading takes "
                             f"seconds), got {val}")
    if family == "prefix":
        p, q = params.get("p", 1), params.get("q", 2)
        if q > 1 and (p > 17 or q ** p > MAX_PREFIX_CLASSES):  # 2 ** 17 > 100000
            raise InputError(f"prefix: q ** p must be at most {MAX_PREFIX_CLASSES} (the number "
                             f"of classes), got {q}**{p}")
    cells = table_cells(family, params)
    if cells > MAX_CELLS:
        raise InputError(f"{family}: the table would have {cells} cells (states × symbols); at "
                         f"most {MAX_CELLS} (so that loading takes seconds)")


def build_family(family: str, params: dict, *, source: str = "family") -> Automaton:
    """Build ``FAMILIES[family](**params)``, with errors that name the source and the field."""
    try:
        fn = FAMILIES[family]
    except KeyError:
        raise SpecError(source, "family", f"unknown family {family!r}"
                        + known_choices(family, FAMILIES)) from None
    import inspect

    allowed = set(inspect.signature(fn).parameters)
    unknown = set(params) - allowed
    if unknown:
        raise SpecError(source, "params", f"unknown parameter(s) {sorted(unknown)} for family "
                        f"{family!r}; allowed: {sorted(allowed)}")
    for key, val in params.items():
        if key in ("n", "k", "p", "q", "mod") and (not isinstance(val, int) or isinstance(val, bool) or val < 1):
            raise SpecError(source, f"params.{key}", f"must be a positive integer, got {val!r}")
        limit = MAX_PARAMS.get(family, {}).get(key)
        if limit is not None and key != "alphabet" and val > limit:
            raise SpecError(source, f"params.{key}", f"at most {limit} (so that loading takes "
                            f"seconds), got {val}")
    try:
        check_params(family, params)
    except InputError as exc:
        raise SpecError(source, "params", str(exc)) from None
    try:
        return fn(**params)
    except (ValueError, TypeError) as exc:
        # A SpecError from the Automaton constructor names the generated machine, not the file.
        raise SpecError(source, "params", str(exc)) from None
