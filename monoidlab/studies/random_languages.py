"""The random-language benchmark: does a training recipe carry to languages the suite does not
have? (configs/random-languages.toml, the first round; configs/random-languages-2.toml, the
second.)

    monoidlab study random-languages --config C --action draw   # once: the specs and the split
    monoidlab study random-languages --config C --action info [--write-docs]  # |M|, s
    monoidlab study random-languages --config C --recipe base [--half dev] [--workers 2]
    monoidlab study random-languages --config C --recipe base --claims DIR  # one per core
    monoidlab study random-languages --config C --table [--write-docs]
    monoidlab study random-languages --config C --action freeze --name NAME  # once

The action ``draw`` draws the languages with :func:`monoidlab.algebra.random_languages.
draw_benchmark` (seeded; it refuses to overwrite a drawn set: the set is drawn once and
committed), writes one TOML spec per language with its kind, seed and parameters in the header,
and ``split.toml``: a development half (any recipe may be measured on it) and a held-out half,
stratified by kind. A run of recipe NAME trains every language of the half with that recipe of
the config, each seed of the config, tests it strictly on 41..500 and re-checks a solved run on
the fresh test sets; one ledger line per finished run, so a killed benchmark continues where it
stopped. The held-out half is refused unless the recipe says ``frozen = true``, and once any
recipe has scored it, every other recipe is refused there.
"""

from __future__ import annotations

import json
import sys
import time
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from monoidlab.errors import ConfigError
from monoidlab.studies._recipe_choice import (  # noqa: F401  (the study's names, kept here)
    BOOKKEEPING,
    bought,
    cannot_win,
    choose,
    freeze,
    freeze_text,
    held_out_text,
    lineage,
    measured,
)
from monoidlab.studies.runner import (
    Study,
    StudyConfig,
    baselines_of,
    fresh_checks,
    train_or_resume,
    wrong_strings,
)


def offset_buffer_of(data: dict) -> int | None:
    """The buffer of the config's ``offsets`` recipe (the info table's last column), if any."""
    return data.get("recipes", {}).get("offsets", {}).get("offset_buffer")


# ------------------------------------------------------------------------------ the set
def set_folders(meta: dict, root: Path) -> tuple[Path, list[Path]]:
    """The config's drawn set (``specs``, default bench/random-languages) and the earlier sets
    whose every language joins the development half (``development_sets``: a second round
    develops on the first round's whole set and holds out half of a fresh one), in the
    repository ``root``."""
    main = root / meta.get("specs", "bench/random-languages")
    return main, [root / d for d in meta.get("development_sets", [])]


def spec_path(name: str, meta: dict, root: Path) -> Path:
    """The spec file of a language of the config's sets (names are unique across rounds: each
    round draws with its own prefix)."""
    main, extra = set_folders(meta, root)
    for folder in (main, *extra):
        if (folder / f"{name}.toml").is_file():
            return folder / f"{name}.toml"
    raise ConfigError(f"{name}: in none of {[str(f) for f in (main, *extra)]}")


