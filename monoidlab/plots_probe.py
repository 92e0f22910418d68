"""Deprecated alias of :mod:`monoidlab.viz.probing` (kept for one release). Probing figures moved there."""

import warnings

from monoidlab.viz.probing import *  # noqa: F403
from monoidlab.viz.probing import __all__  # noqa: F401

warnings.warn("monoidlab.plots_probe is deprecated; import monoidlab.viz.probing instead", DeprecationWarning,
              stacklevel=2)
