"""The sampler registry: one :class:`SamplerSpec` per sampler, declaring what it needs.

A spec names the sampler's function (``"module:name"``, imported on first use, as the model
registry does), the string law it draws and how (the table of docs/coverage.md is generated
from these), the length tables it builds (checked against the work limits before any work),
whether exact coverage computes its law, and whether it needs the model's tree. Everything
that lists, checks or dispatches samplers reads this table: :func:`~monoidlab.strings.sampling.sample`,
the run config, the trainer's problems, exact coverage, the minimum training length and the
command line's choices. A name is resolved once (:func:`sampler_spec`), where it enters (a
call of ``sample``, a config being built); what is passed on is the spec.

Two kinds of sampler:

* one :func:`~monoidlab.strings.sampling.sample` draws (``tree=False``): its function is
  ``draw(rng, lang, lens, keep, *, within, classes, mix, limits) -> tokens (B, T)``
  (:class:`Draw`), right-padded with zeros; ``sample`` labels the strings.
* one that lays strings out along the model's tree (``tree=True``, ``covering``): only a run
  draws it, through a plan built for that run: its function is ``plan(cfg, problem,
  schedule) ->`` a :class:`RunPlan`; ``stand_in`` names the sampler drawn where the plan is not
  (test strings, refinement, the rest of each batch, or the whole run when it says so).

Example
-------
>>> spec = sampler_spec("near_miss")
>>> spec.exact, spec.config_key, sampler_spec("covering", tree=True).tree
(None, 'near_miss_mix', True)
>>> sampler_spec("balanced").function().__name__
'draw_balanced'
>>> sampler_spec("uniformm")
Traceback (most recent call last):
...
monoidlab.errors.UnknownName: unknown sampler 'uniformm' (did you mean 'uniform'?); choose from uniform, balanced, ...
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from monoidlab._suggest import did_you_mean
from monoidlab.errors import UnknownName

if TYPE_CHECKING:
    import numpy as np

__all__ = ["SamplerSpec", "REGISTRY", "sampler_spec", "sampler_names", "sampler_table_markdown",
           "Draw", "RunPlan"]


class Draw(Protocol):
    """What a sampler's function is (``tree=False``): the tokens of ``len(lens)`` strings of
    lengths ``lens`` (right-padded with zeros), drawn from ``rng``. ``keep`` is the class mask
    of the sub-language ``within``; ``classes`` and ``mix`` are the options of ``sample`` (a
    sampler ignores those it does not take; ``mix`` arrives checked by ``settings``)."""

    def __call__(self, rng: np.random.Generator, lang: Any, lens: np.ndarray, keep: np.ndarray,
                 *, within: Any, classes: Any, mix: Any, limits: bool) -> np.ndarray: ...


class RunPlan(Protocol):
    """What a tree sampler's function returns for one run (``tree=True``)."""

    #: why the run trains on the ``stand_in`` sampler instead (None: it draws the plan)
    fallback: str | None

    def batch(self, problem: Any, rng: np.random.Generator, length: int, batch_size: int,
              step: int) -> dict:
        """Training batch ``step`` (the trainer's batch dict)."""
        ...

    def floor(self, counts: np.ndarray, steps: int, batch_size: int) -> np.ndarray:
        """Per-level composition counts raised to what the plan shows over ``steps`` steps."""
        ...

    def note(self, steps: int, whose: str) -> str:
        """A line under the run's sampled coverage saying how the plan was counted."""
        ...


