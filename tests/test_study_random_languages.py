"""monoidlab.studies.random_languages (the benchmark that was bench/bench_random_languages.py, run
as ``monoidlab study random-languages``): the held-out protocol, the tables, the choice rule,
freezing, the claims that share runs between processes, and the second round's split."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest

import monoidlab.studies.random_languages as mod
from monoidlab.errors import ConfigError
from monoidlab.evaluation.kinds import KINDS
from monoidlab.studies import StudyConfig
from monoidlab.studies.random_languages import (
    bought,
    claim,
    info_of,
    info_table,
    lineage,
    offset_buffer_of,
    plan,
    read_split,
    results_table,
    spec_path,
)

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "configs" / "random-languages.toml"
SPECS = ROOT / "bench" / "random-languages"


def test_the_held_out_half_is_scored_once_by_a_frozen_recipe():
    bench = {"recipes": {"base": {}, "final": {"frozen": True}, "other": {"frozen": True}},
             "benchmark": {"seeds": [0, 1]}}
    split = {"dev": ["a", "b"], "held_out": ["c"]}
    assert [r["id"] for r in plan(bench, "base", "dev", split, {})] == \
        ["base__a__s0", "base__a__s1", "base__b__s0", "base__b__s1"]
    with pytest.raises(ConfigError, match="not frozen"):
        plan(bench, "base", "held_out", split, {})
    assert len(plan(bench, "final", "held_out", split, {})) == 2
    scored = {"final__c__s0": {"recipe": "final", "half": "held_out"}}
    assert len(plan(bench, "final", "held_out", split, scored)) == 2  # resuming is fine
    with pytest.raises(ConfigError, match="already scored by \\['final'\\]"):
        plan(bench, "other", "held_out", split, scored)


def test_the_results_table_shows_each_language_under_each_recipe_and_the_times():
    def row(recipe, lang, seed, solved, half="dev"):
        return {"id": f"{recipe}__{lang}__s{seed}", "recipe": recipe, "language": lang,
                "half": half, "seed": seed, "status": "done", "solved": solved, "wrong": 0,
                "scored": 10, "min_accuracy": {"near_miss": 1.0},
                "baselines": {"near_miss": {"majority": 0.5, "count_only": 0.7}},
                "fresh": [{"wrong": 0, "scored": 10, "seconds": 4.0}] if solved else [],
                "train_seconds": 100.0, "wall_s": 130.0}

    def refused(recipe, lang, seed):
        return {"id": f"{recipe}__{lang}__s{seed}", "recipe": recipe, "language": lang,
                "half": "dev", "seed": seed, "status": "refused", "message": "too many targets"}

    rows = [row("base", "a", 0, True), row("base", "a", 1, False), row("base", "b", 0, False),
            row("mix", "a", 0, True), row("mix", "a", 1, True),
            refused("mix", "c", 0), refused("mix", "c", 1)]
    text = results_table({r["id"]: r for r in rows})
    assert "| language | base (dev) | mix (dev) |" in text
    # b has one of two seeds: not yet a language solved or unsolved
    assert "| base | dev | 0/1 (1 unfinished) | 1/3 |" in text
    # a language the recipe refuses counts, as unsolved: 1 of 2, 2 of 4 runs
    assert "| mix | dev | 1/2 (1 refused) | 2/4 |" in text
    assert "| c |  | 0/2 |" in text
    assert "| a | 1/2 | 2/2 |" in text and "| b | 0/1 |  |" in text
    # a solved run: 130 s wall = 100 training + 4 fresh + 26 of its own test
    assert "| base__a__s0 | yes | 0/10 | near_miss 1.000/0.50/0.70 | 0/10 | 100 | 26 | 4 |" \
        in text


def test_the_choice_rule_ranks_finished_recipes_and_waits_for_unfinished_ones(
        function_doctests):
    assert function_doctests(mod, mod.choose, mod.freeze_text, mod.held_out_text, mod.lineage,
                             mod.bought, mod.claim, mod.cannot_win)[0] == 0

    def row(recipe, lang, seed, ok, t=100.0, half="dev", status="done"):
        return {"recipe": recipe, "half": half, "language": lang, "seed": seed,
                "status": status, "solved": ok, "train_seconds": t}

    split = {"dev": ["a", "b", "c"], "held_out": ["z"]}
    rows = [row("many", lang, s, lang != "c") for lang in "abc" for s in (0, 1)]
    # more runs but fewer languages on every seed: loses to "many" (2 languages)
    rows += [row("runs", lang, s, (lang, s) != ("a", 1) and (lang, s) != ("b", 0), t=10.0)
             for lang in "abc" for s in (0, 1)]
    rows += [row("many", "z", 0, False, half="held_out")]  # the held-out half never counts
    chosen, why = mod.choose({str(i): r for i, r in enumerate(rows)}, split, [0, 1])
    assert chosen == "many", why
    assert "many: 2 of 3 dev languages solved on every seed, 4 of 6 runs, median train 100 s" in why
    assert "runs: 1 of 3 dev languages solved on every seed, 4 of 6 runs, median train 10 s" in why
    # a refused run (status not done) counts as finished and not solved: "many" drops to one
    # language, and the tie on languages goes to more runs solved
    rows[0] = row("many", "a", 0, None, status="refused")
    chosen, why = mod.choose({str(i): r for i, r in enumerate(rows)}, split, [0, 1])
    assert chosen == "runs" and "many: 1 of 3 dev languages solved on every seed, 3 of 6 runs, " \
        "median train 100 s" in why
    assert mod.choose({}, split, [0, 1]) == (None, [
        "no choice yet: no recipe has finished the dev half"])


def test_a_recipe_that_can_no_longer_win_is_out_and_its_runs_are_not_run(tmp_path, monkeypatch):
    """"many" finished with 2 of 3 languages; "slow" has failed two languages after 3 runs, so
    it can reach 1 at most: the rule chooses "many" without waiting for "slow", and a further
    "slow" run returns None before training (nothing recorded). One failure less and "slow"
    could still tie: it is waited for, and its runs are run."""
    from types import SimpleNamespace

    def row(recipe, lang, seed, ok):
        return {"id": f"{recipe}__{lang}__s{seed}", "recipe": recipe, "half": "dev",
                "language": lang, "seed": seed, "status": "done", "solved": ok,
                "train_seconds": 100.0}

    split = {"dev": ["a", "b", "c"], "held_out": ["z"]}
    rows = [row("many", lang, s, lang != "c") for lang in "abc" for s in (0, 1)]
    rows += [row("slow", "a", 0, False), row("slow", "b", 0, True), row("slow", "b", 1, False)]
    ledger = {r["id"]: r for r in rows}
    chosen, why = mod.choose(ledger, split, [0, 1], ["many", "slow"])
    assert chosen == "many", why
    assert "slow: 3 of 6 dev runs finished; out: at most 1 dev languages left to solve on " \
        "every seed, below the 2 of a finished recipe" in why
    assert mod.cannot_win(ledger, split, [0, 1], "slow") == \
        "slow can solve at most 1 of 3 dev languages on every seed; many solved 2"

    path = tmp_path / "ledger.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = SimpleNamespace(data={"benchmark": {"seeds": [0, 1], "fresh_seeds": [9]},
                                   "recipes": {"slow": {}}},
                             ledger=path, root=tmp_path, out=tmp_path)
    monkeypatch.setattr(mod, "read_split", lambda *a, **k: split)
    monkeypatch.setattr(mod, "train_or_resume",
                        lambda *a, **k: pytest.fail("a run that cannot change the choice ran"))
    run = {"id": "slow__c__s0", "language": "c", "half": "dev", "recipe": "slow", "seed": 0,
           "path": "parity"}
    assert mod.run_one(run, config) is None
    # with "b" solved on seed 1, "slow" can still reach 2 = the leader's: waited for, and run
    rows[-1] = row("slow", "b", 1, True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ledger = {r["id"]: r for r in rows}
    assert mod.choose(ledger, split, [0, 1], ["many", "slow"])[0] is None
    assert mod.cannot_win(ledger, split, [0, 1], "slow") is None
    with pytest.raises(pytest.fail.Exception, match="cannot change the choice ran"):
        mod.run_one(run, config)


def test_the_info_table_adds_the_support_length_of_the_offsets_recipes_layout():
    bench = tomllib.loads(CONFIG.read_text())
    buffer = offset_buffer_of(bench)
    assert buffer == bench["recipes"]["offsets"]["offset_buffer"]
    row = info_of("rl-07-prefix-ab", SPECS, buffer)
    # random offsets in the buffer include offset 0: they can only add placements, so the
    # support length with them is never longer than without
    assert row["s_offsets"] is not None and row["s_offsets"] <= row["s_identity"]
    text = info_table([row], {"dev": ["rl-07-prefix-ab"], "held_out": []}, buffer)
    assert f"| s identity, random offsets in {buffer} |" in text
    assert text.splitlines()[-1].endswith(f"| {row['s_identity']} | {row['s_offsets']} |")


def test_a_frozen_recipe_with_its_basis_runs(tmp_path, one_torch_thread):
    """The copy the choice makes (frozen = true, basis = "...") trains like the original: the
    bookkeeping keys are not run settings."""
    recipe = {"model": "mlp-ldru", "steps": 2, "batch_size": 4, "train_lengths": "1:6",
              "test_lengths": "41:42", "test_samples": 4, "threads": 1, "device": "cpu",
              "model_options": {"d": 8}, "frozen": True, "basis": "chosen on the dev half"}
    run = {"id": "final__rl-07-prefix-ab__s0", "language": "rl-07-prefix-ab", "half": "held_out",
           "recipe": "final", "seed": 0, "path": str(spec_path("rl-07-prefix-ab", {}, ROOT))}
    config = StudyConfig(path=tmp_path / "rl.toml", root=tmp_path,
                         data={"benchmark": {"fresh_seeds": [1000]}, "recipes": {"final": recipe}},
                         ledger=tmp_path / "ledger.jsonl", out=tmp_path)
    row = mod.run_one(run, config)
    assert row["status"] == "done" and row["scored"] == len(KINDS) * 2 * 4, row
    assert (tmp_path / run["id"] / "results.json").is_file()


def test_freezing_copies_the_chosen_recipe_once(tmp_path):
    from monoidlab.recipes import frozen_recipe

    config = tmp_path / "rl.toml"
    config.write_text('[benchmark]\nseeds = [0, 1]\n\n# the base\n[recipes.base]\n'
                      'model = "mlp-ldru"\nsteps = 40\nmodel_options = { d = 8 }\n\n'
                      '# one change\n[recipes.more]\nmodel = "mlp-ldru"\nsteps = 120\n'
                      'sampler = "near_miss"\nmodel_options = { d = 8, padding = "identity" }\n')
    split = {"dev": ["a", "b"], "held_out": ["z"]}

    def row(recipe, lang, seed, ok):
        return {"recipe": recipe, "half": "dev", "language": lang, "seed": seed,
                "status": "done", "solved": ok, "train_seconds": 5.0}

    rows = [row("base", lang, s, lang == "a") for lang in "ab" for s in (0, 1)]
    part = {str(i): r for i, r in enumerate(rows)}
    with pytest.raises(ConfigError, match="no choice yet"):  # "more" never ran: base alone
        mod.freeze(config, {**part, "x": row("more", "a", 0, True)}, split, "final")
    only_base = {str(i): r for i, r in enumerate(rows)}
    with pytest.raises(ConfigError, match="more not through the dev half"):  # never ran
        mod.freeze(config, only_base, split, "final")
    rows += [row("more", lang, s, True) for lang in "ab" for s in (0, 1)]
    ledger = {str(i): r for i, r in enumerate(rows)}
    basis = mod.freeze(config, ledger, split, "final")
    assert basis.startswith("'more', chosen on the development half by the config's rule: 2 of "
                            "2 dev languages solved on every seed, 4 of 4 runs")
    assert "base: 1 of 2" in basis
    data = tomllib.loads(config.read_text())
    final = data["recipes"]["final"]
    assert final.pop("frozen") is True and final.pop("basis") == basis
    assert final == data["recipes"]["more"]  # the chosen recipe, key for key
    # the frozen block's comment says what each setting bought, from the ledger
    comment = config.read_text().split("[recipes.final]")[0].rsplit("\n\n", 1)[1]
    assert all(ln.startswith("#") for ln in comment.splitlines())
    assert ("- more (base with model_options.padding, sampler, steps changed): languages solved "
            "on every seed 1 -> 2 of 2 (gained b; lost none), runs solved 2 -> 4 of 4") in " ".join(
        ln.lstrip("# ") if ln.startswith("#   ") else ln.lstrip("#").strip()
        for ln in comment.splitlines())
    name, keys, options = frozen_recipe(config)
    assert (name, keys["steps"], keys["sampler"], options) == (
        "final", 120, "near_miss", {"d": 8, "padding": "identity"})
    with pytest.raises(ConfigError, match="frozen already"):
        mod.freeze(config, ledger, split, "again")


def _claim_all(args):
    folder, owner, ids = args
    return [i for i in ids if claim(Path(folder), i, owner)]


def test_claims_share_a_recipes_runs_between_processes_once_each(tmp_path):
    """Four processes, each with its own ledger, race through the same 60 runs: every run is
    claimed by exactly one of them, and a restarted owner gets its own claims back."""
    from concurrent.futures import ProcessPoolExecutor

    ids = [f"r__lang-{i}__s0" for i in range(60)]
    owners = [str(tmp_path / f"wt{k}" / "ledger.jsonl") for k in range(4)]
    with ProcessPoolExecutor(4) as pool:
        got = list(pool.map(_claim_all, [(str(tmp_path / "claims"), o, ids) for o in owners]))
    assert sorted(i for g in got for i in g) == sorted(ids)
    assert _claim_all((str(tmp_path / "claims"), owners[0], ids)) == got[0]


def _claim_one(args):
    folder, owner, run_id, hold = args
    import time

    got = claim(Path(folder), run_id, owner)
    time.sleep(hold)  # alive while the other process tries
    return got


def test_two_live_processes_of_one_ledger_never_take_the_same_run(tmp_path):
    """Two processes in one worktree (one ledger, one claims folder): while the first is alive
    the second does not get its run; once the first has ended, its run is taken over (a killed
    run is resumed). A claim file of the old form (the ledger alone) is the ledger's own."""
    import subprocess
    import sys
    from concurrent.futures import ProcessPoolExecutor

    folder, owner = str(tmp_path / "claims"), str(tmp_path / "ledger.jsonl")
    with ProcessPoolExecutor(2) as pool:
        first = pool.submit(_claim_one, (folder, owner, "r1", 3.0))
        import time

        deadline = time.time() + 30
        while not (tmp_path / "claims" / "r1").exists() and time.time() < deadline:
            time.sleep(0.05)
        second = pool.submit(_claim_one, (folder, owner, "r1", 0.0))
        assert (first.result(), second.result()) == (True, False)
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True).stdout.strip()
    host = (tmp_path / "claims" / "r1").read_text().splitlines()[1].split()[1]
    (tmp_path / "claims" / "r1").write_text(f"{owner}\n{ended} {host}\n")
    assert claim(Path(folder), "r1", owner)  # its holder has ended: taken over
    assert (tmp_path / "claims" / "r1").read_text().splitlines()[1].split()[0] == str(os.getpid())
    (tmp_path / "claims" / "r2").write_text(owner + "\n")
    assert claim(Path(folder), "r2", owner) and not claim(Path(folder), "r2", owner + "x")


