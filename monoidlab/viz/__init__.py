"""Figures (seaborn/matplotlib): every function returns the figure; saving is the caller's choice.

* :mod:`monoidlab.viz.algebra`: the automaton, the multiplication table, egg-box diagrams.
* :mod:`monoidlab.viz.coverage`: composition heatmaps (train, test, ratio), missing
  compositions, the node-EC shift.
* :mod:`monoidlab.viz.probing`: EC × cluster contingency, UMAP, associativity histograms.
* :mod:`monoidlab.viz.training`: accuracy by length, exact match by operand length.

The figures read the objects they draw (coverages, monoids, embeddings) and import nothing
else from monoidlab, so every layer may call them.

Example
-------
>>> import monoidlab as ml
>>> from monoidlab.coverage.exact import exact_coverage
>>> from monoidlab.viz import coverage_heatmap
>>> fig = coverage_heatmap(exact_coverage(ml.load_language("dyck-2"), range(1, 9)))
>>> type(fig).__name__
'Figure'
"""

from __future__ import annotations

from monoidlab.viz._common import LABEL_LIMIT, pyplot
from monoidlab.viz.algebra import automaton_figure, egg_box_figure, multiplication_heatmap
from monoidlab.viz.coverage import (
    coverage_heatmap,
    gap_heatmaps,
    missing_table,
    ratio_heatmap,
    shift_bars,
)
from monoidlab.viz.training import accuracy_by_length, exact_match_figure, kind_accuracy_figure

__all__ = ["LABEL_LIMIT", "pyplot", "automaton_figure", "egg_box_figure",
           "multiplication_heatmap", "coverage_heatmap", "gap_heatmaps", "missing_table",
           "ratio_heatmap", "shift_bars", "accuracy_by_length", "exact_match_figure",
           "kind_accuracy_figure"]
