"""What the trainer learns: a *problem* turns a seeded RNG and a length into a batch, and a model's
output into a loss and per-string accuracy.

* :class:`LanguageProblem`: classify strings of a regular language (one label per string).
* :class:`TapeProblem`: Delétang et al.'s tasks with sequence outputs on the input tape
  (input, then m empty tokens; predictions read from the last m positions).

Both are plain classes; the trainer only calls ``lengths()``, ``batch()`` and ``loss()``.

Example
-------
>>> import numpy as np
>>> from monoidlab.training.config import TrainConfig
>>> p = make_problem(TrainConfig(language="parity", model="rnn"))
>>> b = p.batch(np.random.default_rng(0), 5, 4, train=True)
>>> b["tokens"].shape, p.vocab_size, p.n_classes
((4, 5), 2, 2)
"""

from __future__ import annotations

import numpy as np

__all__ = ["LanguageProblem", "TapeProblem", "make_problem", "resolve_within"]


def resolve_within(lang, within):
    """``"auto"``: well-formed strings where the language has an ``incomplete`` class."""
    if within in (None, "none"):
        return None
    if within == "auto":
        return [c for c in lang.classes if c != "incomplete"] if "incomplete" in lang.classes else None
    names = [within] if isinstance(within, str) else list(within)
    bad = [c for c in names if c not in lang.classes]
    if bad:
        raise ValueError(f"within: unknown class(es) {bad} of {lang.name}; classes: {list(lang.classes)}")
    return names


class LanguageProblem:
    """Sequence classification on a language: the label is the class of the whole string."""

    kind = "classification"

    def __init__(self, lang, sampler="balanced", test_sampler=None, within="auto",
                 pad_offset="none", offset_buffer=None):
        self.lang = lang
        self.name = lang.name
        self.sampler = sampler
        self.test_sampler = test_sampler or sampler
        self.within = resolve_within(lang, within)
        self.pad_offset = pad_offset
        self.offset_buffer = offset_buffer
        self.vocab_size = lang.n_symbols
        self.n_classes = lang.n_classes

    def lengths(self, lengths) -> np.ndarray:
        """The given lengths that have at least one string (e.g. odd ones for expressions)."""
        from monoidlab.sampling import as_lengths, path_counts

        lens = as_lengths(lengths)
        keep = np.ones(self.lang.n_classes, bool) if self.within is None else \
            np.isin(self.lang.classes, self.within)
        out = np.asarray(self.lang.output)
        C = path_counts(np.asarray(self.lang.delta, np.int64), np.where(keep[out], 0, -1), 1,
                        int(lens.max()))
        ok = lens[(C[lens, self.lang.start, 0] > 0) & (lens >= 1)]
        if not len(ok):
            raise ValueError(f"{self.name}: no strings at any of the lengths {lengths}")
        return ok

    def batch(self, rng, length: int, batch_size: int, train: bool) -> dict:
        from monoidlab.sampling import sample

        method = self.sampler if train else self.test_sampler
        b = sample(self.lang, [int(length)], batch_size, method=method, seed=rng, within=self.within)
        out = {"tokens": b.tokens, "lengths": b.lengths, "targets": b.labels}
        if train and self.pad_offset == "random":
            from monoidlab.coverage import offsets_for

            offs = offsets_for(int(length), "random", self.offset_buffer)
            out["offsets"] = rng.choice(offs, size=batch_size)
        return out

    def forward(self, model, batch):
        if "offsets" in batch:
            return model(batch["tokens"], batch["lengths"], offsets=batch["offsets"])
        return model(batch["tokens"], batch["lengths"])

    def loss(self, model, batch):
        """Cross-entropy and per-string correctness (1.0 / 0.0)."""
        import torch.nn.functional as F

        logits = self.forward(model, batch)
        loss = F.cross_entropy(logits.float(), batch["targets"])
        correct = (logits.argmax(-1) == batch["targets"]).float()
        return loss, correct


class TapeProblem:
    """A Delétang task on the input tape; accuracy = mean over the unmasked output positions."""

    kind = "tape"

    def __init__(self, task):
        self.task = task
        self.name = task.name
        self.vocab_size = task.tape_vocab_size
        self.n_classes = task.n_classes

    def lengths(self, lengths) -> np.ndarray:
        from monoidlab.sampling import as_lengths

        lens = as_lengths(lengths)
        ok = [int(L) for L in lens if self._has_strings(int(L))]
        if not ok:
            raise ValueError(f"{self.name}: no valid input length in {lengths}")
        return np.asarray(ok)

    def _has_strings(self, length: int) -> bool:
        """``task.check_length`` accepts it (min_length; ListOps: a feasible depth)."""
        try:
            self.task.check_length(length)
        except ValueError:
            return False
        return True

    def batch(self, rng, length: int, batch_size: int, train: bool) -> dict:
        return self.tape_batch(self.task.sample(rng, batch_size, int(length)))

    def tape_batch(self, tb, task=None) -> dict:
        """The trainer's batch dict of a :class:`~monoidlab.tasks.TaskBatch` (the input tape).

        ``task`` (default: this problem's) builds the tape, e.g. a ListOps split's own task.
        """
        tokens, lengths, out_slice = (task or self.task).tape(tb)
        return {"tokens": tokens, "lengths": lengths, "targets": tb.targets, "mask": tb.mask,
                "out_start": out_slice.start, "out_stop": out_slice.stop}

    def forward(self, model, batch):
        logits = model.forward_all(batch["tokens"], batch["lengths"])
        return logits[:, int(batch["out_start"]): int(batch["out_stop"])]

    def loss(self, model, batch):
        import torch.nn.functional as F

        logits = self.forward(model, batch).float()  # (B, m, C)
        mask = batch["mask"].float()
        ce = F.cross_entropy(logits.transpose(1, 2), batch["targets"], reduction="none")
        loss = (ce * mask).sum() / mask.sum().clamp(min=1)
        hit = (logits.argmax(-1) == batch["targets"]).float() * mask
        correct = hit.sum(1) / mask.sum(1).clamp(min=1)
        return loss, correct


def make_problem(cfg):
    """The problem a :class:`~monoidlab.training.config.TrainConfig` describes."""
    if cfg.language is not None:
        from monoidlab.languages import load_language

        return LanguageProblem(load_language(cfg.language), cfg.sampler, cfg.test_sampler,
                               cfg.within, cfg.pad_offset, cfg.offset_buffer)
    if cfg.task == "addition":  # next-token prediction with a masked loss (training/lm.py)
        from monoidlab.training.lm import addition_problem

        return addition_problem(**cfg.task_kwargs)
    from monoidlab.tasks import get_task

    return TapeProblem(get_task(cfg.task, **cfg.task_kwargs))
