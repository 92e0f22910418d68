"""CLI commands for the coverage analysis: ``monoidlab coverage`` and ``monoidlab min-length``."""

from __future__ import annotations

import argparse
from pathlib import Path

from monoidlab._paths import check_output_dir, ensure_dir, refuse_clobber
from monoidlab.cli._common import (
    UsageError,
    check_work,
    command,
    emit,
    format_table,
    parse_lengths,
    positive,
    save_figure,
)
from monoidlab.coverage.exact import EXACT_SAMPLERS
from monoidlab.errors import InputError
from monoidlab.geometry import Offsets, Padding
from monoidlab.strings.samplers import sampler_names
from monoidlab.strings.sampling import DEFAULT_SAMPLER

__all__ = ["COMMANDS"]

WITHIN_HELP = ("sub-language: 'auto' (well-formed expressions where a class 'incomplete' exists, "
               "else every string), 'none', 'all-but:CLASS,..' or a class list")


def _offsets(text: str | None) -> Offsets:
    """``--offsets``: ``random``, ``none``/``0`` or a comma list of ints (the training
    strings' left offsets)."""
    if text is None:
        return Offsets()
    try:
        value = text if text in ("random", "none") else [int(x) for x in text.split(",")]
        return Offsets.parse(value, what="--offsets")
    except (ValueError, InputError):
        raise UsageError(f"--offsets: expected 'random', 'none' or a comma list of "
                         f"non-negative ints, got {text!r}") from None


def _add_padding(p: argparse.ArgumentParser) -> argparse.Action:
    return p.add_argument("--padding", default=Padding.LEARNED.value,
                          choices=[x.value for x in Padding],
                          help="balanced schedule: 'learned' (a node with an all-padding child "
                               "composes (x, ε), as MLP-LDRU's learned padding leaf) or "
                               "'identity' (it passes the other child through: no "
                               "composition)")


def _add_offsets(p: argparse.ArgumentParser) -> argparse.Action:
    return p.add_argument("--offsets", default=None,
                          help="balanced schedule: 'random' or a comma list of left offsets of "
                               "the training strings (test strings: 0)")


