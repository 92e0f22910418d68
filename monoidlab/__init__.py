"""monoidlab: length generalisation of sequence models through syntactic monoids.

The main path, importable from the top level (torch, seaborn and umap load only when used):

>>> import monoidlab as ml
>>> lang = ml.load_language("tomita-7")
>>> lang.monoid().size
9
>>> ml.min_training_length(lang, test_lengths=range(41, 61)).support_length
12
"""

from monoidlab.automaton import Automaton, SpecError, minimise
from monoidlab.coverage import (
                                Coverage,
                                CoverageGap,
                                compare,
                                coverage_gap,
                                exact_coverage,
                                min_training_length,
                                sampled_coverage,
)
from monoidlab.languages import language_names, load_language, suite, suite_names
from monoidlab.monoid import MonoidTooLarge, SyntacticMonoid
from monoidlab.sampling import Batch, length_batches, sample

__version__ = "0.1.0"

__all__ = ["Automaton", "SpecError", "minimise", "SyntacticMonoid", "MonoidTooLarge",
           "load_language", "language_names", "suite", "suite_names", "Batch", "sample",
           "length_batches", "Coverage", "CoverageGap", "exact_coverage", "sampled_coverage",
           "coverage_gap", "compare", "min_training_length", "__version__"]
