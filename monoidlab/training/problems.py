"""What the trainer learns: a *problem* turns a seeded RNG and a length into a batch, and a model's
output into a loss and per-string correctness.

Every problem satisfies the :class:`Problem` protocol; the trainer and the evaluator call only
its methods:

* :class:`LanguageProblem`: classify strings of a regular language (one label per string).
* :class:`TapeProblem`: Delétang et al.'s tasks with outputs on the input tape (input, then m
  empty tokens; predictions read from the last m positions).
* :class:`~monoidlab.training.next_token.NextTokenProblem`: prompt → answer tasks (decimal
  addition) as next-token prediction, scored by exact match under greedy decoding.
* :class:`TextProblem`: text classification on local files (a tape with one output), scored
  on the test file and a held-out slice of the training file.

Example
-------
>>> import numpy as np
>>> from monoidlab.training.config import RunConfig
>>> p = make_problem(RunConfig(language="parity", model="rnn"))
>>> b = p.batch(np.random.default_rng(0), 5, 4, train=True)
>>> b["tokens"].shape, p.vocab_size, p.n_classes
((4, 5), 2, 2)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from monoidlab.errors import InputError, UnknownName
from monoidlab.evaluation import kinds as test_kinds
from monoidlab.evaluation.kinds import TaskKinds, check_kinds, classes_at, kind_batch
from monoidlab.geometry import LengthsLike, Offsets, length_array
from monoidlab.sublanguage import Within, resolve_within

if TYPE_CHECKING:
    from monoidlab.algebra.automaton import Automaton
    from monoidlab.strings.samplers import RunPlan, SamplerSpec

__all__ = ["Problem", "LanguageProblem", "TapeProblem", "TextProblem", "make_problem",
           "recipe_refusal", "READOUTS"]

#: How a problem's outputs are read: one class per ``string`` (a language), a ``tape``
#: (Delétang's tasks), ``next_token`` answers (decimal addition). A task declares its own
#: (:attr:`~monoidlab.tasks.base.Task.readout`); what each needs of a model is checked when
#: the config is built (:mod:`monoidlab.training.config`).
READOUTS = ("string", "tape", "next_token")


@runtime_checkable
class Problem(Protocol):
    """The trainer's view of what is learned.

    Attributes: ``name``, ``readout`` (one of :data:`READOUTS`), ``vocab_size``, ``n_classes``
    (the model's output size) and ``language`` (the automaton, or None for tasks without one:
    probing needs it).
    """

    name: str
    readout: str
    vocab_size: int
    n_classes: int
    language: Any

    def lengths(self, lengths: LengthsLike) -> np.ndarray:
        """The given lengths that have strings (sorted int array); error if none has."""
        ...

    def batch(self, rng: np.random.Generator, length: int, batch_size: int,
              train: bool, step: int = 0) -> dict:
        """A batch dict of numpy arrays (at least ``tokens`` and ``lengths``); ``step`` is the
        training step (a sampler that follows a schedule across steps reads it)."""
        ...

    def loss(self, model: Any, batch: dict) -> tuple[Any, Any]:
        """``(scalar loss, per-string correctness in [0, 1])`` on a batch of tensors."""
        ...

    def eval_correct(self, model: Any, batch: dict) -> Any:
        """Per-string correctness at evaluation (may differ from training's, e.g. greedy)."""
        ...

    # --- evaluation (monoidlab.evaluation)
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


class LanguageProblem:
    """Sequence classification on a language: the label is the class of the whole string."""

    readout = "string"

    def __init__(self, lang: Any, sampler: str | SamplerSpec = "balanced",
                 test_sampler: str | SamplerSpec | None = None, within: Within = "auto",
                 offsets: Any = None, mix: Any = None) -> None:
        from monoidlab.strings.samplers import sampler_spec

        self.language = lang
        self.name = lang.name
        # resolved once (a config passes its specs): every batch hands the spec to sample()
        self.sampler = sampler_spec(sampler, tree=True)
        #: what sample() draws for this run: the sampler, or a tree sampler's stand-in
        self.plain_sampler = sampler_spec(self.sampler.stand_in or self.sampler)
        self.test_sampler = sampler_spec(test_sampler or self.plain_sampler)
        self.plan: RunPlan | None = None  # a tree sampler's plan for this run: use_plan()
        self.fallback: str | None = None  # why a run of a tree sampler trains on its stand-in
        self.within = resolve_within(lang, within)
        self.offsets = Offsets.parse(offsets)
        self.vocab_size = lang.n_symbols
        self.n_classes = lang.n_classes
        self.class_names = tuple(lang.classes)
        self.mix = None if mix is None else dict(mix)

    @property
    def kinds(self) -> tuple[str, ...]:
        """The test kinds of a language: the registry's (read when asked, not copied)."""
        return test_kinds.KINDS

    def check_kinds(self, kinds: Any) -> tuple[str, ...]:
        return check_kinds(kinds)

    def kind_batch(self, rng: np.random.Generator, length: int, n: int, kind: str) -> dict:
        b = kind_batch(self.language, kind, int(length), int(n), rng, self.within)
        return {"tokens": b.tokens, "lengths": b.lengths, "targets": b.labels}

    def eval_rng(self, seed: int, kind: str, length: int) -> np.random.Generator:
        return np.random.default_rng([seed, 7_777_777, self.kinds.index(kind), int(length)])

    def n_classes_at(self, length: int) -> int:
        return len(classes_at(self.language, int(length), self.within))

    def lengths(self, lengths: Any) -> np.ndarray:
        """The given lengths that have at least one string (e.g. odd ones for expressions)."""
        from monoidlab.evaluation.kinds import lengths_with_strings

        ok = lengths_with_strings(self.language, lengths, self.within)
        if not len(ok):
            raise InputError(f"{self.name}: no strings at any of the lengths {lengths}")
        return ok

    def use_plan(self, plan: RunPlan) -> None:
        """Train on a tree sampler's plan for this run (its training batches), or, when the
        plan says why not (``plan.fallback``), on the sampler's stand-in."""
        if plan.fallback:
            self.sampler, self.fallback = self.plain_sampler, plan.fallback
        else:
            self.plan = plan

    def batch(self, rng: np.random.Generator, length: int, batch_size: int,
              train: bool, step: int = 0) -> dict:
        from monoidlab.strings.sampling import sample

        if train and self.plan is not None:
            return self.plan.batch(self, rng, int(length), batch_size, step)
        sampler = self.sampler if train else self.test_sampler
        b = sample(self.language, [int(length)], batch_size, sampler=sampler, seed=rng,
                   within=self.within, mix=sampler.settings_or_none(self.mix))
        out = {"tokens": b.tokens, "lengths": b.lengths, "targets": b.labels}
        if train and not self.offsets.none:
            out["offsets"] = rng.choice(self.offsets.for_length(int(length)), size=batch_size)
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



class TapeProblem(TaskKinds):
    """A task on the input tape (Delétang et al.): the input, then m empty tokens; predictions
    are read at the last m positions.

    **Accuracy.** Per string, the right scored positions over the scored ones; per length two
    definitions on the same strings: ``per_string`` (monoidlab's: the mean over strings) and
    ``pooled`` (the reference's: :func:`~monoidlab.evaluation.measures.pooled_accuracy` over sub-batches of 64). They differ
    only where strings have different numbers of scored positions (stack_manipulation,
    binary_addition, binary_multiplication). ``protocol="paper"`` decides with ``pooled`` and
    trains on the reference's unmasked loss (mean cross-entropy over every output position,
    the zeros after a terminator included); ``"monoidlab"`` decides with ``per_string`` and
    masks the loss.

    **Test kinds.** ``task`` (the task's own sampler, the papers' protocol) always; the regular
    tasks whose strings a suite automaton labels (``task.automaton_name()``) add that
    automaton's ``near_miss`` and ``ec_stratified`` strings (docs/evaluation.md), relabelled by
    the task; tasks with their own near-miss sampler (``task.has_near_miss``) add ``near_miss``.
    """

    readout = "tape"
    language = None  # probing is for languages; a regular task's automaton is ``automaton``

    def __init__(self, task: Any, protocol: str = "monoidlab") -> None:
        from monoidlab.training.config import PROTOCOLS

        if protocol not in PROTOCOLS:
            raise UnknownName(f"unknown protocol {protocol!r}; protocols: {', '.join(PROTOCOLS)}")
        self.task = task
        self.name = task.name
        self.protocol = protocol
        self.measure = "pooled" if protocol == "paper" else "per_string"
        self.vocab_size = task.tape_vocab_size
        self.n_classes = task.n_classes
        self.class_names = tuple(task.output_vocab)
        self.automaton = None
        name = task.automaton_name()
        if name is not None:
            from monoidlab.algebra.languages import load_language

            self.automaton = load_language(name)
            self.within = resolve_within(self.automaton, "auto")
            # automaton symbol id -> task token id (by symbol name)
            self._to_task = np.array([task.input_vocab.index(a)
                                      for a in self.automaton.alphabet], np.int64)
        extra = (test_kinds.TASK_KINDS
                 if self.automaton is not None  # its automaton's kinds, relabelled by the task
                 else ("near_miss",) if task.has_near_miss else ())
        self.kinds = ("task", *extra)

    def check_kinds(self, kinds: Any) -> tuple[str, ...]:
        if kinds is None or kinds == "all":
            return self.kinds
        kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
        bad = [k for k in kinds if k not in self.kinds]
        if bad or not kinds:
            raise UnknownName(f"{self.name}: unknown test kind(s) {bad or kinds}; this task's "
                              f"kinds: {', '.join(self.kinds)}")
        return kinds

    def eval_rng(self, seed: int, kind: str, length: int) -> np.random.Generator:
        if kind == "task":  # the single-kind stream of earlier versions: same strings
            return np.random.default_rng([seed, 7_777_777, int(length)])
        return np.random.default_rng([seed, 7_777_777, 1 + self.kinds.index(kind), int(length)])

    def kind_batch(self, rng: np.random.Generator, length: int, n: int, kind: str) -> dict:
        from monoidlab.tasks import TaskBatch

        if kind == "task":
            return self.batch(rng, length, n, train=False)
        if self.automaton is None:  # the task's own near misses
            return self.tape_batch(self.task.sample_near_miss(rng, int(n), int(length)))
        if not len(classes_at(self.automaton, int(length), self.within)):
            return self._empty(int(length))  # e.g. even lengths of arithmetic expressions
        b = kind_batch(self.automaton, kind, int(length), int(n), rng, self.within)
        if not len(b.lengths):
            return self._empty(int(length))
        inputs = self._to_task[b.tokens]
        targets, mask = self.task.label(inputs)  # the task labels its strings
        return self.tape_batch(TaskBatch(inputs, targets, mask, b.lengths.astype(np.int64)))

    def _empty(self, length: int) -> dict:
        m = self.task.output_length(length)
        return {"tokens": np.zeros((0, length + m), np.int64), "lengths": np.zeros(0, np.int64),
                "targets": np.zeros((0, m), np.int64), "mask": np.zeros((0, m), bool),
                "out_start": length, "out_stop": length + m}

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
              train: bool, step: int = 0) -> dict:
        return self.tape_batch(self.task.sample(rng, batch_size, int(length)))

    def tape_batch(self, tb: Any, task: Any = None) -> dict:
        """The trainer's batch dict of a :class:`~monoidlab.tasks.TaskBatch` (the input tape).

        ``task`` (default: this problem's) builds the tape, e.g. a ListOps split's own task.
        """
        tokens, lengths, out_slice = (task or self.task).tape(tb)
        return {"tokens": tokens, "lengths": lengths, "targets": tb.targets, "mask": tb.mask,
                "out_start": out_slice.start, "out_stop": out_slice.stop}

    def forward(self, model: Any, batch: dict) -> Any:
        from monoidlab.models.protocols import PrefixModel, TapeModel

        tokens, lengths = batch["tokens"], batch["lengths"]
        if not isinstance(model, PrefixModel | TapeModel) and batch["targets"].shape[1] == 1:
            # one output read by a Classifier (the tree baselines): each row's tape ends at its
            # output position, where the string's class is read
            return model(tokens, lengths)[:, None]
        start, stop = int(batch["out_start"]), int(batch["out_stop"])
        if isinstance(model, TapeModel):  # Tape-RNN: its jumps move by the input length
            logits = model.forward_tape(tokens, lengths, lengths.new_full(lengths.shape, start))
        else:
            logits = model.forward_all(tokens, lengths)
        return logits[:, start:stop]

    def loss(self, model: Any, batch: dict) -> tuple[Any, Any]:
        import torch.nn.functional as F

        logits = self.forward(model, batch).float()  # (B, m, C)
        mask = batch["mask"].float()
        ce = F.cross_entropy(logits.transpose(1, 2), batch["targets"], reduction="none")
        if self.protocol == "paper":  # the reference: every output position, mean over all
            loss = ce.mean()
        else:
            loss = (ce * mask).sum() / mask.sum().clamp(min=1)
        hit = (logits.argmax(-1) == batch["targets"]).float() * mask
        correct = hit.sum(1) / mask.sum(1).clamp(min=1)
        return loss, correct

    def eval_counts(self, model: Any, batch: dict) -> tuple[Any, Any]:
        """Per string: right scored positions and scored positions."""
        logits = self.forward(model, batch)
        mask = batch["mask"]
        hits = ((logits.argmax(-1) == batch["targets"]) & mask).sum(1)
        return hits, mask.sum(1)

    def eval_correct(self, model: Any, batch: dict) -> Any:
        hits, counts = self.eval_counts(model, batch)
        return hits.float() / counts.clamp(min=1).float()


