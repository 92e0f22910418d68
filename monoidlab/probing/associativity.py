"""Associativity and identity of a tree model's learned operator on held-out triples.

For strings (x, y, z) the model's root states are combined both ways; a model that learned the
monoid gives (x⊙y)⊙z ≈ x⊙(y⊙z) (cosine distance, relative L2) and its head (or a linear probe)
decodes both to the class of xyz. For MLP-LDRU the identity check compares x⊙pad and pad⊙x
with x (pad = the padding leaf). Any :class:`~monoidlab.models.protocols.OperatorModel` can be
probed. Used through :func:`monoidlab.probing.probe_model`.

Example
-------
>>> import torch, monoidlab as ml
>>> from monoidlab.models.mlp_ldru import MLPLDRU
>>> lang = ml.load_language("parity")
>>> _ = torch.manual_seed(0)
>>> model = MLPLDRU(2, 2, d=8, operator="sum", post_block=False)   # exactly associative
>>> x, y, z = (lang.encode(w) for w in (["10", "1"], ["0", "11"], ["111", "0"]))
>>> df = associativity(model, lang, x, y, z)
>>> bool((df["rel_l2"] < 1e-5).all())
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from monoidlab._checks import scalar_args
from monoidlab._util import eval_mode
from monoidlab.errors import InputError

if TYPE_CHECKING:
    import pandas
    from torch import nn

    from monoidlab.algebra.automaton import Automaton
    from monoidlab.models.protocols import OperatorModel

__all__ = ["root_states", "associativity", "summarise_associativity", "as_operator_model",
           "concat", "predict"]


def as_operator_model(model: Any) -> OperatorModel:
    """``model`` itself when it has a learned binary operator (:class:`OperatorModel`), else an
    :class:`~monoidlab.errors.InputError` naming the models that do."""
    from monoidlab.models.protocols import OperatorModel

    if not isinstance(model, OperatorModel):
        raise InputError(f"{type(model).__name__} has no binary operator to probe (models with "
                         "one: mlp-ldru, pr-lstm, pr-rnn)")
    return model


@scalar_args
def root_states(model: nn.Module, tokens: np.ndarray, lengths: np.ndarray,
                batch_size: int = 256) -> np.ndarray:
    """The state at each string's root, as the model's operator sees it (numpy (B, D))."""
    import torch

    op = as_operator_model(model)
    tokens, lengths = np.asarray(tokens), np.asarray(lengths)
    if tokens.ndim != 2 or lengths.shape != (len(tokens),) or not len(lengths):
        raise InputError(f"root_states: expected tokens (B, T) and lengths (B,) of at least one "
                         f"string, got shapes {tokens.shape} and {lengths.shape}")
    out = []
    dev = next(model.parameters()).device
    with eval_mode(model):
        for s in range(0, len(lengths), batch_size):
            ln = torch.as_tensor(np.asarray(lengths[s: s + batch_size]), device=dev)
            tk = torch.as_tensor(np.asarray(tokens[s: s + batch_size])[:, : int(ln.max())],
                                 device=dev)
            out.append(op.root_states(tk, ln).double().cpu().numpy())
    return np.concatenate(out)


def concat(*parts: tuple[ArrayLike, ArrayLike]) -> tuple[np.ndarray, np.ndarray]:
    """The row-wise concatenation of ``(tokens, lengths)`` pairs (vectorised, zero-padded).

    >>> t, n = concat((np.array([[1, 0]]), np.array([1])), (np.array([[2, 3]]), np.array([2])))
    >>> t.tolist(), n.tolist()
    ([[1, 2, 3]], [3])
    """
    lens = np.stack([np.asarray(p[1], np.int64) for p in parts], axis=1)  # (B, k)
    ends = np.cumsum(lens, axis=1)
    total = ends[:, -1]
    T = int(total.max(initial=0))
    pos = np.arange(T)[None, :]
    which = (pos[:, :, None] >= ends[:, None, :]).sum(-1)  # (B, T): the part holding position
    out = np.zeros((len(total), T), np.int64)
    for k, (tok, _) in enumerate(parts):
        tok = np.asarray(tok)
        off = pos - (ends[:, k] - lens[:, k])[:, None]
        got = np.take_along_axis(tok, np.clip(off, 0, tok.shape[1] - 1), axis=1)
        out = np.where(which == k, got, out)
    return np.where(pos < total[:, None], out, 0), total


def predict(model: nn.Module, tokens: ArrayLike, lengths: ArrayLike,
            batch_size: int = 256) -> np.ndarray:
    """The model's predicted class of each string (its own forward pass, eval mode)."""
    import torch

    dev = next(model.parameters()).device
    tokens, lengths = np.asarray(tokens), np.asarray(lengths)
    out = []
    with eval_mode(model):
        for s in range(0, len(lengths), batch_size):
            ln = torch.as_tensor(lengths[s: s + batch_size], device=dev)
            tk = torch.as_tensor(tokens[s: s + batch_size, : int(ln.max())], device=dev)
            out.append(model(tk, ln).argmax(-1).cpu().numpy())
    return np.concatenate(out) if out else np.zeros(0, np.int64)


