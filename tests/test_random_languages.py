"""monoidlab.algebra.random_languages and the committed random-language set (bench/random-languages):
each generator against a brute-force definition, minimality against automata-lib's own
minimisation, monoid sizes against libsemigroups, the set reproducible from its seed, and the
benchmark's held-out protocol."""

from __future__ import annotations

import itertools
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

import monoidlab as ml
from monoidlab.algebra.random_languages import (
    bounded_stack,
    counter_with_reset,
    draw,
    draw_benchmark,
    factor_test,
    long_range,
    mixed_lengths,
    prefix_test,
    product,
    random_dfa,
    suffix_test,
)
from monoidlab.algebra.spec import spec_from_text, spec_text
from monoidlab.errors import InputError

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "bench" / "random-languages"


def words(alphabet, max_len=7):
    return ["".join(w) for n in range(max_len + 1) for w in itertools.product(alphabet, repeat=n)]


@pytest.fixture(scope="module")
def drawn():
    return draw_benchmark(36, 2026, max_monoid=1000)


def test_word_tests_match_python_string_methods():
    ab = "abc"
    ws = words(ab, 6)
    for w in ("ab", "aba", "cc", "abca"):
        assert suffix_test(w, ab).classify(ws).tolist() == [int(x.endswith(w)) for x in ws]
        assert prefix_test(w, ab).classify(ws).tolist() == [int(x.startswith(w)) for x in ws]
        assert factor_test(w, ab).classify(ws).tolist() == [int(w in x) for x in ws]


def test_counter_with_reset_matches_a_fold():
    ws = words("abr", 7)
    for k, clamp in ((3, False), (4, True), (2, False)):
        def fold(s, k=k, clamp=clamp):
            c = 0
            for ch in s:
                c = 0 if ch == "r" else (min(c + 1, k - 1) if clamp else (c + 1) % k) \
                    if ch == "a" else c
            return c
        auto = counter_with_reset(k, "abr", clamp=clamp)
        assert auto.classify(ws).tolist() == [fold(s) for s in ws]


def test_bounded_stack_matches_a_stack():
    ws = words("()[]", 6)
    for depth in (1, 2, 3):
        def ok(s, depth=depth):
            st = []
            for ch in s:
                if ch in "([":
                    st.append(ch)
                    if len(st) > depth:
                        return 0
                elif not st or st.pop() != {")": "(", "]": "["}[ch]:
                    return 0
            return int(not st)
        assert bounded_stack(depth).classify(ws).tolist() == [ok(s) for s in ws]


def test_product_is_the_pair_of_classes():
    a, b = counter_with_reset(3, "abc", count="a", reset="c"), suffix_test("ba", "abc")
    ws = words("abc", 6)
    pair = product(a, b).classify(ws)
    assert pair.tolist() == (a.classify(ws) * 2 + b.classify(ws)).tolist()
    x, y = suffix_test("ab", "ab"), factor_test("bb", "ab")
    ws2 = words("ab", 8)
    for op, f in (("and", np.logical_and), ("or", np.logical_or), ("xor", np.logical_xor)):
        assert product(x, y, op).classify(ws2).tolist() == \
            f(x.classify(ws2), y.classify(ws2)).astype(int).tolist()
    with pytest.raises(InputError, match="alphabets differ"):
        product(x, a)


def test_mixed_lengths_matches_a_matrix_power(drawn):
    """The exact reachable sets, computed again as powers of the adjacency matrix."""
    for d in drawn[:12]:
        auto = d.automaton
        n = auto.n_states
        A = np.zeros((n, n), np.int64)
        for q in range(n):
            A[q, np.asarray(auto.delta)[q]] = 1
        v = np.zeros(n, np.int64)
        v[auto.start] = 1
        expect = []
        for L in range(1, 121):
            v = np.minimum(v @ A, 1)
            if L >= 41:
                expect.append(len(set(np.asarray(auto.output)[v > 0])) > 1)
        assert mixed_lengths(auto, range(41, 121)).tolist() == expect, auto.name


