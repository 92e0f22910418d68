"""The threshold study: the empirical minimum training length L* against the predicted support
length s, with the near_miss and the covering sampler (configs/threshold-study.toml: MLP-LDRU;
configs/threshold-exact-*.toml: the depth-exact models, the certificate of every run in its row).

The runs are listed from the config (languages × maximum training lengths around s × seeds ×
samplers), in its order; each is trained into ``out/<id>`` (resumable), tested strictly, and,
when solved, re-checked on the fresh test sets; one ledger line per finished run. The tables,
read from the ledger alone: per language |M|, s (learned and identity padding), the layout-free
bound, the sample-size estimates, the sampled coverage at each length, L* per sampler and the
lowest length at which any seed is solved; the runs solved below s, listed apart; the rules of s
fitted on the fit languages (``[recommend]``), the certificates, the languages solved at L = 40.

    monoidlab study threshold --config configs/threshold-study.toml [--workers 2]
    monoidlab study threshold --config configs/threshold-study.toml --table [--write-docs]

>>> l_star([{"max_length": 4, "solved": True}, {"max_length": 4, "solved": True},
...         {"max_length": 3, "solved": True}])
4
"""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path
from typing import Any

from monoidlab.studies.runner import (
    Study,
    StudyConfig,
    baselines_of,
    fresh_checks,
    train_or_resume,
    wrong_strings,
)


# ------------------------------------------------------------------------------ the plan
@functools.lru_cache(maxsize=64)
def support_lengths(name: str) -> dict[str, Any]:
    """s for learned and identity padding, the layout-free bound, |M| and the Poisson
    sample-size estimate of the balanced law at 1..s (identity padding)."""
    import numpy as np

    import monoidlab as ml
    from monoidlab.coverage.exact import ec_laws, exact_coverage

    lang = ml.load_language(name)
    out: dict[str, Any] = {"language": name, "monoid": lang.monoid().size}
    for pad in ("learned", "identity"):
        r = ml.min_training_length(lang, range(41, 501), within="auto", padding=pad)
        out[f"s_{pad}"] = r.support_length
    s = out["s_identity"]
    test = exact_coverage(lang, range(41, 501), within="auto", padding="identity",
                          sampler="uniform")
    R = ec_laws(lang.monoid(), 64, indicator=True) > 0
    first = np.array([int(np.flatnonzero(R[1:, e])[0]) + 1 if R[1:, e].any() else 10**6
                      for e in range(lang.monoid().size)])
    xy = np.argwhere(test.support)
    out["layout_free"] = int((first[xy[:, 0]] + first[xy[:, 1]]).max()) if len(xy) else 0
    est = ml.min_training_length(lang, range(41, 501), within="auto", padding="identity",
                                 delta=0.01, sample_ranges=[range(1, s + 1)], sampler="balanced")
    n = next(iter(est.samples_needed.values()))
    out["samples_balanced_at_s"] = None if n == float("inf") else int(n)
    return out


def study_runs(study: dict, infos: dict[str, dict]) -> list[dict]:
    """Every run of the study for the languages of ``infos`` (:func:`support_lengths` by
    language, :func:`support_infos`), in order: language, then seed, then sampler, then
    length."""
    runs = []
    for name, info in infos.items():
        s = info["s_identity"]
        lengths = sorted({s + d for d in study["offsets_from_support"]}
                         | {s * m for m in study["multiples_of_support"]} | set(study["also"]))
        for seed in study["seeds"]:
            for sampler in study["samplers"]:
                for L in (x for x in lengths if x >= 1):
                    runs.append({"id": f"{name}__L{L}__{sampler}__s{seed}", "language": name,
                                 "max_length": L, "sampler": sampler, "seed": seed,
                                 "support": info})
    return runs


def config_of(run: dict, base: dict) -> Any:
    from monoidlab.training.parse import config_from_dict

    keys = {**base, "language": run["language"], "train_lengths": f"1:{run['max_length']}",
            "sampler": run["sampler"], "seed": run["seed"]}
    if run["sampler"] != "covering":
        keys.pop("covering", None)
    return config_from_dict(keys, run["id"])


