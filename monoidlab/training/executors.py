"""Where a list of jobs runs: in this process, in local worker processes, or as Ray tasks.

Sweeps and studies both hand their runs to :func:`run_jobs`; one job is one call
``fn(*job)`` of a module-level function (it crosses a process boundary), and each result comes
back to the caller's ``on_result`` as soon as it is finished, so that a study can write its
ledger line before the next run ends (a killed study then loses one run at most).

>>> from operator import add
>>> run_jobs(add, [(1, 2), (3, 4)])
[3, 7]
>>> seen = []
>>> run_jobs(add, [(1, 2)], on_result=lambda i, r: seen.append((i, r))); seen
[3]
[(0, 3)]
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from monoidlab.errors import ConfigError, MissingDependency

__all__ = ["run_jobs", "RAY_LOCAL_ENV"]

# A local Ray instance binds every server to the machine's network address and writes an auth
# token under ~/.ray unless told otherwise; these keep it on loopback and side-effect free
# (verified with `ss -ltnp` in bench/bench_ray_sweep.py). setdefault: the caller may override.
RAY_LOCAL_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "disabled",
                 "RAY_USAGE_STATS_ENABLED": "0"}


def run_jobs(fn: Callable[..., Any], jobs: Sequence[tuple], workers: int = 1,
             ray_address: str | None = None,
             on_result: Callable[[int, Any], None] | None = None) -> list[Any]:
    """``[fn(*job) for job in jobs]``, run here (``workers == 1``), in ``workers`` local
    processes, or as Ray tasks (``ray_address``: ``"local"`` or a cluster's address).

    The results are returned in the jobs' order; ``on_result(index, result)`` is called in this
    process as each one finishes (in finishing order when jobs run side by side). An exception
    in a job is raised here, after the results already finished were handed to ``on_result``.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"workers: a positive integer, got {workers!r}")
    results: list[Any] = [None] * len(jobs)

    def done(i: int, r: Any) -> None:
        results[i] = r
        if on_result is not None:
            on_result(i, r)

    if ray_address:
        _run_ray(fn, jobs, ray_address, done)
    elif workers == 1 or len(jobs) <= 1:
        for i, job in enumerate(jobs):
            done(i, fn(*job))
    else:
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(min(workers, len(jobs))) as pool:
            futures = {pool.submit(fn, *job): i for i, job in enumerate(jobs)}
            for f in as_completed(futures):
                done(futures[f], f.result())
    return results


def _run_ray(fn: Callable[..., Any], jobs: Sequence[tuple], address: str,
             done: Callable[[int, Any], None]) -> None:
    if address == "local":  # before `import ray`: some settings are read at import time
        for key, value in RAY_LOCAL_ENV.items():
            os.environ.setdefault(key, value)
    try:
        import ray
    except ImportError:
        raise MissingDependency("running on Ray needs the optional extra: pip install "
                                "'monoidlab[ray]'") from None
    import shutil
    import tempfile

    import torch

    started, temp_dir = False, None
    if not ray.is_initialized():
        if address == "local":
            if os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] == "0":
                # Ray reads that variable once, when imported: if it was imported before us,
                # tell it directly (private API; bench/bench_ray_sweep.py checks the result)
                try:
                    from ray._private import ray_constants

                    ray_constants.ENABLE_RAY_CLUSTER = False
                except (ImportError, AttributeError):
                    pass
            temp_dir = tempfile.mkdtemp(prefix="monoidlab-ray-")
            ray.init(include_dashboard=False, log_to_driver=False, _temp_dir=temp_dir,
                     object_store_memory=100 * 2**20)
        else:
            ray.init(address=address)
        started = True
    try:
        gpus = 1 if torch.cuda.is_available() or ray.cluster_resources().get("GPU", 0) else 0
        remote = ray.remote(num_cpus=1, num_gpus=gpus)(fn)
        pending = {remote.remote(*job): i for i, job in enumerate(jobs)}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                done(pending.pop(ref), ray.get(ref))
    finally:
        if started:  # leave no Ray processes (or, locally, temp files) behind
            ray.shutdown()
        if temp_dir:
            shutil.rmtree(temp_dir, ignore_errors=True)
