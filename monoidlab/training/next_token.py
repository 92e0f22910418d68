"""Next-token training for prompt → answer tasks (decimal addition), with exact-match evaluation.

:class:`NextTokenProblem` plugs a sequence task into the bundled trainer
(:func:`monoidlab.training.train`), which only calls ``lengths()``, ``batch()``, ``loss()``
and, for evaluation, ``eval_correct()``:

* ``loss``: cross-entropy of next-token prediction on the **answer tokens only** (the answer's
  digits, its hints if any, and ``<eos>``), averaged over those tokens; the per-string
  ``correct`` it returns is teacher-forced exact match (every answer token argmax-correct),
  logged as the training accuracy;
* ``eval_correct``: exact match under greedy decoding: the model continues the prompt alone
  and must produce the whole answer and ``<eos>`` token for token.

Length. The trainer draws one "length" ``L`` per batch from ``train_lengths`` and evaluates
per length of ``test_lengths``. For addition, ``L`` is the **operand digit count**: a training
batch of length ``L`` draws both operand lengths independently and uniformly from ``1..L``
(so ``L`` is the longest operand the batch may contain, its maximum in practice); an
evaluation batch of length ``L`` has two ``L``-digit operands. With ``train_lengths = "40"``
every training batch follows the paper's distribution (independent lengths in 1..40);
``"1:40"`` mixes in batches of shorter maxima.

Example
-------
>>> import numpy as np
>>> p = addition_problem(format="reversed")
>>> b = p.batch(np.random.default_rng(0), length=3, batch_size=4, train=False)
>>> p.task.render(b["tokens"][0]), b["tokens"].shape
('568+756=4231', (4, 13))
>>> int(b["loss_mask"][0].sum())  # the loss sees the 4 answer digits and <eos>
5
"""

from __future__ import annotations

from typing import Any

import numpy as np

from monoidlab.evaluation.kinds import TaskKinds
from monoidlab.geometry import LengthsLike, length_array

__all__ = ["NextTokenProblem", "addition_problem"]


class NextTokenProblem(TaskKinds):
    """A prompt → answer task as next-token prediction, loss masked to the answer.

    ``task`` provides ``name``, ``vocab_size``, ``tokenizer`` (``pad_id``, ``eos_id``),
    ``check_length(L)`` and ``sample(rng, batch_size, L, train)`` returning ``tokens``,
    ``lengths`` and ``prompt_lengths`` (see :class:`monoidlab.tasks.addition.AdditionTask`).
    """

    readout = "next_token"
    language = None

    def __init__(self, task: Any) -> None:  # e.g. an AdditionTask (see above)
        self.task = task
        self.name = task.name
        self.vocab_size = task.vocab_size
        self.n_classes = task.vocab_size  # the head predicts tokens
        self.class_names = tuple(task.tokenizer.vocab)
        self.pad_id, self.eos_id = task.tokenizer.pad_id, task.tokenizer.eos_id

    def lengths(self, lengths: LengthsLike) -> np.ndarray:
        """The requested operand lengths (an error past what the format can write)."""
        lens = length_array(lengths)
        for L in lens:
            self.task.check_length(int(L))
        return lens

    def batch(self, rng: np.random.Generator, length: int, batch_size: int,
              train: bool, step: int = 0) -> dict[str, Any]:
        b = self.task.sample(rng, batch_size, int(length), train=train)
        tokens = b.tokens
        T = tokens.shape[1]
        targets = np.full_like(tokens, self.pad_id)
        targets[:, :-1] = tokens[:, 1:]  # row t predicts token t + 1
        t = np.arange(T)[None, :]
        # predictions of tokens prompt_len .. length-1: the answer and <eos>
        loss_mask = (t + 1 >= b.prompt_lengths[:, None]) & (t + 1 < b.lengths[:, None])
        return {"tokens": tokens, "lengths": b.lengths, "prompt_lengths": b.prompt_lengths,
                "targets": targets, "loss_mask": loss_mask,
                # seeds the draw of random positions at evaluation (reproducible scores)
                "position_seed": int(rng.integers(2**31))}

    def loss(self, model: Any, batch: dict[str, Any]) -> tuple[Any, Any]:
        """Mean cross-entropy over answer tokens; per-string teacher-forced exact match."""
        import torch.nn.functional as F

        logits = model(batch["tokens"], batch["lengths"]).float()  # (B, T, V)
        mask = batch["loss_mask"]
        ce = F.cross_entropy(logits.transpose(1, 2), batch["targets"], reduction="none")
        loss = (ce * mask).sum() / mask.sum().clamp(min=1)
        wrong = (logits.argmax(-1) != batch["targets"]) & mask
        return loss, (~wrong.any(1)).float()

    def eval_correct(self, model: Any, batch: dict[str, Any]) -> Any:
        """1.0 where greedy decoding from the prompt reproduces the answer and ``<eos>``."""
        import torch

        tokens, plen, lens = batch["tokens"], batch["prompt_lengths"], batch["lengths"]
        B, T = tokens.shape
        t = torch.arange(T, device=tokens.device)[None, :]
        Tp = int(plen.max())
        prompt = tokens[:, :Tp].masked_fill(t[:, :Tp] >= plen[:, None], self.pad_id)
        n_new = int((lens - plen).max())
        out = model.generate(prompt, plen, n_new, eos_id=self.eos_id, pad_id=self.pad_id,
                             seed=batch.get("position_seed"))
        j = torch.arange(n_new, device=tokens.device)[None, :]
        idx = (plen[:, None] + j).clamp(max=T - 1)
        target = tokens.gather(1, idx).masked_fill(j >= (lens - plen)[:, None], self.pad_id)
        return (out == target).all(1).float()


def addition_problem(**task_options: Any) -> NextTokenProblem:
    """The decimal-addition problem; ``task_options`` go to
    :class:`~monoidlab.tasks.addition.AdditionTask` (``format``, ``n_hints``, ``space_prob``,
    ...)."""
    from monoidlab.tasks.addition import AdditionTask

    return NextTokenProblem(AdditionTask(**task_options))
