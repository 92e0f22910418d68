"""Studies: resumable experiments on the package's runner, each a config plus its own rows and
tables (see :mod:`monoidlab.studies.runner`).

Each study is one module here, found by its file name (``fresh_test.py`` is ``monoidlab study
fresh-test``); docs/studies.md lists them with their configs and what each measures.

>>> "threshold" in STUDIES, STUDIES["fresh-test"]
(True, 'monoidlab.studies.fresh_test')
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
           "study_sections", "write_study_docs", "study_table_markdown"]

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


def study_table_markdown() -> str:
    """docs/studies.md's table of studies, read from each ``STUDY``: its summary, its default
    config, its own options (``--NAME``) and actions (``--action NAME``).

    >>> study_table_markdown().splitlines()[0]
    '| study | what it measures | default config | options | actions |'
    """
    from monoidlab.bundled import configs_dir

    rows = ["| study | what it measures | default config | options | actions |",
            "|---|---|---|---|---|"]
    for name in STUDIES:
        st = get_study(name)
        # a config the package ships (a sweep file) is read from there; the others are the
        # repository's configs/ (study configs stay out of the wheel)
        where = "monoidlab/configs/" if (configs_dir() / st.default_config).is_file() else "configs/"
        options = ", ".join(f"`--{o.replace('_', '-')}`" for o in st.options) or "-"
        actions = ", ".join(f"`{a}`" for a in st.actions) or "-"
        rows.append(f"| `{name}` | {st.summary} | `{where}{st.default_config}` | {options} | "
                    f"{actions} |")
    return "\n".join(rows)
