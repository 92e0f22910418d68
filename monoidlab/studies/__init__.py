"""Studies: resumable experiments on the package's runner, each a config plus its own rows and
tables (see :mod:`monoidlab.studies.runner`).

=====================  ===========================================================
``threshold``          L* against the support length s (configs/threshold-*.toml)
``random-languages``   recipes on random languages, a development and a held-out half
``exact21``            the 21 tasks with the depth-exact models and their certificates
``refine``             counterexample-guided refinement of the unproved 21-task runs
``long``               the five unsolved tasks at 100,000 steps (recipe pairs, curves)
``identity-padding``   identity padding and random offsets against the Dyck support lengths
``listops``            the MLP-LDRU paper's ListOps models at CPU scale
``ldru21``             MLP-LDRU (PR-LSTM, LSTM) on the 21 tasks, one sweep file each
``ldru21-choices``     each choice of the 21-task sweep against its alternative
``offsets``            random left offsets against the predicted support
``fresh-test``         the same weights on fresh test sets
``strict-evaluation``  the runs earlier figures rested on, strictly evaluated
``bracketing``         solved models under random bracketings: the monoid, or one tree?
``blame``              a run's wrong strings and the tree nodes to blame
``drift``              node states of one EC against tree depth
``recipe``             the authors' recipe against the defaults at CPU scale
``addition``           decimal addition: the Zhou et al. recipe against a baseline
``extraction``         automata and monoids extracted from solved models
``probing``            probes of trained models against their initialisation
=====================  ===========================================================

>>> sorted(STUDIES)[:4]
['addition', 'blame', 'bracketing', 'drift']
"""

from __future__ import annotations

import importlib
import pkgutil

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

#: the runner's own modules (not studies)
_MACHINERY = frozenset({"runner", "ledger"})

__all__ = ["STUDIES", "get_study", "Study", "StudyConfig", "read_config", "run_study",
           "study_sections", "write_study_docs"]

#: study name → the module holding its ``STUDY`` (imported when asked for: each pulls in
#: torch). Every module of this package but the runner's own and the private ones (``_*.py``,
#: a study's helpers) is a study, named after its file (``fresh_test.py`` → ``fresh-test``): a
#: new study is its module and its config, nothing else.
STUDIES = {m.name.replace("_", "-"): f"monoidlab.studies.{m.name}"
           for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name)
           if m.name not in _MACHINERY and not m.name.startswith("_")}


def get_study(name: str) -> Study:
    """The study called ``name``; an unknown name is an error listing the studies."""
    if name not in STUDIES:
        raise UnknownName(f"unknown study {name!r}" + known_choices(name, STUDIES, "studies"))
    study: Study = importlib.import_module(STUDIES[name]).STUDY
    return study
