"""String samplers: seeded, vectorised over the batch, returning a :class:`Batch`.

Samplers
--------
``uniform``, ``balanced`` (:data:`DEFAULT_SAMPLER`), ``ec_stratified``, ``ldru`` and
``near_miss``: each one a :class:`~monoidlab.strings.samplers.SamplerSpec` of the registry
(:mod:`monoidlab.strings.samplers`, whose laws docs/coverage.md tabulates), its draw a function
of this module (``draw_<name>``). ``sample`` resolves the name once and calls the draw.

Lengths are drawn uniformly from ``lengths`` (an int, a range or a list) per string, giving a
right-padded mixed-length batch; :func:`length_batches` yields one-length batches (the Delétang
protocol the trainers use).

Example
-------
>>> import monoidlab as ml
>>> lang = ml.load_language("dyck-4")
>>> b = ml.sample(lang, lengths=range(2, 21, 2), n=1000, sampler="balanced", seed=0)
>>> abs(float(b.labels.mean()) - 0.5) < 0.01   # half balanced, although they are rare
True

``lang`` may be a suite name (``ml.sample("parity", [3], 4)``). Work is bounded before anything
is drawn (the limits of the command line, docs/reliability.md): ``limits=False`` lifts them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from monoidlab._checks import check_count, check_seed, is_int, read_only, removed_keywords
from monoidlab._util import (
    check_batch_workload,
    check_cells,
    check_limits_flag,
    length_mask,
    longest_length,
)
from monoidlab.algebra.automaton import Automaton
from monoidlab.algebra.languages import as_language
from monoidlab.errors import InputError, UnknownName
from monoidlab.geometry import LengthsLike, length_array
from monoidlab.laws import backward_laws, draw_walks, forward_laws
from monoidlab.strings.samplers import REGISTRY as SAMPLER_REGISTRY
from monoidlab.strings.samplers import SamplerSpec, sampler_names, sampler_spec
from monoidlab.sublanguage import Within, class_mask

if TYPE_CHECKING:
    import pandas

__all__ = ["Batch", "sample", "length_batches", "path_counts", "SAMPLERS", "DEFAULT_SAMPLER",
           "check_sampler", "check_mix", "DEFAULT_MIX", "check_batch_language"]

#: The samplers :func:`sample` draws (the registry's, :mod:`monoidlab.strings.samplers`).
SAMPLERS = sampler_names()
#: What the trainer draws: every sampler above, and those laid out along the model's tree
#: (``covering``, :mod:`monoidlab.coverage.covering`).
TRAINING_SAMPLERS = sampler_names(tree=True)
#: The one default sampler of monoidlab: :func:`sample`, exact and sampled coverage, the
#: minimum training length, the trainer and the command line (every class equally often:
#: uniform strings of a Dyck language are nearly all rejected).
DEFAULT_SAMPLER = "balanced"
#: The ``near_miss`` sampler's parts. ``ec_stratified`` is last so that a mix without it draws
#: exactly the strings it drew before the part existed (same seed, same strings).
MIX_PARTS = ("members", "near_miss", "uniform", "ec_stratified")
DEFAULT_MIX = {"members": 0.5, "near_miss": 0.25, "uniform": 0.25}


@dataclass
class Batch:
    """Strings of one language as int arrays: ``tokens (B, T)``, ``lengths (B,)``, ``labels (B,)``.

    The arrays are the caller's; the ECs :meth:`elements` computes once are cached and so
    read-only (a copy, ``b.elements().copy()``, may be changed).
    """

    tokens: np.ndarray
    lengths: np.ndarray
    labels: np.ndarray
    automaton: Automaton = field(repr=False)
    _elements: np.ndarray | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.lengths)

    def __repr__(self) -> str:
        """One line (never the arrays): the language, the strings and their classes.

        >>> import monoidlab as ml
        >>> ml.sample("parity", [3, 4], 40, seed=0)   # balanced: each class equally often
        Batch(parity: 40 strings of lengths 3..4; classes 0: 20, 1: 20)
        """
        name = getattr(self.automaton, "name", "?")
        if not len(self):
            return f"{type(self).__name__}({name}: 0 strings)"
        lens = np.asarray(self.lengths)
        counts = np.bincount(np.asarray(self.labels, np.int64).ravel(),
                             minlength=len(self.automaton.classes))
        classes = ", ".join(f"{c}: {int(n)}" for c, n in zip(self.automaton.classes, counts) if n)
        return (f"{type(self).__name__}({name}: {len(self)} strings of lengths "
                f"{lens.min()}..{lens.max()}; classes {classes})")

    def _repr_html_(self) -> str:
        """The summary line and the first strings with their classes."""
        from monoidlab._html import html_table, html_view

        n = min(len(self), 8)
        text = self.automaton.decode(np.asarray(self.tokens)[:n], np.asarray(self.lengths)[:n]) \
            if n else []
        rows = [{"string": t if isinstance(t, str) else " ".join(t),
                 "length": int(self.lengths[i]),
                 "class": self.automaton.classes[int(self.labels[i])]}
                for i, t in enumerate(text)]
        more = f"<p>... {len(self) - n} more</p>" if len(self) > n else ""
        return html_view(repr(self), html_table(rows, ["string", "length", "class"]), more)

    def elements(self) -> np.ndarray:
        """EC of every string (computed once, through the monoid; read-only).

        >>> import monoidlab as ml
        >>> b = ml.sample("parity", [3], 2, seed=0)
        >>> b.elements().flags.writeable
        False
        """
        el = self._elements
        if el is None:
            el = read_only(self.automaton.monoid().element_of(self.tokens, self.lengths))
        elif el.flags.writeable:  # given by a caller: a read-only view, their array untouched
            el = el.view()
            el.flags.writeable = False
        self._elements = el
        return el

    def strings(self) -> list[str] | list[list[str]]:
        return self.automaton.decode(self.tokens, self.lengths)

    def to_pandas(self) -> pandas.DataFrame:
        """One row per string: ``string``, ``length``, ``label`` (index), ``class`` (name) and
        ``ec`` (its equivalence class).

        >>> import monoidlab as ml
        >>> b = ml.sample(ml.load_language("parity"), [3], 2, seed=0)
        >>> list(b.to_pandas().columns)
        ['string', 'length', 'label', 'class', 'ec']
        """
        import pandas as pd

        return pd.DataFrame({"string": self.strings(), "length": self.lengths,
                             "label": self.labels,
                             "class": [self.automaton.classes[c] for c in self.labels],
                             "ec": self.elements()})

    def __getitem__(self, idx: Any) -> Batch:
        idx = np.atleast_1d(np.arange(len(self))[idx])
        T = int(self.lengths[idx].max(initial=0))
        el = None if self._elements is None else read_only(self._elements[idx])
        return Batch(self.tokens[idx, :T], self.lengths[idx], self.labels[idx], self.automaton, el)

    @staticmethod
    def concat(batches: Sequence[Batch]) -> Batch:
        """One batch of the strings of ``batches`` (at least one, all of the same language:
        equal automata).

        >>> import monoidlab as ml
        >>> a, b = ml.sample("parity", [2], 3, seed=0), ml.sample("parity", [5], 2, seed=1)
        >>> len(Batch.concat([a, b])), Batch.concat([a, b]).tokens.shape
        (5, (5, 5))
        """
        if isinstance(batches, Batch) or not isinstance(batches, Sequence | Iterator):
            raise InputError(f"batches: a list of Batch objects, got {type(batches).__name__}")
        batches = list(batches)
        if not batches:
            raise InputError("batches: an empty list; concat needs at least one Batch")
        for i, b in enumerate(batches):
            if not isinstance(b, Batch):
                raise InputError(f"batches[{i}]: a Batch, got {type(b).__name__}")
        for i, b in enumerate(batches[1:], 1):
            check_batch_language(b, batches[0].automaton, f"batches[{i}]")
        T = max(b.tokens.shape[1] for b in batches)
        tokens = np.concatenate([np.pad(b.tokens, ((0, 0), (0, T - b.tokens.shape[1])))
                                 for b in batches])
        return Batch(tokens, np.concatenate([b.lengths for b in batches]),
                     np.concatenate([b.labels for b in batches]), batches[0].automaton)


def check_batch_language(batch: Any, lang: Automaton | None, what: str = "batch") -> Batch:
    """``batch`` itself when it is a :class:`Batch` of the language ``lang`` (equal automata:
    the same machine and classes, whatever their names; ``None``: any language); an
    :class:`~monoidlab.errors.InputError` naming both languages otherwise.

    >>> import monoidlab as ml
    >>> check_batch_language(ml.sample("parity", [3], 2), ml.load_language("tomita-1"))
    Traceback (most recent call last):
    ...
    monoidlab.errors.InputError: batch: strings of the language 'parity', not of 'tomita-1' (a batch is analysed with its own language)
    """
    if not isinstance(batch, Batch):
        raise InputError(f"{what}: a Batch (ml.sample(...)), got {type(batch).__name__}")
    if lang is not None and batch.automaton is not lang and batch.automaton != lang:
        same = batch.automaton.name == lang.name
        raise InputError(f"{what}: strings of the language {batch.automaton.name!r}, not of "
                         f"{lang.name!r}" + (" (another machine of the same name)" if same else
                                             " (a batch is analysed with its own language)"))
    return batch


def check_sampler(sampler: str | SamplerSpec) -> str:
    """The name of a sampler :func:`sample` draws, or :class:`~monoidlab.errors.UnknownName`
    listing them (:func:`~monoidlab.strings.samplers.sampler_spec` gives its spec)."""
    return sampler_spec(sampler).name


def path_counts(delta: np.ndarray, groups: np.ndarray, n_groups: int, max_len: int) -> np.ndarray:
    """``C[r, q, g]`` ∝ number of strings of length r leading from state q into a state of group g.

    Each ``C[r, :, g]`` is rescaled by its maximum (only ratios between states at the same r and
    g matter for sampling), so lengths in the thousands do not overflow. ``groups[q] = -1``
    excludes state q (e.g. outside a sub-language).
    """
    key = (np.asarray(delta).tobytes(), np.asarray(delta).shape, np.asarray(groups).tobytes(),
           n_groups)
    C = _PATHS.get(key)
    if C is None or len(C) <= max_len:
        # the recursion runs forward in r: one table up to the longest length serves all
        final = np.zeros((delta.shape[0], n_groups))
        ok = groups >= 0
        final[np.flatnonzero(ok), groups[ok]] = 1.0
        if len(_PATHS) > 64:
            _PATHS.clear()
        C = _PATHS[key] = backward_laws(delta, final, max(max_len, 64), rescale=True)
        C.flags.writeable = False
    return C[: max_len + 1]


_PATHS: dict = {}  # path counts by (table, groups): evaluation asks for hundreds of lengths


def check_mix(mix: dict | None) -> dict:
    """The ``near_miss`` sampler's mix, normalised to sum 1 (errors name the bad part)."""
    mix = DEFAULT_MIX if mix is None else mix
    if not isinstance(mix, dict) or not mix:
        raise InputError(f"mix: expected a table of parts {MIX_PARTS}, got {mix!r}")
    bad = [k for k in mix if k not in MIX_PARTS]
    if bad:
        raise UnknownName(f"mix: unknown part(s) {bad}; parts: {', '.join(MIX_PARTS)}")
    vals = list(mix.values())
    if any(isinstance(v, bool) or not isinstance(v, int | float) or v < 0 for v in vals) \
            or sum(vals) <= 0:
        raise InputError(f"mix: proportions must be non-negative numbers with a positive sum, "
                         f"got {mix!r}")
    total = float(sum(vals))
    return {k: float(mix.get(k, 0.0)) / total for k in MIX_PARTS}


