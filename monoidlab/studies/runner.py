"""One runner for every study: plan → train or resume → row → ledger → tables → docs section.

A study is a config file (``configs/*.toml`` in the repository) and a module of this package
holding what is really its own: which runs its config asks for (``plan``), what one finished
run records (``run``: a module-level function, since it may run in another process), and the
tables it reads back from its ledger (``sections``). Everything else is here, once: reading the
ledger, skipping the runs it holds, handing the others to the sweep's executors (this process,
local worker processes, or Ray), writing each row the moment its run ends, and putting the
tables into the repository's ``docs/results.md`` between the study's markers.

>>> from monoidlab.studies import get_study
>>> get_study("threshold").layout
'sorted'
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monoidlab._util import atomic_write_text, write_section
from monoidlab.errors import ConfigError
from monoidlab.studies.ledger import add_row, read_ledger
from monoidlab.training.executors import run_jobs

__all__ = ["Study", "StudyConfig", "run_study", "study_sections", "write_study_docs",
           "train_or_resume", "wrong_strings", "fresh_checks", "baselines_of",
           "solved_in_section"]


@dataclass(frozen=True)
class StudyConfig:
    """A study's config file, read: its tables (``data``), the repository it belongs to
    (``root``: the folder above ``configs/``, else the file's own folder) and the ledger and
    run folders, resolved against that root."""

    path: Path
    root: Path
    data: dict[str, Any]
    ledger: Path
    out: Path

    def resolve(self, relative: str | os.PathLike) -> Path:
        """A path of the config, relative to the study's repository (absolute ones kept)."""
        return self.root / relative


@dataclass(frozen=True)
class Study:
    """What makes a study itself; see the module docstring. ``plan(config, ledger, **options)``
    lists every run (dicts with a unique ``id``) in order, ``run(run, config)`` trains or
    resumes one and returns its ledger row (``None``: not this process's to record),
    ``sections(config, ledger)`` returns ``{docs section
    name: markdown}``; ``read`` turns the TOML tables into the config's ledger and out paths
    (``(ledger, out)``, relative to the repository); ``files`` returns other files its docs
    carry (``{path: text}``, say fitted rules that the package reads); ``actions`` are the study's other commands
    (``monoidlab study NAME --action draw``), each returning text to print."""

    name: str
    plan: Callable[..., list[dict[str, Any]]]
    run: Callable[[dict[str, Any], StudyConfig], dict[str, Any] | None]
    sections: Callable[[StudyConfig, dict[str, dict[str, Any]]], dict[str, str]]
    read: Callable[[Path, dict[str, Any]], tuple[str, str]]
    files: Callable[[StudyConfig, dict[str, dict[str, Any]]], dict[Path, str]] | None = None
    layout: str = "sorted"
    default_config: str = ""
    options: tuple[str, ...] = ()
    actions: dict[str, Callable[..., str]] = field(default_factory=dict)
    summary: str = ""


def read_config(study: Study, path: str | os.PathLike | None = None) -> StudyConfig:
    """Read a study's config (default: its own under the current repository's ``configs/``; a
    config the package ships, ``monoidlab/configs/NAME.toml``, is found by ``configs/NAME.toml``
    or ``NAME`` too, and its repository is the current folder, as for ``monoidlab sweep``)."""
    import tomllib

    from monoidlab.bundled import configs_dir, resolve_config

    path = Path(path or Path("configs") / study.default_config)
    if not path.is_file():  # configs/NAME.toml or NAME of a bundled sweep file
        try:
            path = resolve_config(path)
        except ConfigError:
            pass  # not bundled either: reported missing below
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such study config (study {study.name!r})") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the study config ({exc})") from None
    path = path.absolute()  # not resolved: configs/ may be a link, the repository is here
    if path.resolve().parent == configs_dir():  # shipped with the package: no repository's own
        root = Path.cwd()
    else:
        root = path.parent.parent if path.parent.name == "configs" else path.parent
    ledger, out = study.read(path, data)
    return StudyConfig(path=path, root=root, data=data, ledger=root / ledger, out=root / out)


def run_study(study: Study, config: StudyConfig, workers: int = 1,
              ray_address: str | None = None, echo: Callable[[str], None] | None = print,
              **options: Any) -> dict[str, dict[str, Any]]:
    """Train every run of the study that its ledger does not hold yet; each row is written to
    the ledger as its run ends. Returns the ledger. ``options`` go to the study's ``plan``."""
    unknown = set(options) - set(study.options)
    if unknown:
        raise ConfigError(f"study {study.name!r}: unknown option(s) {sorted(unknown)}; it takes "
                          f"{', '.join(study.options) or 'none'}")
    ledger = read_ledger(config.ledger)
    runs = [r for r in study.plan(config, ledger, **options) if r["id"] not in ledger]
    say = echo or (lambda _: None)
    say(f"{len(runs)} runs to do ({len(ledger)} in the ledger)")
    t0 = time.time()

    def record(_: int, row: dict[str, Any] | None) -> None:
        if row is None:  # another process's run (a claim it holds): not this ledger's
            return
        add_row(config.ledger, row, study.layout)
        ledger[row["id"]] = row
        say(json.dumps({k: row.get(k) for k in ("id", "status", "solved", "wall_s")},
                       ensure_ascii=False))

    run_jobs(study.run, [(r, config) for r in runs], workers, ray_address, on_result=record)
    say(f"done: {len(runs)} runs, {time.time() - t0:.0f} s wall")
    return ledger


