"""Probe a model or a checkpoint end to end: embeddings, clustering, probe, associativity.

:func:`probe_model` runs every instrument on one model; :func:`probe_checkpoint` on a
checkpoint and on the same model at initialisation (the baseline every figure is read against);
:func:`summary_tables` turns the metrics into the three tables the CLI, the report and the
notebook print, each with its references: the model at initialisation and a chance row
(shuffled clusters, the majority EC, a constant head).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from monoidlab._checks import check_count, check_seed, scalar_args
from monoidlab._util import progress_bar
from monoidlab.errors import InputError
from monoidlab.geometry import LengthsLike
from monoidlab.models.protocols import OperatorModel
from monoidlab.probing.associativity import associativity, summarise_associativity
from monoidlab.probing.clustering import CLUSTERERS, cluster_agreement, linear_probe
from monoidlab.probing.embeddings import HeldOut, heldout_strings, node_embeddings
from monoidlab.probing.triples import heldout_triples

if TYPE_CHECKING:
    import torch
    from torch import nn

    from monoidlab.algebra.automaton import Automaton
    from monoidlab.training.config import RunConfig
    from monoidlab.training.problems import Problem

__all__ = ["model_at_init", "probe_model", "probe_checkpoint", "summary_tables", "MAX_PROBE"]

MAX_PROBE = 100_000  # held-out strings / triples one probe may embed (all held in memory)

_Triples = tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray],
                 tuple[np.ndarray, np.ndarray]]  # x, y, z as (tokens, lengths)


def model_at_init(cfg: RunConfig, problem: Problem) -> nn.Module:
    """The checkpoint's model as the trainer built it before step 0 (same seed, same config);
    the global torch RNG is left untouched."""
    import torch

    from monoidlab.training.trainer import build_for

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        model = build_for(cfg, problem)
    return model.eval()


class _Stages:
    """A ``tqdm.auto`` bar over named stages (a no-op when ``bar`` is None)."""

    def __init__(self, bar: Any = None, prefix: str = "") -> None:
        self.bar, self.prefix = bar, prefix

    def __call__(self, name: str) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(f"{self.prefix}{name}", refresh=False)
            self.bar.update(1)


@scalar_args
def probe_model(model: nn.Module, lang: Automaton, heldout: HeldOut,
                triples: _Triples | None = None, clusterers: Any = CLUSTERERS,
                max_nodes: int | None = 3000, seed: int | None = 0,
                stage: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Embeddings, cluster agreement, linear probe and (for tree models) associativity of one
    model. Returns plain data under ``metrics`` plus the objects for the figures. ``stage``
    (optional) is called with a name after each of the four steps (progress bars)."""
    stage = stage or _Stages()
    emb = node_embeddings(model, lang, heldout.tokens, heldout.lengths)
    stage("embeddings")
    agr = cluster_agreement(emb, clusterers, max_nodes=max_nodes, seed=seed)
    stage("clustering")
    probe = linear_probe(emb, seed=seed)
    stage("linear probe")
    metrics = {"n_strings": len(heldout), "n_nodes": len(emb), "schedule": emb.schedule,
               "n_ecs": int(emb.meta["ec"].nunique()), "levels": int(emb.meta["level"].max()),
               "agreement": agr.table.to_dict("records"),
               "probe": {k: v for k, v in probe.items() if k != "model"}}
    out = {"metrics": metrics, "embeddings": emb, "agreement": agr, "probe": probe,
           "associativity": None}
    if not isinstance(model, OperatorModel):
        metrics["associativity"] = {"skipped": f"{type(model).__name__} has no binary operator"}
    elif triples is not None:
        df = associativity(model, lang, *triples, probe=probe["model"])
        metrics["associativity"] = summarise_associativity(df)
        out["associativity"] = df
    stage("associativity")
    return out


@scalar_args
def probe_checkpoint(path: str | os.PathLike, n_strings: int = 200,
                     lengths: LengthsLike | None = None, mode: str = "lengths",
                     n_triples: int = 300, seed: int = 0, compare_init: bool = True,
                     clusterers: Any = CLUSTERERS, max_nodes: int | None = 3000,
                     device: torch.device | str = "cpu",
                     progress: bool = False) -> dict[str, Any]:
    """Probe a checkpoint (and the same model at initialisation) on held-out strings, with a
    ``tqdm.auto`` bar over the steps when ``progress``.

    Returns ``{"metrics": JSON-able dict, "trained": probe_model(...), "init": ... or None}``;
    the metrics say how the strings are held out (``heldout``) and how the associativity
    triples were drawn (``triples``: :func:`~monoidlab.probing.heldout_triples`, the class of
    xyz balanced).
    """
    check_count(n_strings, "n_strings", maximum=MAX_PROBE)
    check_count(n_triples, "n_triples", minimum=0, maximum=MAX_PROBE)
    if max_nodes is not None:
        check_count(max_nodes, "max_nodes")
    check_seed(seed, generator=False)
    import torch

    from monoidlab.training.attempts import attempt_config, weights_attempt
    from monoidlab.training.trainer import load_checkpoint

    model, cfg, problem, ckpt = load_checkpoint(path, device)
    lang = problem.language
    if lang is None:
        raise InputError(f"probing needs a language; {problem.name} is a tape task")
    steps = int(ckpt.get("step", cfg.steps))
    # with restarts, the weights come from one attempt: its own seed gave their initial weights
    # and the only training strings they saw (its first `steps` steps)
    attempt = weights_attempt(cfg, steps)
    cfg, steps = attempt_config(cfg, attempt), steps - attempt * cfg.steps
    bar = None
    if progress:
        bar = progress_bar(total=1 + 4 * (1 + bool(compare_init)), desc="probe")
    held = heldout_strings(cfg, problem, n_strings, lengths, mode, seed, steps=steps)
    metrics: dict[str, Any] = {"checkpoint": str(path), "model": cfg.model,
                               "language": problem.name, "steps": steps, "seed": seed,
                               **({"attempt": attempt} if attempt else {}),
                               "heldout": {"description": held.description, **held.info}}
    trip = None
    if n_triples and isinstance(model, OperatorModel):
        t = heldout_triples(cfg, problem, n_triples, lengths, mode, seed + 1, steps=steps)
        trip = (t.x, t.y, t.z)
        metrics["triples"] = {"description": t.description, **(t.info or {})}
    _Stages(bar)("held-out strings")
    trained = probe_model(model, lang, held, trip, clusterers, max_nodes, seed,
                          _Stages(bar, "trained: "))
    metrics["trained"] = trained["metrics"]
    init = None
    if compare_init:
        init = probe_model(model_at_init(cfg, problem).to(torch.device(device)), lang, held,
                           trip, clusterers, max_nodes, seed, _Stages(bar, "init: "))
        metrics["init"] = init["metrics"]
    if bar is not None:
        bar.close()
    return {"metrics": metrics, "trained": trained, "init": init, "language": lang}