def test_random_dfas_are_minimal_at_their_size_by_automata_lib(drawn):
    dfas = [d for d in drawn if d.kind == "dfa"]
    sizes = {(d.params["n_states"], d.params["n_symbols"]) for d in dfas}
    assert {n for n, _ in sizes} == set(range(3, 9)) and {k for _, k in sizes} == {2, 3, 4}
    for d in dfas[:10]:
        assert d.automaton.n_states == d.params["n_states"]
        assert d.automaton.n_symbols == d.params["n_symbols"]
        # automata-lib's minimisation (an independent implementation) finds nothing to merge
        assert len(d.automaton.to_automata_lib().minify().states) == d.params["n_states"]


def test_monoid_sizes_match_libsemigroups(drawn):
    sys.path.insert(0, str(Path(__file__).parent))
    from oracle import froidure_pin

    for d in drawn[:10]:
        assert froidure_pin(d.automaton).size() == d.monoid_size == d.automaton.monoid().size


def test_monoid_sizes_and_aperiodicity_match_gap(drawn):
    """GAP, a second independent oracle, on 10 languages of every kind drawn."""
    sys.path.insert(0, str(Path(__file__).parent))
    from oracle import gap_monoid_facts

    kinds: dict[str, list] = {}
    for d in drawn:
        kinds.setdefault(d.kind, []).append(d)
    pick = [d for i in range(len(drawn)) for v in kinds.values() if i < len(v)
            for d in [v[i]]][:10]
    assert len({d.kind for d in pick}) == len(kinds) and len(pick) == 10
    facts = gap_monoid_facts([d.automaton for d in pick])
    assert [f["size"] for f in facts] == [d.monoid_size for d in pick]
    assert [f["aperiodic"] for f in facts] == [d.aperiodic for d in pick]


def test_every_drawn_language_has_two_classes_at_long_lengths(drawn):
    for d in drawn:
        mixed = mixed_lengths(d.automaton)
        assert mixed.mean() >= 0.5 and mixed[-10:].any() and long_range(d.automaton)
        assert d.monoid_size <= 1000
    # "shorter than 3": one class at every long length, so it is refused
    short = ml.Automaton(alphabet=["a"], delta=[[1], [2], [3], [3]], start=0,
                         output=[1, 1, 1, 0])
    assert not long_range(short) and not mixed_lengths(short).any()
    # two classes only at lengths 0, 1 mod 5 (40 % of them): refused; at 0, 1, 2 mod 5: kept
    for residues, kept in (({0, 1}, False), ({0, 1, 2}, True)):
        delta = [[((r + 1) % 5) * 2 + (1 - p), ((r + 1) % 5) * 2 + p]
                 for r in range(5) for p in range(2)]
        out = [int(r in residues and p == 0) for r in range(5) for p in range(2)]
        auto = ml.Automaton(alphabet=["a", "b"], delta=delta, start=0, output=out)
        assert mixed_lengths(auto).mean() == pytest.approx(len(residues) / 5, abs=0.01)
        assert long_range(auto) is kept
    # the bracket languages are single-class at odd lengths and still kept
    assert mixed_lengths(bounded_stack(2)).mean() == pytest.approx(0.5, abs=0.01)


def test_same_seed_same_languages_and_different_seed_different():
    a = draw_benchmark(8, 7)
    b = draw_benchmark(8, 7)
    c = draw_benchmark(8, 8)
    assert [x.automaton for x in a] == [x.automaton for x in b]
    assert [x.automaton for x in a] != [x.automaton for x in c]
    assert len({x.automaton for x in a}) == 8  # no duplicates
    rng1, rng2 = np.random.default_rng(5), np.random.default_rng(5)
    assert random_dfa(rng1, 6, 3) == random_dfa(rng2, 6, 3)


def test_drawing_is_bounded_and_errors_are_clear():
    with pytest.raises(InputError, match="no dfa language from seed 1 passed the filters in 5"):
        draw("dfa", 1, size=(8, 4), max_monoid=2, max_tries=5)
    with pytest.raises(InputError, match="unknown kind 'dfaa'"):
        draw("dfaa", 1)
    with pytest.raises(InputError, match="non-empty word over"):
        suffix_test("az", "ab")


