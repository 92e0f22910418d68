"""Walk the public API with a table of bad values (used by tests/test_api_arguments.py, and
runnable alone: ``python tests/api_walk.py`` prints every finding).

Every function and class in ``monoidlab.__all__`` and the subpackages' ``__all__``, and every
public method of the objects they return, is called once with valid example arguments (built
from the parameter's name, :data:`EXAMPLES`); then each scalar parameter (annotated ``int``,
``float``, ``bool`` or ``str``) is given each bad value of its type in turn, the others kept
valid. A bad value must raise a :class:`monoidlab.MonoidlabError` of one line that names the
parameter; a numpy integer must be accepted wherever a Python one is.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import monoidlab as ml
from monoidlab.errors import MonoidlabError

SUBPACKAGES = ("", "evaluation", "models", "probing", "report", "tasks", "training", "viz")

# Parameters whose negative values mean something (an offset, a position from the end).
NEGATIVE_OK: set[str] = set()


@dataclass
class Finding:
    where: str
    param: str
    value: Any
    what: str  # "accepted", "raw <ExcType>: msg", "not named", "numpy int refused"

    def line(self) -> str:
        return f"{self.where}({self.param}={self.value!r}): {self.what}"


@dataclass
class Walk:
    findings: list[Finding] = field(default_factory=list)
    walked: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    checked_values: int = 0


def examples(run: Any = None, tmp: Any = None) -> dict[str, Any]:
    """Valid arguments by parameter name: small, so that every call is quick. ``run`` (a
    trained parity run folder) gives the model, config and problem; ``tmp`` a scratch folder."""
    lang = ml.load_language("parity")
    monoid = lang.monoid()
    batch = ml.sample(lang, [3, 4], 4, seed=0)
    cov = ml.exact_coverage(lang, [1, 2, 3])
    gap = ml.compare(cov, ml.exact_coverage(lang, [5, 6]))
    ex: dict[str, Any] = {
        "lang": lang, "language": "parity", "monoid_or_lang": lang, "name": "parity",
        "name_or_path": "parity", "automaton": lang, "monoid": monoid,
        "lengths": [3, 4], "n": 4, "batch_size": 4, "test_lengths": [5, 6],
        "train_lengths": [1, 2, 3], "L": 4, "kind": "paper", "seed": 0,
        "rng": np.random.default_rng(0), "train": ml.sample(lang, [1, 2, 3], 8, seed=0),
        "test": ml.sample(lang, [5, 6], 8, seed=1),
        "start": 1, "stop": 5, "kinds": ("paper",), "labels": np.array([0, 1, 1]),
        "labels_true": np.array([0, 1, 1, 0]), "labels_pred": np.array([1, 0, 0, 1]),
        "max_elements": 1000, "strings": ["01", "10"], "strings_or_tokens": ["01", "10"],
        "words": ["01", "1"], "a": 0, "b": 1, "symbols": "ab",
        "tokens": batch.tokens, "batch": batch, "cov": cov, "gap": gap,
        "transformations": np.asarray(monoid.elements)[:2],
        "results": {"model": {3: 1.0, 4: 0.5}}, "runs": {"task": {"model": {3: 1.0}}},
        "n_symbols": 2, "alphabet": ("a", "b"), "delta": [[1, 0], [0, 1]], "output": [0, 1],
        "empty_batch": ml.sample(lang, [5], 0, seed=0),
    }
    if run is not None:
        from monoidlab.evaluation import evaluate_kinds
        from monoidlab.probing import associativity, draw_triples, heldout_strings, node_embeddings
        from monoidlab.training import load_checkpoint

        model, cfg, problem, _ = load_checkpoint(run)
        many = ml.sample(lang, [3, 4, 5, 6], 40, seed=2)
        emb = node_embeddings(model, lang, many.tokens, many.lengths)
        tri = draw_triples(problem, 6, [3, 4])
        ex.update(model=model, cfg=cfg, problem=problem, model_or_run=run, path=run,
                  checkpoint=run, emb=emb, heldout=heldout_strings(cfg, problem, 6),
                  ev=evaluate_kinds(model, problem, [5, 6], n_per_length=4),
                  x=tri.x, y=tri.y, z=tri.z, part_lengths=[3, 4],
                  df=associativity(model, lang, tri.x, tri.y, tri.z),
                  data={"language": "parity", "model": "mlp-ldru", "steps": 2},
                  overrides=["steps=3"], ev_dict=None)
        ex["ev_dict"] = ex["ev"].as_dict()
        ex["evaluation"] = ex["ev"]
        from monoidlab.models.protocols import Classifier
        from monoidlab.tasks import RandomStream

        ex["classifier"] = Classifier
        ex["stream"] = RandomStream(np.random.default_rng(0))
        ex["batch_lengths"] = batch.lengths
    if tmp is not None:
        from pathlib import Path

        cfg_file = Path(tmp) / "walk.toml"
        cfg_file.write_text('language = "parity"\nmodel = "mlp-ldru"\nsteps = 2\n')
        ex["config_file"] = cfg_file
    if tmp is not None:
        ex["out_dir"] = tmp
    return ex


# Arguments that keep a valid call quick (the walk calls each function many times), or that
# one function needs in another shape than the table's.
EXTRA: dict[str, dict[str, Any]] = {
    "monoidlab.Automaton.decode": {"lengths": [3, 3, 3, 3]},
    "monoidlab.compare": {"train": "@cov", "test": "@cov"},
    "monoidlab.probing.node_embeddings": {"lengths": "@batch_lengths"},
    "monoidlab.probing.root_states": {"lengths": "@batch_lengths"},
    "monoidlab.training.load_config": {"path": "@config_file"},
    "monoidlab.evaluation.min_beside_baselines": {"evaluation": "@ev_dict"},
    "monoidlab.SyntacticMonoid.element_of": {"lengths": [3, 3, 3, 3]},
    "monoidlab.SyntacticMonoid.prefix_elements": {"lengths": [3, 3, 3, 3]},
    "monoidlab.suite": {"name": "tomita"},
    "monoidlab.evaluation.evaluate_kinds": {"lengths": [5, 6], "n_per_length": 4},
    "monoidlab.training.evaluate_kinds": {"lengths": [5, 6], "n_per_length": 4},
    "monoidlab.evaluation.evaluate": {"lengths": [5, 6], "n_per_length": 4},
    "monoidlab.training.evaluate": {"lengths": [5, 6], "n_per_length": 4},
    "monoidlab.evaluation.kind_batch": {"lengths": [3, 3, 3, 3]},
    "monoidlab.evaluation.count_baseline": {"lengths": [3, 4, 3, 4],
                                            "labels": np.array([0, 1, 1, 0])},
    "monoidlab.models.model_spec": {"name": "mlp-ldru"},
    "monoidlab.models.model_class": {"name": "mlp-ldru"},
    "monoidlab.models.build_model": {"name": "mlp-ldru", "vocab_size": 2, "n_classes": 2},
    "monoidlab.probing.probe_checkpoint": {"n_strings": 12, "n_triples": 12,
                                           "compare_init": False, "clusterers": ("kmeans",)},
    "monoidlab.probing.probe_model": {"clusterers": ("kmeans",)},
    "monoidlab.probing.cluster_agreement": {"clusterers": ("kmeans",), "min_group": 2},
    "monoidlab.probing.drift": {"test_lengths": (13, 14), "strings": 4, "min_nodes": 2},
    "monoidlab.probing.heldout_strings": {"n": 6},
    "monoidlab.probing.heldout_triples": {"n": 6},
    "monoidlab.report.build_report": {"probe": False, "umap": False, "overwrite": True,
                                      "train_lengths": [1, 2, 3], "test_lengths": [5, 6]},
    "monoidlab.training.train": {"progress": False, "evaluate_at_end": False},
    "monoidlab.tasks.get_task": {"name": "parity_check"},
    "monoidlab.evaluation.check_test_lengths": {"lengths": [5, 6]},
    "monoidlab.evaluation.Evaluation.solved_by": {"measure": "per_string"},
    "monoidlab.training.Evaluation.solved_by": {"measure": "per_string"},
    "monoidlab.evaluation.to_device": {"batch": {}, "device": "cpu"},
    "monoidlab.models.able": {"capability": "@classifier"},
    "monoidlab.models.require": {"model": "mlp-ldru", "capability": "@classifier",
                                 "what": "classify"},
    "monoidlab.probing.NodeEmbeddings.subset": {"idx": [0, 1]},
    "monoidlab.tasks.ListOpsSplit": {"name": "train", "lengths": range(4, 12), "min_depth": 1,
                                     "max_depth": 2},
    "monoidlab.tasks.evaluate_brackets": {"tokens": list("((1+2)*-3)"), "modulus": 5},
    "monoidlab.tasks.evaluate_listops": {"tokens": "[MED 1 2 ]".split()},
    "monoidlab.tasks.listops_depth": {"tokens": "[MAX 1 [MIN 2 3 ] ]".split()},
    "monoidlab.tasks.generate_bracket_expression": {"stream": "@stream", "length": 5,
                                                    "modulus": 5, "operators": "+-*"},
}

#: What the walk does not call, and why: records the package builds for itself (a registry
#: entry, a report section, a drift or clustering result), abstract bases, a decorator, and
#: JSON upgraders whose input is a whole results file.
NOT_WALKED = {
    "monoidlab.evaluation.Baseline": "a registry entry (name, meaning, a function)",
    "monoidlab.models.ModelSpec": "a registry entry (the model registry's record)",
    "monoidlab.report.Section": "a report section (a title and a build function)",
    "monoidlab.report.Report": "the report's internal state while it is built",
    "monoidlab.probing.Drift": "drift()'s result record (its fields are measured values)",
    "monoidlab.probing.Triples": "draw_triples()'s result record (arrays of strings)",
    "monoidlab.probing.Agreement": "cluster_agreement()'s result record (tables)",
    "monoidlab.probing.summary_tables": "formats a probe's whole metrics dictionary",
    "monoidlab.evaluation.upgrade_results": "upgrades a whole results.json dictionary",
    "monoidlab.tasks.Task": "an abstract base class",
    "monoidlab.tasks.TextTask": "the base of ag_news, dbpedia and sst2 (walked through them)",
    "monoidlab.tasks.TaskBatch": "a task's batch record (arrays)",
    "monoidlab.tasks.register_task": "a class decorator",
    "monoidlab.training.RunConfig": "takes **keys: every key has its check in the config "
                                    "reader (config_from_dict is walked; tests/test_config.py)",
}


def receivers(ex: dict[str, Any]) -> dict[str, Any]:
    """One object of each class whose methods (and, for a dataclass, constructor) are walked:
    what the API returns, by class name."""
    objs = [ex["lang"], ex["monoid"], ex["batch"], ex["cov"], ex["gap"], ml.Lengths(1, 5),
            ml.min_training_length(ex["lang"], [5, 6])]
    objs += [ex[k] for k in ("ev", "emb", "heldout", "tri") if k in ex]
    return {type(o).__name__: o for o in objs}


def bad_values(annotation: str, default: Any) -> list[Any]:
    """The bad values of a parameter's declared type (none for types the walk cannot judge)."""
    ann = annotation.replace("typing.", "")
    optional = "None" in ann or default is None
    parts = {p.strip() for p in ann.split("|")}
    out: list[Any] = []
    if parts <= {"int", "None"} and "int" in parts:
        out = [True, 2.5, "3", -1]
    elif parts <= {"float", "None"} and "float" in parts:
        out = ["x", float("nan")]
    elif parts <= {"bool", "None"} and "bool" in parts:
        out = ["no"]
    elif parts <= {"str", "None"} and "str" in parts:
        out = [3]
    if out and not optional:
        out.append(None)
    return out


