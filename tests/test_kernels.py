"""The numba kernels' disk cache holds across processes: no kernel closes over anything but a
module (a module pickles by its name, the same in every process).

numba keys a cached function by its bytecode and by the pickled contents of its closure; a
compiled function (a dispatcher) pickles differently in every process, so a kernel that
closed over another kernel missed the cache and was compiled again by every process (about
half a second each; 503 copies of the EC labeller had piled up in one checkout's cache)."""

from __future__ import annotations

import types

import pytest

from monoidlab import _kernels


@pytest.mark.parametrize("getter", _kernels.__all__)
def test_no_kernel_closes_over_anything_but_a_module(getter):
    pytest.importorskip("numba")
    got = getattr(_kernels, getter)()
    kernels = got if isinstance(got, tuple) else (got,)
    assert kernels and all(k is not None for k in kernels)
    for k in kernels:
        cells = dict(zip(k.py_func.__code__.co_freevars, k.py_func.__closure__ or ()))
        held = {name: type(c.cell_contents).__name__ for name, c in cells.items()
                if not isinstance(c.cell_contents, types.ModuleType)}
        assert not held, (f"{getter}: {k.py_func.__name__} closes over {held}: numba's cache "
                          f"misses in every new process")
