"""The suite's scheduling table (tests/conftest.py) names units that exist: a renamed or
deleted test file must not linger in LONGEST, where it would silently stop mattering."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _conftest():
    spec = importlib.util.spec_from_file_location("suite_conftest", ROOT / "tests" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_unit_started_first_exists_and_notebooks_are_units_of_their_own():
    conf = _conftest()
    assert conf.LONGEST
    for unit in conf.LONGEST:
        file, _, test = unit.partition("::")
        assert (ROOT / file).is_file(), unit
        if test:  # a notebook: its own unit, named by its stem
            stem = test.split("[", 1)[1].rstrip("]")
            assert (ROOT / "notebooks" / f"{stem}.ipynb").is_file(), unit
            assert conf.unit_of(unit) == unit
        else:
            assert conf.unit_of(f"{file}::test_x") == file
