"""Node embeddings of a model with their true ECs, and probing strings held out from training.

* :func:`node_embeddings`: every internal tree node's state (MLP-LDRU, PR-LSTM, PR-RNN) or
  every prefix state (RNN, LSTM), with a pandas metadata frame: string, node, level, span,
  true EC (from the monoid), the automaton state and class the EC maps to.
* :func:`heldout_strings`: probing strings the checkpoint never trained on: *beyond the
  training lengths* (default), or *disjoint by content* (the checkpoint's training batches are
  regenerated exactly from ``default_rng([seed, step])`` and excluded). The result says which.

Example
-------
>>> import torch, monoidlab as ml
>>> from monoidlab.models.mlp_ldru import MLPLDRU
>>> lang = ml.load_language("parity")
>>> _ = torch.manual_seed(0)
>>> model = MLPLDRU(2, 2, d=8, operator="sum", post_block=False)
>>> emb = node_embeddings(model, lang, *lang.encode(["1101", "011"]))
>>> emb.meta[["string", "level", "span_start", "span_end", "ec"]].values.tolist()
[[0, 1, 0, 2, 0], [0, 1, 2, 4, 1], [0, 2, 0, 4, 1], [1, 1, 0, 2, 1], [1, 1, 2, 3, 1], [1, 2, 0, 3, 0]]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from monoidlab._checks import check_record, scalar_args
from monoidlab._util import eval_mode
from monoidlab.errors import InputError
from monoidlab.geometry import LengthsLike, length_array
from monoidlab.models.protocols import NodeStateModel, PrefixStateModel

if TYPE_CHECKING:
    import pandas
    import torch

    from monoidlab.algebra.automaton import Automaton
    from monoidlab.algebra.monoid import SyntacticMonoid
    from monoidlab.training.config import RunConfig
    from monoidlab.training.problems import Problem

__all__ = ["NodeEmbeddings", "node_embeddings", "HeldOut", "training_strings", "heldout_strings"]


# --------------------------------------------------------------------------- node embeddings


@dataclass
class NodeEmbeddings:
    """Node (or prefix) states ``X`` (n, d) with one metadata row per node in ``meta``.

    ``meta`` columns: ``string`` (index in the probed batch), ``node`` (index in the string's
    schedule, or the position for prefix models), ``level`` (height above the leaves; for
    prefix models ⌊log2 prefix length⌋), ``span_start``, ``span_end``, ``span_length``,
    ``string_length``, ``ec`` (true EC of the span), ``state`` (automaton state f_ec(start)),
    ``cls`` / ``class_name`` (the class the EC maps to), ``padding`` (an all-padding node:
    empty span, identity EC; dropped unless ``include_empty``).
    """

    X: np.ndarray
    meta: pandas.DataFrame
    kind: str  # "tree" | "prefix"
    schedule: str | None  # "balanced" | "scan" | "chain" (None: a tree model probed on no string)
    monoid: SyntacticMonoid = field(repr=False)

    def __post_init__(self) -> None:
        check_record(self)

    def __len__(self) -> int:
        return len(self.X)

    @property
    def ec(self) -> np.ndarray:
        return self.meta["ec"].to_numpy()

    def subset(self, idx: ArrayLike) -> NodeEmbeddings:
        idx = np.flatnonzero(idx) if np.asarray(idx).dtype == bool else np.asarray(idx)
        return NodeEmbeddings(self.X[idx], self.meta.iloc[idx].reset_index(drop=True),
                              self.kind, self.schedule, self.monoid)

    @scalar_args
    def subsample(self, n: int | None, by: str | None = "level",
                  seed: int | None = 0) -> NodeEmbeddings:
        """At most ``n`` rows, seeded; with ``by``, the same cap for every group (small groups,
        e.g. the top tree levels, are kept whole)."""
        if by is not None and by not in self.meta.columns:
            raise InputError(f"by: a column of meta ({', '.join(map(str, self.meta.columns))}) "
                             f"or None, got {by!r}")
        if n is None or len(self) <= n:
            return self
        rng = np.random.default_rng(seed)
        if by is None:
            return self.subset(np.sort(rng.choice(len(self), n, replace=False)))
        groups = self.meta[by].to_numpy()
        keys, counts = np.unique(groups, return_counts=True)
        cap = _water_fill(counts, n)
        keep = [rng.choice(np.flatnonzero(groups == k), c, replace=False)
                for k, c in zip(keys, cap)]
        return self.subset(np.sort(np.concatenate(keep)))


def _water_fill(counts: np.ndarray, n: int) -> np.ndarray:
    """Largest per-group cap c with sum(min(count, c)) <= n; returns each group's take."""
    lo, hi = 0, int(counts.max())
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if np.minimum(counts, mid).sum() <= n else (lo, mid - 1)
    return np.minimum(counts, lo)


