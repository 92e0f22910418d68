"""The random-language benchmark (configs/random-languages.toml): does a training recipe carry
to languages the suite does not have?

Usage:
    python bench/bench_random_languages.py --draw            # once: writes the specs + split
    python bench/bench_random_languages.py --info [--write-docs]   # |M|, aperiodic, s per language
    python bench/bench_random_languages.py --recipe base [--half dev] [--workers 2]
    python bench/bench_random_languages.py --recipe base --claims DIR   # one per worktree/core
    python bench/bench_random_languages.py --table [--write-docs]
    python bench/bench_random_languages.py --freeze NAME     # once: the choice rule's recipe

``--draw`` draws the languages with :func:`monoidlab.algebra.random_languages.draw_benchmark` (seeded;
it refuses to overwrite a drawn set: the set is drawn once and committed), writes one TOML spec
per language into ``bench/random-languages/`` with its kind, seed and parameters in the header,
and ``split.toml``: a development half (any recipe may be measured on it) and a held-out half,
stratified by kind. ``--recipe NAME`` trains every language of the half with the named recipe of
the config, each seed of the config, tests it strictly on 41..500 and re-checks a solved run on
the fresh test sets; one ledger line per finished run (``docs/data/random-languages.jsonl``), so
a killed benchmark continues where it stopped. The held-out half is refused unless the recipe
says ``frozen = true``, and once any recipe has scored it, every other recipe is refused there.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "random-languages.toml"
SPECS = ROOT / "bench" / "random-languages"
#: a recipe's keys that say where it stands, not how a run trains
BOOKKEEPING = ("frozen", "basis")
#: the buffer of the config's `offsets` recipe, whose layout the info table's last column is
OFFSET_BUFFER = tomllib.loads(CONFIG.read_text())["recipes"]["offsets"]["offset_buffer"]


# ------------------------------------------------------------------------------ the set
def set_folders(meta: dict) -> tuple[Path, list[Path]]:
    """The config's drawn set (``specs``, default bench/random-languages) and the earlier sets
    whose every language joins the development half (``development_sets``: a second round
    develops on the first round's whole set and holds out half of a fresh one)."""
    main = ROOT / meta.get("specs", "bench/random-languages")
    return main, [ROOT / d for d in meta.get("development_sets", [])]


def spec_path(name: str, meta: dict) -> Path:
    """The spec file of a language of the config's sets (names are unique across rounds: each
    round draws with its own prefix)."""
    main, extra = set_folders(meta)
    for folder in (main, *extra):
        if (folder / f"{name}.toml").is_file():
            return folder / f"{name}.toml"
    raise SystemExit(f"{name}: in none of {[str(f) for f in (main, *extra)]}")


def draw_set(folder: Path, n: int, seed: int, max_monoid: int, force: bool = False,
             prefix: str = "rl", kinds: list[str] | None = None,
             exclude_sets: list[Path] = ()) -> list[str]:
    """Draw ``n`` languages, write their specs and the split; returns the file names.
    ``kinds``: the generators (default the first round's); ``exclude_sets``: earlier sets
    whose languages are not drawn again (the draw moves to the next seed instead)."""
    import numpy as np

    from monoidlab._util import atomic_write_text
    from monoidlab.algebra.random_languages import draw_benchmark
    from monoidlab.algebra.spec import spec_text

    if (folder / "split.toml").exists() and not force:
        raise SystemExit(f"{folder}/split.toml exists: the set is drawn once (--force redraws)")
    import monoidlab as ml
    from monoidlab.algebra.random_languages import KINDS

    exclude = [ml.load_language(str(other / f"{x}.toml")) for other in exclude_sets
               for h in ("dev", "held_out") for x in read_split(other)[h]]
    drawn = draw_benchmark(n, seed, max_monoid=max_monoid, exclude=exclude,
                           kinds=tuple(kinds or KINDS))
    folder.mkdir(parents=True, exist_ok=True)
    names, halves = [], {"dev": [], "held_out": []}
    rng = np.random.default_rng(seed)
    by_kind: dict[str, list[int]] = {}
    for i, d in enumerate(drawn):
        by_kind.setdefault(d.kind, []).append(i)
    half_of = {}
    # within each kind a seeded shuffle, then halves alternate along the kinds one after the
    # other (a kind with an odd count leaves its extra one to the next kind's other half)
    order = [int(i) for idx in by_kind.values() for i in rng.permutation(idx)]
    for j, i in enumerate(order):
        half_of[i] = "dev" if j % 2 == 0 else "held_out"
    for i, d in enumerate(drawn):
        name = f"{prefix}-{i:02d}-{d.automaton.name}"
        auto = d.automaton.replace(name=name, description=d.automaton.description
                                   or f"random {d.kind} language")
        head = (f"{name}: drawn by monoidlab.algebra.random_languages.draw({d.kind!r}, {d.seed}, "
                f"max_monoid={max_monoid}{', size=' + repr((d.params['n_states'], d.params['n_symbols'])) if d.kind == 'dfa' else ''})\n"
                f"kind {d.kind}, seed {d.seed}, parameters {json.dumps(d.params)}\n"
                f"{auto.n_states} states, {auto.n_symbols} symbols, |M| = {d.monoid_size}, "
                f"{'aperiodic' if d.aperiodic else 'not aperiodic'}; half: {half_of[i]}")
        atomic_write_text(folder / f"{name}.toml", spec_text(auto, head))
        names.append(name)
        halves[half_of[i]].append(name)
    extra = "" if not kinds and not exclude_sets else (
        f", kinds={list(kinds or KINDS)}, exclude=<the languages of "
        f"{', '.join(str(x.relative_to(ROOT)) for x in exclude_sets) or 'none'}>")
    split = (f"# The split of {folder.relative_to(ROOT)}: drawn by draw_benchmark({n}, {seed}, "
             f"max_monoid={max_monoid}{extra}).\n# No setting may be tuned on held_out; it is scored "
             "once, by a recipe marked frozen.\n"
             f"seed = {seed}\n"
             + "".join(f"{h} = [\n" + "".join(f'    "{x}",\n' for x in v) + "]\n"
                       for h, v in halves.items()))
    atomic_write_text(folder / "split.toml", split)
    return names


def read_split(folder: Path = SPECS, meta: dict | None = None) -> dict[str, list[str]]:
    """The development and held-out halves of ``folder``'s set; with ``meta``, the config's
    own set and its ``development_sets`` (every language of each joins the development half)."""
    if meta is not None:
        folder, extra = set_folders(meta)
    else:
        extra = []
    if not (folder / "split.toml").is_file():
        raise SystemExit(f"{folder}/split.toml: no drawn set; run --draw first")
    data = tomllib.loads((folder / "split.toml").read_text())
    dev: list[str] = []
    for other in extra:
        first = read_split(other)
        dev += first["dev"] + first["held_out"]
    if not extra:
        return {"dev": data["dev"], "held_out": data["held_out"]}
    # a language of this round equal to one of an earlier set (the same minimal machine) is no
    # fresh language: it is left out of this round's halves (it is a development language)
    seen = {_machine(other / f"{n}.toml") for other in extra for n in read_split(other)["dev"]
            + read_split(other)["held_out"]}
    fresh = {h: [n for n in data[h] if _machine(folder / f"{n}.toml") not in seen]
             for h in ("dev", "held_out")}
    return {"dev": dev + fresh["dev"], "held_out": fresh["held_out"]}


def _machine(path: Path) -> tuple:
    """A minimal machine's identity: alphabet, table, start, outputs and class names (minimal
    machines are numbered canonically, so equal languages give equal tuples)."""
    import numpy as np

    import monoidlab as ml

    a = ml.load_language(str(path))
    return (tuple(a.alphabet), np.asarray(a.delta).tobytes(), np.asarray(a.delta).shape,
            a.start, np.asarray(a.output).tobytes(), tuple(a.classes))


def info_of(name: str, folder: Path = SPECS) -> dict[str, Any]:
    """|M|, Green's summary and the support lengths (learned and identity padding)."""
    import monoidlab as ml
    from monoidlab.geometry import Offsets

    lang = ml.load_language(str(folder / f"{name}.toml"))
    m = lang.monoid()
    s = m.summary()
    out = {"language": name, "states": lang.n_states, "symbols": lang.n_symbols,
           "classes": lang.n_classes, "monoid": m.size, "aperiodic": s["aperiodic"],
           "group": s["group"]}
    for pad in ("learned", "identity"):
        t0 = time.time()
        r = ml.min_training_length(lang, range(41, 501), within="auto", padding=pad)
        out[f"s_{pad}"] = r.support_length
        out[f"s_{pad}_seconds"] = round(time.time() - t0, 2)
    # the layout of the `offsets` recipe: identity padding, each training string at a random
    # offset in a buffer of OFFSET_BUFFER symbols (short strings' compositions at deep levels)
    t0 = time.time()
    r = ml.min_training_length(lang, range(41, 501), within="auto", padding="identity",
                               offsets=Offsets.random(OFFSET_BUFFER))
    out["s_offsets"] = r.support_length
    out["s_offsets_seconds"] = round(time.time() - t0, 2)
    return out


INFO_INTRO = (
    "`python bench/bench_random_languages.py --info --write-docs`: the 36 languages of "
    "`bench/random-languages/` (drawn once by `monoidlab.algebra.random_languages.draw_benchmark(36, "
    "2026, max_monoid=1000)`; each spec names its kind, seed and parameters), split into a "
    "development half and a held-out half (`split.toml`) that no setting is tuned on. s = "
    "`min_training_length(lang, range(41, 501), within=\"auto\", padding=...)`; a language "
    "with s > 40 is uncovered at the training lengths 1..40 of the recipes. The last column is "
    "the layout of the `offsets` recipe (identity padding, each training string at a random "
    f"offset in a buffer of {OFFSET_BUFFER}): offsets place short strings' compositions at "
    "deep tree levels, so a language uncovered at 1..40 without them can be covered with them.")


def info_table(infos: list[dict], split: dict[str, list[str]]) -> str:
    half = {n: h for h, v in split.items() for n in v}
    lines = ["| language | half | states | symbols | \\|M\\| | aperiodic | s learned | s identity "
             f"| s identity, random offsets in {OFFSET_BUFFER} |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in infos:
        lines.append(f"| {r['language']} | {half[r['language']]} | {r['states']} | "
                     f"{r['symbols']} | {r['monoid']} | {'yes' if r['aperiodic'] else 'no'} | "
                     f"{r['s_learned']} | {r['s_identity']} | {r.get('s_offsets', '–')} |")
    return "\n".join(lines)


# ------------------------------------------------------------------------------ one run
def run_one(run: dict, recipe: dict, out: str, fresh_seeds: list[int]) -> dict:
    """Train (or resume) one run, test it strictly, re-check a solved one on fresh sets."""
    import torch

    from monoidlab.errors import ConfigError, MonoidTooLarge
    from monoidlab.evaluation import evaluate_kinds
    from monoidlab.training import load_checkpoint, train
    from monoidlab.training.parse import config_from_dict

    torch.set_num_threads(1)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_run_errors import wrong_strings

    row: dict[str, Any] = {k: run[k] for k in ("id", "language", "half", "recipe", "seed")}
    keys = {k: v for k, v in recipe.items() if k not in BOOKKEEPING}
    keys.update(language=run.get("path") or str(SPECS / f"{run['language']}.toml"),
                seed=run["seed"])
    folder = Path(out) / run["id"]
    t0, c0 = time.time(), time.process_time()
    try:
        cfg = config_from_dict(keys, run["id"])
        has = (folder / "checkpoint.pt").is_file() and not (folder / "results.json").is_file()
        if (folder / "results.json").is_file():
            res = json.loads((folder / "results.json").read_text())
        else:
            res = train(cfg, folder, resume=has, overwrite=not has, progress=False)
    except (ConfigError, MonoidTooLarge) as exc:  # a sampler's tables would not fit
        return {**row, "status": "refused", "message": str(exc)}
    wrong, scored = wrong_strings(res)
    row.update(status="done", solved_own=bool(res["solved"]), verdict=res["verdict"],
               wrong=wrong, scored=scored, train_seconds=res["train_seconds"],
               min_accuracy=res["min_accuracy"],
               baselines={r["kind"]: {"majority": r["majority"], "count_only": r["count_only"]}
                          for r in res["evaluation"]["summary"]})
    fresh = []
    if res["solved"]:
        model, cfg2, problem, _ = load_checkpoint(folder)
        for seed in fresh_seeds:
            t1 = time.time()
            ev = evaluate_kinds(model, problem, cfg2.test_lengths, cfg2.test_samples, seed,
                                cfg2.eval_kinds, cfg2.solved_threshold)
            w = wrong_strings({"evaluation": ev.as_dict()})
            fresh.append({"seed": seed, "wrong": w[0], "scored": w[1], "solved": ev.solved,
                          "seconds": round(time.time() - t1, 1)})
    row["fresh"] = fresh
    row["solved"] = bool(res["solved"]) and all(f["solved"] for f in fresh)
    cert = res.get("certificate")
    if cert is not None:  # a finite model: solved only when proved correct at every length
        row["certified"] = bool(cert.get("correct"))
        row["certificate_text"] = str(cert.get("verdict", ""))[:300]
        row["solved"] = row["solved"] and row["certified"]
    if res.get("covering_fallback"):
        row["covering_fallback"] = res["covering_fallback"]
    row["wall_s"] = round(time.time() - t0, 1)
    row["cpu_s"] = round(time.process_time() - c0, 1)
    return row


# ------------------------------------------------------------------------------ the ledger
# one JSON line per finished run, written atomically: the threshold study's reader and writer
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_threshold import read_ledger, write_ledger  # noqa: E402


def plan(bench: dict, recipe_name: str, half: str, split: dict, ledger: dict) -> list[dict]:
    recipe = bench["recipes"][recipe_name]
    if half == "held_out":
        if not recipe.get("frozen"):
            raise SystemExit(f"recipe {recipe_name!r} is not frozen = true: the held-out half is "
                             "scored once, by the recipe chosen on the development half")
        other = {r["recipe"] for r in ledger.values() if r["half"] == "held_out"} - {recipe_name}
        if other:
            raise SystemExit(f"the held-out half was already scored by {sorted(other)}; it is "
                             "scored once")
    return [{"id": f"{recipe_name}__{name}__s{seed}", "language": name, "half": half,
             "recipe": recipe_name, "seed": seed}
            for name in split[half] for seed in bench["benchmark"]["seeds"]]


def claim(folder: Path, run_id: str, owner: str) -> bool:
    """Claim a run for the benchmark writing ledger ``owner``: True when it is this owner's
    (newly claimed, or claimed by the same ledger before it was killed), False when another
    ledger has it. Lets two processes with their own ledgers (two worktrees, one per core)
    share one recipe's runs without running any twice; the claim is one file made with O_EXCL,
    so two processes reaching a run at the same moment cannot both get it.

    >>> import tempfile; d = Path(tempfile.mkdtemp())
    >>> claim(d, "r1", "/a/ledger.jsonl"), claim(d, "r1", "/a/ledger.jsonl"), claim(d, "r1", "/b")
    (True, True, False)
    """
    import os

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / run_id
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return path.read_text().strip() == owner
    with os.fdopen(fd, "w") as f:
        f.write(owner + "\n")
    return True


def results_table(ledger: dict[str, dict]) -> str:
    """Per recipe and half: solved languages (every seed; fresh sets included), solved runs,
    and the median training time; then one line per run."""
    lines = ["| recipe | half | languages solved (all seeds) | runs solved | median train s |",
             "|---|---|---|---|---|"]
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in ledger.values():
        groups.setdefault((r["recipe"], r["half"]), []).append(r)
    for (recipe, half), rows in sorted(groups.items()):
        done = [r for r in rows if r["status"] == "done"]
        # a refused run (its settings cannot train that language) counts, as not solved
        by_lang: dict[str, list[bool]] = {}
        for r in rows:
            by_lang.setdefault(r["language"], []).append(r["status"] == "done"
                                                         and bool(r["solved"]))
        refused_langs = {r["language"] for r in rows if r["status"] != "done"}
        # a language counts once all its seeds have run (the most any language of the group has)
        n_seeds = max((len(v) for v in by_lang.values()), default=0)
        finished = [v for v in by_lang.values() if len(v) == n_seeds]
        solved = sum(all(v) for v in finished)
        waiting = len(by_lang) - len(finished)
        notes = [f"{waiting} unfinished"] * bool(waiting) + [
            f"{len(refused_langs)} refused"] * bool(refused_langs)
        secs = sorted(r["train_seconds"] for r in done)
        med = secs[len(secs) // 2] if secs else 0
        lines.append(f"| {recipe} | {half} | {solved}/{len(finished)}"
                     + (f" ({', '.join(notes)})" if notes else "") + " | "
                     f"{sum(r['solved'] for r in done)}/{len(rows)} | {med:.0f} |")
    lines += ["", *recipe_matrix(ledger)]
    lines += ["", "| run | solved | wrong / scored | per kind: model min / majority mean / count-only mean "
              "| fresh sets | train s | test s | fresh s |", "|---|---|---|---|---|---|---|---|"]
    for r in sorted(ledger.values(), key=lambda r: r["id"]):
        if r["status"] != "done":
            lines.append(f"| {r['id']} | refused: {r['message'][:80]} | | | | | | |")
            continue
        mins = r["min_accuracy"] if isinstance(r["min_accuracy"], dict) else {}
        base = "; ".join(f"{k} {mins[k]:.3f}/{v['majority']:.2f}/{v['count_only']:.2f}"
                         if k in mins else f"{k} ?/{v['majority']:.2f}/{v['count_only']:.2f}"
                         for k, v in r["baselines"].items())
        fresh = ", ".join(f"{f['wrong']}/{f['scored']}" for f in r["fresh"]) or "-"
        fresh_s = sum(f.get("seconds", 0.0) for f in r["fresh"])
        # the rest of the run's wall time: its own strict test (and the coverage beside it)
        test_s = max(0.0, r.get("wall_s", 0.0) - r["train_seconds"] - fresh_s)
        lines.append(f"| {r['id']} | {'yes' if r['solved'] else 'no'} | {r['wrong']}/"
                     f"{r['scored']} | {base} | {fresh} | {r['train_seconds']:.0f} | "
                     f"{test_s:.0f} | {fresh_s:.0f} |")
    return "\n".join(lines)


def recipe_matrix(ledger: dict[str, dict]) -> list[str]:
    """One row per language, one column per (recipe, half): seeds solved of seeds finished, so
    that what each recipe changed shows language by language."""
    cols = sorted({(r["recipe"], r["half"]) for r in ledger.values()})
    langs = sorted({r["language"] for r in ledger.values()})
    cell: dict[tuple[str, str, str], list[bool]] = {}
    for r in ledger.values():
        ok = r["status"] == "done" and bool(r.get("solved"))
        cell.setdefault((r["language"], r["recipe"], r["half"]), []).append(ok)
    out = ["| language | " + " | ".join(f"{rc} ({h})" for rc, h in cols) + " |",
           "|---|" + "---|" * len(cols)]
    for lang in langs:
        row = [f"{sum(v)}/{len(v)}" if (v := cell.get((lang, rc, h))) else ""
               for rc, h in cols]
        if any(row):
            out.append(f"| {lang} | " + " | ".join(row) + " |")
    return out


def lineage(recipes: dict[str, dict]) -> dict[str, tuple[str, list[str]]]:
    """Which earlier recipe of the config each recipe changes, and the settings it changes:
    the earlier one (in file order) with the fewest differing keys (model options count one by
    one; bookkeeping keys never), so the config's "one setting at a time" is read from the
    recipes themselves, not restated.

    >>> lineage({"base": {"steps": 4, "model_options": {"d": 32}},
    ...          "long": {"steps": 8, "model_options": {"d": 32}},
    ...          "wide": {"steps": 8, "model_options": {"d": 64}, "frozen": True}})
    {'long': ('base', ['steps']), 'wide': ('long', ['model_options.d'])}
    """
    def keys(recipe: dict) -> dict[str, Any]:
        out = {k: v for k, v in recipe.items() if k not in BOOKKEEPING and k != "model_options"}
        out.update({f"model_options.{k}": v for k, v in recipe.get("model_options", {}).items()})
        return out

    names, out = list(recipes), {}
    for i, name in enumerate(names[1:], 1):
        mine = keys(recipes[name])
        diffs = []
        for j, other in enumerate(names[:i]):
            theirs = keys(recipes[other])
            changed = sorted(k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k))
            diffs.append((len(changed), j, other, changed))
        _, _, parent, changed = min(diffs)
        out[name] = (parent, changed)
    return out


def bought(ledger: dict[str, dict], split: dict[str, list[str]], seeds: list[int],
           recipes: dict[str, dict]) -> list[str]:
    """One line per recipe that changes another: what the change bought on the development half
    (languages solved on every seed and runs solved, before and after, and which languages it
    gained and lost), for recipes that have both run every dev language on every seed.

    >>> row = lambda rc, lang, seed, ok: {"recipe": rc, "half": "dev", "language": lang,
    ...     "seed": seed, "status": "done", "solved": ok, "train_seconds": 1.0}
    >>> ledger = {str(i): r for i, r in enumerate([row("a", "x", 0, True), row("a", "y", 0, False),
    ...           row("b", "x", 0, False), row("b", "y", 0, True)])}
    >>> bought(ledger, {"dev": ["x", "y"]}, [0], {"a": {"steps": 1}, "b": {"steps": 2}})
    ['b (a with steps changed): languages solved on every seed 1 -> 1 of 2 (gained y; lost x), runs solved 1 -> 1 of 2']
    """
    want = [(lang, seed) for lang in split["dev"] for seed in seeds]
    ok: dict[str, dict[tuple[str, int], bool]] = {}
    for r in ledger.values():
        if r["half"] == "dev":
            ok.setdefault(r["recipe"], {})[(r["language"], int(r["seed"]))] = (
                r["status"] == "done" and bool(r["solved"]))
    def through(name: str) -> bool:
        return all(k in ok.get(name, {}) for k in want)

    lines = []
    for name, (parent, changed) in lineage(recipes).items():
        if not changed:  # a copy (the frozen recipe): it bought what its original did
            continue
        head = f"{name} ({parent} with {', '.join(changed)} changed)"
        if not (through(name) and through(parent)):
            lines.append(f"{head}: not both through the dev half yet")
            continue
        solved = {rc: {lang for lang in split["dev"] if all(ok[rc][(lang, s)] for s in seeds)}
                  for rc in (parent, name)}
        runs = {rc: sum(ok[rc][k] for k in want) for rc in (parent, name)}
        gained = sorted(solved[name] - solved[parent])
        lost = sorted(solved[parent] - solved[name])
        lines.append(f"{head}: languages solved on every seed {len(solved[parent])} -> "
                     f"{len(solved[name])} of {len(split['dev'])} (gained "
                     f"{', '.join(gained) or 'none'}; lost {', '.join(lost) or 'none'}), runs "
                     f"solved {runs[parent]} -> {runs[name]} of {len(want)}")
    return lines


def choose(ledger: dict[str, dict], split: dict[str, list[str]], seeds: list[int],
           recipes: list[str] | None = None) -> tuple[str | None, list[str]]:
    """The config's choice rule on the development half: once every recipe of ``recipes`` (the
    config's, frozen ones aside: the protocol measures each; default: those in the ledger) has
    run every dev language on every seed, the one with the most languages solved on every
    seed, then more runs solved, then the lower median training time. Returns (the chosen
    recipe, or None while a recipe is not through the dev half; the lines that explain it).

    >>> row = lambda rc, lang, seed, ok, t: {"recipe": rc, "half": "dev", "language": lang,
    ...     "seed": seed, "status": "done", "solved": ok, "train_seconds": t}
    >>> runs = [row("a", "x", 0, True, 10), row("a", "x", 1, True, 10), row("a", "y", 0, True, 10),
    ...         row("a", "y", 1, False, 10), row("b", "x", 0, True, 50), row("b", "x", 1, True, 50),
    ...         row("b", "y", 0, False, 50), row("b", "y", 1, True, 50)]
    >>> ledger = {str(i): r for i, r in enumerate(runs)}
    >>> choose(ledger, {"dev": ["x", "y"]}, [0, 1])[0]  # tie on languages and runs: faster wins
    'a'
    >>> choose(ledger, {"dev": ["x", "y"]}, [0, 1], ["a", "b", "c"])[1][-1]  # c never ran
    'no choice yet: c not through the dev half'
    >>> del ledger["7"]; choose(ledger, {"dev": ["x", "y"]}, [0, 1])[0] is None  # b unfinished
    True
    """
    want = {(lang, seed) for lang in split["dev"] for seed in seeds}
    by_recipe: dict[str, dict[tuple[str, int], dict]] = {}
    for r in ledger.values():
        if r["half"] == "dev":
            by_recipe.setdefault(r["recipe"], {})[(r["language"], int(r["seed"]))] = r
    ranked, lines, unfinished = [], [], []
    for recipe in sorted(set(by_recipe) | set(recipes or [])):
        runs = by_recipe.get(recipe, {})
        missing = want - set(runs)
        if missing:
            unfinished.append(recipe)
            lines.append(f"{recipe}: {len(want) - len(missing)} of {len(want)} dev runs finished")
            continue
        ok = {k: r["status"] == "done" and bool(r["solved"]) for k, r in runs.items()}
        langs = sum(all(ok[(lang, s)] for s in seeds) for lang in split["dev"])
        secs = sorted(r.get("train_seconds", 0.0) for r in runs.values() if r["status"] == "done")
        med = secs[len(secs) // 2] if secs else float("inf")
        ranked.append((langs, sum(ok.values()), -med, recipe))
        lines.append(f"{recipe}: {langs} of {len(split['dev'])} dev languages solved on every "
                     f"seed, {sum(ok.values())} of {len(want)} runs, median train {med:.0f} s")
    if unfinished or not ranked:
        why = (f"no choice yet: {', '.join(unfinished)} not through the dev half"
               if unfinished else "no choice yet: no recipe has finished the dev half")
        return None, lines + [why]
    best = max(ranked)[3]
    return best, lines + [f"chosen by the rule: {best}"]


def held_out_text(ledger: dict[str, dict], split: dict[str, list[str]], seeds: list[int],
                  goal: float = 0.8) -> str:
    """The held-out half's one score (by the frozen recipe): languages solved on every seed
    against the issue's goal, runs, and which languages were refused or ran and failed; empty
    until every held-out run is in the ledger.

    >>> row = lambda lang, seed, status, ok: {"recipe": "v1", "half": "held_out",
    ...     "language": lang, "seed": seed, "status": status, "solved": ok}
    >>> ledger = dict(enumerate([row("x", 0, "done", True), row("y", 0, "done", False),
    ...                          row("z", 0, "refused", None)]))
    >>> held_out_text(ledger, {"held_out": ["x", "y", "z"]}, [0])
    'The held-out half, scored once by v1 (seeds 0): 1 of 3 languages solved on every seed (33 %; goal 80 %: not met), 1 of 3 runs; refused before training: z; ran and failed: y.'
    """
    rows = [r for r in ledger.values() if r["half"] == "held_out"]
    want = {(lang, s) for lang in split["held_out"] for s in seeds}
    got = {(r["language"], int(r["seed"])): r for r in rows}
    if not rows or want - set(got):
        return ""
    ok = {k: got[k]["status"] == "done" and bool(got[k]["solved"]) for k in want}
    solved = [lang for lang in split["held_out"] if all(ok[(lang, s)] for s in seeds)]
    refused = [lang for lang in split["held_out"]
               if any(got[(lang, s)]["status"] != "done" for s in seeds)]
    failed = [lang for lang in split["held_out"] if lang not in solved and lang not in refused]
    n = len(split["held_out"])
    recipe = ", ".join(sorted({r["recipe"] for r in rows}))
    return (f"The held-out half, scored once by {recipe} (seeds "
            f"{', '.join(map(str, seeds))}): {len(solved)} of {n} languages solved on every "
            f"seed ({100 * len(solved) / n:.0f} %; goal {100 * goal:.0f} %: "
            f"{'met' if len(solved) >= goal * n else 'not met'}), {sum(ok.values())} of "
            f"{len(want)} runs; refused before training: {', '.join(refused) or 'none'}; ran "
            f"and failed: {', '.join(failed) or 'none'}.")


def measured(bench: dict) -> list[str]:
    """The recipes the protocol measures on the development half: all but a frozen one."""
    return [n for n, r in bench["recipes"].items() if not r.get("frozen")]


def freeze_text(text: str, chosen: str, name: str, basis: str,
                notes: list[str] | tuple[str, ...] = ()) -> str:
    """The config text with a frozen copy of recipe ``chosen`` appended as ``name``: its key
    lines verbatim, with ``frozen = true`` and ``basis``; ``notes`` (what each setting bought,
    :func:`bought`) become the block's comment, so the config says why from the ledger.

    >>> text = '[recipes.a]\\nsteps = 4\\nlr = 0.1\\n\\n# b\\n[recipes.b]\\nsteps = 8\\n'
    >>> print(freeze_text(text, "a", "final", "chosen").split("\\n\\n")[-1], end="")
    # The recipe chosen on the development half (a copy of 'a'), frozen: the only one that may
    # score the held-out half, once.
    [recipes.final]
    frozen = true
    basis = "chosen"
    steps = 4
    lr = 0.1
    """
    lines = text.splitlines()
    head = f"[recipes.{chosen}]"
    if head not in lines:
        raise SystemExit(f"no [recipes.{chosen}] table in the config")
    i = lines.index(head) + 1
    body = []
    while i < len(lines) and lines[i].strip() and not lines[i].startswith("["):
        body.append(lines[i])
        i += 1
    import textwrap

    why = []
    if notes:
        why = ["# What each setting bought on the development half (each recipe against the "
               "earlier", "# recipe it changes least; languages solved on every seed):"]
        for note in notes:
            why += textwrap.wrap(note, 96, initial_indent="# - ", subsequent_indent="#   ",
                                 break_on_hyphens=False)
    block = [f"# The recipe chosen on the development half (a copy of {chosen!r}), frozen: the "
             "only one that may", "# score the held-out half, once.", *why, f"[recipes.{name}]",
             "frozen = true", f"basis = {json.dumps(basis)}", *body]
    return text.rstrip("\n") + "\n\n" + "\n".join(block) + "\n"


def freeze(config: Path, ledger: dict[str, dict], split: dict[str, list[str]], name: str
           ) -> str:
    """Append the frozen copy of the rule's choice to ``config`` as recipe ``name`` (atomic);
    refuses while there is no choice, when a recipe is frozen already, or when ``name`` is
    taken. Returns the basis written."""
    from monoidlab._util import atomic_write_text

    text = config.read_text()
    bench = tomllib.loads(text)
    frozen = [n for n, r in bench["recipes"].items() if r.get("frozen")]
    if frozen:
        raise SystemExit(f"{config}: recipe {frozen[0]!r} is frozen already; exactly one may be")
    if name in bench["recipes"]:
        raise SystemExit(f"{config}: a recipe {name!r} exists; give the frozen copy a new name")
    chosen, why = choose(ledger, split, bench["benchmark"]["seeds"], measured(bench))
    if chosen is None:
        raise SystemExit("\n".join(why))
    dev = [ln for ln in why if ln.startswith(f"{chosen}:")][0].split(": ", 1)[1]
    others = "; ".join(ln for ln in why if ":" in ln and not ln.startswith(
        (f"{chosen}:", "chosen", "no choice")))
    basis = (f"{chosen!r}, chosen on the development half by the config's rule: {dev}"
             + (f" (the others: {others})" if others else ""))
    notes = bought(ledger, split, bench["benchmark"]["seeds"], bench["recipes"])
    atomic_write_text(config, freeze_text(text, chosen, name, basis, notes))
    return basis


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", default=str(CONFIG))
    p.add_argument("--draw", action="store_true")
    p.add_argument("--force", action="store_true", help="with --draw: redraw the set")
    p.add_argument("--info", action="store_true")
    p.add_argument("--table", action="store_true")
    p.add_argument("--recipe", default=None)
    p.add_argument("--half", default="dev", choices=["dev", "held_out"])
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--write-docs", action="store_true")
    p.add_argument("--claims", metavar="DIR", default=None,
                   help="share the runs with other processes (their own ledgers) through "
                        "claim files in DIR: each run is trained by the first to claim it")
    p.add_argument("--freeze", metavar="NAME", default=None,
                   help="append the frozen copy of the choice rule's recipe as NAME")
    args = p.parse_args(argv)
    if not Path(args.config).is_file():
        p.error(f"--config: no file {args.config}")
    bench = tomllib.loads(Path(args.config).read_text())
    meta = bench["benchmark"]
    folder, _ = set_folders(meta)
    if args.draw:
        names = draw_set(folder, meta["n"], meta["seed"], meta["max_monoid"], args.force,
                         meta.get("prefix", "rl"), meta.get("kinds"),
                         [ROOT / x for x in meta.get("exclude_sets", [])])
        print(f"wrote {len(names)} specs and split.toml to {folder}")
        return 0
    split = read_split(meta=meta)
    ledger_path = ROOT / meta["ledger"]
    ledger = read_ledger(ledger_path)
    if args.freeze:
        basis = freeze(Path(args.config), ledger, split, args.freeze)
        print(f"{args.config}: recipe {args.freeze!r} frozen: {basis}")
        return 0
    if args.info or args.table:
        from monoidlab._util import write_section

        if args.info:
            t0 = time.time()
            infos = [info_of(n, spec_path(n, meta).parent) for h in ("dev", "held_out")
                     for n in split[h]]
            text = (INFO_INTRO + "\n\n" + info_table(infos, split)
                    + f"\n\n({time.time() - t0:.0f} s to compute)")
            section, heading = "random languages", "## The random-language benchmark: the set"
        else:
            _, why = choose(ledger, split, meta["seeds"], measured(bench))
            gains = bought(ledger, split, meta["seeds"], bench["recipes"])
            text = ("The choice rule on the development half (configs/random-languages.toml):\n\n"
                    + "\n".join(f"- {line}" for line in why)
                    + "\n\nWhat each setting bought on the development half (each recipe against "
                    "the earlier recipe it changes least):\n\n"
                    + "\n".join(f"- {line}" for line in gains) + "\n\n"
                    + (f"{held}\n\n" if (held := held_out_text(ledger, split, meta["seeds"]))
                       else "") + results_table(ledger))
            section, heading = "random languages runs", "## The random-language benchmark: runs"
        print(text)
        if args.write_docs:
            write_section(ROOT / "docs" / "results.md", section, heading + "\n\n" + text,
                          title="Results")
        return 0
    if not args.recipe:
        p.error("give --draw, --info, --table or --recipe NAME")
    if args.recipe not in bench["recipes"]:
        p.error(f"unknown recipe {args.recipe!r}; recipes: {sorted(bench['recipes'])}")
    runs = [{**r, "path": str(spec_path(r["language"], meta))}
            for r in plan(bench, args.recipe, args.half, split, ledger) if r["id"] not in ledger]
    recipe = bench["recipes"][args.recipe]
    print(f"{len(runs)} runs to do ({len(ledger)} in the ledger)", flush=True)
    t0 = time.time()

    def record(row: dict) -> None:
        ledger[row["id"]] = row
        write_ledger(ledger_path, ledger)
        print(json.dumps({k: row.get(k) for k in ("id", "status", "solved", "wall_s")}),
              flush=True)

    if args.claims and args.workers != 1:
        p.error("--claims runs one worker per process: start one process per core")
    if args.workers == 1:
        for r in runs:
            if args.claims and not claim(Path(args.claims), r["id"], str(ledger_path)):
                continue
            record(run_one(r, recipe, meta["out"], meta["fresh_seeds"]))
    else:
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(args.workers) as pool:
            futures = [pool.submit(run_one, r, recipe, meta["out"], meta["fresh_seeds"])
                       for r in runs]
            for f in as_completed(futures):
                record(f.result())
    print(f"done: {len(runs)} runs, {time.time() - t0:.0f} s wall")
    return 0


if __name__ == "__main__":
    sys.exit(main())
