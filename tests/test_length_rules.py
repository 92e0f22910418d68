"""The recommended training length (monoidlab.coverage.length_rules): the rule is chosen on the fit
languages only, scored apart on the held-out ones, read back from the committed rules file
(which must equal what the committed ledger gives), and reaches min_training_length, the
command line and the report."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

import monoidlab as ml
from monoidlab.cli import main as cli_main
from monoidlab.coverage.length_rules import (
    RULES,
    fit_rules,
    load_rules,
    measured_models,
    recommend,
    rules_file,
)
from monoidlab.errors import InputError
from monoidlab.studies import get_study, read_config, threshold
from monoidlab.studies.ledger import read_ledger

ROOT = Path(__file__).resolve().parent.parent


def _row(lang, s, solved, sampler="near_miss"):
    return {"language": lang, "sampler": sampler, "s": s, "solved_lengths": solved}


def test_the_rule_with_most_hits_on_the_fit_languages_wins_ties_to_the_shorter():
    rows = [_row("a", 4, [6, 8]), _row("b", 2, [4]), _row("c", 3, [3, 40]),
            _row("h", 5, [5])]  # h is held out: it must not change the choice
    fitted = fit_rules(rows, ["a", "b", "c"])["near_miss"]
    # s: c | s+1: none | s+2: a, b | 2s: a, b  -> s+2 and 2s tie at 2 hits; s+2 is shorter
    assert {r: c["fit_hits"] for r, c in fitted["candidates"].items()} == {
        "s": 1, "s+1": 0, "s+2": 2, "2s": 2, "3s": 0}
    assert fitted["rule"] == "s+2"
    assert fitted["fit"] == {"hits": 2, "of": 3, "languages": ["a", "b", "c"]}
    assert fitted["held_out"] == {"hits": 0, "of": 1, "languages": ["h"]}
    assert fitted["candidates"]["s"]["held_out_hits"] == 1
    # a held-out language that favours another rule does not move the choice
    more = rows + [_row(f"h{i}", 2, [2]) for i in range(5)]
    assert fit_rules(more, ["a", "b", "c"])["near_miss"]["rule"] == "s+2"


def test_a_length_solved_beyond_the_rule_is_not_a_hit():
    # solved at 40 only: being solved is measured at the rule's length, not inferred from L*
    fitted = fit_rules([_row("a", 4, [40])], ["a"])["near_miss"]
    assert all(c["fit_hits"] == 0 for c in fitted["candidates"].values())
    assert fitted["rule"] == "s"  # all tie at 0: the shortest


def test_samplers_are_fitted_apart_and_unknown_rules_are_refused():
    rows = [_row("a", 4, [4]), _row("a", 4, [8], sampler="covering")]
    fitted = fit_rules(rows, ["a"])
    assert fitted["near_miss"]["rule"] == "s" and fitted["covering"]["rule"] == "2s"
    with pytest.raises(InputError, match=r"unknown \['4s'\]"):
        fit_rules(rows, ["a"], ["s", "4s"])


def test_recommend_applies_the_rule_or_says_why_not():
    data = {"samples": 256000, "samplers": fit_rules([_row("a", 4, [6])], ["a"])}
    rec = recommend(7, "near_miss", rules=data)
    assert (rec.length, rec.rule, rec.samples) == (9, "s+2", 256000)
    assert "1 of 1" in rec.basis and "held out: none finished yet" in rec.basis
    assert "256,000 training strings" in rec.basis
    for kw, why in (({"padding": "learned"}, "identity padding"),
                    ({"offsets": True}, "no offsets"), ({"train_min": 3}, "lengths from 1")):
        r = recommend(7, "near_miss", rules=data, **kw)
        assert r.length is None and why in r.basis
    r = recommend(7, "balanced", rules=data)
    assert r.length is None and "no fitted rule for the balanced sampler" in r.basis
    assert "fitted: near_miss" in r.basis
    assert recommend(None, "near_miss", rules=data).length is None


def test_a_broken_rules_file_names_itself(tmp_path):
    bad = tmp_path / "rules.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match="rules.json: not valid JSON"):
        load_rules(bad)
    bad.write_text("[]")
    with pytest.raises(InputError, match="'samplers' table"):
        load_rules(bad)
    assert load_rules(tmp_path / "absent.json") == {}


@pytest.mark.parametrize("name, model", [("threshold-study", "mlp-ldru"),
                                         ("threshold-exact-transform", "transform-tree")])
def test_the_committed_rules_file_is_what_the_committed_ledger_gives(name, model):
    """Not hand-written: refit from the study's committed ledger and its config, one file per
    model family."""
    config = read_config(get_study("threshold"), ROOT / "configs" / f"{name}.toml")
    data = tomllib.loads((ROOT / "configs" / f"{name}.toml").read_text())
    assert config.data == data
    study, rec = data["study"], data["recommend"]
    assert config.ledger.resolve() == (ROOT / study["ledger"]).resolve()
    assert data["base"].get("model", "mlp-ldru") == model
    path = rules_file(model)
    if "rules_file" in study:
        assert (ROOT / study["rules_file"]).resolve() == path.resolve()
    ledger = read_ledger(config.ledger)
    committed = json.loads(path.read_text())
    assert committed["model"] == model
    assert committed["model_options"] == data["base"].get("model_options", {})
    assert committed["fit_languages"] == rec["fit_languages"]
    assert committed["samples"] == data["base"]["steps"] * data["base"]["batch_size"]
    assert committed["samplers"] == fit_rules(threshold.rule_rows(ledger, study),
                                              rec["fit_languages"], rec["rules"],
                                              rec.get("baseline"))
    assert set(committed["samplers"]) == set(study["samplers"])


def test_rule_rows_count_only_finished_languages_and_two_of_three_seeds():
    study = {"languages": ["x"], "offsets_from_support": [0], "multiples_of_support": [2],
             "also": [], "seeds": [0, 1, 2], "samplers": ["near_miss"]}

    def r(L, seed, ok):
        return {"id": f"x{L}{seed}", "language": "x", "sampler": "near_miss", "s": 3,
                "max_length": L, "seed": seed, "status": "done", "solved": ok}

    rows = {x["id"]: x for x in [r(3, 0, True), r(3, 1, True), r(3, 2, False),
                                 r(6, 0, True), r(6, 1, False)]}
    assert threshold.rule_rows(rows, study) == []  # L 6 seed 2 missing: not finished
    rows["x62"] = r(6, 2, False)
    assert threshold.rule_rows(rows, study) == [
        {"language": "x", "sampler": "near_miss", "s": 3, "solved_lengths": [3]}]
    # a language whose every run was refused (its tables would not fit) trained nothing: it is
    # no miss of any rule, and it is left out (a partly refused one stays)
    for x in [r(3, 0, False), r(3, 1, False), r(3, 2, False), r(6, 0, False), r(6, 1, False),
              r(6, 2, False)]:
        rows["y" + x["id"]] = {**x, "id": "y" + x["id"], "language": "y", "status": "refused",
                               "solved": None}
    study["languages"] = ["x", "y"]
    assert [x["language"] for x in threshold.rule_rows(rows, study)] == ["x"]
    rows["yx30"]["status"] = "done"
    assert [x["language"] for x in threshold.rule_rows(rows, study)] == ["x", "y"]


def _expected(rules: dict, sampler: str, s: int) -> tuple[int | None, str]:
    """What the committed rules file says for support length s: the rule's length when the
    rule hits at least as often as the baseline (or there is none), else the baseline's."""
    e = rules["samplers"][sampler]
    b = e.get("baseline")
    rule_hits = e["fit"]["hits"] + e["held_out"]["hits"]
    if b is None or rule_hits >= b["fit_hits"] + b["held_out_hits"]:
        return RULES[e["rule"]](s), f"rule L = {e['rule']}"
    return (b["length"] if s <= b["length"] else None), f"did as well as L = {b['length']}"


