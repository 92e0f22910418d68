"""monoidlab: length generalisation of sequence models through syntactic monoids.

The main path, importable from the top level (torch, seaborn and umap load only when used):

>>> import monoidlab as ml
>>> lang = ml.load_language("tomita-7")
>>> lang.monoid().size
9
>>> ml.min_training_length(lang, test_lengths=range(41, 61)).support_length
12
"""

from monoidlab.algebra.automaton import Automaton, minimise
from monoidlab.algebra.languages import language_names, load_language, suite, suite_names
from monoidlab.algebra.monoid import SyntacticMonoid
from monoidlab.coverage.exact import (
    Coverage,
    CoverageGap,
    compare,
    coverage_gap,
    exact_coverage,
    sampled_coverage,
)
from monoidlab.coverage.min_length import MinLength, min_training_length
from monoidlab.errors import (
    ConfigError,
    InputError,
    MonoidlabError,
    MonoidTooLarge,
    SpecError,
    UnknownName,
)
from monoidlab.geometry import Lengths
from monoidlab.strings.sampling import Batch, length_batches, sample

__version__ = "0.1.0"

# Torch-using names, imported on first use so that `import monoidlab` stays light.
_LAZY = ("extract_automaton", "extract_monoid", "certify", "FiniteTable", "monoid_table")


def __getattr__(name: str) -> object:
    if name == "extract_automaton":
        from monoidlab.probing.extract_automaton import extract_automaton

        return extract_automaton
    if name == "extract_monoid":
        from monoidlab.probing.extract_monoid import extract_monoid

        return extract_monoid
    if name == "certify":
        from monoidlab.probing.certify import certify

        return certify
    if name in ("FiniteTable", "monoid_table"):
        from monoidlab.models import finite

        return getattr(finite, name)
    raise AttributeError(f"module 'monoidlab' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])

__all__ = ["Automaton", "minimise", "SyntacticMonoid", "load_language", "language_names",
           "suite", "suite_names", "Batch", "sample", "length_batches", "Coverage",
           "CoverageGap", "exact_coverage", "sampled_coverage", "coverage_gap", "compare",
           "MinLength", "min_training_length", "Lengths", "MonoidlabError", "InputError",
           "UnknownName", "SpecError", "ConfigError", "MonoidTooLarge", "__version__"]
