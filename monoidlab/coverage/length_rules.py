"""A recommended training length, from the threshold study's measured L* (docs/results.md).

The support length s says which training lengths can *show* every composition the test lengths
need; the threshold study (``monoidlab study threshold``) measured the length L* at which
MLP-LDRU is actually solved. A *rule* maps s to a length ("s", "s+1", "s+2", "2s", all on the
study's grid); it *hits* a language when the study solved that language at the length it names
(at least 2 of 3 seeds, every test set): measured, not inferred from L*, because being solved
is not monotone in the length (tomita-5: solved at 4..6, not at 8 or 40). The rule per training sampler is chosen on the
languages fixed in the study config's ``[recommend] fit_languages`` (most hits, ties to the
shorter length), and scored apart on the other, held-out languages. ``fit_rules`` does this
from the study's table; ``monoidlab study threshold --write-docs`` writes the result to
``monoidlab/data/length-rules.json``, which :func:`recommend` reads.

Rules are per model family: a study of another model (``[study] rules_file`` in its config)
writes ``monoidlab/data/length-rules-<model>.json`` (:func:`rules_file`); ``recommend(...,
model=...)`` reads that family's rules and names the family in its basis. A family no study
has measured gets no length (the plain MLP-LDRU's rule is not borrowed for it).

What a recommendation rests on: that model family, identity padding, the balanced schedule
without offsets, training lengths 1..L, the study's recipe and budget (its ``samples``
strings) and test lengths 41..500. Outside that, :func:`recommend` names no length and says
why.

>>> RULES["2s"](6)
12
>>> fit_rules([{"language": "a", "sampler": "near_miss", "s": 4, "solved_lengths": [8, 40]}],
...           ["a"], ["s", "2s"])["near_miss"]["rule"]
'2s'
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from monoidlab.errors import InputError

#: The candidate rules, each a function of the support length s.
RULES: dict[str, Callable[[int], int]] = {
    "s": lambda s: s,
    "s+1": lambda s: s + 1,
    "s+2": lambda s: s + 2,
    "2s": lambda s: 2 * s,
    "3s": lambda s: 3 * s,
}
RULES_FILE = Path(__file__).resolve().parent.parent / "data" / "length-rules.json"
#: the family :data:`RULES_FILE` is for (the plain threshold study's model)
DEFAULT_MODEL = "mlp-ldru"


def rules_file(model: str = DEFAULT_MODEL) -> Path:
    """Where the rules fitted for ``model`` live (they may not exist yet).

    >>> rules_file().name, rules_file("transform-tree").name
    ('length-rules.json', 'length-rules-transform-tree.json')
    """
    if model == DEFAULT_MODEL:
        return RULES_FILE
    return RULES_FILE.with_name(f"length-rules-{model}.json")


def measured_models() -> list[str]:
    """The model families with fitted rules, the default first.

    >>> measured_models()[0]
    'mlp-ldru'
    """
    others = sorted(p.stem[len("length-rules-"):]
                    for p in RULES_FILE.parent.glob("length-rules-*.json"))
    return ([DEFAULT_MODEL] if RULES_FILE.is_file() else []) + others


@dataclass(frozen=True)
class Recommendation:
    """A recommended maximum training length (``None``: no supported rule) and its basis."""

    length: int | None
    sampler: str
    rule: str | None
    samples: int | None  # the strings per run the rule was measured with
    basis: str
    model: str = DEFAULT_MODEL  # the model family the recommendation holds for

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _hits(rows: list[dict], rule: str) -> tuple[int, list[str]]:
    hit = [r["language"] for r in rows if RULES[rule](r["s"]) in r["solved_lengths"]]
    return len(hit), hit


def fit_rules(rows: Iterable[dict], fit_languages: Iterable[str],
              rules: Iterable[str] = tuple(RULES), baseline: int | None = None
              ) -> dict[str, dict]:
    """Per sampler: the rule with the most hits on ``fit_languages`` (ties: the shorter length
    summed over them), its hits there and on the other languages, and every candidate's.

    ``rows``: one per finished (language, sampler) of the study, with ``s`` (identity padding)
    and ``solved_lengths`` (the maximum training lengths at which 2 of 3 seeds are solved).
    ``baseline``: a length of the study's grid that ignores s (the study's 40); its hits are
    kept beside the rule's (``"baseline"``), never a candidate: :func:`recommend` names the
    rule's length only where the rule hits at least as often as it.
    """
    rules = list(rules)
    unknown = [r for r in rules if r not in RULES]
    if unknown:
        raise InputError(f"[recommend] rules: unknown {unknown}; choose from {list(RULES)}")
    fit = set(fit_languages)
    out: dict[str, dict] = {}
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(r["sampler"], []).append(r)
    for sampler, got in sorted(by.items()):
        on = [r for r in got if r["language"] in fit]
        off = [r for r in got if r["language"] not in fit]
        if not on:
            continue
        cand = {rule: {"fit_hits": _hits(on, rule)[0], "held_out_hits": _hits(off, rule)[0]}
                for rule in rules}
        best = min(rules, key=lambda rule: (-cand[rule]["fit_hits"],
                                            sum(RULES[rule](r["s"]) for r in on)))
        out[sampler] = {
            "rule": best,
            "fit": {"hits": cand[best]["fit_hits"], "of": len(on),
                    "languages": sorted(r["language"] for r in on)},
            "held_out": {"hits": cand[best]["held_out_hits"], "of": len(off),
                         "languages": sorted(r["language"] for r in off)},
            "candidates": cand,
        }
        if baseline is not None:
            fit_hit = sum(baseline in r["solved_lengths"] for r in on)
            out[sampler]["baseline"] = {
                "length": baseline, "fit_hits": fit_hit,
                "held_out_hits": sum(baseline in r["solved_lengths"] for r in off)}
    return out


def load_rules(path: Path | str = RULES_FILE) -> dict[str, Any]:
    """The study's fitted rules (``{"samplers": {...}, "samples": N, ...}``); empty if none."""
    path = Path(path)
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("samplers"), dict):
        raise InputError(f"{path}: expected an object with a 'samplers' table")
    return data


