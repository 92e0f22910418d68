"""Deprecated alias of :mod:`monoidlab.schedules` (kept for one release). The reduction schedules moved there."""

import warnings

from monoidlab.schedules import *  # noqa: F403
from monoidlab.schedules import __all__  # noqa: F401

warnings.warn("monoidlab.trees is deprecated; import monoidlab.schedules instead", DeprecationWarning,
              stacklevel=2)
