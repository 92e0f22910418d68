"""CLI commands for the main job: ``monoidlab report`` and ``monoidlab demo``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from monoidlab._paths import check_output_dir, child_dir, slugify
from monoidlab.cli._common import UsageError, command, emit, parse_lengths
from monoidlab.geometry import Lengths

__all__ = ["COMMANDS", "DEMO_LANGUAGE", "DEMO_TRAINING"]

DEMO_LANGUAGE = "dyck-2"
# A small MLP-LDRU that is strictly solved on dyck-2 (every scored length 41..500 of every test
# kind, docs/evaluation.md) in about a minute of one core: near-miss training strings (members,
# one-edit near misses, uniform strings), padding as an exact identity (support length 8, so
# lengths 1..40 show every composition the test needs), a cosine learning rate annealed to 0
# over 4000 steps (stopped early at a high learning rate, dyck-2 missed one near miss at a few
# lengths), validated at the end on fresh strings, and one restart from a new seed should that
# validation fail (docs/results.md, "the demo").
# dyck-4 is not solved within the demo's budget on a CPU: not even in 24000 steps (docs/results.md,
# the 21-task table).
DEMO_TRAINING: dict[str, Any] = dict(
    model="mlp-ldru", steps=4000, batch_size=64, lr=3e-3, lr_schedule="cosine",
    model_options={"d": 32, "dropout": 0.0, "padding": "identity"},
    train_lengths=Lengths(1, 40), test_lengths=Lengths(41, 500), test_samples=32,
    sampler="near_miss", eval_every=4000, val_lengths=Lengths(42, 500, 3), val_samples=32,
    early_stop=1, restarts=1, checkpoint_every=500, log_every=50, seed=0)


def _report(args: argparse.Namespace, checkpoint: str | None) -> Path:
    from monoidlab.report import build_report

    path = build_report(args.language, args.out, checkpoint=checkpoint,
                        train_lengths=None if args.train is None else
                        parse_lengths(args.train, "--train"),
                        test_lengths=None if args.test is None else
                        parse_lengths(args.test, "--test"),
                        schedule=args.schedule, probe=not args.no_probe, umap=not args.no_umap,
                        progress=not args.json,
                        other_language=getattr(args, "other_language", False),
                        overwrite=args.overwrite or _own_report(args, checkpoint))
    return path


def _own_report(args: argparse.Namespace, checkpoint: str | None) -> bool:
    """``monoidlab demo`` run again replaces the report it wrote of the same run folder (the
    key file names the checkpoint), and nothing else: a page of another run, or the user's
    file of that name, is refused without ``--overwrite``."""
    import json

    import monoidlab as ml

    if args.command != "demo" or checkpoint is None:
        return False
    stem = slugify(ml.load_language(args.language).name, "language")
    key = Path(args.out) / f"{stem}.json"
    if key.is_symlink() or not key.is_file():
        return False
    try:
        return json.loads(key.read_text(encoding="utf-8")).get("checkpoint") == str(checkpoint)
    except (OSError, ValueError, AttributeError):
        return False


def _emit_report(args: argparse.Namespace, path: Path, checkpoint: str | None) -> None:
    import json

    key = json.loads(path.with_suffix(".json").read_text())
    emit(args, {"report": str(path), "checkpoint": checkpoint, "key_figures": key},
         key_figures_text(key) + f"\nreport written to {path}\n"
         f"open it in a browser: file://{path.resolve()}")


def key_figures_text(key: dict[str, Any]) -> str:
    """The report's key figures as terminal lines (what ``monoidlab demo`` ends with)."""
    from monoidlab.evaluation.scores import SCORES
    from monoidlab.report.summary import probing_headline, sample_text

    out = [f"{key['language']}: syntactic monoid of {key['monoid_size']} elements"]
    m = key.get("model")
    if m:
        out.append(f"model    {m['model']}, padding {m['padding']}, offsets {m['offsets']}, "
                   f"trained on lengths up to {m['max_train_length']}; weights of step "
                   f"{m['steps']}")
        if m.get("weights"):
            out.append(f"         {m['weights']['text']}")
        sup = m["support_length"]
        covered = sup is not None and sup <= m["max_train_length"]
        out.append(f"support  length {sup if sup is not None else 'beyond the search limit'} "
                   f"for this padding: training up to {m['max_train_length']} "
                   + ("shows every composition the test lengths need" if covered else
                      "misses compositions the test lengths need"))
        if m.get("sample_size"):
            out.append(f"sample   {sample_text(m['sample_size'])}")
        out.append(f"verdict  {m['verdict']}")
        out.append(f"         ({m['evaluation_source']}; "
                   + "; ".join(f"{s.label} {m[s.name]:.3f}" for s in SCORES) + ")")
        out.append("         kind            lengths  min    mean   majority  count-only")
        for r in m["kinds"]:
            out.append(f"         {r['kind']:<15} {r['scored_lengths']:>7}  {_f(r['min'])}  "
                       f"{_f(r['mean'])}  {_f(r['majority']):>8}  {_f(r['count_only']):>10}")
        if m.get("certificate"):  # a finite model: the exact verdict over every length
            out.append(f"certify  {m['certificate']['verdict']}")
    lines = probing_headline(key.get("probing"))
    out += [("probing  " if i == 0 else "         ") + (x.split(": ", 1)[1] if i == 0 else x)
            for i, x in enumerate(lines)]
    return "\n".join(out)