def _r(v: Any) -> float | str:
    return "" if v is None or v == "" else round(float(v), 3) + 0.0  # no "-0.0"


def summary_tables(metrics: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The probing results as three tables (lists of rows), each beside its references.

    * ``agreement``: per clustering method, the trained model, the model at initialisation and
      ``chance`` (the trained model's clusters shuffled across the nodes: same sizes, no
      relation to the ECs).
    * ``probe``: the linear probe's test accuracy, trained and at initialisation, beside
      ``chance`` (the share of the most frequent EC among the test nodes).
    * ``associativity``: trained, at initialisation, and a constant head (always the most
      frequent class of xyz): it scores ``majority`` on head_true / head_direct, 1.0 on
      head_same (so head_same alone says nothing) and the most frequent EC's share on
      probe_true. ``cos`` is read against ``cos unrelated`` (roots of different triples).

    >>> t = summary_tables({"trained": {"agreement": [{"method": "kmeans", "level": "all",
    ...     "ari": 0.5, "nmi": 0.6, "v_measure": 0.6, "purity": 0.7, "chance_ari": 0.0,
    ...     "chance_nmi": 0.1, "chance_v_measure": 0.1, "chance_purity": 0.3}],
    ...     "probe": {"accuracy": 0.9, "train_accuracy": 1.0, "chance": 0.2}}})
    >>> [r["model"] for r in t["agreement"]], t["probe"][0]["chance"]
    (['trained', 'chance (shuffled clusters)'], 0.2)
    """
    which = [w for w in ("trained", "init") if w in metrics]
    agreement = []
    methods = dict.fromkeys(a["method"] for w in which for a in metrics[w]["agreement"]
                            if a.get("level") == "all")
    for method in methods:
        chance = None
        for w in which:
            for a in metrics[w]["agreement"]:
                if a.get("level") == "all" and a["method"] == method:
                    agreement.append({"model": w, "clustering": method, "ARI": _r(a["ari"]),
                                      "NMI": _r(a["nmi"]), "V": _r(a["v_measure"]),
                                      "purity": _r(a["purity"]), "nodes": a.get("n", "")})
                    if w == which[0] and "chance_ari" in a:
                        chance = {"model": "chance (shuffled clusters)", "clustering": method,
                                  "ARI": _r(a["chance_ari"]), "NMI": _r(a["chance_nmi"]),
                                  "V": _r(a["chance_v_measure"]),
                                  "purity": _r(a["chance_purity"]), "nodes": a.get("n", "")}
        if chance:
            agreement.append(chance)
    probe = [{"model": w, "accuracy": _r(metrics[w]["probe"]["accuracy"]),
              "train accuracy": _r(metrics[w]["probe"]["train_accuracy"]),
              "chance": _r(metrics[w]["probe"]["chance"])} for w in which]
    assoc = []
    for w in which:
        o = (metrics[w].get("associativity") or {}).get("overall")
        if not o:
            continue
        assoc.append({"model": w, "head_true": _r(o["head_true"]),
                      "head_direct": _r(o.get("head_direct")), "head_same": _r(o["head_same"]),
                      "probe_true": _r(o.get("probe_true")), "cos": _r(o["cos_mean"]),
                      "cos unrelated": _r(o.get("cos_unrelated_mean")),
                      "rel_l2": _r(o["rel_l2_mean"]),
                      "id_rel_l2": _r(o.get("id_right_rel_mean")), "n": o["n"]})
    if assoc and "majority" in (o := metrics[which[0]]["associativity"]["overall"]):
        assoc.append({"model": "constant head (majority class)", "head_true": _r(o["majority"]),
                      "head_direct": _r(o["majority"]), "head_same": 1.0,
                      "probe_true": _r(o.get("probe_chance")), "cos": "", "cos unrelated": "",
                      "rel_l2": "", "id_rel_l2": "", "n": o["n"]})
    return {"agreement": agreement, "probe": probe, "associativity": assoc}
