"""The bundled trainer: the run configuration, problems, the step loop, attempts, sweeps.

* :mod:`~monoidlab.training.config`: :class:`RunConfig`, frozen, validated once;
* :mod:`~monoidlab.training.parse`: TOML, ``--key=value`` overrides and saved run folders →
  a config (the one place text is read);
* :mod:`~monoidlab.training.problems`: what is learned (a language, a tape task, next-token);
* :mod:`~monoidlab.training.loop`, :mod:`~monoidlab.training.attempts`,
  :mod:`~monoidlab.training.terms`: the step loop, restarts / validation / early stopping,
  the extra loss terms;
* :mod:`~monoidlab.training.trainer`: :func:`train` and :func:`load_checkpoint`;
* :mod:`~monoidlab.training.refine`: a finite model refined on its certificate's
  counterexamples (``refine_rounds``);
* :mod:`~monoidlab.training.sweep`: grids of runs.

>>> from monoidlab.training import RunConfig
>>> RunConfig(language="parity").model
'mlp-ldru'
"""

from monoidlab.errors import ConfigError, TrainingDiverged
from monoidlab.evaluation import Evaluation, evaluate, evaluate_kinds
from monoidlab.training.config import RunConfig, language_recipe
from monoidlab.training.parse import apply_overrides, config_from_dict, load_config
from monoidlab.training.trainer import build_for, load_checkpoint, pick_device, train

__all__ = ["RunConfig", "ConfigError", "apply_overrides", "config_from_dict", "load_config",
           "train", "evaluate", "evaluate_kinds", "Evaluation", "load_checkpoint",
           "TrainingDiverged", "pick_device", "build_for", "language_recipe"]
