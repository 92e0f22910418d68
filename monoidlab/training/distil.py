"""Distil a finite machine from a trained soft model: L* with the model as teacher.

The transformation tree's soft relaxation (``relaxation = "soft"``) trains a probabilistic
automaton whose state is a distribution over n states; its argmax machine (each column's
largest entry) is often wrong where the soft machine is right, because the soft machine
rejects with its mass spread over several states (docs/models.md, "Where it fails"). The
distillation asks the soft machine itself which strings it accepts: L* (AALpy's observation
table, :mod:`monoidlab.probing._lstar`) learns the automaton it implements, with membership
queries answered by the soft machine and equivalence queries on labelled strings drawn from
the run's own training sampler. The language's automaton is never consulted: the only labels
used are those of the sampled training strings, as in any training batch.

Per attempt (at its end, before its validation):

1. the oracle strings: :data:`ORACLE_BATCHES` training batches of the run's sampler at
   lengths drawn uniformly from ``train_lengths`` (no curriculum), seeded by (seed, attempt),
   a stream the training batches never use;
2. the teacher's class of each (the soft state distribution through the readout);
3. L* with the teacher as membership oracle; its equivalence oracle searches the oracle
   strings on which the teacher agrees with the label (so that the teacher's own errors are
   not learned as counterexamples), the shortest first; at most n states (the model's size);
4. every hypothesis L* produced with at most n states, and the model's own argmax machine,
   scored on the labels of all oracle strings; the best is kept (a tie: the later
   hypothesis, then the argmax machine last) and written into the model
   (:meth:`~monoidlab.models.transform_tree.TransformTree.load_automaton`).

The kept machine is then validated and scored like any other weights, and certified.

Example
-------
>>> from monoidlab.training.config import RunConfig
>>> cfg = RunConfig.for_language("parity", "transform-tree", recipe="distilled", steps=300,
...                              restarts=0, seed=0)
>>> cfg.distil, cfg.model_options.relaxation
('lstar', 'soft')
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from monoidlab.training.config import RunConfig

__all__ = ["DISTILS", "ORACLE_BATCHES", "Distillation", "distil", "distil_problem",
           "oracle_batches"]

DISTILS = ("none", "lstar")
ORACLE_BATCHES = 256  # training batches drawn for the oracle: 16,384 strings at batch 64
_ORACLE_STREAM = 0xD157  # keeps the oracle's generator apart from the training batches'


@dataclass(frozen=True)
class Distillation:
    """What one distillation did. Accuracies are on the labelled oracle strings: the soft
    teacher's, the argmax machine's and the best extracted machine's; ``kept``:
    ``"extracted"`` or ``"argmax"``; ``status``: L*'s (``converged``, ``max_states``, ...)."""

    attempt: int
    step: int
    status: str
    rounds: int
    hypotheses: int
    states: int
    oracle_strings: int
    teacher_accuracy: float
    argmax_accuracy: float
    extracted_accuracy: float
    kept: str
    membership_queries: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def text(self) -> str:
        return (f"distilled (attempt {self.attempt + 1}): L* {self.status} after {self.rounds} "
                f"rounds, {self.hypotheses} hypotheses; on {self.oracle_strings} labelled "
                f"training strings the soft teacher scores {self.teacher_accuracy:.4f}, its argmax "
                f"machine {self.argmax_accuracy:.4f}, the best extracted machine "
                f"({self.states} states) {self.extracted_accuracy:.4f}: kept the {self.kept} "
                f"machine ({self.seconds:.1f} s)")


def distil_problem(cfg: RunConfig) -> str | None:
    """What is wrong with the config's ``distil`` key, or None: ``"lstar"`` needs the
    transformation tree trained by its soft relaxation, on a language.

    >>> from monoidlab.training.config import RunConfig
    >>> distil_problem(RunConfig(language="parity", model="transform-tree",
    ...                model_options={"relaxation": "soft"}, distil="lstar")) is None
    True
    """
    if cfg.distil not in DISTILS:
        return f"one of {', '.join(map(repr, DISTILS))}, got {cfg.distil!r}"
    if cfg.distil == "none":
        return None
    options = cfg.model_options
    relaxation = options.get("relaxation") if isinstance(options, dict) else \
        getattr(options, "relaxation", None)
    if cfg.model != "transform-tree" or relaxation != "soft":
        return ("'lstar' distils the soft relaxation of the transformation tree, so it needs "
                "model = 'transform-tree' and model_options.relaxation = 'soft' (recipe "
                f"'distilled' sets both); got model {cfg.model!r}"
                + (f" with relaxation {relaxation!r}" if cfg.model == "transform-tree" else ""))
    if cfg.language is None:
        return "'lstar' needs a language (a DFA spec or a suite name), not a task"
    return None


