"""What the trainer learns: a *problem* turns a seeded RNG and a length into a batch, and a model's
output into a loss and per-string correctness.

Every problem satisfies the :class:`Problem` protocol; the trainer and the evaluator call only
its methods:

* :class:`LanguageProblem`: classify strings of a regular language (one label per string).
* :class:`TapeProblem`: Delétang et al.'s tasks with outputs on the input tape (input, then m
  empty tokens; predictions read from the last m positions).
* :class:`~monoidlab.training.next_token.NextTokenProblem`: prompt → answer tasks (decimal
  addition) as next-token prediction, scored by exact match under greedy decoding.

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

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from monoidlab._util import LengthsLike, length_array
from monoidlab.errors import ConfigError, InputError, UnknownName
from monoidlab.evalsets import KINDS, check_kinds, classes_at, kind_batch
from monoidlab.sublanguage import Within, resolve_within

__all__ = ["Problem", "LanguageProblem", "TapeProblem", "make_problem"]


@runtime_checkable
class Problem(Protocol):
    """The trainer's view of what is learned.

    Attributes: ``name``, ``kind`` ("classification", "tape" or "lm"), ``vocab_size``,
    ``n_classes`` (the model's output size) and ``language`` (the automaton, or None for tasks
    without one: probing needs it).
    """

    name: str
    kind: str
    vocab_size: int
    n_classes: int
    language: Any

    def lengths(self, lengths: LengthsLike) -> np.ndarray:
        """The given lengths that have strings (sorted int array); error if none has."""
        ...

    def batch(self, rng: np.random.Generator, length: int, batch_size: int,
              train: bool) -> dict:
        """A batch dict of numpy arrays (at least ``tokens`` and ``lengths``)."""
        ...

    def loss(self, model: Any, batch: dict) -> tuple[Any, Any]:
        """``(scalar loss, per-string correctness in [0, 1])`` on a batch of tensors."""
        ...

    def eval_correct(self, model: Any, batch: dict) -> Any:
        """Per-string correctness at evaluation (may differ from training's, e.g. greedy)."""
        ...

    def check_model(self, model_name: str) -> None:
        """Raise :class:`ConfigError` when the model cannot learn this problem."""
        ...

    # --- evaluation (training/evaluate.py)
    class_names: tuple[str, ...]

    def check_kinds(self, kinds: Any) -> tuple[str, ...]:
        """The test kinds asked for (None: all of this problem's kinds)."""
        ...

    def kind_batch(self, rng: np.random.Generator, length: int, n: int, kind: str) -> dict:
        """A test batch of one kind (possibly empty when the kind has no string there)."""
        ...

    def eval_rng(self, seed: int, kind: str, length: int) -> np.random.Generator:
        """The generator of the fixed test set of (seed, kind, length)."""
        ...

    def n_classes_at(self, length: int) -> int:
        """How many classes have strings of this length (1: the length is not scored)."""
        ...


class _SingleKind:
    """Evaluation for problems without an automaton: one kind, ``task`` (their own sampler)."""

    kinds = ("task",)

    if TYPE_CHECKING:  # provided by the problem class that mixes this in
        name: str
        n_classes: int

        def batch(self, rng: np.random.Generator, length: int, batch_size: int,
                  train: bool) -> dict: ...

    def check_kinds(self, kinds: Any) -> tuple[str, ...]:
        if kinds is None or kinds == "all" or tuple(np.atleast_1d(kinds)) == ("task",):
            return self.kinds
        raise UnknownName(f"{self.name}: this task has one test kind, 'task' (the near-miss "
                          f"and EC-stratified kinds need an automaton); got {kinds!r}")

    def kind_batch(self, rng: np.random.Generator, length: int, n: int, kind: str) -> dict:
        return self.batch(rng, length, n, train=False)

    def eval_rng(self, seed: int, kind: str, length: int) -> np.random.Generator:
        return np.random.default_rng([seed, 7_777_777, int(length)])

    def n_classes_at(self, length: int) -> int:
        return self.n_classes  # no automaton: every length counts


def _require(model_name: str, protocol: type, what: str) -> None:
    from monoidlab.models import REGISTRY, model_class

    if not issubclass(model_class(model_name), protocol):
        able = [m for m in sorted(REGISTRY) if issubclass(model_class(m), protocol)]
        raise ConfigError(f"key 'model': {model_name!r} cannot learn {what}; models that can: "
                          f"{', '.join(able)}")


class LanguageProblem:
    """Sequence classification on a language: the label is the class of the whole string."""

    kind = "classification"
    kinds = KINDS

    def __init__(self, lang: Any, sampler: str = "balanced", test_sampler: str | None = None,
                 within: Within = "auto", offsets: str = "none",
                 offset_buffer: int | None = None, mix: dict | None = None) -> None:
        from monoidlab.sampling import check_sampler

        self.language = lang
        self.name = lang.name
        self.sampler = check_sampler(sampler)
        self.test_sampler = check_sampler(test_sampler or sampler)
        self.within = resolve_within(lang, within)
        self.offsets = offsets
        self.offset_buffer = offset_buffer
        self.vocab_size = lang.n_symbols
        self.n_classes = lang.n_classes
        self.class_names = tuple(lang.classes)
        self.mix = mix

    @property
    def lang(self) -> Any:  # the name used before the Problem protocol
        return self.language

    def check_kinds(self, kinds: Any) -> tuple[str, ...]:
        return check_kinds(kinds)

    def kind_batch(self, rng: np.random.Generator, length: int, n: int, kind: str) -> dict:
        b = kind_batch(self.language, kind, int(length), int(n), rng, self.within)
        return {"tokens": b.tokens, "lengths": b.lengths, "targets": b.labels}

    def eval_rng(self, seed: int, kind: str, length: int) -> np.random.Generator:
        return np.random.default_rng([seed, 7_777_777, KINDS.index(kind), int(length)])

    def n_classes_at(self, length: int) -> int:
        return len(classes_at(self.language, int(length), self.within))

    def lengths(self, lengths: Any) -> np.ndarray:
        """The given lengths that have at least one string (e.g. odd ones for expressions)."""
        from monoidlab.sampling import path_counts
        from monoidlab.sublanguage import class_mask

        lens = length_array(lengths)
        keep = class_mask(self.language, self.within)
        out = np.asarray(self.language.output)
        C = path_counts(np.asarray(self.language.delta, np.int64), np.where(keep[out], 0, -1), 1,
                        int(lens.max()))
        ok = lens[(C[lens, self.language.start, 0] > 0) & (lens >= 1)]
        if not len(ok):
            raise InputError(f"{self.name}: no strings at any of the lengths {lengths}")
        return ok

    def batch(self, rng: np.random.Generator, length: int, batch_size: int,
              train: bool) -> dict:
        from monoidlab.sampling import sample

        sampler = self.sampler if train else self.test_sampler
        b = sample(self.language, [int(length)], batch_size, sampler=sampler, seed=rng,
                   within=self.within, mix=self.mix)
        out = {"tokens": b.tokens, "lengths": b.lengths, "targets": b.labels}
        if train and self.offsets == "random":
            from monoidlab.coverage import offsets_for

            offs = offsets_for(int(length), "random", self.offset_buffer)
            out["offsets"] = rng.choice(offs, size=batch_size)
        return out

    def forward(self, model: Any, batch: dict) -> Any:
        if "offsets" in batch:
            return model.forward_at_offsets(batch["tokens"], batch["lengths"], batch["offsets"])
        return model(batch["tokens"], batch["lengths"])

    def loss(self, model: Any, batch: dict) -> tuple[Any, Any]:
        """Cross-entropy and per-string correctness (1.0 / 0.0)."""
        import torch.nn.functional as F

        logits = self.forward(model, batch)
        loss = F.cross_entropy(logits.float(), batch["targets"])
        correct = (logits.argmax(-1) == batch["targets"]).float()
        return loss, correct

    def eval_correct(self, model: Any, batch: dict) -> Any:
        return self.loss(model, batch)[1]

    def check_model(self, model_name: str) -> None:
        from monoidlab.models.protocols import Classifier

        _require(model_name, Classifier, "a language (one class per string)")


class TapeProblem(_SingleKind):
    """A task on the input tape; accuracy = mean over the unmasked output positions."""

    kind = "tape"
    language = None

    def __init__(self, task: Any) -> None:
        self.task = task
        self.name = task.name
        self.vocab_size = task.tape_vocab_size
        self.n_classes = task.n_classes
        self.class_names = tuple(task.output_vocab)

    def lengths(self, lengths: LengthsLike) -> np.ndarray:
        lens = length_array(lengths)
        ok = [int(L) for L in lens if self._has_strings(int(L))]
        if not ok:
            raise InputError(f"{self.name}: no valid input length in {lengths}")
        return np.asarray(ok)

    def _has_strings(self, length: int) -> bool:
        """``task.check_length`` accepts it (min_length; ListOps: a feasible depth)."""
        try:
            self.task.check_length(length)
        except ValueError:
            return False
        return True

    def batch(self, rng: np.random.Generator, length: int, batch_size: int,
              train: bool) -> dict:
        return self.tape_batch(self.task.sample(rng, batch_size, int(length)))

    def tape_batch(self, tb: Any, task: Any = None) -> dict:
        """The trainer's batch dict of a :class:`~monoidlab.tasks.TaskBatch` (the input tape).

        ``task`` (default: this problem's) builds the tape, e.g. a ListOps split's own task.
        """
        tokens, lengths, out_slice = (task or self.task).tape(tb)
        return {"tokens": tokens, "lengths": lengths, "targets": tb.targets, "mask": tb.mask,
                "out_start": out_slice.start, "out_stop": out_slice.stop}

    def forward(self, model: Any, batch: dict) -> Any:
        logits = model.forward_all(batch["tokens"], batch["lengths"])
        return logits[:, int(batch["out_start"]): int(batch["out_stop"])]

    def loss(self, model: Any, batch: dict) -> tuple[Any, Any]:
        import torch.nn.functional as F

        logits = self.forward(model, batch).float()  # (B, m, C)
        mask = batch["mask"].float()
        ce = F.cross_entropy(logits.transpose(1, 2), batch["targets"], reduction="none")
        loss = (ce * mask).sum() / mask.sum().clamp(min=1)
        hit = (logits.argmax(-1) == batch["targets"]).float() * mask
        correct = hit.sum(1) / mask.sum(1).clamp(min=1)
        return loss, correct

    def eval_correct(self, model: Any, batch: dict) -> Any:
        return self.loss(model, batch)[1]

    def check_model(self, model_name: str) -> None:
        from monoidlab.models.protocols import PrefixModel

        _require(model_name, PrefixModel, "a tape task (a prediction at every position)")


def make_problem(cfg: Any) -> Problem:
    """The problem a :class:`~monoidlab.training.config.TrainConfig` describes; the problem
    kind of a task is the one the task declares (``Task.problem_kind``)."""
    if cfg.language is not None:
        from monoidlab.languages import load_language

        problem: Problem = LanguageProblem(load_language(cfg.language), cfg.sampler,
                                           cfg.test_sampler, cfg.within, cfg.offsets,
                                           cfg.offset_buffer, cfg.near_miss_mix)
    else:
        from monoidlab.tasks import get_task

        task = get_task(cfg.task, **cfg.task_kwargs)
        if task.problem_kind == "next_token":
            from monoidlab.training.next_token import NextTokenProblem

            problem = NextTokenProblem(task)
        else:
            problem = TapeProblem(task)
    problem.check_model(cfg.model)
    return problem
