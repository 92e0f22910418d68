"""Notebook ergonomics, errors that suggest, automata-lib NFAs and interop: readable reprs,
the closest name first, NFAs determinised, a monoid presentation over the user's letters
checked by libsemigroups, labelled Cayley graphs and JSON that writes ε as ε."""

from __future__ import annotations

import ast
import doctest
import itertools
import json
import re
from pathlib import Path

import numpy as np
import pytest

import monoidlab as ml
from monoidlab._suggest import SHOWN, closest_first, known_choices
from monoidlab.algebra.automaton import Automaton
from monoidlab.cli import main
from monoidlab.coverage.exact import CoverageGap, exact_coverage
from monoidlab.errors import ConfigError, InputError, MonoidlabError, UnknownName

PACKAGE = Path(ml.__file__).resolve().parent


def listed(message: str, label: str) -> list[str]:
    """The names an error lists after ``label:`` (up to the ``...`` or the end)."""
    tail = message.split(f"{label}: ", 1)[1]
    return [n.strip() for n in tail.split(", ... (")[0].split(", ")]


# ------------------------------------------------------------------ item 4: notebooks
def test_green_prints_its_counts_and_draws_its_egg_boxes():
    m = ml.load_language("dyck-2").monoid()
    g = m.green
    r = repr(g)
    assert " object at 0x" not in r and r == str(g)
    assert r == (f"GreenStructure(dyck-2: |M|={m.size}, R={g.n_r}, L={g.n_l}, H={g.n_h}, "
                 f"J={g.n_j}, idempotents={len(m.idempotents)}; aperiodic)")
    page = g._repr_html_()
    assert page.count("<caption>J-class") == g.n_j
    # every element appears once, as its word, and every idempotent cell is starred
    cells = re.findall(r"<td>(\*?)([^<]*)</td>", page)
    words = [w for _, c in cells for w in c.split(", ")]
    assert sorted(words) == sorted(m.labels())
    idem = {m.labels()[e] for e in m.idempotents}
    assert {c for star, c in cells if star} == idem  # aperiodic: one element per cell
    box = g.egg_box(1)._repr_html_()
    assert box.count("<tr>") == len(g.egg_box(1).r_classes)


def test_green_called_like_a_method_is_the_same_object():
    m = ml.load_language("parity").monoid()
    assert m.green() is m.green  # lang.monoid() is a method: the habit carries over


def test_big_monoid_html_is_bounded():
    from monoidlab.algebra.green import HTML_J_CLASSES
    from monoidlab.algebra.monoid import HTML_ELEMENTS

    m = ml.load_language("prefix-4-4").monoid()  # 341 elements, 86 J-classes
    assert m.green.n_j > HTML_J_CLASSES
    page = m.green._repr_html_()
    assert page.count("<caption>") == HTML_J_CLASSES
    assert f"{m.green.n_j - HTML_J_CLASSES} more J-classes" in page
    mp = m._repr_html_()
    assert f"({m.size} in all" in mp and mp.count(", ") < HTML_ELEMENTS + 20


def test_html_escapes_user_symbols():
    a = Automaton(alphabet=["<", "&"], delta=[[1, 0], [0, 1]], start=0, output=[0, 1],
                  name="<b>x", description="a < b")
    for page in (a._repr_html_(), a.monoid()._repr_html_(), a.monoid().green._repr_html_()):
        assert "<b>x" not in page.replace("<b>&lt;b&gt;x</b>", "")
        assert "&lt;" in page