@dataclass(frozen=True)
class SamplerSpec:
    """A sampler of the registry (see the module docstring for the two kinds).

    ``function``: ``"module:name"`` of its draw (or, ``tree=True``, its run plan); ``law`` and
    ``how``: its row of docs/coverage.md; ``tables``: ``(lang, rows, keep) -> (cells, what)``,
    the cells of the length tables it builds for ``rows`` lengths (None: none worth a limit);
    ``exact``: the law exact coverage computes for it, ``"strings"`` (uniform over the strings
    of the sub-language) or ``"classes"`` (an equal share of every class, uniform inside),
    None when it has none; ``settings``: ``"module:name"`` of the check of its settings (the
    ``mix`` of ``sample``, the run config's ``config_key``), normalising them; ``takes_classes``:
    whether it draws from the classes ``sample`` is given."""

    name: str
    function_target: str
    law: str
    how: str
    tables: Callable[[Any, int, Any], tuple[int, str] | None] | None = None
    exact: str | None = None
    tree: bool = False
    stand_in: str | None = None
    settings_target: str | None = None
    config_key: str | None = None
    #: whether ``sample(..., classes=)`` picks the classes it draws from (the others draw
    #: their own mix of classes and refuse it)
    takes_classes: bool = False

    def function(self) -> Callable[..., Any]:
        """The sampler's function (a :class:`Draw`, or a tree sampler's run plan)."""
        return _load(self.function_target)

    def check_settings(self, value: Any) -> Any:
        """Its settings checked and normalised; a sampler without settings takes only None (a
        ``mix`` handed to it would be ignored, so it is refused)."""
        if self.settings_target is not None:
            return _load(self.settings_target)(value)
        if value is not None:
            from monoidlab.errors import InputError

            takers = [s.name for s in REGISTRY.values() if s.settings_target and not s.tree]
            raise InputError(f"mix={value!r}: only the samplers {takers} take a mix; "
                             f"{self.name!r} has no settings"[:300])
        return value

    def settings_or_none(self, value: Any) -> Any:
        """``value`` for a sampler with settings, else None: for a caller that holds one run's
        settings (a config's ``near_miss_mix``) and draws with several samplers."""
        return value if self.settings_target is not None else None

    def __reduce__(self) -> tuple:
        # a spec travels (sweeps pickle configs) as its name: one object per sampler
        return (sampler_spec, (self.name,))


def _load(target: str) -> Any:
    module, name = target.split(":")
    return getattr(importlib.import_module(module), name)


# --------------------------------------------------------------- the tables each one builds
def _subset_paths(lang: Any, rows: int, keep: Any) -> tuple[int, str] | None:
    # uniform strings of the whole language need no table; of a sub-language, one group
    if keep.all():
        return None
    return rows * lang.n_states, "the uniform sampler's path counts (lengths x states x classes)"


def _class_paths(name: str) -> Callable[[Any, int, Any], tuple[int, str]]:
    def cells(lang: Any, rows: int, keep: Any) -> tuple[int, str]:
        return (rows * lang.n_states * lang.n_classes,
                f"the {name} sampler's path counts (lengths x states x classes)")
    return cells


def _ec_tables(lang: Any, rows: int, keep: Any) -> tuple[int, str]:
    return 2 * rows * lang.monoid().size, "the EC-stratified sampler's tables (lengths x ECs)"


# --------------------------------------------------------------------------- the registry
_SAMPLING = "monoidlab.strings.sampling"

