"""Tree baselines with the Gated Recursive Cell: BBT-GRC (beam-tree recursion) and RIR-GRC
(recursion in recursion), after Ray Chowdhury & Caragea (docs/models.md#bbt-grc-and-rir-grc).

* **GRC** (Shen et al. 2019, *Ordered Memory*; Ray Chowdhury & Caragea 2021, *CRvNN*; used
  unchanged in *Beam Tree Recursive Cells*, ICML 2023): for children l, r (d each),
  ``[f_l; f_r; i; p] = W2 GELU(W1 [l; r] + b1) + b2`` (2d → 4d → 4d),
  ``parent = LN(σ(f_l)⊙l + σ(f_r)⊙r + σ(i)⊙p)``.
* **BBT-GRC** (BT-Cell with hard top-k, the paper's BT-GRC): every beam scores each adjacent
  pair of its current nodes, ``log softmax`` over the pairs; a candidate (beam, pair) scores its
  beam's sum plus that log-probability; the ``beam`` best candidates survive and merge their
  pair into its GRC parent, until one node is left. The string's vector is the sum of the beams'
  roots weighted by the softmax of their scores (the gradient reaches the scorer through these
  weights). ``scorer = "parent"`` scores a pair by a linear map of its candidate parent (BT-GRC);
  ``"children"`` by a small MLP on ``[l; r]`` and computes only the chosen parents (the cheaper
  scorer of *Efficient Beam Tree Recursion*, NeurIPS 2023).
* **RIR-GRC** (*Recursion in Recursion*, NeurIPS 2023): the string is cut into chunks of
  ``chunk`` nodes from the left; each chunk is reduced by the beam tree above to one vector (its
  beams' weighted sum); the chunk vectors form the next sequence, until one vector is left: an
  outer balanced ``chunk``-ary tree over inner beam trees.

A loop runs over the merge steps (each needs the previous one's choice); each step is one
batched computation over strings, beams and pairs, with masks for padding: a string's result
does not depend on the padding after it nor on the other strings of the batch
(tests/test_grc.py compares both models with a per-string reference).

Example
-------
>>> import torch
>>> _ = torch.manual_seed(0)
>>> model = BBTGRC(vocab_size=3, n_classes=2, d=8, beam=2).eval()
>>> tokens, lengths = torch.tensor([[0, 1, 2, 1], [2, 0, 0, 0]]), torch.tensor([4, 1])
>>> model(tokens, lengths).shape
torch.Size([2, 2])
>>> RIRGRC(vocab_size=3, n_classes=2, d=8, chunk=2)(tokens, lengths).shape
torch.Size([2, 2])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from monoidlab.models.common import check_inputs, length_mask
from monoidlab.models.options import ModelOptions, one_of, positive_int, probability

__all__ = ["GatedRecursiveCell", "BeamTree", "BBTGRC", "RIRGRC", "BBTGRCOptions",
           "RIRGRCOptions", "SCORERS"]

#: How a beam tree scores a pair: a linear map of the candidate parent (BT-GRC), or an MLP on
#: the two children (EBT-GRC's scorer: only the chosen pairs are composed)
SCORERS = ("parent", "children")


@dataclass(frozen=True)
class BBTGRCOptions(ModelOptions):
    """BBT-GRC's options: width ``d``, ``beam`` size, the pair ``scorer`` and the GRC's
    ``dropout`` (on its hidden layer, as in the authors' cell)."""

    d: int = 64
    beam: int = 5
    scorer: str = "parent"
    dropout: float = 0.1

    def check(self) -> None:
        positive_int(self, "d")
        positive_int(self, "beam")
        one_of(self, "scorer", SCORERS)
        probability(self, "dropout")


@dataclass(frozen=True)
class RIRGRCOptions(BBTGRCOptions):
    """RIR-GRC's options: BBT-GRC's plus the outer tree's ``chunk`` size (at least 2); the
    inner beam tree uses the cheaper ``children`` scorer and a beam of 2 by default."""

    beam: int = 2
    scorer: str = "children"
    chunk: int = 30

    def check(self) -> None:
        super().check()
        positive_int(self, "chunk", minimum=2)


class GatedRecursiveCell(nn.Module):
    """``parent = LN(σ(f_l)⊙l + σ(f_r)⊙r + σ(i)⊙p)`` with ``[f_l; f_r; i; p]`` a GELU MLP of
    ``[l; r]`` (Shen et al. 2019; Ray Chowdhury & Caragea 2021, 2023).

    >>> cell = GatedRecursiveCell(4)
    >>> cell(torch.zeros(3, 4), torch.ones(3, 4)).shape
    torch.Size([3, 4])
    """

    def __init__(self, d: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.d = d
        self.w1 = nn.Linear(2 * d, 4 * d)
        self.w2 = nn.Linear(4 * d, 4 * d)
        self.norm = nn.LayerNorm(d)
        self.drop = nn.Dropout(dropout)

    def forward(self, left: Tensor, right: Tensor) -> Tensor:
        z = self.w2(self.drop(F.gelu(self.w1(torch.cat([left, right], -1)))))
        f_l, f_r, i, p = z.split(self.d, -1)
        return self.norm(torch.sigmoid(f_l) * left + torch.sigmoid(f_r) * right
                         + torch.sigmoid(i) * p)


class BeamTree(nn.Module):
    """The beam-tree reduction of a padded batch of node sequences to one vector each.

    ``forward(h (N, T, d), lengths (N,)) -> (N, d)``; lengths >= 1, positions past a length are
    ignored.

    >>> tree = BeamTree(4, beam=3).eval()
    >>> h = torch.randn(2, 5, 4)
    >>> torch.allclose(tree(h, torch.tensor([1, 5]))[0], h[0, 0])  # one node: itself
    True
    """

    def __init__(self, d: int, beam: int = 5, scorer: str = "parent", dropout: float = 0.0
                 ) -> None:
        super().__init__()
        self.beam, self.scorer = beam, scorer
        self.cell = GatedRecursiveCell(d, dropout)
        self.score: nn.Module
        if scorer == "parent":
            self.score = nn.Linear(d, 1)
        else:
            self.score = nn.Sequential(nn.Linear(2 * d, d), nn.GELU(), nn.Linear(d, 1))

    def pair_logits(self, left: Tensor, right: Tensor) -> Tensor:
        """Scores ``(...)`` of the pairs ``(left, right)`` (``(..., d)`` each)."""
        if self.scorer == "parent":
            return self.score(self.cell(left, right)).squeeze(-1)
        return self.score(torch.cat([left, right], -1)).squeeze(-1)

    def forward(self, h: Tensor, lengths: Tensor) -> Tensor:
        N, T, D = h.shape
        K = self.beam
        if N == 0:  # no string: no merge step to take (the flat views below need a row)
            return h.new_zeros(0, D)
        h = h[:, None].expand(N, K, T, D)  # (N, K, S, D): every beam slot starts as the leaves
        # every pair's score is computed once: a merge at j changes only the pairs j - 1 and j,
        # the others shift (the same values as scoring all pairs at each step). The chosen
        # pair's parent is computed again rather than kept for every pair: the same value, and
        # far less memory traffic
        logits = self.pair_logits(h[:, :1, :-1], h[:, :1, 1:]).expand(N, K, T - 1)
        acc = h.new_zeros(N, K)  # each beam's summed log-probability
        live = torch.zeros(N, K, dtype=torch.bool, device=h.device)
        live[:, 0] = True  # one beam at the start
        for i in range(T - 1):
            S = T - i  # nodes in the buffer; a string of length L has L - i real ones
            pairs = lengths - i - 1  # real pairs per string; <= 0: the string is one node
            done = pairs <= 0
            pair_ok = length_mask(pairs.clamp_min(0), S - 1)  # (N, S-1)
            # a finished string gets harmless finite logits (its step is discarded below)
            masked = logits.masked_fill(~(pair_ok | done[:, None])[:, None], float("-inf"))
            total = acc[:, :, None] + F.log_softmax(masked, -1)
            total = total.masked_fill(~(live[:, :, None] & pair_ok[:, None]), float("-inf"))
            # the K best, best first. Identical children give equal pair scores, equal up to
            # the last bits of float arithmetic (which depend on the batch's shape): scores
            # within ~1e-6 count as tied and go to the lowest (beam, pair), so that the choice
            # never depends on the batch or its padding (topk's order of ties does)
            flat_total = total.reshape(N, -1)
            key = torch.round(flat_total * 2.0 ** 20)
            index = key.sort(dim=-1, descending=True, stable=True).indices[:, :K]
            values = flat_total.gather(1, index)
            beam, j = index // (S - 1), index % (S - 1)
            new_live = torch.isfinite(values)
            # a finished string keeps its beams as they are and drops its last (padding) slot
            beam = torch.where(done[:, None], torch.arange(K, device=h.device), beam)
            fresh = ~done[:, None, None]  # (N, 1, 1)
            jj = j[:, :, None]  # (N, K, 1)
            flat = h.reshape(N, K * S, D)
            at = beam * S + j  # the chosen pair's left node in the flat buffer
            parent = self.cell(_rows(flat, at), _rows(flat, at + 1))  # (N, K, D)
            # the new sequence: the parent beam's nodes left of j, the parent, those right of j+1
            k = torch.arange(S - 1, device=h.device)[None, None]
            src = beam[:, :, None] * S + k + ((k > jj) & fresh)
            h = torch.where(((k == jj) & fresh)[..., None], parent[:, :, None],
                            _rows(flat, src.reshape(N, -1)).view(N, K, S - 1, D))
            # the pairs: the parent beam's, shifted past j; two new ones, (j - 1, j) and (j, j + 1)
            # (an index off either end is clamped, its score never used)
            kk = torch.arange(S - 2, device=h.device)[None, None]
            src = beam[:, :, None] * (S - 1) + kk + ((kk > jj) & fresh)
            old = logits.reshape(N, -1).gather(1, src.reshape(N, -1)).view(N, K, S - 2)
            if S > 2:
                pos = torch.stack([j - 1, j], -1).clamp(0, S - 3)  # (N, K, 2)
                pos = pos + torch.arange(K, device=h.device)[None, :, None] * (S - 1)
                mflat = h.reshape(N, K * (S - 1), D)
                new = self.pair_logits(_rows(mflat, pos.reshape(N, -1)).view(N, K, 2, D),
                                       _rows(mflat, pos.reshape(N, -1) + 1).view(N, K, 2, D))
            else:  # one node left: no pair
                new = old.new_zeros(N, K, 2)
            logits = torch.where(fresh & (kk == jj - 1), new[..., :1],
                                 torch.where(fresh & (kk == jj), new[..., 1:], old))
            acc = torch.where(done[:, None], acc, torch.where(new_live, values, 0.0))
            live = torch.where(done[:, None], live, new_live)
        weights = torch.softmax(acc.masked_fill(~live, float("-inf")), -1)  # (N, K)
        return (weights[:, :, None] * h[:, :, 0]).sum(1)


def _rows(x: Tensor, index: Tensor) -> Tensor:
    """``x[n, index[n, ...]]`` for x (N, M, D) and an int index (N, ...): (N, ..., D)."""
    flat = index.reshape(index.shape[0], -1)
    return x.gather(1, flat[..., None].expand(-1, -1, x.shape[-1])).view(*index.shape, -1)


class _GRCClassifier(nn.Module):
    """Leaves ``LN(W e(x))``, a reduction to one vector, and a GELU MLP head."""

    options_class: type[BBTGRCOptions] = BBTGRCOptions

    def __init__(self, vocab_size: int, n_classes: int, options: BBTGRCOptions | None = None,
                 **kw: Any) -> None:
        super().__init__()
        o = self.options = self.options_class.build(options if options is not None else kw,
                                                    type(self).__name__)
        self.vocab_size, self.n_classes = vocab_size, n_classes
        self.embed = nn.Embedding(vocab_size, o.d)
        self.leaf = nn.Sequential(nn.Linear(o.d, o.d), nn.LayerNorm(o.d))
        self.tree = BeamTree(o.d, o.beam, o.scorer, o.dropout)
        self.head = nn.Sequential(nn.Linear(o.d, o.d), nn.GELU(), nn.Linear(o.d, n_classes))

    def leaves(self, tokens: Tensor, lengths: Tensor) -> Tensor:
        """``(B, T, d)`` leaf vectors; padding ids (anything, even out of the vocabulary) are
        replaced, since the reduction never reads past a length."""
        pad = ~length_mask(lengths, tokens.shape[1])
        return self.leaf(self.embed(tokens.masked_fill(pad, 0)))

    def reduce(self, h: Tensor, lengths: Tensor) -> Tensor:
        raise NotImplementedError

    def eval_group(self, length: int) -> int:
        """Test strings of one length (every kind, every chunk) share one evaluation call
        (:mod:`monoidlab.evaluation.packing`), strings of different lengths never. The beams'
        hard choices compare scores: at another padded width the log-softmax over the pairs
        (and RIR's chunk width) rounds differently, which flips near-tied beams (logits moved
        by up to 0.01); at one width only the batch's row count changes, which moves logits by
        float32 rounding (~1e-7) and, in every test, no choice and no answer
        (docs/models.md#bbt-grc-and-rir-grc, tests/test_grc.py)."""
        return int(length)

    def root(self, tokens: Tensor, lengths: Tensor | None = None) -> Tensor:
        """Each string's vector ``(B, d)``, before the head."""
        tokens, lengths = check_inputs(tokens, lengths)
        if not len(lengths):  # a kind with no string at a length: an empty batch, any width
            return self.embed.weight.new_zeros(0, self.options.d)
        return self.reduce(self.leaves(tokens, lengths), lengths)

    def forward(self, tokens: Tensor, lengths: Tensor | None = None) -> Tensor:
        """Logits ``(B, n_classes)`` of each whole string."""
        return self.head(self.root(tokens, lengths))


class BBTGRC(_GRCClassifier):
    """BBT-GRC: one beam tree over the whole string.

    >>> BBTGRC(2, 3, d=4)(torch.zeros(2, 6, dtype=torch.long), torch.tensor([6, 2])).shape
    torch.Size([2, 3])
    """

    def reduce(self, h: Tensor, lengths: Tensor) -> Tensor:
        return self.tree(h, lengths)


class RIRGRC(_GRCClassifier):
    """RIR-GRC: beam trees inside chunks of ``chunk`` nodes, recursively over the chunks.

    >>> RIRGRC(2, 3, d=4, chunk=3)(torch.zeros(2, 10, dtype=torch.long), torch.tensor([10, 4])).shape
    torch.Size([2, 3])
    """

    options_class = RIRGRCOptions

    def reduce(self, h: Tensor, lengths: Tensor) -> Tensor:
        chunk = self.options.chunk  # type: ignore[attr-defined]
        while h.shape[1] > 1:
            N, T, D = h.shape
            k = min(chunk, T)  # the last level is one chunk of the nodes that are left
            C = -(-T // k)
            h = F.pad(h, (0, 0, 0, C * k - T)).reshape(N * C, k, D)
            # chunk c holds nodes c*k .. c*k + k - 1; chunks past a string's end get length 1
            # (their vector is never read: the next level's length stops before them)
            starts = torch.arange(C, device=h.device) * k
            inner = (lengths[:, None] - starts).clamp(1, k).reshape(-1)
            h = self.tree(h, inner).reshape(N, C, D)
            lengths = -(-lengths // k)
        return h[:, 0]