@scalar_args
def node_embeddings(model: Any, lang: Automaton, tokens: ArrayLike, lengths: ArrayLike, *,
                    include_empty: bool = False, batch_size: int = 128,
                    device: torch.device | str | None = None) -> NodeEmbeddings:
    """Every internal node's state (tree models) or every prefix state (recurrent models).

    Nodes are listed per string in the order of ``schedules.schedule(schedule, L)`` (that of
    :func:`monoidlab.coverage.compositions.node_labels`); ``include_empty`` keeps the all-padding nodes
    of the balanced schedule (their EC is the identity, their state a constant per level).
    """
    import pandas as pd
    import torch

    monoid = lang.monoid()
    tokens, lengths = np.asarray(tokens), np.asarray(lengths)
    device = device or next(model.parameters()).device
    xs, rows = [], []
    tree = isinstance(model, NodeStateModel)
    if not tree and not isinstance(model, PrefixStateModel):
        raise InputError(f"{type(model).__name__} has neither node_states nor prefix_states; "
                         "probing needs a tree model (mlp-ldru, pr-lstm) or an rnn/lstm")
    sched: str | None = None
    with eval_mode(model):
        for s in range(0, len(lengths), batch_size):
            ln = lengths[s: s + batch_size]
            tk = torch.as_tensor(tokens[s: s + batch_size, : int(ln.max())], device=device)
            lt = torch.as_tensor(ln, device=device)
            if tree:
                ns = model.node_states(tk, lt)
                sched = ns.schedule
                f = ns.flat()
                xs.append(f["states"].float().cpu().numpy())
                rows.append(np.column_stack([f["row"].cpu().numpy() + s,
                                             f["span"].cpu().numpy(), f["level"].cpu().numpy()]))
            else:
                st = model.prefix_states(tk, lt)
                valid = (torch.arange(st.shape[1], device=device)[None] < lt[:, None])
                xs.append(st[valid].float().cpu().numpy())
                r, t = np.nonzero(valid.cpu().numpy())
                rows.append(np.column_stack([r + s, np.zeros_like(t), t + 1,
                                             np.floor(np.log2(t + 1)).astype(np.int64)]))
    d = xs[0].shape[1] if xs else 0
    X = np.concatenate(xs) if xs else np.zeros((0, d), np.float32)
    info = np.concatenate(rows) if rows else np.zeros((0, 4), np.int64)
    string, start, end, level = info.T.astype(np.int64)
    if tree:
        from monoidlab.coverage.compositions import node_labels

        # without strings sched stays None, and node_labels never reads it
        lab = node_labels(monoid, tokens, lengths, sched or "balanced")
        if not (np.array_equal(lab.string, string) and np.array_equal(lab.span[:, 0], start)
                and np.array_equal(lab.span[:, 1], end)):
            raise RuntimeError("node states and node labels disagree on the node order")
        ec, node = lab.node, lab.node_index
    else:
        sched = "chain"
        pref = monoid.prefix_elements(tokens, lengths)
        ec = pref[pref >= 0]
        node = end - 1
    state = monoid.elements[ec, lang.start].astype(np.int64)
    cls = np.asarray(lang.output)[state]
    meta = pd.DataFrame({"string": string, "node": node, "level": level, "span_start": start,
                         "span_end": end, "span_length": end - start,
                         "string_length": lengths[string], "ec": ec, "state": state, "cls": cls,
                         "class_name": np.asarray(lang.classes, dtype=object)[cls],
                         "padding": end == start})
    emb = NodeEmbeddings(X, meta, "tree" if tree else "prefix", sched, monoid)
    return emb if include_empty else emb.subset(~meta["padding"].to_numpy())


# --------------------------------------------------------------------------- held-out strings


@dataclass
class HeldOut:
    """Probing strings and how they are held out (``mode``: "lengths" or "disjoint")."""

    tokens: np.ndarray
    lengths: np.ndarray
    mode: str
    description: str
    info: dict[str, Any]

    def __post_init__(self) -> None:
        check_record(self)

    def __len__(self) -> int:
        return len(self.lengths)


def _train_lengths(cfg: RunConfig, problem: Problem) -> np.ndarray:
    return problem.lengths(cfg.train_lengths)