def _f(v: Any) -> str:
    return f"{v:.3f}" if isinstance(v, float) else str(v)


def _run_folder(language: str, out: Path) -> Path:
    """The demo model's run folder, ``OUT/<language slug>-<model>`` (a spec path gives its file
    stem: the run folder stays inside ``OUT``)."""
    stem = Path(language).stem if language.endswith(".toml") else language
    # a folder named by monoidlab inside OUT: never a link, never a FIFO among its files
    return child_dir(out, slugify(f"{stem}-{DEMO_TRAINING['model']}"), "--out")


def _train_for_report(language: str, out: Path, progress: bool) -> str:
    """Train (or resume, or reuse) the demo's model in :func:`_run_folder`; the run folder
    (its best validated weights and its results.json) is what the report reads."""
    import json

    from monoidlab.training import RunConfig, train
    from monoidlab.training.run_folder import check_entries

    cfg = RunConfig(language=language, **DEMO_TRAINING)
    run = _run_folder(language, out)
    if run.is_dir():
        check_entries(run, "--out")
    done = run / "results.json"
    try:
        finished = "verdict" in json.loads(done.read_text())
    except (OSError, ValueError):
        finished = False
    if not finished:
        resume = (run / "checkpoint.pt").is_file()
        train(cfg, run, resume=resume, overwrite=not resume, progress=progress)
    return str(run)


def _refuse_report_clobber(args: argparse.Namespace) -> None:
    """Before minutes of training: the report files this command will write, refused when
    they exist (unless ``--overwrite``, or the demo's own report of the same run)."""
    import monoidlab as ml
    from monoidlab._paths import refuse_clobber

    stem = slugify(ml.load_language(args.language).name, "language")
    run = str(_run_folder(args.language, Path(args.out)))
    refuse_clobber([Path(args.out) / f"{stem}{sfx}" for sfx in (".html", ".json")],
                   "report file", args.overwrite or _own_report(args, run))


@command("report", "self-contained HTML report: language, monoid, coverage, min length, model")
def cmd_report(args: argparse.Namespace) -> None:
    if args.checkpoint and args.train_model:
        raise UsageError("give either --checkpoint or --train, not both")
    check_output_dir(args.out)  # before minutes of work
    ckpt = args.checkpoint
    if args.language is None and not ckpt:
        raise UsageError("give a language (a suite name or a TOML spec), or --checkpoint RUN "
                         "to report the run's own language")
    if args.train_model:
        _refuse_report_clobber(args)
        ckpt = _train_for_report(args.language, Path(args.out), not args.json)
    _emit_report(args, _report(args, ckpt), ckpt)


def _common(p: argparse.ArgumentParser) -> argparse.Action:
    p.add_argument("--out", default="reports", help="output folder")
    p.add_argument("--train", default=None,
                   help="training lengths for the coverage analysis (default: the run's with "
                        "--checkpoint, else 1:40)")
    p.add_argument("--test", default=None,
                   help="test lengths (default: the run's with --checkpoint, else 41:500)")
    p.add_argument("--schedule", default="balanced", choices=["balanced", "scan", "chain"])
    p.add_argument("--no-probe", action="store_true", help="skip probing the model")
    p.add_argument("--no-umap", action="store_true", help="skip the UMAP figure (saves ~25 s)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing report of that language in --out")
    return p.add_argument("--json", action="store_true")


cmd_report.configure = lambda p: (
    p.add_argument("language", nargs="?", default=None,
                   help="suite name or TOML spec (with --checkpoint: default the run's own)"),
    p.add_argument("--checkpoint", default=None, help="a trained model (checkpoint.pt or run dir)"),
    p.add_argument("--train-model", "--train-a-model", dest="train_model", action="store_true",
                   help="train the demo's small MLP-LDRU first"),
    p.add_argument("--other-language", action="store_true",
                   help="show a checkpoint trained on another language (the title names both)"),
    _common(p))


@command("demo", f"the main job: train a small model on {DEMO_LANGUAGE} and write its report")
def cmd_demo(args: argparse.Namespace) -> None:
    args.language = args.language or DEMO_LANGUAGE
    check_output_dir(args.out)  # before minutes of work
    _refuse_report_clobber(args)
    ckpt = _train_for_report(args.language, Path(args.out), not args.json)
    _emit_report(args, _report(args, ckpt), ckpt)


cmd_demo.configure = lambda p: (
    p.add_argument("--language", default=None, help=f"default {DEMO_LANGUAGE}"),
    _common(p))


COMMANDS = (cmd_report, cmd_demo)