def _targets(objs: dict[str, Any]) -> list[tuple[str, Callable[..., Any], Any]]:
    """(name, callable, receiver or None) for every public function, class and method."""
    found: list[tuple[str, Callable[..., Any], Any]] = []
    for sub in SUBPACKAGES:
        mod = importlib.import_module("monoidlab" + (f".{sub}" if sub else ""))
        for name in mod.__all__:
            obj = getattr(mod, name)
            where = f"monoidlab{'.' + sub if sub else ''}.{name}"
            if inspect.isclass(obj):
                if issubclass(obj, BaseException):
                    continue
                found.append((where, obj, None))
                if name in objs:
                    for meth, fn in vars(obj).items():
                        if not meth.startswith("_") and inspect.isfunction(fn):
                            found.append((f"{where}.{meth}", getattr(objs[name], meth), objs[name]))
            elif inspect.isfunction(obj):
                found.append((where, obj, None))
    return found


def _named(exc: BaseException, param: str) -> bool:
    text = str(exc)
    return bool(re.search(rf"(?<![A-Za-z0-9_]){re.escape(param)}(?![A-Za-z0-9_])", text))


def walk(only: Callable[[str], bool] = lambda w: True, run: Any = None,
         tmp: Any = None) -> Walk:
    """Run the walk; the findings list every bad value handled wrongly."""
    ex = examples(run, tmp)
    objs = receivers(ex)
    res = Walk()
    for where, fn, _recv in _targets(objs):
        if not only(where) or where in NOT_WALKED:
            continue
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            res.skipped[where] = "no signature"
            continue
        params = [p for p in sig.parameters.values()
                  if p.name not in ("self", "cls")
                  and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        extra = {k: ex.get(v[1:], v) if isinstance(v, str) and v.startswith("@") else v
                 for k, v in EXTRA.get(where, {}).items()}
        name = where.rsplit(".", 1)[-1]
        if inspect.isclass(fn) and dataclasses.is_dataclass(fn) and name in objs:
            # a record the API returns: rebuilt from the fields of a real one
            extra = {f.name: getattr(objs[name], f.name)
                     for f in dataclasses.fields(fn) if f.init} | extra
        given = {**ex, **extra}
        missing = [p.name for p in params if p.default is p.empty and p.name not in given]
        if missing:
            res.skipped[where] = f"no example for {', '.join(missing)}"
            continue
        base = {p.name: given[p.name] for p in params if p.default is p.empty or p.name in extra}
        try:
            fn(**base)
        except Exception as exc:  # noqa: BLE001 - the examples do not fit this callable
            res.skipped[where] = f"examples refused: {type(exc).__name__}: {exc}"[:160]
            continue
        res.walked.append(where)
        for p in params:
            valid = base.get(p.name, p.default)
            for bad in bad_values(str(p.annotation), p.default) + ([0] * (p.name == "batch_size")):
                if bad == -1 and (p.name in NEGATIVE_OK or not _is_count(valid)):
                    continue
                res.checked_values += 1
                try:
                    fn(**{**base, p.name: bad})
                except MonoidlabError as exc:
                    if "\n" in str(exc) or not _named(exc, p.name):
                        res.findings.append(Finding(where, p.name, bad, f"not named: {exc}"))
                except Exception as exc:  # noqa: BLE001 - the finding is what we report
                    res.findings.append(Finding(where, p.name, bad,
                                                f"raw {type(exc).__name__}: {exc}"[:200]))
                else:
                    res.findings.append(Finding(where, p.name, bad, "accepted"))
            for empty in _empty_values(p.name, ex):  # a clear error or a correct empty result
                res.checked_values += 1
                try:
                    fn(**{**base, p.name: empty})
                except MonoidlabError as exc:
                    if "\n" in str(exc):
                        res.findings.append(Finding(where, p.name, empty, f"two lines: {exc}"))
                except Exception as exc:  # noqa: BLE001 - the finding is what we report
                    res.findings.append(Finding(where, p.name, empty,
                                                f"raw {type(exc).__name__}: {exc}"[:200]))
            if isinstance(valid, int) and not isinstance(valid, bool):
                try:
                    fn(**{**base, p.name: np.int64(valid)})
                except Exception as exc:  # noqa: BLE001
                    res.findings.append(Finding(where, p.name, np.int64(valid),
                                                f"numpy int refused: {exc}"[:200]))
    return res


LENGTH_ARGS = {"lengths", "test_lengths", "train_lengths", "train", "test", "part_lengths"}
BATCH_ARGS = {"batch", "train", "test"}


def _empty_values(name: str, ex: dict[str, Any]) -> list[Any]:
    """Empty and degenerate inputs for a parameter, by its name: empty length lists and ranges,
    an empty batch, no tokens, one-class labels."""
    out: list[Any] = []
    if name in LENGTH_ARGS:
        out += [[], range(5, 5)]
    if name in BATCH_ARGS:
        out.append(ex["empty_batch"])
    if name in ("tokens", "strings", "strings_or_tokens", "words"):
        out.append([] if name != "tokens" else np.zeros((0, 0), np.int64))
    if name in ("labels", "labels_true", "labels_pred"):
        out += [np.zeros(0, np.int64), np.zeros(4, np.int64)]
    return out


def _is_count(valid: Any) -> bool:
    return isinstance(valid, int) and not isinstance(valid, bool) and valid >= 0


if __name__ == "__main__":
    import sys
    import tempfile

    r = walk(run=sys.argv[1] if len(sys.argv) > 1 else None, tmp=tempfile.mkdtemp())
    print(f"walked {len(r.walked)}, skipped {len(r.skipped)}, values {r.checked_values}, "
          f"findings {len(r.findings)}")
    for f in r.findings:
        print(" ", f.line())
    for w, why in r.skipped.items():
        print("  skipped", w, "-", why)
