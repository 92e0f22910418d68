"""What an extraction runs on: a model with its language, from a model or a run.

Both extractions (:mod:`~monoidlab.probing.extract_automaton`,
:mod:`~monoidlab.probing.extract_monoid`) accept a ``torch.nn.Module`` with a language, or a
checkpoint file / run folder whose saved config names the language; this module turns either
into one :class:`Target`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from monoidlab.errors import InputError

if TYPE_CHECKING:
    from torch import nn

    from monoidlab.algebra.automaton import Automaton
    from monoidlab.training.config import RunConfig

__all__ = ["Target", "resolve_target"]


@dataclass(frozen=True)
class Target:
    """A model in eval mode, the language it was trained on, and its run config (or None)."""

    model: nn.Module
    language: Automaton
    config: RunConfig | None
    source: str


def resolve_target(model_or_run: Any, language: Any = None,
                   device: str | None = None) -> Target:
    """A :class:`Target` from a model (``language`` required: an Automaton or a suite name) or
    from a checkpoint path / run folder (``language`` must then be None or the run's own)."""
    from monoidlab.algebra.automaton import Automaton
    from monoidlab.algebra.languages import load_language

    lang = load_language(language) if isinstance(language, str) else language
    if lang is not None and not isinstance(lang, Automaton):
        raise InputError(f"language: an Automaton or a language name, got "
                         f"{type(language).__name__}")
    if isinstance(model_or_run, (str, os.PathLike)):
        from monoidlab.training.trainer import load_checkpoint

        model, cfg, problem, _ = load_checkpoint(model_or_run, device or "cpu")
        if problem.language is None:
            raise InputError(f"{model_or_run}: extraction needs a language (an automaton); "
                             f"{problem.name} is a tape task")
        if lang is not None and lang != problem.language:
            raise InputError(f"language: {lang.name!r} is not the language of the run "
                             f"{model_or_run} ({problem.language.name!r}); leave it out")
        return Target(model.eval(), problem.language, cfg, str(model_or_run))
    import torch

    if not isinstance(model_or_run, torch.nn.Module):
        raise InputError(f"model_or_run: a torch model or a checkpoint path / run folder, got "
                         f"{type(model_or_run).__name__}")
    if lang is None:
        raise InputError("language: a bare model needs its language (an Automaton or a name, "
                         "e.g. language='dyck-2'); a run folder carries its own")
    if device is not None:
        model_or_run = model_or_run.to(device)
    return Target(model_or_run, lang, None, type(model_or_run).__name__)


def model_device(model: nn.Module) -> Any:
    """The device of the model's first parameter (CPU for a model without parameters)."""
    import torch

    p = next(iter(model.parameters()), None)
    return p.device if p is not None else torch.device("cpu")