def _draw_lengths(rng: np.random.Generator, lengths: LengthsLike, n: int) -> np.ndarray:
    return rng.choice(length_array(lengths), size=n)


@removed_keywords(method="sampler=")
def sample(lang: Automaton | str, lengths: LengthsLike, n: int, *,
           sampler: str | SamplerSpec = DEFAULT_SAMPLER,
           seed: int | np.random.Generator | None = None, within: Within = None,
           classes: Sequence[str] | None = None, mix: dict | None = None,
           limits: bool = True) -> Batch:
    """Draw ``n`` strings with lengths uniform over ``lengths``.

    Parameters
    ----------
    lang : an :class:`~monoidlab.algebra.automaton.Automaton` or a suite name / spec path.
    n : a non-negative integer.
    sampler : one of ``uniform``, ``balanced`` (the default, :data:`DEFAULT_SAMPLER`),
        ``ec_stratified``, ``ldru``, ``near_miss`` (:data:`SAMPLERS`), or the spec of one
        (:func:`~monoidlab.strings.samplers.sampler_spec`: a caller that draws often resolves
        the name once).
    seed : int or ``numpy.random.Generator``.
    within : a sub-language (:mod:`monoidlab.sublanguage`): keep only strings whose class is
        among these, e.g. ``"auto"`` for well-formed ``modular-arithmetic`` expressions.
    classes : for ``balanced``, the classes to balance (default: every class that has strings at
        the drawn length; a requested class with no string of some drawn length is an error);
        for ``uniform``, the classes to draw from (uniform over their strings, inside
        ``within``). The other samplers draw their own mix of classes and refuse it.
    mix : for ``near_miss``, the proportions of ``members``, ``near_miss``, ``uniform`` and
        ``ec_stratified`` strings (default ``DEFAULT_MIX``: no ``ec_stratified``); another
        sampler refuses a mix (it would be ignored).
    limits : ``True`` (the default) refuses, before any work, lengths above
        ``MAX_LENGTH`` (100,000), more than ``MAX_STRINGS`` (10^7) strings, more than
        ``MAX_BATCH_SYMBOLS`` (2^27) symbols or length tables of more than
        ``MAX_TABLE_CELLS`` (2^27) cells; ``False`` lifts these limits.

    >>> sample("tomita-1", [4], 2, seed=0).strings()
    ['0000', '0111']
    """
    lang = as_language(lang)
    spec = sampler_spec(sampler)
    if not is_int(n) or n < 0:
        raise InputError(f"n must be a non-negative integer, got {n!r}"[:200])
    seed = check_seed(seed)
    check_batch_workload(lengths, n, "lengths", limits)
    mix = spec.check_settings(mix)
    if classes is not None and not spec.takes_classes:
        takers = [s.name for s in SAMPLER_REGISTRY.values() if s.takes_classes]
        raise InputError(f"classes={list(classes)!r}: only the samplers {takers} draw from "
                         f"given classes; {spec.name!r} draws its own mix of classes")
    keep = _check_tables(lang, longest_length(lengths), spec, within, limits)
    rng = np.random.default_rng(seed)
    lens = _draw_lengths(rng, lengths, n)
    tokens = spec.function()(rng, lang, lens, keep, within=within, classes=classes, mix=mix,
                             limits=limits)
    return Batch(tokens, lens, lang.classify(tokens, lens), lang)