def test_min_training_length_carries_the_recommendation_for_the_named_sampler():
    rules = load_rules()
    for lang in ("tomita-5", "dyck-2"):
        for sampler in ("near_miss", "covering"):
            res = ml.min_training_length(lang, range(41, 501), padding="identity",
                                         sampler=sampler)
            length, words = _expected(rules, sampler, res.support_length)
            assert res.recommended_length == length
            assert res.recommended_samples == rules["samples"]
            assert words in res.recommendation
            assert f"recommended length {res.recommended_length} for {sampler}" in repr(res)
    learned = ml.min_training_length("tomita-5", range(41, 501), sampler="covering")
    assert learned.recommended_length is None and "identity padding" in learned.recommendation
    with pytest.raises(InputError, match="sample-size estimates need an exact string law"):
        ml.min_training_length("parity", [64], sampler="near_miss", delta=0.01,
                               sample_ranges=[range(1, 5)])
    with pytest.raises(ml.errors.UnknownName, match="unknown sampler 'nearmiss'"):
        ml.min_training_length("parity", [64], sampler="nearmiss")


def test_a_rule_stands_only_where_it_does_as_well_as_the_baseline():
    rows = [_row("a", 4, [6, 40]), _row("b", 2, [4, 40]), _row("h", 3, [40])]
    data = {"samples": 1000, "samplers": fit_rules(rows, ["a", "b"], ["s", "s+2"],
                                                   baseline=40)}
    e = data["samplers"]["near_miss"]
    assert e["rule"] == "s+2" and e["baseline"] == {"length": 40, "fit_hits": 2,
                                                    "held_out_hits": 1}
    # s+2 hits 2 of 3 languages, 40 hits 3 of 3: the baseline's length, s only a lower bound
    rec = recommend(5, "near_miss", rules=data)
    assert (rec.length, rec.rule) == (40, "40")
    assert "rule L = s+2: 2 of 3" in rec.basis and "L = 40: 3 of 3" in rec.basis
    assert "s = 5 is a lower bound" in rec.basis
    # s beyond the baseline: the study measured nothing there
    far = recommend(56, "near_miss", rules=data)
    assert far.length is None and "s is above 40" in far.basis
    # where the rule does as well as the baseline, the rule's length, the baseline beside it
    tie = {"samples": 1000, "samplers": fit_rules(rows[:2], ["a", "b"], ["s", "s+2"],
                                                  baseline=40)}
    tie["samplers"]["near_miss"]["baseline"]["fit_hits"] = 2
    rec = recommend(5, "near_miss", rules=tie)
    assert (rec.length, rec.rule) == (7, "s+2") and "L = 40, which ignores s: 2 of 2" in rec.basis


