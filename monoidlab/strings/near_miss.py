"""Near-miss strings: one edit away from a string of another class, drawn exactly.

A *near miss* of class c' is a string s' = edit(s) where s has another class c ≠ c' and the
edit is one *substitution* (s = u a v, s' = u b v, a ≠ b) or one *adjacent swap*
(s = u a b v, s' = u b a v, a ≠ b). A model that only watches a few symbols, or only counts
them, cannot tell s' from s; a model that learned the language can.

Draws are exact, with no rejection loop. Every class that has near misses gets an equal
share, and inside a class every edit type that reaches it (a swap keeps the symbol counts, so
a model that only counts cannot tell those apart); inside a (class, edit type) each near miss
is uniform over the (s, edit) pairs that lead to it. The weight of an edit at position i from automaton state q is
π_i(q) · G(δ(q, a), δ(q, b)), where π_i is the law of the state after a uniform prefix of
length i, and G, a backward law on the *pair automaton* (states (p, p'), both read the same
suffix), is the probability that a uniform suffix leads p into the base class and p' into c'.
Prefixes and suffixes are then drawn letter by letter from path counts. Laws are kept in log
scale, so lengths in the hundreds work for every language of the suite.

Example
-------
>>> import numpy as np, monoidlab as ml
>>> lang = ml.load_language("dyck-2")
>>> nm = near_misses(np.random.default_rng(0), lang, 8, 6)
>>> lang.classify(nm.tokens, np.full(6, 8)).tolist() == nm.labels.tolist()
True
>>> sorted(set(nm.labels.tolist()))   # both directions: members and non-members
[0, 1]
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from monoidlab._checks import check_count, check_seed
from monoidlab._util import MAX_LENGTH, check_batch_workload, check_limits_flag, limit_error
from monoidlab.errors import InputError, MonoidTooLarge
from monoidlab.laws import backward_laws, draw_walks, scaled_backward_laws, scaled_forward_laws

__all__ = ["EDITS", "NearMisses", "near_misses", "near_miss_classes", "pair_table"]

EDITS = ("substitution", "swap")


@dataclass
class NearMisses:
    """Near misses of one length: ``tokens`` (n, L), ``labels`` (their classes), ``base``
    (the strings they were edited from) and ``base_labels`` (their classes), ``edit``
    ("substitution"/"swap"), ``position`` (where the edit starts)."""

    tokens: np.ndarray
    labels: np.ndarray
    base: np.ndarray
    base_labels: np.ndarray
    edit: np.ndarray
    position: np.ndarray


def pair_table(delta: np.ndarray) -> np.ndarray:
    """Transition table of the pair automaton: node ``p * n + p'`` reads a letter in both.

    >>> pair_table(np.array([[0, 1], [1, 0]])).tolist()
    [[0, 3], [1, 2], [2, 1], [3, 0]]
    """
    delta = np.asarray(delta, np.int64)
    n = delta.shape[0]
    return (delta[:, None, :] * n + delta[None, :, :]).reshape(n * n, -1)


#: bytes the near-miss tables of one language may take (the pair automaton's laws are
#: (lengths + 1) x states² x classes floats, several of them); above it near misses are refused
NEAR_MISS_BYTES = 2 << 30


class NearMissTooLarge(MonoidTooLarge):
    """The near-miss tables of a language would exceed :data:`NEAR_MISS_BYTES`."""


def near_miss_bytes(n_states: int, n_labels: int, max_len: int) -> int:
    """Bytes of the near-miss tables (four float64 arrays over lengths x pairs x labels).

    >>> near_miss_bytes(341, 257, 64) / 2**30 > 50  # prefix-4-4: 341 states, 257 classes
    True
    """
    return 4 * 8 * (max_len + 1) * n_states * n_states * max(n_labels, 1)


class _Laws:
    """Length-independent laws of one language, sub-language and edit set, up to ``max_len``:
    prefix state laws, pair-automaton suffix laws per target class, path counts for drawing
    prefixes and suffixes. Cached, and extended when a longer length is asked for."""

    def __init__(self, lang: Any, keep: np.ndarray, max_len: int) -> None:
        delta = np.asarray(lang.delta, np.int64)
        out = np.asarray(lang.output)
        n, k = delta.shape
        self.n, self.k, self.max_len = n, k, max_len
        self.delta, self.pairs = delta, pair_table(delta)
        self.labels = np.flatnonzero(keep)  # candidate classes of the near misses
        need = near_miss_bytes(n, len(self.labels), max_len)
        if need > NEAR_MISS_BYTES:  # refuse before allocating (prefix-4-4 would need ~60 GiB)
            raise NearMissTooLarge(
                f"{lang.name}: near misses up to length {max_len} need about "
                f"{need / 2**30:.1f} GiB of tables ({n} states, so {n * n} state pairs, x "
                f"{len(self.labels)} classes; limit {NEAR_MISS_BYTES / 2**30:.0f} GiB): use "
                "the 'balanced' or 'ec_stratified' sampler / test kinds for this language")
        # final[(p, p'), g]: p in a kept class other than label g, p' in label g
        po, qo = np.repeat(out, n), np.tile(out, n)
        lab = self.labels[None, :]
        final = (keep[po][:, None] & (po[:, None] != lab)) & (qo[:, None] == lab)
        self.final = final.astype(float)
        pi, pi_ls = scaled_forward_laws(delta, lang.start, max_len)
        G, G_ls = scaled_backward_laws(self.pairs, self.final, max_len)
        with np.errstate(divide="ignore"):
            self.log_pi = np.log(pi) + pi_ls[:, None]  # (max_len+1, n)
            self.log_G = np.log(G) + G_ls[:, None, :]  # (max_len+1, n², labels)
        self.C_u = backward_laws(delta, np.eye(n), max_len, rescale=True)
        self.C_v = backward_laws(self.pairs, self.final, max_len, rescale=True)
        a, b = np.nonzero(~np.eye(k, dtype=bool))  # ordered letter pairs, a != b
        self.a, self.b = a, b
        self.after_sub = (delta[:, a] * n + delta[:, b])  # (n, ab) pair after the edit
        self.after_swap = delta[delta[:, a], b] * n + delta[delta[:, b], a]


_CACHE: dict = {}


def _laws(lang: Any, keep: np.ndarray, max_len: int) -> _Laws:
    key = (hash(lang), keep.tobytes())
    laws = _CACHE.get(key)
    if laws is None or laws.max_len < max_len:
        if len(_CACHE) > 32:
            _CACHE.clear()
        laws = _CACHE[key] = _Laws(lang, keep, max(max_len, 64))
    return laws


class _Weights:
    """Log-weights of every (edit, position, state, a, b) per target class, for one length."""

    def __init__(self, laws: _Laws, L: int, edits: tuple[str, ...]) -> None:
        self.laws, self.L = laws, L
        n, k = laws.n, laws.k
        parts = []
        if "substitution" in edits:
            i = np.arange(L)
            parts.append(laws.log_pi[i][:, :, None, None] + laws.log_G[L - 1 - i][:, laws.after_sub])
        if "swap" in edits and L >= 2:
            i = np.arange(L - 1)
            # a swap pair counts k times less often than a substitution pair (one letter fewer
            # is free), so its weight carries 1/k for the mix to be uniform over (s, edit)
            parts.append(laws.log_pi[i][:, :, None, None]
                         + laws.log_G[L - 2 - i][:, laws.after_swap] - np.log(k))
        self.edits = [e for e in EDITS if e in edits and (e != "swap" or L >= 2)]
        self.sizes = [int(np.prod(p.shape[:3])) for p in parts]
        G = len(laws.labels)
        self.log_w = (np.concatenate([p.reshape(-1, G) for p in parts]) if parts
                      else np.full((0, G), -np.inf))  # (cells, labels)
        top = self.log_w.max(axis=0) if len(self.log_w) else np.full(G, -np.inf)
        self.available = np.isfinite(top)
        self.n = n
        self.log_w.flags.writeable = False  # shared through _weights' cache

    def decode(self, cell: np.ndarray) -> tuple[np.ndarray, ...]:
        """(edit index, position, state, a, b) of flat cells."""
        edit = np.zeros(len(cell), np.int64)
        local = cell.copy()
        offset = 0
        for e, size in enumerate(self.sizes):
            inside = (cell >= offset) & (cell < offset + size)
            edit[inside] = e
            local[inside] = cell[inside] - offset
            offset += size
        ab = len(self.laws.a)
        pos, rest = np.divmod(local, self.n * ab)
        state, pair = np.divmod(rest, ab)
        return edit, pos, state, self.laws.a[pair], self.laws.b[pair]


@functools.lru_cache(maxsize=4)
def _weights(laws: _Laws, L: int, edits: tuple[str, ...]) -> _Weights:
    """The weights of one length, cached: a test draw asks ``near_miss_classes`` and then
    ``near_misses`` for the same length (modular arithmetic: 0.27 s each at length 500)."""
    return _Weights(laws, L, edits)


def _check_common(lang: Any, L: Any, keep: Any, edits: Any,
                  minimum: int) -> tuple[Any, int, np.ndarray, tuple[str, ...]]:
    """The checked ``(lang, L, keep, edits)`` of the two public functions."""
    from monoidlab.algebra.languages import as_language

    lang = as_language(lang)
    L = check_count(L, "L (the length)", minimum=minimum)
    if isinstance(edits, str) or not isinstance(edits, tuple | list) or not edits or any(
            e not in EDITS for e in edits):
        raise InputError(f"near misses: edits must be a non-empty subset of {EDITS}, got "
                         f"{edits!r}"[:200])
    if keep is None:
        mask = np.ones(lang.n_classes, bool)
    else:
        mask = np.asarray(keep)
        if mask.dtype != bool and np.issubdtype(mask.dtype, np.integer) and np.isin(mask, [0, 1]).all():
            mask = mask.astype(bool)
        if mask.dtype != bool or mask.shape != (lang.n_classes,):
            raise InputError(f"keep: a boolean mask over the {lang.n_classes} classes of "
                             f"{lang.name!r} (sublanguage.class_mask), got {mask.dtype} of "
                             f"shape {mask.shape}")
    return lang, L, mask, tuple(edits)


def near_miss_classes(lang: Any, L: int, keep: np.ndarray | None = None,
                      edits: tuple[str, ...] = EDITS, *, limits: bool = True) -> np.ndarray:
    """The classes (indices) that have near misses of length ``L`` (``lang``: an Automaton or
    a suite name; ``limits=False`` lifts the length limit ``MAX_LENGTH``).

    >>> import monoidlab as ml
    >>> near_miss_classes(ml.load_language("dyck-2"), 3).tolist()   # odd: no member exists
    []
    """
    lang, L, keep, edits = _check_common(lang, L, keep, edits, minimum=0)
    if check_limits_flag(limits) and L > MAX_LENGTH:
        raise limit_error(f"L (the length): {L} requested; at most {MAX_LENGTH}")
    if L < 1:
        return np.zeros(0, np.int64)
    w = _weights(_laws(lang, keep, int(L)), int(L), tuple(edits))
    return w.laws.labels[w.available]


def near_misses(rng: np.random.Generator | int | None, lang: Any, L: int, n: int,
                keep: np.ndarray | None = None, edits: tuple[str, ...] = EDITS, *,
                limits: bool = True) -> NearMisses:
    """``n`` near misses of length ``L``: an equal share for every class that has some (the
    remainder to random classes), inside a class an equal share for each edit type that
    reaches it, each uniform over the (string, edit) pairs of its class and edit type.

    ``rng``: a ``numpy.random.Generator`` or a seed (0 .. 2^63 - 1); ``lang``: an Automaton
    or a suite name. ``keep`` restricts both the near miss and the string it comes from to a
    sub-language (a class mask, see :func:`monoidlab.sublanguage.class_mask`). An
    :class:`~monoidlab.errors.InputError` names the length when no near miss exists.
    ``limits=False`` lifts the work limits (``MAX_LENGTH``, ``MAX_STRINGS``,
    ``MAX_BATCH_SYMBOLS``; the table budget :data:`NEAR_MISS_BYTES` always holds).
    """
    rng = np.random.default_rng(check_seed(rng, "rng"))
    lang, L, keep, edits = _check_common(lang, L, keep, edits, minimum=1)
    n = check_count(n, "n", minimum=0)
    check_batch_workload([L], n, "L (the length)", limits)
    laws = _laws(lang, keep, L)
    w = _weights(laws, L, tuple(edits))
    groups = np.flatnonzero(w.available)
    if not len(groups):
        raise InputError(f"{lang.name}: no near miss of length {L} (no single edit changes "
                         "the class of any string of that length)")
    first = rng.integers(len(groups))
    target = rng.permutation(groups[(first + np.arange(n)) % len(groups)])  # label columns
    cells = np.empty(n, np.int64)
    bounds = np.cumsum([0, *w.sizes])
    for g in groups:
        idx = np.flatnonzero(target == g)
        if not len(idx):
            continue
        # an equal share for each edit type that reaches class g (a swap keeps the symbol
        # counts, a substitution changes them), uniform over the pairs of that type
        parts = [e for e in range(len(w.sizes))
                 if np.isfinite(w.log_w[bounds[e]:bounds[e + 1], g]).any()]
        first = rng.integers(len(parts))
        share = rng.permutation(np.asarray(parts)[(first + np.arange(len(idx))) % len(parts)])
        for e in parts:
            sel = idx[share == e]
            lw = w.log_w[bounds[e]:bounds[e + 1], g]
            p = np.exp(lw - lw.max())
            cells[sel] = bounds[e] + rng.choice(len(p), size=len(sel), p=p / p.sum())
    edit, pos, state, a, b = w.decode(cells)
    is_swap = np.array([w.edits[e] == "swap" for e in edit], bool)
    delta = laws.delta
    # prefix u: uniform among the words of length pos from the start to `state`
    u = draw_walks(rng, delta, laws.C_u, lang.start, pos, state)
    # suffix v: uniform among the words that lead (base state, near-miss state) into the
    # pair of classes (another kept class, the target class)
    after_a = np.where(is_swap, delta[delta[state, a], b], delta[state, a])
    after_b = np.where(is_swap, delta[delta[state, b], a], delta[state, b])
    v_len = L - pos - 1 - is_swap
    v = draw_walks(rng, laws.pairs, laws.C_v, after_a * laws.n + after_b, v_len, target)
    tokens = np.zeros((n, L), np.int64)
    cols = np.arange(L)[None, :]
    tokens[:, :u.shape[1]] = np.where(cols[:, :u.shape[1]] < pos[:, None], u, 0)
    rows = np.arange(n)
    tokens[rows, pos] = b
    tokens[rows[is_swap], pos[is_swap] + 1] = a[is_swap]
    start = pos + 1 + is_swap
    # place v right after the edit: column start + j holds v[:, j]
    j = cols - start[:, None]
    take = (j >= 0) & (j < v_len[:, None])
    if v.shape[1]:
        tokens[take] = v[np.nonzero(take)[0], j[take]]
    labels = laws.labels[target]
    base = tokens.copy()
    base[rows, pos] = a
    base[rows[is_swap], pos[is_swap] + 1] = b[is_swap]
    lengths = np.full(n, L)
    return NearMisses(tokens, labels, base, lang.classify(base, lengths),
                      np.array(w.edits, dtype=object)[edit] if n else np.zeros(0, object), pos)