def test_each_recipe_is_read_as_one_change_of_an_earlier_one():
    """The config's recipes change one setting at a time; lineage() finds which, from the
    recipes themselves, and bought() reports what the change did on the development half."""
    recipes = tomllib.loads(CONFIG.read_text())["recipes"]
    tree = lineage(recipes)
    assert tree["covering"] == ("base", ["covering", "sampler"])
    assert tree["offsets"] == ("base", ["offset_buffer", "offsets"])
    assert tree["mix-ec"] == ("base", ["near_miss_mix"])
    assert tree["mix-ec-12k"] == ("mix-ec", ["restarts", "steps"])
    assert tree["mix-ec-12k-d64"] == ("mix-ec-12k", ["model_options.d"])
    frozen = {**recipes["covering"], "frozen": True, "basis": "chosen"}
    assert lineage({**recipes, "final": frozen})["final"] == ("covering", [])

    def row(recipe, lang, seed, ok):
        return {"recipe": recipe, "half": "dev", "language": lang, "seed": seed,
                "status": "done" if ok is not None else "refused", "solved": bool(ok)}

    runs = [row("base", "x", s, s == 0) for s in (0, 1)] + [row("base", "y", s, True)
                                                            for s in (0, 1)]
    runs += [row("mix-ec", "x", s, True) for s in (0, 1)] + [row("mix-ec", "y", 0, None),
                                                             row("mix-ec", "y", 1, True)]
    ledger = {str(i): r for i, r in enumerate(runs)}
    lines = bought(ledger, {"dev": ["x", "y"]}, [0, 1], {**recipes, "final": frozen})
    assert not any(line.startswith("final") for line in lines)  # a copy bought nothing new
    assert ("mix-ec (base with near_miss_mix changed): languages solved on every seed 1 -> 1 of "
            "2 (gained x; lost y), runs solved 3 -> 3 of 4") in lines
    assert ("mix-ec-12k (mix-ec with restarts, steps changed): not compared, 0 and 4 of 4 dev "
            "runs ran (a recipe out of the choice stops early)") in lines
    # another model is its own recipe, not a setting changed
    other = {**recipes, "tree": {**recipes["base"], "model": "transform-tree"}}
    assert [ln for ln in bought(ledger, {"dev": ["x", "y"]}, [0, 1], other)
            if ln.startswith("tree")] == [
        "tree (model transform-tree where base has mlp-ldru): not compared, 0 and 4 of 4 dev "
        "runs ran (a recipe out of the choice stops early)"]