def draw_set(folder: Path, n: int, seed: int, max_monoid: int, force: bool = False,
             prefix: str = "rl", kinds: list[str] | None = None,
             exclude_sets: Sequence[Path] = (), root: Path | None = None) -> list[str]:
    """Draw ``n`` languages, write their specs and the split; returns the file names.
    ``kinds``: the generators (default the first round's); ``exclude_sets``: earlier sets
    whose languages are not drawn again (the draw moves to the next seed instead); ``root``:
    the repository the split file names its folders against (default: the folder's parent)."""
    import numpy as np

    from monoidlab._util import atomic_write_text
    from monoidlab.algebra.random_languages import draw_benchmark
    from monoidlab.algebra.spec import spec_text

    if (folder / "split.toml").exists() and not force:
        raise ConfigError(f"{folder}/split.toml exists: the set is drawn once (force=true "
                          "redraws)")
    import monoidlab as ml
    from monoidlab.algebra.random_languages import KINDS

    root = folder.parent.parent if root is None else root

    exclude = [ml.load_language(str(other / f"{x}.toml")) for other in exclude_sets
               for h in ("dev", "held_out") for x in read_split(other)[h]]
    drawn = draw_benchmark(n, seed, max_monoid=max_monoid, exclude=exclude,
                           kinds=tuple(kinds or KINDS))
    folder.mkdir(parents=True, exist_ok=True)
    names: list[str] = []
    halves: dict[str, list[str]] = {"dev": [], "held_out": []}
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
                f"kind {d.kind}, seed {d.seed}, parameters {json.dumps(d.params, ensure_ascii=True)}\n"
                f"{auto.n_states} states, {auto.n_symbols} symbols, |M| = {d.monoid_size}, "
                f"{'aperiodic' if d.aperiodic else 'not aperiodic'}; half: {half_of[i]}")
        atomic_write_text(folder / f"{name}.toml", spec_text(auto, head))
        names.append(name)
        halves[half_of[i]].append(name)
    extra = "" if not kinds and not exclude_sets else (
        f", kinds={list(kinds or KINDS)}, exclude=<the languages of "
        f"{', '.join(str(x.relative_to(root)) for x in exclude_sets) or 'none'}>")
    split = (f"# The split of {folder.relative_to(root)}: drawn by draw_benchmark({n}, {seed}, "
             f"max_monoid={max_monoid}{extra}).\n# No setting may be tuned on held_out; it is scored "
             "once, by a recipe marked frozen.\n"
             f"seed = {seed}\n"
             + "".join(f"{h} = [\n" + "".join(f'    "{x}",\n' for x in v) + "]\n"
                       for h, v in halves.items()))
    atomic_write_text(folder / "split.toml", split)
    return names


def read_split(folder: Path, meta: dict | None = None, root: Path | None = None
               ) -> dict[str, list[str]]:
    """The development and held-out halves of ``folder``'s set; with ``meta`` (and the
    repository ``root``), the config's own set and its ``development_sets`` (every language of
    each joins the development half)."""
    extra: list[Path] = []
    if meta is not None:
        folder, extra = set_folders(meta, root or Path("."))
    if not (folder / "split.toml").is_file():
        raise ConfigError(f"{folder}/split.toml: no drawn set; run the action 'draw' first")
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


def info_of(name: str, folder: Path, offset_buffer: int | None) -> dict[str, Any]:
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
    if offset_buffer is None:
        return out
    # the layout of the `offsets` recipe: identity padding, each training string at a random
    # offset in a buffer of offset_buffer symbols (short strings' compositions at deep levels)
    t0 = time.time()
    r = ml.min_training_length(lang, range(41, 501), within="auto", padding="identity",
                               offsets=Offsets.random(offset_buffer))
    out["s_offsets"] = r.support_length
    out["s_offsets_seconds"] = round(time.time() - t0, 2)
    return out


def info_table(infos: list[dict], split: dict[str, list[str]], offset_buffer: int | None
               ) -> str:
    """|M|, aperiodicity and the support lengths per language (the last column: the layout of
    the config's ``offsets`` recipe, where it has one)."""
    half = {n: h for h, v in split.items() for n in v}
    last = f" s identity, random offsets in {offset_buffer} |" if offset_buffer else ""
    lines = ["| language | half | states | symbols | \\|M\\| | aperiodic | s learned | s identity |"
             + last, "|---|---|---|---|---|---|---|---|" + "---|" * bool(offset_buffer)]
    for r in infos:
        lines.append(f"| {r['language']} | {half[r['language']]} | {r['states']} | "
                     f"{r['symbols']} | {r['monoid']} | {'yes' if r['aperiodic'] else 'no'} | "
                     f"{r['s_learned']} | {r['s_identity']} |"
                     + (f" {r.get('s_offsets', '–')} |" if offset_buffer else ""))
    return "\n".join(lines)


