"""The identity-padding study (monoidlab study identity-padding): the table's core on a tiny
budget, and the committed section "identity padding" regenerated from its ledger.

Two training steps per run and three test lengths, so the runs take seconds; what is checked is
the table, not the models: one row per condition and seed, the predicted support length and the
coverage column equal to :func:`monoidlab.coverage.min_length.min_training_length`, and the
lengths that need uncovered compositions equal to the exact coverage gap of each length.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from monoidlab.evaluation.kinds import KINDS
from monoidlab.studies import identity_padding as mod
from monoidlab.studies.ledger import read_ledger, write_ledger
from monoidlab.studies.runner import read_config, run_study, study_sections

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "configs" / "identity-padding.toml"


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """dyck-6 under three conditions, one seed, two steps, test lengths 42..46: (config, rows,
    the run folders)."""
    import torch

    root = tmp_path_factory.mktemp("identity-padding")
    text = CONFIG.read_text()
    for a, b in (('tasks = ["dyck-4", "dyck-6", "dyck-8", "dyck-12"]', 'tasks = ["dyck-6"]'),
                 ('conditions = ["standard", "offsets", "identity", "both", "support"]',
                  'conditions = ["standard", "identity", "support"]'),
                 ("seeds = [0, 1, 2]", "seeds = [0]"), ("steps = 1200", "steps = 2"),
                 ('test_lengths = "42:500:2"', 'test_lengths = "42:46:2"'),
                 ("test_samples = 32", "test_samples = 4"),
                 ("string_lengths = 20", "string_lengths = 2")):
        assert a in text, a
        text = text.replace(a, b)
    (root / "configs").mkdir()
    cfg = root / "configs" / "tiny.toml"
    cfg.write_text(text)
    config = read_config(mod.STUDY, cfg)
    threads = torch.get_num_threads()
    try:
        ledger = run_study(mod.STUDY, config, echo=None)
    finally:
        torch.set_num_threads(threads)
    return config, mod.rows_of(config, ledger), config.out


def test_rows_and_coverage_column(table):
    import monoidlab as ml
    from monoidlab.coverage.min_length import min_training_length

    config, rows, _ = table
    assert config.ledger == config.root / "docs" / "data" / "identity-padding.jsonl"
    assert [(r["task"], r["condition"], r["seed"]) for r in rows] == [
        ("dyck-6", "standard", 0), ("dyck-6", "identity", 0), ("dyck-6", "support", 0)]
    lang = ml.load_language("dyck-6")
    plain = min_training_length(lang, range(41, 501), within="auto").support_length
    for r in rows:
        padding, offsets = mod.CONDITIONS[r["condition"]]
        expect = min_training_length(lang, range(41, 501), within="auto", padding=padding,
                                     offsets=None if offsets == "none" else offsets)
        assert r["support"] == expect.support_length
        assert r["train_max"] == (plain if r["condition"] == "support" else 40)
        assert r["covered"] == (expect.support_length <= r["train_max"])
        assert r["config"]["model_options"]["padding"] == padding
        assert r["config"]["train_lengths"] == f"1:{r['train_max']}"
        assert set(r["min_accuracy"]) == set(KINDS)
        assert r["scored_lengths"] == [42, 44, 46]
        assert r["hypothesis"] == mod.hypothesis(r)
    # dyck-6: 44 with learned padding, 28 with identity padding (docs/coverage.md)
    assert [r["support"] for r in rows] == [44, 28, 44]
    assert [r["covered"] for r in rows] == [False, True, True]


def test_needing_lengths_are_the_exact_gap(table):
    import monoidlab as ml
    from monoidlab.coverage.exact import compare, exact_coverage

    _, rows, runs = table
    lang = ml.load_language("dyck-6")
    std = rows[0]
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
        # the ledger row keeps the same group (at most DOC_LIST_LIMIT pairs: all of them)
        assert [g for g in std["groups"] if L in g["lengths"]] == group
    for cond in ("identity", "support"):
        assert stored[cond]["covered"] and stored[cond]["groups"] == []
    for r in rows[1:]:
        assert r["needing_lengths"] == [] and r["groups"] == []
    # an untrained model fails there: the per-string check re-scores the evaluation's strings
    assert std["failing_lengths"]
    st = std["strings"]
    assert st["strings"] == len(KINDS) * 4 * len(st["lengths"]) and st["matches_evaluation"]
    ev = json.loads((runs / "dyck-6__standard__s0" / "results.json").read_text())["evaluation"]
    for kind, per in st["accuracy"].items():
        for L, a in per.items():
            assert a == pytest.approx(ev["accuracy"][kind][str(L)], abs=1e-6)


def test_markdown_table(table):
    config, rows, _ = table
    text = study_sections(mod.STUDY, config)["identity padding"]
    assert text == mod.markdown(rows)
    assert "| dyck-6 | standard | 1..40 | 44 | **no** | 0/1 |" in text
    assert "| dyck-6 | identity padding | 1..40 | 28 | yes | 0/1 |" in text
    assert "| dyck-6 | standard at L = support | 1..44 | 44 | yes | 0/1 |" in text
    every = text.split("### Every run", 1)[1].split("###", 1)[0]
    assert sum(line.startswith("| dyck-6 |") for line in every.splitlines()) == 3
    assert "0000111110·ε" in text  # an uncovered (x, ε) composition, listed in full
    assert "summed over the runs" in text.splitlines()[2]  # no session row: the runs' times


def test_a_recorded_run_is_not_trained_again_and_a_lost_row_comes_from_its_folder(table):
    config, rows, runs = table
    assert mod.plan(config, read_ledger(config.ledger)) == []  # every run recorded
    before = (runs / "dyck-6__identity__s0" / "results.json").stat().st_mtime_ns
    ledger = read_ledger(config.ledger)
    lost = ledger.pop("dyck-6__identity__s0")
    write_ledger(config.ledger, ledger)
    again = run_study(mod.STUDY, config, echo=None)["dyck-6__identity__s0"]
    assert (runs / "dyck-6__identity__s0" / "results.json").stat().st_mtime_ns == before
    assert again["reused"] and {**again, "reused": False} == {**lost, "reused": False}


def test_hypothesis_verdicts():
    def row(covered, solved, failing, needing):
        return {"covered": covered, "solved": solved, "failing_lengths": failing,
                "needing_lengths": needing, "scored_lengths": [42, 44, 46]}

    assert mod.hypothesis(row(True, True, [], [])) == "yes"
    assert mod.hypothesis(row(True, False, [42], [])).startswith("no: fails at 1")
    assert mod.hypothesis(row(False, True, [], [42])).startswith("no: solved")
    assert mod.hypothesis(row(False, False, [42, 44], [42, 44])) == "yes"
    assert mod.hypothesis(row(False, False, [42], [42, 44])).startswith("partly")
    assert mod.hypothesis(row(False, False, [42, 50], [42, 44])).startswith("no: fails at 1 ")
    assert mod.hypothesis(row(False, False, [42, 44, 46], [42, 44, 46])) == mod.VACUOUS


# ------------------------------------------------------------------------------ the committed table
def _committed(name: str) -> str:
    doc = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    m = re.search(re.escape(f"<!-- begin {name} -->") + r"\n(.*?)\n"
                  + re.escape(f"<!-- end {name} -->"), doc, re.S)
    assert m, f"docs/results.md has no section {name!r}"
    return m.group(1)


def test_the_committed_identity_padding_table_regenerates_identically_from_its_ledger():
    config = read_config(mod.STUDY, CONFIG)
    ledger = read_ledger(config.ledger)
    assert len(ledger) == 61 and mod.SESSION in ledger  # 60 runs and the session's facts
    assert mod.plan(config, ledger) == []  # nothing to train: no coverage analysis either
    made = study_sections(mod.STUDY, config)
    assert list(made) == ["identity padding"]
    assert made["identity padding"].rstrip() == _committed("identity padding"), (
        "docs/results.md section 'identity padding' is not what its ledger gives: run "
        "`monoidlab study identity-padding --write-docs`")


def test_a_changed_ledger_row_changes_the_identity_padding_table(tmp_path):
    """The comparison above can fail: one recorded row changed, the table moves."""
    from dataclasses import replace

    config = read_config(mod.STUDY, CONFIG)
    rows = read_ledger(config.ledger)
    key = "dyck-6__identity__s1"
    changed = tmp_path / "identity-padding.jsonl"
    write_ledger(changed, {**rows, key: {**rows[key], "train_s": 999}})
    text = study_sections(mod.STUDY, replace(config, ledger=changed))["identity padding"]
    assert text.rstrip() != _committed("identity padding")
    assert "| dyck-6 | identity padding | 1 | no |" in text and "| 1200 (—) | 999 |" in text
