"""CLI commands for the main job: ``monoidlab report`` and ``monoidlab demo``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from monoidlab._util import Lengths
from monoidlab.cli._common import UsageError, command, emit, parse_range

__all__ = ["COMMANDS", "DEMO_LANGUAGE", "DEMO_TRAINING"]

DEMO_LANGUAGE = "dyck-4"
# A small MLP-LDRU that trains in about a minute on a 2-core CPU (see docs/benchmarks.md).
DEMO_TRAINING: dict[str, Any] = dict(model="mlp-ldru", steps=600, batch_size=64, lr=2e-3,
                     model_kwargs={"d": 32, "dropout": 0.0}, train_lengths=Lengths(1, 40),
                     test_lengths=Lengths(41, 500), test_samples=32, sampler="balanced",
                     checkpoint_every=200, log_every=50, seed=0)


def _report(args: argparse.Namespace, checkpoint: str | None) -> None:
    from monoidlab.report import build_report

    path = build_report(args.language, args.out, checkpoint=checkpoint,
                        train_lengths=parse_range(args.train, "--train"),
                        test_lengths=parse_range(args.test, "--test"),
                        schedule=args.schedule, probe=not args.no_probe, umap=not args.no_umap,
                        progress=not args.json)
    emit(args, {"report": str(path), "checkpoint": checkpoint},
         f"report written to {path}\nopen it in a browser: file://{path.resolve()}")


def _train_for_report(language: str, out: Path, progress: bool) -> str:
    from monoidlab.training import TrainConfig, train

    cfg = TrainConfig(language=language, **DEMO_TRAINING)
    run = out / f"{language}-{cfg.model}"
    resume = (run / "checkpoint.pt").is_file() and not (run / "results.json").is_file()
    if not (run / "results.json").is_file():
        train(cfg, run, resume=resume, progress=progress, evaluate_at_end=False)
        (run / "results.json").write_text("{}")
    return str(run / "checkpoint.pt")


@command("report", "self-contained HTML report: language, monoid, coverage, min length, model")
def cmd_report(args: argparse.Namespace) -> None:
    if args.checkpoint and args.train_model:
        raise UsageError("give either --checkpoint or --train, not both")
    ckpt = args.checkpoint
    if args.train_model:
        ckpt = _train_for_report(args.language, Path(args.out), not args.json)
    _report(args, ckpt)


def _common(p: argparse.ArgumentParser) -> argparse.Action:
    p.add_argument("--out", default="reports", help="output folder")
    p.add_argument("--train", default="1:40", help="training lengths for the coverage analysis")
    p.add_argument("--test", default="41:500", help="test lengths")
    p.add_argument("--schedule", default="balanced", choices=["balanced", "scan", "chain"])
    p.add_argument("--no-probe", action="store_true", help="skip probing the model")
    p.add_argument("--no-umap", action="store_true", help="skip the UMAP figure (saves ~25 s)")
    return p.add_argument("--json", action="store_true")


cmd_report.configure = lambda p: (
    p.add_argument("language", help="suite name or TOML spec"),
    p.add_argument("--checkpoint", default=None, help="a trained model (checkpoint.pt or run dir)"),
    p.add_argument("--train-model", "--train-a-model", dest="train_model", action="store_true",
                   help="train the demo's small MLP-LDRU first"),
    _common(p))


@command("demo", f"the main job: train a small model on {DEMO_LANGUAGE} and write its report")
def cmd_demo(args: argparse.Namespace) -> None:
    args.language = args.language or DEMO_LANGUAGE
    ckpt = _train_for_report(args.language, Path(args.out), not args.json)
    _report(args, ckpt)


cmd_demo.configure = lambda p: (
    p.add_argument("--language", default=None, help=f"default {DEMO_LANGUAGE}"),
    _common(p))


COMMANDS = (cmd_report, cmd_demo)
