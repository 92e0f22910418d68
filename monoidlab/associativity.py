"""Deprecated alias of :mod:`monoidlab.probing.associativity` (kept for one release). Associativity checks moved there."""

import warnings

from monoidlab.probing.associativity import *  # noqa: F403
from monoidlab.probing.associativity import __all__  # noqa: F401

warnings.warn("monoidlab.associativity is deprecated; import monoidlab.probing.associativity instead", DeprecationWarning,
              stacklevel=2)
