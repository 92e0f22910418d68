"""CLI commands for training: ``train``, ``evaluate`` and ``sweep``."""

from __future__ import annotations

from monoidlab.cli._common import UsageError, command, emit, format_table, parse_range

__all__ = ["COMMANDS"]


def _config(args, extra: list[str]):
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


def _train(args, extra):
    from monoidlab.training import train

    cfg = _config(args, extra)
    res = train(cfg, args.out, resume=args.resume, progress=not args.json)
    text = (f"{res['model']} on {res['problem']}: score {res['score']:.4f} "
            f"({'solved' if res['solved'] else 'not solved'}) after {res['steps']} steps, "
            f"{res['train_seconds']:.0f} s on {res['device']}")
    if args.out:
        text += f"\ncheckpoint: {args.out}/checkpoint.pt"
    emit(args, res, text)


@command("train", "train a model on a language or task (checkpoints, metrics, resumable)")
def cmd_train(args):
    _train(args, args.extra)


cmd_train.configure = lambda p: (
    p.add_argument("--language", default=None, help="suite name or TOML spec"),
    p.add_argument("--task", default=None, help="a Delétang task name, 'listops' or 'addition'"),
    p.add_argument("--model", default=None),
    p.add_argument("--steps", type=int, default=None),
    p.add_argument("--seed", type=int, default=None),
    p.add_argument("--config", default=None, help="TOML config file"),
    p.add_argument("--out", default=None, help="run folder (checkpoint.pt, metrics.jsonl, ...)"),
    p.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt"),
    p.add_argument("--json", action="store_true"))
cmd_train.accepts_overrides = True  # unknown --key=value options become config overrides


@command("evaluate", "accuracy per length of a checkpoint, its score and solved flag")
def cmd_evaluate(args):
    import numpy as np

    from monoidlab.training import evaluate, load_checkpoint, pick_device

    device = pick_device(args.device)
    model, cfg, problem, _ = load_checkpoint(args.checkpoint, device)
    if args.splits:
        return _evaluate_splits(args, model, cfg, problem, device)
    lengths = parse_range(args.lengths, "--lengths") if args.lengths else cfg.test_lengths
    acc = evaluate(model, problem, lengths, args.samples or cfg.test_samples, cfg.seed,
                   device=device, progress=not args.json)
    score = float(np.mean(list(acc.values())))
    res = {"checkpoint": args.checkpoint, "problem": problem.name, "model": cfg.model,
           "accuracy": acc, "score": score, "solved": score >= cfg.solved_threshold}
    rows = [{"length": k, "accuracy": v} for k, v in acc.items()]
    shown = rows if len(rows) <= 30 else rows[:10] + [{"length": "...", "accuracy": ""}] + rows[-10:]
    emit(args, res, format_table(shown, ["length", "accuracy"])
         + f"\n\nscore {score:.4f} ({'solved' if res['solved'] else 'not solved'})")


def _evaluate_splits(args, model, cfg, problem, device):
    """``evaluate --splits``: accuracy per ListOps split (monoidlab.training.evaluate)."""
    from monoidlab.training.evaluate import evaluate_splits, splits_for

    names = None if args.splits == "all" else [x.strip() for x in args.splits.split(",")]
    n = args.samples or 512
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
    p.add_argument("--samples", type=int, default=None, help="strings per length"),
    p.add_argument("--device", default="auto"),
    p.add_argument("--json", action="store_true"))


@command("sweep", "run a grid of languages/tasks × models × seeds; CSV + paper-style summary")
def cmd_sweep(args):
    from monoidlab.training.sweep import run_sweep

    res = run_sweep(args.file, ray_address=args.ray, progress=not args.json)
    emit(args, {k: v for k, v in res.items() if k != "summary_md"},
         res["summary_md"] + f"\nwrote {res['out']}/results.csv and summary.md")


cmd_sweep.configure = lambda p: (
    p.add_argument("file", help="sweep TOML (see docs/training.md)"),
    p.add_argument("--ray", default=None, help="'local' or a Ray cluster address"),
    p.add_argument("--json", action="store_true"))


COMMANDS = (cmd_train, cmd_evaluate, cmd_sweep)