def _keys(tokens: np.ndarray, lengths: np.ndarray) -> list[bytes]:
    """One hashable key per string (its length and tokens)."""
    return [bytes([int(L) & 255, int(L) >> 8 & 255]) + tokens[i, :L].astype(np.int16).tobytes()
            for i, L in enumerate(lengths)]


@scalar_args
def training_strings(cfg: RunConfig, problem: Problem, steps: int | None = None) -> set[bytes]:
    """The distinct strings of a run's first ``steps`` training batches (default ``cfg.steps``),
    regenerated exactly as the trainer draws them (``default_rng([seed, step])``)."""
    from monoidlab.training.trainer import training_batch

    lens = _train_lengths(cfg, problem)
    seen: set[bytes] = set()
    for step in range(cfg.steps if steps is None else int(steps)):
        _, b = training_batch(cfg, problem, lens, step)
        seen.update(_keys(np.asarray(b["tokens"]), np.asarray(b["lengths"])))
    return seen


@scalar_args
def heldout_strings(cfg: RunConfig, problem: Any, n: int, lengths: LengthsLike | None = None,
                    mode: str = "lengths", seed: int = 0, steps: int | None = None) -> HeldOut:
    """``n`` seeded strings the run of ``cfg`` never trained on.

    ``mode="lengths"``: every length lies beyond the training lengths (default lengths
    max+1 .. 2·max). ``mode="disjoint"``: any lengths (default: the training lengths), and the
    strings of the first ``steps`` training batches are regenerated and excluded (duplicates
    too); fewer than ``n`` strings come back when the lengths hold too few unseen strings.
    """
    from monoidlab.strings.sampling import sample

    lang = problem.language
    if lang is None:
        raise InputError(f"probing needs a language (a monoid); {problem.name} is a tape task")
    train_lens = _train_lengths(cfg, problem)
    tmin, tmax = int(train_lens.min()), int(train_lens.max())
    if lengths is None:
        lengths = range(tmax + 1, 2 * tmax + 1) if mode == "lengths" else train_lens
    lens = problem.lengths(length_array(lengths))
    rng = np.random.default_rng([seed, 424_242])
    draw = lambda k: sample(lang, lens, k, sampler=problem.test_sampler, seed=rng,  # noqa: E731
                            within=problem.within)
    span = f"{lens.min()}–{lens.max()}"
    if mode == "lengths":
        if lens.min() <= tmax:
            raise InputError(f"lengths {span} overlap the training lengths {tmin}–{tmax}; "
                             "use lengths beyond them or mode='disjoint'")
        b = draw(n)
        return HeldOut(b.tokens, b.lengths, mode,
                       f"held out by length: {n} strings of lengths {span}, beyond the "
                       f"training lengths {tmin}–{tmax}",
                       {"mode": mode, "lengths": [int(lens.min()), int(lens.max())],
                        "train_lengths": [tmin, tmax], "n": int(n)})
    if mode != "disjoint":
        raise InputError(f"mode must be 'lengths' or 'disjoint', got {mode!r}")
    steps = cfg.steps if steps is None else int(steps)
    seen = training_strings(cfg, problem, steps)
    n_train = len(seen)
    toks, lns, rejected = [], [], 0
    for _ in range(50):
        b = draw(2 * n)
        for i, k in enumerate(_keys(b.tokens, b.lengths)):
            if k in seen:
                rejected += 1
                continue
            seen.add(k)  # no duplicates among the held-out strings either
            toks.append(b.tokens[i, : b.lengths[i]])
            lns.append(int(b.lengths[i]))
        if len(lns) >= n:
            break
    toks, lns = toks[:n], lns[:n]
    if not lns:
        raise InputError(f"no string of lengths {span} is unseen in training; use longer lengths")
    tokens = np.zeros((len(lns), max(lns)), np.int64)
    for i, t in enumerate(toks):
        tokens[i, : len(t)] = t
    return HeldOut(tokens, np.asarray(lns, np.int64), mode,
                   f"held out by content: {len(lns)} strings of lengths {span}, none among the "
                   f"{n_train} distinct training strings of steps 0–{steps - 1} (regenerated "
                   f"from seed {cfg.seed})",
                   {"mode": mode, "lengths": [int(lens.min()), int(lens.max())],
                    "train_lengths": [tmin, tmax], "n": len(lns), "requested": int(n),
                    "training_strings": n_train, "steps": steps, "rejected": rejected})
