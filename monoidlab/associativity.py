"""Associativity and identity of a tree model's learned operator on held-out triples.

For strings (x, y, z) the model's root states are combined both ways; a model that learned the
monoid gives (x⊙y)⊙z ≈ x⊙(y⊙z) (cosine distance, relative L2) and its head (or a linear probe)
decodes both to the class of xyz. For MLP-LDRU the identity check compares x⊙pad and pad⊙x
with x (pad = the padding leaf). Used through :func:`monoidlab.probing.probe_model`.

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

import numpy as np

__all__ = ["root_states", "associativity", "summarise_associativity"]


class _Operator:
    """The learned binary operator of a tree model on flat state vectors.

    MLP-LDRU: states are d-vectors, ``op`` = ``combine`` (operator + post-level block), the pad
    is the padding leaf LN(0) + FFN(LN(0)), the head reads the state. Prefix-scan models
    (PR-LSTM, PR-RNN): states are the cell's tuple concatenated ([h; c]); ``op`` = ``cell``,
    no padding leaf, the head reads ReLU(h); ``visible`` (what node embeddings show) is h.
    """

    def __init__(self, model):
        self.model = model
        if hasattr(model, "combine"):
            self.kind, self.parts = "mlp-ldru", 1
        elif hasattr(model, "cell") and hasattr(model, "leaf"):
            self.kind = "scan"
            self.parts = len(model.leaf(self._zero()))  # (h, c) for PR-LSTM, (h,) for PR-RNN
        else:
            raise ValueError(f"{type(model).__name__} has no binary operator to probe")

    def _zero(self):
        import torch

        return torch.zeros((1, 1), dtype=torch.long, device=next(self.model.parameters()).device)

    def _split(self, s):
        return tuple(s.chunk(self.parts, dim=-1))

    def roots(self, tokens, lengths):
        import torch

        from monoidlab.models.common import associative_scan, gather_last

        m = self.model
        if self.kind == "mlp-ldru":
            ns = m.node_states(tokens, lengths)
            n = ns.valid.sum(1)
            top = ns.states[torch.arange(len(n)), (n - 1).clamp(min=0)]
            return torch.where((n > 0)[:, None], top, m.embed(tokens[:, :1])[:, 0])
        tokens = tokens[:, : int(lengths.max())]
        st = associative_scan(m.cell, m.leaf(tokens))
        return torch.cat([gather_last(s, lengths) for s in st], dim=-1)

    def op(self, a, b):
        if self.kind == "mlp-ldru":
            return self.model.combine(a, b)
        import torch

        return torch.cat(self.model.cell(self._split(a), self._split(b)), dim=-1)

    def pad(self):
        if self.kind != "mlp-ldru":
            return None
        t = self._zero()
        return self.model.embed(t, t != 0)[0, 0]  # valid = False: a zero vector enters the block

    def visible(self, s):
        return s if self.kind == "mlp-ldru" else self._split(s)[0]

    def logits(self, s):
        import torch

        h = self.visible(s)
        return self.model.head(h if self.kind == "mlp-ldru" else torch.relu(h))


def root_states(model, tokens, lengths, batch_size: int = 256):
    """The state at each string's root, as the model's operator sees it (numpy (B, D))."""
    import torch

    op = _Operator(model)
    out = []
    model.eval()
    dev = next(model.parameters()).device
    with torch.no_grad():
        for s in range(0, len(lengths), batch_size):
            ln = torch.as_tensor(np.asarray(lengths[s: s + batch_size]), device=dev)
            tk = torch.as_tensor(np.asarray(tokens[s: s + batch_size])[:, : int(ln.max())],
                                 device=dev)
            out.append(op.roots(tk, ln).double().cpu().numpy())
    return np.concatenate(out)


def _dist(a, b):
    """Cosine distance and relative L2 (‖a − b‖ over the mean of the norms) per row."""
    na, nb = np.linalg.norm(a, axis=-1), np.linalg.norm(b, axis=-1)
    cos = 1 - (a * b).sum(-1) / np.maximum(na * nb, 1e-12)
    rel = np.linalg.norm(a - b, axis=-1) / np.maximum((na + nb) / 2, 1e-12)
    return np.clip(cos, 0, 2), rel


def associativity(model, lang, x, y, z, probe=None) -> object:
    """(x⊙y)⊙z against x⊙(y⊙z) on the root states of triples of strings, one row per triple.

    ``x``, ``y``, ``z`` are ``(tokens, lengths)`` pairs of equal batch size. Columns: lengths,
    ``cos``/``rel_l2`` (the two bracketings), ``head_same`` (the head decodes both alike),
    ``head_true`` (both to the class of xyz), with a fitted EC ``probe`` (e.g.
    ``linear_probe(...)["model"]``) ``probe_same`` / ``probe_true`` (on the EC), and where the
    model has a padding leaf the identity check: ``id_right_cos``/``id_right_rel`` (x⊙pad vs
    x), ``id_left_*`` (pad⊙x vs x), ``id_head_same`` (head of x, x⊙pad, pad⊙x all alike).
    """
    import pandas as pd
    import torch

    monoid = lang.monoid()
    op = _Operator(model)
    was = model.training
    model.eval()
    dev = next(model.parameters()).device
    dt = next(model.parameters()).dtype
    r = [torch.as_tensor(root_states(model, *s), dtype=dt, device=dev) for s in (x, y, z)]
    with torch.no_grad():
        left = op.op(op.op(r[0], r[1]), r[2])
        right = op.op(r[0], op.op(r[1], r[2]))
        lc, rc = op.logits(left).argmax(-1).cpu().numpy(), op.logits(right).argmax(-1).cpu().numpy()
        pad = op.pad()
        if pad is not None:
            p = pad.expand_as(r[0])
            xr, xl, x0 = op.op(r[0], p), op.op(p, r[0]), r[0]
            heads = [op.logits(v).argmax(-1).cpu().numpy() for v in (x0, xr, xl)]
            ident = [v.double().cpu().numpy() for v in (x0, xr, xl)]
        vis = [op.visible(v).double().cpu().numpy() for v in (left, right)]
    model.train(was)
    ecs = [monoid.element_of(*s) for s in (x, y, z)]
    ec = monoid.multiply(monoid.multiply(ecs[0], ecs[1]), ecs[2])
    true_cls = np.asarray(lang.output)[monoid.elements[ec, lang.start]]
    L, R = left.double().cpu().numpy(), right.double().cpu().numpy()
    cos, rel = _dist(L, R)
    df = pd.DataFrame({"len_x": np.asarray(x[1]), "len_y": np.asarray(y[1]),
                       "len_z": np.asarray(z[1]), "ec_xyz": ec, "cos": cos, "rel_l2": rel,
                       "head_same": lc == rc, "head_true": (lc == true_cls) & (rc == true_cls)})
    df["length"] = df.len_x + df.len_y + df.len_z
    if probe is not None:
        pl, pr = probe.predict(vis[0]), probe.predict(vis[1])
        df["probe_same"], df["probe_true"] = pl == pr, (pl == ec) & (pr == ec)
    if pad is not None:
        df["id_right_cos"], df["id_right_rel"] = _dist(ident[1], ident[0])
        df["id_left_cos"], df["id_left_rel"] = _dist(ident[2], ident[0])
        df["id_head_same"] = (heads[0] == heads[1]) & (heads[0] == heads[2])
    return df


def summarise_associativity(df, n_bins: int = 4) -> dict:
    """Means (and medians / 90th percentiles of the distances) overall and by length of xyz."""
    import pandas as pd

    dist = [c for c in ("cos", "rel_l2", "id_right_cos", "id_right_rel", "id_left_cos",
                        "id_left_rel") if c in df]
    rate = [c for c in ("head_same", "head_true", "probe_same", "probe_true", "id_head_same")
            if c in df]

    def summary(d) -> dict:
        out = {"n": int(len(d))}
        for c in dist:
            out.update({f"{c}_mean": float(d[c].mean()), f"{c}_median": float(d[c].median()),
                        f"{c}_p90": float(d[c].quantile(0.9))})
        out.update({c: float(d[c].mean()) for c in rate})
        return out

    bins = pd.cut(df["length"], bins=min(n_bins, max(1, df["length"].nunique())))
    by = []
    for interval, d in df.groupby(bins, observed=True):
        lo, hi = int(np.ceil(interval.left)), int(np.floor(interval.right))
        by.append({"lengths": [max(lo, int(d.length.min())), hi], **summary(d)})
    return {"overall": summary(df), "by_length": by}


