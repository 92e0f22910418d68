"""The bundled trainer: configs, problems, the training loop, evaluation by length, sweeps.

>>> from monoidlab.training import TrainConfig
>>> TrainConfig(language="parity").model
'mlp-ldru'
"""

from monoidlab.errors import ConfigError, TrainingDiverged
from monoidlab.training.config import TrainConfig, apply_overrides, load_config
from monoidlab.training.evaluate import Evaluation, evaluate, evaluate_kinds
from monoidlab.training.trainer import build_for, load_checkpoint, pick_device, train

__all__ = ["TrainConfig", "ConfigError", "apply_overrides", "load_config", "train", "evaluate",
           "evaluate_kinds", "Evaluation", "load_checkpoint", "TrainingDiverged", "pick_device",
           "build_for"]