def recommend(support_length: int | None, sampler: str, *, padding: str = "identity",
              schedule: str = "balanced", offsets: bool = False, train_min: int = 1,
              rules: dict[str, Any] | None = None, model: str = DEFAULT_MODEL
              ) -> Recommendation:
    """The study's recommended maximum training length for ``sampler`` and the ``model``
    family, or none, with why (``rules``: fitted rules to use instead of the family's file).

    >>> recommend(4, "uniform", rules={"samplers": {}}).length is None
    True
    >>> recommend(4, "near_miss", model="transform-tree").model
    'transform-tree'
    """
    if not isinstance(model, str) or not re.fullmatch(r"[a-z0-9][a-z0-9_-]*", model):
        raise InputError(f"model {model!r}: a model name (monoidlab models), e.g. "
                         f"{DEFAULT_MODEL!r}")

    def none(why: str) -> Recommendation:
        return Recommendation(None, sampler, None, None, why, model)

    if rules is None:
        path = rules_file(model)
        if not path.is_file():
            have = ", ".join(measured_models()) or "none yet"
            return none(f"no threshold study has fitted a rule for model {model} (fitted for: "
                        f"{have}); another family's rule is not borrowed for it")
        rules = load_rules(path)
    data = rules
    samplers = data.get("samplers", {})
    family = str(data.get("model", model))

    if support_length is None:
        return none("no support length: no training length up to the search limit shows every "
                    "needed composition, so no rule applies")
    if (padding, schedule, offsets, train_min) != ("identity", "balanced", False, 1):
        return none("the threshold study trained with identity padding, the balanced schedule, "
                    "no offsets and lengths from 1; no rule is measured for this layout")
    if sampler not in samplers:
        have = ", ".join(sorted(samplers)) or "none yet"
        return none(f"the threshold study has no fitted rule for the {sampler} sampler "
                    f"(fitted: {have})")
    e = samplers[sampler]
    rule = e["rule"]
    fit, held = e["fit"], e["held_out"]
    n = fit["of"] + held["of"]
    options = ", ".join(f"{k} {v}" for k, v in sorted(data.get("model_options", {}).items()))
    setting = (f"model {family}{f' ({options})' if options else ''}, "
               f"{data.get('samples', 0):,} training strings per run, "
               "identity padding, test lengths 41..500 (docs/results.md, the threshold study "
               f"{'of the plain model' if family == DEFAULT_MODEL else 'of ' + family})")
    basis = (f"rule L = {rule}, chosen on {fit['of']} languages of the threshold study "
             f"({fit['hits']} of {fit['of']} solved at that length); held out: "
             + (f"{held['hits']} of {held['of']}" if held["of"] else "none finished yet"))
    base = e.get("baseline")
    if base is None:
        return Recommendation(RULES[rule](support_length), sampler, rule, data.get("samples"),
                              f"{basis}. {setting}", model)
    b_hits = base["fit_hits"] + base["held_out_hits"]
    b_len = base["length"]
    if fit["hits"] + held["hits"] >= b_hits:
        return Recommendation(RULES[rule](support_length), sampler, rule, data.get("samples"),
                              f"{basis}; L = {b_len}, which ignores s: {b_hits} of {n}. "
                              f"{setting}", model)
    # the rule of s does worse than a length that ignores s: recommend what was measured
    why = (f"no rule of s did as well as L = {b_len} in the threshold study (rule L = {rule}: "
           f"{fit['hits'] + held['hits']} of {n} languages solved at its length; L = {b_len}: "
           f"{b_hits} of {n}); s = {support_length} is a lower bound, not a length to train at")
    if support_length > b_len:
        return none(f"{why}; and s is above {b_len}, where the study measured nothing. "
                    f"{setting}")
    return Recommendation(b_len, sampler, f"{b_len}", data.get("samples"), f"{why}. {setting}",
                          model)
