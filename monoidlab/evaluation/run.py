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
from typing import TYPE_CHECKING, Any

import numpy as np

from monoidlab._checks import check_count, check_seed, check_threshold
from monoidlab._util import MAX_STRINGS, check_workload, eval_mode, progress_bar
from monoidlab.evaluation.baselines import BASELINES, TestSet
from monoidlab.evaluation.measures import MEASURES, TokenScored, pooled_accuracy
from monoidlab.evaluation.result import DEFAULT_THRESHOLD, Evaluation
from monoidlab.geometry import range_text

if TYPE_CHECKING:
    import torch

__all__ = ["evaluate_kinds", "evaluate", "check_test_lengths", "single_class_lengths",
           "to_device"]


def to_device(batch: dict[str, Any], device: torch.device | str) -> dict[str, Any]:
    """A problem's numpy batch as tensors on ``device`` (other values unchanged)."""
    import torch

    out = {}
    for k, v in batch.items():
        if isinstance(v, np.ndarray):
            if any(st < 0 for st in v.strides):  # e.g. a reversed (B, 1) view: torch refuses
                v = v.copy()
            out[k] = torch.as_tensor(v, device=device)
        else:
            out[k] = v
    return out


def evaluate_kinds(model: Any, problem: Any, lengths: Any, n_per_length: int = 64,
                   seed: int = 0, kinds: Any = None, threshold: float = DEFAULT_THRESHOLD,
                   batch_size: int = 256, device: Any = None,
                   progress: bool = False) -> Evaluation:
    """Accuracy per length and kind on fixed, seeded test sets (the same strings for every
    model and every call with the same seed), with baselines and the strict verdict.

    ``kinds``: a subset of the problem's kinds (default all); ``n_per_length`` strings per
    length and kind. Warns when most test lengths have a single class.
    """
    import torch

    threshold = check_threshold(threshold)
    seed = check_seed(seed, generator=False)
    n_per_length = check_count(n_per_length, "n_per_length", maximum=MAX_STRINGS)
    batch_size = check_count(batch_size, "batch_size", maximum=MAX_STRINGS)
    kinds = problem.check_kinds(kinds)
    check_workload(lengths, n_per_length * len(kinds))  # before a single string is drawn
    device = device or next(model.parameters()).device
    lens = problem.lengths(lengths)  # the lengths that have strings: filtered once
    ev = Evaluation(problem.name, kinds, float(threshold), int(n_per_length))
    tokens_scored = isinstance(problem, TokenScored)  # tape tasks: two accuracy definitions
    # the count-only bound needs groups of strings with equal counts: languages, and tape tasks
    # of a regular language (small alphabets); large alphabets give singleton groups (bound 1)
    counts = problem.language is not None or getattr(problem, "automaton", None) is not None
    if tokens_scored:
        ev.measure = problem.measure
        ev.by_measure = {m: {k: {} for k in kinds} for m in MEASURES}
    for k in kinds:
        for d in (ev.accuracy, ev.single_class, ev.class_mix):
            d[k] = {}
        for b in BASELINES:
            ev.baselines.setdefault(b.name, {})[k] = {}
        ev.unavailable[k] = []
    single = single_class_lengths(problem, lens)
    it: Any = [(k, int(L)) for L in lens for k in kinds]
    if progress:
        it = progress_bar(it, desc=f"evaluate {problem.name}", leave=False)
    with eval_mode(model):
        for kind, L in it:
            if progress:
                it.set_postfix_str(f"{kind} at length {L}", refresh=False)
            rng = problem.eval_rng(seed, kind, L)
            correct, labels, toks, lns, hits, scored, targets = [], [], [], [], [], [], []
            left = n_per_length
            while left > 0:
                b = problem.kind_batch(rng, L, min(batch_size, left), kind)
                if not len(b["lengths"]):
                    break
                if tokens_scored:
                    h, n = problem.eval_counts(model, to_device(b, device))
                    hits.append(h.cpu().numpy())
                    scored.append(n.cpu().numpy())
                    targets.append((b["targets"], b["mask"]))
                    c = torch.as_tensor(hits[-1] / np.maximum(scored[-1], 1))
                else:
                    c = problem.eval_correct(model, to_device(b, device))
                correct.append(c.float().cpu())
                y = b.get("targets")
                if y is not None and np.ndim(y) == 2 and tokens_scored and y.shape[1] == 1:
                    y = y[:, 0]  # a classification task on the tape: one label per string
                if y is not None and np.ndim(y) == 1:  # one label per string
                    labels.append(y)
                toks.append(b["tokens"])
                lns.append(b["lengths"])
                left -= len(c)
            if not correct:
                ev.unavailable[kind].append(L)
                continue
            acc = float(torch.cat(correct).mean())
            test = TestSet(_stack(toks), np.concatenate(lns),
                           np.concatenate(labels) if labels else None, problem.vocab_size,
                           counts=counts)
            if tokens_scored:
                h, n = np.concatenate(hits), np.concatenate(scored)
                both = {"per_string": acc, "pooled": pooled_accuracy(h, n)}
                acc = both[ev.measure]
                if L not in single:
                    for m, v in both.items():
                        ev.by_measure[m][kind][L] = v
                test.targets = np.concatenate([t for t, _ in targets])
                test.mask = np.concatenate([m for _, m in targets])
                test.pooled = ev.measure == "pooled"
            (ev.single_class if L in single else ev.accuracy)[kind][L] = acc
            for base in BASELINES:
                value = base.compute(test)
                if value is not None:
                    ev.baselines[base.name][kind][L] = value
            if test.labels is not None:
                shares = np.bincount(test.labels, minlength=problem.n_classes) / len(test.labels)
                names = problem.class_names
                ev.class_mix[kind][L] = {names[c]: round(float(v), 4)
                                         for c, v in enumerate(shares) if v > 0}
    return ev


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


def check_test_lengths(problem: Any, lengths: Any, what: str = "test lengths") -> set[int]:
    """The lengths of ``lengths`` with strings of a single class (warning when they are most
    of them): :func:`single_class_lengths` on the lengths that have strings."""
    return single_class_lengths(problem, problem.lengths(lengths), what)


def evaluate(model: Any, problem: Any, lengths: Any, n_per_length: int = 64, seed: int = 0,
             batch_size: int = 256, device: Any = None, progress: bool = False,
             kind: str | None = None) -> dict:
    """Accuracy per length (``{L: acc}``) of one kind (default: the problem's first kind),
    single-class lengths included. :func:`evaluate_kinds` gives the full picture."""
    kind = kind or problem.check_kinds(None)[0]
    ev = evaluate_kinds(model, problem, lengths, n_per_length, seed, [kind],
                        batch_size=batch_size, device=device, progress=progress)
    return dict(sorted({**ev.accuracy[kind], **ev.single_class[kind]}.items()))
