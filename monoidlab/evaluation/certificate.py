"""Certificate: is a finite tree model right on every string of every length?

A :class:`~monoidlab.models.finite.FiniteTable` is exact at every length iff every (code, EC)
pair that can sit at a root is read by the head as the class of its EC. The pairs reachable at
tree level l are tracked by node type, F (all leaves tokens), P (a proper prefix of tokens,
then padding) and, with ``offsets=True``, S (padding, then tokens to the right edge) and B
(tokens strictly inside); an all-padding node E passes its sibling through (identity padding)
or holds the constant code e_l (learned padding). These sets and e_l determine the next level,
so the sequence is eventually periodic: :func:`certify_table` iterates until a state repeats
(then every level has been seen) or a root pair is misread. Each pair keeps its shortest
witness (shortlex-least at offset 0) as back-pointers, so the shortest counterexample is
rebuilt exactly and confirmed with :meth:`FiniteTable.fold` and the DFA. At offset 0 the
first wrong level holds it; with offsets a short string at a large offset has a deep root, so
the search goes on over witnesses shorter than the best until their state repeats.
:func:`brute_force_counterexample` is the reference used by the tests.

``within`` restricts the claim to a sub-language given by its classes (as training's
``within``: modular arithmetic's well-formed expressions): the reachable pairs are the same,
and only roots whose EC's class is kept are checked, since a string belongs to such a
sub-language iff its EC's class does.

Example
-------
>>> import monoidlab as ml
>>> from monoidlab.models.finite import FiniteTable, monoid_table
>>> lang = ml.load_language("parity")
>>> print(certify_table(monoid_table(lang, "learned"), lang, offsets=True))
correct at every length (proved: reachable (code, EC) pairs repeat after 3 levels, period 1; 2 pairs)
>>> exact = monoid_table(lang)
>>> table = exact.table.copy(); table[1, 1] = 1   # "1"·"1" now says odd: code = any 1
>>> print(certify_table(FiniteTable(exact.leaf, table, exact.head), lang))
WRONG: shortest counterexample '11' (length 2): the model says class 1 (1), the language 0 (0)
>>> print(certify_table(FiniteTable(exact.leaf, table, exact.head), lang, within="1"))
correct at every length on the strings of class 1 (proved: reachable (code, EC) pairs repeat after 3 levels, period 1; 3 pairs; a root is checked where its EC has one of these classes)
"""

from __future__ import annotations

import html
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from monoidlab.errors import InputError, MonoidTooLarge
from monoidlab.evaluation.certificate_scope import kept_classes, misread
from monoidlab.geometry import buffer_size
from monoidlab.models.finite import FiniteTable

__all__ = ["Certificate", "certify_table", "brute_force_counterexample"]

# Witness lengths saturate here (a failure at level > 60 is too long to write out anyway);
# two saturated lengths still add up without overflowing int64.
_CAP = 1 << 61
_CHUNK = 1 << 21  # candidate pairs per product slice: bounds the memory of one step
_DENSE = 1 << 22  # up to this many possible pairs, reduce by scatter-min (20x a sort)
# How each node type at level l + 1 is built from level-l children ("E" = all padding);
# "R" = roots (last token in the right half: the node a string's root is read from).
_RULES: dict[str, tuple[tuple[str, str], ...]] = {
    "F": (("F", "F"),),
    "P": (("F", "P"), ("F", "E"), ("P", "E")),
    "S": (("S", "F"), ("E", "F"), ("E", "S")),
    "B": (("S", "P"), ("E", "B"), ("B", "E"), ("E", "P"), ("S", "E")),
    "R": (("F", "F"), ("F", "P"), ("S", "F"), ("S", "P"), ("E", "F"), ("E", "P"), ("E", "S"),
          ("E", "B")),
}


