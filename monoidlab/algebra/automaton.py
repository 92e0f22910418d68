"""Complete deterministic Moore machines: the language description everything else starts from.

An :class:`Automaton` holds an ordered alphabet, a transition table ``delta`` (states × symbols,
numpy), a start state and an output class per state. It is always *minimal*: construction drops
unreachable states and merges states that no suffix can tell apart (partition refinement that
starts from the output partition), then renumbers states in breadth-first order from the start.

Example
-------
>>> from monoidlab.algebra.automaton import Automaton
>>> parity = Automaton(alphabet=["0", "1"], delta=[[0, 1], [1, 0]], start=0, output=[0, 1],
...                    classes=["even", "odd"], name="parity")
>>> parity.classify(["0110", "111"]).tolist()
[0, 1]
>>> tokens, lengths = parity.encode(["01", "1"])
>>> tokens.tolist(), lengths.tolist()
([[0, 1], [1, 0]], [2, 1])
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from monoidlab._checks import check_count, check_str, is_int
from monoidlab._kernels import fold_kernel
from monoidlab._util import check_batch, length_mask
from monoidlab.errors import InputError, MissingDependency, MonoidTooLarge, SpecError

if TYPE_CHECKING:
    from automata.fa.dfa import DFA

    from monoidlab.algebra.monoid import SyntacticMonoid

__all__ = ["Automaton", "SpecError", "minimise"]


def _as_dfa(fa: Any) -> DFA:
    """An automata-lib ``DFA`` for a DFA, an NFA or a GNFA (one error for anything else)."""
    try:
        from automata.fa.dfa import DFA
        from automata.fa.gnfa import GNFA
        from automata.fa.nfa import NFA
    except ImportError:  # a core dependency, but a broken install should say so plainly
        raise MissingDependency("automata-lib is needed here: pip install automata-lib") from None
    if isinstance(fa, GNFA):
        # automata-lib has no GNFA -> NFA; its regular expression is the way across
        try:
            regex = fa.to_regex()  # None: the empty language
            fa = (NFA(states={0}, input_symbols=fa.input_symbols, transitions={0: {}},
                      initial_state=0, final_states=set()) if regex is None
                  else NFA.from_regex(regex, input_symbols=fa.input_symbols))
        except Exception as exc:  # automata-lib raises several exception types
            why = f"{type(exc).__name__}: {exc}"[:200]
            raise InputError(f"GNFA: its regular expression could not be read back ({why}); "
                             f"give the NFA or DFA it came from") from None
    if isinstance(fa, NFA):
        return DFA.from_nfa(fa)  # subset construction; minimised with everything else
    if isinstance(fa, DFA):
        return fa
    kind = f"{type(fa).__module__}.{type(fa).__name__}"
    if isinstance(fa, Automaton):
        kind += " (already a monoidlab machine: use it as it is)"
    raise InputError(f"from_automata_lib: an automata-lib DFA, NFA or GNFA, got {kind}")


def _smallest_int(n: int) -> np.dtype:
    for dt in (np.int8, np.int16, np.int32):
        if n <= np.iinfo(dt).max:
            return np.dtype(dt)
    return np.dtype(np.int64)


def minimise(delta: np.ndarray, start: int, output: np.ndarray) -> tuple[np.ndarray, int, np.ndarray, np.ndarray]:
    """Minimal Moore machine: reachable part, then Hopcroft's partition refinement.

    Returns ``(delta, start, output, old_to_new)`` where states are renumbered in breadth-first
    order from the start (symbols in alphabet order), so equal languages give equal tables;
    ``old_to_new[q]`` is -1 for unreachable states. Hopcroft's algorithm takes
    O(|Σ| n log n) steps, so a 10^5-state cycle minimises in well under a second (the plain
    Moore refinement needs one pass per distinguishing suffix length: n passes on a cycle).

    >>> d, s, out, old_to_new = minimise(np.array([[1], [2], [0], [0]]), 0, np.array([0, 0, 0, 1]))
    >>> d.ravel().tolist(), out.tolist(), old_to_new.tolist()
    ([0], [0], [0, 0, 0, -1])
    """
    delta = np.asarray(delta, dtype=np.int64)
    output = np.asarray(output, dtype=np.int64)
    n, k = delta.shape
    start = check_count(start, "start", minimum=0, maximum=n - 1)
    rows = delta.tolist()
    # Reachable states, breadth-first.
    seen = bytearray(n)
    seen[start] = 1
    queue = [start]
    for q in queue:  # the list grows while it is read: a FIFO without pops
        for t in rows[q]:
            if not seen[t]:
                seen[t] = 1
                queue.append(t)
    reach = np.flatnonzero(np.frombuffer(bytes(seen), np.uint8))
    index = np.full(n, -1, np.int64)
    index[reach] = np.arange(reach.size)
    succ = index[delta[reach]]  # successors as indices into reach
    _, block0 = np.unique(output[reach], return_inverse=True)
    block = _hopcroft(succ, block0.ravel())
    n_blocks = int(block.max()) + 1
    # Quotient table, then breadth-first renumbering from the start block.
    qdelta = np.empty((n_blocks, k), np.int64)
    qdelta[block] = block[succ]
    qout = np.empty(n_blocks, np.int64)
    qout[block] = output[reach]
    qrows = qdelta.tolist()
    first = int(block[index[start]])
    rank_of = [-1] * n_blocks
    rank_of[first] = 0
    order = [first]
    for b in order:
        for c in qrows[b]:
            if rank_of[c] < 0:
                rank_of[c] = len(order)
                order.append(c)
    perm = np.array(order, np.int64)
    rank = np.array(rank_of, np.int64)
    new_delta = rank[qdelta[perm]]
    old_to_new = np.full(n, -1, np.int64)
    old_to_new[reach] = rank[block]
    return new_delta, 0, qout[perm], old_to_new


def _hopcroft(succ: np.ndarray, block0: np.ndarray) -> np.ndarray:
    """The coarsest partition refining ``block0`` (an id per state) that ``succ`` (states ×
    symbols) respects, as a block id per state (ids in no particular order).

    Hopcroft's algorithm: split every block by the predecessors of a *splitter* (block, symbol);
    after a split, only the smaller half needs to become a splitter (unless the block already
    waits), which bounds the work by O(|Σ| n log n).
    """
    n, k = succ.shape
    if n == 0:
        return block0.copy()
    # predecessors of q under symbol a: pred[a][start[a][q]:start[a][q + 1]]
    pred, pstart = [], []
    for a in range(k):
        order = np.argsort(succ[:, a], kind="stable")
        pred.append(order.tolist())
        pstart.append(np.searchsorted(succ[order, a], np.arange(n + 1)).tolist())
    block_of = block0.tolist()
    members: list[set[int]] = [set() for _ in range(int(block0.max()) + 1)]
    for q, b in enumerate(block_of):
        members[b].add(q)
    largest = max(range(len(members)), key=lambda b: len(members[b]))
    waiting = [(b, a) for b in range(len(members)) if b != largest for a in range(k)]
    queued = set(waiting)
    while waiting:
        splitter = waiting.pop()
        queued.discard(splitter)
        b, a = splitter
        pa, sa = pred[a], pstart[a]
        touched: dict[int, list[int]] = {}
        for q in members[b]:
            for i in range(sa[q], sa[q + 1]):
                p = pa[i]
                touched.setdefault(block_of[p], []).append(p)
        for y, xs in touched.items():
            if len(xs) == len(members[y]):
                continue  # y lies inside the preimage: not split
            new = len(members)
            part = set(xs)
            members[y] -= part
            members.append(part)
            for p in xs:
                block_of[p] = new
            small = new if len(part) <= len(members[y]) else y
            for c in range(k):
                target = new if (y, c) in queued else small
                if (target, c) not in queued:
                    queued.add((target, c))
                    waiting.append((target, c))
    return np.array(block_of, np.int64)


class Automaton:
    """A minimal complete deterministic Moore machine.

    Parameters
    ----------
    alphabet : ordered symbols (strings, may be multi-character).
    delta : (states, symbols) int table, ``delta[q, a]`` = next state.
    start : start state index.
    output : class index per state.
    classes : class names; a recogniser has ``["reject", "accept"]``.
    name, description : free text.
    state_names : optional names of the given states (kept for the surviving representative).
    """

    # Set once by _init (through object.__setattr__); the class refuses every later write.
    alphabet: tuple[str, ...]
    delta: np.ndarray
    start: int
    output: np.ndarray
    classes: tuple[str, ...]
    name: str
    description: str
    state_names: tuple[str, ...]
    _symbol_index: dict[str, int]
    _monoid: SyntacticMonoid | None

    def __init__(
        self,
        *,
        alphabet: Sequence[str],
        delta: Any,
        start: int,
        output: Sequence[int] | np.ndarray,
        classes: Sequence[str] = ("reject", "accept"),
        name: str = "automaton",
        description: str = "",
        state_names: Sequence[str] | None = None,
        source: str | None = None,
    ) -> None:
        check_str(name, "name")
        check_str(description, "description")
        if source is not None:
            check_str(source, "source")
        src = source or f"Automaton({name!r})"
        alphabet = tuple(alphabet)
        if not alphabet:
            raise SpecError(src, "alphabet", "the alphabet is empty")
        for a in alphabet:
            if not isinstance(a, str) or not a:
                raise SpecError(src, "alphabet", f"symbol {a!r} is not a non-empty string")
        dup = {a for a in alphabet if alphabet.count(a) > 1}
        if dup:
            raise SpecError(src, "alphabet", f"duplicate symbol(s) {sorted(dup)}")
        classes = tuple(str(c) for c in classes)
        if not classes:
            raise SpecError(src, "classes", "no output classes")
        try:
            delta = np.asarray(delta, dtype=np.int64)
            output = np.asarray(output, dtype=np.int64)
        except (TypeError, ValueError) as exc:
            raise SpecError(src, "delta", f"not an integer table ({exc})") from None
        n = delta.shape[0] if delta.ndim == 2 else -1
        if delta.ndim != 2 or delta.shape[1] != len(alphabet) or n == 0:
            raise SpecError(src, "delta", f"expected shape (states, {len(alphabet)}), got {delta.shape}")
        if delta.min() < 0 or delta.max() >= n:
            raise SpecError(src, "delta", f"targets must be state indices 0..{n - 1}")
        if output.shape != (n,):
            raise SpecError(src, "output", f"expected {n} output classes, got shape {output.shape}")
        if output.min() < 0 or output.max() >= len(classes):
            raise SpecError(src, "output", f"class indices must lie in 0..{len(classes) - 1}")
        if not (is_int(start) and 0 <= start < n):
            raise SpecError(src, "start", f"start state {start!r} is not a state index 0..{n - 1}")

        mdelta, mstart, mout, old_to_new = minimise(delta, int(start), output)
        delta_ro = mdelta.astype(_smallest_int(len(mdelta)))
        delta_ro.flags.writeable = False
        mout.flags.writeable = False
        names = [str(i) for i in range(len(mdelta))]
        if state_names is not None:
            for old in range(len(old_to_new) - 1, -1, -1):  # first given name wins
                if old_to_new[old] >= 0:
                    names[old_to_new[old]] = str(state_names[old])
        self._init(alphabet, delta_ro, mstart, mout, classes, str(name), str(description),
                   tuple(names))

    def _init(self, alphabet: tuple[str, ...], delta: np.ndarray, start: int, output: np.ndarray,
              classes: tuple[str, ...], name: str, description: str,
              state_names: tuple[str, ...]) -> None:
        # The only writes: everything after goes through __setattr__, which refuses.
        for key, value in (("alphabet", alphabet), ("delta", delta), ("start", start),
                           ("output", output), ("classes", classes), ("name", name),
                           ("description", description), ("state_names", state_names),
                           ("_symbol_index", {a: i for i, a in enumerate(alphabet)}),
                           ("_monoid", None)):
            object.__setattr__(self, key, value)

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError(f"Automaton is immutable (it is shared by the language cache); use "
                             f"automaton.replace({key}=...) for a changed copy")

    def __delattr__(self, key: str) -> None:
        raise AttributeError("Automaton is immutable")

    def replace(self, *, name: str | None = None, description: str | None = None,
                classes: Sequence[str] | None = None) -> Automaton:
        """A copy with a new name, description or class names (the machine is unchanged, so
        no minimisation runs and the copy shares the cached monoid).

        >>> from monoidlab.algebra import families
        >>> families.parity().replace(name="xor").name
        'xor'
        """
        for value, what in ((name, "name"), (description, "description")):
            if value is not None:
                check_str(value, what)
        new_classes = self.classes if classes is None else tuple(str(c) for c in classes)
        if len(new_classes) != len(self.classes):
            raise SpecError(f"Automaton({self.name!r})", "classes", f"expected "
                            f"{len(self.classes)} class names, got {len(new_classes)}")
        copy = object.__new__(Automaton)
        copy._init(self.alphabet, self.delta, self.start, self.output, new_classes,
                   self.name if name is None else str(name),
                   self.description if description is None else str(description),
                   self.state_names)
        if self._monoid is not None and new_classes == self.classes:
            object.__setattr__(copy, "_monoid", self._monoid)
        return copy

    # ------------------------------------------------------------------ basic facts
    @property
    def n_states(self) -> int:
        return self.delta.shape[0]

    @property
    def n_symbols(self) -> int:
        return len(self.alphabet)

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    def is_recogniser(self) -> bool:
        return self.classes == ("reject", "accept")

    @property
    def single_char(self) -> bool:
        """True when every symbol is one character, so strings may be plain ``str``."""
        return all(len(a) == 1 for a in self.alphabet)

    def __repr__(self) -> str:
        return (f"Automaton({self.name!r}, states={self.n_states}, alphabet={list(self.alphabet)}, "
                f"classes={self.n_classes})")

    def __eq__(self, other: object) -> bool:
        """Equal when the minimal machines are identical (same language, same class names)."""
        return (isinstance(other, Automaton) and self.alphabet == other.alphabet
                and self.classes == other.classes and np.array_equal(self.delta, other.delta)
                and np.array_equal(self.output, other.output))

    def __hash__(self) -> int:
        return hash((self.alphabet, self.classes, self.delta.tobytes(), self.output.tobytes()))

    def _repr_html_(self) -> str:
        # names come from user files: escaped, so that "<" in a symbol is drawn, not parsed
        e = html.escape
        names = [e(str(n)) for n in self.state_names]
        head = "".join(f"<th>{e(a)}</th>" for a in self.alphabet)
        rows = "".join(
            f"<tr><td>{'→' if q == self.start else ''}{names[q]}</td>"
            + "".join(f"<td>{names[t]}</td>" for t in self.delta[q])
            + f"<td>{e(self.classes[self.output[q]])}</td></tr>"
            for q in range(self.n_states))
        return (f"<b>{e(self.name)}</b> — {e(self.description)}<br><table><tr><th>state</th>"
                f"{head}<th>class</th></tr>{rows}</table>")

    # ------------------------------------------------------------------ strings
    def encode(self, strings: Iterable[str | Sequence[str]]) -> tuple[np.ndarray, np.ndarray]:
        """Encode strings as ``(tokens (B, T) int64, lengths (B,) int64)``, right-padded with 0.

        A string is a ``str`` when every symbol is one character, otherwise a list of symbols.
        An unknown symbol raises :class:`~monoidlab.errors.InputError` naming the symbol and the string's index.
        """
        strings = list(strings)
        lengths = np.fromiter((len(s) for s in strings), np.int64, len(strings))
        T = int(lengths.max()) if len(strings) else 0
        tokens = np.zeros((len(strings), T), np.int64)
        if not strings:
            return tokens, lengths
        if self.single_char and all(isinstance(s, str) for s in strings):
            # One vectorised lookup over all code points of all strings.
            text = "".join(cast(list[str], strings))  # all str: checked just above
            codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
            sym_codes = np.array([ord(a) for a in self.alphabet], np.uint32)
            order = np.argsort(sym_codes)
            pos = np.searchsorted(sym_codes[order], codes)
            pos = np.minimum(pos, len(order) - 1)
            bad = sym_codes[order][pos] != codes
            if bad.any():
                first = int(np.flatnonzero(bad)[0])
                row = int(np.searchsorted(np.cumsum(lengths), first, side="right"))
                raise InputError(f"{self.name}: symbol {chr(codes[first])!r} in string {row} is "
                                 f"not in the alphabet {list(self.alphabet)}")
            flat = order[pos]
            mask = length_mask(lengths, T)
            tokens[mask] = flat
            return tokens, lengths
        for i, s in enumerate(strings):
            if isinstance(s, str) and not self.single_char:
                raise InputError(f"{self.name}: string {i} is a str but the alphabet has multi-"
                                 f"character symbols {list(self.alphabet)}; give a list of symbols")
            for t, a in enumerate(s):
                try:
                    tokens[i, t] = self._symbol_index[a]
                except KeyError:
                    raise InputError(f"{self.name}: symbol {a!r} in string {i} is not in the "
                                     f"alphabet {list(self.alphabet)}") from None
        return tokens, lengths

    def decode(self, tokens: np.ndarray, lengths: np.ndarray) -> list[str] | list[list[str]]:
        """Inverse of :meth:`encode` (``str`` for single-character alphabets, else lists)."""
        tokens, lengths = check_batch(tokens, lengths, self.n_symbols, self.name)
        sym = np.array(self.alphabet, dtype=object)
        out = [sym[tokens[i, : lengths[i]]].tolist() for i in range(len(lengths))]
        return ["".join(s) for s in out] if self.single_char else out

    def _as_batch(self, strings_or_tokens: Any,
                  lengths: Any = None) -> tuple[np.ndarray, np.ndarray]:
        if lengths is None:
            return self.encode(strings_or_tokens)
        return check_batch(strings_or_tokens, lengths, self.n_symbols, self.name)

    def run(self, strings_or_tokens: Any, lengths: Any = None) -> np.ndarray:
        """Final state of every string (compiled fold, or numpy in lock-step over the batch)."""
        tokens, lengths = self._as_batch(strings_or_tokens, lengths)
        kernel = fold_kernel()  # compiled fold; the start state is 0 after minimisation
        if kernel is not None and tokens.size and self.start == 0:
            out = np.zeros(len(lengths), np.int64)
            kernel(self.delta.astype(np.int32), np.ascontiguousarray(tokens),
                   lengths.astype(np.int64), out)
            return out
        # An extra "stay" column lets padding positions leave the state unchanged.
        table = np.concatenate([self.delta, np.arange(self.n_states)[:, None]], axis=1)
        flat = table.astype(np.int64).ravel()
        k1 = self.n_symbols + 1
        tok = np.where(length_mask(lengths, tokens.shape[1]), tokens, self.n_symbols)
        state = np.full(len(lengths), self.start, np.int64)
        for col in np.ascontiguousarray(tok.T):
            state = flat[state * k1 + col]
        return state

    def classify(self, strings_or_tokens: Any, lengths: Any = None) -> np.ndarray:
        """Class index of every string (``strings`` or ``tokens, lengths``)."""
        return self.output[self.run(strings_or_tokens, lengths)]

    # ------------------------------------------------------------------ algebra
    def monoid(self, max_elements: int = 1_000_000,
               max_bytes: int | None = None) -> SyntacticMonoid:
        """The syntactic monoid (transition monoid of this minimal machine), cached.

        A cached monoid larger than a later, smaller ``max_elements`` raises
        :class:`~monoidlab.errors.MonoidTooLarge` as a fresh enumeration would. The enumeration
        holds at most ``max_bytes`` (default 1 GiB: rows, Cayley table, words' parents and the
        index); past it the error names the memory it needs (T_8, 16,777,216 elements: about
        1.1 GiB, ``max_bytes=2**31``).
        """
        # The one lazy edge from automaton to monoid (same layer, see tests/test_layers.py):
        # the cache lives here so that every holder of this machine shares one enumeration.
        from monoidlab.algebra.monoid import SyntacticMonoid

        max_elements = check_count(max_elements, "max_elements")
        if max_bytes is not None:
            max_bytes = check_count(max_bytes, "max_bytes")
        monoid = self._monoid
        if monoid is None:  # a failed (too large) enumeration is not cached
            monoid = SyntacticMonoid(self, max_elements=max_elements, max_bytes=max_bytes)
            object.__setattr__(self, "_monoid", monoid)
        elif monoid.size > max_elements:
            raise MonoidTooLarge(f"{self.name}: the monoid has {monoid.size} elements, more "
                                 f"than max_elements={max_elements}")
        return monoid

    @classmethod
    def from_dfa(cls, dfa: Any, *, name: str | None = None, description: str = "",
                 alphabet: Sequence[str] | None = None) -> Automaton:
        """From an automata-lib ``DFA`` (partial DFAs are completed with a rejecting sink);
        an ``NFA`` or a ``GNFA`` is determinised first (:meth:`from_automata_lib`)."""
        return cls.from_automata_lib(dfa, name=name, description=description, alphabet=alphabet)

    @classmethod
    def from_automata_lib(cls, fa: Any, *, name: str | None = None, description: str = "",
                          alphabet: Sequence[str] | None = None) -> Automaton:
        """From an automata-lib finite automaton: a ``DFA`` (the inverse of
        :meth:`to_automata_lib`), an ``NFA`` (determinised by automata-lib's own
        ``DFA.from_nfa``) or a ``GNFA`` (through its regular expression); then minimised as
        every machine is. Anything else is an :class:`~monoidlab.errors.InputError`. ``name``
        defaults to what was given: ``"dfa"``, ``"nfa"`` or ``"gnfa"``.

        >>> from monoidlab.algebra import families
        >>> d = families.dyck(2)
        >>> Automaton.from_automata_lib(d.to_automata_lib()) == d
        True
        >>> from automata.fa.nfa import NFA
        >>> nfa = NFA.from_regex("(a|b)*c", input_symbols={"a", "b", "c"})
        >>> a = Automaton.from_automata_lib(nfa)
        >>> a.name, a.classify(["abac", "ca"]).tolist()
        ('nfa', [1, 0])
        """
        if name is None:
            name = type(fa).__name__.lower()
        return cls._from_dfa(_as_dfa(fa), name=name, description=description,
                             alphabet=alphabet)

    @classmethod
    def _from_dfa(cls, dfa: DFA, *, name: str, description: str,
                  alphabet: Sequence[str] | None) -> Automaton:
        symbols = list(alphabet) if alphabet is not None else sorted(dfa.input_symbols)
        states = sorted(dfa.states, key=repr)
        idx = {s: i for i, s in enumerate(states)}
        sink = len(states)
        delta = np.full((len(states) + 1, len(symbols)), sink, np.int64)
        for s, row in dfa.transitions.items():
            for a, t in row.items():
                if a in symbols:
                    delta[idx[s], symbols.index(a)] = idx[t]
        output = np.array([int(s in dfa.final_states) for s in states] + [0])
        return cls(alphabet=symbols, delta=delta, start=idx[dfa.initial_state], output=output,
                   name=name, description=description,
                   state_names=[str(s) for s in states] + ["sink"])

    @classmethod
    def from_regex(cls, regex: str, alphabet: Sequence[str], *, name: str = "regex",
                   description: str = "") -> Automaton:
        """From a regular expression in automata-lib's syntax (``|``, ``*``, ``+``, ``()``, ``&``).

        >>> Automaton.from_regex("(01)*", ["0", "1"]).classify(["0101", "010"]).tolist()
        [1, 0]
        """
        from automata.fa.dfa import DFA
        from automata.fa.nfa import NFA

        try:
            nfa = NFA.from_regex(regex, input_symbols=set(alphabet))
        except Exception as exc:  # automata-lib raises several exception types
            raise SpecError(f"regex {regex!r}", "regex", str(exc)) from None
        dfa = DFA.from_nfa(nfa)
        return cls.from_dfa(dfa, name=name, description=description or regex, alphabet=alphabet)

    def to_automata_lib(self) -> DFA:
        """An automata-lib ``DFA`` (recognisers only: accept = class 1), its states named as
        this machine's (``q0``, ``q1``, ... when two names coincide)."""
        from automata.fa.dfa import DFA

        if self.n_classes != 2:
            raise InputError(f"{self.name}: automata-lib DFAs recognise; this machine has "
                             f"{self.n_classes} classes")
        # the machine's own state names when they are distinct (a round trip keeps them)
        names = [str(n) for n in self.state_names]
        if len(set(names)) != self.n_states:
            names = [f"q{q}" for q in range(self.n_states)]
        trans = {names[q]: {a: names[int(self.delta[q, i])] for i, a in enumerate(self.alphabet)}
                 for q in range(self.n_states)}
        final = {names[q] for q in range(self.n_states) if self.output[q] == 1}
        return DFA(states=set(names), input_symbols=set(self.alphabet), transitions=trans,
                   initial_state=names[self.start], final_states=final)