# ------------------------------------------------------------------------------ one run
def run_one(run: dict, config: StudyConfig) -> dict | None:
    """Train (or resume) one run, test it strictly, re-check a solved one on fresh sets; None
    when the run is another process's (``claims``)."""
    import torch

    from monoidlab.errors import MonoidTooLarge
    from monoidlab.training.parse import config_from_dict

    torch.set_num_threads(1)
    meta = config.data["benchmark"]
    if run.get("claims") and not claim(Path(run["claims"]), run["id"], str(config.ledger)):
        return None
    if run["half"] == "dev":  # a recipe the choice rule can no longer pick: its runs are moot
        from monoidlab.studies.ledger import read_ledger

        split = read_split(Path(), meta, config.root)
        why = cannot_win(read_ledger(config.ledger), split, meta["seeds"], run["recipe"])
        if why:
            print(f"{run['id']}: not run ({why})", file=sys.stderr, flush=True)
            return None
    recipe = config.data["recipes"][run["recipe"]]
    out, fresh_seeds = config.out, meta["fresh_seeds"]

    row: dict[str, Any] = {k: run[k] for k in ("id", "language", "half", "recipe", "seed")}
    keys = {k: v for k, v in recipe.items() if k not in BOOKKEEPING}
    keys.update(language=run["path"], seed=run["seed"])
    folder = Path(out) / run["id"]
    t0, c0 = time.time(), time.process_time()
    try:
        cfg = config_from_dict(keys, run["id"])
        res = train_or_resume(cfg, folder)
    except (ConfigError, MonoidTooLarge) as exc:  # a sampler's tables would not fit
        return {**row, "status": "refused", "message": str(exc)}
    wrong, scored = wrong_strings(res)
    row.update(status="done", solved_own=bool(res["solved"]), verdict=res["verdict"],
               wrong=wrong, scored=scored, train_seconds=res["train_seconds"],
               min_accuracy=res["min_accuracy"], baselines=baselines_of(res))
    fresh = fresh_checks(folder, fresh_seeds, timed=True) if res["solved"] else []
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


# ------------------------------------------------------------------------------ the plan
def plan(bench: dict, recipe_name: str, half: str, split: dict, ledger: dict) -> list[dict]:
    recipe = bench["recipes"][recipe_name]
    if half == "held_out":
        if not recipe.get("frozen"):
            raise ConfigError(f"recipe {recipe_name!r} is not frozen = true: the held-out half is "
                             "scored once, by the recipe chosen on the development half")
        other = {r["recipe"] for r in ledger.values() if r["half"] == "held_out"} - {recipe_name}
        if other:
            raise ConfigError(f"the held-out half was already scored by {sorted(other)}; it is "
                             "scored once")
    return [{"id": f"{recipe_name}__{name}__s{seed}", "language": name, "half": half,
             "recipe": recipe_name, "seed": seed}
            for name in split[half] for seed in bench["benchmark"]["seeds"]]


