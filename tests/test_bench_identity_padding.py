"""bench/bench_identity_padding.py: the table's core on a tiny budget.

Two training steps per run and three test lengths, so the runs take seconds; what is checked is
the table, not the models: one row per condition and seed, the predicted support length and the
coverage column equal to :func:`monoidlab.coverage.min_length.min_training_length`, and the lengths that
need uncovered compositions equal to the exact coverage gap of each length.
"""

from __future__ import annotations

import json

import pytest


@pytest.fixture(scope="module")
def bench(bench_script):
    return bench_script("bench_identity_padding")


@pytest.fixture(scope="module")
def table(bench, tmp_path_factory):
    runs = tmp_path_factory.mktemp("identity-padding")
    res = bench.run_table(["dyck-6"], [0], steps=2, runs=runs, workers=1,
                          conditions=["standard", "identity", "support"], string_lengths=2,
                          test_lengths="42:46:2", test_samples=4)
    return res, runs


def test_rows_and_coverage_column(bench, table):
    import monoidlab as ml
    from monoidlab.coverage.min_length import min_training_length

    res, _ = table
    rows = res["rows"]
    assert [(r["task"], r["condition"], r["seed"]) for r in rows] == [
        ("dyck-6", "standard", 0), ("dyck-6", "identity", 0), ("dyck-6", "support", 0)]
    lang = ml.load_language("dyck-6")
    plain = min_training_length(lang, range(41, 501), within="auto").support_length
    for r in rows:
        padding, offsets = bench.CONDITIONS[r["condition"]]
        expect = min_training_length(lang, range(41, 501), within="auto", padding=padding,
                                     offsets=None if offsets == "none" else offsets)
        assert r["support"] == expect.support_length
        assert r["train_max"] == (plain if r["condition"] == "support" else 40)
        assert r["covered"] == (expect.support_length <= r["train_max"])
        assert r["config"]["model_options"]["padding"] == padding
        assert r["config"]["train_lengths"] == f"1:{r['train_max']}"
        assert set(r["min_accuracy"]) == {"paper", "near_miss", "ec_stratified"}
        assert r["scored_lengths"] == [42, 44, 46]
        assert r["hypothesis"] == bench.hypothesis(r)
    # dyck-6: 44 with learned padding, 28 with identity padding (docs/coverage.md)
    assert [r["support"] for r in rows] == [44, 28, 44]
    assert [r["covered"] for r in rows] == [False, True, True]


def test_needing_lengths_are_the_exact_gap(table):
    import monoidlab as ml
    from monoidlab.coverage.exact import compare, exact_coverage

    res, runs = table
    lang = ml.load_language("dyck-6")
    std = res["rows"][0]
    train = exact_coverage(lang, range(1, 41), within="auto")
    stored = {c["condition"]: c for c in json.loads((runs / "coverage.json").read_text())}
    for L in (42, 44, 46):
        gap = compare(train, exact_coverage(lang, [L], within="auto"))
        words = sorted([m["left_word"], m["right_word"]] for m in gap.missing_list())
        assert words  # each of these lengths needs some (x, ε) that 1..40 never shows
        assert L in std["needing_lengths"]
        group = [g for g in stored["standard"]["groups"] if L in g["lengths"]]
        assert len(group) == 1 and group[0]["complete"]
        assert sorted(group[0]["pairs"]) == words
        assert stored["standard"]["needing"][str(L)] == len(words)
    for cond in ("identity", "support"):
        assert stored[cond]["covered"] and stored[cond]["groups"] == []
    for r in res["rows"][1:]:
        assert r["needing_lengths"] == []
    # an untrained model fails there: the per-string check re-scores the evaluation's strings
    assert std["failing_lengths"]
    st = std["strings"]
    assert st["strings"] == 3 * 4 * len(st["lengths"]) and st["matches_evaluation"]
    ev = json.loads((runs / "dyck-6__standard__s0" / "results.json").read_text())["evaluation"]
    for kind, per in st["accuracy"].items():
        for L, a in per.items():
            assert a == pytest.approx(ev["accuracy"][kind][str(L)], abs=1e-6)

def test_markdown_table(bench, table):
    res, _ = table
    text = bench.markdown(res, "python bench/bench_identity_padding.py --tiny")
    assert "| dyck-6 | standard | 1..40 | 44 | **no** | 0/1 |" in text
    assert "| dyck-6 | identity padding | 1..40 | 28 | yes | 0/1 |" in text
    assert "| dyck-6 | standard at L = support | 1..44 | 44 | yes | 0/1 |" in text
    every = text.split("### Every run", 1)[1].split("###", 1)[0]
    assert sum(line.startswith("| dyck-6 |") for line in every.splitlines()) == 3
    assert "0000111110·ε" in text  # an uncovered (x, ε) composition, listed in full


def test_hypothesis_verdicts(bench):
    def row(covered, solved, failing, needing):
        return {"covered": covered, "solved": solved, "failing_lengths": failing,
                "needing_lengths": needing, "scored_lengths": [42, 44, 46]}

    assert bench.hypothesis(row(True, True, [], [])) == "yes"
    assert bench.hypothesis(row(True, False, [42], [])).startswith("no: fails at 1")
    assert bench.hypothesis(row(False, True, [], [42])).startswith("no: solved")
    assert bench.hypothesis(row(False, False, [42, 44], [42, 44])) == "yes"
    assert bench.hypothesis(row(False, False, [42], [42, 44])).startswith("partly")
    assert bench.hypothesis(row(False, False, [42, 50], [42, 44])).startswith("no: fails at 1 ")
    assert bench.hypothesis(row(False, False, [42, 44, 46], [42, 44, 46])) == bench.VACUOUS