def test_result_objects_print_one_line_without_arrays():
    from monoidlab.coverage.covering import CoveringPlan, covering_sample

    lang = ml.load_language("dyck-2")
    m = lang.monoid()
    gap = CoverageGap(exact_coverage(lang, range(1, 4)), exact_coverage(lang, range(9, 13)))
    plan = CoveringPlan("parity", range(1, 9), [30], padding="identity")
    batch = covering_sample(ml.load_language("parity"), range(1, 9), 12, test_lengths=[30],
                            padding="identity", seed=1)
    found = ml.min_training_length("dyck-2", range(41, 60), delta=0.05,
                                   sample_ranges=["1:20"])
    sampled = ml.sample(lang, range(1, 9), 300, seed=0)
    objects = [m, m.green, gap, gap.train, found, plan, plan.coverage, batch, sampled]
    for obj in objects:
        r = repr(obj)
        assert " object at 0x" not in r and "array(" not in r and "\n" not in r, r
        assert len(r) < 300 and r.startswith(type(obj).__name__ + "("), r
    assert repr(found).startswith(f"MinLength(dyck-2: support length {found.support_length} ")
    assert "train 1:20: N = " in repr(found)
    assert f"{len(plan.targets)} targets, {plan.uncovered} uncovered" in repr(plan)
    assert f"{len(batch)} strings of lengths {batch.lengths.min()}..{batch.lengths.max()}" \
        in repr(batch)
    counts = np.bincount(sampled.labels, minlength=2)
    assert repr(sampled) == (f"Batch(dyck-2: 300 strings of lengths 1..8; classes "
                             f"reject: {counts[0]}, accept: {counts[1]})")
    assert repr(plan.coverage).startswith("LevelCoverage(parity, balanced schedule, train 1:8 "
                                          "vs test 30:30; ")


def test_gap_summary_counts_and_the_first_few():
    lang = ml.load_language("dyck-2")
    gap = CoverageGap(exact_coverage(lang, range(1, 4)), exact_coverage(lang, range(9, 13)))
    everything = gap.missing_list()
    s = gap.summary()
    assert s["missing"] == len(everything) == int(gap.missing.sum()) > 5
    assert "missing_list" not in s and s["missing_first"] == everything[:5]
    assert len(json.dumps(s)) < 1500  # a notebook cell, not hundreds of dicts
    assert gap.summary(first=None)["missing_list"] == everything
    assert gap.summary(first=2)["missing_first"] == everything[:2]
    assert gap.summary(first=0)["missing_first"] == []
    with pytest.raises(InputError, match="first"):
        gap.summary(first=-1)
    # the probabilities are sorted, most probable first
    p = [r["test_probability"] for r in everything]
    assert p == sorted(p, reverse=True)


# ------------------------------------------------------------------ item 5: suggestions
def _ratio_reference(a: str, b: str) -> float:
    """2·M / T with M the matched characters of difflib's longest-block recursion, written
    out (the slow, obvious form of ``SequenceMatcher.ratio``)."""
    def matched(x: str, y: str) -> int:
        best = (0, 0, 0)
        for i in range(len(x)):
            for j in range(len(y)):
                k = 0
                while i + k < len(x) and j + k < len(y) and x[i + k] == y[j + k]:
                    k += 1
                if k > best[2]:
                    best = (i, j, k)
        i, j, k = best
        if not k:
            return 0
        return k + matched(x[:i], y[:j]) + matched(x[i + k:], y[j + k:])
    return 2 * matched(a, b) / (len(a) + len(b)) if a or b else 1.0


@pytest.mark.parametrize("name", ["stpes", "dyk-6", "tomitta-3", "lr_shedule", "zzz"])
def test_closest_first_against_a_reference(name):
    names = sorted(set(ml.language_names()) | {"steps", "seed", "lr", "lr_schedule"})
    fast = closest_first(name, names)
    scores = [_ratio_reference(name, c) for c in fast]
    assert scores == sorted(scores, reverse=True)  # nearest first, ties in the given order
    tail = known_choices(name, names, "known", limit=4)
    shown = listed(tail, "known")
    assert len(shown) == 4 and f"({len(names)} in all)" in tail
    if "did you mean" in tail:
        assert shown[0] == re.search(r"did you mean '([^']+)'", tail).group(1)


