"""Probing trained models: do node embeddings cluster by the true monoid classes, and does the
learned operator behave like the monoid product?

Four instruments, each a plain function (or a scikit-learn-style estimator) on plain data:

* :func:`node_embeddings`: every internal tree node's state (MLP-LDRU, PR-LSTM, PR-RNN) or
  every prefix state (RNN, LSTM), with a pandas metadata frame: string, node, level, span,
  true EC (from the monoid), the automaton state and class the EC maps to.
* :func:`heldout_strings`: probing strings the checkpoint never trained on: *beyond the
  training lengths* (default), or *disjoint by content* (the checkpoint's training batches are
  regenerated exactly from ``default_rng([seed, step])`` and excluded). The result says which.
* :class:`ClusterAgreement` (any sklearn clusterer; KMeans with k = #ECs present by default)
  and :func:`cluster_agreement` (KMeans, agglomerative, HDBSCAN; overall and per level);
  :func:`agreement_scores` (ARI, NMI, homogeneity, completeness, V-measure, purity);
  :func:`linear_probe` (logistic regression fit on part of the held-out strings' nodes,
  scored on the others).
* :func:`heldout_triples`: triples (x, y, z) for the associativity check, cut from
  class-balanced strings xyz so that a constant head scores about 1 / #classes (three
  independent strings of a Dyck language multiply to the sink almost always).
* :func:`associativity`: on triples (x, y, z), the roots' (x⊙y)⊙z against x⊙(y⊙z) (cosine
  distance, relative L2, beside the distance between unrelated roots), whether the head / the
  probe decode both alike and to the class of xyz, and the identity check x⊙pad, pad⊙x
  (pad = the model's padding leaf).

:func:`probe_model` runs them all on one model; :func:`probe_checkpoint` on a checkpoint and
on the same model at initialisation (the baseline); :func:`summary_tables` prints every result
beside its references (initialisation, shuffled clusters, majority EC, constant head).

The package re-exports every public name, so ``from monoidlab.probing import X`` works for all
of them; the modules are :mod:`~monoidlab.probing.embeddings`,
:mod:`~monoidlab.probing.clustering`, :mod:`~monoidlab.probing.triples`,
:mod:`~monoidlab.probing.associativity` and :mod:`~monoidlab.probing.probe`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# Each name loads its module on first use: `monoidlab certify` needs certify.py alone, not
# scikit-learn (clustering.py), which costs about 1.5 s a process.
_WHERE = {
    "associativity": ("associativity", "root_states", "summarise_associativity"),
    "certify": ("certify",),
    "clustering": ("CLUSTERERS", "METRICS", "Agreement", "ClusterAgreement", "agreement_scores",
                   "chance_scores", "cluster_agreement", "linear_probe", "purity_score"),
    "drift": ("Drift", "drift"),
    "embeddings": ("HeldOut", "NodeEmbeddings", "heldout_strings", "node_embeddings",
                   "training_strings"),
    "probe": ("model_at_init", "probe_checkpoint", "probe_model", "summary_tables"),
    "triples": ("Triples", "draw_triples", "heldout_triples"),
}
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}

if TYPE_CHECKING:
    from monoidlab.probing.associativity import (
        associativity,
        root_states,
        summarise_associativity,
    )
    from monoidlab.probing.certify import certify
    from monoidlab.probing.clustering import (
        CLUSTERERS,
        METRICS,
        Agreement,
        ClusterAgreement,
        agreement_scores,
        chance_scores,
        cluster_agreement,
        linear_probe,
        purity_score,
    )
    from monoidlab.probing.drift import Drift, drift
    from monoidlab.probing.embeddings import (
        HeldOut,
        NodeEmbeddings,
        heldout_strings,
        node_embeddings,
        training_strings,
    )
    from monoidlab.probing.probe import (
        model_at_init,
        probe_checkpoint,
        probe_model,
        summary_tables,
    )
    from monoidlab.probing.triples import Triples, draw_triples, heldout_triples


def __getattr__(name: str) -> object:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'monoidlab.probing' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"monoidlab.probing.{module}"), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_MODULE_OF})


__all__ = ["certify", "Drift", "drift", "NodeEmbeddings", "node_embeddings", "HeldOut",
           "training_strings", "heldout_strings", "Triples", "draw_triples", "heldout_triples",
           "purity_score", "agreement_scores", "chance_scores", "ClusterAgreement", "Agreement",
           "cluster_agreement", "linear_probe", "root_states", "associativity",
           "summarise_associativity", "model_at_init", "probe_model", "probe_checkpoint",
           "summary_tables", "CLUSTERERS", "METRICS"]