# ------------------------------------------------------------------------------ one run
def run_one(run: dict, config: StudyConfig) -> dict:
    """Train (or resume) one run, test it, re-check a solved one on fresh sets: its ledger row."""
    import torch

    from monoidlab.errors import ConfigError, MonoidTooLarge

    torch.set_num_threads(1)
    study, base = config.data["study"], config.data["base"]
    row = {k: run[k] for k in ("id", "language", "max_length", "sampler", "seed")}
    row["s"] = run["support"]["s_identity"]
    cfg = config_of(run, base)
    folder = config.out / run["id"]
    t0, c0 = time.time(), time.process_time()
    try:
        res = train_or_resume(cfg, folder)
    except (ConfigError, MonoidTooLarge) as exc:
        # the covering condition beyond the run's budget; a sampler whose tables would not fit
        # (prefix-4-4's near misses: 58 GiB): refused, recorded, and the study goes on
        return {**row, "status": "refused", "message": str(exc)}
    row.update(status="done", solved_own=bool(res["solved"]), verdict=res["verdict"],
               wrong=list(wrong_strings(res)), train_seconds=res["train_seconds"],
               min_accuracy=res["min_accuracy"], baselines=baselines_of(res))
    cov = res.get("training_coverage") or {}
    if cov:
        row["coverage"] = {"uncovered": cov["exact"]["uncovered"],
                           "targets": cov["exact"]["targets"],
                           "max_train_level": cov["exact"]["max_train_level"],
                           "sampled": cov["sampled"]["rows"], "n_strings":
                               cov["sampled"]["n_strings"]}
    cert = res.get("certificate")
    if cert:  # a depth-exact model: the exact verdict over every length, beside the strict one
        row["certificate"] = certificate_row(cert)
    fresh = fresh_checks(folder, study["fresh_seeds"]) if res["solved"] else []
    row["fresh"] = fresh
    row["solved"] = bool(res["solved"]) and all(f["solved"] for f in fresh)
    row["wall_s"] = round(time.time() - t0, 1)
    row["cpu_s"] = round(time.process_time() - c0, 1)
    return row


# ------------------------------------------------------------------------------ the table
def l_star(rows: list[dict], seeds: int = 3) -> int | None:
    """The smallest maximum length at which at least 2 of the seeds are solved (None: none)."""
    by: dict[int, list[bool]] = {}
    for r in rows:
        by.setdefault(r["max_length"], []).append(bool(r.get("solved")))
    ok = [L for L, v in by.items() if sum(v) >= 2]
    return min(ok) if ok else None