def test_the_suggestion_leads_the_list_on_a_tie():
    # dyck-4 and dyck-6 are equally close to dyck-5: whichever is suggested is listed first
    tail = known_choices("dyck-5", ["dyck-4", "dyck-6", "parity"])
    best = re.search(r"did you mean '([^']+)'", tail).group(1)
    assert listed(tail, "known")[0] == best and len(listed(tail, "known")) == 3


def test_unknown_language_leads_with_the_closest():
    for call in (ml.load_language, ml.algebra.languages.spec_path):
        with pytest.raises(UnknownName) as err:
            call("dyk-6")
        msg = str(err.value)
        assert msg.index("did you mean 'dyck-6'") < msg.index("known:")
        names = listed(msg, "known")
        assert names[0] == "dyck-6" and len(names) <= SHOWN
        assert f"({len(ml.language_names())} in all: monoidlab languages)" in msg
    with pytest.raises(UnknownName, match=r"did you mean 'tomita'\?\); known: tomita, "):
        ml.suite("tomitta")


def test_unknown_config_key_leads_with_the_closest(capsys):
    from monoidlab.training import RunConfig
    from monoidlab.training.parse import config_from_dict, read_overrides

    calls = [lambda: read_overrides(["--stpes=300"]),
             lambda: config_from_dict({"language": "parity", "stpes": 300}),
             lambda: RunConfig(language="parity", stpes=300),  # not a bare TypeError
             lambda: RunConfig(language="parity").replace(stpes=300)]
    for call in calls:
        with pytest.raises(ConfigError) as err:
            call()
        msg = str(err.value)
        assert "unknown key 'stpes' (did you mean 'steps'?)" in msg and "\n" not in msg
        names = listed(msg, "known keys")
        assert names[0] == "steps" and len(names) <= SHOWN
    code = main(["train", "--language", "parity", "--stpes=300"])
    err = capsys.readouterr().err
    assert code != 0 and "did you mean 'steps'?); known keys: steps, " in err
    assert err.count(", ") < SHOWN + 3  # not all 40 keys


def test_bad_config_values_fail_when_built():
    from monoidlab.training import RunConfig

    with pytest.raises(ConfigError, match=r"key 'train_lengths': .*'1-40'"):
        RunConfig(language="parity", train_lengths="1-40")
    with pytest.raises(ConfigError, match=r"key 'task': unknown task 'revers_string' \(did "
                                          r"you mean 'reverse_string'\?\); known tasks: "
                                          r"reverse_string, "):
        RunConfig(task="revers_string")
    with pytest.raises(ConfigError, match=r"key 'eval_kinds': .*did you mean 'near_miss'"):
        RunConfig(language="parity", eval_kinds=["paper", "nearmiss"])
    with pytest.raises(ConfigError, match=r"unknown sampler 'uniformm' \(did you mean "
                                          r"'uniform'\?\); choose from: uniform, "):
        RunConfig(language="parity", sampler="uniformm")


def test_spec_field_and_family_suggestions(tmp_path):
    spec = tmp_path / "mine.toml"
    spec.write_text('family = "dick"\n[params]\ndepth = 2\n')
    with pytest.raises(MonoidlabError, match=r"unknown family 'dick' \(did you mean 'dyck'\?\)"):
        ml.load_language(spec)


# ------------------------------------------------------------------ item 6: automata-lib
def test_nfa_is_determinised_and_agrees_with_automata_lib():
    from automata.fa.gnfa import GNFA
    from automata.fa.nfa import NFA

    nfa = NFA.from_regex("(a|b)*c", input_symbols={"a", "b", "c"})
    lang = Automaton.from_automata_lib(nfa)
    assert lang.alphabet == ("a", "b", "c") and lang.n_states == 3  # minimal: 2 + sink
    words = ["".join(w) for n in range(7) for w in itertools.product("abc", repeat=n)]
    got = lang.classify(words).tolist()
    # two references: automata-lib's own NFA simulation, and Python's re
    assert got == [int(nfa.accepts_input(w)) for w in words]
    assert got == [int(re.fullmatch("[ab]*c", w) is not None) for w in words]
    assert Automaton.from_dfa(nfa) == lang  # the older name takes NFAs too
    assert Automaton.from_automata_lib(GNFA.from_nfa(nfa)) == lang


