"""Shared fixtures: tiny languages and a seeded generator.

Hypothesis runs without deadlines (the first call of a numpy path can be slow on a shared
machine) and with a modest number of examples so that the whole suite stays fast; set
``HYPOTHESIS_PROFILE=thorough`` for a longer run.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

# One thread per process for torch (OpenMP), numpy's BLAS and scikit-learn, set before any of
# them is imported (pytest imports none of them before this file), also for the processes the
# tests start (notebook kernels, the CLI, bench/gpu_check.sh): the suite runs one pytest-xdist
# worker per core, and a second thread per worker only oversubscribes the cores (tiny tensors
# gain nothing from it, and the threads spin-wait against the other worker: measured, the
# same files took 50% more CPU time and wall time on 2 cores). A value set by the caller stays.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

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


# ------------------------------------------------------------------- the suite on both cores
# `make test` runs `pytest -n logical --dist loadfile` (pytest-xdist): a test file is one unit
# of work, so that one worker builds a file's module fixtures once. Two refinements here:
# the files of APART are split into one unit per test (the notebooks run side by side), and
# the units start longest first (LONGEST, below), so that no long unit starts last while the
# other core has nothing left to do. A unit not in LONGEST comes after those, in file order.

#: test files whose tests are units of their own (no module fixture to share)
APART = {"tests/test_notebooks.py"}

_NOTEBOOK = "tests/test_notebooks.py::test_notebook_executes_within_budget[{}]"
#: unit -> CPU seconds on the 2-core machine (measured 2026-12-05 with --durations=0; only the
#: order matters): the units worth starting first. test_readme.py's shell tour runs where a
#: `make setup` venv is.
LONGEST: dict[str, float] = {
    "tests/test_readme.py": 111, "tests/test_gpu_check.py": 41, "tests/test_report.py": 33,
    _NOTEBOOK.format("05_dyck_embeddings"): 31, _NOTEBOOK.format("04_probing_and_associativity"): 24,
    "tests/test_snap.py": 24, "tests/test_training.py": 24, "tests/test_offsets.py": 22,
    "tests/test_refine.py": 20, "tests/test_probing.py": 16, _NOTEBOOK.format("07-certificates"): 16,
    "tests/test_figure_text.py": 14, _NOTEBOOK.format("06-extraction"): 14,
    "tests/test_speed_equivalence.py": 14, "tests/test_bad_inputs.py": 13,
    "tests/test_api_walk.py": 13, "tests/test_deletang.py": 13,
    _NOTEBOOK.format("03_minimum_training_length"): 13, "tests/test_batched_eval.py": 12,
    "tests/test_report_summary.py": 12, "tests/test_text_classification.py": 11,
    "tests/test_restarts.py": 11, "tests/test_extraction.py": 10, "tests/test_study_long.py": 10,
    "tests/test_families.py": 9, "tests/test_grc.py": 9, _NOTEBOOK.format("02_coverage_gaps"): 8,
    "tests/test_studies.py": 8, _NOTEBOOK.format("01_monoids_and_classes"): 5,
}


def unit_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its file, or itself in a file of APART."""
    file = nodeid.split("::", 1)[0]
    return nodeid if file in APART else file


def pytest_collection_modifyitems(config, items):
    """The longest units first (a stable sort: the rest keep their order); xdist hands units
    out in this order (see pytest_xdist_make_scheduler)."""
    rank = {u: i for i, u in enumerate(sorted(LONGEST, key=LONGEST.__getitem__, reverse=True))}
    items.sort(key=lambda item: rank.get(unit_of(item.nodeid), len(rank)))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` with the units of :func:`unit_of`, in collection order."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class Units(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    config.option.loadscopereorder = False  # not by test count: the order collected
    return Units(config, log)


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


@pytest.fixture(scope="session")
def mod_arith_right_on_expressions():
    """``make(states)``: a transformation tree (n = ``states`` >= the language's 19) that runs
    modular arithmetic's own automaton and answers '1' on every incomplete expression: right on
    the well-formed expressions (the task's sub-language), wrong on '+'."""
    import torch

    import monoidlab as ml
    from monoidlab.models.transform_tree import TransformTree

    lang = ml.load_language("modular-arithmetic")
    delta, output = np.asarray(lang.delta), np.asarray(lang.output).copy()
    output[output == lang.classes.index("incomplete")] = 1
    assert int(lang.start) == 0

    def make(states: int = len(delta)) -> TransformTree:
        model = TransformTree(lang.n_symbols, lang.n_classes, states=states)
        with torch.no_grad():
            model.logits.fill_(-30.0)
            for q in range(states):  # spare states map to themselves, read as class 0
                for a in range(lang.n_symbols):
                    model.logits[a, delta[q, a] if q < len(delta) else q, q] = 30.0
            model.readout.fill_(0.0)
            model.readout[output, np.arange(len(delta))] = 10.0
        return model

    return make