def test_the_second_random_language_round_holds_out_only_fresh_languages():
    """Round 2 develops on the first round's whole set and its own development half; a language
    of its draw equal to a first-round one (the same minimal machine) joins neither half."""
    meta = tomllib.loads((ROOT / "configs" / "random-languages-2.toml").read_text())["benchmark"]
    split = read_split(Path(), meta, ROOT)
    first = read_split(SPECS)
    assert set(first["dev"] + first["held_out"]) <= set(split["dev"])
    assert not set(split["dev"]) & set(split["held_out"])
    old = {mod._machine(spec_path(n, meta, ROOT)) for n in first["dev"] + first["held_out"]}
    assert all(mod._machine(spec_path(n, meta, ROOT)) not in old for n in split["held_out"])
    assert len(split["held_out"]) == 18 and len(split["dev"]) == 36 + 18  # 36 fresh, at the draw
    # the committed set is the config's draw: the first round excluded, the wider stack kind
    import monoidlab as ml
    from monoidlab.algebra.random_languages import draw_benchmark

    excluded = [ml.load_language(str(spec_path(n, round1_meta := tomllib.loads(
        CONFIG.read_text())["benchmark"], ROOT)))
        for n in first["dev"] + first["held_out"]]
    drawn = draw_benchmark(meta["n"], meta["seed"], max_monoid=meta["max_monoid"],
                           exclude=excluded, kinds=meta["kinds"])
    names = sorted(split["held_out"] + split["dev"][36:])
    assert [f"rl2-{i:02d}-{d.automaton.name}" for i, d in enumerate(drawn)] == names
    assert round1_meta["n"] == 36
    round1 = tomllib.loads(CONFIG.read_text())
    assert read_split(Path(), round1["benchmark"], ROOT) == first  # the first round as before


