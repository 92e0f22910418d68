"""Monoid enumeration: a frontier-batched closure with integer keys (used by :mod:`monoidlab.algebra.monoid`).

The whole frontier is multiplied by every letter at once and deduplicated in bulk: rows of
state images are packed into int64 keys (direct-address table for small keys, a numba
open-addressing table or sorted runs otherwise), or hashed to 64 bits and verified for many
states. When the packed keys fit the direct-address table (e.g. T_7: 7 states of 3 bits), the
closure runs on the keys alone (:func:`_enumerate_direct`): a letter maps a key to the
product's key through a few table lookups on groups of its digits, so no row is built until
the end and no numba kernel is loaded (the first call in a fresh process stays cheap). The first occurrence of each new element is its shortlex-least word, and the products
give the right Cayley table for free. The monoid itself is defined in docs/concepts.md.

Memory is bounded, not only the element count: the frontier is multiplied in chunks of at most
:data:`CHUNK_BYTES` of candidates, and after every chunk the size is checked against
``max_elements`` *and* the bytes the monoid would hold against :data:`MAX_BYTES` (rows of
``n`` states each: a 10^5-state machine reaches 1 GiB after a few thousand elements). So no
allocation above ~1 GiB happens before :class:`~monoidlab.errors.MonoidTooLarge` is raised.
"""

from __future__ import annotations

import numpy as np

from monoidlab._kernels import candidates_kernel, probe_kernels, row_hash_kernel, rows_equal_kernel
from monoidlab.errors import MonoidTooLarge

__all__ = ["HashCollision", "KeyIndex", "enumerate_monoid", "MAX_BYTES", "CHUNK_BYTES",
           "bytes_per_element"]

MAX_BYTES = 2**30  # element rows + Cayley table + index an enumeration may hold
CHUNK_BYTES = 64 * 2**20  # candidate rows (as int64 keys' input) built at once


class HashCollision(Exception):
    """Two different transformations met under one 64-bit hash (astronomically rare)."""