class _Order(np.random.Generator):
    """The generator of one test set: a seeded order of a split's rows and how far it has
    been read, so that the evaluation's successive batches never repeat a row."""

    def __init__(self, seed: list[int], n_rows: int) -> None:
        super().__init__(np.random.PCG64(seed))
        self.order = self.permutation(n_rows)
        self.pos = 0

    def take(self, n: int) -> np.ndarray:
        out = self.order[self.pos:self.pos + n]
        self.pos += len(out)
        return out


class TextProblem(TapeProblem):
    """Text classification (:mod:`monoidlab.tasks.text`) on the tape: trained on rows of the
    training file, scored on fixed rows of the test file and of the held-out validation slice.
    The files are checked when the problem is made (before any training), the vocabulary is
    fitted then.

    **Test kinds.** ``test`` (the test file) and ``validation`` (the held-out rows of the
    training file; absent when ``validation = 0``). A kind's test set at length L is the first
    ``n`` rows of a seeded order of its split (the whole split when ``n`` is at least its
    size), the same rows at every length: accuracies at different lengths compare the same
    texts read through wider windows. Every batch carries ``text_lengths`` (tokens in the
    window before padding) for the ``length_only`` baseline.

    Example
    -------
    >>> import tempfile
    >>> from monoidlab.tasks import get_task
    >>> from monoidlab.tasks.text_sample import write_sample
    >>> folder = write_sample(tempfile.mkdtemp(), "sst2", rows=60)
    >>> problem = TextProblem(get_task("sst2", data=folder))
    >>> problem.kinds, problem.n_classes
    (('test', 'validation'), 2)
    >>> b = problem.kind_batch(problem.eval_rng(0, "test", 12), 12, 8, "test")
    >>> b["tokens"].shape, bool(b["text_lengths"].max() <= 12)
    ((8, 13), True)
    """

    def __init__(self, task: Any, protocol: str = "monoidlab") -> None:
        from monoidlab.tasks.text import SPLITS

        task.check_files()
        super().__init__(task, protocol)
        self.kinds = ("test", "validation") if task.validation else ("test",)
        self._split_index = {k: SPLITS.index(k) for k in self.kinds}

    def eval_rng(self, seed: int, kind: str, length: int) -> np.random.Generator:
        # the order depends on (seed, kind), not on the length: every length reads the same rows
        return _Order([seed, 7_777_777, self._split_index[kind]], len(self.task.split(kind)))

    def kind_batch(self, rng: np.random.Generator, length: int, n: int, kind: str) -> dict:
        n_rows = len(self.task.split(kind))
        index = rng.take(n) if isinstance(rng, _Order) else rng.choice(
            n_rows, min(int(n), n_rows), replace=False)  # a plain generator: n distinct rows
        if not len(index):
            return {**self._empty(int(length)), "text_lengths": np.zeros(0, np.int64)}
        return self.tape_batch(self.task.rows(kind, index, int(length)))

    def batch(self, rng: np.random.Generator, length: int, batch_size: int,
              train: bool, step: int = 0) -> dict:
        return self.tape_batch(self.task.sample(rng, batch_size, int(length)))

    def tape_batch(self, tb: Any, task: Any = None) -> dict:
        out = super().tape_batch(tb, task)
        out["text_lengths"] = (tb.inputs != self.task.tokenizer.pad_id).sum(1)
        return out

    def data_fingerprint(self) -> dict[str, str]:
        """``{file name: sha256}`` of the training and test files, kept in every checkpoint:
        the vocabulary, the splits and the rows scored are functions of these bytes, so a
        changed file must stop a resume or a load instead of silently remapping the weights."""
        import hashlib

        out = {}
        for path in (self.task.train_path, self.task.test_path):
            h = hashlib.sha256()
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            out[path.name] = h.hexdigest()
        return out