@command("coverage", "EC-composition coverage of training vs test lengths (heatmaps + JSON)")
def cmd_coverage(args: argparse.Namespace) -> None:
    import monoidlab as ml
    from monoidlab.coverage.exact import compare, exact_coverage, sampled_coverage
    from monoidlab.strings.sampling import sample
    from monoidlab.sublanguage import resolve_within

    if args.out:
        check_output_dir(args.out)  # before the work, not after
        refuse_clobber([Path(args.out) / n for n in _coverage_files(args.per_level)],
                       "coverage", args.overwrite)
    train_l, test_l = parse_lengths(args.train, "--train"), parse_lengths(args.test, "--test")
    positive(args.n_train, "--n-train")
    positive(args.n_test, "--n-test")
    for lengths, n, opt in ((train_l, args.n_train, "--train"), (test_l, args.n_test, "--test")):
        # exact: one pass per length; sampled: n strings of at most the longest length
        check_work(lengths if args.exact else [lengths.last], 1 if args.exact else n, opt,
                   exact=args.exact)
    lang = ml.load_language(args.language)
    within = resolve_within(lang, args.within)
    offsets = _offsets(args.offsets)
    chosen = args.sampler is not None
    args.sampler = args.sampler or DEFAULT_SAMPLER
    if args.exact:
        if args.sampler not in EXACT_SAMPLERS:
            raise UsageError(f"--exact computes --sampler {' or '.join(EXACT_SAMPLERS)}, not "
                             f"{args.sampler!r} (drop --exact to sample it)")
        train = exact_coverage(lang, train_l, schedule=args.schedule, sampler=args.sampler,
                               within=within, offsets=offsets, padding=args.padding)
        test = exact_coverage(lang, test_l, schedule=args.schedule, sampler=args.sampler,
                              within=within, padding=args.padding)
    else:
        if not offsets.none:
            raise UsageError("--offsets needs --exact (sampled offsets: use the Python API)")
        tr = sample(lang, train_l, args.n_train, sampler=args.sampler, seed=args.seed,
                    within=within)
        te = sample(lang, test_l, args.n_test, sampler=args.sampler, seed=args.seed + 1,
                    within=within)
        train = sampled_coverage(tr, args.schedule, padding=args.padding)
        test = sampled_coverage(te, args.schedule, padding=args.padding)
    gap = compare(train, test)
    summary = gap.summary(first=None)  # the JSON keeps every missing composition
    levels = None
    if args.per_level:
        from monoidlab.coverage.levels import level_coverage

        levels = level_coverage(lang, train_l, test_l, schedule=args.schedule,
                                padding=args.padding, offsets=offsets, within=within)
        summary["per_level"] = levels.summary()
    summary.update(language=lang.name, exact=bool(args.exact), sampler=args.sampler,
                   sampler_from="--sampler" if chosen else "the default",
                   within=within, offsets=args.offsets or "0", padding=args.padding)
    if args.out:
        out = ensure_dir(args.out)
        from monoidlab._util import atomic_write_json
        from monoidlab.viz.coverage import gap_heatmaps, missing_table, shift_bars

        figs = {"heatmaps.png": gap_heatmaps(gap), "missing.png": missing_table(gap),
                "ec_shift.png": shift_bars(gap)}
        if levels is not None:
            from monoidlab.viz.coverage import level_grid

            figs["levels.png"] = level_grid(levels)
        for name, fig in figs.items():
            save_figure(fig, out / name, dpi=110)
        atomic_write_json(out / "coverage.json", summary)
        summary["files"] = sorted(str(out / n) for n in [*figs, "coverage.json"])
    origin = "" if chosen else " (the default of monoidlab, training's too; --sampler to choose)"
    text = (f"{lang.name} ({args.schedule} schedule, {'exact' if args.exact else 'sampled'}): "
            f"train {summary['train_lengths']}, test {summary['test_lengths']}\n"
            f"strings: sampler {args.sampler}{origin}\n"
            f"needed {summary['needed']}, covered {summary['covered']}, "
            f"missing {summary['missing']}")
    if summary["missing"]:
        rows = [{**r, "test_probability": f"{r['test_probability']:.2e}"}  # tiny values
                for r in summary["missing_list"][:20]]
        text += "\n\n" + format_table(rows, ["left_word", "right_word", "test_probability"])
    if levels is not None:
        text += ("\n\nby tree level (exact; training layout vs test lengths at offset 0; "
                 "targets = compositions needed at any level that training shows at this one):"
                 "\n" + format_table(levels.table(), ["level", "needed", "shown",
                                                      "needed_and_shown", "targets"]))
    if args.out:
        text += "\n\nwrote " + ", ".join(summary["files"])
    emit(args, summary, text)


cmd_coverage.configure = lambda p: (
    p.add_argument("language"),
    p.add_argument("--train", default="1:40", help="training lengths A:B (inclusive)"),
    p.add_argument("--test", default="41:500", help="test lengths A:B (inclusive)"),
    p.add_argument("--schedule", default="balanced", choices=["balanced", "scan", "chain"]),
    p.add_argument("--sampler", default=None, choices=list(sampler_names()),
                   help="the string law, exact or sampled (default: monoidlab's, training's "
                        f"too: {DEFAULT_SAMPLER}; --exact computes uniform and balanced)"),
    p.add_argument("--exact", action="store_true", help="exact coverage (no sampling)"),
    p.add_argument("--per-level", action="store_true",
                   help="also the exact coverage by tree level: what the test lengths need and "
                        "the training layout shows at each level (and levels.png with --out)"),
    p.add_argument("--within", default="auto", help=WITHIN_HELP),
    _add_offsets(p),
    _add_padding(p),
    p.add_argument("--n-train", type=int, default=20_000),
    p.add_argument("--n-test", type=int, default=2_000),
    p.add_argument("--seed", type=int, default=0),
    p.add_argument("--out", default=None, help="folder for PNG heatmaps and coverage.json"),
    p.add_argument("--overwrite", action="store_true",
                   help="replace the files of an earlier coverage run in --out"),
    p.add_argument("--json", action="store_true"))