def oracle_batches(cfg: RunConfig, problem: Any, attempt: int,
                   batches: int = ORACLE_BATCHES) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(tokens, lengths, labels)``: ``batches`` batches of the run's training sampler, each
    at a length drawn uniformly from ``train_lengths``, from the generator (seed, attempt,
    stream) that no training batch uses.

    >>> from monoidlab.training.config import RunConfig
    >>> from monoidlab.training.problems import make_problem
    >>> cfg = RunConfig(language="parity", batch_size=8)
    >>> t, n, y = oracle_batches(cfg, make_problem(cfg), 0, batches=3)
    >>> t.shape[0], bool((y == make_problem(cfg).language.classify(t, n)).all())
    (24, True)
    """
    rng = np.random.default_rng([cfg.seed, attempt, _ORACLE_STREAM])
    lengths_ok = problem.lengths(cfg.train_lengths)
    parts = []
    for _ in range(batches):
        L = int(rng.choice(lengths_ok))
        b = problem.batch(rng, L, cfg.batch_size, train=True, step=cfg.steps)
        parts.append((np.asarray(b["tokens"], np.int64), np.asarray(b["lengths"], np.int64),
                      np.asarray(b["targets"], np.int64)))
    T = max(p[0].shape[1] for p in parts)
    tokens = np.concatenate([np.pad(p[0], ((0, 0), (0, T - p[0].shape[1]))) for p in parts])
    return tokens, np.concatenate([p[1] for p in parts]), np.concatenate([p[2] for p in parts])


class _Teacher:
    """The soft relaxation as a classifier (the Membership oracle calls it like a model)."""

    def __new__(cls, model: Any) -> Any:
        import torch

        class Teacher(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.student = model

            def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
                return self.student.soft_states(tokens, lengths) @ self.student.readout.T

        return Teacher()


def distil(model: Any, problem: Any, cfg: RunConfig, attempt: int, step: int,
           batches: int = ORACLE_BATCHES) -> Distillation:
    """Distil the soft transformation tree ``model`` in place (module docstring); returns
    what it did.

    >>> import torch
    >>> from monoidlab.training.config import RunConfig
    >>> from monoidlab.training.problems import make_problem
    >>> from monoidlab.models.transform_tree import TransformTree
    >>> cfg = RunConfig.for_language("parity", "transform-tree", recipe="distilled")
    >>> problem = make_problem(cfg)
    >>> model = TransformTree(2, 2, states=4, relaxation="soft")
    >>> lang = problem.language  # a right machine, as its own soft teacher
    >>> model.load_automaton(lang.delta, lang.output, lang.start)
    >>> d = distil(model, problem, cfg, attempt=0, step=4000, batches=4)
    >>> d.teacher_accuracy, d.extracted_accuracy, d.kept, d.states
    (1.0, 1.0, 'extracted', 2)
    """
    import torch

    from monoidlab.probing import _lstar
    from monoidlab.probing.extract_automaton import Membership

    t0 = time.perf_counter()
    lang = problem.language
    tokens, lengths, labels = oracle_batches(cfg, problem, attempt, batches)
    was_training = model.training
    model.eval()
    try:
        teacher = _Teacher(model)
        with torch.no_grad():  # the teacher's class of the empty word: its start state's
            empty = int(model.readout[:, 0].argmax())
        member = Membership(teacher, lang, empty=empty)
        answers = member.classify(tokens, lengths)
        right = answers == labels
        argmax = model.learned_automaton()
        argmax_acc = float((argmax.classify(tokens, lengths) == labels).mean())
        found: list[Any] = []
        _, status, rounds, _ = _lstar.learn(
            member, lang, tokens[right], lengths[right], answers[right],
            max_states=model.n_states, max_queries=200_000, max_rounds=50,
            on_hypothesis=lambda h: found.append(_lstar.hypothesis_automaton(h, lang)))
        fitting = [a for a in found if a.n_states <= model.n_states]
        scores = [float((a.classify(tokens, lengths) == labels).mean()) for a in fitting]
        best = max(range(len(scores)), key=lambda i: (scores[i], i), default=None)  # later on a tie
        extracted_acc = scores[best] if best is not None else 0.0
        kept = "extracted" if best is not None and extracted_acc >= argmax_acc else "argmax"
        states = fitting[best].n_states if best is not None else 0
        if kept == "extracted" and best is not None:
            a = fitting[best]
            model.load_automaton(np.asarray(a.delta), np.asarray(a.output), int(a.start))
    finally:
        model.train(was_training)
    return Distillation(attempt, step, status, rounds, len(found), states, len(lengths),
                        float(right.mean()), argmax_acc, extracted_acc, kept,
                        len(member.asked), round(time.perf_counter() - t0, 3))
