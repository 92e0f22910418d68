"""Studies: resumable experiments on the package's runner, each a config plus its own rows and
tables (see :mod:`monoidlab.studies.runner`).

=====================  ===========================================================
``threshold``          L* against the support length s (configs/threshold-*.toml)
``random-languages``   recipes on random languages, a development and a held-out half
``exact21``            the 21 tasks with the depth-exact models and their certificates
=====================  ===========================================================

>>> sorted(STUDIES)
['exact21', 'random-languages', 'threshold']
"""

from __future__ import annotations

import importlib

from monoidlab._suggest import known_choices
from monoidlab.errors import UnknownName
from monoidlab.studies.runner import (
    Study,
    StudyConfig,
    read_config,
    run_study,
    study_sections,
    write_study_docs,
)

__all__ = ["STUDIES", "get_study", "Study", "StudyConfig", "read_config", "run_study",
           "study_sections", "write_study_docs"]

#: study name → the module holding its ``STUDY`` (imported when asked for: each pulls in torch)
STUDIES = {"threshold": "monoidlab.studies.threshold",
           "random-languages": "monoidlab.studies.random_languages",
           "exact21": "monoidlab.studies.exact21"}


def get_study(name: str) -> Study:
    """The study called ``name``; an unknown name is an error listing the studies."""
    if name not in STUDIES:
        raise UnknownName(f"unknown study {name!r}" + known_choices(name, STUDIES, "studies"))
    study: Study = importlib.import_module(STUDIES[name]).STUDY
    return study
