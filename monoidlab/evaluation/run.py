"""Evaluation that can fail: accuracy per test length and per test kind, next to trivial
baselines, on fixed seeded test sets.

For a language, every test length gets three kinds of strings (:mod:`monoidlab.evaluation.kinds`):
``paper`` (the papers' protocol), ``near_miss`` (one edit away from another class) and
``ec_stratified`` (every reachable equivalence class equally). Every accuracy is reported
beside what a trivial model gets on the same strings (:mod:`monoidlab.evaluation.baselines`).
Lengths at which the language has a single class are reported apart and never scored.
Decimal addition has one kind, ``task`` (its own sampler); Delétang's tape tasks have
``task`` first, then the kinds that apply to them, and two accuracy definitions per length
(``by_measure``: per string and the reference's pooled one; ``measure`` decides).

Example
-------
>>> import torch, monoidlab as ml
>>> from monoidlab.models import build_model
>>> from monoidlab.training.problems import LanguageProblem
>>> problem = LanguageProblem(ml.load_language("parity"))
>>> model = build_model("mlp-ldru", 2, 2, d=8)
>>> ev = evaluate_kinds(model, problem, range(9, 12), n_per_length=8, seed=0)
>>> ev.kinds, sorted(ev.accuracy["near_miss"])
(('paper', 'near_miss', 'ec_stratified'), [9, 10, 11])
>>> ev.solved   # an untrained model
False
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from monoidlab._checks import check_count, check_seed, check_threshold, scalar_args
from monoidlab._util import MAX_STRINGS, check_workload, eval_mode, progress_bar
from monoidlab.errors import InputError
from monoidlab.evaluation.baselines import BASELINES, TestSet
from monoidlab.evaluation.measures import MEASURES, TokenScored, pooled_accuracy
from monoidlab.evaluation.packing import (
    DEFAULT_MAX_TOKENS,
    concat_batches,
    length_group,
    padded_tokens,
    row_splits,
    tape_counts,
    token_budget,
)
from monoidlab.evaluation.result import DEFAULT_THRESHOLD, Evaluation
from monoidlab.geometry import range_text

if TYPE_CHECKING:
    import torch

__all__ = ["evaluate_kinds", "evaluate", "check_test_lengths", "single_class_lengths",
           "to_device"]


def to_device(batch: dict[str, Any], device: torch.device | str) -> dict[str, Any]:
    """A problem's numpy batch as tensors on ``device`` (other values unchanged)."""
    import torch

    if not isinstance(batch, dict):
        raise InputError(f"batch: a problem's batch (a dict of arrays), got "
                         f"{type(batch).__name__}")
    out = {}
    for k, v in batch.items():
        if isinstance(v, np.ndarray):
            if any(st < 0 for st in v.strides):  # e.g. a reversed (B, 1) view: torch refuses
                v = v.copy()
            out[k] = torch.as_tensor(v, device=device)
        else:
            out[k] = v
    return out