def claim(folder: Path, run_id: str, owner: str) -> bool:
    """Claim a run for the benchmark writing ledger ``owner``: True when this process may run
    it (newly claimed; or claimed by the same ledger in a process that has ended, i.e. killed
    before the run's row was written), False when another ledger has it or another live
    process of this ledger on this machine does. Lets several processes share one recipe's runs
    without running any twice, with their own ledgers (two worktrees) or one (two processes in
    one worktree: without the process check both would take the same run and write one run
    folder at once). The claim is one file made with O_EXCL, so two processes reaching a run at
    the same moment cannot both get it; it holds the ledger, the process id and the host.

    >>> import tempfile; d = Path(tempfile.mkdtemp())
    >>> claim(d, "r1", "/a/ledger.jsonl"), claim(d, "r1", "/a/ledger.jsonl"), claim(d, "r1", "/b")
    (True, True, False)
    """
    import os
    import socket

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / run_id
    me = f"{os.getpid()} {socket.gethostname()}"
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        lines = path.read_text().splitlines()
        if not lines or lines[0].strip() != owner:
            return False
        holder = lines[1].split() if len(lines) > 1 else []
        if len(holder) == 2 and f"{holder[0]} {holder[1]}" != me:
            if holder[1] != socket.gethostname() or _alive(int(holder[0])):
                return False  # another live process of this ledger (or one we cannot check)
        tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
        tmp.write_text(f"{owner}\n{me}\n")
        os.replace(tmp, path)  # taken over from an ended process of this ledger
        return True
    with os.fdopen(fd, "w") as f:
        f.write(f"{owner}\n{me}\n")
    return True


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this machine."""
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, owned by another user
        return True
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


# ------------------------------------------------------------------------------ the study
def _read(path: Path, data: dict) -> tuple[str, str]:
    meta = data.get("benchmark")
    if not isinstance(meta, dict) or not isinstance(data.get("recipes"), dict):
        raise ConfigError(f"{path}: a random-language benchmark needs [benchmark] and [recipes]")
    missing = [k for k in ("n", "seed", "max_monoid", "seeds", "fresh_seeds", "ledger", "out")
               if k not in meta]
    if missing:
        raise ConfigError(f"{path}: [benchmark] is missing {', '.join(missing)}")
    return meta["ledger"], meta["out"]


def _plan(config: StudyConfig, ledger: dict, recipe: str | None = None, half: str = "dev",
          claims: str | None = None) -> list[dict]:
    bench, meta = config.data, config.data["benchmark"]
    if not recipe:
        raise ConfigError(f"{config.path}: give the recipe to run (--recipe NAME); recipes: "
                          f"{', '.join(bench['recipes'])}")
    if recipe not in bench["recipes"]:
        raise ConfigError(f"{config.path}: unknown recipe {recipe!r}; recipes: "
                          f"{', '.join(bench['recipes'])}")
    if half not in ("dev", "held_out"):
        raise ConfigError(f"--half: dev or held_out, got {half!r}")
    split = read_split(Path(), meta, config.root)
    runs = [{**r, "path": str(spec_path(r["language"], meta, config.root)),
             **({"claims": str(config.resolve(claims))} if claims else {})}
            for r in plan(bench, recipe, half, split, ledger)]
    return ordered(runs, meta.get("order", "as-listed"), f"{config.path}: [benchmark] order")


ORDERS = ("as-listed", "hardest-first")


def ordered(runs: list[dict], order: str, where: str = "order") -> list[dict]:
    """``runs`` in the order they are run: ``as-listed`` (language by language, each one's
    seeds together) or ``hardest-first`` (seed by seed, the larger syntactic monoid first;
    ties by name). The order never changes a recipe's outcome; with the choice rule's pruning
    (:func:`cannot_win`) it decides how soon a recipe that cannot win stops running: big
    languages fail most often, and one failed seed fails a language.

    >>> runs = [{"language": n, "seed": s, "path": f"bench/random-languages/{n}.toml"}
    ...         for n in ("rl-01-counter-mod-3", "rl-00-dfa-3x2") for s in (0, 1)]
    >>> [(r["language"][:5], r["seed"]) for r in ordered(runs, "hardest-first")]  # |M| 6 and 7
    [('rl-00', 0), ('rl-01', 0), ('rl-00', 1), ('rl-01', 1)]
    """
    if order not in ORDERS:
        raise ConfigError(f"{where}: {order!r} is not an order; orders: {', '.join(ORDERS)}")
    if order == "as-listed":
        return runs
    import monoidlab as ml

    size = {p: ml.load_language(p).monoid().size for p in {r["path"] for r in runs}}
    return sorted(runs, key=lambda r: (r["seed"], -size[r["path"]], r["language"]))


def runs_text(config: StudyConfig, ledger: dict) -> str:
    """The choice rule's standing, what each setting bought, the held-out score (once it is
    in) and the runs' table: the section "random languages runs", from the ledger alone."""
    bench, meta = config.data, config.data["benchmark"]
    split = read_split(Path(), meta, config.root)
    _, why = choose(ledger, split, meta["seeds"], measured(bench))
    gains = bought(ledger, split, meta["seeds"], bench["recipes"])
    name = config.path.name
    return (f"The choice rule on the development half (configs/{name}):\n\n"
            + "\n".join(f"- {line}" for line in why)
            + "\n\nWhat each setting bought on the development half (each recipe against "
            "the earlier recipe it changes least):\n\n"
            + "\n".join(f"- {line}" for line in gains) + "\n\n"
            + (f"{held}\n\n" if (held := held_out_text(ledger, split, meta["seeds"]))
               else "") + results_table(ledger))


