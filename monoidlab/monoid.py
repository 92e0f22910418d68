"""The syntactic monoid of a minimal automaton: enumeration, Cayley tables, products, labelling.

Each word w acts on states by f_w(q) = delta*(q, w); the transition monoid {f_w} of the minimal
machine is the syntactic monoid of its output function. Its elements are the *equivalence
classes* (ECs) of strings. Convention: reading u then v, f_uv = f_v ∘ f_u, so ``multiply(a, b)``
is "a then b". Elements are numbered in shortlex order of their shortest representative word
(identity = 0).

Enumeration is a frontier-batched closure in numpy: the whole frontier is multiplied by every
letter at once and deduplicated in bulk through integer keys, which also yields the right Cayley
table for free. The left table and the full multiplication table are built on demand.

Example
-------
>>> import monoidlab as ml
>>> m = ml.load_language("parity").monoid()
>>> m.size, m.words
(2, ['', '1'])
>>> tokens, lengths = ml.load_language("parity").encode(["0110", "1"])
>>> m.element_of(tokens, lengths).tolist()
[0, 1]
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

__all__ = ["SyntacticMonoid", "MonoidTooLarge"]

TABLE_LIMIT = 4096  # build the full |M| x |M| table up to this size, products on demand beyond


class MonoidTooLarge(RuntimeError):
    """Enumeration went past ``max_elements``."""


_KERNEL: list = []  # [compiled fold or None], filled on first use


def _fold_kernel():
    """The numba fold (compiled once per process, cached on disk), or None without numba."""
    if _KERNEL:
        return _KERNEL[0]
    try:
        import numba
    except ImportError:  # numpy fallback
        _KERNEL.append(None)
        return None

    @numba.njit(cache=True, nogil=True)
    def fold8(table, tokens, lengths, out):  # pragma: no cover - compiled
        W = 8
        e = np.zeros(W, np.int64)
        for s in range(0, tokens.shape[0], W):
            n = min(W, tokens.shape[0] - s)
            longest = 0
            for j in range(n):
                e[j] = 0
                longest = max(longest, lengths[s + j])
            for t in range(longest):
                for j in range(n):  # eight independent chains interleave in the pipeline
                    if t < lengths[s + j]:
                        e[j] = table[e[j], tokens[s + j, t]]
            for j in range(n):
                out[s + j] = e[j]

    _KERNEL.append(fold8)
    return fold8


class _HashCollision(Exception):
    """Two different transformations met under one 64-bit hash (astronomically rare)."""


class _KeyIndex:
    """Map transformations (rows of state images) to element indices through integer keys.

    Keys are the rows packed into an int64 (``bits`` per state) when they fit; up to 2^22 keys
    a direct-address table answers lookups in one gather. Wider rows (many states) are hashed
    to 64 bits and every hit is verified against the stored row; on a collision the caller
    restarts with exact byte-string keys.
    """

    DIRECT_BITS = 22  # 4M int32 entries (16 MB); wider keys use the sorted index

    def __init__(self, n: int, exact_bytes: bool = False):
        self.n = n
        bits = max(1, int(np.ceil(np.log2(max(n, 2)))))
        self.mode = ("bytes" if exact_bytes else "packed" if bits * n <= 63 else "hash")
        self.shift = np.arange(n, dtype=np.int64) * bits
        self.direct = (np.full(1 << (bits * n), -1, np.int32)
                       if self.mode == "packed" and bits * n <= self.DIRECT_BITS else None)
        rng = np.random.default_rng(12345)
        self.mult = rng.integers(1, 2**62, size=n, dtype=np.int64) | 1
        self.runs: list[tuple[np.ndarray, np.ndarray]] = []  # sorted (keys, indices) runs
        self.rows: np.ndarray | None = None  # stored rows by index, for hash verification

    def keys(self, rows: np.ndarray) -> np.ndarray:
        if not rows.size:
            return np.empty(0, np.int64)
        if self.mode == "packed":
            return np.bitwise_or.reduce(rows.astype(np.int64) << self.shift, axis=1)
        if self.mode == "hash":
            with np.errstate(over="ignore"):  # wrap-around multiply-add is the hash
                return (rows.astype(np.int64) * self.mult).sum(axis=1)
        rows = np.ascontiguousarray(rows)  # exact: each row's bytes as one byte string
        return rows.view(np.dtype((np.bytes_, rows.shape[1] * rows.itemsize))).ravel()

    def lookup(self, keys: np.ndarray, rows: np.ndarray | None = None,
               strict: bool = True) -> np.ndarray:
        """Element index of each key, or -1 when unknown.

        In hash mode ``rows`` verify every hit: a mismatch raises :class:`_HashCollision`
        (``strict``, during enumeration) or reads as unknown (queries of arbitrary rows).
        """
        if self.direct is not None:
            return self.direct[keys].astype(np.int64)
        found = np.full(len(keys), -1, np.int64)
        for run_keys, run_idx in self.runs:  # at most ~log2(N) sorted runs
            pos = np.minimum(np.searchsorted(run_keys, keys), len(run_keys) - 1)
            hit = run_keys[pos] == keys
            found[hit] = run_idx[pos[hit]]
        if self.mode == "hash" and rows is not None and self.rows is not None:
            hit = np.flatnonzero(found >= 0)
            bad = (self.rows[found[hit]] != rows[hit]).any(axis=1)
            if bad.any():
                if strict:
                    raise _HashCollision
                found[hit[bad]] = -1
        return found

    def assign(self, keys: np.ndarray, rows: np.ndarray, start: int):
        """Index of every candidate key, numbering unseen keys ``start, start+1, ...`` in
        candidate order; returns ``(found, first_pos)`` (positions of the new keys)."""
        found = self.lookup(keys, rows)
        new_mask = found < 0
        new_pos = np.flatnonzero(new_mask)
        _, first, inv = np.unique(keys[new_pos], return_index=True, return_inverse=True)
        if self.mode == "hash" and (rows[new_pos] != rows[new_pos[first]][inv.ravel()]).any():
            raise _HashCollision
        first_pos = np.sort(new_pos[first])
        self.add(keys[first_pos], np.arange(start, start + len(first_pos)))
        if self.mode == "hash":
            self.rows = np.concatenate([self.rows, rows[first_pos]])
        found[new_mask] = self.lookup(keys[new_mask])
        return found, first_pos

    def add(self, keys: np.ndarray, idx: np.ndarray, rows: np.ndarray | None = None) -> None:
        if self.direct is not None:
            self.direct[keys] = idx
            return
        if not len(keys):
            return
        order = np.argsort(keys, kind="stable")
        keys, idx = keys[order], idx[order]
        if self.mode == "hash" and len(np.unique(keys)) != len(keys):
            raise _HashCollision
        # Sorted runs merged like a binary counter (an LSM tree): each key is re-sorted only
        # O(log N) times, however many levels the closure has (random machines: hundreds).
        self.runs.append((keys, idx))
        while len(self.runs) > 1 and len(self.runs[-1][0]) * 2 >= len(self.runs[-2][0]):
            (k2, i2), (k1, i1) = self.runs.pop(), self.runs.pop()
            k, i = np.concatenate([k1, k2]), np.concatenate([i1, i2])
            o = np.argsort(k, kind="stable")
            self.runs.append((k[o], i[o]))


_PROBE: list = []


def _probe_kernels():
    """numba kernels for an open-addressing hash table of int64 keys (or None)."""
    if _PROBE:
        return _PROBE[0]
    try:
        import numba
    except ImportError:
        _PROBE.append(None)
        return None

    @numba.njit(cache=True, nogil=True)
    def assign(tab_keys, tab_vals, shift, keys, start, found, is_new):  # pragma: no cover
        mask = tab_keys.shape[0] - 1
        nxt = start
        for i in range(keys.shape[0]):
            key = keys[i]
            slot = np.int64((np.uint64(key) * np.uint64(11400714819323198485)) >> np.uint64(shift))
            while True:
                v = tab_vals[slot]
                if v < 0:  # empty: a new element, numbered in candidate (shortlex) order
                    tab_keys[slot] = key
                    tab_vals[slot] = nxt
                    found[i] = nxt
                    is_new[i] = True
                    nxt += 1
                    break
                if tab_keys[slot] == key:
                    found[i] = v
                    break
                slot = (slot + 1) & mask
        return nxt

    @numba.njit(cache=True, nogil=True)
    def lookup(tab_keys, tab_vals, shift, keys, found):  # pragma: no cover
        mask = tab_keys.shape[0] - 1
        for i in range(keys.shape[0]):
            key = keys[i]
            slot = np.int64((np.uint64(key) * np.uint64(11400714819323198485)) >> np.uint64(shift))
            found[i] = -1
            while tab_vals[slot] >= 0:
                if tab_keys[slot] == key:
                    found[i] = tab_vals[slot]
                    break
                slot = (slot + 1) & mask

    _PROBE.append((assign, lookup))
    return _PROBE[0]


class _HashedIndex(_KeyIndex):
    """Packed keys in a numba open-addressing table (load <= 1/2): one pass per frontier, no
    sorting, however many levels the closure has."""

    def __init__(self, n: int):
        super().__init__(n)
        self.kernels = _probe_kernels()
        self.all_keys: list[np.ndarray] = []
        self._alloc(1 << 12)

    def _alloc(self, capacity: int) -> None:
        self.tab_keys = np.zeros(capacity, np.int64)
        self.tab_vals = np.full(capacity, -1, np.int64)
        self.hshift = 64 - (capacity.bit_length() - 1)
        if self.all_keys:  # re-insert every key in index order: values stay 0..N-1
            keys = np.concatenate(self.all_keys)
            self.kernels[0](self.tab_keys, self.tab_vals, self.hshift, keys, 0,
                            np.empty(len(keys), np.int64), np.zeros(len(keys), np.bool_))

    def assign(self, keys: np.ndarray, rows: np.ndarray, start: int):
        need = 2 * (start + len(keys))
        if need > len(self.tab_keys):
            self._alloc(1 << (need - 1).bit_length())
        found = np.empty(len(keys), np.int64)
        is_new = np.zeros(len(keys), np.bool_)
        self.kernels[0](self.tab_keys, self.tab_vals, self.hshift, keys, start, found, is_new)
        first_pos = np.flatnonzero(is_new)
        self.all_keys.append(keys[first_pos])
        return found, first_pos

    def add(self, keys: np.ndarray, idx: np.ndarray, rows=None) -> None:
        self.assign(keys, rows, int(idx[0]) if len(idx) else 0)

    def lookup(self, keys: np.ndarray, rows=None, strict: bool = True) -> np.ndarray:
        found = np.empty(len(keys), np.int64)
        self.kernels[1](self.tab_keys, self.tab_vals, self.hshift, keys, found)
        return found


def _enumerate(delta: np.ndarray, max_elements: int, name: str, exact_bytes: bool):
    """Frontier-batched closure; returns element rows, right-table rows, parents, letters, index."""
    n, k = delta.shape
    dt = np.uint8 if n <= 256 else np.uint16 if n <= 65536 else np.uint32
    gens = delta.T.astype(dt)  # gens[a][q] = delta[q, a]
    index = _KeyIndex(n, exact_bytes)
    if index.mode == "packed" and index.direct is None and _probe_kernels() is not None:
        index = _HashedIndex(n)
    elements = [np.arange(n, dtype=dt)[None, :]]
    parent = [np.array([-1])]
    letter = [np.array([-1])]
    index.add(index.keys(elements[0]), np.array([0]))
    index.rows = elements[0]
    right_rows = []  # right[frontier elements], filled level by level
    frontier = elements[0]
    frontier_start, size = 0, 1
    while frontier.size:
        # All products frontier × letter at once: f_{ua}(q) = delta(f_u(q), a).
        cand = gens[:, frontier].transpose(1, 0, 2).reshape(-1, n)  # (F*k, n), row = u*k + a
        keys = index.keys(cand)
        # Known candidates get their index; unseen ones are numbered in candidate order, so
        # the first occurrence of each new element is its shortlex-least word.
        found, first_pos = index.assign(keys, cand, size)
        n_new = len(first_pos)
        if size + n_new > max_elements:
            raise MonoidTooLarge(
                f"{name}: the monoid has more than max_elements={max_elements} "
                f"elements (at least {size + n_new}); raise max_elements to enumerate it")
        elements.append(cand[first_pos])
        right_rows.append(found.reshape(-1, k))
        parent.append(frontier_start + first_pos // k)
        letter.append(first_pos % k)
        frontier_start, size = size, size + n_new
        frontier = cand[first_pos]
    return elements, right_rows, parent, letter, index


class SyntacticMonoid:
    """Transition monoid of a minimal :class:`~monoidlab.automaton.Automaton`.

    Attributes
    ----------
    elements : (|M|, n) array, ``elements[m, q]`` = f_m(q).
    right : (|M|, |Σ|) right Cayley table, ``right[m, a]`` = m·a.
    word_tokens : shortest (shortlex-least) representative of each element, as letter indices.
    outputs : class index of each element, ``output[f_m(start)]``.
    """

    def __init__(self, automaton, max_elements: int = 1_000_000):
        self.automaton = automaton
        self.max_elements = int(max_elements)
        delta = np.asarray(automaton.delta)
        try:
            out = _enumerate(delta, self.max_elements, automaton.name, exact_bytes=False)
        except _HashCollision:  # never seen in practice; exact keys are slower but safe
            out = _enumerate(delta, self.max_elements, automaton.name, exact_bytes=True)
        elements, right_rows, parent, letter, index = out
        self.elements: np.ndarray = np.concatenate(elements)
        self.right: np.ndarray = np.concatenate(right_rows).astype(np.int64)
        self._parent = np.concatenate(parent)
        self._letter = np.concatenate(letter)
        self._index = index
        for arr in (self.elements, self.right):
            arr.flags.writeable = False

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
        for m in range(1, self.size):
            words.append(words[self._parent[m]] + (int(self._letter[m]),))
        return words

    @cached_property
    def words(self) -> list[str]:
        """Representative word of each element in the alphabet (symbols joined; '' = identity)."""
        sep = "" if self.automaton.single_char else " "
        alpha = self.automaton.alphabet
        return [sep.join(alpha[a] for a in w) for w in self.word_tokens]

    def labels(self, empty: str = "ε") -> list[str]:
        """Display labels: representative words with ``empty`` for the identity."""
        return [w if w else empty for w in self.words]

    @cached_property
    def word_lengths(self) -> np.ndarray:
        return np.array([len(w) for w in self.word_tokens], np.int64)

    @cached_property
    def outputs(self) -> np.ndarray:
        """Class index of each element: ``output[f_m(start)]``."""
        a = self.automaton
        return np.asarray(a.output)[self.elements[:, a.start].astype(np.int64)]

    @cached_property
    def letters(self) -> np.ndarray:
        """Element of each single letter (``right[0]``)."""
        return self.right[0].copy()

    # ------------------------------------------------------------------ products
    def index_of(self, transformations: np.ndarray) -> np.ndarray:
        """Element index of each transformation row (-1 when not in the monoid)."""
        rows = np.atleast_2d(np.asarray(transformations))
        n = self.elements.shape[1]
        ok = (rows.shape[1] == n) & (rows >= 0).all(axis=1) & (rows < n).all(axis=1)
        out = np.full(len(rows), -1, np.int64)
        if ok.any():  # states outside 0..n-1 would alias other keys: never members
            good = rows[ok].astype(self.elements.dtype)
            out[ok] = self._index.lookup(self._index.keys(good), good, strict=False)
        return out

    def multiply(self, a, b) -> np.ndarray:
        """Product "a then b" (f_b ∘ f_a), vectorised over broadcastable index arrays.

        >>> import monoidlab as ml
        >>> m = ml.load_language("cycle-navigation").monoid()
        >>> int(m.multiply(m.letters[2], m.letters[0]))   # +1 then -1
        0
        """
        a, b = np.broadcast_arrays(np.asarray(a, np.int64), np.asarray(b, np.int64))
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
            raise MemoryError(f"{self.automaton.name}: |M| = {self.size} > {TABLE_LIMIT}; use "
                              "multiply() for on-demand products")
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
        return out

    @cached_property
    def left(self) -> np.ndarray:
        """Left Cayley table ``left[m, a]`` = a·m."""
        k = self.n_symbols
        out = np.empty((self.size, k), np.int64)
        for a in range(k):
            fa = self.elements[self.letters[a]].astype(np.int64)
            # (a·m)(q) = f_m(f_a(q)) for every m at once
            out[:, a] = self.index_of(self.elements[:, fa])
        out.flags.writeable = False
        return out

    @cached_property
    def identity_letter_right(self) -> np.ndarray:
        """Right table with one extra column that maps every element to itself (for padding)."""
        return np.concatenate([self.right, np.arange(self.size)[:, None]], axis=1)

    # ------------------------------------------------------------------ labelling
    def _check_batch(self, tokens, lengths):
        tokens = np.asarray(tokens)
        lengths = np.asarray(lengths)
        if tokens.ndim != 2 or lengths.shape != (tokens.shape[0],):
            raise ValueError(f"expected tokens (B, T) and lengths (B,), got {tokens.shape} and "
                             f"{lengths.shape}")
        if tokens.size and (tokens.min() < 0 or tokens.max() >= self.n_symbols):
            raise ValueError(f"token ids must lie in 0..{self.n_symbols - 1}")
        if lengths.size and (lengths.min() < 0 or lengths.max() > tokens.shape[1]):
            raise ValueError(f"lengths must lie in 0..{tokens.shape[1]}")
        return tokens, lengths

    def _padded_columns(self, tokens, lengths):
        k = self.n_symbols
        valid = np.arange(tokens.shape[1])[None, :] < lengths[:, None]
        # (T, B) contiguous so that each step reads one row; padding = the identity column k.
        return np.ascontiguousarray(np.where(valid, tokens, k).T), valid

    def element_of(self, tokens, lengths) -> np.ndarray:
        """EC of every string of a batch: a fold over the right Cayley table.

        Compiled with numba (a dependency of umap-learn) when available, folding eight strings
        at a time to hide the latency of the dependent table reads; otherwise numpy in
        lock-step over the batch (one gather per position).

        >>> import monoidlab as ml
        >>> lang = ml.load_language("tomita-5")
        >>> m = lang.monoid()
        >>> t, n = lang.encode(["0011", "01"])
        >>> m.outputs[m.element_of(t, n)].tolist() == lang.classify(["0011", "01"]).tolist()
        True
        """
        tokens, lengths = self._check_batch(tokens, lengths)
        out = np.zeros(tokens.shape[0], np.int64)
        kernel = _fold_kernel()
        if kernel is not None and tokens.size:
            kernel(self._right32, np.ascontiguousarray(tokens), lengths.astype(np.int64), out)
            return out
        cols, _ = self._padded_columns(tokens, lengths)
        k1 = self.n_symbols + 1
        dt = np.int32 if self.size * k1 < 2**31 else np.int64
        flat = self.identity_letter_right.astype(dt).ravel()
        e = np.zeros(tokens.shape[0], dt)
        for col in cols.astype(dt):
            e = flat[e * k1 + col]
        return e.astype(np.int64)

    @cached_property
    def _right32(self) -> np.ndarray:
        return self.right.astype(np.int32 if self.size < 2**31 else np.int64)

    def prefix_elements(self, tokens, lengths) -> np.ndarray:
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

    def element_of_words(self, words) -> np.ndarray:
        """EC of strings given as in :meth:`Automaton.encode`."""
        return self.element_of(*self.automaton.encode(words))

    # ------------------------------------------------------------------ structure
    @cached_property
    def green(self):
        """Green's relations (:class:`monoidlab.green.GreenStructure`), computed once."""
        from monoidlab.green import GreenStructure

        return GreenStructure(self)

    @cached_property
    def idempotents(self) -> np.ndarray:
        """Indices of the idempotents e·e = e."""
        e = self.elements.astype(np.int64)
        return np.flatnonzero((np.take_along_axis(e, e, axis=1) == e).all(axis=1))

    @cached_property
    def is_commutative(self) -> bool:
        """Commutative iff the letters commute pairwise."""
        # Compare the letters' transformations directly: going through multiply() would build
        # the full |M| x |M| table just for k^2 products.
        e = self.elements[self.letters].astype(np.int64)  # (k, n)
        k = len(e)
        ab = e[np.arange(k)[None, :, None], e[:, None, :]]  # ab[a, b, q] = f_b(f_a(q))
        return bool((ab == ab.transpose(1, 0, 2)).all())

    def cayley_graph(self, side: str = "right"):
        """The right or left Cayley graph as a ``networkx.MultiDiGraph`` (edges labelled by letter)."""
        import networkx as nx

        if side not in ("right", "left"):
            raise ValueError(f"side must be 'right' or 'left', got {side!r}")
        table = self.right if side == "right" else self.left
        g = nx.MultiDiGraph()
        g.add_nodes_from(range(self.size))
        alpha = self.automaton.alphabet
        g.add_edges_from((int(m), int(table[m, a]), {"letter": alpha[a]})
                         for m in range(self.size) for a in range(self.n_symbols))
        return g

    def summary(self) -> dict:
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