REGISTRY: dict[str, SamplerSpec] = {s.name: s for s in (
    SamplerSpec("uniform", f"{_SAMPLING}:draw_uniform",
                "uniform over Σ^L (or over the sub-language `within`, the `classes`)",
                "i.i.d. letters; with `within` or `classes`, the `balanced` walk below with one "
                "group",
                tables=_subset_paths, exact="strings", takes_classes=True),
    SamplerSpec("balanced", f"{_SAMPLING}:draw_balanced",
                "every class that has strings of length L gets an equal share (round robin, so "
                "shares are exact up to the remainder); exactly uniform inside a class",
                "letter by letter, P(a) ∝ number of completions from δ(q, a) into the target "
                "class (path counts on the automaton, rescaled per length so lengths in the "
                "thousands do not overflow); no rejection, so a dyck-6 positive of length 400 "
                "(probability ~1e-50 under uniform sampling) costs the same as any string",
                tables=_class_paths("balanced"), exact="classes", takes_classes=True),
    SamplerSpec("ec_stratified", f"{_SAMPLING}:draw_ec_stratified",
                "uniform over the ECs reachable at length L, then uniform among the strings of "
                "that EC",
                "path counts on the monoid's right Cayley graph; gives rare compositions a fair "
                "share", tables=_ec_tables),
    SamplerSpec("ldru", f"{_SAMPLING}:draw_ldru",
                "the MLP-LDRU authors' data: half random walks that never enter a dead state "
                "(uniform among the letters that keep the walk alive), half uniform strings; "
                "labels recomputed",
                "for a non-recogniser every state is alive and this is `uniform`"),
    SamplerSpec("near_miss", f"{_SAMPLING}:draw_near_miss",
                "hard negatives: a mix (`mix`, default half `members`, a quarter `near_miss`, a "
                "quarter `uniform`) of members (accepted strings of a recogniser, class-balanced "
                "strings otherwise), near misses (one edit away from a string of another "
                "class) and uniform or `ec_stratified` strings",
                "each part by its own sampler, per length; where a length has no near miss (or "
                "no member), those strings are drawn class-balanced instead",
                tables=_class_paths("near_miss"), settings_target=f"{_SAMPLING}:check_mix",
                config_key="near_miss_mix"),
    SamplerSpec("covering", "monoidlab.coverage.covering:covering_run",
                "every composition the test lengths need, at every tree level where the "
                "training layout can show it, each a fixed number of times over the run; the "
                "rest of each batch `near_miss` strings",
                "a plan per run (the model's tree, padding and offsets): string i is built "
                "around target i mod T, exactly (monoidlab.coverage.covering); training only",
                tree=True, stand_in="near_miss",
                settings_target="monoidlab.coverage.covering:covering_settings",
                config_key="covering"),
)}


def sampler_names(tree: bool = False) -> tuple[str, ...]:
    """The samplers :func:`~monoidlab.strings.sampling.sample` draws; ``tree=True``: every
    sampler, those a run draws along its model's tree too.

    >>> sampler_names()[:2], "covering" in sampler_names(), "covering" in sampler_names(tree=True)
    (('uniform', 'balanced'), False, True)
    """
    return tuple(n for n, s in REGISTRY.items() if tree or not s.tree)


def sampler_spec(sampler: str | SamplerSpec, tree: bool = False) -> SamplerSpec:
    """The spec of ``sampler`` (a spec passes through); an unknown name, or, without ``tree``,
    a sampler that needs a model's tree, is :class:`~monoidlab.errors.UnknownName` listing the
    choices with the closest one."""
    if isinstance(sampler, SamplerSpec):
        spec: SamplerSpec | None = sampler
    else:
        spec = REGISTRY.get(sampler) if isinstance(sampler, str) else None
    choices = sampler_names(tree)
    if spec is None:
        if not isinstance(sampler, str):
            raise UnknownName(f"sampler: one of {', '.join(choices)}, got "
                              f"{type(sampler).__name__}")
        raise UnknownName(f"unknown sampler {sampler!r}{did_you_mean(sampler, choices)}; "
                          f"choose from {', '.join(choices)}")
    if spec.tree and not tree:
        raise UnknownName(f"sampler {spec.name!r} lays strings out along a model's tree: only a "
                          f"run draws it (RunConfig(sampler={spec.name!r})); choose from "
                          f"{', '.join(choices)}")
    return spec


def sampler_table_markdown() -> str:
    """docs/coverage.md's table of samplers, generated from the registry (a test keeps the page
    fresh).

    >>> sampler_table_markdown().splitlines()[2].startswith("| `uniform` |")
    True
    """
    lines = ["| sampler | law | how |", "|---|---|---|"]
    lines += [f"| `{s.name}` | {s.law} | {s.how} |" for s in REGISTRY.values()]
    return "\n".join(lines)