class KeyIndex:
    """Map transformations (rows of state images) to element indices through integer keys.

    Keys are the rows packed into an int64 (``bits`` per state) when they fit; up to 2^22 keys
    a direct-address table answers lookups in one gather. Wider rows (many states) are hashed
    to 64 bits and every hit is verified against the stored row; on a collision the caller
    restarts with exact byte-string keys.
    """

    DIRECT_BITS = 24  # 16M int32 entries (64 MB, e.g. T_8); wider keys use the sorted index

    def __init__(self, n: int, exact_bytes: bool = False, max_elements: int | None = None
                 ) -> None:
        self.n = n
        bits = max(1, int(np.ceil(np.log2(max(n, 2)))))
        self.mode = ("bytes" if exact_bytes else "packed" if bits * n <= 63 else "hash")
        self.shift = np.arange(n, dtype=np.int64) * bits
        # a table of 2^(bits n) entries pays for itself when the monoid may fill a fair part of
        # it: past 2^22 entries (16 MiB) only when max_elements reaches 1/64 of it (a search
        # for small monoids, e.g. drawing random languages, keeps the table-free index)
        room = (1 << (bits * n)) <= max(1 << 22, 64 * (max_elements or 1 << 62))
        self.direct = (np.full(1 << (bits * n), -1, np.int32)
                       if self.mode == "packed" and bits * n <= self.DIRECT_BITS and room
                       else None)
        rng = np.random.default_rng(12345)
        self.mult = rng.integers(1, 2**62, size=n, dtype=np.int64) | 1
        self.runs: list[tuple[np.ndarray, np.ndarray]] = []  # sorted (keys, indices) runs
        self.rows: np.ndarray | None = None  # stored rows by index, for hash verification
        self._buf: np.ndarray | None = None  # capacity-doubling storage behind self.rows

    def store_rows(self, rows: np.ndarray) -> None:
        """Append ``rows`` to the stored rows (amortised O(1) per row, no full copy per level)."""
        n_old = 0 if self.rows is None else len(self.rows)
        need = n_old + len(rows)
        if self._buf is None or need > len(self._buf) or self._buf.dtype != rows.dtype:
            buf = np.empty((max(need, 2 * n_old, 16), rows.shape[1]), rows.dtype)
            if n_old:
                buf[:n_old] = self.rows
            self._buf = buf
        self._buf[n_old:need] = rows
        self.rows = self._buf[:need]

    def keys(self, rows: np.ndarray) -> np.ndarray:
        if not rows.size:
            return np.empty(0, np.int64)
        if self.mode == "packed":
            return np.bitwise_or.reduce(rows.astype(np.int64) << self.shift, axis=1)
        if self.mode == "hash":
            kernel = row_hash_kernel()
            if kernel is not None:  # one pass, no (rows, n) int64 temporaries
                out = np.empty(len(rows), np.int64)
                kernel(np.ascontiguousarray(rows), self.mult, out)
                return out
            with np.errstate(over="ignore"):  # wrap-around multiply-add is the hash
                return (rows.astype(np.int64) * self.mult).sum(axis=1)
        rows = np.ascontiguousarray(rows)  # exact: each row's bytes as one byte string
        return rows.view(np.dtype((np.bytes_, rows.shape[1] * rows.itemsize))).ravel()

    def lookup(self, keys: np.ndarray, rows: np.ndarray | None = None,
               strict: bool = True) -> np.ndarray:
        """Element index of each key, or -1 when unknown.

        In hash mode ``rows`` verify every hit: a mismatch raises :class:`HashCollision`
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
                    raise HashCollision
                found[hit[bad]] = -1
        return found

    def assign(self, keys: np.ndarray, rows: np.ndarray,
               start: int) -> tuple[np.ndarray, np.ndarray]:
        """Index of every candidate key, numbering unseen keys ``start, start+1, ...`` in
        candidate order; returns ``(found, first_pos)`` (positions of the new keys)."""
        found = self.lookup(keys, rows)
        new_mask = found < 0
        new_pos = np.flatnonzero(new_mask)
        _, first, inv = np.unique(keys[new_pos], return_index=True, return_inverse=True)
        if self.mode == "hash" and (rows[new_pos] != rows[new_pos[first]][inv.ravel()]).any():
            raise HashCollision
        first_pos = np.sort(new_pos[first])
        self.add(keys[first_pos], np.arange(start, start + len(first_pos)))
        if self.mode == "hash":
            self.store_rows(rows[first_pos])
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
            raise HashCollision
        # Sorted runs merged like a binary counter (an LSM tree): each key is re-sorted only
        # O(log N) times, however many levels the closure has (random machines: hundreds).
        self.runs.append((keys, idx))
        while len(self.runs) > 1 and len(self.runs[-1][0]) * 2 >= len(self.runs[-2][0]):
            (k2, i2), (k1, i1) = self.runs.pop(), self.runs.pop()
            k, i = np.concatenate([k1, k2]), np.concatenate([i1, i2])
            o = np.argsort(k, kind="stable")
            self.runs.append((k[o], i[o]))


class _HashedIndex(KeyIndex):
    """Packed keys in a numba open-addressing table (load <= 1/2): one pass per frontier, no
    sorting, however many levels the closure has."""

    def __init__(self, n: int) -> None:
        super().__init__(n)
        kernels = probe_kernels()
        assert kernels is not None, "built only when numba is available"
        self.kernels = kernels
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

    def assign(self, keys: np.ndarray, rows: np.ndarray | None,
               start: int) -> tuple[np.ndarray, np.ndarray]:
        need = 2 * (start + len(keys))
        if need > len(self.tab_keys):
            self._alloc(1 << (need - 1).bit_length())
        found = np.empty(len(keys), np.int64)
        is_new = np.zeros(len(keys), np.bool_)
        self.kernels[0](self.tab_keys, self.tab_vals, self.hshift, keys, start, found, is_new)
        first_pos = np.flatnonzero(is_new)
        self.all_keys.append(keys[first_pos])
        return found, first_pos

    def add(self, keys: np.ndarray, idx: np.ndarray, rows: np.ndarray | None = None) -> None:
        self.assign(keys, rows, int(idx[0]) if len(idx) else 0)

    def lookup(self, keys: np.ndarray, rows: np.ndarray | None = None,
               strict: bool = True) -> np.ndarray:
        found = np.empty(len(keys), np.int64)
        self.kernels[1](self.tab_keys, self.tab_vals, self.hshift, keys, found)
        return found


class _HashedRowIndex(_HashedIndex):
    """Hash mode (rows too wide to pack) in the numba open-addressing table: the keys are 64-bit
    row hashes and every hit is verified against the stored row (a mismatch raises
    :class:`HashCollision`, as in :class:`KeyIndex`). One probe per candidate instead of a
    binary search in every sorted run."""

    def __init__(self, n: int) -> None:
        super().__init__(n)
        equal = rows_equal_kernel()
        assert equal is not None, "built only when numba is available"
        self.rows_equal = equal

    def assign(self, keys: np.ndarray, rows: np.ndarray | None,
               start: int) -> tuple[np.ndarray, np.ndarray]:
        assert rows is not None, "hash mode verifies every candidate against its row"
        found, first_pos = super().assign(keys, rows, start)
        self.store_rows(rows[first_pos])
        ok = np.empty(len(found), np.bool_)
        if not self.rows_equal(self.rows, found, np.ascontiguousarray(rows), ok):
            raise HashCollision
        return found, first_pos

    def add(self, keys: np.ndarray, idx: np.ndarray, rows: np.ndarray | None = None) -> None:
        _HashedIndex.assign(self, keys, rows, int(idx[0]) if len(idx) else 0)  # keys only

    def lookup(self, keys: np.ndarray, rows: np.ndarray | None = None,
               strict: bool = True) -> np.ndarray:
        found = super().lookup(keys)
        if rows is not None and self.rows is not None:
            ok = np.empty(len(found), np.bool_)
            if not self.rows_equal(self.rows, found, np.ascontiguousarray(rows), ok):
                if strict:
                    raise HashCollision
                found[~ok] = -1
        return found


def bytes_per_element(n: int, k: int, mode: str) -> int:
    """Bytes an enumeration keeps per element of an ``n``-state, ``k``-letter machine: its row
    (twice in hash mode: the index verifies hits against a copy), its Cayley-table row,
    parent and letter, and the index's keys."""
    item = 1 if n <= 256 else 2 if n <= 65536 else 4
    if mode == "direct":  # key, row, right table (int32 pieces, then int64), parent, letter
        return 8 + n * item + 12 * k + 5
    return n * item * (2 if mode == "hash" else 1) + 8 * k + 48