def _coverage_files(per_level: bool) -> list[str]:
    """The files ``coverage --out`` writes, known before the work so that none is replaced
    unasked."""
    return ["heatmaps.png", "missing.png", "ec_shift.png", *(["levels.png"] * per_level),
            "coverage.json"]


@command("min-length", "minimum training length (support) and sample-size estimates per language")
def cmd_min_length(args: argparse.Namespace) -> None:
    import monoidlab as ml
    from monoidlab.coverage.min_length import min_training_length
    from monoidlab.training.problems import recipe_refusal

    if bool(args.language) == bool(args.suite):
        raise UsageError("give one language or --suite NAME")
    if (args.delta is None) != (args.sample_lengths is None):
        raise UsageError("--delta and --sample-lengths go together: the sample-size estimate "
                         "needs both the training lengths and the failure probability")
    if args.delta is not None and not 0 < args.delta < 1:
        raise UsageError(f"--delta is a failure probability in (0, 1), got {args.delta}")
    names = ml.suite(args.suite) if args.suite else [args.language]
    if args.model is None:  # what `monoidlab train --language L` trains
        from monoidlab.recipes import default_model

        args.model = default_model()
    # unset, the layout of the recipe `monoidlab train --language --model M` uses
    from monoidlab.training.config import training_recipe

    layout, advice = training_recipe(args.model)
    given = {"padding": args.padding is not None, "sampler": args.sampler is not None}
    args.padding = args.padding or layout["padding"]
    args.sampler = args.sampler or layout["sampler"] or DEFAULT_SAMPLER
    # the sample-size estimate needs an exact string law: a chosen sampler without one is
    # refused; the recipe's (covering: its planned part shows every composition by
    # construction) leaves the estimate to the default sampler, as the report does, and says so
    size_sampler = args.sampler
    if args.sample_lengths is not None and args.sampler not in EXACT_SAMPLERS:
        if given["sampler"]:
            raise UsageError(f"--sampler {args.sampler}: the sample-size estimate (--delta, "
                             f"--sample-lengths) needs {' or '.join(EXACT_SAMPLERS)} strings; "
                             "the recommended length alone takes any training sampler")
        size_sampler = DEFAULT_SAMPLER
    positive(args.r, "--r")
    positive(args.max_search, "--max-search")
    test = parse_lengths(args.test, "--test")
    check_work(test, 1, "--test")
    if args.max_search is not None:
        check_work([args.max_search], 1, "--max-search")
    train_range = (parse_lengths(args.sample_lengths, "--sample-lengths") if args.sample_lengths
                   else None)
    offsets = _offsets(args.offsets)
    rows, langs = [], []
    for name in names:
        lang = ml.load_language(name)
        langs.append(lang)
        ranges = [train_range] if train_range else []
        res = min_training_length(lang, test, schedule=args.schedule, within=args.within,
                                  offsets=offsets, padding=args.padding, delta=args.delta,
                                  r=args.r, sample_ranges=ranges, max_search=args.max_search,
                                  sampler=size_sampler, model=args.model)
        row = res.as_dict()
        if size_sampler != args.sampler:  # the recommendation is for the training sampler
            from monoidlab.coverage.length_rules import recommend

            rec = recommend(res.support_length, args.sampler, padding=args.padding,
                            schedule=args.schedule, offsets=offsets.mode != "none",
                            model=args.model)
            row.update(recommended_length=rec.length, recommended_samples=rec.samples,
                       recommendation=rec.basis, sampler=args.sampler,
                       sample_size_sampler=size_sampler)
        row["offsets"], row["padding"] = str(offsets), args.padding
        if ranges:
            n = res.samples_needed[next(iter(res.samples_needed))]
            row["samples_needed"] = n if n != float("inf") else None
        rows.append(row)
    refused = {}
    for row, lang in zip(rows, langs, strict=True):
        row["recipe"] = advice["recipe"]
        # the recommended recipe may refuse a language before training: say so here, not
        # only when `monoidlab train` stops
        row["recipe_refusal"] = (recipe_refusal(lang, args.test, model=args.model)
                                 if advice["recipe"] else None)
        if row["recipe_refusal"]:
            refused[row["name"]] = row["recipe_refusal"]
    cols = ["name", "needed", "support_length", "uncovered_at_limit", "recommended_length"]
    if train_range:
        cols.append("samples_needed")
    # the basis is the same for every language of one call unless a language has no support
    bases = sorted({r["recommendation"] for r in rows})
    if len(bases) > 1:  # a suite: one line per basis, not per support length
        import re

        bases = sorted({re.sub(r"\bs = \d+ is", "each language's s is", b) for b in bases})
    unset = [k for k, v in given.items() if not v]
    whose = f" ({' and '.join(unset)}: {layout['from']})" if unset else ""
    for row in rows:
        row["layout_from"] = {k: "given" if v else layout["from"] for k, v in given.items()}
    emit(args, rows if args.suite else rows[0],
         f"schedule {args.schedule}, test {args.test}, training offsets {offsets}, "
         f"padding {args.padding}, recommended length for {args.sampler} strings and "
         f"model {args.model}{whose}"
         + (f", sample sizes for {size_sampler} strings" if train_range else "")
         + (f" ({args.sampler} has no exact law; {size_sampler} is the default sampler)"
            if train_range and size_sampler != args.sampler else "") + "\n"
         + format_table([{**r, "support_length": r["support_length"] or "never",
                          "recommended_length": r["recommended_length"] or "none"}
                         for r in rows], cols)
         + "".join(f"\nrecommendation: {b}" for b in bases)
         + f"\ntraining recipe: {advice['basis']}"
         + _refusal_line(refused, args.suite, args.model))


