"""Extra loss terms: what a config adds to the problem's loss, each with its weight.

A term is a key of the config (``assoc_weight``, ``offset_consistency``) that a model offers
through a capability (:class:`~monoidlab.models.protocols.RegularisedModel`,
:class:`~monoidlab.models.protocols.ConsistentModel`). The config has checked the capability
when it was built, so the step loop adds the terms :func:`loss_terms` lists and never asks the
model what it is.

Example
-------
>>> from monoidlab.training.config import RunConfig
>>> [t.key for t in loss_terms(RunConfig(language="parity", assoc_weight=0.1))]
['assoc_weight']
>>> loss_terms(RunConfig(language="parity"))
[]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from monoidlab.training.config import RunConfig

if TYPE_CHECKING:
    from torch import Tensor

__all__ = ["Term", "loss_terms", "TERMS"]


@dataclass(frozen=True)
class Term:
    """``weight × fn(model, batch)``, added to every training step's loss."""

    key: str
    weight: float
    fn: Callable[[Any, dict], Tensor]


def _associativity(model: Any, batch: dict) -> Tensor:
    return model.regulariser(batch["tokens"], batch["lengths"], batch.get("offsets"))


def _consistency(model: Any, batch: dict) -> Tensor:
    return model.consistency_loss(batch["tokens"], batch["lengths"], batch["offsets"])


#: config key -> the model's term (its capability is checked by the config)
TERMS: dict[str, Callable[[Any, dict], Tensor]] = {
    "assoc_weight": _associativity,
    "offset_consistency": _consistency,
}


def loss_terms(cfg: RunConfig) -> list[Term]:
    """The terms of ``cfg`` with a non-zero weight, in the order of :data:`TERMS`."""
    return [Term(key, float(getattr(cfg, key)), fn) for key, fn in TERMS.items()
            if getattr(cfg, key)]