def check_data_fingerprint(problem: Any, ckpt: dict, source: Any) -> None:
    """Refuse a checkpoint whose data files (text tasks) are not the bytes it was trained on.

    A checkpoint without a fingerprint (older runs, problems without data files) passes.
    """
    from monoidlab.errors import CheckpointError

    saved = ckpt.get("data_sha256")
    if not saved or not hasattr(problem, "data_fingerprint"):
        return
    now = problem.data_fingerprint()
    folder = problem.task.folder
    for name, digest in saved.items():
        if now.get(name) != digest:
            raise CheckpointError(
                f"{source}: {folder / name} is not the file this run was trained on (sha256 "
                f"{digest[:12]}..., now {str(now.get(name))[:12]}...): the vocabulary and the "
                "splits would change under the weights; put the original file back, or train "
                "a new run")


def make_problem(cfg: Any, language: Automaton | None = None) -> Problem:
    """The problem a :class:`~monoidlab.training.config.RunConfig` describes; a task's
    readout is the one the task declares (``Task.readout``). The config has already checked
    that its model can serve it. ``language``: the automaton to use for ``cfg.language``
    (a run's own copy of its spec, :mod:`~monoidlab.training.run_language`); by default the
    language is loaded by name."""
    if cfg.language is not None:
        from monoidlab.algebra.languages import load_language

        lang = language if language is not None else load_language(cfg.language)
        lp = LanguageProblem(lang, cfg.sampler_spec, cfg.test_sampler_spec, cfg.within,
                             cfg.offsets, cfg.near_miss_mix)
        spec = cfg.sampler_spec
        if spec.tree:  # its plan for this run, along the model's tree (the config checked it)
            from monoidlab.models import model_spec

            lp.use_plan(spec.function()(cfg, lp, model_spec(cfg.model).schedule))
        problem: Problem = lp
    else:
        from monoidlab.tasks import get_task

        options = dict(cfg.task_options)
        if cfg.protocol == "paper":  # the released code's task behaviour; explicit options win
            from monoidlab.tasks import TASKS

            cls = TASKS.get(cfg.task)  # an unknown name fails in get_task, with the list
            options = {**(cls.paper_options if cls else {}), **options}
        task = get_task(cfg.task, **options)
        if task.readout == "next_token":
            from monoidlab.training.next_token import NextTokenProblem

            problem = NextTokenProblem(task)
        elif getattr(task, "layout", None) is not None:  # text classification: local files
            problem = TextProblem(task, protocol=cfg.protocol)
        else:
            problem = TapeProblem(task, protocol=cfg.protocol)
    return problem


