"""The bundled trainer: configs, problems, the training loop, evaluation by length, sweeps.

>>> from monoidlab.training import TrainConfig
>>> TrainConfig(language="parity").model
'mlp-ldru'
"""

from monoidlab.training.config import ConfigError, TrainConfig, apply_overrides, load_config
from monoidlab.training.trainer import (
                                        TrainingDiverged,
                                        evaluate,
                                        load_checkpoint,
                                        pick_device,
                                        train,
)

__all__ = ["TrainConfig", "ConfigError", "apply_overrides", "load_config", "train", "evaluate",
           "load_checkpoint", "TrainingDiverged", "pick_device"]