@dataclass(frozen=True)
class Certificate:
    """The verdict of :func:`certify_table`.

    ``levels``: tree levels computed (until the reachable state repeated, or until the
    shortest counterexample was settled); ``period``: the period of the repeat (0 when wrong);
    ``pairs``: the most reachable (code, EC) pairs one node type held at one level (the
    quantity ``max_pairs`` bounds). A counterexample is given by its tokens, its offset (0
    without offsets) and its root level; its text is ``None`` past ``max_witness_length``
    (``counterexample_length`` is None past 2**61). ``confirmed``: the string was re-run
    through :meth:`FiniteTable.fold` and the DFA (always, unless too long to write out).
    ``layout``: the table's (``"balanced"`` or ``"scan"``), or ``"automaton"`` for a model
    certified as a DFA (:mod:`monoidlab.evaluation.automaton_certificate`: then ``n_codes`` is
    its state count, ``monoid_size`` the language's, ``levels`` the longest shortest witness).
    ``within``: the classes whose strings were checked (None: every string).
    """

    language: str
    correct: bool
    levels: int
    period: int
    pairs: int
    n_codes: int
    monoid_size: int
    padding: str
    offsets: bool
    counterexample: str | None = None
    counterexample_tokens: tuple[int, ...] | None = None
    counterexample_offset: int | None = None
    counterexample_length: int | None = None
    counterexample_level: int | None = None
    expected: int | None = None
    predicted: int | None = None
    expected_name: str | None = None
    predicted_name: str | None = None
    confirmed: bool = False
    layout: str = "balanced"
    within: tuple[str, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain values (JSON)."""
        d = asdict(self)
        if self.counterexample_tokens is not None:
            d["counterexample_tokens"] = list(self.counterexample_tokens)
        if self.within is not None:
            d["within"] = list(self.within)
        return d

    @property
    def scope(self) -> str:
        """Which strings the verdict is about: "" (every string) or " on the strings of
        class(es) ..." (a sub-language)."""
        if self.within is None:
            return ""
        return f" on the strings of class{'es' if len(self.within) > 1 else ''} " \
               f"{', '.join(self.within)}"

    def text(self) -> str:
        """One line: the proof's size, or the shortest counterexample."""
        if self.correct and self.layout == "automaton":
            where = ("" if self.within is None
                     else ", of those whose language state has one of these classes")
            return (f"correct at every length{self.scope} (proved: the model's {self.n_codes} "
                    f"states and the language's {self.monoid_size} states agree on all "
                    f"{self.pairs} reachable state pairs{where}; every pair is reached by a "
                    f"string of length <= {self.levels})")
        if self.correct:
            where = ("" if self.within is None
                     else "; a root is checked where its EC has one of these classes")
            return (f"correct at every length{self.scope} (proved: reachable (code, EC) pairs "
                    f"repeat after {self.levels} levels, period {self.period}; {self.pairs} "
                    f"pairs{where})")
        n = self.counterexample_length
        if self.counterexample is None:
            size = f"length {n}" if n is not None else f"length over 2^{_CAP.bit_length() - 1}"
            what = f"has {size} (root level {self.counterexample_level}), too long to write out"
        else:
            at = f" at offset {self.counterexample_offset}" if self.offsets else ""
            what = f"{self.counterexample!r} (length {n}){at}"
        return (f"WRONG{self.scope}: shortest counterexample {what}: the model says class "
                f"{self.predicted} ({self.predicted_name}), the language {self.expected} "
                f"({self.expected_name})")

    def __str__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        return f"<p>{html.escape(self.text())}</p>"


@dataclass
class _Nodes:
    """One node type at one level: reachable pairs ``p = code * |M| + EC``, each with its
    shortest witness: length ``n``, the ranks of its children's witnesses ``gl``, ``gr`` (-1
    for padding), the rule that built it and its children's indices ``i``, ``j`` (a leaf: rule
    -1, i = the letter), and ``g``, its witness's rank among the level's witnesses."""

    p: np.ndarray
    n: np.ndarray
    gl: np.ndarray
    gr: np.ndarray
    rule: np.ndarray
    i: np.ndarray
    j: np.ndarray
    g: np.ndarray

    def take(self, idx: np.ndarray) -> _Nodes:
        return _Nodes(*(getattr(self, f.name)[idx] for f in fields(self)))

    def __len__(self) -> int:
        return len(self.p)


def _empty() -> _Nodes:
    return _Nodes(*(np.zeros(0, np.int64) for _ in range(8)))


def _first(p: np.ndarray, n: np.ndarray, flat: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per pair, the candidate with the least (length, flat index): sort by both, then
    np.unique's first occurrence (its return_index sort is stable)."""
    o = np.lexsort((flat, n))
    p, n, flat = p[o], n[o], flat[o]
    _, k = np.unique(p, return_index=True)
    return p[k], n[k], flat[k]


class _Fixpoint:
    """The level-by-level sets of one (table, monoid) pair and their witnesses."""

    def __init__(self, table: FiniteTable, mono: Any, offsets: bool) -> None:
        self.tau, self.mul, self.M = table.table, np.asarray(mono.table, np.int64), mono.size
        size = table.n_codes * self.M  # scratch rows of the scatter-min, reset after each use
        self.scratch = np.full((2, size), _CAP + 1) if size <= _DENSE else None
        self.types = ("F", "P", "S", "B") if offsets else ("F", "P")
        roots = _RULES["R"] if offsets else _RULES["R"][:2]  # offset 0: F·F and F·P only
        self.rules = {t: _RULES[t] for t in self.types} | {"R": roots}
        # Level 0: one leaf per letter (the smallest letter of each pair: shortlex).
        letters = np.arange(table.vocab_size)
        p, _, a = _first(table.leaf * self.M + np.asarray(mono.letters), np.ones_like(letters),
                         letters)
        leaves = _Nodes(p, np.ones_like(p), a, -np.ones_like(p), -np.ones_like(p), a,
                        -np.ones_like(p), np.argsort(np.argsort(a)))
        leaves = leaves.take(np.argsort(leaves.g))
        self.hist: list[dict[str, _Nodes]] = [{t: _empty() for t in self.types}]
        self.hist[0].update(F=leaves, R=leaves)

    def _pairs(self, a: _Nodes | None, b: _Nodes | None) -> tuple[np.ndarray, ...]:
        """Per reachable pair of the product a·b, its least (length, left index, right index);
        ``None`` = padding passed through (identity padding)."""
        if a is None or b is None:
            x = b if a is None else a
            assert x is not None  # no rule pairs two padding children
            ix, none = np.arange(len(x)), -np.ones(len(x), np.int64)
            return (x.p, x.n, none, ix) if a is None else (x.p, x.n, ix, none)
        nb, M = len(b), self.M
        if len(a) == 0 or nb == 0:
            return tuple(np.zeros(0, np.int64) for _ in range(4))
        cb, mb = b.p // M, b.p % M
        rows, parts = max(1, _CHUNK // nb), []
        for s in range(0, len(a), rows):  # slices of rows bound the memory of one product
            pa = a.p[s:s + rows]
            code = self.tau[(pa // M)[:, None], cb[None, :]]
            ec = self.mul[(pa % M)[:, None], mb[None, :]]
            n = np.minimum(a.n[s:s + rows, None] + b.n[None, :], _CAP)
            parts.append(self._least((code * M + ec).ravel(), n.ravel(),
                                     np.arange(s * nb, (s + len(pa)) * nb)))
        p, n, flat = (np.concatenate(c) for c in zip(*parts, strict=True))
        p, n, flat = self._least(p, n, flat)  # the least over all slices
        return p, n, flat // nb, flat % nb

    def _least(self, p: np.ndarray, n: np.ndarray, flat: np.ndarray) -> tuple[np.ndarray, ...]:
        """Like :func:`_first`, by two scatter-mins (least length, then least flat index among
        those) on dense scratch rows when the pairs are few enough."""
        if self.scratch is None:
            return _first(p, n, flat)
        low, pos = self.scratch
        np.minimum.at(low, p, n)
        ok = np.flatnonzero(n == low[p])
        np.minimum.at(pos, p[ok], flat[ok])
        win = ok[flat[ok] == pos[p[ok]]]  # flat indices are distinct: one winner per pair
        low[p[win]] = pos[p[win]] = _CAP + 1
        return p[win], n[win], flat[win]

    def _build(self, level: int, t: str, e: _Nodes | None) -> _Nodes:
        """Type ``t`` at ``level + 1``: every rule's candidates, the least (length, ranks)
        per pair (ranks of the children's witnesses make the choice shortlex)."""
        cur, out = self.hist[level], []
        for r, (lt, rt) in enumerate(self.rules[t]):
            a, b = (e if x == "E" else cur[x] for x in (lt, rt))
            p, n, i, j = self._pairs(a, b)
            if lt == "E":
                i = -np.ones_like(i)
            if rt == "E":
                j = -np.ones_like(j)
            gl = np.where(i >= 0, cur[lt].g[np.maximum(i, 0)] if lt != "E" else 0, -1)
            gr = np.where(j >= 0, cur[rt].g[np.maximum(j, 0)] if rt != "E" else 0, -1)
            out.append(_Nodes(p, n, gl, gr, np.full_like(p, r), i, j, -np.ones_like(p)))
        s = _Nodes(*(np.concatenate([getattr(o, f.name) for o in out]) for f in fields(_Nodes)))
        o = np.lexsort((s.gr, s.gl, s.n, s.p))
        keep = np.r_[True, s.p[o][1:] != s.p[o][:-1]] if len(o) else o.astype(bool)
        return s.take(o[keep])

    def step(self, level: int, e: int | None) -> dict[str, _Nodes]:
        """All node types and the roots at ``level + 1``; witnesses ranked (shortlex)."""
        pad = None if e is None else _Nodes(*(np.array([v]) for v in (e * self.M, 0, -1, -1,
                                                                        -1, -1, -1, -1)))
        new = {t: self._build(level, t, pad) for t in (*self.types, "R")}
        keys = [np.concatenate([getattr(new[t], k) for t in self.types])
                for k in ("gr", "gl", "n")]
        tid = np.concatenate([np.full(len(new[t]), k) for k, t in enumerate(self.types)])
        g = np.empty(len(tid), np.int64)
        g[np.lexsort((tid, *keys))] = np.arange(len(tid))
        start = 0
        for t in self.types:
            new[t].g = g[start:start + len(new[t])]
            start += len(new[t])
            new[t] = new[t].take(np.argsort(new[t].g))  # rank order: products stay shortlex
        return new

    def witness(self, level: int, t: str, x: int) -> tuple[np.ndarray, int]:
        """Tokens of a node's witness and its offset inside the node (iterative: chains of
        padding can be thousands of levels deep)."""
        memo: dict[tuple[int, str, int], tuple[np.ndarray, int]] = {}
        stack = [(level, t, x)]
        while stack:
            key = stack[-1]
            lv, tt, xx = key
            s = self.hist[lv][tt]
            r = int(s.rule[xx])
            if r < 0:
                memo[key] = (np.array([s.i[xx]], np.int64), 0)
                stack.pop()
                continue
            lt, rt = self.rules[tt][r]
            kids = [None if c == "E" else (lv - 1, c, int(ix))
                    for c, ix in ((lt, s.i[xx]), (rt, s.j[xx]))]
            todo = [k for k in kids if k is not None and k not in memo]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            left, right = (memo[k] if k is not None else (np.zeros(0, np.int64), 0)
                           for k in kids)
            offset = left[1] if kids[0] is not None else (1 << (lv - 1)) + right[1]
            memo[key] = (np.concatenate([left[0], right[0]]), offset)
        return memo[(level, t, x)]

    def key(self, level: int, e: int | None, lengths: bool) -> tuple[Any, ...]:
        """The state at ``level`` as a hashable value (with witness lengths once the search
        is for a shorter counterexample: then lengths decide what comes next)."""
        parts: list[Any] = [e]
        for t in self.types:
            s = self.hist[level][t]
            o = np.argsort(s.p)
            parts += [s.p[o].tobytes(), s.n[o].tobytes() if lengths else b""]
        return tuple(parts)


def certify_table(table: FiniteTable, lang: Any, *, offsets: bool = False, within: Any = None,
                  max_levels: int = 4096, max_pairs: int = 2_000_000,
                  max_witness_length: int = 1 << 20) -> Certificate:
    """Decide whether ``table`` classifies every string of every length >= 1 as ``lang`` does.

    offsets : also every left offset r >= 0 (root read at level ceil(log2(r + n)), as
        :meth:`FiniteTable.fold` does); the counterexample is then the shortest over all
        offsets (shortlex among the shortest only at offset 0).
    within : only the strings of these classes (a sub-language, as training's ``within``;
        None: every string).
    max_levels, max_pairs : budgets (tree levels; reachable pairs of one node type at one
        level): past either, :class:`~monoidlab.errors.MonoidTooLarge` names it. Work per level
        is quadratic in the pairs held.
    max_witness_length : a counterexample (or its buffer, with offsets) longer than this is
        reported by its length only, unconfirmed.
    """
    from monoidlab.algebra.languages import as_language

    lang = as_language(lang)
    if not isinstance(table, FiniteTable):
        raise InputError(f"certify_table: table must be a FiniteTable, got {type(table).__name__}")
    if table.vocab_size != lang.n_symbols:
        raise InputError(f"certify_table: the table has {table.vocab_size} letters, the "
                         f"language {lang.name!r} {lang.n_symbols} ({list(lang.alphabet)})")
    for name, v in (("max_levels", max_levels), ("max_pairs", max_pairs),
                    ("max_witness_length", max_witness_length)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
            raise InputError(f"certify_table: {name} must be a positive integer, got {v!r}")
    kept, names = kept_classes(lang, within)
    if table.layout == "scan":
        if offsets:
            raise InputError("certify_table: a scan-layout table reads every string from "
                             "position 0; offsets=True does not apply")
        from monoidlab.evaluation.scan_certificate import certify_scan_table

        return Certificate(**certify_scan_table(table, lang, max_levels=max_levels,
                                                max_pairs=max_pairs, kept=kept,
                                                max_witness_length=max_witness_length),
                           within=names)
    mono = lang.monoid()
    fx, outs = _Fixpoint(table, mono, offsets), np.asarray(mono.outputs)
    level, e, best, bound, largest = 0, table.pad_leaf, None, _CAP + 1, 1
    seen: dict[tuple[Any, ...], int] = {}
    while True:
        roots = fx.hist[level]["R"]
        bad = np.flatnonzero(misread(table.head, outs, roots.p, fx.M, kept)
                             & (roots.n < bound))
        if bad.size:  # shortest (then least-ranked) misread root of this level
            x = int(bad[np.lexsort((roots.gr[bad], roots.gl[bad], roots.n[bad]))[0]])
            best, bound, seen = (level, x), int(roots.n[x]), {}
            if not offsets:  # at offset 0, root lengths grow with the level: done
                break
        if bound <= _CAP:  # only witnesses shorter than the best can still matter
            for t in fx.types:
                fx.hist[level][t] = fx.hist[level][t].take(fx.hist[level][t].n < bound)
        key = fx.key(level, e, lengths=best is not None)
        if key in seen:
            break
        seen[key] = level
        if level >= max_levels:
            found = "" if best is None else f" (a counterexample of length {bound} is known)"
            raise MonoidTooLarge(f"certify_table: no repeat within max_levels={max_levels} "
                                 f"tree levels{found}; raise max_levels")
        fx.hist.append(fx.step(level, e))
        level += 1
        e = None if e is None else int(table.table[e, e])
        largest = max(largest, *(len(fx.hist[level][t]) for t in fx.types))
        if largest > max_pairs:
            raise MonoidTooLarge(f"certify_table: {largest} reachable (code, EC) pairs at tree "
                                 f"level {level}, over max_pairs={max_pairs}")
    common = dict(language=lang.name, levels=level, pairs=largest, n_codes=table.n_codes,
                  monoid_size=mono.size, padding=table.padding.value, offsets=offsets,
                  within=names)
    if best is None:
        return Certificate(correct=True, period=level - seen[key], **common)
    return _refutation(fx, table, lang, outs, best, max_witness_length, common)


def _refutation(fx: _Fixpoint, table: FiniteTable, lang: Any, outs: np.ndarray,
                best: tuple[int, int], limit: int, common: dict[str, Any]) -> Certificate:
    """The certificate of a wrong table: rebuild the witness and confirm it."""
    level, x = best
    p, n = int(fx.hist[level]["R"].p[x]), int(fx.hist[level]["R"].n[x])
    code, ec = divmod(p, fx.M)
    expected, predicted = int(outs[ec]), int(table.head[code])
    names = [(lang.classes[c] if c < len(lang.classes) else None) for c in (expected, predicted)]
    out: dict[str, Any] = dict(correct=False, period=0, counterexample_level=level,
                               counterexample_length=n if n < _CAP else None,
                               expected=expected, predicted=predicted,
                               expected_name=names[0], predicted_name=names[1])
    if n < _CAP and n <= limit:
        tokens, offset = fx.witness(level, "R", x)
        lengths = np.array([n])
        text = lang.decode(tokens[None, :], lengths)[0]
        out.update(counterexample=text if isinstance(text, str) else " ".join(text),
                   counterexample_tokens=tuple(tokens.tolist()), counterexample_offset=offset)
        if offset + n <= limit:  # a buffer this big can be folded: confirm, or it is a bug
            said = int(table.fold(tokens[None, :], lengths,
                                  np.array([offset]) if common["offsets"] else None)[0])
            truth = int(lang.classify(tokens[None, :], lengths)[0])
            if (said, truth) != (predicted, expected) or len(tokens) != n or (
                    offset and not common["offsets"]):
                raise RuntimeError(f"certify_table: internal error, counterexample "
                                   f"{out['counterexample']!r} at offset {offset} gives "
                                   f"{said} (model) and {truth} (DFA), expected {predicted} and "
                                   f"{expected}")
            out["confirmed"] = True
    return Certificate(**common, **out)


def brute_force_counterexample(table: FiniteTable, lang: Any, max_length: int,
                               offsets: bool = False, max_offset: int | None = None,
                               ) -> tuple[int, list[tuple[str, int]]] | None:
    """The shortest failing length up to ``max_length`` and every failing (string, offset) of
    that length (offsets 0..max_offset - 1, default the buffer of ``max_length``, which covers
    every tree shape under identity padding; offset 0 only without offsets), or None.

    >>> import monoidlab as ml
    >>> from monoidlab.models.finite import FiniteTable, monoid_table
    >>> lang = ml.load_language("parity"); exact = monoid_table(lang)
    >>> brute_force_counterexample(FiniteTable(exact.leaf, exact.table, [1, 1]), lang, 3)
    (1, [('0', 0)])
    """
    from monoidlab.algebra.languages import as_language

    lang = as_language(lang)
    V = table.vocab_size
    if V != lang.n_symbols:
        raise InputError(f"brute_force_counterexample: the table has {V} letters, the "
                         f"language {lang.n_symbols}")
    offs = np.arange(max_offset or buffer_size(max_length)) if offsets else np.zeros(1, int)
    if V ** max_length * len(offs) > 1 << 24:
        raise InputError(f"brute_force_counterexample: {V}^{max_length} strings x {len(offs)} "
                         f"offsets is too many; lower max_length")
    for n in range(1, max_length + 1):
        # every string of length n in lexicographic order, each at every offset
        tokens = (np.arange(V ** n)[:, None] // V ** np.arange(n - 1, -1, -1)) % V
        lengths = np.full(len(tokens), n)
        truth = np.repeat(lang.classify(tokens, lengths), len(offs))
        rows = np.repeat(tokens, len(offs), axis=0)
        said = table.fold(rows, np.full(len(rows), n), np.tile(offs, len(tokens)))
        bad = np.flatnonzero(said != truth)
        if bad.size:
            text = lang.decode(rows[bad], np.full(bad.size, n))
            return n, [(s if isinstance(s, str) else " ".join(s), int(offs[b % len(offs)]))
                       for s, b in zip(text, bad, strict=True)]
    return None