def test_other_objects_get_one_clear_error():
    lang = ml.load_language("parity")
    for bad, what in (("parity", "builtins.str"), (3, "builtins.int"),
                      (lang, "already a monoidlab machine")):
        with pytest.raises(InputError) as err:
            Automaton.from_automata_lib(bad)
        msg = str(err.value)
        assert msg.startswith("from_automata_lib: an automata-lib DFA, NFA or GNFA, got ")
        assert what in msg and "\n" not in msg


# ------------------------------------------------------------------ item 8: interop
def _fold(delta: np.ndarray, word: list[int]) -> tuple[int, ...]:
    """The action of a word on every state, by a plain loop over the transition table."""
    out = []
    for q in range(delta.shape[0]):
        for a in word:
            q = int(delta[q, a])
        out.append(q)
    return tuple(out)


@pytest.mark.parametrize("name", ["parity", "tomita-7", "dyck-3", "cycle-navigation",
                                  "even-pairs", "prefix-2-2"])
def test_presentation_over_the_letters_is_the_monoid(name):
    lsg = pytest.importorskip("libsemigroups_pybind11")
    guard = lsg.ReportGuard(False)
    lang = ml.load_language(name)
    m = lang.monoid()
    p = m.to_libsemigroups()
    assert p.alphabet() == "".join(lang.alphabet)  # the user's letters, no extra generator
    assert p.contains_empty_word()
    # every rule holds in the transition monoid (a plain fold), so the presented monoid maps
    # onto it; libsemigroups' Todd-Coxeter finds as many classes: the two are isomorphic
    delta = np.asarray(lang.delta)
    idx = {a: i for i, a in enumerate(lang.alphabet)}
    rules = p.rules
    for lhs, rhs in zip(rules[::2], rules[1::2]):
        assert _fold(delta, [idx[c] for c in lhs]) == _fold(delta, [idx[c] for c in rhs])
    tc = lsg.ToddCoxeter(lsg.congruence_kind.twosided, p)
    assert tc.number_of_classes() == m.size
    # against libsemigroups' own Froidure-Pin on the letters' transformations
    S = lsg.FroidurePin([lsg.Transf([int(x) for x in delta[:, a]])
                         for a in range(delta.shape[1])])
    S.run()
    has_one = S.contains(lsg.Transf(list(range(delta.shape[0]))))
    assert S.size() + (0 if has_one else 1) == m.size
    if not has_one:  # the monoid is the semigroup with an identity adjoined: the same rules
        assert S.number_of_rules() == len(rules) // 2
    del guard


def test_presentation_of_multi_character_symbols_uses_letter_indices():
    lsg = pytest.importorskip("libsemigroups_pybind11")
    a = Automaton(alphabet=["push", "pop"], delta=[[1, 2], [2, 0], [2, 2]], start=0,
                  output=[1, 0, 0])
    m = a.monoid()
    p = m.to_libsemigroups()
    assert list(p.alphabet()) == [0, 1]
    assert lsg.ToddCoxeter(lsg.congruence_kind.twosided, p).number_of_classes() == m.size


def test_reduced_rules_against_a_reference():
    """Each rule (u, a, v): word(u)·a is not shortest, word(u)[1:]·a is, and both sides act
    alike; and the rules are all such pairs (a brute force over the Cayley table)."""
    for name in ("dyck-3", "tomita-3", "modular-arithmetic"):
        m = ml.load_language(name).monoid()
        words = [tuple(w) for w in m.word_tokens]
        shortest = set(words)
        want = []
        for u, w in enumerate(words):
            for a in range(m.n_symbols):
                if w + (a,) not in shortest and (not w or w[1:] + (a,) in shortest):
                    want.append((u, a, int(m.right[u, a])))
        assert m.reduced_rules() == want