def table(ledger: dict[str, dict], study: dict, infos: dict[str, dict]) -> str:
    lines = ["| language | \\|M\\| | s learned / identity | layout-free bound | samples at s "
             "(balanced, δ 0.01) | sampler | runs (solved / done / planned) | L* | lowest "
             "solved | levels shown at s: fewest sampled at the deepest level |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    below = []
    for name in study["languages"]:
        info = infos.get(name)
        if info is None:
            continue
        s = info["s_identity"]
        for sampler in study["samplers"]:
            rows = [r for r in ledger.values() if r["language"] == name
                    and r["sampler"] == sampler]
            done = [r for r in rows if r["status"] == "done"]
            refused = [r for r in rows if r["status"] == "refused"]
            planned = len(study["seeds"]) * len(
                {x for x in {s + d for d in study["offsets_from_support"]}
                 | {s * m for m in study["multiples_of_support"]} | set(study["also"]) if x >= 1})
            solved = [r for r in done if r.get("solved")]
            lowest = min((r["max_length"] for r in solved), default=None)
            at_s = [r for r in done if r["max_length"] == s and r.get("coverage")]
            deep = "–"
            if at_s:
                c = at_s[0]["coverage"]
                per = [x for x in c["sampled"] if x["level"] != "any"]
                if per:
                    d = per[-1]
                    deep = f"level {d['level']}: {d['min_count']} ({d['below_k']} unseen)"
            lstar = l_star(done) if len(done) + len(refused) >= planned else None
            lines.append(
                f"| {name} | {info['monoid']} | {info['s_learned']} / {s} | "
                f"{info['layout_free']} | {info['samples_balanced_at_s'] or '–'} | {sampler} | "
                f"{len(solved)} / {len(done)} / {planned}"
                + (f" ({len(refused)} refused)" if refused else "") + " | "
                + ("–" if lstar is None and len(done) + len(refused) < planned else
                   "refused" if not done else
                   str(lstar) if lstar is not None else "never") + " | "
                + (str(lowest) if lowest is not None else "–") + f" | {deep} |")
            below += [r for r in solved if r["max_length"] < s]
    text = "\n".join(lines) + "\n"
    if below:
        text += ("\nSolved below the predicted support length (each a counterexample to "
                 "*coverage is necessary* for that language):\n\n")
        text += "".join(f"- {r['id']}: s = {r['s']}, own set and fresh sets solved\n"
                        for r in sorted(below, key=lambda r: r["id"]))
    else:
        text += "\nNo run was solved below its predicted support length.\n"
    return text


def summary_text(ledger: dict[str, dict], study: dict) -> str:
    """L* against s per sampler over the finished languages (equal, above by how much, below,
    never), the languages where covering at s is enough (2 of 3 seeds solved at L = s), and
    the study's wall and CPU time: the figures a closing note quotes."""
    finished = {(r["language"], r["sampler"]): r for r in rule_rows(ledger, study)}
    lines = ["| sampler | languages finished | L* = s | L* > s (L* − s) | L* < s | never |",
             "|---|---|---|---|---|---|"]
    enough = []
    for sampler in study["samplers"]:
        eq, above, below, never = [], [], [], []
        for name in study["languages"]:
            r = finished.get((name, sampler))
            if r is None:
                continue
            s, solved = r["s"], r["solved_lengths"]
            lstar = min(solved) if solved else None
            if lstar is None:
                never.append(name)
            elif lstar == s:
                eq.append(name)
            elif lstar > s:
                above.append(f"{name} (+{lstar - s})")
            else:
                below.append(f"{name} (−{s - lstar})")
            if sampler == "covering" and s in solved:
                enough.append(name)
        n = len(eq) + len(above) + len(below) + len(never)
        lines.append(f"| {sampler} | {n} | {len(eq)}: {', '.join(eq) or '–'} | {len(above)}: "
                     f"{', '.join(above) or '–'} | {len(below)}: {', '.join(below) or '–'} | "
                     f"{len(never)}: {', '.join(never) or '–'} |")
    done = [r for r in ledger.values() if r["status"] == "done"]
    wall = sum(r.get("wall_s") or 0 for r in done) / 3600
    cpu = sum(r.get("cpu_s") or 0 for r in done) / 3600
    return ("\n".join(lines) + "\n\nL* = the smallest maximum training length at which 2 of 3 "
            "seeds are solved on every test set; 'never': at no length of the grid (40 "
            "included). Covering at s is enough (2 of 3 seeds solved at L = s with the covering "
            f"sampler) for: {', '.join(enough) or 'no finished language'}.\n\n"
            f"{len(done)} runs finished: {wall:.1f} h wall, {cpu:.1f} h CPU in all (one "
            "torch thread a run, from the ledger's per-run times).\n")


def rule_rows(ledger: dict[str, dict], study: dict) -> list[dict]:
    """One row per finished (language, sampler): s and the lengths solved by 2 of 3 seeds
    (from the ledger alone: every row keeps the s it was planned around)."""
    out = []
    for name in study["languages"]:
        mine = [r for r in ledger.values() if r["language"] == name]
        if not mine:
            continue
        s = mine[0]["s"]
        grid = {x for x in {s + d for d in study["offsets_from_support"]}
                | {s * m for m in study["multiples_of_support"]} | set(study["also"]) if x >= 1}
        for sampler in study["samplers"]:
            rows = [r for r in ledger.values() if r["language"] == name
                    and r["sampler"] == sampler and r["status"] in ("done", "refused")]
            if len(rows) < len(study["seeds"]) * len(grid):
                continue  # unfinished: no verdict on any rule yet
            if not any(r["status"] == "done" for r in rows):
                continue  # every run refused (tables too large): nothing was trained
            by: dict[int, int] = {}
            for r in rows:
                by[r["max_length"]] = by.get(r["max_length"], 0) + bool(r.get("solved"))
            out.append({"language": name, "sampler": sampler, "s": s,
                        "solved_lengths": sorted(L for L, k in by.items() if k >= 2)})
    return out


def level_text(ledger: dict[str, dict]) -> str:
    """Does level-resolved coverage tell solved from unsolved where the level-free support is
    already met (L >= s)? Runs split by whether their sampled per-level coverage left any
    needed (level, EC, EC) unseen."""
    c: dict[tuple[str, bool], list[int]] = {}
    for r in ledger.values():
        if r["status"] != "done" or r["max_length"] < r["s"] or not r.get("coverage"):
            continue
        unseen = sum(x["below_k"] for x in r["coverage"]["sampled"] if x["level"] != "any")
        c.setdefault((r["sampler"], unseen == 0), [0, 0])
        c[(r["sampler"], unseen == 0)][0] += bool(r.get("solved"))
        c[(r["sampler"], unseen == 0)][1] += 1
    lines = ["| sampler | per-level coverage of the run's strings | runs at L >= s | solved |",
             "|---|---|---|---|"]
    for (sampler, full), (k, n) in sorted(c.items()):
        lines.append(f"| {sampler} | {'every needed composition seen at every level' if full else 'some unseen at a level'} "
                     f"| {n} | {k} ({k / n:.0%}) |")
    return "\n".join(lines) + "\n"


def at_baseline_text(ledger: dict[str, dict], study: dict, infos: dict[str, dict],
                     length: int = 40) -> str:
    """Seeds solved at the baseline length, one row per language sorted by s then |M|: whether
    s (or the monoid's size) tells which languages the recipe solves at a fixed length, the
    question the rules of s do not answer. Descriptive, read after the runs (no rule is fitted).

    >>> r = {"id": "p", "language": "p", "sampler": "near_miss", "max_length": 40,
    ...      "status": "done", "solved": True, "s": 2}
    >>> at_baseline_text({"p": r}, {"languages": ["p"], "samplers": ["near_miss"]},
    ...                  {"p": {"s_identity": 2, "monoid": 2}}).splitlines()[-1]
    '| p | 2 | 2 | 1 / 1 |'
    """
    lines = ["| language | s (identity) | \\|M\\| | "
             + " | ".join(f"{sm}: seeds solved at L = {length}" for sm in study["samplers"])
             + " |", "|---|---|---|" + "---|" * len(study["samplers"])]
    rows = []
    for name in study["languages"]:
        if name not in infos:
            continue
        cells = []
        for sampler in study["samplers"]:
            got = [r for r in ledger.values() if (r["language"], r["sampler"], r["max_length"])
                   == (name, sampler, length) and r["status"] in ("done", "refused")]
            done = [r for r in got if r["status"] == "done"]
            cells.append("–" if not got else "refused" if not done else
                         f"{sum(bool(r.get('solved')) for r in done)} / {len(done)}")
        if any(c != "–" for c in cells):
            rows.append((infos[name]["s_identity"], infos[name]["monoid"], name, cells))
    for s, m, name, cells in sorted(rows):
        lines.append(f"| {name} | {s} | {m} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def coverage_by_length_text(ledger: dict[str, dict], study: dict) -> str:
    """Per language, sampler and maximum training length: seeds solved, and the sampled
    coverage of the runs' own strings, level-free and per tree level, of the worst seed (the
    fewest times a needed composition was seen, and in brackets how many needed ones were
    never seen). The data behind the L* table, to check a coverage rule against by eye.

    >>> row = {"id": "p__L4__near_miss__s0", "language": "p", "sampler": "near_miss",
    ...        "max_length": 4, "status": "done", "solved": True, "s": 2, "coverage": {
    ...        "sampled": [{"level": 1, "min_count": 9, "below_k": 0},
    ...                    {"level": "any", "min_count": 9, "below_k": 0}]}}
    >>> coverage_by_length_text({"a": row}, {"languages": ["p"], "samplers": ["near_miss"]}
    ...                         ).splitlines()[-1]
    '| p | near_miss | 4 (s+2) | 1 / 1 | 9 (0) | 1: 9 (0) |'
    """
    lines = ["| language | sampler | L | seeds solved | level-free: fewest seen (unseen) | "
             "per level ℓ: fewest seen (unseen) |", "|---|---|---|---|---|---|"]
    for name in study["languages"]:
        for sampler in study["samplers"]:
            by: dict[int, list[dict]] = {}
            for r in ledger.values():
                if (r["language"], r["sampler"], r["status"]) == (name, sampler, "done"):
                    by.setdefault(r["max_length"], []).append(r)
            for L, rows in sorted(by.items()):
                s = rows[0]["s"]
                rel = "s" if L == s else f"s{L - s:+d}" if abs(L - s) <= 2 else ""
                cells: dict[object, tuple[int, int]] = {}
                for r in rows:
                    for x in (r.get("coverage") or {}).get("sampled", []):
                        got = cells.get(x["level"])
                        cells[x["level"]] = (x["min_count"], x["below_k"]) if got is None else (
                            min(got[0], x["min_count"]), max(got[1], x["below_k"]))
                free = cells.pop("any", None)
                per = " ".join(f"{lv}: {c} ({u})" for lv, (c, u) in sorted(cells.items()))
                lines.append(f"| {name} | {sampler} | {L}{f' ({rel})' if rel else ''} | "
                             f"{sum(bool(r.get('solved')) for r in rows)} / {len(rows)} | "
                             f"{'–' if free is None else f'{free[0]} ({free[1]})'} | "
                             f"{per or '–'} |")
    return "\n".join(lines) + "\n"


def certificate_text(ledger: dict[str, dict], study: dict) -> str:
    """Depth-exact models: per language and sampler, the runs certified correct at every
    length, the lowest length certified, and the counterexamples of the runs at L >= s that
    were not (their lengths and tree levels: what the failures have in common).

    >>> row = {"id": "p__L4__covering__s0", "language": "p", "sampler": "covering",
    ...        "max_length": 4, "status": "done", "solved": False, "s": 2,
    ...        "certificate": {"correct": False, "counterexample": "0110", "length": 4,
    ...                        "level": 2}}
    >>> certificate_text({"a": row}, {"languages": ["p"], "samplers": ["covering"]}
    ...                  ).splitlines()[2]
    "| p | covering | 0 / 1 | – | 1: '0110' (length 4, level 2) at L = 4 |"
    >>> row["certificate"] = {"correct": False, "counterexample": None, "length": None,
    ...                       "level": None, "verdict": "not certified: ... table ..."}
    >>> certificate_text({"a": row}, {"languages": ["p"], "samplers": ["covering"]}
    ...                  ).splitlines()[2]
    "| p | covering | 0 / 1 | – | 1: undecided (refused by the certificate's budget) at L = 4 |"
    """
    lines = ["| language | sampler | certified / done | lowest L certified | not certified at "
             "L >= s: shortest counterexample (length, root level) |", "|---|---|---|---|---|"]
    for name in study["languages"]:
        for sampler in study["samplers"]:
            rows = [r for r in ledger.values() if (r["language"], r["sampler"], r["status"])
                    == (name, sampler, "done") and r.get("certificate")]
            if not rows:
                continue
            ok = [r for r in rows if r["certificate"]["correct"]]
            low = min((r["max_length"] for r in ok), default=None)
            bad = sorted((r for r in rows if not r["certificate"]["correct"]
                          and r["max_length"] >= r["s"]), key=lambda r: r["id"])
            shown = "; ".join(f"{_failure(r['certificate'])} at L = {r['max_length']}"
                              for r in bad[:4]) + (f"; ... {len(bad) - 4} more"
                                                   if len(bad) > 4 else "")
            lines.append(f"| {name} | {sampler} | {len(ok)} / {len(rows)} | "
                         f"{'–' if low is None else low} | "
                         f"{f'{len(bad)}: {shown}' if bad else '–'} |")
    return "\n".join(lines) + "\n"


def _failure(cert: dict) -> str:
    """A refuted run's shortest counterexample, or why there is none (a budget refused it)."""
    # a tree certified as an automaton has no root level
    level = "" if cert.get("level") is None else f", level {cert['level']}"
    if cert.get("counterexample") is not None:
        return f"{cert['counterexample']!r} (length {cert['length']}{level})"
    if cert.get("length") is not None:  # too long to write out
        return f"a string of length {cert['length']}" + (f" ({level[2:]})" if level else "")
    return "undecided (refused by the certificate's budget)"


def rules_text(fitted: dict[str, dict], rec: dict) -> str:
    """The candidate rules' hits per sampler, fit and held-out languages apart, and beside
    them the hits of the baseline, a length that ignores s (the grid's top, 40: never a
    candidate; a rule that cannot beat it says nothing about s, and the tool then recommends
    the baseline's length instead, see monoidlab.coverage.length_rules.recommend)."""
    lines = ["| sampler | rule | hits on the fit languages | hits on the held-out languages "
             "| chosen |", "|---|---|---|---|---|"]
    for sampler, e in fitted.items():
        for rule, c in e["candidates"].items():
            lines.append(f"| {sampler} | L = {rule} | {c['fit_hits']} / {e['fit']['of']} | "
                         f"{c['held_out_hits']} / {e['held_out']['of']} | "
                         f"{'yes' if rule == e['rule'] else ''} |")
        b = e.get("baseline")
        if b is not None:
            lines.append(f"| {sampler} | L = {b['length']} (baseline: no s) | "
                         f"{b['fit_hits']} / {e['fit']['of']} | "
                         f"{b['held_out_hits']} / {e['held_out']['of']} | |")
    held = sorted({x for e in fitted.values() for x in e["held_out"]["languages"]})
    return ("\n".join(lines) + "\n\nFit languages (the rule is chosen on these only; they and "
            "the choice were fixed in the config before the held-out languages had "
            f"finished): {', '.join(rec['fit_languages'])}. Held-out languages finished so "
            f"far: {', '.join(held) or 'none'}. A hit: the study solved the language (2 of 3 "
            "seeds, every test set) at the length the rule names.\n"
            + "".join(_verdict_line(sampler, e) for sampler, e in fitted.items()))


def _verdict_line(sampler: str, e: dict) -> str:
    """What the chosen rule is worth beside the baseline, over every finished language (the
    comparison that decides what monoidlab.coverage.length_rules.recommend names)."""
    n = e["fit"]["of"] + e["held_out"]["of"]
    hits = e["fit"]["hits"] + e["held_out"]["hits"]
    line = f"\nFor the {sampler} sampler the chosen rule L = {e['rule']} hits {hits} of {n}"
    b = e.get("baseline")
    if b is None:
        return line + ".\n"
    b_hits = b["fit_hits"] + b["held_out_hits"]
    if hits >= b_hits:
        return line + (f", at least as many as L = {b['length']} ({b_hits} of {n}): the tool "
                       f"recommends L = {e['rule']}.\n")
    return line + (f", fewer than L = {b['length']}, which ignores s ({b_hits} of {n}): the "
                   f"tool recommends {b['length']} where s <= {b['length']} and nothing above, "
                   "and calls s a lower bound.\n")


# ------------------------------------------------------------------------------ the study
def _read(path: Path, data: dict) -> tuple[str, str]:
    from monoidlab.errors import ConfigError

    study = data.get("study")
    if not isinstance(study, dict) or not isinstance(data.get("base"), dict):
        raise ConfigError(f"{path}: a threshold study needs the tables [study] and [base]")
    missing = [k for k in ("languages", "offsets_from_support", "multiples_of_support", "also",
                           "seeds", "samplers", "fresh_seeds", "ledger", "out") if k not in study]
    if missing:
        raise ConfigError(f"{path}: [study] is missing {', '.join(missing)}")
    return study["ledger"], study["out"]


def support_file(config: StudyConfig) -> Path:
    """Beside the ledger, what the plan computed per language (:func:`support_lengths`): the
    tables read it back instead of recomputing s (seconds per language)."""
    return config.ledger.with_name(config.ledger.stem + ".support.json")


def support_infos(config: StudyConfig, names: list[str] | None = None,
                  write: bool = False) -> dict[str, dict]:
    """:func:`support_lengths` of ``names`` (default: every study language): read from
    :func:`support_file` where it holds the language, else computed (and, with ``write``,
    recorded there).

    The file is written only by the plan, so a table regenerated from a committed ledger uses
    the s its runs were planned with."""
    from monoidlab._util import atomic_write_text
    from monoidlab.errors import ConfigError

    path = support_file(config)
    try:
        known = json.loads(path.read_text()) if path.is_file() else {}
    except (OSError, ValueError) as e:
        raise ConfigError(f"{path}: not a support-length file ({e}); delete it to recompute") from e
    infos = {n: known[n] if n in known else support_lengths(n)
             for n in (names or config.data["study"]["languages"])}
    if write and any(n not in known for n in infos):
        atomic_write_text(path, json.dumps({**known, **infos}, indent=1, sort_keys=True,
                                           ensure_ascii=True) + "\n")
    return infos


def _plan(config: StudyConfig, ledger: dict, languages: str | None = None) -> list[dict]:
    chosen = languages.split(",") if languages else None
    infos = support_infos(config, chosen, write=True)
    return study_runs(config.data["study"], infos)


def _fitted(config: StudyConfig, ledger: dict) -> dict | None:
    from monoidlab.coverage.length_rules import fit_rules

    rec = config.data.get("recommend")
    if not rec:
        return None
    return fit_rules(rule_rows(ledger, config.data["study"]), rec["fit_languages"],
                     rec["rules"], rec.get("baseline"))


def text_of(config: StudyConfig, ledger: dict) -> str:
    """Every table of the study, as one markdown text (its docs section without the heading)."""
    study = config.data["study"]
    infos = support_infos(config)
    text = table(ledger, study, infos)
    text += "\n### L* against s\n\n" + summary_text(ledger, study)
    rec = config.data.get("recommend")
    fitted = _fitted(config, ledger)
    if rec and fitted is not None:
        text += "\n### Which rule names the length to train at\n\n" + rules_text(fitted, rec)
    if any(r.get("certificate") for r in ledger.values()):
        text += ("\n### Certificates (correct at every length)\n\n"
                 + certificate_text(ledger, study))
    text += ("\n### Which languages are solved at L = 40\n\n"
             + at_baseline_text(ledger, study, infos)
             + "\nSorted by s, then |M|; read after the runs, no rule is fitted to it.\n")
    text += ("\n### Level-resolved coverage against the verdict\n\n" + level_text(ledger)
             + "\nEvery run here meets the level-free support (L >= s). The per-level "
             "coverage is sampled from the run's own strings (k = 1).\n"
             + "\n<details><summary>The sampled coverage of every finished length "
             "(worst seed)</summary>\n\n" + coverage_by_length_text(ledger, study)
             + "\n</details>\n")
    return text


def certificate_row(cert: dict[str, Any]) -> dict[str, Any]:
    """A ledger row's certificate from a run's (results.json ``certificate``, or
    ``ModelCertificate.to_dict()``).

    >>> certificate_row({"correct": False, "verdict": "WRONG ...", "certificate": {
    ...     "counterexample": "11", "counterexample_length": 2, "counterexample_level": 1}})
    {'correct': False, 'verdict': 'WRONG ...', 'counterexample': '11', 'length': 2, 'level': 1}
    """
    inner = cert.get("certificate") or {}
    return {"correct": bool(cert.get("correct")), "verdict": cert.get("verdict"),
            "counterexample": inner.get("counterexample"),
            "length": inner.get("counterexample_length"),
            "level": inner.get("counterexample_level")}


def _undecided(row: dict[str, Any]) -> bool:
    c = row.get("certificate") or {}
    return (row.get("status") == "done" and bool(c) and not c["correct"]
            and c.get("counterexample") is None and c.get("length") is None)


def recertify(config: StudyConfig, runs: str = "") -> str:
    """The action ``recertify``: every row whose certificate was undecided (its certifier
    refused the model, e.g. a transformation tree certified as a table past 100,000
    transformations) is certified again from its run folder under ``runs`` (default: the
    study's ``out``) by today's ``monoidlab.certify`` (a transformation tree as an automaton),
    and the row rewritten with the new verdict and ``recertified: true``; its training and
    test numbers are kept. Rows without a folder stay as they are."""
    from monoidlab.probing.certify import certify
    from monoidlab.studies.ledger import read_ledger, write_ledger

    folder = Path(runs) if runs else config.resolve(config.data["study"]["out"])
    ledger = read_ledger(config.ledger)
    todo = sorted(i for i, r in ledger.items() if _undecided(r))
    done, missing = [], []
    for run_id in todo:
        run = folder / run_id
        if not (run / "config.json").is_file():
            missing.append(run_id)
            continue
        ledger[run_id] = {**ledger[run_id], "recertified": True,
                          "certificate": certificate_row(certify(run).to_dict())}
        done.append(run_id)
    if done:
        write_ledger(config.ledger, ledger)
    verdicts = [ledger[i]["certificate"] for i in done]
    proved = sum(c["correct"] for c in verdicts)
    still = sum(_undecided(ledger[i]) for i in done)
    return (f"{config.ledger}: {len(todo)} undecided certificates; {len(done)} certified again "
            f"from {folder} ({proved} proved, {len(done) - proved - still} refuted, {still} "
            f"still undecided); {len(missing)} without a run folder, left as they were")


def _sections(config: StudyConfig, ledger: dict) -> dict[str, str]:
    study = config.data["study"]
    heading = study.get("heading", "The threshold study: L* against the support length")
    return {study.get("section", "threshold study"): f"## {heading}\n\n"
            + text_of(config, ledger)}


def _files(config: StudyConfig, ledger: dict) -> dict[Path, str]:
    """The fitted rules (data/length-rules.json, or the study's own ``rules_file``): what
    ``min_training_length`` recommends per sampler."""
    from monoidlab.coverage.length_rules import RULES_FILE

    fitted = _fitted(config, ledger)
    if fitted is None:
        return {}
    study, base, rec = config.data["study"], config.data["base"], config.data["recommend"]
    # a study of another model family keeps its rules in a file of its own
    path = config.resolve(study["rules_file"]) if "rules_file" in study else RULES_FILE
    return {path: json.dumps(
        {"source": "monoidlab study threshold --table --write-docs",
         "ledger": study["ledger"], "fit_languages": rec["fit_languages"],
         "model": base.get("model", "mlp-ldru"), "model_options": base.get("model_options", {}),
         "samples": base["steps"] * base["batch_size"], "samplers": fitted},
        indent=1, sort_keys=True, ensure_ascii=True) + "\n"}


STUDY = Study(name="threshold", plan=_plan, run=run_one, sections=_sections, read=_read,
              files=_files, default_config="threshold-study.toml", options=("languages",),
              actions={"recertify": recertify},
              summary="L* against the support length s, per sampler and model family")
