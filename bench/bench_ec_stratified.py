"""EC-stratified strings of a large monoid: the compiled samplers against the numpy paths.

Usage: python bench/bench_ec_stratified.py [--language bench/random-languages/rl-04-dfa-5x4.toml]

Draws what the random-language benchmark draws for a 650-element monoid (rl-04-dfa-5x4): a
test set's ec_stratified strings (64 per length at every 20th length of 41..500) and the
ec_stratified quarter of 200 training batches (16 strings, lengths 1..40), and 200 whole
training batches of the benchmark's mix-ec recipes (64 strings of one length in 1..40: members,
near misses and ec_stratified strings, 2 : 1 : 1), once with the numba kernels of
``monoidlab.laws`` (``backward_laws``' path counts and ``draw_walks``' letter-by-letter draw) and
once with their numpy paths, one thread, in one process; the strings are checked equal. Prints
the seconds and the ratio kernel / numpy.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
#: the near_miss mix of the random-language benchmark's mix-ec recipes
MIX = {"members": 0.5, "near_miss": 0.25, "ec_stratified": 0.25}


def draw(lang, use_kernel: bool) -> tuple[float, float, float, list[np.ndarray]]:
    import monoidlab as ml
    import monoidlab.laws as laws
    from monoidlab.strings import sampling

    laws.USE_KERNEL = use_kernel
    sampling._PATHS.clear()
    out = []
    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    for L in range(41, 501, 20):
        out.append(ml.sample(lang, [L], 64, sampler="ec_stratified", seed=rng).tokens)
    t_test = time.perf_counter() - t0
    t0 = time.perf_counter()
    rng = np.random.default_rng(1)
    for _ in range(200):
        out.append(ml.sample(lang, [int(rng.integers(1, 41))], 16, sampler="ec_stratified",
                             seed=rng).tokens)
    t_train = time.perf_counter() - t0
    t0 = time.perf_counter()
    rng = np.random.default_rng(2)
    for _ in range(200):
        out.append(ml.sample(lang, [int(rng.integers(1, 41))], 64, sampler="near_miss",
                             mix=MIX, seed=rng).tokens)
    return t_test, t_train, time.perf_counter() - t0, out


def main(argv: list[str] | None = None) -> int:
    import torch

    import monoidlab as ml
    from monoidlab._kernels import backward_sum_kernel

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--language",
                   default=str(ROOT / "bench" / "random-languages" / "rl-04-dfa-5x4.toml"))
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    if backward_sum_kernel() is None:
        print("numba is not installed: only the numpy path exists")
        return 0
    lang = ml.load_language(args.language)
    print(f"{lang.name}: |M| = {lang.monoid().size}")
    draw(lang, True)  # compile and warm caches
    k_test, k_train, k_mix, a = draw(lang, True)
    n_test, n_train, n_mix, b = draw(lang, False)
    assert all(np.array_equal(x, y) for x, y in zip(a, b)), "the two paths drew other strings"
    print(f"test set (24 lengths x 64): kernel {k_test:.2f} s, numpy {n_test:.2f} s, "
          f"ratio {k_test / n_test:.2f}")
    print(f"200 training quarters (16 strings, 1..40): kernel {k_train:.2f} s, numpy "
          f"{n_train:.2f} s, ratio {k_train / n_train:.2f}")
    print(f"200 mix-ec training batches (64 strings, 1..40): kernel {k_mix:.2f} s, numpy "
          f"{n_mix:.2f} s, ratio {k_mix / n_mix:.2f}")
    print("same strings: yes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
