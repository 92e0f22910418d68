"""CLI commands for training: ``train``, ``evaluate`` and ``sweep``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from monoidlab.cli._common import (
    UsageError,
    check_work,
    command,
    emit,
    format_table,
    parse_range,
    positive,
)

if TYPE_CHECKING:
    import torch
    from torch import nn

    from monoidlab.training.config import TrainConfig
    from monoidlab.training.evaluate import Evaluation
    from monoidlab.training.problems import Problem

__all__ = ["COMMANDS"]


def _config(args: argparse.Namespace, extra: list[str]) -> TrainConfig:
    from monoidlab.training.config import TrainConfig, apply_overrides, load_config

    cfg = load_config(args.config) if args.config else None
    base = cfg.as_dict() if cfg else {}
    if args.language:
        base.update(language=args.language, task=None)
    if args.task:
        base.update(task=args.task, language=None)
    if args.model:
        base["model"] = args.model
    if args.steps is not None:  # --steps 0 must fail validation, not fall back silently
        base["steps"] = args.steps
    if args.seed is not None:
        base["seed"] = args.seed
    from monoidlab.training.config import config_from_dict

    cfg = config_from_dict(base, args.config or "command line") if base else TrainConfig()
    bad = [x for x in extra if not x.startswith("--") or "=" not in x]
    if bad:
        raise UsageError(f"unrecognised argument(s) {bad}; config overrides look like --key=value")
    return apply_overrides(cfg, extra)


def _train(args: argparse.Namespace, extra: list[str]) -> None:
    from monoidlab.training import train

    cfg = _config(args, extra)
    if args.until is not None and not args.out:
        raise UsageError("--until pauses a run to continue it later: it needs --out")
    positive(args.until, "--until")
    res = train(cfg, args.out, resume=args.resume, overwrite=args.overwrite,
                progress=not args.json, stop_at=args.until)
    text = (f"{res['model']} on {res['problem']}: {res['steps']} steps, "
            f"{res['train_seconds']:.0f} s on {res['device']}")
    if res.get("paused"):
        text += f"\npaused before step {res['steps']}: continue with --resume"
    if "evaluation" in res:
        from monoidlab.training import Evaluation

        text += "\n\n" + evaluation_text(Evaluation.from_dict(res["evaluation"]), lengths=False)
    if args.out:
        text += f"\ncheckpoint: {args.out}/checkpoint.pt"
    emit(args, res, text)


def evaluation_text(ev: Evaluation, lengths: bool = True, max_rows: int = 24) -> str:
    """The evaluation as text: (optionally) accuracy per length and kind, then one summary row
    per kind beside its baselines, the single-class lengths, and the verdict."""
    from monoidlab._util import range_text

    parts = []
    if lengths:
        all_l = sorted({L for k in ev.kinds for d in (ev.accuracy, ev.single_class)
                        for L in d.get(k, {})})
        rows = []
        for L in all_l:
            row = {"length": L}
            for k in ev.kinds:
                acc = ev.accuracy[k].get(L, ev.single_class[k].get(L))
                tag = "" if L in ev.accuracy[k] else " (1 class)" if acc is not None else ""
                row[k] = "n/a" if acc is None else f"{acc:.3f}{tag}"
                maj = ev.majority[k].get(L)
                row[f"{k} majority"] = "" if maj is None else f"{maj:.3f}"
            rows.append(row)
        if len(rows) > max_rows:
            half = max_rows // 2
            rows = rows[:half] + [{"length": "..."}] + rows[-half:]
        cols = ["length"] + [c for k in ev.kinds for c in (k, f"{k} majority")]
        parts += [format_table(rows, cols), ""]
    summary = [{**r, "kind": r["kind"], "scored": r["scored_lengths"]} for r in ev.summary_rows()]
    parts.append(f"{ev.problem}: accuracy per kind over the scored lengths, beside trivial "
                 f"baselines on the same strings ({ev.n_per_length} strings per length and kind)")
    parts.append(format_table(summary, ["kind", "scored", "min", "mean", "majority",
                                        "count_only"]))
    for m, per in ev.by_measure.items():  # tape tasks: both accuracy definitions
        mins = ", ".join(f"{k} {min(v.values()):.3f}" for k, v in per.items() if v)
        parts.append(f"{m} accuracy{' (decides)' if m == ev.measure else ''}: min {mins}; "
                     f"{'solved' if ev.solved_by(m) else 'not solved'}")
    single = sorted({L for k in ev.kinds for L in ev.single_class.get(k, {})})
    if single:
        parts.append(f"lengths with a single class (reported, never scored): {range_text(single)}")
    missing = {k: v for k, v in ev.unavailable.items() if v}
    for k, v in missing.items():
        parts.append(f"no {k} strings exist at lengths {range_text(v)}")
    parts.append(f"score_balanced (the papers' mean over lengths) {ev.score_balanced:.4f}")
    parts.append(ev.verdict())
    return "\n".join(parts)


@command("train", "train a model on a language or task (checkpoints, metrics, resumable)")
def cmd_train(args: argparse.Namespace) -> None:
    _train(args, args.extra)


def config_keys_help(width: int = 100) -> str:
    """The epilog of ``monoidlab train --help``: every config key as ``--key=DEFAULT``, its type
    and its one-line meaning, generated from :class:`TrainConfig` (as docs/training.md's
    table)."""
    import textwrap

    from monoidlab.training.config import config_keys

    rows = config_keys()
    col = max(len(f"--{r['key']}={r['default']}") for r in rows) + 4
    lines = ["config keys: each one can be set as --KEY=VALUE after the options above (shown",
             "with its default; dashes work too: --batch-size=64; nested tables as",
             "--model_kwargs.d=32; a value is read as a TOML literal, else as text). Order:",
             "--config FILE, then --language/--task/--model/--steps/--seed, then --KEY=VALUE.", ""]
    for r in rows:
        text = f"({r['type']}) {r['meaning']}".replace("`", "")
        wrapped = textwrap.wrap(text, width - col, break_on_hyphens=False) or [""]
        flag = f"--{r['key']}={r['default']}"
        lines.append(f"  {flag:<{col - 2}}{wrapped[0]}")
        lines += [" " * col + w for w in wrapped[1:]]
    lines += ["", "Tasks: docs/tasks.md; models and their model_kwargs: docs/training.md."]
    return "\n".join(lines)


def _configure_train(p: argparse.ArgumentParser) -> None:
    from monoidlab.models import REGISTRY

    p.formatter_class = argparse.RawDescriptionHelpFormatter  # the epilog is laid out already
    p.epilog = config_keys_help()
    p.add_argument("--language", default=None, help="suite name or TOML spec")
    p.add_argument("--task", default=None, help="a Delétang task name, 'listops' or 'addition'")
    p.add_argument("--model", default=None, help=f"one of {', '.join(REGISTRY)}")
    p.add_argument("--steps", type=int, default=None, help="the config key steps")
    p.add_argument("--seed", type=int, default=None, help="the config key seed")
    p.add_argument("--config", default=None, help="TOML config file")
    p.add_argument("--out", default=None, help="run folder (checkpoint.pt, metrics.jsonl, ...)")
    p.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the run already in OUT (without it, or --resume, an existing "
                        "run is refused)")
    p.add_argument("--until", type=int, default=None, metavar="STEP",
                   help="pause before global step STEP (after its validation and checkpoint), "
                        "without the final evaluation; --resume continues the same run")
    p.add_argument("--json", action="store_true")


cmd_train.configure = _configure_train
cmd_train.accepts_overrides = True  # unknown --key=value options become config overrides


@command("evaluate", "strict evaluation of a checkpoint: accuracy per length and test kind "
                     "beside trivial baselines, and the solved verdict")
def cmd_evaluate(args: argparse.Namespace) -> None:
    import torch

    from monoidlab.training import evaluate_kinds, load_checkpoint, pick_device

    if args.threads:
        torch.set_num_threads(args.threads)
    positive(args.samples, "--samples")
    asked = parse_range(args.lengths, "--lengths") if args.lengths else None
    device = pick_device(args.device)
    model, cfg, problem, _ = load_checkpoint(args.checkpoint, device)
    if args.splits:
        return _evaluate_splits(args, model, cfg, problem, device)
    lengths = asked or cfg.test_lengths
    kinds = args.kinds.split(",") if args.kinds else cfg.eval_kinds
    n_kinds = len(kinds) if isinstance(kinds, list) else 3  # "all": three kinds
    check_work(lengths, (args.samples or cfg.test_samples) * n_kinds, "--lengths/--samples")
    threshold = cfg.solved_threshold if args.threshold is None else args.threshold
    seed = cfg.seed if args.test_seed is None else args.test_seed
    ev = evaluate_kinds(model, problem, lengths, args.samples or cfg.test_samples, seed,
                        kinds, threshold, device=device, progress=not args.json)
    res = {"checkpoint": args.checkpoint, "problem": problem.name, "model": cfg.model,
           "test_seed": seed, **ev.as_dict()}
    emit(args, res, evaluation_text(ev))


def _evaluate_splits(args: argparse.Namespace, model: nn.Module, cfg: TrainConfig,
                     problem: Problem, device: torch.device) -> None:
    """``evaluate --splits``: accuracy per ListOps split (monoidlab.training.splits)."""
    from monoidlab.training.splits import evaluate_splits, splits_for

    names = None if args.splits == "all" else [x.strip() for x in args.splits.split(",")]
    n = args.samples or 512
    check_work([1000], n * 4, "--samples")  # ListOps strings are at most ~1000 symbols
    acc = evaluate_splits(model, problem, splits_for(problem, names), n, cfg.seed, device=device)
    res = {"checkpoint": args.checkpoint, "problem": problem.name, "model": cfg.model,
           "samples": n, "splits": acc}
    rows = [{"split": k, "accuracy": v} for k, v in acc.items()]
    emit(args, res, format_table(rows, ["split", "accuracy"]) + f"\n\n{n} strings per split")


cmd_evaluate.configure = lambda p: (
    p.add_argument("checkpoint", help="checkpoint.pt or its run folder"),
    p.add_argument("--splits", nargs="?", const="all", default=None,
                   help="ListOps: accuracy per split instead of per length ('all' or a comma "
                        "list of train, test_longer, test_deeper, test_longer_deeper; "
                        "--samples strings per split, default 512)"),
    p.add_argument("--lengths", default=None, help="A:B (default: the config's test lengths)"),
    p.add_argument("--samples", type=int, default=None,
                   help="strings per length and kind (default: the config's test_samples)"),
    p.add_argument("--kinds", default=None,
                   help="comma list of test kinds: balanced, near_miss, ec_stratified (default: "
                        "the config's eval_kinds, all of them)"),
    p.add_argument("--threshold", type=float, default=None,
                   help="solved = accuracy >= THRESHOLD at every scored length of every kind "
                        "(default: the config's solved_threshold, 0.99)"),
    p.add_argument("--test-seed", type=int, default=None,
                   help="seed of the test strings (default: the config's seed, the run's own "
                        "test set); another seed draws a fresh set of the same distribution, "
                        "to re-check a model that was chosen by its score on the usual one"),
    p.add_argument("--device", default="auto"),
    p.add_argument("--threads", type=int, default=1,
                   help="torch CPU threads (0: torch's default)"),
    p.add_argument("--json", action="store_true"))


@command("sweep", "run a grid of languages/tasks × models × seeds; CSV + paper-style summary")
def cmd_sweep(args: argparse.Namespace) -> None:
    from monoidlab.training.sweep import run_sweep

    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    res = run_sweep(args.file, ray_address=args.ray, progress=not args.json,
                    workers=args.workers, write_docs=args.write_docs)
    emit(args, {k: v for k, v in res.items() if k != "summary_md"},
         res["summary_md"] + f"\nwrote {res['out']}/results.csv and summary.md")


cmd_sweep.configure = lambda p: (
    p.add_argument("file", help="sweep TOML (see docs/training.md)"),
    p.add_argument("--ray", default=None, help="'local' or a Ray cluster address"),
    p.add_argument("--write-docs", action="store_true",
                   help="also write the table into the sweep file's results_md (e.g. "
                        "docs/results.md); without it only the sweep's folder is written"),
    p.add_argument("--workers", type=int, default=None,
                   help="local runs side by side, one torch thread each (default: the sweep "
                        "file's workers, else 1)"),
    p.add_argument("--json", action="store_true"))


COMMANDS = (cmd_train, cmd_evaluate, cmd_sweep)
