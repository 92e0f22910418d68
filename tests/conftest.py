"""Shared fixtures: tiny languages and a seeded generator.

Hypothesis runs without deadlines (the first call of a numpy path can be slow on a shared
machine) and with a modest number of examples so that the whole suite stays fast; set
``HYPOTHESIS_PROFILE=thorough`` for a longer run.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("monoidlab", deadline=None, max_examples=60,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", deadline=None, max_examples=1000,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "monoidlab"))


@pytest.fixture
def rng() -> np.random.Generator:
    """A fresh generator with a fixed seed (every test sees the same draws)."""
    return np.random.default_rng(20240601)


@pytest.fixture(scope="session")
def parity():
    import monoidlab as ml

    return ml.load_language("parity")


@pytest.fixture(scope="session")
def dyck2():
    import monoidlab as ml

    return ml.load_language("dyck-2")


@pytest.fixture(scope="session")
def tomita7():
    import monoidlab as ml

    return ml.load_language("tomita-7")


@pytest.fixture(scope="module")
def one_torch_thread():
    """Tiny models run on one torch thread: a second intra-op thread only adds contention on
    the shared CI cores, and bit-for-bit comparisons want one fixed thread count.
    Modules opt in with ``pytestmark = pytest.mark.usefixtures("one_torch_thread")``."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def pytest_terminal_summary(terminalreporter):
    """The wall time of every executed notebook beside its budget (tests/test_notebooks.py)."""
    rows = []
    for outcome in ("passed", "failed"):
        for rep in terminalreporter.stats.get(outcome, []):
            props = dict(getattr(rep, "user_properties", []))
            if rep.when == "call" and "notebook_seconds" in props:
                name = rep.nodeid.split("[", 1)[-1].rstrip("]")
                rows.append(f"{name}: {props['notebook_seconds']:.0f} s "
                            f"(budget {props['notebook_budget']:.0f} s)")
    if rows:
        terminalreporter.write_sep("-", "notebook wall times")
        for row in sorted(rows):
            terminalreporter.write_line(row)


@pytest.fixture(scope="session")
def tiny_ldru_run(tmp_path_factory):
    """A trained MLP-LDRU run folder (parity, identity padding, d 8, 40 steps) named as a sweep
    names it, ``<parent>/parity__mlp-ldru__s0``, for the bench scripts that read run folders.
    Shared by the session: copy it before changing anything in it."""
    from monoidlab.training import train
    from monoidlab.training.parse import config_from_dict

    cfg = {"language": "parity", "model": "mlp-ldru", "steps": 40, "batch_size": 16,
           "train_lengths": "1:8", "test_lengths": "9:12", "test_samples": 8,
           "eval_every": 40, "checkpoint_every": 40, "log_every": 20, "threads": 1,
           "model_options": {"d": 8, "dropout": 0.0, "padding": "identity"}}
    run = tmp_path_factory.mktemp("sweep") / "parity__mlp-ldru__s0"
    train(config_from_dict(cfg, "tiny_ldru_run"), run, progress=False)
    return run


@pytest.fixture(scope="session")
def function_doctests():
    """``function_doctests(mod, f, g)``: (failed, attempted) of the doctests of functions
    ``f``, ``g`` of a loaded bench script ``mod``, run with the module's globals. Found through
    the functions themselves: another test may have imported the script by name, and testmod
    would then take that module's functions for foreign ones."""
    import doctest

    def run(mod, *functions) -> tuple[int, int]:
        finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner()
        for f in functions:
            for test in finder.find(f, f.__name__, module=False, globs=dict(vars(mod))):
                runner.run(test)
        return tuple(runner.summarize(verbose=False))

    return run
