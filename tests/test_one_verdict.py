"""One verdict everywhere: a model right on part of the test set and wrong on the rest is never
'solved' on any surface that scores only the part (train, evaluate, the report, its JSON)."""

import json

import numpy as np
import pytest
import torch

from monoidlab.cli import main
from monoidlab.training.run_folder import read_checkpoint, save_checkpoint

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TEST = (41, 140)  # the run's test lengths


def _report_picks() -> list[int]:
    """The test lengths the report evaluates a run without a results.json on (its readable
    curve: 48 evenly spread lengths when the run has more than 60)."""
    return sorted(set(np.linspace(TEST[0], TEST[1], 48).astype(int).tolist()))


def _period() -> tuple[int, int]:
    """(m, r): lengths ≡ r mod m occur in the test set but not among the report's picks."""
    picks = _report_picks()
    for m in range(3, 40):
        for r in range(m):
            if not any(L % m == r for L in picks) and any(
                    L % m == r for L in range(TEST[0], TEST[1] + 1)):
                return m, r
    raise AssertionError("no period avoids the report's picks")


@pytest.fixture(scope="module")
def wrong_at_some_lengths(tmp_path_factory):
    """A transformation tree run on parity whose automaton is set by hand: states (parity,
    length mod m); the readout flips the class when length ≡ r (mod m). Right at every other
    length, wrong on every string of those lengths. Its results.json is removed: a run that
    stopped before finishing."""
    m, r = _period()
    run = tmp_path_factory.mktemp("verdict") / "run"
    code = main(["train", "--language", "parity", "--model", "transform-tree", "--out", str(run),
                 "--steps=1", "--restarts=0", "--early_stop=0", f"--test_lengths={TEST[0]}:"
                 f"{TEST[1]}", "--test_samples=16", f"--model_options.states={2 * m}",
                 "--threads=1", "--json"])
    assert code in (0, None)
    ckpt = read_checkpoint(run / "checkpoint.pt")
    n = 2 * m
    logits = torch.full((2, n, n), -20.0)
    readout = torch.full((2, n), -20.0)
    for p in range(2):
        for length in range(m):
            s = p * m + length
            for a in range(2):
                logits[a, (p ^ a) * m + (length + 1) % m, s] = 20.0
            cls = p ^ (length == r % m)
            readout[cls, s] = 20.0
    state = ckpt["model"]
    assert state["logits"].shape == logits.shape and state["readout"].shape == readout.shape
    state["logits"], state["readout"] = logits, readout
    save_checkpoint(ckpt, run / "checkpoint.pt")
    (run / "results.json").unlink()
    return run, m, r


def _evaluate(run, capsys, *extra):
    capsys.readouterr()
    assert main(["evaluate", str(run), "--json", "--no-coverage", "--no-diagnosis",
                 *extra]) in (0, None)
    return json.loads(capsys.readouterr().out)


def test_the_strict_evaluation_fails_and_a_subset_is_only_a_partial_check(
        wrong_at_some_lengths, capsys):
    run, m, r = wrong_at_some_lengths
    full = _evaluate(run, capsys)
    assert full["solved"] is False and "partial" not in full, full["verdict"]
    wrong = {int(L) for L, a in full["accuracy"]["paper"].items() if a < 0.5}
    assert wrong == {L for L in range(TEST[0], TEST[1] + 1) if L % m == r}
    assert full["weights"]["finished"] is False and full["weights"]["step"] == 1
    first = min(wrong)
    right = f"{first + 1}:{first + m - 1}"  # between two wrong lengths
    part = _evaluate(run, capsys, "--lengths", right)
    assert min(part["accuracy"]["paper"].values()) == 1.0  # right on every string it scored
    assert part["solved"] is None and part["partial"].startswith(f"{m - 1} of the run's 100")
    assert part["verdict"].startswith("PARTIAL CHECK, not the strict verdict")
    fewer = _evaluate(run, capsys, "--samples", "4")
    assert fewer["solved"] is None and "4 strings per length" in fewer["partial"]
    # the text says which weights and which test set, and the partial verdict last
    capsys.readouterr()
    main(["evaluate", str(run), "--lengths", right, "--no-coverage", "--no-diagnosis"])
    text = capsys.readouterr().out
    assert "the run has NOT finished" in text and "test set: lengths" in text
    assert text.strip().splitlines()[-2].startswith("PARTIAL CHECK")  # then the certificate


