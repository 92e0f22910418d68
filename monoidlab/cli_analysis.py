"""CLI commands for the coverage analysis: ``monoidlab coverage`` and ``monoidlab min-length``."""

from __future__ import annotations

import json
from pathlib import Path

from monoidlab.cli import CLIError, command, emit, format_table, parse_range


def _within(lang, text: str | None):
    """``--within all-but:incomplete`` or ``--within 0,1,2`` → class names (None: no restriction)."""
    if text is None or text in ("auto", "none"):
        # modular-arithmetic data are well-formed expressions only (DESIGN.md)
        if text == "auto" and "incomplete" in lang.classes:
            return [c for c in lang.classes if c != "incomplete"]
        return None
    if text.startswith("all-but:"):
        drop = set(text.split(":", 1)[1].split(","))
        return [c for c in lang.classes if c not in drop]
    return text.split(",")


def _offsets(text: str | None):
    if text in (None, "0", "none"):
        return None
    if text == "random":
        return "random"
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise CLIError(f"--train-offsets: expected 'random' or a comma list of ints, got {text!r}") from None


@command("coverage", "EC-composition coverage of training vs test lengths (heatmaps + JSON)")
def cmd_coverage(args):
    import monoidlab as ml
    from monoidlab.coverage import compare, exact_coverage, sampled_coverage
    from monoidlab.sampling import sample

    lang = ml.load_language(args.language)
    train_l, test_l = parse_range(args.train, "--train"), parse_range(args.test, "--test")
    within = _within(lang, args.within)
    offsets = _offsets(args.train_offsets)
    if args.exact:
        dist = "balanced" if args.sampler == "balanced" else "uniform"
        if args.sampler not in ("uniform", "balanced"):
            raise CLIError("--exact supports --sampler uniform or balanced")
        train = exact_coverage(lang, train_l, schedule=args.schedule, distribution=dist,
                               within=within, offsets=offsets)
        test = exact_coverage(lang, test_l, schedule=args.schedule, distribution=dist,
                              within=within)
    else:
        if offsets is not None:
            raise CLIError("--train-offsets needs --exact (sampled offsets: use the Python API)")
        tr = sample(lang, train_l, args.n_train, method=args.sampler, seed=args.seed,
                       within=within)
        te = sample(lang, test_l, args.n_test, method=args.sampler, seed=args.seed + 1,
                       within=within)
        train, test = sampled_coverage(tr, args.schedule), sampled_coverage(te, args.schedule)
    gap = compare(train, test)
    summary = gap.summary()
    summary.update(language=lang.name, exact=bool(args.exact), sampler=args.sampler,
                   train_offsets=args.train_offsets or "0")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        from monoidlab.io import atomic_write_text
        from monoidlab.plots import gap_heatmaps, missing_table, shift_bars

        figs = {"heatmaps.png": gap_heatmaps(gap), "missing.png": missing_table(gap),
                "ec_shift.png": shift_bars(gap)}
        for name, fig in figs.items():
            fig.savefig(out / name, dpi=110)
        atomic_write_text(out / "coverage.json", json.dumps(summary, indent=2))
        summary["files"] = sorted(str(out / n) for n in [*figs, "coverage.json"])
    text = (f"{lang.name} ({args.schedule}, {'exact' if args.exact else 'sampled'}): "
            f"train {summary['train_lengths']}, test {summary['test_lengths']}\n"
            f"needed {summary['needed']}, covered {summary['covered']}, "
            f"missing {summary['missing']}")
    if summary["missing"]:
        rows = [{**r, "test_probability": f"{r['test_probability']:.2e}"}  # tiny values
                for r in summary["missing_list"][:20]]
        text += "\n\n" + format_table(rows, ["left_word", "right_word", "test_probability"])
    if args.out:
        text += "\n\nwrote " + ", ".join(summary["files"])
    emit(args, summary, text)


cmd_coverage.configure = lambda p: (
    p.add_argument("language"),
    p.add_argument("--train", default="1:40", help="training lengths A:B (inclusive)"),
    p.add_argument("--test", default="41:500", help="test lengths A:B (inclusive)"),
    p.add_argument("--schedule", default="balanced", choices=["balanced", "scan", "chain"]),
    p.add_argument("--sampler", default="uniform",
                   choices=["uniform", "balanced", "ec_stratified", "ldru"]),
    p.add_argument("--exact", action="store_true", help="exact coverage (no sampling)"),
    p.add_argument("--within", default=None,
                   help="sub-language: 'auto', 'all-but:CLASS,..' or a class list"),
    p.add_argument("--train-offsets", default=None,
                   help="balanced only: 'random' or offsets for training strings (test: 0)"),
    p.add_argument("--n-train", type=int, default=20_000),
    p.add_argument("--n-test", type=int, default=2_000),
    p.add_argument("--seed", type=int, default=0),
    p.add_argument("--out", default=None, help="folder for PNG heatmaps and coverage.json"),
    p.add_argument("--json", action="store_true"))


@command("min-length", "minimum training length (support) and sample-size estimates per language")
def cmd_min_length(args):
    import monoidlab as ml
    from monoidlab.coverage import min_training_length

    if bool(args.language) == bool(args.suite):
        raise CLIError("give one language or --suite NAME")
    names = ml.suite(args.suite) if args.suite else [args.language]
    test = parse_range(args.test, "--test")
    train_range = parse_range(args.train, "--train") if args.train else None
    rows = []
    for name in names:
        lang = ml.load_language(name)
        within = _within(lang, args.within)
        offsets = _offsets(args.train_offsets)
        ranges = [train_range] if (train_range and args.delta is not None) else []
        res = min_training_length(lang, test, schedule=args.schedule, within=within,
                                  train_offsets=offsets, delta=args.delta, r=args.r,
                                  sample_ranges=ranges, max_search=args.max_search)
        row = res.as_dict()
        row["train_offsets"] = args.train_offsets or "0"
        if ranges:
            n = res.samples_needed[next(iter(res.samples_needed))]
            row["samples_needed"] = n if n != float("inf") else None
        rows.append(row)
    cols = ["name", "needed", "support_length", "uncovered_at_limit"]
    if args.delta is not None and train_range:
        cols.append("samples_needed")
    emit(args, rows if args.suite else rows[0],
         f"schedule {args.schedule}, test {args.test}, train offsets {args.train_offsets or 0}\n"
         + format_table([{**r, "support_length": r["support_length"] or "never"} for r in rows], cols))


cmd_min_length.configure = lambda p: (
    p.add_argument("language", nargs="?"),
    p.add_argument("--suite", default=None),
    p.add_argument("--test", default="41:500"),
    p.add_argument("--schedule", default="balanced", choices=["balanced", "scan", "chain"]),
    p.add_argument("--within", default="auto",
                   help="sub-language ('auto': well-formed expressions where a class "
                        "'incomplete' exists; 'none' for all strings)"),
    p.add_argument("--train-offsets", default=None, help="'random' or a comma list (balanced)"),
    p.add_argument("--delta", type=float, default=None,
                   help="also estimate samples N for P(all covered) >= 1 - delta"),
    p.add_argument("--train", default=None, help="training range for the sample-size estimate"),
    p.add_argument("--r", type=int, default=1, help="each composition seen at least r times"),
    p.add_argument("--max-search", type=int, default=None,
                   help="largest training length tried (default: the largest test length)"),
    p.add_argument("--json", action="store_true"))