@scalar_args
def evaluate_kinds(model: Any, problem: Any, lengths: Any, n_per_length: int = 64,
                   seed: int = 0, kinds: Any = None, threshold: float = DEFAULT_THRESHOLD,
                   batch_size: int = 256, device: Any = None,
                   progress: bool = False, batched: bool = True,
                   max_tokens: int = DEFAULT_MAX_TOKENS) -> Evaluation:
    """Accuracy per length and kind on fixed, seeded test sets (the same strings for every
    model and every call with the same seed), with baselines and the strict verdict.

    ``kinds``: a subset of the problem's kinds (default all); ``n_per_length`` strings per
    length and kind. Warns when most test lengths have a single class. ``batched``: score the
    test batches of neighbouring lengths in one padded call of at most ``max_tokens`` tokens
    (:mod:`~monoidlab.evaluation.packing`; the same predictions string by string), or one call
    per batch (``False``: the slow reference).
    """
    threshold = check_threshold(threshold)
    seed = check_seed(seed, generator=False)
    n_per_length = check_count(n_per_length, "n_per_length", maximum=MAX_STRINGS)
    batch_size = check_count(batch_size, "batch_size", maximum=MAX_STRINGS)
    max_tokens = check_count(max_tokens, "max_tokens")
    kinds = problem.check_kinds(kinds)
    check_workload(lengths, n_per_length * len(kinds))  # before a single string is drawn
    device = device or next(model.parameters()).device
    lens = problem.lengths(lengths)  # the lengths that have strings: filtered once
    ev = Evaluation(problem.name, kinds, float(threshold), int(n_per_length))
    tokens_scored = isinstance(problem, TokenScored)  # tape tasks: two accuracy definitions
    if tokens_scored:
        ev.measure = problem.measure
        ev.by_measure = {m: {k: {} for k in kinds} for m in MEASURES}
    for k in kinds:
        for d in (ev.accuracy, ev.single_class, ev.class_mix):
            d[k] = {}
        for b in BASELINES:
            if not b.optional:  # an optional one appears where it applies (the recorder)
                ev.baselines.setdefault(b.name, {})[k] = {}
        ev.unavailable[k] = []
    record = _Recorder(ev, problem, single_class_lengths(problem, lens), tokens_scored)
    budget = token_budget(model, max_tokens)
    bar: Any = None
    if progress:
        bar = progress_bar(total=len(kinds) * len(lens), leave=False,
                           desc=f"evaluate {problem.name} ({len(kinds)} "
                                f"kind{'s' if len(kinds) > 1 else ''} x "
                                f"{range_text(lens)} x {n_per_length})")
    pack: list[_Chunk] = []  # test batches waiting for one call
    waiting: list[_Test] = []  # test sets whose batches are not all scored yet, in order

    def flush() -> None:
        if pack:
            if bar is not None:
                lo, hi = pack[0].test.length, pack[-1].test.length
                names = ", ".join(dict.fromkeys(c.test.kind for c in pack))
                bar.set_postfix_str(f"{names} at length{f's {lo}-{hi}' if hi > lo else f' {lo}'}"
                                    f" ({sum(len(c.batch['lengths']) for c in pack)} strings)",
                                    refresh=False)
            _score(model, problem, pack, device, tokens_scored)
            pack.clear()
        while waiting and waiting[0].scored:  # recorded in drawing order
            test = waiting.pop(0)
            record(test)
            if bar is not None:
                bar.update(1)

    with eval_mode(model):
        for L in lens:
            L = int(L)
            group = length_group(model, problem, L) if batched else None
            for kind in kinds:
                test = _draw(problem, seed, kind, L, n_per_length, batch_size)
                waiting.append(test)
                for chunk in test.chunks:
                    if pack and (group is None or pack[0].key != group
                                 or padded_tokens([c.batch for c in pack] + [chunk.batch])
                                 > budget):
                        flush()
                    chunk.key = group
                    pack.append(chunk)
                    if group is None:  # scored alone
                        flush()
        flush()
    if bar is not None:
        bar.close()
    return ev


@dataclass
class _Test:
    """The fixed test set of one (kind, length): its batches (chunks of ``batch_size``)."""

    kind: str
    length: int
    chunks: list[_Chunk] = field(default_factory=list)

    @property
    def scored(self) -> bool:
        return all(c.result is not None for c in self.chunks)


@dataclass
class _Chunk:
    """One drawn test batch (numpy) and, once scored, its per-string result: correctness
    (B,), or (hits, scored positions) for a tape."""

    test: _Test
    batch: dict
    key: Any = None
    result: Any = None


def _draw(problem: Any, seed: int, kind: str, L: int, n: int, batch_size: int) -> _Test:
    """The test set of (seed, kind, L): ``n`` strings in batches of at most ``batch_size``,
    from the problem's generator of that triple (so the strings never depend on the order of
    drawing, nor on how they are scored)."""
    rng = problem.eval_rng(seed, kind, L)
    test = _Test(kind, L)
    left = n
    while left > 0:
        b = problem.kind_batch(rng, L, min(batch_size, left), kind)
        if not len(b["lengths"]):
            break
        test.chunks.append(_Chunk(test, b))
        left -= len(b["lengths"])
    return test


def _score(model: Any, problem: Any, chunks: list[_Chunk], device: Any,
           tokens_scored: bool) -> None:
    """One model call on the chunks stacked (:func:`concat_batches`); each chunk gets its own
    rows of the result."""
    batch = to_device(concat_batches([c.batch for c in chunks]), device)
    cuts = row_splits([c.batch for c in chunks])
    if tokens_scored:
        # one tape: the problem reads it; tapes of several lengths: each row at its own outputs
        h, n = (problem.eval_counts(model, batch) if len(chunks) == 1
                else tape_counts(model, batch))
        hits = np.split(h.cpu().numpy(), cuts)
        scored = np.split(n.cpu().numpy(), cuts)
        for c, hc, nc in zip(chunks, hits, scored):
            c.result = (hc, nc)
    else:
        correct = problem.eval_correct(model, batch).float().cpu()
        for c, part in zip(chunks, _split(correct, cuts)):
            c.result = part


def _split(t: Any, cuts: list[int]) -> list[Any]:
    """``t`` cut into rows at ``cuts`` (np.split's convention) as tensors."""
    sizes = np.diff([0, *cuts, len(t)]).tolist()
    return list(t.split(sizes))


