"""The abstract `Task`, its `TaskBatch`, the tape format and the task registry.

A task maps an input string (int tokens over `input_vocab`) to `output_length(n)` output
tokens over `output_vocab`. This follows deepmind's `neural_networks_chomsky_hierarchy`
`tasks/task.py`, with int tokens instead of one-hot arrays at rest and a numpy
`Generator` instead of jax keys.

Examples:
    >>> import numpy as np

    >>> from monoidlab.tasks import get_task
    >>> task = get_task("parity_check")
    >>> batch = task.sample(np.random.default_rng(0), batch=4, length=6)
    >>> batch.inputs.shape, batch.targets.shape, task.n_classes
    ((4, 6), (4, 1), 2)
    >>> tokens, lengths, out = task.tape(batch)
    >>> tokens.shape, int(tokens[0, -1]) == task.empty_token, out
    ((4, 7), True, slice(6, 7, None))
"""

from __future__ import annotations

import abc
import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from monoidlab._checks import check_count, check_seed, check_str
from monoidlab._suggest import known_choices
from monoidlab.errors import InputError, UnknownName

__all__ = [
    "StringTask",
    "as_2d",
    "TASKS",
    "RandomStream",
    "Task",
    "TaskBatch",
    "as_generator",
    "get_task",
    "register_task",
]

LEVELS = ("R", "DCF", "CS", "listops", "LM", "text")
READOUTS = ("tape", "next_token")  # how the trainer reads a task's outputs (training/problems.py)


@dataclass(frozen=True, eq=False)  # arrays: no elementwise == on the dataclass
class TaskBatch:
    """One batch of a task, all strings of the same input length.

    Attributes:
        inputs: (B, n) int64 input tokens, ids into `task.input_vocab`.
        targets: (B, m) int64 output tokens, ids into `task.output_vocab`; m =
            `task.output_length(n)`. Positions after a terminator hold 0 (as in the
            official code, whose loss is *not* masked).
        mask: (B, m) bool; False = position ignored by accuracy (after a terminator).
        lengths: (B,) int64 true input lengths (all equal to n for every task here).

    Examples:
        >>> b = TaskBatch(np.zeros((2, 3), np.int64), np.zeros((2, 1), np.int64),
        ...               np.ones((2, 1), bool), np.full(2, 3))
        >>> len(b)
        2
    """

    inputs: np.ndarray
    targets: np.ndarray
    mask: np.ndarray
    lengths: np.ndarray

    def __len__(self) -> int:
        return int(self.inputs.shape[0])


def as_generator(rng: np.random.Generator | int) -> np.random.Generator:
    """Return `rng` itself, or a fresh `default_rng(rng)` for an int seed.

    Examples:
        >>> bool(as_generator(0).integers(10) == as_generator(0).integers(10))
        True
    """
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(check_seed(rng, "rng", none=False))


class RandomStream:
    """Uniform draws for the Python-level (recursive) generators, pulled in blocks.

    A Python call to `Generator.integers` costs microseconds; the bracketed-expression
    and ListOps generators make one draw per tree node, so they draw floats in blocks
    instead. The stream is a pure function of the generator's state.

    Examples:
        >>> s = RandomStream(np.random.default_rng(0))
        >>> 0 <= s.randint(3, 7) < 7
        True
    """

    def __init__(self, rng: np.random.Generator, block: int = 4096) -> None:
        if not isinstance(rng, np.random.Generator):
            raise InputError(f"rng: a numpy Generator, got {type(rng).__name__}")
        self._rng = rng
        self._block = check_count(block, "block")
        self._buf: list[float] = []
        self._pos = 0

    def uniform(self) -> float:
        if self._pos == len(self._buf):
            self._buf = self._rng.random(self._block).tolist()
            self._pos = 0
        u = self._buf[self._pos]
        self._pos += 1
        return u

    def randint(self, low: int, high: int) -> int:
        """Uniform int in [low, high)."""
        return low + int(self.uniform() * (high - low))

    def choice(self, options: Sequence[Any] | np.ndarray) -> Any:
        return options[int(self.uniform() * len(options))]


