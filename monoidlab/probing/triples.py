"""Held-out triples (x, y, z) for the associativity check, with the class of xyz balanced.

Each triple is one string w = xyz drawn by a class-balanced sampler at a total length where
every class has strings, then cut into three parts whose lengths lie in the held-out range. So
the class of xyz is balanced by construction, and a head that always answers one class scores
about 1 / #classes on ``head_true``.

Why not three independent strings: for a language with a zero (Dyck, most Tomita languages)
the product of three independent strings is almost always the zero. On dyck-4 with parts of
lengths 41..80, 145 of 150 such triples were the sink, so the rates in the associativity table
measured only "does the head say reject on the sink": the model at initialisation scored
``head_true`` 0.907, the trained demo model 0.90–0.93, and a constant "reject" 0.967.

Example
-------
>>> import monoidlab as ml
>>> from monoidlab.training.problems import LanguageProblem
>>> problem = LanguageProblem(ml.load_language("dyck-2"))
>>> t = draw_triples(problem, 40, range(5, 9), seed=0)
>>> [len(p[1]) for p in (t.x, t.y, t.z)], int(t.lengths.min()) >= 15
([40, 40, 40], True)
>>> sorted(problem.language.classify(t.tokens, t.lengths).tolist()) == sorted(t.classes.tolist())
True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from monoidlab._checks import scalar_args
from monoidlab._util import length_mask
from monoidlab.errors import InputError
from monoidlab.geometry import LengthsLike, length_array

if TYPE_CHECKING:
    from monoidlab.training.config import RunConfig

__all__ = ["Triples", "draw_triples", "heldout_triples"]


@dataclass
class Triples:
    """Triples of strings: ``x``, ``y``, ``z`` are ``(tokens, lengths)`` pairs; ``tokens`` /
    ``lengths`` the whole strings xyz and ``classes`` their classes; ``description`` and
    ``info`` say how they were drawn and held out."""

    x: tuple[np.ndarray, np.ndarray]
    y: tuple[np.ndarray, np.ndarray]
    z: tuple[np.ndarray, np.ndarray]
    tokens: np.ndarray
    lengths: np.ndarray
    classes: np.ndarray
    description: str = ""
    info: dict[str, Any] | None = None

    def __len__(self) -> int:
        return len(self.lengths)

    def class_mix(self, class_names: list[str] | tuple[str, ...]) -> dict[str, float]:
        """Share of each class among the strings xyz."""
        counts = np.bincount(self.classes, minlength=len(class_names)) / max(1, len(self))
        return {str(c): float(v) for c, v in zip(class_names, counts) if v > 0}


def _class_counts(problem: Any, max_len: int) -> np.ndarray:
    """``(max_len + 1, n_classes)`` booleans: class c has a string of length L."""
    from monoidlab.strings.sampling import path_counts
    from monoidlab.sublanguage import class_mask

    lang = problem.language
    out = np.asarray(lang.output)
    keep = class_mask(lang, problem.within)
    C = path_counts(np.asarray(lang.delta, np.int64), np.where(keep[out], out, -1),
                    lang.n_classes, max_len)
    return C[:, lang.start, :] > 0


def _part_lengths(rng: np.random.Generator, parts: np.ndarray, n: int,
                  ok_total: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``(n, 3)`` part lengths uniform over ``parts``, kept where ``ok_total(sum)``."""
    rows = []
    for _ in range(100):
        cand = rng.choice(parts, size=(max(4 * n, 64), 3))
        rows.append(cand[ok_total(cand.sum(1))])
        if sum(len(r) for r in rows) >= n:
            break
    got = np.concatenate(rows)
    if len(got) < n:
        raise InputError(f"no three lengths in {parts.min()}–{parts.max()} add up to a length "
                         "where the classes have strings")
    return got[:n]