def _section(config: StudyConfig, what: str) -> str:
    meta = config.data["benchmark"]
    base = "random languages" if meta.get("prefix", "rl") == "rl" else f"random languages {meta['prefix']}"
    return base if what == "set" else f"{base} runs"


def _which(config: StudyConfig) -> str:
    """A later round's own words in its headings (the first round's set, prefix rl, has none)."""
    prefix = config.data["benchmark"].get("prefix", "rl")
    return "" if prefix == "rl" else f", set {prefix}"


def _sections(config: StudyConfig, ledger: dict) -> dict[str, str]:
    return {_section(config, "runs"): f"## The random-language benchmark{_which(config)}: runs"
            "\n\n" + runs_text(config, ledger)}


def draw(config: StudyConfig, write_docs: bool = False, force: str = "") -> str:
    """The action ``draw``: draw the config's set once (``--force true`` draws it again)."""
    meta = config.data["benchmark"]
    folder, _ = set_folders(meta, config.root)
    names = draw_set(folder, meta["n"], meta["seed"], meta["max_monoid"],
                     force.lower() in ("1", "true", "yes"), meta.get("prefix", "rl"),
                     meta.get("kinds"), [config.resolve(x) for x in meta.get("exclude_sets", [])],
                     root=config.root)
    return f"wrote {len(names)} specs and split.toml to {folder}"


def info(config: StudyConfig, write_docs: bool = False) -> str:
    """The action ``info``: |M|, Green's summary and the support lengths of every language of
    the set (minutes: the support lengths are computed), with ``write_docs`` into the section
    "random languages" of docs/results.md."""
    from monoidlab._util import write_section

    meta = config.data["benchmark"]
    split = read_split(Path(), meta, config.root)
    buffer = offset_buffer_of(config.data)
    t0 = time.time()
    infos = [info_of(n, spec_path(n, meta, config.root).parent, buffer)
             for h in ("dev", "held_out") for n in split[h]]
    text = (info_intro(config) + "\n\n" + info_table(infos, split, buffer)
            + f"\n\n({time.time() - t0:.0f} s to compute)")
    if write_docs:
        write_section(config.root / "docs" / "results.md", _section(config, "set"),
                      f"## The random-language benchmark{_which(config)}: the set\n\n" + text,
                      title="Results")
    return text


def info_intro(config: StudyConfig) -> str:
    """What the info table shows, from the config's own [benchmark]."""
    meta = config.data["benchmark"]
    folder, _ = set_folders(meta, config.root)
    buffer = offset_buffer_of(config.data)
    return (f"`monoidlab study random-languages --config configs/{config.path.name} --action "
            f"info --write-docs`: the {meta['n']} languages of `{folder.relative_to(config.root)}/` "
            f"(drawn once by `monoidlab.algebra.random_languages.draw_benchmark({meta['n']}, "
            f"{meta['seed']}, max_monoid={meta['max_monoid']})`; each spec names its kind, seed "
            "and parameters), split into a development half and a held-out half (`split.toml`) "
            "that no setting is tuned on. s = `min_training_length(lang, range(41, 501), "
            "within=\"auto\", padding=...)`; a language with s > 40 is uncovered at the training "
            "lengths 1..40 of the recipes."
            + ("" if not buffer else " The last column is the layout of the `offsets` recipe "
               f"(identity padding, each training string at a random offset in a buffer of "
               f"{buffer}): offsets place short strings' compositions at deep tree levels, so a "
               "language uncovered at 1..40 without them can be covered with them."))