class Task(abc.ABC):
    """A length-generalisation task: input strings of length n → m output tokens.

    Subclasses set the class attributes `name`, `level` and `min_length`, set
    `input_vocab` / `output_vocab` in `__init__`, and implement `_sample` (and usually
    `output_length` and `label`).

    Tape format (Delétang et al. 2023): the model reads the n input tokens followed by
    m = `output_length(n)` copies of `empty_token` (= len(input_vocab)), and its
    predictions are read from the last m positions.

    Examples:
        >>> from monoidlab.tasks import get_task
        >>> t = get_task("reverse_string")
        >>> t.output_length(5), t.tape_vocab_size
        (5, 3)
    """

    name: str = ""  # the registry name (a class attribute; an instance may refine it)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # every task's options are checked against their annotations before its __init__
        # runs: an option given from Python meets the config file's refusals, not a numpy error
        super().__init_subclass__(**kwargs)
        if "__init__" in vars(cls):
            from monoidlab._checks import scalar_args

            label = cls.name or cls.__name__
            cls.__init__ = scalar_args(cls.__init__,  # type: ignore[method-assign]
                                       lambda n: f"task {label!r}: option {n}")
    level: ClassVar[str] = ""
    #: "tape": Delétang's input tape; "next_token": prompt → answer by next-token prediction
    readout: ClassVar[str] = "tape"
    #: the shortest input length that has strings; `sample` raises ValueError below it.
    min_length: int = 1
    #: placeholder strings below the class's min_length, as the released code (see below)
    placeholders: bool = False
    #: task options of the paper protocol (`protocol = "paper"`): what the released code does
    #: where monoidlab's default differs (odds_first's order, placeholder strings)
    paper_options: ClassVar[dict] = {}
    #: True when `sample_near_miss` draws near misses from the task's own checker
    has_near_miss: ClassVar[bool] = False

    input_vocab: list[str]
    output_vocab: list[str]

    # -- sizes -------------------------------------------------------------------------
    @property
    def n_classes(self) -> int:
        """Number of output classes (= len(output_vocab))."""
        return len(self.output_vocab)

    @property
    def empty_token(self) -> int:
        """Id of the "empty" tape token that fills the m output positions."""
        return len(self.input_vocab)

    @property
    def tape_vocab_size(self) -> int:
        """Input vocabulary plus the empty token."""
        return len(self.input_vocab) + 1

    @property
    def is_classification(self) -> bool:
        """True when the output is one token whatever the length."""
        return self.output_length(self.min_length) == 1 and self.output_length(97) == 1

    def output_length(self, n: int) -> int:
        """Number of output tokens m for input length n (1 for classification)."""
        return 1

    # -- sampling ------------------------------------------------------------------------
    def check_length(self, length: int) -> int:
        """Validate an input length; return it as an int or raise ValueError."""
        if not isinstance(length, (int, np.integer)) or isinstance(length, bool):
            raise InputError(f"length must be an int, got {type(length).__name__}")
        length = int(length)
        if length < self.min_length:
            raise InputError(
                f"task {self.name!r} has no strings of length {length}; "
                f"min_length is {self.min_length}"
            )
        return length

    def sample(self, rng: np.random.Generator | int, batch: int, length: int) -> TaskBatch:
        """Draw `batch` strings of input length `length` with their targets and masks.

        Reproducible: the result is a function of the generator state (or int seed).
        """
        length = self.check_length(length)
        batch = check_count(batch, "batch")
        out = self._sample(as_generator(rng), batch, length)
        self._check_batch(out)
        return out

    @abc.abstractmethod
    def _sample(self, rng: np.random.Generator, batch: int, length: int) -> TaskBatch:
        """Subclass hook: `length` and `batch` are already validated."""

    def sample_near_miss(self, rng: np.random.Generator | int, batch: int,
                         length: int) -> TaskBatch:
        """`batch` strings one edit away from a task string of another class (tasks with
        `has_near_miss`; docs/deletang.md says per task what a near miss is, or why none)."""
        raise InputError(f"task {self.name!r} has no near-miss sampler")

    def automaton_name(self) -> str | None:
        """The suite language (`languages/`) whose automaton labels this task's strings
        exactly, with the same symbols and class order; None when there is none."""
        return None

    def _use_placeholders(self, on: bool) -> None:
        """Accept the lengths below `min_length` with the reference's placeholder strings.

        The released code returns fixed degenerate strings there (and trains on them); with
        `placeholders=True` `sample` does the same and `label` labels them the same way.
        """
        self.placeholders = bool(on)
        if self.placeholders:
            self.min_length = 1

    def is_placeholder_length(self, n: int) -> bool:
        """True when length `n` has only placeholder strings (below the class's min_length)."""
        return self.placeholders and n < type(self).min_length

    def label(self, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Targets (B, m) int64 and mask (B, m) bool for given inputs (B, n).

        The labeller is separate from the sampler so hand-written strings can be
        checked; `sample` returns exactly `label(inputs)`.
        """
        raise NotImplementedError(f"{type(self).__name__} has no standalone labeller")

    def _batch(self, inputs: np.ndarray, targets: ArrayLike | None = None,
               mask: ArrayLike | None = None) -> TaskBatch:
        """Assemble a TaskBatch, labelling `inputs` when no targets are given."""
        inputs = np.ascontiguousarray(inputs, dtype=np.int64)
        if targets is None:
            targets, mask = self.label(inputs)
        targets = np.ascontiguousarray(targets, dtype=np.int64)
        if mask is None:
            mask = np.ones(targets.shape, dtype=bool)
        lengths = np.full(inputs.shape[0], inputs.shape[1], dtype=np.int64)
        return TaskBatch(inputs, targets, np.asarray(mask, dtype=bool), lengths)

    def _check_batch(self, b: TaskBatch) -> None:
        # Cheap invariants every sampler must satisfy; a violation is a bug here.
        B, n = b.inputs.shape
        m = self.output_length(n)
        assert b.targets.shape == (B, m) and b.mask.shape == (B, m), (b.targets.shape, m)
        assert b.lengths.shape == (B,)

    # -- encoding ---------------------------------------------------------------------
    def encode(self, symbols: Sequence[str] | str) -> np.ndarray:
        """Symbols (a list, or a string of one-character symbols) → int64 ids.

        Examples:
            >>> from monoidlab.tasks import get_task
            >>> get_task("binary_addition").encode("11+101").tolist()
            [1, 1, 2, 1, 0, 1]
        """
        index = {s: i for i, s in enumerate(self.input_vocab)}
        try:
            return np.array([index[s] for s in symbols], dtype=np.int64)
        except KeyError as e:
            raise InputError(f"symbol {e.args[0]!r} not in {self.input_vocab}") from None

    def decode(self, ids: Sequence[int], output: bool = False) -> list[str]:
        """Ids → symbols of the input (or, with output=True, output) vocabulary."""
        vocab = self.output_vocab if output else self.input_vocab
        return [vocab[int(i)] for i in ids]

    # -- model interface ------------------------------------------------------------------
    def tape(self, batch: TaskBatch) -> tuple[np.ndarray, np.ndarray, slice]:
        """Delétang's tape: inputs then m empty tokens; predictions at `out_slice`.

        Returns tokens (B, n + m) int64, lengths (B,) = n + m, and the slice of the
        last m positions.
        """
        B, n = batch.inputs.shape
        m = batch.targets.shape[1]
        empty = np.full((B, m), self.empty_token, dtype=np.int64)
        tokens = np.concatenate([batch.inputs.astype(np.int64), empty], axis=1)
        return tokens, np.full(B, n + m, dtype=np.int64), slice(n, n + m)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(name={self.name!r}, level={self.level!r}, "
            f"input_vocab={self.input_vocab}, n_classes={self.n_classes})"
        )


# -- registry ---------------------------------------------------------------------------
TASKS: dict[str, type[Task]] = {}


def as_2d(inputs: ArrayLike) -> np.ndarray:
    """int64 (B, n) view of one string (n,) or a batch (B, n)."""
    x = np.asarray(inputs, dtype=np.int64)
    return x[None, :] if x.ndim == 1 else x


class StringTask(Task):
    """A task on uniform random strings over ``vocab_size`` symbols whose output uses the same
    symbols (reverse, duplicate, odds first, sort): shared vocabularies and sampler."""

    def __init__(self, vocab_size: int = 2) -> None:
        if vocab_size < 1:
            raise InputError(f"task {self.name!r}: option vocab_size: at least 1 symbol, got "
                             f"{vocab_size}")
        self.input_vocab = [str(i) for i in range(vocab_size)]
        self.output_vocab = list(self.input_vocab)

    def output_length(self, n: int) -> int:
        return n

    def _sample(self, rng: np.random.Generator, batch: int, length: int) -> TaskBatch:
        return self._batch(rng.integers(0, len(self.input_vocab), (batch, length)))


def register_task(cls: type[Task]) -> type[Task]:
    """Class decorator adding a Task subclass to `TASKS` under `cls.name`."""
    if not cls.name or cls.level not in LEVELS or cls.readout not in READOUTS:
        raise InputError(f"{cls.__name__}: set name, a level in {LEVELS} and a readout "
                         f"in {READOUTS}")
    if cls.name in TASKS and TASKS[cls.name] is not cls:
        raise InputError(f"task name {cls.name!r} registered twice")
    TASKS[cls.name] = cls
    return cls


def get_task(name: str, **kwargs: Any) -> Task:
    """Instantiate the task registered under `name` with keyword options.

    Examples:
        >>> get_task("bucket_sort", vocab_size=3).input_vocab
        ['0', '1', '2']
    """
    # Registration happens on import of the task modules; make sure they are loaded.
    importlib.import_module("monoidlab.tasks")
    check_str(name, "task name")
    if name not in TASKS:
        raise UnknownName(f"unknown task {name!r}" + known_choices(name, TASKS, "known tasks",
                                                                   where="docs/tasks.md"))
    import inspect

    params = inspect.signature(TASKS[name].__init__).parameters
    unknown = sorted(set(kwargs) - set(params) - {"self"})
    if unknown:
        raise InputError(f"task {name!r} has no option(s) {unknown}; its options: "
                         f"{', '.join(p for p in params if p != 'self') or 'none'}")
    return TASKS[name](**kwargs)
