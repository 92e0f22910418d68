"""The run configs the package ships (``monoidlab/configs/``), so that ``--config`` and
``monoidlab sweep`` find them by name wherever monoidlab is installed, not only in a clone. (The
studies' configs live in the repository's top-level ``configs/`` and are not shipped.)

A path that exists is always used as given. Otherwise a bare name (``ldru21-cpu``), a name with
``.toml`` or a path ``configs/NAME.toml`` (as the README spells it, typed outside a clone) names
the bundled file of that name, and a name that is not bundled is one error naming it and the
closest bundled names; any other path is returned as given (its reader reports it missing).

Example
-------
>>> resolve_config("sweep-smoke").name
'sweep-smoke.toml'
>>> "ldru21-cpu" in config_names()
True
>>> resolve_config("ldru12-cpu")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
monoidlab.errors.ConfigError: ldru12-cpu: no such file, and no bundled config of that name (closest: 'ldru21-cpu', ...
"""

from __future__ import annotations

import os
from pathlib import Path, PurePath

from monoidlab._suggest import closest_first
from monoidlab.errors import ConfigError

__all__ = ["configs_dir", "config_names", "resolve_config"]


def configs_dir() -> Path:
    """The folder of the bundled run configs (``monoidlab/configs/`` inside the package)."""
    return Path(__file__).resolve().parent / "configs"


def config_names() -> list[str]:
    """The bundled configs' names (file stems), sorted."""
    return sorted(p.stem for p in configs_dir().glob("*.toml"))


def resolve_config(path: str | os.PathLike) -> Path:
    """``path`` itself when it exists, else the bundled config it names (see the module)."""
    given = Path(path)
    if given.exists():
        return given
    parts = PurePath(path).parts
    # only the spellings that can mean a bundled file: NAME, NAME.toml, configs/NAME.toml
    if len(parts) == 1 or (len(parts) == 2 and parts[0] == "configs"):
        name = parts[-1].removesuffix(".toml")
        candidate = configs_dir() / f"{name}.toml"
        if name in config_names():
            return candidate
        close = [repr(n) for n in closest_first(name, config_names())[:3]]
        raise ConfigError(f"{path}: no such file, and no bundled config of that name (closest: "
                          f"{', '.join(close)}; all of them: {configs_dir()})")
    return given  # a path elsewhere: its reader says it cannot be read