def test_the_min_length_command_prints_the_recommendation_with_the_sampler(capsys):
    rules = load_rules()
    assert cli_main(["min-length", "tomita-5", "--padding", "identity",
                     "--sampler", "covering", "--model", "mlp-ldru"]) in (0, None)
    out = capsys.readouterr().out
    assert "recommended length for covering strings and model mlp-ldru" in out
    length, words = _expected(rules, "covering", 4)
    assert "recommendation: " in out and words in out
    line = next(x for x in out.splitlines() if x.startswith("tomita-5"))
    assert line.split()[-1] == str(length)
    assert cli_main(["min-length", "parity", "--sampler", "near_miss", "--delta", "0.01",
                     "--sample-lengths", "1:4"]) not in (0, None)
    assert "--sampler near_miss: the sample-size estimate" in capsys.readouterr().err


def test_level_text_splits_runs_at_or_above_s_by_per_level_coverage():
    def r(i, L, unseen, ok):
        return {"id": str(i), "status": "done", "s": 4, "max_length": L, "sampler": "near_miss",
                "solved": ok, "coverage": {"sampled": [{"level": 1, "below_k": unseen},
                                                       {"level": "any", "below_k": 9}]}}

    rows = {x["id"]: x for x in [r(0, 4, 0, True), r(1, 5, 0, False), r(2, 8, 2, False),
                                 r(3, 3, 0, True)]}  # 3: below s, left out
    text = threshold.level_text(rows)
    assert "| near_miss | every needed composition seen at every level | 2 | 1 (50%) |" in text
    assert "| near_miss | some unseen at a level | 1 | 0 (0%) |" in text


