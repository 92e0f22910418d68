"""Reliability, fourth round: verdicts a trivial model also reaches, devices the machine lacks,
files the user owns, model options that would exhaust the machine, empty inputs."""

import pytest

import monoidlab as ml
from monoidlab.evaluation import Evaluation


def test_a_verdict_a_majority_class_model_also_reaches_is_never_solved():
    """One class at every scored length (a one-row text test set, a degenerate sample): the
    model at 1.0 is not 'solved', and the verdict says why."""
    acc = {"task": {3: 1.0, 4: 1.0}}
    ev = Evaluation("t", ("task",), 0.99, 1, accuracy=acc,
                    baselines={"majority": {"task": {3: 1.0, 4: 1.0}}})
    assert ev.trivial and not ev.solved
    assert ev.verdict().startswith("not solved: a majority-class model also scores >= 0.99")
    # one length where the baseline falls short is enough for a real verdict
    ev = Evaluation("t", ("task",), 0.99, 8, accuracy=acc,
                    baselines={"majority": {"task": {3: 1.0, 4: 0.75}}})
    assert not ev.trivial and ev.solved


def test_loading_on_a_device_the_machine_lacks_names_the_device(tiny_ldru_run):
    """extract_automaton(run, device="cuda") on a machine without CUDA says that, not that the
    checkpoint is unsafe."""
    import torch

    from monoidlab.errors import InputError

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(InputError, match="device 'cuda': CUDA is not available"):
        ml.extract_automaton(tiny_ldru_run, device="cuda")
    with pytest.raises(InputError, match="device 'gpu7': not a device torch knows"):
        from monoidlab.training.run_folder import read_checkpoint

        read_checkpoint(tiny_ldru_run / "checkpoint.pt", "gpu7")


def test_text_sample_never_replaces_the_users_files(tmp_path, capsys):
    """An existing train.csv is the user's: refused, named, kept byte for byte; --overwrite
    replaces both files."""
    from monoidlab.cli import main

    (tmp_path / "train.csv").write_text("my data\n")
    code = main(["text-sample", str(tmp_path), "--layout", "ag_news", "--rows", "10"])
    err = capsys.readouterr().err
    assert code != 0 and "train.csv exists; refusing to replace it (--overwrite" in err
    assert (tmp_path / "train.csv").read_text() == "my data\n"
    assert not (tmp_path / "test.csv").exists()
    assert main(["text-sample", str(tmp_path), "--layout", "ag_news", "--rows", "10",
                 "--overwrite"]) in (0, None)
    assert len((tmp_path / "train.csv").read_text().splitlines()) == 10
