"""CLI commands for training: ``train``, ``evaluate`` and ``sweep``."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from monoidlab.bundled import resolve_config
from monoidlab.cli._common import (
    UsageError,
    check_work,
    command,
    emit,
    format_table,
    parse_lengths,
    positive,
)
from monoidlab.errors import ConfigError, InputError
from monoidlab.evaluation.kinds import KINDS

if TYPE_CHECKING:
    import torch
    from torch import nn

    from monoidlab.training.config import RunConfig
    from monoidlab.training.problems import Problem

__all__ = ["COMMANDS"]


def _config(args: argparse.Namespace, extra: list[str]) -> RunConfig:
    """The run's config, parsed once from every source in order: ``--config FILE`` (or, for
    ``--resume`` without a problem, the run folder's own config), the named options, then the
    ``--KEY=VALUE`` overrides (tables merged option by option)."""
    from pathlib import Path

    from monoidlab.training.parse import config_from_dict, config_keys_of_file, read_overrides

    bad = [x for x in extra if not x.startswith("--") or "=" not in x]
    if bad:
        hint = "--key=value"
        i = extra.index(bad[0])
        if bad[0].startswith("--") and i + 1 < len(extra) and not extra[i + 1].startswith("--"):
            hint += f" (here: {bad[0]}={extra[i + 1]})"  # the space an option would take
        raise UsageError(f"unrecognised argument(s) {bad}; config overrides look like {hint}")
    if args.config:  # a path, or the name of a config the package ships (monoidlab.bundled)
        args.config = str(resolve_config(args.config))
    keys: dict[str, Any] = config_keys_of_file(args.config) if args.config else {}
    source = args.config or "command line"
    saved = False
    if args.resume and args.out and not (args.config or args.language or args.task):
        path = Path(args.out) / "config.json"  # continue the run as it was configured
        if os.path.lexists(path):
            from monoidlab.training.run_folder import read_run_json

            keys, source, saved = read_run_json(path), str(path), True
    if args.language:
        keys.update(language=args.language, task=None)
    if args.task:
        keys.update(task=args.task, language=None)
    if getattr(args, "data", None):  # a text task's folder (task_options.data)
        keys["task_options"] = {**keys.get("task_options", {}), "data": args.data}
    if args.model:
        keys["model"] = args.model
    if args.steps is not None:  # --steps 0 must fail validation, not fall back silently
        keys["steps"] = args.steps
    if args.seed is not None:
        keys["seed"] = args.seed
    for key, value in read_overrides(extra).items():
        if isinstance(value, dict) and isinstance(keys.get(key), dict):
            value = {**keys[key], **value}  # --model_options.d=32 changes one option
        keys[key] = value
    if not saved and not args.config and "recipe" not in keys and keys.get("language"):
        from monoidlab.training.config import language_recipe

        # a user's own language: the model and recipe RunConfig.for_language gives too (the
        # benchmark's frozen choice unless a model is named: MLP-LDRU's frozen recipe, a
        # depth-exact model's own); every key given on the command line wins
        chosen = "model" not in keys  # the user named no model: the benchmark's choice
        if chosen:
            from monoidlab.recipes import default_model

            keys["model"] = default_model()
        model = keys["model"]
        if isinstance(model, str):
            try:
                recipe = language_recipe(model)
            except InputError:  # an unknown model: the config names it with the closest one
                recipe = "default"
            if recipe != "default":
                keys["recipe"] = recipe
        if chosen:
            try:
                return config_from_dict(keys, source, saved=saved)
            except ConfigError as exc:  # say whose model it was: the user named none
                raise ConfigError(f"{exc} (no --model given: `monoidlab train --language` "
                                  f"trains the benchmark's choice, {model}; name another "
                                  "with --model, e.g. --model mlp-ldru)") from None
    return config_from_dict(keys, source, saved=saved)


def _train(args: argparse.Namespace, extra: list[str]) -> None:
    from monoidlab.evaluation import Evaluation, evaluation_text
    from monoidlab.training import train

    cfg = _config(args, extra)
    if args.until is not None and not args.out:
        raise UsageError("--until pauses a run to continue it later: it needs --out")
    positive(args.until, "--until")
    res = train(cfg, args.out, resume=args.resume, overwrite=args.overwrite,
                progress=not args.json, stop_at=args.until)
    text = (f"{res['model']} on {res['problem']}: {res['steps']} steps, "
            f"{res['train_seconds']:.0f} s on {res['device']}")
    if res.get("model_options_sized"):  # sizes left at 0 (auto), set from the language
        given = cfg.model_options.as_dict()
        text += "\nsized from the language: " + ", ".join(
            f"{k} = {v}" for k, v in res["model_options_sized"].items() if given.get(k) != v)
    if res.get("paused"):
        text += f"\npaused before step {res['steps']}: continue with --resume"
    if res.get("training_coverage"):  # what the strings showed, then the verdict (last)
        text += "\n\n" + res["training_coverage"]["text"]
    if "evaluation" in res:
        text += "\n\n" + evaluation_text(Evaluation.from_dict(res["evaluation"]), lengths=False)
    if "refinement" in res:  # rounds on the certificate's counterexamples, and their outcome
        text += "\n" + res["refinement"]["text"]
    if "certificate" in res:  # a finite model's exact verdict, beside the strict one
        text += "\n" + res["certificate"]["verdict"]
    if args.out:
        text += f"\ncheckpoint: {args.out}/checkpoint.pt"
    emit(args, res, text)


@command("train", "train a model on a language or task (checkpoints, metrics, resumable)")
def cmd_train(args: argparse.Namespace) -> None:
    _train(args, args.extra)


def config_keys_help(width: int = 100) -> str:
    """The epilog of ``monoidlab train --help``: every config key as ``--key=DEFAULT``, its type
    and its one-line meaning, by section, generated from :class:`RunConfig` (as
    docs/training.md's table)."""
    import textwrap

    from monoidlab.training.config_docs import config_keys

    rows = config_keys()
    col = max(len(f"--{r['key']}={r['default']}") for r in rows) + 4
    lines = ["config keys: each one can be set as --KEY=VALUE after the options above (shown",
             "with its default; dashes work too: --batch-size=64; one option of a table as",
             "--model_options.d=32; a value is read as a TOML literal, else as text). Order:",
             "--config FILE, then --language/--task/--model/--steps/--seed, then --KEY=VALUE.",
             "--resume --out RUN alone continues the run with its own config."]
    section = None
    for r in rows:
        if r["section"] != section:
            section = r["section"]
            lines += ["", f"{section}:"]
        text = f"({r['type']}) {r['meaning']}".replace("`", "")
        wrapped = textwrap.wrap(text, width - col, break_on_hyphens=False) or [""]
        flag = f"--{r['key']}={r['default']}"
        lines.append(f"  {flag:<{col - 2}}{wrapped[0]}")
        lines += [" " * col + w for w in wrapped[1:]]
    lines += ["", "Tasks: docs/tasks.md; models and their model_options: docs/models.md."]
    return "\n".join(lines)


def _configure_train(p: argparse.ArgumentParser) -> None:
    from monoidlab.models import REGISTRY

    p.formatter_class = argparse.RawDescriptionHelpFormatter  # the epilog is laid out already
    p.epilog = config_keys_help()
    p.add_argument("--language", default=None, help="suite name or TOML spec")
    p.add_argument("--task", default=None, help="a Delétang task name, 'listops', 'addition' or a "
                                                  "text task (ag_news, dbpedia, sst2)")
    p.add_argument("--data", default=None, metavar="DIR",
                   help="text tasks (ag_news, dbpedia, sst2): the folder of the data set's files "
                        "(task_options.data; default data/ag_news_csv, data/dbpedia_csv, "
                        "data/SST-2; docs/text.md)")
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

    from monoidlab.evaluation import evaluation_text
    from monoidlab.training import evaluate_kinds, load_checkpoint, pick_device

    cores = os.cpu_count() or 1
    if not 0 <= args.threads <= cores:
        raise UsageError(f"--threads must lie in 0..{cores} (this machine's cores; 0: torch's "
                         f"default), got {args.threads}")
    if args.threshold is not None and not 0 < args.threshold <= 1:
        raise UsageError(f"--threshold must lie in (0, 1], got {args.threshold}")
    if args.test_seed is not None and not 0 <= args.test_seed < 2**63:
        raise UsageError(f"--test-seed must lie in 0 .. 2^63 - 1, got {args.test_seed}")
    if args.threads:
        torch.set_num_threads(args.threads)
    positive(args.samples, "--samples")
    asked = parse_lengths(args.lengths, "--lengths") if args.lengths else None
    device = pick_device(args.device)
    model, cfg, problem, ckpt = load_checkpoint(args.checkpoint, device)
    if args.splits:
        return _evaluate_splits(args, model, cfg, problem, device)
    lengths = asked or cfg.test_lengths
    kinds = args.kinds.split(",") if args.kinds else cfg.eval_kinds
    n_kinds = len(KINDS) if kinds == "all" else len(kinds)
    check_work(lengths, (args.samples or cfg.test_samples) * n_kinds, "--lengths/--samples")
    threshold = cfg.solved_threshold if args.threshold is None else args.threshold
    seed = cfg.seed if args.test_seed is None else args.test_seed
    from monoidlab.evaluation.table_forward import table_forward

    scorer = table_forward(model, problem.language, problem.n_classes, cfg)  # see the trainer
    ev = evaluate_kinds(scorer, problem, lengths, args.samples or cfg.test_samples, seed,
                        kinds, threshold, device=device, progress=not args.json)
    from monoidlab.evaluation.kinds import check_kinds
    from monoidlab.training.data_coverage import training_coverage
    from monoidlab.training.run_state import partial_reason, verdict_line, weights_of

    weights = weights_of(args.checkpoint, ckpt, cfg)
    run_kinds = check_kinds(cfg.eval_kinds) if problem.language is not None else ev.kinds
    partial = partial_reason(ev, problem.lengths(cfg.test_lengths), cfg.test_samples,
                             run_kinds, cfg.solved_threshold)
    res = {"checkpoint": args.checkpoint, "problem": problem.name, "model": cfg.model,
           "test_seed": seed, "weights": weights, **ev.as_dict()}
    if partial is not None:  # never 'solved': the strict verdict is the whole test set's
        res.update(solved=None, partial=partial, verdict=verdict_line(ev, partial))
    coverage = None
    if not args.no_coverage:  # the strings of the attempt whose weights these are
        from monoidlab.training.attempts import attempt_config, weights_attempt

        attempt = weights_attempt(cfg, weights["step"]) if cfg.restarts else 0
        coverage = training_coverage(attempt_config(cfg, attempt), problem,
                                     attempt=(attempt, cfg.restarts + 1) if cfg.restarts
                                     else None)
    text = weights["text"] + "\n" + _test_set_text(ev, seed) + "\n\n"
    if coverage is not None:  # what the strings showed, then the evaluation (verdict last)
        res["training_coverage"] = coverage
        text += coverage["text"] + "\n\n"
    if not ev.solved and problem.language is not None and not args.no_diagnosis:
        from monoidlab.training.data_coverage import sampled_counts
        from monoidlab.training.diagnosis import diagnose

        counts = sampled_counts(cfg, problem)[0] if coverage is not None else None
        d = diagnose(model, cfg, problem, ev, seed=seed, device=device, sampled=counts)
        res["diagnosis"] = d.as_dict()
        text += d.text() + "\n\n"  # what to change: data, depth or budget; the verdict last
    certificate = _certificate(model, cfg, problem)
    if certificate is not None:  # a finite model: the exact verdict beside the strict one
        res["certificate"] = certificate
    emit(args, res, text + evaluation_text(ev, verdict=verdict_line(ev, partial))
         + ("" if certificate is None else "\n" + certificate["verdict"]))


def _test_set_text(ev: Any, seed: int) -> str:
    """One line: the test set an evaluation scored."""
    from monoidlab.geometry import range_text

    lengths = sorted({int(L) for per in (ev.accuracy, ev.single_class) for k in per
                      for L in per[k]})
    return (f"test set: lengths {range_text(lengths)} ({len(lengths)} lengths), "
            f"{ev.n_per_length} strings per length and kind, kinds {', '.join(ev.kinds)}, "
            f"seed {seed}, threshold {ev.threshold:g}")


def _certificate(model: nn.Module, cfg: RunConfig, problem: Problem) -> dict | None:
    """A finite model's certificate on its language, as JSON (None for other models and
    tasks); a budget it runs past (a table too large) is said, never fatal to the evaluation."""
    from monoidlab.errors import MonoidlabError
    from monoidlab.evaluation.model_certificate import certify_finite_model
    from monoidlab.models.protocols import FiniteModel

    if problem.language is None or not isinstance(model, FiniteModel):
        return None
    try:
        return certify_finite_model(model, problem.language, cfg).to_dict()
    except MonoidlabError as exc:
        return {"subject": "model", "correct": False,
                "verdict": f"not certified: {str(exc).splitlines()[0]}"}


def _evaluate_splits(args: argparse.Namespace, model: nn.Module, cfg: RunConfig,
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
    p.add_argument("--no-diagnosis", action="store_true",
                   help="a failed language run is not diagnosed (budget, data, depth or "
                        "training: monoidlab.training.diagnosis)"),
    p.add_argument("--samples", type=int, default=None,
                   help="strings per length and kind (default: the config's test_samples)"),
    p.add_argument("--kinds", default=None,
                   help=f"comma list of test kinds: {', '.join(KINDS)} (default: the config's "
                        "eval_kinds, all of them)"),
    p.add_argument("--threshold", type=float, default=None,
                   help="solved = accuracy >= THRESHOLD, in (0, 1], at every scored length of "
                        "every kind (default: the config's solved_threshold, 0.99)"),
    p.add_argument("--test-seed", type=int, default=None,
                   help="seed of the test strings (default: the config's seed, the run's own "
                        "test set); another seed draws a fresh set of the same distribution, "
                        "to re-check a model that was chosen by its score on the usual one"),
    p.add_argument("--device", default="auto"),
    p.add_argument("--threads", type=int, default=1,
                   help="torch CPU threads (0: torch's default)"),
    p.add_argument("--no-coverage", action="store_true",
                   help="skip the sampled coverage of the run's training strings by tree level "
                        "(regenerated from its sampler and seeds: its first 20000 steps, and a "
                        "covering run's plan targets over all its steps; seconds, a minute for "
                        "strings at offsets in a deep buffer)"),
    p.add_argument("--json", action="store_true"))


@command("sweep", "run a grid of languages/tasks × models × seeds; CSV + paper-style summary")
def cmd_sweep(args: argparse.Namespace) -> None:
    from monoidlab.training.sweep import run_sweep

    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    res = run_sweep(resolve_config(args.file), ray_address=args.ray, progress=not args.json,
                    workers=args.workers, write_docs=args.write_docs, table_only=args.table)
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
    p.add_argument("--table", action="store_true",
                   help="train nothing: the table of the runs finished so far (its title says "
                        "how many), with --write-docs into results_md too"),
    p.add_argument("--json", action="store_true"))


COMMANDS = (cmd_train, cmd_evaluate, cmd_sweep)