def recipe_refusal(language: Automaton, test_lengths: Any = None,
                   model: str = "mlp-ldru") -> str | None:
    """Why ``recipe = "languages"`` of ``model`` (for MLP-LDRU round 1's frozen recipe; another
    model's own recipe of the registry, the transformation tree's being the benchmark's current
    choice, what ``monoidlab train --language`` trains; ``min-length`` and the report pass the
    model they recommend) refuses ``language`` before any training, say a covering plan larger than
    its steps can show or length tables larger than the memory limit; ``None`` when it trains
    it, or when no MLP-LDRU recipe is frozen. ``test_lengths``: the run's (default: the
    trainer's). A second or so: the data is set up, nothing is trained.

    >>> import monoidlab as ml
    >>> recipe_refusal(ml.load_language("parity")) is None
    True
    >>> recipe_refusal(ml.load_language("parity"), model="transform-tree") is None
    True
    """
    from monoidlab.errors import ConfigError, MonoidTooLarge
    from monoidlab.recipes import has_frozen_recipe
    from monoidlab.training.parse import config_from_dict

    if model == "mlp-ldru" and not has_frozen_recipe():
        return None
    keys = {"language": language.name, "model": model, "recipe": "languages"}
    if test_lengths is not None:
        keys["test_lengths"] = test_lengths
    try:
        make_problem(config_from_dict(keys, "recipe 'languages'"), language)
    except (ConfigError, MonoidTooLarge) as exc:
        return str(exc)
    return None
