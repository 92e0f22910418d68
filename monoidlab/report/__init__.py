"""One self-contained HTML report for a language (figures embedded as PNG, opens offline).

The page opens with a summary box (:mod:`monoidlab.report.summary`: language, monoid size,
support length and sample size with the sampler named, the strict verdict per kind beside its
baselines, the probing headline), then the sections of :data:`SECTIONS` in order
(:mod:`monoidlab.report.sections`): the language, its monoid, coverage, minimum-training-length
estimates and, with a checkpoint, the trained model and its probing. A new section is one more
:class:`Section` in that tuple.

Example
-------
>>> import tempfile, pathlib
>>> out = pathlib.Path(tempfile.mkdtemp())
>>> path = build_report("parity", out, train_lengths=range(1, 9), test_lengths=range(30, 33))
>>> path.name, path.read_text().count("<img") >= 4
('parity.html', True)
"""

from __future__ import annotations

from monoidlab.report.page import build_report
from monoidlab.report.sections import SECTIONS, Report, Section

__all__ = ["build_report", "SECTIONS", "Section", "Report"]