def test_the_report_never_shows_a_partial_check_as_solved(wrong_at_some_lengths, tmp_path,
                                                          capsys):
    run, m, r = wrong_at_some_lengths
    capsys.readouterr()
    assert main(["report", "--checkpoint", str(run), "--out", str(tmp_path / "rep"),
                 "--no-probe", "--no-umap", "--json"]) in (0, None)
    key = json.loads(capsys.readouterr().out)["key_figures"]["model"]
    scored = {int(L) for row in key["kinds"] for L in [row["scored_lengths"]]}
    assert scored == {len(_report_picks())}  # it checked the picks: all right there
    assert all(row["min"] == 1.0 for row in key["kinds"])
    assert key["solved"] is None and key["partial"] and not key["weights"]["finished"]
    page = (tmp_path / "rep" / "parity.html").read_text()
    summary = page.split('id="summary"', 1)[1].split("</section>", 1)[0]
    assert 'class="verdict partial">PARTIAL CHECK' in summary
    assert "SOLVED" not in summary.replace("NOT SOLVED", "")
    assert "the run has NOT finished" in summary


def test_the_coverage_shown_is_that_of_the_scored_weights_attempt(tmp_path):
    """With restarts, the training strings counted are those of the attempt whose weights are
    scored (a restart draws its own strings from its own seed), and the text says which."""
    from monoidlab.training import train
    from monoidlab.training.attempts import attempt_config, weights_attempt
    from monoidlab.training.data_coverage import training_coverage
    from monoidlab.training.parse import config_from_dict

    cfg = config_from_dict({"language": "parity", "model": "mlp-ldru", "steps": 20,
                            "restarts": 2, "batch_size": 8, "train_lengths": "1:6",
                            "test_lengths": "7:8", "test_samples": 4, "eval_every": 10,
                            "early_stop": 50, "val_lengths": "7:8", "val_samples": 4,
                            "solved_threshold": 1.0, "threads": 1,
                            "model_options": {"d": 4, "dropout": 0.0}}, "t")
    res = train(cfg, tmp_path / "r", progress=False)
    scored = res["best_step"] if res.get("best_step") is not None else res["steps"]
    attempt = weights_attempt(cfg, scored)
    cov = res["training_coverage"]
    assert cov["attempt"] == attempt + 1
    assert f"attempt {attempt + 1} of {res['attempts']}" in cov["text"]
    want = training_coverage(attempt_config(cfg, attempt) if attempt else cfg,
                             attempt=(attempt, res["attempts"]))
    assert cov["sampled"] == want["sampled"]
    other = training_coverage(attempt_config(cfg, (attempt + 1) % 3))
    assert other["sampled"] != cov["sampled"]  # another attempt's strings differ


def test_a_covering_plan_too_large_falls_back_to_near_misses_when_asked(tmp_path):
    """covering.too_large = "near_miss": a plan the steps cannot show trains on near misses
    instead of refusing, and the run says so; the default still refuses."""
    import pytest as _pytest

    from monoidlab.errors import ConfigError
    from monoidlab.training import train
    from monoidlab.training.parse import config_from_dict
    from monoidlab.training.problems import make_problem

    keys = {"language": "dyck-3", "model": "mlp-ldru", "steps": 2, "batch_size": 8,
            "sampler": "covering", "train_lengths": "1:16", "test_lengths": "41:42",
            "test_samples": 4, "threads": 1, "model_options": {"d": 4, "dropout": 0.0}}
    with _pytest.raises(ConfigError, match="need .* covering strings"):
        make_problem(config_from_dict({**keys, "covering": {"uncovered": "skip"}}, "t"))
    cfg = config_from_dict({**keys, "covering": {"uncovered": "skip",
                                                 "too_large": "near_miss"}}, "t")
    problem = make_problem(cfg)
    assert problem.sampler.name == "near_miss" and problem.plan is None
    res = train(cfg, tmp_path / "r", progress=False)
    assert "trained on near-miss strings instead" in res["covering_fallback"]