def test_each_model_family_gets_its_own_rule_or_none(capsys):
    """The transformation tree's study fitted its own rule (its file); a family no study
    measured gets no length (the plain model's rule is not borrowed), and says which have one;
    min_training_length, the command line and the report carry the family."""
    from monoidlab.report.sections import _recommendation
    from monoidlab.report.summary import summary_box

    tt = load_rules(rules_file("transform-tree"))
    assert tt["model"] == "transform-tree" and measured_models()[:1] == ["mlp-ldru"]
    assert "transform-tree" in measured_models()
    rule = tt["samplers"]["near_miss"]["rule"]
    rec = recommend(8, "near_miss", model="transform-tree")
    assert (rec.length, rec.rule, rec.model) == (RULES[rule](8), rule, "transform-tree")
    assert "model transform-tree (" in rec.basis and "state_factor 2" in rec.basis
    plain = recommend(8, "near_miss")
    assert plain.model == "mlp-ldru" and "model mlp-ldru" in plain.basis
    none = recommend(8, "near_miss", model="lstm")
    assert none.length is None and none.model == "lstm"
    assert "no threshold study has fitted a rule for model lstm" in none.basis
    assert "mlp-ldru, transform-tree" in none.basis
    for bad in ("../x", "", 3):
        with pytest.raises(InputError, match="a model name"):
            recommend(8, "near_miss", model=bad)
    r = ml.min_training_length("parity", [64], sampler="near_miss", padding="identity",
                               model="transform-tree")
    assert (r.model, r.recommended_length) == ("transform-tree", RULES[rule](2))
    assert "(transform-tree)" in repr(r)
    assert cli_main(["min-length", "parity", "--model", "transform-tree", "--sampler",
                     "near_miss", "--padding", "identity", "--json"]) in (0, None)
    row = json.loads(capsys.readouterr().out)
    assert row["model"] == "transform-tree" and row["recommended_length"] == RULES[rule](2)
    key = _recommendation(8, "near_miss", "identity", 0, 1, "transform-tree")
    assert key["model"] == "transform-tree" and key["length"] == RULES[rule](8)
    box = summary_box({"language": "dyck-2", "monoid_size": 15, "recommendation": key})
    assert "model transform-tree, near_miss sampler" in box


@pytest.mark.parametrize("model, sampler, padding, recipe", [
    ("transform-tree", "near_miss", "identity", "languages"),
    ("mlp-ldru-snap", "near_miss", "identity", "languages"),
    ("lstm", None, None, None),
])
def test_min_length_assumes_the_layout_of_the_models_own_recipe(capsys, model, sampler,
                                                                 padding, recipe):
    """Unset, ``--padding`` and ``--sampler`` are those of the recipe ``monoidlab train
    --language L --model M`` uses (the model's own recipe 'languages' of the registry), and the
    recipe line names it; the MLP-LDRU's frozen covering recipe is not assumed for another
    model. A model without such a recipe keeps its defaults and is told so."""
    assert cli_main(["min-length", "tomita-5", "--model", model, "--json"]) in (0, None)
    row = json.loads(capsys.readouterr().out)
    assert row["recipe"] == recipe and row["recipe_refusal"] is None
    if recipe is None:
        assert row["layout_from"] == {"padding": f"model {model}'s defaults",
                                      "sampler": f"model {model}'s defaults"}
        return
    assert (row["sampler"], row["padding"]) == (sampler, padding)
    from monoidlab.recipes import default_model, recipe_advice

    # the benchmark's frozen choice names its frozen recipe; another model its own recipe
    frozen = recipe_advice(model=model)["frozen"] if model == default_model() else None
    whose = (f"the training recipe's ('languages', {frozen})" if frozen else
             f"model {model}'s recipe 'languages'")
    assert row["layout_from"] == {"padding": whose, "sampler": whose}
    assert cli_main(["min-length", "tomita-5", "--model", model]) in (0, None)
    text = capsys.readouterr().out
    assert (f"training recipe: model {model}, recipe 'languages' (the benchmark's {frozen!r}"
            if frozen else
            f"training recipe: model {model}'s own recipe 'languages' ({sampler} strings") in text
    assert "covering" not in text.splitlines()[0]