def test_cayley_graph_nodes_carry_their_labels():
    m = ml.load_language("dyck-2").monoid()
    g = m.to_networkx()
    labels, green = m.labels(), m.green
    for node, data in g.nodes(data=True):
        assert data["word"] == labels[node]
        assert (data["r"], data["l"], data["h"], data["j"]) == (
            green.r[node], green.l[node], green.h[node], green.j[node])
        assert data["idempotent"] == (int(m.multiply(node, node)) == node)
        assert data["output"] == m.automaton.classes[int(m.outputs[node])]
    assert g.nodes[0]["word"] == "ε" and g.graph == {"name": "dyck-2", "side": "right"}
    # the word labels a path from the identity in the graph itself (reference: walk it)
    for node in g.nodes:
        cur = 0
        for letter in m.words[node]:
            cur = next(v for _, v, d in g.out_edges(cur, data=True) if d["letter"] == letter)
        assert cur == node


def test_json_outputs_write_utf8(tmp_path, capsys):
    from monoidlab._util import atomic_write_json, json_text

    atomic_write_json(tmp_path / "a.json", {"w": "ε"})
    assert (tmp_path / "a.json").read_bytes() == '{\n  "w": "ε"\n}'.encode()
    assert json_text(["ε"], indent=None) == '["ε"]'
    spec = tmp_path / "mine.toml"  # a user's own language, its text not ASCII
    spec.write_text((PACKAGE / "suite" / "parity.toml").read_text().replace(
        'name = "parity"', 'name = "parité"').replace('"0"', '"ε"'), encoding="utf-8")
    assert main(["monoid", str(spec), "--json"]) == 0
    out = capsys.readouterr().out
    assert '"name": "parité"' in out and '"ε"' in out and "\\u" not in out
    argv = ["coverage", str(spec), "--train", "1:3", "--test", "9:12", "--exact"]
    assert main([*argv, "--json", "--out", str(tmp_path / "cov")]) == 0
    assert "\\u" not in capsys.readouterr().out
    text = (tmp_path / "cov" / "coverage.json").read_bytes().decode("utf-8")
    assert '"language": "parité"' in text and "\\u" not in text


def test_every_json_dump_in_the_package_writes_utf8():
    """No ``json.dump(s)`` in the package escapes non-ASCII by default: each says
    ``ensure_ascii`` (False in the shared helpers of _util; True only in the fallback for an
    ASCII terminal) or is read straight back (``json.loads(json.dumps(x))``)."""
    bad = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        inner = {id(n.args[0]) for n in ast.walk(tree) if isinstance(n, ast.Call)
                 and getattr(n.func, "attr", None) == "loads" and n.args}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("dump", "dumps")
                    and getattr(node.func.value, "id", None) == "json" and id(node) not in inner
                    and not any(k.arg == "ensure_ascii" for k in node.keywords)):
                bad.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not bad, bad


def test_doctests_of_the_touched_modules():
    import monoidlab.algebra.green
    import monoidlab.algebra.monoid
    import monoidlab.coverage.covering
    import monoidlab.coverage.levels
    import monoidlab.coverage.min_length
    from monoidlab import _suggest, _util
    from monoidlab.algebra import automaton, languages
    from monoidlab.coverage import exact as coverage
    from monoidlab.training import parse

    for mod in (_suggest, _util, automaton, coverage, languages, parse, monoidlab.algebra.green,
                monoidlab.algebra.monoid, monoidlab.coverage.min_length, monoidlab.coverage.covering,
                monoidlab.coverage.levels):
        assert doctest.testmod(mod, optionflags=doctest.ELLIPSIS).failed == 0, mod.__name__
