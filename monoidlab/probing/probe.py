"""Probe a model or a checkpoint end to end: embeddings, clustering, probe, associativity.

:func:`probe_model` runs every instrument on one model; :func:`probe_checkpoint` on a
checkpoint and on the same model at initialisation (the baseline every figure is read against).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import numpy as np

from monoidlab._util import LengthsLike
from monoidlab.errors import InputError
from monoidlab.models.protocols import OperatorModel
from monoidlab.probing.associativity import associativity, summarise_associativity
from monoidlab.probing.clustering import CLUSTERERS, cluster_agreement, linear_probe
from monoidlab.probing.embeddings import HeldOut, heldout_strings, node_embeddings

if TYPE_CHECKING:
    import torch
    from torch import nn

    from monoidlab.automaton import Automaton
    from monoidlab.training.config import TrainConfig
    from monoidlab.training.problems import Problem

__all__ = ["model_at_init", "probe_model", "probe_checkpoint"]

_Triples = tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray],
                 tuple[np.ndarray, np.ndarray]]  # x, y, z as (tokens, lengths)


def model_at_init(cfg: TrainConfig, problem: Problem) -> nn.Module:
    """The checkpoint's model as the trainer built it before step 0 (same seed, same config);
    the global torch RNG is left untouched."""
    import torch

    from monoidlab.training.trainer import build_for

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        model = build_for(cfg, problem)
    return model.eval()


def probe_model(model: nn.Module, lang: Automaton, heldout: HeldOut,
                triples: _Triples | None = None, clusterers: Any = CLUSTERERS,
                max_nodes: int | None = 3000, random_state: int | None = 0) -> dict[str, Any]:
    """Embeddings, cluster agreement, linear probe and (for tree models) associativity of one
    model. Returns plain data under ``metrics`` plus the objects for the figures."""
    emb = node_embeddings(model, lang, heldout.tokens, heldout.lengths)
    agr = cluster_agreement(emb, clusterers, max_nodes=max_nodes, random_state=random_state)
    probe = linear_probe(emb, random_state=random_state)
    metrics = {"n_strings": len(heldout), "n_nodes": len(emb), "schedule": emb.schedule,
               "n_ecs": int(emb.meta["ec"].nunique()), "levels": int(emb.meta["level"].max()),
               "agreement": agr.table.to_dict("records"),
               "probe": {k: v for k, v in probe.items() if k != "model"}}
    out = {"metrics": metrics, "embeddings": emb, "agreement": agr, "probe": probe,
           "associativity": None}
    if not isinstance(model, OperatorModel):
        metrics["associativity"] = {"skipped": f"{type(model).__name__} has no binary operator"}
        return out
    if triples is not None:
        df = associativity(model, lang, *triples, probe=probe["model"])
        metrics["associativity"] = summarise_associativity(df)
        out["associativity"] = df
    return out


def _split_triples(h: HeldOut) -> _Triples:
    n = len(h) // 3

    def part(i: int) -> tuple[np.ndarray, np.ndarray]:
        ln = h.lengths[i * n: (i + 1) * n]
        return h.tokens[i * n: (i + 1) * n, : int(ln.max())], ln

    return part(0), part(1), part(2)


def probe_checkpoint(path: str | os.PathLike, n_strings: int = 200,
                     lengths: LengthsLike | None = None, mode: str = "lengths",
                     n_triples: int = 300, seed: int = 0, compare_init: bool = True,
                     clusterers: Any = CLUSTERERS, max_nodes: int | None = 3000,
                     device: torch.device | str = "cpu") -> dict[str, Any]:
    """Probe a checkpoint (and the same model at initialisation) on held-out strings.

    Returns ``{"metrics": JSON-able dict, "trained": probe_model(...), "init": ... or None}``;
    the metrics say how the strings are held out (``heldout``).
    """
    import torch

    from monoidlab.training.trainer import load_checkpoint

    model, cfg, problem, ckpt = load_checkpoint(path, device)
    lang = problem.language
    if lang is None:
        raise InputError(f"probing needs a language; {problem.name} is a tape task")
    steps = int(ckpt.get("step", cfg.steps))
    held = heldout_strings(cfg, problem, n_strings, lengths, mode, seed, steps=steps)
    trip = None
    if n_triples:
        t = heldout_strings(cfg, problem, 3 * n_triples, lengths, mode, seed + 1, steps=steps)
        trip = _split_triples(t) if len(t) >= 3 else None
    metrics = {"checkpoint": str(path), "model": cfg.model, "language": problem.name,
               "steps": steps, "seed": seed, "heldout": {"description": held.description,
                                                       **held.info}}
    trained = probe_model(model, lang, held, trip, clusterers, max_nodes, seed)
    metrics["trained"] = trained["metrics"]
    init = None
    if compare_init:
        init = probe_model(model_at_init(cfg, problem).to(torch.device(device)), lang, held,
                           trip, clusterers, max_nodes, seed)
        metrics["init"] = init["metrics"]
    return {"metrics": metrics, "trained": trained, "init": init, "language": lang}