def _dist(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cosine distance and relative L2 (‖a − b‖ over the mean of the norms) per row."""
    na, nb = np.linalg.norm(a, axis=-1), np.linalg.norm(b, axis=-1)
    cos = 1 - (a * b).sum(-1) / np.maximum(na * nb, 1e-12)
    rel = np.linalg.norm(a - b, axis=-1) / np.maximum((na + nb) / 2, 1e-12)
    return np.clip(cos, 0, 2), rel


def associativity(model: nn.Module, lang: Automaton, x: tuple[np.ndarray, np.ndarray],
                  y: tuple[np.ndarray, np.ndarray], z: tuple[np.ndarray, np.ndarray],
                  probe: Any = None) -> pandas.DataFrame:
    """(x⊙y)⊙z against x⊙(y⊙z) on the root states of triples of strings, one row per triple.

    ``x``, ``y``, ``z`` are ``(tokens, lengths)`` pairs of equal batch size (draw them with
    :func:`~monoidlab.probing.heldout_triples`, which balances the class of xyz). Columns:
    lengths, ``ec_xyz`` / ``cls_xyz`` (true EC and class of xyz), ``cos``/``rel_l2`` (the two
    bracketings), ``cos_unrelated``/``rel_l2_unrelated`` (a triple's (x⊙y)⊙z against the next
    triple's x⊙(y⊙z): the scale of distances between unrelated roots), ``head_same`` (the head
    decodes both alike; a constant head scores 1), ``head_true`` (both to the class of xyz),
    ``head_direct`` (the model's own prediction on the string xyz is its class), with a
    fitted EC ``probe`` (e.g. ``linear_probe(...)["model"]``) ``probe_same`` / ``probe_true``
    (on the EC), and where the model has a padding leaf the identity check:
    ``id_right_cos``/``id_right_rel`` (x⊙pad vs x), ``id_left_*`` (pad⊙x vs x),
    ``id_head_same`` (head of x, x⊙pad, pad⊙x all alike).
    """
    import pandas as pd
    import torch

    monoid = lang.monoid()
    op = as_operator_model(model)
    dev = next(model.parameters()).device
    dt = next(model.parameters()).dtype
    r = [torch.as_tensor(root_states(model, *s), dtype=dt, device=dev) for s in (x, y, z)]
    with eval_mode(model):
        left = op.apply_operator(op.apply_operator(r[0], r[1]), r[2])
        right = op.apply_operator(r[0], op.apply_operator(r[1], r[2]))
        lc = op.state_logits(left).argmax(-1).cpu().numpy()
        rc = op.state_logits(right).argmax(-1).cpu().numpy()
        pad = op.padding_state()
        if pad is not None:
            p = pad.expand_as(r[0])
            xr, xl, x0 = op.apply_operator(r[0], p), op.apply_operator(p, r[0]), r[0]
            heads = [op.state_logits(v).argmax(-1).cpu().numpy() for v in (x0, xr, xl)]
            ident = [v.double().cpu().numpy() for v in (x0, xr, xl)]
        vis = [op.visible_state(v).double().cpu().numpy() for v in (left, right)]
    ecs = [monoid.element_of(*s) for s in (x, y, z)]
    ec = monoid.multiply(monoid.multiply(ecs[0], ecs[1]), ecs[2])
    true_cls = np.asarray(lang.output)[monoid.elements[ec, lang.start]]
    L, R = left.double().cpu().numpy(), right.double().cpu().numpy()
    cos, rel = _dist(L, R)
    cos_u, rel_u = _dist(L, np.roll(R, 1, axis=0)) if len(L) > 1 else (cos * np.nan, rel * np.nan)
    direct = predict(model, *concat(x, y, z))
    df = pd.DataFrame({"len_x": np.asarray(x[1]), "len_y": np.asarray(y[1]),
                       "len_z": np.asarray(z[1]), "ec_xyz": ec, "cls_xyz": true_cls,
                       "cos": cos, "rel_l2": rel, "cos_unrelated": cos_u,
                       "rel_l2_unrelated": rel_u, "head_same": lc == rc,
                       "head_true": (lc == true_cls) & (rc == true_cls),
                       "head_direct": direct == true_cls})
    df["length"] = df.len_x + df.len_y + df.len_z
    if probe is not None:
        pl, pr = probe.predict(vis[0]), probe.predict(vis[1])
        df["probe_same"], df["probe_true"] = pl == pr, (pl == ec) & (pr == ec)
    if pad is not None:
        df["id_right_cos"], df["id_right_rel"] = _dist(ident[1], ident[0])
        df["id_left_cos"], df["id_left_rel"] = _dist(ident[2], ident[0])
        df["id_head_same"] = (heads[0] == heads[1]) & (heads[0] == heads[2])
    return df


@scalar_args
def summarise_associativity(df: pandas.DataFrame, n_bins: int = 4) -> dict[str, Any]:
    """Means (and medians / 90th percentiles of the distances) overall and by length of xyz,
    with the baselines ``majority`` (share of the most frequent class of xyz: what a constant
    head scores on ``head_true``) and ``probe_chance`` (share of the most frequent EC)."""
    import pandas as pd

    dist = [c for c in ("cos", "rel_l2", "cos_unrelated", "rel_l2_unrelated", "id_right_cos",
                        "id_right_rel", "id_left_cos", "id_left_rel") if c in df]
    rate = [c for c in ("head_same", "head_true", "head_direct", "probe_same", "probe_true",
                        "id_head_same") if c in df]

    def summary(d: pandas.DataFrame) -> dict[str, float]:
        out: dict[str, float] = {"n": int(len(d))}
        for c in dist:
            out.update({f"{c}_mean": float(d[c].mean()), f"{c}_median": float(d[c].median()),
                        f"{c}_p90": float(d[c].quantile(0.9))})
        out.update({c: float(d[c].mean()) for c in rate})
        # baselines: a constant head answering the most frequent class of xyz scores
        # ``majority`` on head_true / head_direct (and 1 on head_same); a constant probe
        # answering the most frequent EC scores ``probe_chance`` on probe_true
        if "cls_xyz" in d and len(d):
            out["majority"] = float(d["cls_xyz"].value_counts(normalize=True).iloc[0])
        if len(d):
            out["probe_chance"] = float(d["ec_xyz"].value_counts(normalize=True).iloc[0])
        return out

    bins = pd.cut(df["length"], bins=min(n_bins, max(1, df["length"].nunique())))
    by = []
    for interval, d in df.groupby(bins, observed=True):
        lo, hi = int(np.ceil(interval.left)), int(np.floor(interval.right))
        by.append({"lengths": [max(lo, int(d.length.min())), hi], **summary(d)})
    return {"overall": summary(df), "by_length": by}


