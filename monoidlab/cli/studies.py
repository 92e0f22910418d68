"""``monoidlab study``: run a study, or print / write its tables from its ledger."""

from __future__ import annotations

import argparse

from monoidlab.cli._common import UsageError, command, emit

__all__ = ["COMMANDS"]


def _options(extra: list[str], allowed: tuple[str, ...], name: str) -> dict[str, str]:
    """``--key=value`` or ``--key value`` after the known options: the study's own options."""
    out: dict[str, str] = {}
    i = 0
    while i < len(extra):
        flag = extra[i]
        if not flag.startswith("--"):
            raise UsageError(f"study {name}: unexpected argument {flag!r}")
        key, eq, value = flag[2:].partition("=")
        if not eq:
            if i + 1 >= len(extra) or extra[i + 1].startswith("--"):
                raise UsageError(f"study {name}: --{key} needs a value")
            value, i = extra[i + 1], i + 1
        key = key.replace("-", "_")
        if key not in allowed:
            raise UsageError(f"study {name}: unknown option --{key.replace('_', '-')}; its "
                             f"options: {', '.join('--' + a for a in allowed) or 'none'}")
        out[key] = value
        i += 1
    return out


def _action_options(action: object) -> tuple[str, ...]:
    """The keyword options an action takes (its parameters after the config), e.g. ``name``
    of random-languages' ``freeze``."""
    import inspect

    return tuple(list(inspect.signature(action).parameters)[1:])  # type: ignore[arg-type]


def _study_names() -> list[str]:
    from monoidlab.studies import STUDIES

    return list(STUDIES)


@command("study", "run a study (resumable, one ledger line per run) or write its tables")
def cmd_study(args: argparse.Namespace) -> None:
    from monoidlab.studies import get_study, read_config, run_study, study_sections
    from monoidlab.studies.runner import write_study_docs

    study = get_study(args.name)
    config = read_config(study, args.config)
    if args.action:
        if args.action not in study.actions:
            raise UsageError(f"study {study.name}: unknown action {args.action!r}; its actions: "
                             f"{', '.join(study.actions) or 'none'}")
        action = study.actions[args.action]
        takes = _action_options(action)
        options = _options(args.extra, tuple(k for k in takes if k != "write_docs"),
                           f"{study.name} --action {args.action}")
        if "write_docs" in takes:
            options["write_docs"] = args.write_docs
        text = action(config, **options)
        emit(args, {"study": study.name, "action": args.action, "text": text}, text)
        return
    options = _options(args.extra, study.options, study.name)
    if args.table or args.write_docs:
        sections = (write_study_docs(study, config) if args.write_docs
                    else study_sections(study, config))
        text = "\n".join(sections.values())
        if args.write_docs:
            text += f"\nwrote {', '.join(sections)} into {config.root / 'docs' / 'results.md'}"
        emit(args, {"study": study.name, "sections": sections}, text)
        return
    if args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    ledger = run_study(study, config, workers=args.workers, ray_address=args.ray,
                       echo=None if args.json else print, **options)
    emit(args, {"study": study.name, "ledger": str(config.ledger), "rows": len(ledger)},
         f"{len(ledger)} rows in {config.ledger}")


cmd_study.configure = lambda p: (
    p.add_argument("name", help="the study: " + ", ".join(_study_names())
                   + " (docs/studies.md)"),
    p.add_argument("--config", default=None,
                   help="the study's config (default: configs/<its own>.toml of this folder)"),
    p.add_argument("--workers", type=int, default=1,
                   help="local runs side by side, one torch thread each"),
    p.add_argument("--ray", default=None, help="'local' or a Ray cluster address"),
    p.add_argument("--table", action="store_true",
                   help="train nothing: print the study's tables from its ledger"),
    p.add_argument("--write-docs", action="store_true",
                   help="train nothing: write the tables into docs/results.md (the study's "
                        "sections only) and the files its docs carry"),
    p.add_argument("--action", default=None,
                   help="one of the study's own commands (random-languages: draw, info, "
                        "freeze)"),
    p.add_argument("--json", action="store_true"))
cmd_study.accepts_overrides = True  # unknown --key=value options are the study's own options

COMMANDS = (cmd_study,)
