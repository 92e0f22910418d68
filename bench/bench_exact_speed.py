"""Speed of the depth-exact models and of the certificate, each as a ratio against its peer.

Usage: python bench/bench_exact_speed.py [--steps 40] [--quick]

One thread. Four figures (the issue's goals in brackets):

1. ``certify_table`` on a 200-code table that is correct on dyck-6 (the syntactic monoid's
   141 elements plus 59 duplicate codes, products landing on a random duplicate), against a
   brute-force check of the same table over every string of lengths 1..14 (which proves only
   those lengths) [certify under 10 s];
2. ``certify_scan_table`` (the snapped PR-LSTM's layout) on the same 200 codes under the
   scan layout [under 10 s]; and on a random 200-code table (100 with --quick), whose pair
   sets grow to thousands as a trained model's do, the proof by bit sets against its block
   levels with witnesses kept, and the counterexample search first against the proof first;
3. a training step of the snapped MLP-LDRU (``mlp-ldru-snap``, d 32, k 282, straight-through;
   and with the rotation trick) against the plain MLP-LDRU step (d 32, identity padding), same
   batches (64 strings, lengths 1..40 drawn per step, dyck-6), forward + associativity term +
   commitment + backward + Adam [at most 1.5x];
4. a training step of the transformation tree model (n = 8, dyck-6's states) against the same
   plain step [at most 1x]; and of its soft relaxation at n = 16 (the recipe 'distilled').

Steps alternate between the models, each timed by its thread's CPU time (torch runs one
thread here), so that other work on the machine changes neither; the median step is reported.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np


def duplicated_table(lang, codes: int, seed: int = 0, layout: str = "balanced"):
    """A FiniteTable with ``codes`` codes that is correct on ``lang``: every monoid element
    has one code or more, and each product lands on a random code of the right element."""
    from monoidlab.models.finite import FiniteTable

    m = lang.monoid()
    rng = np.random.default_rng(seed)
    element = np.concatenate([np.arange(m.size), rng.integers(0, m.size, codes - m.size)])
    by_element = [np.flatnonzero(element == e) for e in range(m.size)]
    prod = np.asarray(m.table)[element[:, None], element[None, :]]
    pick = rng.integers(0, 1 << 30, prod.shape)
    table = np.array([[by_element[p][r % len(by_element[p])] for p, r in zip(row, rr)]
                      for row, rr in zip(prod, pick)])
    return FiniteTable(np.asarray(m.letters), table, np.asarray(m.outputs)[element],
                       layout=layout)


def certify_figure(quick: bool) -> None:
    import monoidlab as ml
    from monoidlab.evaluation.certificate import brute_force_counterexample, certify_table

    lang = ml.load_language("dyck-6")
    table = duplicated_table(lang, 200)
    t0 = time.perf_counter()
    cert = certify_table(table, lang)
    t_cert = time.perf_counter() - t0
    upto = 12 if quick else 14
    t0 = time.perf_counter()
    brute = brute_force_counterexample(table, lang, upto)
    t_brute = time.perf_counter() - t0
    print(f"certify, 200 codes on dyck-6: {cert.text()}")
    print(f"  certify_table {t_cert:.3f} s (goal < 10 s: {'met' if t_cert < 10 else 'NOT met'}); "
          f"brute force over lengths 1..{upto} (proves only those) {t_brute:.3f} s "
          f"({'none wrong' if brute is None else brute}); ratio certify / brute force "
          f"{t_cert / t_brute:.3f}")


def scan_certify_figure(quick: bool) -> None:
    """The prefix scan's certificate (the snapped PR-LSTM's layout). A correct 200-code table
    (small pair sets), then a random 200-code table on dyck-6, whose (code, EC) pair sets grow
    to thousands as a trained model's do: its proof (``refute_budget=0``) computes them by bit
    sets; the peer is the same block levels by the products that keep witnesses (the proof
    before bit sets); then the counterexample search first against the proof first."""
    import monoidlab as ml
    from monoidlab.evaluation.scan_certificate import _Blocks, certify_scan_table
    from monoidlab.models.finite import FiniteTable

    lang = ml.load_language("dyck-6")
    table = duplicated_table(lang, 200, layout="scan")
    t0 = time.perf_counter()
    cert = certify_scan_table(table, lang)
    t_proof = time.perf_counter() - t0
    print(f"scan certify, 200 codes on dyck-6 (correct): {'proved' if cert['correct'] else 'WRONG'}"
          f" in {t_proof:.3f} s (goal < 10 s: {'met' if t_proof < 10 else 'NOT met'}), "
          f"{cert['levels']} levels, {cert['pairs']} pairs")
    rng = np.random.default_rng(0)
    codes = 100 if quick else 200
    bad = FiniteTable(rng.integers(0, codes, 2), rng.integers(0, codes, (codes, codes)),
                      rng.integers(0, 2, codes), layout="scan")
    t0 = time.perf_counter()
    got = certify_scan_table(bad, lang, refute_budget=0)
    t_sets = time.perf_counter() - t0
    blocks, seen = _Blocks(bad, lang.monoid()), set()
    t0 = time.perf_counter()
    while (key := np.sort(blocks.pairs[-1]).tobytes()) not in seen:
        seen.add(key)
        blocks.grow()
    t_blocks = time.perf_counter() - t0
    t0 = time.perf_counter()
    again = certify_scan_table(bad, lang)
    t_search = time.perf_counter() - t0
    assert again == got
    print(f"  a random {codes}-code table: {got['counterexample']!r}; proof first (bit sets, "
          f"{got['levels']} levels) {t_sets:.3f} s against its block levels alone with "
          f"witnesses kept ({len(blocks.pairs)} levels, up to "
          f"{max(map(len, blocks.pairs))} pairs) {t_blocks:.3f} s: ratio "
          f"{t_sets / t_blocks:.3f}; counterexample search first {t_search:.3f} s: ratio "
          f"{t_search / t_sets:.3f}")


def _step_fn(model, lang, aux: bool):
    import torch

    opt = torch.optim.Adam(model.parameters(), 3e-3)
    m = lang.monoid()

    def step(tokens, lengths):
        x, n = torch.as_tensor(tokens), torch.as_tensor(lengths)
        y = torch.as_tensor(m.outputs[m.element_of(tokens, lengths)])
        t0 = time.thread_time()  # CPU time of this thread: a busy machine slows both alike
        loss = torch.nn.functional.cross_entropy(model(x, n), y)
        if hasattr(model, "assoc_loss"):
            loss = loss + 0.1 * model.assoc_loss(x, n)
        if aux:
            extra = model.auxiliary_loss()
            loss = loss if extra is None else loss + extra
        opt.zero_grad()
        loss.backward()
        opt.step()
        return time.thread_time() - t0

    return step


def _without(model, part: str):
    """A snapped model for the time breakdown only: ``update`` skips the library's codebook
    update (the commitment term stays), ``snap`` also makes every snap the identity."""
    from monoidlab.models.snap import Snapper

    for m in model.modules():
        if isinstance(m, Snapper):
            if part == "snap":
                m.forward = lambda x: x
                m.update = lambda: None
            else:
                m.vq._codebook.update_indices = lambda *a, **k: None
    return model


def step_figures(steps: int) -> None:
    import torch

    import monoidlab as ml
    from monoidlab.models.mlp_ldru import MLPLDRU
    from monoidlab.models.snap import SnappedMLPLDRU, auto_codes
    from monoidlab.models.transform_tree import TransformTree

    torch.set_num_threads(1)
    lang = ml.load_language("dyck-6")
    V, C = lang.n_symbols, lang.n_classes
    k = auto_codes(lang.monoid().size)
    torch.manual_seed(0)
    models = {
        "plain mlp-ldru": _step_fn(MLPLDRU(V, C, d=32, dropout=0.0, padding="identity"), lang,
                                   False),
        "mlp-ldru-snap (straight-through)": _step_fn(SnappedMLPLDRU(V, C, codes=k), lang, True),
        "mlp-ldru-snap (rotation trick)": _step_fn(
            SnappedMLPLDRU(V, C, codes=k, gradient="rotation"), lang, True),
        "transform-tree": _step_fn(TransformTree(V, C, states=lang.n_states), lang, False),
        # the recipe 'distilled' trains the soft relaxation (n x n matrices per symbol) with
        # n = 2 x the minimal count
        "transform-tree (soft, n = 2 x minimal)": _step_fn(TransformTree(
            V, C, states=2 * lang.n_states, relaxation="soft"), lang, False),
        # where the snapped step's time goes: the same model without the library's codebook
        # update (EMA and dead-code restarts), and without any snap at all
        "  of which without the codebook update": _step_fn(_without(
            SnappedMLPLDRU(V, C, codes=k), "update"), lang, True),
        "  of which without any snap": _step_fn(_without(
            SnappedMLPLDRU(V, C, codes=k), "snap"), lang, True),
    }
    times: dict[str, list[float]] = {name: [] for name in models}
    rng = np.random.default_rng(0)
    for _ in range(steps):
        L = int(rng.integers(1, 41))
        tokens = rng.integers(0, V, (64, L))
        lengths = np.full(64, L)
        for name, step in models.items():
            times[name].append(step(tokens, lengths))
    plain = float(np.median(times["plain mlp-ldru"]))
    goals = {"mlp-ldru-snap (straight-through)": 1.5,
             "  of which without the codebook update": None,
             "  of which without any snap": None,
             "mlp-ldru-snap (rotation trick)": None, "transform-tree": 1.0,
             "transform-tree (soft, n = 2 x minimal)": 1.0}
    print(f"training step, batch 64, lengths 1..40, one thread, median of {steps}:")
    print(f"  plain mlp-ldru (d 32): {plain * 1000:.1f} ms")
    for name, goal in goals.items():
        t = float(np.median(times[name]))
        verdict = "" if goal is None else (
            f" (goal <= {goal}x: {'met' if t / plain <= goal else 'NOT met'})")
        print(f"  {name}: {t * 1000:.1f} ms, ratio {t / plain:.2f}{verdict}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--quick", action="store_true", help="fewer steps, shorter brute force")
    args = p.parse_args(argv)
    certify_figure(args.quick)
    scan_certify_figure(args.quick)
    step_figures(5 if args.quick else args.steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
