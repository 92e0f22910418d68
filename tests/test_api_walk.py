"""Every public function, class and method meets bad arguments with a one-line
:class:`monoidlab.MonoidlabError` that names the argument, never a numpy, torch or Python
traceback from inside, and takes a numpy integer wherever it takes an int (tests/api_walk.py
walks ``monoidlab.__all__``, the subpackages' ``__all__`` and the objects they return)."""

from __future__ import annotations

import importlib
import inspect
import shutil

import numpy as np
import pytest
from api_walk import NOT_WALKED, SUBPACKAGES, Walk, walk

from monoidlab._checks import check_record, scalar_args
from monoidlab.errors import InputError

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def walked(tiny_ldru_run, tmp_path_factory) -> Walk:
    run = tmp_path_factory.mktemp("walk") / "run"
    shutil.copytree(tiny_ldru_run, run)  # the walk may resume or read it: a copy of its own
    return walk(run=run, tmp=tmp_path_factory.mktemp("walk-out"))


def test_no_bad_value_gets_through_or_breaks_inside(walked):
    assert walked.checked_values > 700, walked.checked_values
    assert not walked.findings, "\n".join(f.line() for f in walked.findings)


def test_every_public_name_is_walked_or_said_why_not(walked):
    assert not walked.skipped, walked.skipped  # an example for every required argument
    public = set()
    for sub in SUBPACKAGES:
        mod = importlib.import_module("monoidlab" + (f".{sub}" if sub else ""))
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.isfunction(obj) or (inspect.isclass(obj)
                                           and not issubclass(obj, BaseException)):
                public.add(f"monoidlab{'.' + sub if sub else ''}.{name}")
    assert public - set(walked.walked) == set(NOT_WALKED), (
        sorted(public - set(walked.walked) - set(NOT_WALKED)))
    methods = [w for w in walked.walked if w.rsplit(".", 1)[0] in public]
    assert len(methods) > 30, "the methods of the returned objects are walked too"


def test_scalar_args_checks_by_annotation_and_converts_numpy():
    @scalar_args
    def f(n: int, batch_size: int = 4, rate: float = 0.5, flag: bool = False,
          label: str | None = None) -> tuple:
        return n, batch_size, rate, flag, label

    assert f(np.int64(3)) == (3, 4, 0.5, False, None)
    assert type(f(np.int64(3))[0]) is int
    for kwargs, match in [({"n": True}, "n: an integer, got bool"),
                          ({"n": -1}, "n: an integer 0 or more"),
                          ({"n": 1, "batch_size": 0}, "batch_size: an integer 1 or more"),
                          ({"n": 1, "rate": float("inf")}, "rate: a finite number"),
                          ({"n": 1, "flag": "no"}, "flag: True or False, got str"),
                          ({"n": 1, "label": 3}, "label: a string or None, got int")]:
        with pytest.raises(InputError, match=match):
            f(**kwargs)


def test_records_check_their_fields_where_they_are_built():
    from monoidlab import MinLength

    with pytest.raises(InputError, match="MinLength: field support_length: an integer"):
        MinLength("parity", "balanced", "5:6", 4, "3", 0)
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Frozen:
        n: int

        def __post_init__(self) -> None:
            check_record(self)

    assert type(Frozen(np.int32(2)).n) is int