# ------------------------------------------------------------------ the samplers' draws
# Each is a Draw of the registry (monoidlab.strings.samplers): (rng, lang, lens, keep, *,
# within, classes, mix, limits) -> tokens; `sample` checks the arguments and labels.
def draw_uniform(rng: np.random.Generator, lang: Automaton, lens: np.ndarray, keep: np.ndarray,
                 *, within: Within, classes: Sequence[str] | None, mix: Any,
                 limits: bool) -> np.ndarray:
    """Uniform strings: i.i.d. letters, or uniform over the sub-language and the ``classes``
    (one group)."""
    if keep.all() and classes is None:
        T = int(lens.max(initial=0))
        tokens = rng.integers(0, lang.n_symbols, size=(len(lens), T))
        tokens[~length_mask(lens, T)] = 0
        return tokens
    return _walks(rng, lang, lens, keep, classes, by_class=False)


def draw_balanced(rng: np.random.Generator, lang: Automaton, lens: np.ndarray, keep: np.ndarray,
                  *, within: Within, classes: Sequence[str] | None, mix: Any,
                  limits: bool) -> np.ndarray:
    """An equal share of every class (of ``classes``) at each length, uniform inside it."""
    return _walks(rng, lang, lens, keep, classes, by_class=True)


def _walks(rng: np.random.Generator, lang: Automaton, lens: np.ndarray, keep: np.ndarray,
           classes: Sequence[str] | None, by_class: bool) -> np.ndarray:
    """Walks by path counts into one group per class (``by_class``) or one group in all."""
    n = len(lens)
    delta = np.asarray(lang.delta, np.int64)
    out = np.asarray(lang.output)
    want = np.ones(lang.n_classes, bool)
    if classes is not None:
        want[:] = False
        for c in classes:
            if c not in lang.classes:
                raise InputError(f"{lang.name}: unknown class {c!r}; classes: {list(lang.classes)}")
            want[lang.classes.index(c)] = True
    if not by_class:  # one group: the strings of the sub-language in the wanted classes
        keep = keep & want
    groups = np.where(keep[out], out, -1) if by_class else np.where(keep[out], 0, -1)
    n_groups = lang.n_classes if by_class else 1
    C = path_counts(delta, groups, n_groups, int(lens.max(initial=0)))
    avail = C[lens, lang.start, :] > 0  # (n, G): which groups have strings at that length
    if classes is not None and by_class:
        missing = want[None, :] & ~avail
        if missing.any():
            i, g = np.argwhere(missing)[0]
            raise InputError(f"{lang.name}: class {lang.classes[g]!r} has no string of "
                             f"length {lens[i]}")
        avail &= want[None, :]
    empty = ~avail.any(axis=1)
    if empty.any():
        raise InputError(f"{lang.name}: no string of length {lens[np.argmax(empty)]} "
                         f"{'in the requested classes' if not keep.all() or classes else ''}".strip())
    # Equal share per available class at each length: round-robin, then shuffled.
    targets = np.empty(n, np.int64)
    for L in np.unique(lens):
        idx = np.flatnonzero(lens == L)
        groups_here = np.flatnonzero(avail[idx[0]])
        # the remainder goes to randomly chosen classes, not always to the first ones
        first = rng.integers(len(groups_here))
        targets[idx] = rng.permutation(
            groups_here[(first + np.arange(len(idx))) % len(groups_here)])
    return draw_walks(rng, delta, C, lang.start, lens, targets)


