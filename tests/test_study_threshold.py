"""monoidlab.studies.threshold on tiny budgets: the ledger, resuming, L*, the tables (the study
that was bench/bench_threshold.py, run as ``monoidlab study threshold``)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

import monoidlab.studies.threshold as mod
from monoidlab.cli import main as cli_main
from monoidlab.errors import ConfigError
from monoidlab.evaluation.kinds import KINDS
from monoidlab.studies import get_study, read_config, run_study, study_sections
from monoidlab.studies.ledger import read_ledger

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ROOT = Path(__file__).resolve().parent.parent


#: the study's 16 languages, and the five its rules are fitted on: a tiny study tabulates
#: these five (each language's support lengths cost a second of exact coverage at 41..500)
STUDY_LANGUAGES = '''languages = ["parity", "tomita-5", "tomita-6", "prefix-1-2", "dyck-2", "tomita-4",
             "even-pairs", "cycle-navigation", "tomita-7", "prefix-2-2", "prefix-1-4", "dyck-3",
             "tomita-3", "prefix-2-4", "prefix-4-2", "prefix-4-4"]'''
FIT_LANGUAGES = 'languages = ["parity", "tomita-5", "tomita-6", "prefix-1-2", "dyck-2"]'


def _tiny_threshold_config(tmp_path: Path, support: bool = True) -> Path:
    """The study's config on a tiny budget, its ledger in ``tmp_path``; with ``support``, the
    committed support lengths beside it (the plan then reads s instead of computing it)."""
    if support:
        shutil.copy(ROOT / "docs" / "data" / "threshold-study.support.json",
                    tmp_path / "ledger.support.json")
    text = (ROOT / "configs" / "threshold-study.toml").read_text()
    for a, b in ((STUDY_LANGUAGES, FIT_LANGUAGES), ("steps = 4000", "steps = 12"),
                 ('test_lengths = "41:500"', 'test_lengths = "41:42"'),
                 ("test_samples = 32", "test_samples = 4"), ("seeds = [0, 1, 2]", "seeds = [0]"),
                 ('ledger = "docs/data/threshold-study.jsonl"',
                  f'ledger = "{(tmp_path / "ledger.jsonl").as_posix()}"'),
                 ('out = "runs/threshold-study"', f'out = "{(tmp_path / "runs").as_posix()}"'),
                 ("offsets_from_support = [-2, -1, 0, 1, 2]", "offsets_from_support = [0]"),
                 ("also = [40]", "also = [5]")):
        assert a in text, a
        text = text.replace(a, b)
    path = tmp_path / "study.toml"
    path.write_text(text)
    return path


def test_the_plan_records_support_lengths_beside_the_ledger_and_reads_them_back(tmp_path):
    study = get_study("threshold")
    config = read_config(study, _tiny_threshold_config(tmp_path, support=False))
    side = tmp_path / "ledger.support.json"
    assert mod.support_file(config) == side and not side.exists()
    runs = mod._plan(config, {}, "parity")
    assert json.loads(side.read_text()) == {"parity": mod.support_lengths("parity")}
    assert {r["max_length"] for r in runs} == {2, 4, 5}  # s = 2: {s, 2s, 5}
    # what the file says is what the plan and the tables use
    side.write_text(json.dumps({"parity": {**mod.support_lengths("parity"), "s_identity": 3}}))
    assert {r["max_length"] for r in mod._plan(config, {}, "parity")} == {3, 5, 6}
    side.write_text("{not json")
    with pytest.raises(ConfigError, match="ledger.support.json: not a support-length file"):
        mod.support_infos(config)


@pytest.mark.parametrize("config", ["threshold-study", "threshold-exact-transform",
                                    "threshold-exact-snap"])
def test_committed_support_lengths_equal_a_fresh_computation(config):
    """The recorded s of the cheap languages (a second each) against the function itself."""
    recorded = json.loads((ROOT / "docs" / "data" / f"{config}.support.json").read_text())
    assert len(recorded) == 16
    for name in ("parity", "tomita-5", "dyck-2"):
        assert recorded[name] == mod.support_lengths(name), name


def test_threshold_study_runs_once_resumes_from_its_ledger_and_tabulates(
        tmp_path, capsys, monkeypatch):
    cfg = _tiny_threshold_config(tmp_path)
    assert cli_main(["study", "threshold", "--config", str(cfg), "--languages", "parity"]) == 0
    ledger = read_ledger(tmp_path / "ledger.jsonl")
    # parity: s = 2, lengths {s, 2s, 5} = {2, 4, 5}, one seed, two samplers
    assert sorted(ledger) == sorted(f"parity__L{L}__{s}__s0" for L in (2, 4, 5)
                                    for s in ("near_miss", "covering"))
    row = ledger["parity__L4__covering__s0"]
    assert row["status"] == "done" and row["s"] == 2 and row["coverage"]["uncovered"] == 0
    assert row["coverage"]["sampled"][-1]["level"] == "any"
    assert set(row["baselines"]) == set(KINDS)
    assert row["solved"] == (row["solved_own"] and all(f["solved"] for f in row["fresh"]))
    # a second call trains nothing: every run is in the ledger
    monkeypatch.setattr(mod, "STUDY", dataclasses.replace(
        mod.STUDY, run=lambda *a, **k: pytest.fail("trained again")))
    capsys.readouterr()
    assert cli_main(["study", "threshold", "--config", str(cfg), "--languages", "parity"]) == 0
    assert "0 runs to do (6 in the ledger)" in capsys.readouterr().out
    assert cli_main(["study", "threshold", "--config", str(cfg), "--table"]) == 0
    out = capsys.readouterr().out
    assert "| parity | 2 | 2 / 2 | 2 |" in out and "| covering |" in out


def test_a_sampler_whose_tables_do_not_fit_is_a_refused_run_not_a_crash(tmp_path):
    """prefix-4-4's near misses would need 58 GiB of tables: both samplers (covering draws
    near misses beside its own strings) refuse, each run is recorded as refused, and the
    study goes on."""
    study = get_study("threshold")
    cfg = _tiny_threshold_config(tmp_path)
    ledger = run_study(study, read_config(study, cfg), echo=None, languages="prefix-4-4")
    assert ledger == read_ledger(tmp_path / "ledger.jsonl")
    assert ledger and all(r["status"] == "refused" for r in ledger.values())
    assert any("GiB" in r["message"] for r in ledger.values())


def test_l_star_needs_two_of_three_seeds_at_one_length():
    rows = [{"max_length": L, "solved": ok} for L, ok in
            [(4, True), (4, False), (4, False), (6, True), (6, True), (6, False), (8, True)]]
    assert mod.l_star(rows) == 6
    assert mod.l_star([{"max_length": 4, "solved": False}]) is None


def test_the_summary_sorts_each_finished_language_by_l_star_against_s():
    study = {"languages": ["a", "b", "c", "d", "e"], "offsets_from_support": [-1, 0],
             "multiples_of_support": [2], "also": [], "seeds": [0, 1, 2],
             "samplers": ["near_miss", "covering"]}

    def runs(lang, s, sampler, solved_at, n_seeds=3):  # solved_at: {L: seeds solved}
        return [{"id": f"{lang}{L}{sampler}{k}", "language": lang, "sampler": sampler, "s": s,
                 "max_length": L, "seed": k, "status": "done",
                 "solved": k < solved_at.get(L, 0), "wall_s": 3600.0, "cpu_s": 1800.0}
                for L in (s - 1, s, 2 * s) for k in range(n_seeds)]

    rows = (runs("a", 3, "near_miss", {3: 2}) + runs("a", 3, "covering", {3: 3})
            + runs("b", 2, "near_miss", {4: 2}) + runs("b", 2, "covering", {})
            + runs("c", 4, "near_miss", {4: 1, 8: 1})  # never: one seed each
            + runs("d", 5, "near_miss", {5: 3}, n_seeds=2)  # unfinished: left out
            + runs("e", 3, "near_miss", {2: 2, 3: 3}))  # solved below s
    text = mod.summary_text({r["id"]: r for r in rows}, study)
    assert "| near_miss | 4 | 1: a | 1: b (+2) | 1: e (−1) | 1: c |" in text
    assert "| covering | 2 | 1: a | 0: – | 0: – | 1: b |" in text
    assert "Covering at s is enough (2 of 3 seeds solved at L = s with the covering sampler) " \
           "for: a." in text
    assert f"{len(rows)} runs finished: {len(rows):.1f} h wall, {len(rows) / 2:.1f} h CPU" \
        in text


def test_the_rules_table_puts_a_length_that_ignores_s_beside_the_rules():
    from monoidlab.coverage.length_rules import fit_rules

    rows = [{"language": "a", "sampler": "near_miss", "s": 4, "solved_lengths": [4, 40]},
            {"language": "b", "sampler": "near_miss", "s": 2, "solved_lengths": [40]},
            {"language": "h", "sampler": "near_miss", "s": 3, "solved_lengths": [40]}]
    fitted = fit_rules(rows, ["a", "b"], ["s", "2s"], baseline=40)
    text = mod.rules_text(fitted, {"fit_languages": ["a", "b"]})
    assert "| near_miss | L = s | 1 / 2 | 0 / 1 | yes |" in text
    assert "| near_miss | L = 40 (baseline: no s) | 2 / 2 | 1 / 1 | |" in text
    assert ("the chosen rule L = s hits 1 of 3, fewer than L = 40, which ignores s (3 of 3): "
            "the tool recommends 40 where s <= 40") in text
    rows[2]["solved_lengths"] = [3]  # the held-out language now solved at s, not at 40
    fitted = fit_rules(rows, ["a", "b"], ["s", "2s"], baseline=40)
    assert ("L = s hits 2 of 3, at least as many as L = 40 (2 of 3): the tool recommends L = s"
            in mod.rules_text(fitted, {"fit_languages": ["a", "b"]}))
    assert "baseline" not in mod.rules_text(fit_rules(rows, ["a", "b"], ["s", "2s"]),
                                            {"fit_languages": ["a", "b"]})


def test_the_coverage_by_length_table_shows_the_worst_seed_per_level():

    def row(seed, solved, level2, unseen):
        return {"id": f"p__L5__near_miss__s{seed}", "language": "p", "sampler": "near_miss",
                "max_length": 5, "status": "done", "solved": solved, "s": 4, "coverage": {
                    "sampled": [{"level": 1, "min_count": 50 + seed, "below_k": 0},
                                {"level": 2, "min_count": level2, "below_k": unseen},
                                {"level": "any", "min_count": 40 + seed, "below_k": 0}]}}

    ledger = {str(i): r for i, r in enumerate([row(0, True, 7, 0), row(1, False, 0, 3),
                                               row(2, True, 9, 0)])}
    text = mod.coverage_by_length_text(ledger, {"languages": ["p"], "samplers": ["near_miss"]})
    assert text.splitlines()[-1] == \
        "| p | near_miss | 5 (s+1) | 2 / 3 | 40 (0) | 1: 50 (0) 2: 0 (3) |"


def test_the_threshold_studys_doctests(function_doctests):
    assert function_doctests(mod, mod.at_baseline_text, mod.coverage_by_length_text,
                             mod.certificate_text) == (0, 8)


def test_the_depth_exact_study_certifies_every_run_and_plans_3s(tmp_path):
    """configs/threshold-exact-snap.toml on a tiny budget: the snapped model trains, every
    ledger row holds its certificate, the grid has 3s, the table shows the certificates, and
    --write-docs would write its own section and rules file (not the plain study's)."""
    import tomllib

    text = (ROOT / "configs" / "threshold-exact-snap.toml").read_text()
    study = tomllib.loads(text)["study"]
    assert study["multiples_of_support"] == [2, 3] and study["section"] != "threshold study"
    assert study["rules_file"] != "monoidlab/data/length-rules.json"
    for a, b in ((STUDY_LANGUAGES, FIT_LANGUAGES), ("steps = 4000", "steps = 12"),
                 ('test_lengths = "41:500"', 'test_lengths = "41:42"'),
                 ("test_samples = 32", "test_samples = 4"), ("seeds = [0, 1, 2]", "seeds = [0]"),
                 ('ledger = "docs/data/threshold-exact-snap.jsonl"',
                  f'ledger = "{(tmp_path / "ledger.jsonl").as_posix()}"'),
                 ('out = "runs/threshold-exact-snap"', f'out = "{(tmp_path / "runs").as_posix()}"'),
                 ("offsets_from_support = [-2, -1, 0, 1, 2]", "offsets_from_support = [0]"),
                 ("multiples_of_support = [2, 3]", "multiples_of_support = [3]"),
                 ("also = [40]", "also = []"), ('samplers = ["near_miss", "covering"]',
                                               'samplers = ["covering"]')):
        assert a in text, a
        text = text.replace(a, b)
    cfg = tmp_path / "study.toml"
    cfg.write_text(text)
    threshold = get_study("threshold")
    config = read_config(threshold, cfg)
    assert config.root == tmp_path and config.ledger == tmp_path / "ledger.jsonl"
    run_study(threshold, config, echo=None, languages="parity")
    ledger = read_ledger(tmp_path / "ledger.jsonl")
    assert sorted(ledger) == ["parity__L2__covering__s0", "parity__L6__covering__s0"]
    for row in ledger.values():
        cert = row["certificate"]
        assert cert["verdict"].startswith("certificate of mlp-ldru-snap")
        assert cert["correct"] or cert["length"] >= 1
    sections = study_sections(threshold, config)
    assert list(sections) == [study["section"]]  # its own section, not "threshold study"
    assert "### Certificates (correct at every length)" in sections[study["section"]]
    # and its rules file, in the study's repository (here: the config's folder)
    assert list(threshold.files(config, ledger)) == [tmp_path / study["rules_file"]]


def test_the_baseline_length_table_sorts_by_s_and_counts_seeds_per_sampler():
    study = {"languages": ["big", "small", "gone"], "samplers": ["near_miss", "covering"]}

    def r(lang, sampler, seed, ok, status="done", L=40):
        return {"id": f"{lang}{sampler}{seed}{L}", "language": lang, "sampler": sampler,
                "max_length": L, "seed": seed, "status": status, "solved": ok}

    rows = [r("big", "near_miss", 0, False), r("big", "near_miss", 1, True),
            r("small", "near_miss", 0, True), r("small", "covering", 0, True),
            r("small", "covering", 1, True, L=5),  # another length: not counted
            r("gone", "near_miss", 0, None, "refused")]
    infos = {"big": {"s_identity": 12, "monoid": 30}, "small": {"s_identity": 2, "monoid": 3},
             "gone": {"s_identity": 8, "monoid": 341}}
    lines = mod.at_baseline_text({x["id"]: x for x in rows}, study, infos).splitlines()
    assert lines[2:] == ["| small | 2 | 3 | 1 / 1 | 1 / 1 |", "| gone | 8 | 341 | refused | – |",
                         "| big | 12 | 30 | 1 / 2 | – |"]


def test_recertify_rewrites_undecided_certificates_from_kept_runs(tmp_path, capsys):
    """The action ``recertify`` certifies again, from its run folder, every row whose
    certificate was undecided, and leaves decided rows and rows without a folder as they
    were; the new verdict is monoidlab.certify's on that folder."""
    from monoidlab.probing.certify import certify
    from monoidlab.studies.ledger import write_ledger

    config = _tiny_threshold_config(tmp_path)
    run = tmp_path / "runs" / "parity__L2__near_miss__s0"
    assert cli_main(["train", "--language", "parity", "--model", "transform-tree", "--out",
                     str(run), "--steps=1", "--restarts=0", "--early_stop=0",
                     "--test_lengths=41:42", "--test_samples=4", "--model_options.states=4",
                     "--threads=1", "--json"]) in (0, None)
    capsys.readouterr()
    undecided = {"correct": False, "verdict": "not certified: transform-tree: ... table ...",
                 "counterexample": None, "length": None, "level": None}
    decided = {"correct": False, "verdict": "WRONG ...", "counterexample": "1", "length": 1,
               "level": 0}
    rows = {"parity__L2__near_miss__s0": {"status": "done", "solved": False,
                                          "certificate": undecided, "min_accuracy": 0.5},
            "parity__L3__near_miss__s0": {"status": "done", "certificate": undecided},
            "parity__L4__near_miss__s0": {"status": "done", "certificate": decided}}
    write_ledger(tmp_path / "ledger.jsonl", {k: {"id": k, **v} for k, v in rows.items()})
    assert cli_main(["study", "threshold", "--config", str(config), "--action",
                     "recertify"]) in (0, None)
    said = capsys.readouterr().out
    assert "3 undecided" not in said and "2 undecided certificates; 1 certified again" in said
    assert "1 without a run folder" in said
    after = read_ledger(tmp_path / "ledger.jsonl")
    want = mod.certificate_row(certify(run).to_dict())
    assert want["counterexample"] is not None or want["correct"]  # decided now
    new = after["parity__L2__near_miss__s0"]
    assert new["certificate"] == want and new["recertified"] is True
    assert new["min_accuracy"] == 0.5 and new["solved"] is False  # the rest of the row kept
    assert after["parity__L3__near_miss__s0"]["certificate"] == undecided
    assert after["parity__L4__near_miss__s0"]["certificate"] == decided
    assert "recertified" not in after["parity__L4__near_miss__s0"]