def test_the_committed_set_is_the_drawn_set(drawn):
    """bench/random-languages holds exactly draw_benchmark(36, 2026, max_monoid=1000), each spec
    reading back to its machine; the split's halves are disjoint, 18 each, every kind in both."""
    split = tomllib.loads((SPECS / "split.toml").read_text())
    dev, held = split["dev"], split["held_out"]
    assert len(dev) == len(held) == 18 and not set(dev) & set(held)
    files = sorted(SPECS.glob("rl-*.toml"))
    assert [f.stem for f in files] == sorted(dev + held)
    kind_of = {}
    for i, d in enumerate(drawn):
        name = f"rl-{i:02d}-{d.automaton.name}"
        text = (SPECS / f"{name}.toml").read_text()
        assert f"seed {d.seed}" in text
        assert ml.load_language(str(SPECS / f"{name}.toml")) == d.automaton
        kind_of[name] = d.kind
    assert {kind_of[n] for n in dev} == {kind_of[n] for n in held} == set(kind_of.values())


def test_spec_text_round_trips(drawn):
    for d in drawn:
        again = spec_from_text(spec_text(d.automaton, comment="a\nb"))
        assert again == d.automaton and again.classes == d.automaton.classes
    dyck = ml.load_language("dyck-3")
    assert spec_from_text(spec_text(dyck)) == dyck


def test_the_held_out_half_is_scored_once_by_a_frozen_recipe():
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_random_languages import plan

    bench = {"recipes": {"base": {}, "final": {"frozen": True}, "other": {"frozen": True}},
             "benchmark": {"seeds": [0, 1]}}
    split = {"dev": ["a", "b"], "held_out": ["c"]}
    assert [r["id"] for r in plan(bench, "base", "dev", split, {})] == \
        ["base__a__s0", "base__a__s1", "base__b__s0", "base__b__s1"]
    with pytest.raises(SystemExit, match="not frozen"):
        plan(bench, "base", "held_out", split, {})
    assert len(plan(bench, "final", "held_out", split, {})) == 2
    scored = {"final__c__s0": {"recipe": "final", "half": "held_out"}}
    assert len(plan(bench, "final", "held_out", split, scored)) == 2  # resuming is fine
    with pytest.raises(SystemExit, match="already scored by \\['final'\\]"):
        plan(bench, "other", "held_out", split, scored)


def test_the_results_table_shows_each_language_under_each_recipe_and_the_times():
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_random_languages import results_table

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
    sys.path.insert(0, str(ROOT / "bench"))
    import bench_random_languages as mod

    assert function_doctests(mod, mod.choose, mod.freeze_text, mod.held_out_text, mod.lineage,
                             mod.bought, mod.claim)[0] == 0

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


def test_the_info_table_adds_the_support_length_of_the_offsets_recipes_layout():
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_random_languages import OFFSET_BUFFER, info_of, info_table

    bench = tomllib.loads((ROOT / "configs" / "random-languages.toml").read_text())
    assert OFFSET_BUFFER == bench["recipes"]["offsets"]["offset_buffer"]
    row = info_of("rl-07-prefix-ab")
    # random offsets in the buffer include offset 0: they can only add placements, so the
    # support length with them is never longer than without
    assert row["s_offsets"] is not None and row["s_offsets"] <= row["s_identity"]
    text = info_table([row], {"dev": ["rl-07-prefix-ab"], "held_out": []})
    assert f"| s identity, random offsets in {OFFSET_BUFFER} |" in text
    assert text.splitlines()[-1].endswith(f"| {row['s_identity']} | {row['s_offsets']} |")