def _check_tables(lang: Automaton, longest: int, spec: SamplerSpec, within: Within,
                  limits: bool) -> np.ndarray:
    """The class mask of ``within``, after refusing the sampler's length tables (its spec's
    ``tables``) when they would exceed ``MAX_TABLE_CELLS``."""
    keep = class_mask(lang, within)
    if check_limits_flag(limits) and spec.tables is not None:
        need = spec.tables(lang, max(longest, 64) + 1, keep)  # path counts: up to 64 at least
        if need is not None:
            check_cells(*need, limits)
    return keep


def draw_near_miss(rng: np.random.Generator, lang: Automaton, lens: np.ndarray,
                   keep: np.ndarray, *, within: Within, classes: Sequence[str] | None,
                   mix: dict[str, float], limits: bool) -> np.ndarray:
    """The ``near_miss`` sampler: per length, the mix's parts drawn by their own samplers
    (``mix`` as :func:`check_mix` normalised it)."""
    from monoidlab.strings.near_miss import near_miss_classes, near_misses

    part = rng.choice(len(MIX_PARTS), size=len(lens), p=[mix[p] for p in MIX_PARTS])
    T = int(lens.max(initial=0))
    tokens = np.zeros((len(lens), T), np.int64)
    accept = "accept" in lang.classes and lang.is_recogniser
    for L in np.unique(lens):
        at = lens == L
        for j, name in enumerate(MIX_PARTS):
            idx = np.flatnonzero(at & (part == j))
            if not len(idx):
                continue
            fallback = "balanced"
            if name == "near_miss" and len(near_miss_classes(lang, int(L), keep,
                                                             limits=limits)):
                t = near_misses(rng, lang, int(L), len(idx), keep, limits=limits).tokens
            else:
                wanted = None
                if name in ("uniform", "ec_stratified"):
                    fallback = name
                elif name == "members" and accept and keep[1] and _has_class(lang, int(L), 1, keep):
                    wanted = ["accept"]
                t = sample(lang, [int(L)], len(idx), sampler=fallback, seed=rng, within=within,
                           classes=wanted, limits=limits).tokens
            tokens[idx, : t.shape[1]] = t
    return tokens


