"""The examples in the docstrings of the algebra, the strings, the coverage, the training and
the studies code run as written (config.py's had gone stale: the list of models able to learn a
language grew by three and its example still showed the old one)."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "monoidlab"
FOLDERS = ("algebra", "strings", "coverage", "training", "studies")
MODULES = sorted(
    ".".join(("monoidlab", *p.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(".__init__")
    for folder in FOLDERS for p in (PACKAGE / folder).rglob("*.py"))


@pytest.mark.parametrize("name", MODULES)
def test_module_examples_run_as_written(name, one_torch_thread):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"


def test_the_examples_are_found():
    assert len(MODULES) >= 40 and "monoidlab.training.config" in MODULES