def test_a_frozen_recipe_with_its_basis_runs(tmp_path, one_torch_thread):
    """The copy the choice makes (frozen = true, basis = "...") trains like the original: the
    bookkeeping keys are not run settings."""
    sys.path.insert(0, str(ROOT / "bench"))
    import bench_random_languages as mod

    recipe = {"model": "mlp-ldru", "steps": 2, "batch_size": 4, "train_lengths": "1:6",
              "test_lengths": "41:42", "test_samples": 4, "threads": 1, "device": "cpu",
              "model_options": {"d": 8}, "frozen": True, "basis": "chosen on the dev half"}
    run = {"id": "final__rl-07-prefix-ab__s0", "language": "rl-07-prefix-ab", "half": "held_out",
           "recipe": "final", "seed": 0}
    row = mod.run_one(run, recipe, str(tmp_path), [1000])
    assert row["status"] == "done" and row["scored"] == 3 * 2 * 4, row
    assert (tmp_path / run["id"] / "results.json").is_file()


def test_freezing_copies_the_chosen_recipe_once(tmp_path):
    sys.path.insert(0, str(ROOT / "bench"))
    import bench_random_languages as mod

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
    with pytest.raises(SystemExit, match="no choice yet"):  # "more" never ran: base alone
        mod.freeze(config, {**part, "x": row("more", "a", 0, True)}, split, "final")
    only_base = {str(i): r for i, r in enumerate(rows)}
    with pytest.raises(SystemExit, match="more not through the dev half"):  # never ran
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
    with pytest.raises(SystemExit, match="frozen already"):
        mod.freeze(config, ledger, split, "again")


def _claim_all(args):
    folder, owner, ids = args
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_random_languages import claim

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


def test_each_recipe_is_read_as_one_change_of_an_earlier_one():
    """The config's recipes change one setting at a time; lineage() finds which, from the
    recipes themselves, and bought() reports what the change did on the development half."""
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_random_languages import CONFIG, bought, lineage

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
    assert "mix-ec-12k (mix-ec with restarts, steps changed): not both through the dev half yet" \
        in lines


def test_a_benchmark_place_with_no_new_language_is_an_error_not_a_hang(monkeypatch):
    """A kind with few distinct languages (bounded stacks) runs out: the draw says which place
    instead of trying seeds forever; ``exclude`` skips an earlier benchmark's languages."""
    from monoidlab.algebra import random_languages as rl
    from monoidlab.errors import InputError

    first = rl.draw_benchmark(2, 5, max_monoid=1000)
    again = rl.draw_benchmark(2, 5, max_monoid=1000, exclude=[first[1].automaton])
    assert again[0].automaton == first[0].automaton  # the place before is drawn as it was
    assert again[1].automaton != first[1].automaton  # the excluded one is skipped
    monkeypatch.setattr(rl, "MAX_REPEATS", 1)
    with pytest.raises(InputError, match=r"place 0 \(dfa 3x2\) found only languages already "
                                         r"drawn or excluded in 1 seeds"):
        rl.draw_benchmark(2, 5, max_monoid=1000, exclude=[first[0].automaton])


def test_the_wide_stack_kind_draws_stacks_the_suite_and_the_narrow_kind_lack():
    """``stack`` (WIDE_KINDS): 1-3 bracket types, depth 1-5, never a suite dyck-k under other
    letters; each is the bounded stack it says, checked against a Python stack."""
    from monoidlab.algebra import random_languages as rl

    seen = set()
    for seed in range(40):
        d = rl.draw("stack", seed, max_monoid=1000)
        t, depth = d.params["types"], d.params["depth"]
        assert 1 <= t <= 3 and 1 <= depth <= 5 and d.monoid_size <= 1000
        assert t > 1 or depth not in rl.SUITE_DYCK_DEPTHS
        seen.add((t, depth))
        assert d.automaton == bounded_stack(depth, rl.BRACKETS[:t])
    assert (1, 5) in seen and (3, 1) in seen  # more than the narrow kind's three
    with pytest.raises(InputError, match="kinds must start with 'dfa'"):
        rl.draw_benchmark(2, 5, kinds=("stack", "dfa"))
    with pytest.raises(InputError, match="unknown kind 'stak'"):
        rl.draw_benchmark(2, 5, kinds=("dfa", "stak"))
