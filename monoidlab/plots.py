"""Deprecated alias of :mod:`monoidlab.viz` (kept for one release). Figures moved there."""

import warnings

from monoidlab.viz import *  # noqa: F403
from monoidlab.viz import __all__  # noqa: F401

warnings.warn("monoidlab.plots is deprecated; import monoidlab.viz instead", DeprecationWarning,
              stacklevel=2)