def study_sections(study: Study, config: StudyConfig) -> dict[str, str]:
    """The study's docs sections, from its ledger alone (nothing is trained)."""
    return study.sections(config, read_ledger(config.ledger))


def write_study_docs(study: Study, config: StudyConfig, page: str | os.PathLike | None = None
                     ) -> dict[str, str]:
    """Put the study's sections into ``page`` (default: the repository's docs/results.md) and
    write the other files it generates; returns the sections."""
    ledger = read_ledger(config.ledger)
    sections = study.sections(config, ledger)
    target = Path(page) if page else config.root / "docs" / "results.md"
    for name, text in sections.items():
        write_section(target, name, text, title="Results")
    for path, text in (study.files(config, ledger) if study.files else {}).items():
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, text)
    return sections


# ------------------------------------------------------------------ what every study's run does
def train_or_resume(cfg: Any, folder: Path) -> dict[str, Any]:
    """A run's ``results.json``: read when the run finished, else trained (continued from its
    checkpoint when it has one). A run refused before training raises ``ConfigError`` or
    ``MonoidTooLarge`` as :func:`monoidlab.training.train` does."""
    from monoidlab.training import train

    if (folder / "results.json").is_file():
        return json.loads((folder / "results.json").read_text(encoding="utf-8"))
    resume = (folder / "checkpoint.pt").is_file()
    return train(cfg, folder, resume=resume, overwrite=not resume, progress=False)


def wrong_strings(results: dict[str, Any]) -> tuple[int, int]:
    """(wrong, scored) test strings of a results.json (accuracies are per-length fractions of
    ``n_per_length`` strings).

    >>> wrong_strings({"evaluation": {"n_per_length": 10, "accuracy": {"a": {"41": 0.9}}}})
    (1, 10)
    """
    ev = results["evaluation"]
    n = int(ev["n_per_length"])
    acc = ev["accuracy"]
    wrong = sum(round((1 - a) * n) for kind in acc for a in acc[kind].values())
    return wrong, n * sum(len(acc[kind]) for kind in acc)


def baselines_of(results: dict[str, Any]) -> dict[str, dict[str, float]]:
    """What the trivial models score per test kind on the run's own test strings."""
    return {r["kind"]: {"majority": r["majority"], "count_only": r["count_only"]}
            for r in results["evaluation"]["summary"]}


def fresh_checks(folder: Path, seeds: list[int], timed: bool = False) -> list[dict[str, Any]]:
    """The run's model tested strictly again on fresh test sets (one per seed): wrong and scored
    strings and the verdict per set (``timed``: with the seconds each took)."""
    from monoidlab.evaluation import evaluate_kinds
    from monoidlab.training import load_checkpoint

    model, cfg, problem, _ = load_checkpoint(folder)
    out = []
    for seed in seeds:
        t1 = time.time()
        ev = evaluate_kinds(model, problem, cfg.test_lengths, cfg.test_samples, seed,
                            cfg.eval_kinds, cfg.solved_threshold)
        w = wrong_strings({"evaluation": ev.as_dict()})
        out.append({"seed": seed, "wrong": w[0], "scored": w[1], "solved": ev.solved}
                   | ({"seconds": round(time.time() - t1, 1)} if timed else {}))
    return out


def solved_in_section(markdown: str, section: str) -> dict[str, bool]:
    r"""``{task: solved}`` from the table in the generated section ``section`` of a results page
    (``<!-- begin NAME -->`` ... ``<!-- end NAME -->``): the record another study left, to
    compare tables whose run folders are gone.

    >>> md = "<!-- begin t -->\n| task | model | s | solved |\n|---|---|---|---|\n" \
    ...      "| parity | mlp-ldru | 2 | **yes** |\n| dyck-4 | mlp-ldru | 24 | no |\n<!-- end t -->"
    >>> solved_in_section(md, "t")
    {'parity': True, 'dyck-4': False}
    """
    begin, end = f"<!-- begin {section} -->", f"<!-- end {section} -->"
    if begin not in markdown or end not in markdown:
        raise ConfigError(f"no generated section {section!r} in the results page")
    body = markdown.split(begin, 1)[1].split(end, 1)[0]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in body.splitlines() if line.startswith("| ")]
    head = rows[0] if rows else []
    if "task" not in head or "solved" not in head:
        raise ConfigError(f"section {section!r} has no table with 'task' and 'solved' columns")
    t, s = head.index("task"), head.index("solved")
    return {r[t]: r[s] == "**yes**" for r in rows[1:] if not set(r[0]) <= {"-"}}