def frozen_block(text: str) -> str:
    """The frozen recipe's block of a benchmark config's text (its comment lines and its
    table), as the package ships it (:data:`monoidlab.recipes.FROZEN`).

    >>> frozen_block('[recipes.a]\\nsteps = 1\\n\\n# why\\n[recipes.b]\\nfrozen = true\\nsteps = 2\\n')
    '# why\\n[recipes.b]\\nfrozen = true\\nsteps = 2\\n'
    """
    frozen = [n for n, r in tomllib.loads(text).get("recipes", {}).items()
              if isinstance(r, dict) and r.get("frozen") is True]
    if len(frozen) != 1:
        raise ConfigError(f"a benchmark config with exactly one frozen recipe, got {frozen}")
    lines = text.splitlines()
    i = lines.index(f"[recipes.{frozen[0]}]")
    start = i
    while start > 0 and lines[start - 1].startswith("#"):
        start -= 1
    end = i + 1
    while end < len(lines) and lines[end].strip() and not lines[end].startswith("["):
        end += 1
    return "\n".join(lines[start:end]) + "\n"


def write_frozen_recipe(config_path: Path, target: Path | None = None,
                        default: Path | None = None) -> list[Path]:
    """Ship the config's frozen recipe as package data (``recipe = "languages"`` and the
    command line's default read it there, not from a study config the wheel does not carry):
    always as the default of ``monoidlab train --language`` (``default``, default
    :data:`monoidlab.recipes.DEFAULT_RECIPE`), and as MLP-LDRU's recipe 'languages'
    (``target``, default :data:`~monoidlab.recipes.FROZEN`) when it is MLP-LDRU's. Returns the
    files written."""
    from monoidlab._util import atomic_write_text
    from monoidlab.recipes import DEFAULT_RECIPE, FROZEN

    text = config_path.read_text(encoding="utf-8")
    block = frozen_block(text)
    model = next(iter(tomllib.loads(block)["recipes"].values())).get("model", "mlp-ldru")
    source = (f"# The random-language benchmark's frozen recipe, copied from configs/"
              f"{config_path.name} by `monoidlab study random-languages --action freeze`:\n")
    tail = "# Do not edit: a test checks it equals the config's.\n"
    files = {DEFAULT_RECIPE if default is None else default:
             f"# the default of `monoidlab train --language` (model {model}; monoidlab.recipes)."
             "\n"}
    if model == "mlp-ldru":
        files[FROZEN if target is None else target] = (
            "# recipe = \"languages\" of MLP-LDRU (monoidlab.recipes).\n")
    for path, role in files.items():
        atomic_write_text(path, source + role + tail + block)
    return list(files)


def freeze_action(config: StudyConfig, write_docs: bool = False, name: str = "") -> str:
    """The action ``freeze``: append the frozen copy of the choice rule's recipe as ``name``
    to the config, and ship it as the package's frozen recipe."""
    from monoidlab.studies.ledger import read_ledger

    if not name:
        raise ConfigError("the action freeze needs --name NAME (the frozen recipe's name)")
    split = read_split(Path(), config.data["benchmark"], config.root)
    basis = freeze(config.path, read_ledger(config.ledger), split, name)
    shipped = write_frozen_recipe(config.path)
    return (f"{config.path}: recipe {name!r} frozen: {basis}; shipped as "
            f"{' and '.join(map(str, shipped))}")


STUDY = Study(name="random-languages", plan=_plan, run=run_one, sections=_sections, read=_read,
              default_config="random-languages.toml", options=("recipe", "half", "claims"),
              actions={"draw": draw, "info": info, "freeze": freeze_action},
              summary="recipes on random languages: a development and a held-out half")
