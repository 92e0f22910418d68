"""A decoder-only (causal) Transformer language model with greedy decoding.

The model is a :class:`~monoidlab.models.transformer.TransformerStack` with ``causal=True``
and a linear next-token head, so it shares every position encoding of the baselines:
``none``, ``sinusoidal``, ``learned``, ``alibi``, ``rope``, ``fire`` and ``randomized-<base>``
(FIRE + randomized positions is ``randomized-fire``). Defaults are pre-LN and no dropout,
as in most decoder-only LMs trained on arithmetic.

Positions: in training a ``randomized-*`` encoding draws a sorted random subset of
``0..max_randomized_len-1`` per forward pass. :meth:`DecoderLM.generate` draws the
positions of the whole buffer (prompt + answer) once, so a generated token keeps its
position from one step to the next; with ``eval_positions="random"`` pass ``seed`` for a
reproducible draw.

Example
-------
>>> import torch
>>> lm = DecoderLM(vocab_size=6, d_model=16, n_layers=1, n_heads=2, position="fire")
>>> lm(torch.zeros(2, 5, dtype=torch.long)).shape
torch.Size([2, 5, 6])
>>> out = lm.generate(torch.tensor([[2, 3, 0], [2, 3, 4]]), torch.tensor([2, 3]),
...                   max_new_tokens=4, eos_id=1)
>>> out.shape
torch.Size([2, 4])
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from monoidlab._checks import check_count, check_seed
from monoidlab.errors import InputError
from monoidlab.models.transformer import StackOptions, TransformerStack

__all__ = ["DecoderLM"]


@dataclass(frozen=True)
class DecoderOptions(StackOptions):
    """The decoder LM's options: :class:`~monoidlab.models.transformer.StackOptions` with
    decoder defaults (d 64, 4 layers, 4 heads, no dropout, pre-LN, FIRE positions)."""

    n_layers: int = 4
    n_heads: int = 4
    dropout: float = 0.0
    position: str = "fire"
    norm: str = "pre"


class DecoderLM(nn.Module):
    """Causal Transformer LM: ``forward(tokens) -> (B, T, vocab_size)`` next-token logits.

    ``n_classes`` is accepted for the model registry's ``Model(vocab_size, n_classes,
    options)`` signature and must equal ``vocab_size`` (an LM predicts tokens). Options:
    :class:`DecoderOptions` (or its fields as keywords; the position encoding's own options
    flat beside them, e.g. ``max_randomized_len=256, eval_positions="random"`` for
    ``randomized-fire``).
    """

    def __init__(self, vocab_size: int, n_classes: int | None = None,
                 options: DecoderOptions | None = None, **kw: Any) -> None:
        super().__init__()
        if n_classes is not None and n_classes != vocab_size:
            raise InputError(f"a language model predicts tokens: n_classes ({n_classes}) must "
                             f"equal vocab_size ({vocab_size})")
        o = self.options = DecoderOptions.build(options if options is not None else kw,
                                                "decoder-lm")
        self.vocab_size = vocab_size
        self.stack = TransformerStack(vocab_size, causal=True, **o.stack_kw())
        self.head = nn.Linear(o.d_model, vocab_size, bias=False)

    def forward(self, tokens: Tensor, lengths: Tensor | None = None,
                positions: Tensor | None = None) -> Tensor:
        """Logits ``(B, T, V)``; row ``t`` predicts token ``t + 1``. Padding must be on the
        right (causal attention never lets a real position see it), so ``lengths`` is
        accepted for the common interface but not needed."""
        return self.head(self.stack.encode(tokens, positions))  # (B, T, V)

    forward_all = forward

    def make_positions(self, batch_size: int, length: int, device: torch.device | str,
                       seed: int | None = None) -> Tensor:
        """Positions ``(B|1, length)`` as the encoding draws them in the current mode;
        ``seed`` makes a random draw reproducible without touching the global RNG."""
        seed = check_seed(seed, generator=False)
        dev = torch.device(device)
        fork = torch.random.fork_rng(devices=[dev] if dev.type == "cuda" else [])
        with fork if seed is not None else contextlib.nullcontext():
            if seed is not None:
                torch.manual_seed(int(seed))
            return self.stack.position.make_positions(batch_size, length, dev)

    @torch.no_grad()
    def generate(
        self, prompt: Tensor, prompt_lengths: Tensor | None = None, max_new_tokens: int = 16,
        eos_id: int = 1, pad_id: int = 0, positions: Tensor | None = None,
        seed: int | None = None,
    ) -> Tensor:
        """Greedy continuation of right-padded prompts, batched.

        ``prompt`` (B, Tp) int64, ``prompt_lengths`` (B,) (default: all ``Tp``). Returns
        ``(B, max_new_tokens)``: the generated tokens up to and including the first
        ``eos_id``, then ``pad_id``. Stops early once every row has produced ``eos_id``.
        No key/value cache: each step re-reads the buffer (fine for answers of a few hundred
        tokens). ``positions`` (B|1, Tp + max_new_tokens) overrides the drawn positions.
        """
        seed = check_seed(seed, generator=False)
        max_new_tokens = check_count(max_new_tokens, "max_new_tokens", minimum=0)
        B, Tp = prompt.shape
        device = prompt.device
        cur = (torch.full((B,), Tp, device=device) if prompt_lengths is None
               else prompt_lengths.to(device).clone()).long()
        total = Tp + max_new_tokens
        if positions is None:
            positions = self.make_positions(B, total, device, seed)
        buf = torch.full((B, total), pad_id, dtype=torch.long, device=device)
        buf[:, :Tp] = prompt
        buf[torch.arange(total, device=device)[None, :] >= cur[:, None]] = pad_id
        out = torch.full((B, max_new_tokens), pad_id, dtype=torch.long, device=device)
        done = torch.zeros(B, dtype=torch.bool, device=device)
        rows = torch.arange(B, device=device)
        for step in range(max_new_tokens if B else 0):  # an empty batch: nothing to decode
            hi = int(cur.max())
            logits = self.forward(buf[:, :hi], positions=positions[:, :hi])  # (B, hi, V)
            nxt = logits[rows, cur - 1].argmax(-1)  # (B,)
            nxt = torch.where(done, torch.full_like(nxt, pad_id), nxt)
            out[:, step] = nxt
            buf[rows, cur] = nxt
            cur = cur + (~done).long()
            done = done | (nxt == eos_id)
            if bool(done.all()):
                break
        return out
