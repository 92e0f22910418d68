"""The syntactic monoid of a minimal automaton: enumeration, Cayley tables, products, labelling.

Each word w acts on states by f_w(q) = delta*(q, w); the transition monoid {f_w} of the minimal
machine is the syntactic monoid of its output function. Its elements are the *equivalence
classes* (ECs) of strings. Convention: reading u then v, f_uv = f_v ∘ f_u, so ``multiply(a, b)``
is "a then b". Elements are numbered in shortlex order of their shortest representative word
(identity = 0).

Enumeration is a frontier-batched closure in numpy (:mod:`monoidlab.algebra._enumerate`), which also
yields the right Cayley table for free. The left table and the full multiplication table are
built on demand.

Example
-------
>>> import monoidlab as ml
>>> m = ml.load_language("parity").monoid()
>>> m.size, m.words
(2, ['', '1'])
>>> m.outputs[0] = 1   # cached and shared by every caller: read-only
Traceback (most recent call last):
...
ValueError: assignment destination is read-only
>>> tokens, lengths = ml.load_language("parity").encode(["0110", "1"])
>>> m.element_of(tokens, lengths).tolist()
[0, 1]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from monoidlab._checks import (
    FrozenList,
    ReadOnlyError,
    check_count,
    check_index,
    check_str,
    check_threads,
    read_only,
)
from monoidlab._kernels import label_kernels
from monoidlab._util import check_batch, length_mask
from monoidlab.algebra._enumerate import HashCollision, enumerate_monoid
from monoidlab.errors import InputError, MissingDependency, MonoidTooLarge

if TYPE_CHECKING:
    import networkx

    from monoidlab.algebra.automaton import Automaton
    from monoidlab.algebra.green import GreenStructure

__all__ = ["SyntacticMonoid", "MonoidTooLarge", "TABLE_LIMIT"]

TABLE_LIMIT = 4096  # build the full |M| x |M| table up to this size, products on demand beyond
HTML_ELEMENTS = 32  # representative words a notebook shows
HTML_LIST = 16  # symbols / class names a notebook shows

class SyntacticMonoid:
    """Transition monoid of a minimal :class:`~monoidlab.algebra.automaton.Automaton`.

    A monoid is cached on its automaton and shared by every caller, so it is immutable: its
    arrays are read-only, its word lists are :class:`~monoidlab._checks.FrozenList` and its
    attributes cannot be reassigned. Element arguments (``multiply``...) are integers in
    0 .. |M| - 1: floats are not truncated and negative indices do not wrap (``InputError``).

    Attributes
    ----------
    elements : (|M|, n) array, ``elements[m, q]`` = f_m(q).
    right : (|M|, |Σ|) right Cayley table, ``right[m, a]`` = m·a.
    word_tokens : shortest (shortlex-least) representative of each element, as letter indices.
    outputs : class index of each element, ``output[f_m(start)]``.
    """

    def __init__(self, automaton: Automaton, max_elements: int = 1_000_000,
                 max_bytes: int | None = None) -> None:
        from monoidlab.algebra.automaton import Automaton

        if not isinstance(automaton, Automaton):
            raise InputError(f"automaton: an Automaton (e.g. ml.load_language(...)), got "
                             f"{type(automaton).__name__}")
        self.automaton = automaton
        self.max_elements = check_count(max_elements, "max_elements")
        if max_bytes is not None:
            max_bytes = check_count(max_bytes, "max_bytes")
        delta = np.asarray(automaton.delta)
        try:
            out = enumerate_monoid(delta, self.max_elements, automaton.name, exact_bytes=False,
                                   max_bytes=max_bytes)
        except HashCollision:  # never seen in practice; exact keys are slower but safe
            out = enumerate_monoid(delta, self.max_elements, automaton.name, exact_bytes=True,
                                   max_bytes=max_bytes)
        elements, right_rows, parent, letter, index = out
        # one piece (the key-space closure) is kept as it is: no copy of the largest arrays
        self.elements: np.ndarray = elements[0] if len(elements) == 1 else np.concatenate(elements)
        self.right: np.ndarray = (right_rows[0] if len(right_rows) == 1 else
                                  np.concatenate(right_rows)).astype(np.int64, copy=False)
        self._parent = np.concatenate(parent)
        self._letter = np.concatenate(letter)
        self._index = index
        for arr in (self.elements, self.right, self._parent, self._letter):
            arr.flags.writeable = False
        object.__setattr__(self, "_frozen", True)

    def __setattr__(self, key: str, value: Any) -> None:
        if self.__dict__.get("_frozen"):
            raise ReadOnlyError(f"SyntacticMonoid is immutable (it is cached on its automaton "
                                f"and shared); cannot set {key!r}")
        object.__setattr__(self, key, value)

    def __delattr__(self, key: str) -> None:
        raise ReadOnlyError(f"SyntacticMonoid is immutable; cannot delete {key!r}")

    # ------------------------------------------------------------------ basic facts
    @property
    def size(self) -> int:
        return len(self.elements)

    def __len__(self) -> int:
        return self.size

    @property
    def n_symbols(self) -> int:
        return self.right.shape[1]

    @cached_property
    def word_tokens(self) -> list[tuple[int, ...]]:
        """Shortlex-least representative word of each element, as letter indices."""
        words: list[tuple[int, ...]] = [()]
        parent = self._parent.tolist()
        letter = self._letter.tolist()
        for m in range(1, self.size):
            words.append(words[parent[m]] + (letter[m],))
        return FrozenList(words)

    @cached_property
    def words(self) -> list[str]:
        """Representative word of each element in the alphabet (symbols joined; '' = identity)."""
        sep = "" if self.automaton.single_char else " "
        alpha = self.automaton.alphabet
        return FrozenList([sep.join(alpha[a] for a in w) for w in self.word_tokens])

    def labels(self, empty: str = "ε") -> list[str]:
        """Display labels: representative words with ``empty`` for the identity (a new list
        at every call, the caller's to change)."""
        check_str(empty, "empty")
        return [w if w else empty for w in self.words]

    @cached_property
    def word_lengths(self) -> np.ndarray:
        return read_only(np.array([len(w) for w in self.word_tokens], np.int64))

    @cached_property
    def outputs(self) -> np.ndarray:
        """Class index of each element: ``output[f_m(start)]``."""
        a = self.automaton
        return read_only(np.asarray(a.output)[self.elements[:, a.start].astype(np.int64)])

    @cached_property
    def letters(self) -> np.ndarray:
        """Element of each single letter (``right[0]``)."""
        return read_only(self.right[0].copy())

    # ------------------------------------------------------------------ products
    def index_of(self, transformations: np.ndarray) -> np.ndarray:
        """Element index of each transformation row (-1 when not in the monoid): ``(n,)`` or
        ``(B, n)`` integers, n = the automaton's states.

        >>> import monoidlab as ml
        >>> ml.load_language("parity").monoid().index_of([[1, 0], [0, 0]]).tolist()
        [1, -1]
        """
        n = self.elements.shape[1]
        try:
            rows = np.atleast_2d(np.asarray(transformations))
        except (TypeError, ValueError):  # ragged rows
            rows = np.zeros((0, 0), object)
        if rows.ndim != 2 or rows.shape[1] != n or (
                rows.size and (rows.dtype == bool or not np.issubdtype(rows.dtype, np.integer))):
            raise InputError(f"transformations: integer rows of {n} states ((n,) or (B, n)), "
                             f"got {rows.dtype} of shape {np.shape(transformations)}")
        ok = (rows.shape[1] == n) & (rows >= 0).all(axis=1) & (rows < n).all(axis=1)
        out = np.full(len(rows), -1, np.int64)
        if ok.any():  # states outside 0..n-1 would alias other keys: never members
            good = rows[ok].astype(self.elements.dtype)
            out[ok] = self._index.lookup(self._index.keys(good), good, strict=False)
        return out

    def multiply(self, a: Any, b: Any) -> np.ndarray:
        """Product "a then b" (f_b ∘ f_a), vectorised over broadcastable index arrays.

        >>> import monoidlab as ml
        >>> m = ml.load_language("cycle-navigation").monoid()
        >>> int(m.multiply(m.letters[2], m.letters[0]))   # +1 then -1
        0
        """
        a = check_index(a, self.size, "element a")
        b = check_index(b, self.size, "element b")
        try:
            a, b = np.broadcast_arrays(a, b)
        except ValueError:
            raise InputError(f"multiply: shapes {a.shape} and {b.shape} do not broadcast") from None
        if self.size <= TABLE_LIMIT:
            return self.table[a, b]
        fa = self.elements[a.ravel()].astype(np.int64)
        fb = self.elements[b.ravel()]
        prod = np.take_along_axis(fb, fa, axis=1)
        return self.index_of(prod).reshape(a.shape)

    @cached_property
    def table(self) -> np.ndarray:
        """Full multiplication table ``table[a, b]`` = a·b (only for |M| <= 4096)."""
        if self.size > TABLE_LIMIT:
            raise MonoidTooLarge(f"{self.automaton.name}: the monoid has {self.size} elements; "
                                 f"full multiplication tables are built up to {TABLE_LIMIT} "
                                 "(use multiply() for on-demand products)")
        # a·b = fold of b's word over the right table, from every a at once.
        ilr = self.identity_letter_right.astype(np.int32)
        words = self.word_matrix
        cur = np.tile(np.arange(self.size, dtype=np.int32), (self.size, 1))  # cur[b, a]
        for step in range(words.shape[1]):
            cur = ilr[cur, words[:, step][:, None]]
        out = np.ascontiguousarray(cur.T, dtype=np.int64)
        out.flags.writeable = False
        return out

    @cached_property
    def word_matrix(self) -> np.ndarray:
        """Representative words as a (|M|, max length) array padded with the identity letter |Σ|."""
        out = np.full((self.size, int(self.word_lengths.max(initial=0))), self.n_symbols, np.int64)
        for m, w in enumerate(self.word_tokens):
            out[m, : len(w)] = w
        return read_only(out)

    @cached_property
    def left(self) -> np.ndarray:
        """Left Cayley table ``left[m, a]`` = a·m."""
        from monoidlab._kernels import candidates_kernel

        k = self.n_symbols
        gather = candidates_kernel()  # out[m] = elements[m][fa]: one pass, no fancy indexing
        out = np.empty((self.size, k), np.int64)
        rows = np.empty_like(self.elements)
        for a in range(k):
            fa = self.elements[self.letters[a]].astype(np.int64)
            # (a·m)(q) = f_m(f_a(q)) for every m at once
            if gather is not None:
                gather(self.elements, fa[None, :], rows)
                prod = rows
            else:
                prod = self.elements[:, fa]
            # products of elements are elements: no range check, exact lookups
            out[:, a] = self._index.lookup(self._index.keys(prod), prod, strict=False)
        out.flags.writeable = False
        return out

    @cached_property
    def identity_letter_right(self) -> np.ndarray:
        """Right table with one extra column that maps every element to itself (for padding)."""
        return read_only(np.concatenate([self.right, np.arange(self.size)[:, None]], axis=1))

    # ------------------------------------------------------------------ labelling
    def _check_batch(self, tokens: Any, lengths: Any) -> tuple[np.ndarray, np.ndarray]:
        return check_batch(tokens, lengths, self.n_symbols, self.automaton.name)

    def _padded_columns(self, tokens: np.ndarray,
                        lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k = self.n_symbols
        valid = length_mask(lengths, tokens.shape[1])
        # (T, B) contiguous so that each step reads one row; padding = the identity column k.
        return np.ascontiguousarray(np.where(valid, tokens, k).T), valid

    def element_of(self, tokens: Any, lengths: Any, threads: int = 1) -> np.ndarray:
        """EC of every string of a batch: a fold over the right Cayley table.

        Compiled with numba (a dependency of umap-learn) when available
        (:func:`monoidlab._kernels.label_kernels`: eight strings at a time to hide the latency
        of the dependent table reads, the table pre-scaled and flat in the smallest unsigned
        dtype, the token check inside the same pass; with ``threads`` > 1, blocks of 256
        strings in parallel for batches of at least 1024 strings); otherwise numpy in lock-step
        over the batch (one gather per position). One thread by default: on a shared machine a
        second thread often costs more than it gains (docs/benchmarks.md).

        >>> import monoidlab as ml
        >>> lang = ml.load_language("tomita-5")
        >>> m = lang.monoid()
        >>> t, n = lang.encode(["0011", "01"])
        >>> m.outputs[m.element_of(t, n)].tolist() == lang.classify(["0011", "01"]).tolist()
        True
        """
        threads = check_threads(threads)
        kernels = label_kernels()
        tokens, lengths = np.asarray(tokens), np.asarray(lengths)
        if kernels is None or not self._plain_batch(tokens, lengths):
            tokens, lengths = self._check_batch(tokens, lengths)  # raises on a bad batch
        if kernels is not None and tokens.size:
            import numba

            if tokens.dtype == np.uint64:
                tokens = tokens.view(np.int64)  # ids >= 2^63 show as negative: refused below
            out = np.empty(tokens.shape[0], np.int64)
            flat, mask = self._label_table
            args = (flat, mask, np.ascontiguousarray(tokens), lengths.astype(np.int64), out)
            if threads > 1 and len(tokens) >= 1024:
                before = numba.get_num_threads()
                numba.set_num_threads(min(int(threads), numba.config.NUMBA_NUM_THREADS))
                try:
                    small, big = kernels[1](*args)
                finally:
                    numba.set_num_threads(before)
            else:
                small, big = kernels[0](*args, 0, len(tokens))
            if small < 0 or big >= self.n_symbols:
                self._check_batch(tokens, lengths)  # raises, naming the bad id
            return out
        if not tokens.size:
            return np.zeros(tokens.shape[0], np.int64)
        cols, _ = self._padded_columns(tokens, lengths)
        k1 = self.n_symbols + 1
        dt = np.int32 if self.size * k1 < 2**31 else np.int64
        flat = self.identity_letter_right.astype(dt).ravel()
        e = np.zeros(tokens.shape[0], dt)
        for col in cols.astype(dt):
            e = flat[e * k1 + col]
        return e.astype(np.int64)

    @staticmethod
    def _plain_batch(tokens: np.ndarray, lengths: np.ndarray) -> bool:
        """Shapes, dtypes and lengths fine (cheap checks; the kernel checks the token ids)."""
        return (tokens.ndim == 2 and lengths.shape == (tokens.shape[0],)
                and np.issubdtype(tokens.dtype, np.integer)
                and np.issubdtype(lengths.dtype, np.integer)
                and (not lengths.size
                     or (int(lengths.min()) >= 0 and int(lengths.max()) <= tokens.shape[1])))

    @cached_property
    def _label_table(self) -> tuple[np.ndarray, int]:
        """``(flat, mask)`` for :func:`~monoidlab._kernels.label_kernels`: width S = the next
        power of two >= |Σ|, ``flat[m * S + a]`` = (m·a) * S, in the smallest unsigned dtype."""
        S = 1 << max(0, self.n_symbols - 1).bit_length()
        n = self.size * S
        dtype = next(t for t in (np.uint8, np.uint16, np.uint32, np.uint64)
                     if n - 1 <= np.iinfo(t).max)
        flat = np.zeros((self.size, S), dtype)
        flat[:, : self.n_symbols] = self.right * S
        return read_only(flat.ravel()), S - 1

    def prefix_elements(self, tokens: Any, lengths: Any) -> np.ndarray:
        """EC of every prefix: ``out[i, t]`` = EC of ``s_i[: t + 1]``; -1 at padding positions."""
        tokens, lengths = self._check_batch(tokens, lengths)
        cols, valid = self._padded_columns(tokens, lengths)
        k1 = self.n_symbols + 1
        flat = self.identity_letter_right.ravel()
        out = np.empty(cols.shape, np.int64)
        e = np.zeros(tokens.shape[0], np.int64)
        for t, col in enumerate(cols):
            e = flat[e * k1 + col]
            out[t] = e
        return np.where(valid, out.T, -1)

    def element_of_words(self, words: Iterable[str | Sequence[str]]) -> np.ndarray:
        """EC of strings given as in :meth:`Automaton.encode`."""
        return self.element_of(*self.automaton.encode(words))

    # ------------------------------------------------------------------ structure
    @cached_property
    def green(self) -> GreenStructure:
        """Green's relations (:class:`monoidlab.algebra.green.GreenStructure`), computed once."""
        from monoidlab.algebra.green import GreenStructure

        return GreenStructure(self)

    @cached_property
    def idempotents(self) -> np.ndarray:
        """Indices of the idempotents e·e = e."""
        e = self.elements.astype(np.int64)
        return read_only(np.flatnonzero((np.take_along_axis(e, e, axis=1) == e).all(axis=1)))

    @cached_property
    def is_commutative(self) -> bool:
        """Commutative iff the letters commute pairwise."""
        # Compare the letters' transformations directly: going through multiply() would build
        # the full |M| x |M| table just for k^2 products.
        e = self.elements[self.letters].astype(np.int64)  # (k, n)
        k = len(e)
        ab = e[np.arange(k)[None, :, None], e[:, None, :]]  # ab[a, b, q] = f_b(f_a(q))
        return bool((ab == ab.transpose(1, 0, 2)).all())

    def to_networkx(self, side: str = "right") -> networkx.MultiDiGraph:
        """The right or left Cayley graph as a ``networkx.MultiDiGraph`` (:meth:`cayley_graph`):
        edges carry their ``letter``, nodes their ``word`` (shortest representative, ``ε`` for
        the identity; both also as ``label``, what drawing tools show), ``output`` (class name), ``r`` / ``l`` / ``h`` / ``j`` (Green classes)
        and ``idempotent``.

        >>> import monoidlab as ml
        >>> g = ml.load_language("parity").monoid().to_networkx()
        >>> g.number_of_nodes(), g.number_of_edges(), g.nodes[1]["word"], g.nodes[0]["idempotent"]
        (2, 4, '1', True)
        >>> g.nodes[1]["label"], g.edges[0, 1, 0]["label"]
        ('1', '1')
        """
        return self.cayley_graph(side)

    def to_libsemigroups(self) -> Any:
        """A monoid ``libsemigroups_pybind11.Presentation`` over the letters (the user's
        symbols when each is one character, else the letter indices 0 .. |Σ| - 1), with the
        empty word: one rule ``u·a = v`` for each element u and letter a whose product is
        another element's shortest word v (Froidure-Pin's reduced rules: u's suffix times a is
        itself shortest). Its Todd-Coxeter or Knuth-Bendix enumeration is this monoid. Needs
        libsemigroups-pybind11 (the ``dev`` extra).

        >>> import monoidlab as ml
        >>> p = ml.load_language("parity").monoid().to_libsemigroups()  # doctest: +SKIP
        >>> p.alphabet(), p.rules  # doctest: +SKIP
        ('01', ['0', '', '11', ''])
        """
        try:
            import libsemigroups_pybind11 as lsg
        except ImportError:
            raise MissingDependency("to_libsemigroups needs libsemigroups-pybind11: "
                                    "pip install libsemigroups-pybind11") from None
        chars = self.automaton.single_char and len(set(self.automaton.alphabet)) == self.n_symbols
        alphabet: Any = "".join(self.automaton.alphabet) if chars else list(range(self.n_symbols))
        p = lsg.Presentation(alphabet)
        p.contains_empty_word(True)
        words: list[Any] = list(self.words) if chars else [list(w) for w in self.word_tokens]
        for u, a, v in self.reduced_rules():
            lhs = words[u] + alphabet[a : a + 1]  # one letter, as a str or as a list
            lsg.presentation.add_rule(p, lhs, words[v])
        p.throw_if_bad_alphabet_or_rules()
        return p

    def reduced_rules(self) -> list[tuple[int, int, int]]:
        """``(u, a, v)``: the word of element u then letter a equals the word of element v, for
        every product u·a that is not itself a shortest word while the suffix of u's word
        times a is (the rules of :meth:`to_libsemigroups`; the others follow from them).

        >>> import monoidlab as ml
        >>> ml.load_language("parity").monoid().reduced_rules()   # 0 = ε, 1·1 = ε
        [(0, 0, 0), (1, 1, 0)]
        """
        n, k = self.size, self.n_symbols
        parent, letter = self._parent.astype(np.int64), self._letter.astype(np.int64)
        # the element of each word with its first letter dropped: suffix(w·a) = suffix(w)·a
        # (a factor of a shortest word is shortest, so this is that element's own word),
        # one word length at a time
        suffix = np.zeros(n, np.int64)
        for length in range(2, int(self.word_lengths.max(initial=0)) + 1):
            ms = np.flatnonzero(self.word_lengths == length)
            suffix[ms] = self.right[suffix[parent[ms]], letter[ms]]
        tree = np.zeros((n, k), bool)  # (m, a): m's word + a is the shortest word of m·a
        tree[parent[1:], letter[1:]] = True
        # u = ε: every letter that is no new element needs its rule (a = v)
        needed = ~tree & np.where(np.arange(n)[:, None] == 0, True, tree[suffix])
        us, As = np.nonzero(needed)
        return [(int(u), int(a), int(self.right[u, a])) for u, a in zip(us, As)]

    def cayley_graph(self, side: str = "right") -> networkx.MultiDiGraph:
        """The right or left Cayley graph as a ``networkx.MultiDiGraph``: edges labelled by
        letter, nodes by their word, class, Green classes and idempotency (:meth:`to_networkx`)."""
        import networkx as nx

        if not isinstance(side, str) or side not in ("right", "left"):
            raise InputError(f"side must be 'right' or 'left', got {side!r}")
        table = self.right if side == "right" else self.left
        g = nx.MultiDiGraph(name=self.automaton.name, side=side)
        green, labels, classes = self.green, self.labels(), self.automaton.classes
        idem = np.zeros(self.size, bool)
        idem[self.idempotents] = True
        # "label": what drawing tools (graphviz, pyvis, Gephi) show: the word, and the letter
        g.add_nodes_from((m, {"label": labels[m], "word": labels[m],
                              "output": classes[int(self.outputs[m])],
                              "r": int(green.r[m]), "l": int(green.l[m]), "h": int(green.h[m]),
                              "j": int(green.j[m]), "idempotent": bool(idem[m])})
                         for m in range(self.size))
        alpha = self.automaton.alphabet
        g.add_edges_from((int(m), int(table[m, a]), {"letter": alpha[a], "label": alpha[a]})
                         for m in range(self.size) for a in range(self.n_symbols))
        return g

    def summary(self) -> dict[str, Any]:
        """Plain-data summary (the JSON of ``monoidlab monoid``)."""
        a, g = self.automaton, self.green
        return {
            "name": a.name, "description": a.description, "states": a.n_states,
            "alphabet": list(a.alphabet), "classes": list(a.classes), "size": self.size,
            "idempotents": int(len(self.idempotents)), "r_classes": g.n_r, "l_classes": g.n_l,
            "h_classes": g.n_h, "j_classes": g.n_j, "d_classes": g.n_j,
            "group": g.is_group, "aperiodic": g.is_aperiodic, "commutative": self.is_commutative,
            "j_trivial": g.j_trivial, "r_trivial": g.r_trivial, "l_trivial": g.l_trivial,
        }

    def __repr__(self) -> str:
        s = self.summary()
        props = [p for p in ("group", "aperiodic", "commutative") if s[p]]
        return (f"SyntacticMonoid({s['name']!r}: |M|={s['size']}, idempotents={s['idempotents']}, "
                f"R={s['r_classes']}, L={s['l_classes']}, H={s['h_classes']}, J={s['j_classes']}"
                f"{', ' + ', '.join(props) if props else ''})")

    def _repr_html_(self) -> str:
        """The summary as a table and the first :data:`HTML_ELEMENTS` representative words."""
        import html

        s = self.summary()
        keys = ["states", "alphabet", "classes", "size", "idempotents", "r_classes",
                "l_classes", "h_classes", "j_classes", "group", "aperiodic", "commutative"]
        def text(v: Any) -> str:  # a list (alphabet, classes) shortened like the words
            if not isinstance(v, list):
                return str(v)
            more = f", ... ({len(v)} in all)" if len(v) > HTML_LIST else ""
            return ", ".join(map(str, v[:HTML_LIST])) + more

        rows = "".join(f"<tr><th style='text-align:left'>{k}</th><td>"
                       f"{html.escape(text(s[k]))}</td></tr>" for k in keys)
        words = self.labels()
        shown = ", ".join(html.escape(w) for w in words[:HTML_ELEMENTS])
        more = f", ... ({self.size} in all: <code>.words</code>)" if self.size > HTML_ELEMENTS else ""
        return (f"<b>{html.escape(str(s['name']))}</b>: syntactic monoid"
                f"<table>{rows}</table><p>elements (shortest words): {shown}{more}</p>")
