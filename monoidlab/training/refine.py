"""Counterexample-guided refinement of a finite model: certify, train on the shortest
counterexample, certify again.

A finite model (the snapped MLP-LDRU and PR-LSTM, the transformation tree model) is a finite
table whose correctness at every length :func:`~monoidlab.evaluation.certificate.certify_table`
decides; when it is wrong the certificate names the shortest string it misreads. Strict test
scores then say little more: the model is wrong at a *known* string. Refinement is the learner's
half of Angluin's loop with the certificate as the equivalence oracle (the language's own DFA,
which labels every training string anyway): each round adds the counterexample to a pool, and
``refine_steps`` steps train on the run's own batches with ``refine_share`` of every batch drawn
from that pool (a fresh optimiser, lr cosine from the run's ``lr``). It stops at a proof, at a
counterexample longer than the training lengths (training on it would train past them: the
run's length-generalisation claim would no longer hold), at a certificate's budget, or after
``refine_rounds`` rounds.

The run's weights are replaced only by proved ones: a refinement that ends without a proof
leaves the trained (best validated) weights as they were, so it can never make a run worse.
Every batch is seeded by (the run's seed, the round, the step): the same seed gives the same
refinement, and a run resumed after its training re-runs it exactly.

Example
-------
>>> import torch
>>> from monoidlab.training.config import RunConfig
>>> from monoidlab.training.problems import make_problem
>>> from monoidlab.training.loop import Session
>>> cfg = RunConfig(language="parity", model="mlp-ldru-snap", steps=3, batch_size=8,
...                 train_lengths="1:8", model_options={"d": 8, "codes": 4},
...                 refine_rounds=2, refine_steps=5)
>>> s = Session.start(cfg, make_problem(cfg), torch.device("cpu"))
>>> r = refine(s)
>>> r.kept in ("refined", "trained"), 1 <= len(r.rounds) <= 3
(True, True)
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from monoidlab.training.loop import _optimizer, train_step, training_batch

if TYPE_CHECKING:
    from monoidlab.training.loop import Session

__all__ = ["RefineRound", "Refinement", "refine", "refine_lr"]

#: the refinement's own stream of the run's seed sequence ("ref")
_STREAM = 0x726566


@dataclass(frozen=True)
class RefineRound:
    """One certificate of the refinement and what followed it.

    ``outcome``: ``proved`` (the weights are correct at every length: refinement stops),
    ``counterexample`` (added to the pool, then ``steps`` steps trained), ``beyond`` (the
    shortest counterexample is longer than the training lengths: stop), ``last`` (a
    counterexample after the last round), ``refused`` (a budget of the certificate: stop).
    """

    round: int
    outcome: str
    verdict: str
    counterexample: str | None
    length: int | None
    steps: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {"round": self.round, "outcome": self.outcome, "verdict": self.verdict,
                "counterexample": self.counterexample, "length": self.length,
                "steps": self.steps, "seconds": round(self.seconds, 2)}


@dataclass(frozen=True)
class Refinement:
    """A run's refinement: its rounds, whether it ended in a proof, and which weights the run
    keeps (``refined``: the proved ones; ``trained``: the weights training left, unchanged)."""

    rounds: tuple[RefineRound, ...]
    proved: bool
    kept: str
    pool: int

    @property
    def steps(self) -> int:
        return sum(r.steps for r in self.rounds)

    @property
    def seconds(self) -> float:
        return sum(r.seconds for r in self.rounds)

    def text(self) -> str:
        """One line: rounds, steps, the outcome."""
        last = self.rounds[-1]
        end = {"proved": "proved correct at every length",
               "beyond": f"stopped: the shortest counterexample ({last.length} symbols) is "
                         f"longer than the training lengths",
               "last": "no proof after the last round",
               "refused": f"stopped: {last.verdict}"}.get(last.outcome, last.outcome)
        keep = "the proved weights are kept" if self.kept == "refined" else \
            "the trained weights are kept unchanged"
        return (f"refinement: {len(self.rounds) - 1} round(s), {self.steps} steps on "
                f"{self.pool} counterexample(s), {self.seconds:.0f} s: {end}; {keep}")

    def to_dict(self) -> dict[str, Any]:
        return {"proved": self.proved, "kept": self.kept, "steps": self.steps,
                "counterexamples": self.pool, "seconds": round(self.seconds, 2),
                "text": self.text(), "rounds": [r.to_dict() for r in self.rounds]}


def refine_lr(lr: float, step: int, steps: int) -> float:
    """The learning rate of refinement step ``step`` of ``steps``: cosine from ``lr`` to 0.

    >>> refine_lr(1e-3, 0, 100), refine_lr(1e-3, 100, 100)
    (0.001, 0.0)
    """
    return lr * 0.5 * (1 + math.cos(math.pi * step / max(1, steps)))


def _certify(model: Any, language: Any, within: Any = None) -> Any:
    """The model's exact certificate on the run's sub-language ``within``, offset 0 (the
    trainer's; a transformation tree's as its automaton, any offset alike), or the text of a
    budget that refused it."""
    from monoidlab.errors import MonoidlabError
    from monoidlab.evaluation.model_certificate import certify_model_exactly

    try:
        return certify_model_exactly(model, language, within=within)
    except MonoidlabError as exc:
        return f"not certified: {exc}"


def _with_pool(batch: dict[str, Any], pool: list[tuple[tuple[int, ...], int]], n: int,
               rng: np.random.Generator) -> dict[str, Any]:
    """``batch`` with its first ``n`` rows replaced by strings drawn from ``pool`` (tokens,
    class), padded to one width; a batch at random offsets places the pool's strings at 0
    (the certificate's offset)."""
    pick = rng.integers(len(pool), size=n)
    lens = np.array([len(pool[i][0]) for i in pick], np.int64)
    rest = {k: np.asarray(v) for k, v in batch.items()}
    T = max(int(lens.max()), rest["tokens"].shape[1])
    tokens = np.zeros((len(rest["tokens"]), T), rest["tokens"].dtype)
    tokens[:, : rest["tokens"].shape[1]] = rest["tokens"]
    for row, i in enumerate(pick):
        tokens[row] = 0
        tokens[row, : lens[row]] = pool[i][0]
    out = {**rest, "tokens": tokens,
           "lengths": np.concatenate([lens, rest["lengths"][n:]]).astype(rest["lengths"].dtype),
           "targets": np.concatenate([np.array([pool[i][1] for i in pick]),
                                      rest["targets"][n:]]).astype(rest["targets"].dtype)}
    if "offsets" in rest:
        out["offsets"] = np.concatenate([np.zeros(n, rest["offsets"].dtype),
                                         rest["offsets"][n:]])
    return out


def _mined(model: Any, problem: Any, lengths: np.ndarray, n: int, seed: int
           ) -> list[tuple[tuple[int, ...], int]]:
    """The strings among ``n`` training strings (the run's sampler, lengths ``lengths``) that
    the model's table misreads, as (tokens, class): many counterexamples for one fold."""
    from monoidlab.evaluation.model_certificate import finite_classifier
    from monoidlab.strings.sampling import sample

    spec = problem.plain_sampler
    b = sample(problem.language, lengths, n, sampler=spec, seed=seed,
               within=problem.within, mix=spec.settings_or_none(problem.mix))
    got = finite_classifier(model)(b.tokens, b.lengths)
    wrong = np.flatnonzero(got != b.labels)
    return [(tuple(int(x) for x in b.tokens[i, : b.lengths[i]]), int(b.labels[i]))
            for i in wrong]


def refine(s: Session, say: Any = None) -> Refinement:
    """Refine the session's model on its certificate's counterexamples (the module's text);
    ``s.model`` ends holding the proved weights, or the weights it started with."""
    cfg, problem = s.cfg, s.problem
    language = problem.language
    train_lengths = problem.lengths(cfg.train_lengths)
    longest = int(train_lengths.max())
    start = {k: v.detach().clone() for k, v in s.model.state_dict().items()}
    n = max(1, min(cfg.batch_size, round(cfg.refine_share * cfg.batch_size)))
    pool: list[tuple[tuple[int, ...], int]] = []
    rounds: list[RefineRound] = []
    proved = False
    for r in range(cfg.refine_rounds + 1):
        t0 = time.time()
        # on the run's sub-language: a string it never trains on is no counterexample to train
        cert = _certify(s.model, language, cfg.within)
        if isinstance(cert, str):
            rounds.append(RefineRound(r, "refused", cert, None, None, 0, time.time() - t0))
            break
        if cert.correct:
            proved = True
            rounds.append(RefineRound(r, "proved", cert.text(), None, None, 0, time.time() - t0))
            break
        text, length = cert.counterexample, cert.counterexample_length
        if cert.counterexample_tokens is None or length is None or length > longest:
            rounds.append(RefineRound(r, "beyond", cert.text(), text, length, 0,
                                      time.time() - t0))
            break
        if r == cfg.refine_rounds:
            rounds.append(RefineRound(r, "last", cert.text(), text, length, 0, time.time() - t0))
            break
        item = (tuple(int(x) for x in cert.counterexample_tokens), int(cert.expected))
        seed = int(np.random.SeedSequence([int(cfg.seed), _STREAM, r]).generate_state(1)[0])
        found = [item] + (_mined(s.model, problem, train_lengths, cfg.refine_mine, seed)
                          if cfg.refine_mine else [])
        known = set(pool)
        for x in found:
            if x not in known:
                pool.append(x)
                known.add(x)
        if say:
            say(f"refinement round {r + 1} of {cfg.refine_rounds}: counterexample {text!r} "
                f"(length {length}); {cfg.refine_steps} steps with it in the pool "
                f"({len(pool)} string(s))")
        s.acfg = cfg.replace(seed=seed)
        s.opt = _optimizer(cfg, s.model.parameters())
        s.model.train()
        for i in range(cfg.refine_steps):
            for g in s.opt.param_groups:
                g["lr"] = refine_lr(cfg.lr, i, cfg.refine_steps)
            L, batch = training_batch(s.acfg, problem, train_lengths, i, curriculum=False)
            batch = _with_pool(batch, pool, n, np.random.default_rng([seed, i, 1]))
            train_step(s, batch, i, f"refinement round {r + 1}, step {i} (length {L})")
        rounds.append(RefineRound(r, "counterexample", cert.text(), text, length,
                                  cfg.refine_steps, time.time() - t0))
    if not proved:  # only a proof replaces the trained weights
        s.model.load_state_dict(start)
    s.model.eval()
    changed = proved and any(r.steps for r in rounds)  # a proof at round 0: nothing changed
    result = Refinement(tuple(rounds), proved, "refined" if changed else "trained", len(pool))
    if say:
        say(result.text())
    return result