def enumerate_monoid(delta: np.ndarray, max_elements: int, name: str, exact_bytes: bool,
                     max_bytes: int | None = None
                     ) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray],
                                list[np.ndarray], KeyIndex]:
    """Frontier-batched closure; returns element rows, right-table rows, parents, letters, index.
    ``max_bytes`` (default :data:`MAX_BYTES`) bounds the memory it may hold."""
    max_bytes = MAX_BYTES if max_bytes is None else int(max_bytes)
    n, k = delta.shape
    dt = np.uint8 if n <= 256 else np.uint16 if n <= 65536 else np.uint32
    gens = np.ascontiguousarray(delta.T, dtype=dt)  # gens[a][q] = delta[q, a]
    index = KeyIndex(n, exact_bytes, max_elements)
    if index.direct is not None:
        return _enumerate_direct(np.asarray(delta, np.int64), max_elements, name, index, dt,
                                 max_bytes)
    fast = probe_kernels() is not None and rows_equal_kernel() is not None
    if index.mode == "packed" and index.direct is None and fast:
        index = _HashedIndex(n)
    elif index.mode == "hash" and fast and row_hash_kernel() is not None:
        index = _HashedRowIndex(n)
    per_element = bytes_per_element(n, k, index.mode)
    max_size = min(int(max_elements), max_bytes // per_element)
    elements = [np.arange(n, dtype=dt)[None, :]]
    parent = [np.array([-1])]
    letter = [np.array([-1])]
    index.add(index.keys(elements[0]), np.array([0]))
    if index.mode == "hash":
        index.store_rows(elements[0])
    else:
        index.rows = elements[0]
    right_rows = []  # right[frontier elements], filled level by level
    frontier = elements[0]
    frontier_start, size = 0, 1
    # frontier rows per chunk: their k candidates each, as int64 (the widest temporary)
    chunk = max(1, CHUNK_BYTES // (8 * n * k))
    build = candidates_kernel()
    while frontier.size:
        new_rows = []
        for lo in range(0, len(frontier), chunk):
            part = frontier[lo: lo + chunk]
            # All products part × letter at once: f_{ua}(q) = delta(f_u(q), a).
            if build is not None:
                cand = np.empty((len(part) * k, n), dt)  # row = u*k + a
                build(gens, np.ascontiguousarray(part), cand)
            else:
                cand = gens[:, part].transpose(1, 0, 2).reshape(-1, n)  # (F*k, n)
            keys = index.keys(cand)
            # Known candidates get their index; unseen ones are numbered in candidate order, so
            # the first occurrence of each new element is its shortlex-least word.
            found, first_pos = index.assign(keys, cand, size)
            n_new = len(first_pos)
            if size + n_new > max_size:
                raise MonoidTooLarge(_too_large(name, size + n_new, max_elements, n, k,
                                                per_element, max_bytes))
            rows = cand[first_pos]
            elements.append(rows)
            new_rows.append(rows)
            right_rows.append(found.reshape(-1, k))
            parent.append(frontier_start + lo + first_pos // k)
            letter.append(first_pos % k)
            size += n_new
        frontier_start = size - sum(len(r) for r in new_rows)
        frontier = np.concatenate(new_rows) if len(new_rows) > 1 else new_rows[0]
    return elements, right_rows, parent, letter, index


#: digits of a key looked up at once when a letter acts on keys (tables of 2^12 entries)
GROUP_BITS = 12


def _letter_tables(delta: np.ndarray, bits: int) -> list[list[tuple[int, np.ndarray]]]:
    """For each letter a, ``[(shift, table), ...]`` over groups of digits of a packed key:
    ``key(f·a) = sum(table[(key(f) >> shift) & mask])``, where ``table[v]`` is the group of
    digits delta(digit, a) placed at the group's position (a digit >= n never occurs)."""
    n, k = delta.shape
    per = max(1, GROUP_BITS // bits)  # digits per group
    out: list[list[tuple[int, np.ndarray]]] = [[] for _ in range(k)]
    for g0 in range(0, n, per):
        g = min(per, n - g0)
        v = np.arange(1 << (bits * g), dtype=np.int64)
        digits = (v[:, None] >> (bits * np.arange(g))) & ((1 << bits) - 1)  # (2^(bits g), g)
        valid = (digits < n).all(axis=1)
        for a in range(k):
            img = delta[np.minimum(digits, n - 1), a]  # delta(digit, a)
            tab = (img << (bits * (g0 + np.arange(g)))).sum(axis=1)
            out[a].append((bits * g0, np.where(valid, tab, 0)))
    return out


def _enumerate_direct(delta: np.ndarray, max_elements: int, name: str, index: KeyIndex,
                      dt: type, max_bytes: int
                      ) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray],
                                 list[np.ndarray], KeyIndex]:
    """The closure on packed keys in the direct-address table (numpy only, no kernels): the
    same elements, order, words and right table as the row-based closure."""
    n, k = delta.shape
    bits = int(index.shift[1]) if n > 1 else 1
    tables = _letter_tables(delta, bits)
    direct = index.direct
    assert direct is not None
    per_element = bytes_per_element(n, k, "direct")
    max_size = min(int(max_elements), max(0, max_bytes - direct.nbytes) // per_element)
    identity = int((np.arange(n, dtype=np.int64) << index.shift).sum())
    direct[identity] = 0
    keys = [np.array([identity], np.int64)]
    parent = [np.array([-1], np.int32)]
    letter = [np.array([-1], np.int8 if k < 128 else np.int64)]
    right: list[np.ndarray] = []
    frontier, frontier_start, size = keys[0], 0, 1
    chunk = max(1, CHUNK_BYTES // (24 * k))
    while frontier.size:
        new_keys = []
        for lo in range(0, len(frontier), chunk):
            part = frontier[lo: lo + chunk]
            by_letter = np.empty((len(part), k), np.int64)  # row u, column a: key of u·a
            digits = [(part >> shift) & (len(tab) - 1) for shift, tab in tables[0]]
            for a, groups in enumerate(tables):
                acc = by_letter[:, a]
                np.take(groups[0][1], digits[0], out=acc)
                for (_, tab), d in zip(groups[1:], digits[1:]):
                    acc += tab[d]
            cand = by_letter.ravel()  # candidate u*k + a, the shortlex order of the words
            found = direct[cand]
            new = np.flatnonzero(found < 0)
            if len(new):
                first_pos = _first_occurrences(direct, cand, new)
                if size + len(first_pos) > max_size:
                    raise MonoidTooLarge(_too_large(name, size + len(first_pos), max_elements,
                                                    n, k, per_element, max_bytes,
                                                    direct.nbytes))
                direct[cand[first_pos]] = np.arange(size, size + len(first_pos), dtype=np.int32)
                found[new] = direct[cand[new]]
            else:
                first_pos = new
            new_keys.append(cand[first_pos])
            right.append(found.reshape(-1, k))
            parent.append((frontier_start + lo + first_pos // k).astype(np.int32))
            letter.append((first_pos % k).astype(np.int8 if k < 128 else np.int64))
            size += len(first_pos)
        frontier_start = size - sum(len(x) for x in new_keys)
        frontier = np.concatenate(new_keys)
        keys.append(frontier)
    del cand, by_letter, found, frontier
    # decoded piece by piece: no (size, n) int64 temporary
    rows: np.ndarray = np.empty((size, n), dt)
    at = 0
    for piece in keys:
        for lo in range(0, len(piece), chunk):
            part = piece[lo: lo + chunk]
            rows[at: at + len(part)] = (part[:, None] >> index.shift) & ((1 << bits) - 1)
            at += len(part)
    del keys
    index.rows = rows
    right_table = np.concatenate(right, dtype=np.int64)
    del right
    return [rows], [right_table], parent, letter, index


def _first_occurrences(direct: np.ndarray, cand: np.ndarray, new: np.ndarray) -> np.ndarray:
    """The positions in ``new`` (ascending candidate positions of unseen keys) that hold the
    first occurrence of their key, found in the direct table itself without sorting: each
    unseen key's slot holds -(position + 2) of a claimant, and smaller positions claim again
    until none is smaller (fancy assignment picks an arbitrary one of equal keys; each round
    strictly lowers every slot's position, and there are few rounds)."""
    keys = cand[new]
    # written last to first: where numpy assigns in order (it does, though it does not promise
    # to), the first occurrence wins at once and the loop below only confirms it
    direct[keys[::-1]] = -(new[::-1] + 2)
    while True:
        held = -direct[keys].astype(np.int64) - 2
        lower = new < held
        if not lower.any():
            break
        direct[keys[lower]] = -(new[lower] + 2)
    return new[held == new]


def _too_large(name: str, at_least: int, max_elements: int, n: int, k: int,
               per_element: int, max_bytes: int, fixed: int = 0) -> str:
    if at_least > max_elements:
        return (f"{name}: the monoid has more than max_elements={max_elements} elements (at "
                f"least {at_least}); raise max_elements to enumerate it")
    need = (at_least * per_element + fixed) / 2**30
    return (f"{name}: the monoid has at least {at_least} elements of {n} states each "
            f"({per_element} bytes per element with {k} letters): it needs at least "
            f"{need:.2f} GiB, more than the {max_bytes / 2**30:g} GiB an enumeration may hold "
            f"(max_bytes={max_bytes}; monoid(max_bytes=...) raises it)")
