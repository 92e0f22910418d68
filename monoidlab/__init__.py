"""monoidlab: length generalisation of sequence models through syntactic monoids.

>>> import monoidlab as ml
>>> lang = ml.load_language("tomita-7")
>>> lang.monoid().size
9
"""

from monoidlab.automaton import Automaton, SpecError, minimise
from monoidlab.languages import language_names, load_language, suite, suite_names
from monoidlab.monoid import MonoidTooLarge, SyntacticMonoid

__version__ = "0.1.0"

__all__ = ["Automaton", "SpecError", "minimise", "SyntacticMonoid", "MonoidTooLarge",
           "load_language", "language_names", "suite", "suite_names", "__version__"]