def _cut(tokens: np.ndarray, starts: np.ndarray,
         lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The substrings ``tokens[i, starts[i]: starts[i] + lens[i]]``, zero-padded."""
    T = int(lens.max())
    pos = starts[:, None] + np.arange(T)[None, :]
    valid = length_mask(lens, T)
    out = np.take_along_axis(tokens, np.minimum(pos, tokens.shape[1] - 1), axis=1)
    return np.where(valid, out, 0), lens.astype(np.int64)


@scalar_args
def draw_triples(problem: Any, n: int, part_lengths: LengthsLike,
                 seed: int | np.random.Generator | None = 0,
                 sampler: str = "balanced") -> Triples:
    """``n`` triples whose parts have lengths in ``part_lengths`` and whose concatenations xyz
    come from ``sampler`` (default class-balanced) at totals where the most classes exist.

    The total length of each triple is the sum of three part lengths drawn uniformly; totals
    where fewer classes have strings than the best total (odd lengths of Dyck languages) are
    redrawn, so the class of xyz stays balanced.
    """
    from monoidlab.strings.sampling import sample

    lang = problem.language
    if lang is None:
        raise InputError(f"probing needs a language (a monoid); {problem.name} is a tape task")
    parts = length_array(part_lengths)
    parts = parts[parts >= 1]
    if not len(parts) or n < 1:
        raise InputError(f"triples need n ≥ 1 and part lengths ≥ 1, got n={n}, "
                         f"lengths {part_lengths}")
    rng = np.random.default_rng(seed)
    avail = _class_counts(problem, 3 * int(parts.max()))
    ind = np.zeros(int(parts.max()) + 1)
    ind[parts] = 1
    totals = np.flatnonzero(np.convolve(np.convolve(ind, ind) > 0, ind) > 0)  # a + b + c
    best = int(avail[totals].sum(1).max())
    if best == 0:
        raise InputError(f"{lang.name}: no string has a length in {totals.min()}–{totals.max()}")
    L3 = _part_lengths(rng, parts, n, lambda t: avail[t].sum(1) == best)
    total = L3.sum(1)
    tokens = np.zeros((n, int(total.max())), np.int64)
    for L in np.unique(total):
        idx = np.flatnonzero(total == L)
        b = sample(lang, [int(L)], len(idx), sampler=sampler, seed=rng, within=problem.within)
        tokens[idx, : b.tokens.shape[1]] = b.tokens
    x = _cut(tokens, np.zeros(n, np.int64), L3[:, 0])
    y = _cut(tokens, L3[:, 0], L3[:, 1])
    z = _cut(tokens, L3[:, 0] + L3[:, 1], L3[:, 2])
    return Triples(x, y, z, tokens, total, lang.classify(tokens, total))


@scalar_args
def heldout_triples(cfg: RunConfig, problem: Any, n: int, lengths: LengthsLike | None = None,
                    mode: str = "lengths", seed: int = 0, steps: int | None = None,
                    sampler: str = "balanced") -> Triples:
    """``n`` triples for the associativity check whose parts the run of ``cfg`` never trained
    on (the rules of :func:`~monoidlab.probing.heldout_strings`): ``mode="lengths"``: every part
    is longer than the training strings (default part lengths max+1 .. 2·max);
    ``mode="disjoint"``: parts of any length (default: the training lengths) that are not among
    the regenerated training strings (fewer than ``n`` triples when too few are unseen).
    """
    from monoidlab.probing.embeddings import _keys, training_strings

    lang = problem.language
    if lang is None:
        raise InputError(f"probing needs a language (a monoid); {problem.name} is a tape task")
    train = problem.lengths(cfg.train_lengths)
    tmin, tmax = int(train.min()), int(train.max())
    if mode not in ("lengths", "disjoint"):
        raise InputError(f"mode must be 'lengths' or 'disjoint', got {mode!r}")
    if lengths is None:
        lengths = range(tmax + 1, 2 * tmax + 1) if mode == "lengths" else train
    parts = length_array(lengths)
    span = f"{parts.min()}–{parts.max()}"
    rng = np.random.default_rng([seed, 434_343])
    info: dict[str, Any] = {"mode": mode, "part_lengths": [int(parts.min()), int(parts.max())],
            "train_lengths": [tmin, tmax], "sampler": sampler}
    if mode == "lengths":
        if parts.min() <= tmax:
            raise InputError(f"lengths {span} overlap the training lengths {tmin}–{tmax}; "
                             "use lengths beyond them or mode='disjoint'")
        t = draw_triples(problem, n, parts, rng, sampler)
        held = f"every part beyond the training lengths {tmin}–{tmax}"
    else:
        steps = cfg.steps if steps is None else int(steps)
        seen = training_strings(cfg, problem, steps)
        keep, rejected = [], 0
        for _ in range(50):
            t = draw_triples(problem, 2 * n, parts, rng, sampler)
            ok = np.ones(len(t), bool)
            for p in (t.x, t.y, t.z):
                ok &= np.array([k not in seen for k in _keys(*p)])
            rejected += int((~ok).sum())
            keep.append((t, np.flatnonzero(ok)))
            if sum(len(i) for _, i in keep) >= n:
                break
        t = _concat(keep, n)
        if not len(t):
            raise InputError(f"no triple of parts of lengths {span} avoids the training "
                             "strings; use longer lengths")
        held = (f"no part among the {len(seen)} distinct training strings of steps "
                f"0–{steps - 1}")
        info.update(steps=steps, training_strings=len(seen), rejected=rejected, requested=n)
    mix = t.class_mix(lang.classes)
    info.update(n=len(t), class_mix=mix)
    t.description = (f"{len(t)} triples: strings xyz drawn {sampler} (lengths "
                     f"{t.lengths.min()}–{t.lengths.max()}) and cut into parts of lengths "
                     f"{span}, {held}; class mix of xyz "
                     + ", ".join(f"{c} {v:.2f}" for c, v in mix.items()))
    t.info = info
    return t


def _concat(keep: list[tuple[Triples, np.ndarray]], n: int) -> Triples:
    """The kept rows of several draws, at most ``n``."""
    def rows(get: Callable[[Triples], np.ndarray]) -> np.ndarray:
        arrs = [get(t)[i] for t, i in keep]
        width = max((a.shape[1] for a in arrs if a.ndim == 2), default=0)
        if arrs and arrs[0].ndim == 2:
            arrs = [np.pad(a, ((0, 0), (0, width - a.shape[1]))) for a in arrs]
        return np.concatenate(arrs)[:n]

    pair = lambda k: (rows(lambda t: getattr(t, k)[0]), rows(lambda t: getattr(t, k)[1]))  # noqa: E731
    x, y, z = pair("x"), pair("y"), pair("z")
    trim = lambda p: (p[0][:, : max(1, int(p[1].max(initial=1)))], p[1])  # noqa: E731
    return Triples(trim(x), trim(y), trim(z), rows(lambda t: t.tokens), rows(lambda t: t.lengths),
                   rows(lambda t: t.classes))