def test_hardest_first_runs_every_seed_0_first_and_bigger_monoids_first():
    """The order option reorders the same runs (a permutation): seed by seed, the syntactic
    monoid's size never grows within a seed; an unknown order names the field."""
    import monoidlab as ml

    config = StudyConfig(path=ROOT / "configs" / "random-languages-2.toml", root=ROOT,
                         data=tomllib.loads((ROOT / "configs" / "random-languages-2.toml")
                                            .read_text()),
                         ledger=ROOT / "none.jsonl", out=ROOT / "runs" / "none")
    assert config.data["benchmark"]["order"] == "hardest-first"
    runs = mod._plan(config, {}, "languages-v1")
    assert sorted(r["id"] for r in runs) == sorted(
        r["id"] for r in plan(config.data, "languages-v1", "dev",
                              read_split(Path(), config.data["benchmark"], ROOT), {}))
    seeds = [r["seed"] for r in runs]
    assert seeds == sorted(seeds) and set(seeds) == {0, 1}
    sizes = [ml.load_language(r["path"]).monoid().size for r in runs if r["seed"] == 0]
    assert sizes == sorted(sizes, reverse=True) and sizes[0] > sizes[-1]
    with pytest.raises(ConfigError, match=r"\[benchmark\] order: 'biggest' is not an order"):
        mod.ordered(runs, "biggest", "x.toml: [benchmark] order")