def _has_class(lang: Automaton, L: int, c: int, keep: np.ndarray) -> bool:
    out = np.asarray(lang.output)
    C = path_counts(np.asarray(lang.delta, np.int64), np.where(keep[out], out, -1),
                    lang.n_classes, L)
    return bool(C[L, lang.start, c] > 0)


def draw_ec_stratified(rng: np.random.Generator, lang: Automaton, lens: np.ndarray,
                       keep: np.ndarray, *, within: Within, classes: Sequence[str] | None,
                       mix: Any, limits: bool) -> np.ndarray:
    """Uniform over the ECs reachable at each length, then uniform inside the EC."""
    monoid = lang.monoid()
    right = monoid.right
    R = forward_laws(right, 0, int(lens.max(initial=0)), indicator=True) > 0
    allowed = keep[monoid.outputs]
    targets = np.empty(len(lens), np.int64)
    for L in np.unique(lens):
        cand = np.flatnonzero(R[L] & allowed)
        if not len(cand):
            raise InputError(f"{lang.name}: no string of length {L} in the requested classes")
        idx = np.flatnonzero(lens == L)
        targets[idx] = rng.choice(cand, size=len(idx))
    tokens = np.zeros((len(lens), int(lens.max(initial=0))), np.int64)
    # Path counts on the right Cayley graph towards each target, a chunk of targets at a time.
    uniq = np.unique(targets)
    chunk = max(1, int(2e7 // (monoid.size * (lens.max() + 1))))
    for s in range(0, len(uniq), chunk):
        tg = uniq[s: s + chunk]
        groups = np.full(monoid.size, -1)
        groups[tg] = np.arange(len(tg))
        sel = np.flatnonzero(np.isin(targets, tg))
        C = path_counts(right, groups, len(tg), int(lens[sel].max()))
        t = draw_walks(rng, right, C, 0, lens[sel], groups[targets[sel]])
        tokens[sel, : t.shape[1]] = t
    return tokens


def draw_ldru(rng: np.random.Generator, lang: Automaton, lens: np.ndarray, keep: np.ndarray,
              *, within: Within, classes: Sequence[str] | None, mix: Any,
              limits: bool) -> np.ndarray:
    """Half random walks avoiding dead states, half uniform strings (authors' D_n / Tomita data)."""
    delta = np.asarray(lang.delta, np.int64)
    n = len(lens)
    T = int(lens.max(initial=0))
    tokens = rng.integers(0, lang.n_symbols, size=(n, T))
    live = np.ones(lang.n_states, bool)
    if lang.is_recogniser:  # dead = cannot reach an accepting state
        live = np.asarray(lang.output) == 1
        for _ in range(lang.n_states):
            live = live | live[delta].any(axis=1)
    pos = np.arange(n) < n // 2
    rng.shuffle(pos)
    state = np.full(n, lang.start)
    u = rng.random((T, n))
    for t in range(T):
        ok = live[delta[state]]  # (n, k) letters that keep the walk alive
        ok[~ok.any(axis=1)] = True  # nothing alive: any letter
        cum = np.cumsum(ok, axis=1)
        a = np.argmax(cum > (u[t] * cum[:, -1]).astype(np.int64)[:, None], axis=1)
        tokens[pos, t] = a[pos]
        state = delta[state, tokens[:, t]]
    tokens[np.arange(T)[None, :] >= lens[:, None]] = 0
    return tokens


def length_batches(lang: Automaton | str, lengths: LengthsLike, batch_size: int, *,
                   sampler: str | SamplerSpec = "uniform",
                   seed: int | np.random.Generator | None = None, within: Within = None,
                   mix: dict | None = None, limits: bool = True) -> Iterator[Batch]:
    """Endless one-length batches (a length drawn uniformly per batch), the Delétang protocol.

    >>> import monoidlab as ml
    >>> it = length_batches(ml.load_language("parity"), range(1, 41), 8, seed=0)
    >>> b = next(it); len(set(b.lengths.tolist()))
    1

    The arguments are checked when it is called, before the first batch, with the work limits
    of :func:`sample` (``limits=False`` lifts them).
    """
    lang = as_language(lang)
    spec = sampler_spec(sampler)
    batch_size = check_count(batch_size, "batch_size")
    seed = check_seed(seed)
    check_batch_workload(lengths, batch_size, "lengths", limits)
    mix = spec.check_settings(mix)
    _check_tables(lang, longest_length(lengths), spec, within, limits)
    return _length_batches(lang, length_array(lengths), batch_size, spec, seed, within, mix,
                           limits)


def _length_batches(lang: Automaton, lens: np.ndarray, batch_size: int, sampler: SamplerSpec,
                    seed: int | np.random.Generator | None, within: Within, mix: dict | None,
                    limits: bool) -> Iterator[Batch]:
    rng = np.random.default_rng(seed)
    while True:
        L = int(rng.choice(lens))
        yield sample(lang, [L], batch_size, sampler=sampler, seed=rng, within=within, mix=mix,
                     limits=limits)