def _refusal_line(refused: dict[str, str], suite: str | None, model: str = "mlp-ldru") -> str:
    """The line under ``training recipe:`` naming the languages the recipe refuses: one
    language with the trainer's message, a suite by name."""
    if not refused:
        return ""
    if len(refused) == 1 and not suite:
        (name, why), = refused.items()
        return f"\nrecipe 'languages' refuses {name}: {why}"
    why = ("a covering plan larger than its steps show" if model == "mlp-ldru" else
           f"model {model}'s recipe")
    return (f"\nrecipe 'languages' refuses {len(refused)} of these before training ({why}; "
            f"`monoidlab train` says what to change): {', '.join(refused)}")


cmd_min_length.configure = lambda p: (
    p.add_argument("language", nargs="?"),
    p.add_argument("--suite", default=None),
    p.add_argument("--test", default="41:500"),
    p.add_argument("--schedule", default="balanced", choices=["balanced", "scan", "chain"]),
    p.add_argument("--within", default="auto", help=WITHIN_HELP),
    _add_offsets(p),
    p.add_argument("--padding", default=None, choices=[x.value for x in Padding],
                   help="balanced schedule: 'learned' or 'identity' (as for coverage); default "
                        "the padding of the recipe `monoidlab train --language L --model M` "
                        "uses (M: --model)"),
    p.add_argument("--delta", type=float, default=None,
                   help="also estimate samples N for P(all covered) >= 1 - delta (with "
                        "--sample-lengths)"),
    p.add_argument("--sample-lengths", dest="sample_lengths", default=None,
                   help="training lengths A:B of the sample-size estimate (with --delta)"),
    p.add_argument("--sampler", default=None, choices=list(sampler_names(tree=True)),
                   help=f"the training strings (default: the sampler of the recipe `monoidlab "
                        f"train --language L --model M` uses): of the recommended length, and "
                        f"of the "
                        f"sample-size estimate (that one for {' or '.join(EXACT_SAMPLERS)} "
                        "only)"),
    p.add_argument("--r", type=int, default=1, help="each composition seen at least r times"),
    p.add_argument("--max-search", type=int, default=None,
                   help="largest training length tried (default: the largest test length)"),
    p.add_argument("--model", default=None, choices=list(_model_names()),
                   help="the model family of the recommended length and of the recipe whose "
                        "layout is assumed (default: the model `monoidlab train --language` "
                        "trains, the benchmark's frozen choice; a family no threshold study "
                        "measured gets no length)"),
    p.add_argument("--json", action="store_true"))


def _model_names() -> list[str]:
    from monoidlab.models.registry import REGISTRY

    return list(REGISTRY)


COMMANDS = (cmd_coverage, cmd_min_length)