ROUND2 = ROOT / "configs" / "random-languages-2.toml"


def _largest_language() -> tuple[str, int]:
    """Round 2's language with the largest syntactic monoid (both halves) and its size."""
    import monoidlab as ml

    meta = tomllib.loads(ROUND2.read_text())["benchmark"]
    split = read_split(Path(), meta, ROOT)
    size = {n: ml.load_language(str(spec_path(n, meta, ROOT))).monoid().size
            for n in split["dev"] + split["held_out"]}
    name = max(size, key=lambda n: (size[n], n))
    return name, size[name]


@pytest.mark.parametrize("recipe", ["v1-fallback", pytest.param("snap", marks=pytest.mark.slow),
                                    "transform", "transform-curriculum", "languages-v1"])
def test_each_round_2_candidate_trains_on_the_largest_language_instead_of_refusing(
        tmp_path, one_torch_thread, recipe):
    """Round 2's candidates may refuse no language (refusals count as failures, and the frozen
    recipe becomes the default of `monoidlab train --language`): each one trains a few steps
    on the set's largest language (snap is slow here: the certificate's table of 1948 x 1948
    codes). languages-v1, the first round's recipe kept as it ran, refuses it (its covering
    plan cannot fit in its steps)."""
    data = tomllib.loads(ROUND2.read_text())
    meta = data["benchmark"]
    short = {"steps": 3, "restarts": 0, "eval_every": 0, "early_stop": 0, "test_lengths": "41:42",
             "test_samples": 2, "checkpoint_every": 3, "log_every": 3}
    config = StudyConfig(path=tmp_path / "rl2.toml", root=ROOT,
                         data={"benchmark": {**meta, "fresh_seeds": []},
                               "recipes": {recipe: {**data["recipes"][recipe], **short}}},
                         ledger=tmp_path / "ledger.jsonl", out=tmp_path)
    name, size = _largest_language()
    assert size > 900  # the set's |M| reaches the draw's bound of 1000
    run = {"id": f"{recipe}__{name}__s0", "language": name, "half": "held_out",
           "recipe": recipe, "seed": 0, "path": str(spec_path(name, meta, ROOT))}
    row = mod.run_one(run, config)
    if recipe == "languages-v1":
        assert row["status"] == "refused" and "covering" in row["message"], row
        return
    assert row["status"] == "done", row
    results = json.loads((tmp_path / run["id"] / "results.json").read_text())
    assert results["steps"] == 3 and row["scored"] > 0, (results.get("steps"), row)