class _Recorder:
    """Writes a scored test set into the evaluation: accuracy (or single-class accuracy),
    every baseline on the same strings, the class mix; a test set with no string is listed as
    unavailable."""

    def __init__(self, ev: Evaluation, problem: Any, single: set[int],
                 tokens_scored: bool) -> None:
        self.ev, self.problem, self.single, self.tokens_scored = ev, problem, single, tokens_scored
        # the count-only bound needs groups of strings with equal counts: languages, and tape
        # tasks of a regular language (small alphabets); large alphabets give singleton groups
        self.counts = (problem.language is not None
                       or getattr(problem, "automaton", None) is not None)

    def __call__(self, test: _Test) -> None:
        import torch

        ev, problem, kind, L = self.ev, self.problem, test.kind, test.length
        if not test.chunks:
            ev.unavailable[kind].append(L)
            return
        correct, labels, toks, lns, hits, scored, targets = [], [], [], [], [], [], []
        text_lengths = []  # text classification: the length-only baseline reads them
        for chunk in test.chunks:
            b = chunk.batch
            if self.tokens_scored:
                h, n = chunk.result
                hits.append(h)
                scored.append(n)
                targets.append((b["targets"], b["mask"]))
                c = torch.as_tensor(h / np.maximum(n, 1))
            else:
                c = chunk.result
            correct.append(c.float().cpu())
            y = b.get("targets")
            if y is not None and np.ndim(y) == 2 and self.tokens_scored and y.shape[1] == 1:
                y = y[:, 0]  # a classification task on the tape: one label per string
            if y is not None and np.ndim(y) == 1:  # one label per string
                labels.append(y)
            toks.append(b["tokens"])
            lns.append(b["lengths"])
            if "text_lengths" in b:
                text_lengths.append(b["text_lengths"])
        acc = float(torch.cat(correct).mean())
        test_set = TestSet(_stack(toks), np.concatenate(lns),
                           np.concatenate(labels) if labels else None, problem.vocab_size,
                           counts=self.counts,
                           text_lengths=np.concatenate(text_lengths) if text_lengths else None)
        if self.tokens_scored:
            h, n = np.concatenate(hits), np.concatenate(scored)
            both = {"per_string": acc, "pooled": pooled_accuracy(h, n)}
            acc = both[ev.measure]
            if L not in self.single:
                for m, v in both.items():
                    ev.by_measure[m][kind][L] = v
            test_set.targets = np.concatenate([t for t, _ in targets])
            test_set.mask = np.concatenate([m for _, m in targets])
            test_set.pooled = ev.measure == "pooled"
        (ev.single_class if L in self.single else ev.accuracy)[kind][L] = acc
        for base in BASELINES:
            value = base.compute(test_set)
            if value is not None:
                ev.baselines.setdefault(base.name, {}).setdefault(kind, {})[L] = value
        if test_set.labels is not None:
            labels_ = test_set.labels
            shares = np.bincount(labels_, minlength=problem.n_classes) / len(labels_)
            names = problem.class_names
            ev.class_mix[kind][L] = {names[c]: round(float(v), 4)
                                     for c, v in enumerate(shares) if v > 0}


def _stack(tokens: list[np.ndarray]) -> np.ndarray:
    """Token arrays of one length, padded to one width (a tape's may differ)."""
    T = max(t.shape[1] for t in tokens)
    return np.concatenate([np.pad(t, ((0, 0), (0, T - t.shape[1]))) for t in tokens])


def single_class_lengths(problem: Any, lens: np.ndarray, what: str = "test lengths") -> set[int]:
    """Of the lengths ``lens`` (already :meth:`Problem.lengths`-filtered), those with strings of
    a single class; warns (naming them) when they are most of ``lens``, e.g. a strided range
    that hits the odd lengths of a Dyck language only."""
    single = {int(L) for L in lens if problem.n_classes_at(int(L)) == 1}
    if len(lens) and len(single) > len(lens) / 2:
        warnings.warn(f"{problem.name}: {len(single)} of the {len(lens)} {what} "
                      f"{range_text(lens)} have strings of a single class (e.g. "
                      f"{sorted(single)[:3]}); those lengths are reported but never scored",
                      stacklevel=3)
    return single


@scalar_args
def check_test_lengths(problem: Any, lengths: Any, what: str = "test lengths") -> set[int]:
    """The lengths of ``lengths`` with strings of a single class (warning when they are most
    of them): :func:`single_class_lengths` on the lengths that have strings."""
    return single_class_lengths(problem, problem.lengths(lengths), what)


@scalar_args
def evaluate(model: Any, problem: Any, lengths: Any, n_per_length: int = 64, seed: int = 0,
             batch_size: int = 256, device: Any = None, progress: bool = False,
             kind: str | None = None) -> dict:
    """Accuracy per length (``{L: acc}``) of one kind (default: the problem's first kind),
    single-class lengths included. :func:`evaluate_kinds` gives the full picture."""
    kind = kind or problem.check_kinds(None)[0]
    ev = evaluate_kinds(model, problem, lengths, n_per_length, seed, [kind],
                        batch_size=batch_size, device=device, progress=progress)
    return dict(sorted({**ev.accuracy[kind], **ev.single_class[kind]}.items()))
