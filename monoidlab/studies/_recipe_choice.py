"""The random-language benchmark's choice rule (monoidlab.studies.random_languages): what each
recipe changes and bought, the rule's choice on the development half, the held-out score, and
the frozen copy of the chosen recipe; pure functions of the ledger's rows and the config's text.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from monoidlab.errors import ConfigError

#: a recipe's keys that say where it stands, not how a run trains
BOOKKEEPING = ("frozen", "basis")


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
        if "model" in changed:  # another model: its own recipe, not one setting changed
            rest = [k for k in changed if k != "model"]
            head = (f"{name} (model {recipes[name].get('model')} where {parent} has "
                    f"{recipes[parent].get('model')}" + (f"; {', '.join(rest)} changed too"
                                                         if 0 < len(rest) <= 3 else
                                                         "; its own recipe" if rest else "")
                    + ")")
        if not (through(name) and through(parent)):
            runs = {rc: sum(k in ok.get(rc, {}) for k in want) for rc in (name, parent)}
            lines.append(f"{head}: not compared, {runs[name]} and {runs[parent]} of "
                         f"{len(want)} dev runs ran (a recipe out of the choice stops early)")
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

    An unfinished recipe that can no longer reach the languages of a finished one (its dev
    languages not yet failed on some seed are fewer) is out: the rule would never choose it,
    whatever its other runs do, so its remaining runs are not needed (:func:`cannot_win`).
    """
    by_recipe = dev_runs(ledger)
    want = {(lang, seed) for lang in split["dev"] for seed in seeds}
    ranked, lines, unfinished = [], [], []
    names = sorted(set(by_recipe) | set(recipes or []))
    for recipe in names:
        runs = by_recipe.get(recipe, {})
        if want - set(runs):
            continue
        ok = {k: _solved(r) for k, r in runs.items()}
        langs = solved_languages(runs, split["dev"], seeds)
        secs = sorted(r.get("train_seconds", 0.0) for r in runs.values() if r["status"] == "done")
        med = secs[len(secs) // 2] if secs else float("inf")
        ranked.append((langs, sum(ok.values()), -med, recipe))
        lines.append(f"{recipe}: {langs} of {len(split['dev'])} dev languages solved on every "
                     f"seed, {sum(ok.values())} of {len(want)} runs, median train {med:.0f} s")
    lead = max(ranked)[0] if ranked else None
    for recipe in names:
        runs = by_recipe.get(recipe, {})
        missing = want - set(runs)
        if not missing:
            continue
        most = reachable(runs, split["dev"])
        done = f"{recipe}: {len(want) - len(missing)} of {len(want)} dev runs finished"
        if lead is not None and most < lead:
            lines.append(f"{done}; out: at most {most} dev languages left to solve on every "
                         f"seed, below the {lead} of a finished recipe")
        else:
            unfinished.append(recipe)
            lines.append(done)
    if unfinished or not ranked:
        why = (f"no choice yet: {', '.join(unfinished)} not through the dev half"
               if unfinished else "no choice yet: no recipe has finished the dev half")
        return None, lines + [why]
    best = max(ranked)[3]
    return best, lines + [f"chosen by the rule: {best}"]


def dev_runs(ledger: dict[str, dict]) -> dict[str, dict[tuple[str, int], dict]]:
    """The development half's rows by recipe, keyed by (language, seed)."""
    by_recipe: dict[str, dict[tuple[str, int], dict]] = {}
    for r in ledger.values():
        if r["half"] == "dev":
            by_recipe.setdefault(r["recipe"], {})[(r["language"], int(r["seed"]))] = r
    return by_recipe


def _solved(row: dict) -> bool:
    """A finished run solved (a refusal, status not done, is a failure)."""
    return row["status"] == "done" and bool(row["solved"])


def solved_languages(runs: dict[tuple[str, int], dict], dev: list[str], seeds: list[int]
                     ) -> int:
    """The dev languages a recipe solved on every seed (its runs keyed by (language, seed),
    every one present)."""
    return sum(all(_solved(runs[(lang, s)]) for s in seeds) for lang in dev)


def reachable(runs: dict[tuple[str, int], dict], dev: list[str]) -> int:
    """The most dev languages a recipe can still solve on every seed: those none of its
    finished runs failed (a refusal is a failure)."""
    failed = {lang for (lang, _), r in runs.items() if not _solved(r)}
    return sum(lang not in failed for lang in dev)


def cannot_win(ledger: dict[str, dict], split: dict[str, list[str]], seeds: list[int],
               recipe: str) -> str | None:
    """Why ``recipe``'s remaining dev runs cannot change the choice (None when they can): a
    recipe through the dev half solved more languages on every seed than ``recipe`` can still
    reach. Outcome-preserving: the rule (most languages first) never chooses it.

    >>> row = lambda rc, lang, seed, ok: {"recipe": rc, "half": "dev", "language": lang,
    ...     "seed": seed, "status": "done", "solved": ok}
    >>> led = {str(i): r for i, r in enumerate([row("a", "x", 0, True), row("a", "y", 0, True),
    ...     row("b", "x", 0, False)])}
    >>> cannot_win(led, {"dev": ["x", "y"]}, [0], "b")
    'b can solve at most 1 of 2 dev languages on every seed; a solved 2'
    >>> cannot_win(led, {"dev": ["x", "y"]}, [0], "a") is None
    True
    """
    by_recipe = dev_runs(ledger)
    want = {(lang, seed) for lang in split["dev"] for seed in seeds}
    most = reachable(by_recipe.get(recipe, {}), split["dev"])
    for other, runs in sorted(by_recipe.items()):
        if other == recipe or want - set(runs):
            continue
        langs = solved_languages(runs, split["dev"], seeds)
        if langs > most:
            return (f"{recipe} can solve at most {most} of {len(split['dev'])} dev languages on "
                    f"every seed; {other} solved {langs}")
    return None


def held_out_text(ledger: dict[str, dict], split: dict[str, list[str]], seeds: list[int],
                  goal: float = 0.8) -> str:
    """The held-out half's one score (by the frozen recipe): languages solved on every seed
    against the benchmark's goal (the share it aims to solve), runs, and which languages were
    refused or ran and failed; empty until every held-out run is in the ledger.

    >>> row = lambda lang, seed, status, ok, t=None: {"recipe": "v1", "half": "held_out",
    ...     "language": lang, "seed": seed, "status": status, "solved": ok, "train_seconds": t}
    >>> ledger = dict(enumerate([row("x", 0, "done", True, 10), row("y", 0, "done", False, 30),
    ...                          row("z", 0, "refused", None)]))
    >>> held_out_text(ledger, {"held_out": ["x", "y", "z"]}, [0])
    'The held-out half, scored once by v1 (seeds 0): 1 of 3 languages solved on every seed (33 %; goal 80 %: not met), 1 of 3 runs; refused before training: z; ran and failed: y. Training time per language (all its seeds, one core): median 10 s, at most 30 s.'
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
    # one core's training time per language (its seeds together): the goal's 15 minutes
    per = sorted(sum(float(got[(lang, s)].get("train_seconds") or 0) for s in seeds)
                 for lang in split["held_out"])
    mid = (per[(n - 1) // 2] + per[n // 2]) / 2
    return (f"The held-out half, scored once by {recipe} (seeds "
            f"{', '.join(map(str, seeds))}): {len(solved)} of {n} languages solved on every "
            f"seed ({100 * len(solved) / n:.0f} %; goal {100 * goal:.0f} %: "
            f"{'met' if len(solved) >= goal * n else 'not met'}), {sum(ok.values())} of "
            f"{len(want)} runs; refused before training: {', '.join(refused) or 'none'}; ran "
            f"and failed: {', '.join(failed) or 'none'}. Training time per language (all its "
            f"seeds, one core): median {mid:.0f} s, at most {per[-1]:.0f} s.")


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
        raise ConfigError(f"no [recipes.{chosen}] table in the config")
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
             "frozen = true", f"basis = {json.dumps(basis, ensure_ascii=True)}", *body]
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
        raise ConfigError(f"{config}: recipe {frozen[0]!r} is frozen already; exactly one may be")
    if name in bench["recipes"]:
        raise ConfigError(f"{config}: a recipe {name!r} exists; give the frozen copy a new name")
    chosen, why = choose(ledger, split, bench["benchmark"]["seeds"], measured(bench))
    if chosen is None:
        raise ConfigError("; ".join(why))
    dev = [ln for ln in why if ln.startswith(f"{chosen}:")][0].split(": ", 1)[1]
    others = "; ".join(ln for ln in why if ":" in ln and not ln.startswith(
        (f"{chosen}:", "chosen", "no choice")))
    basis = (f"{chosen!r}, chosen on the development half by the config's rule: {dev}"
             + (f" (the others: {others})" if others else ""))
    notes = bought(ledger, split, bench["benchmark"]["seeds"], bench["recipes"])
    atomic_write_text(config, freeze_text(text, chosen, name, basis, notes))
    return basis
