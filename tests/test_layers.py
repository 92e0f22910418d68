"""The package is layered: every import (module level or inside a function) goes to the same or
a lower layer, no module-level import cycle exists, and nothing below ``monoidlab.cli`` imports
the command line. See docs/architecture.md for the layers and why each sits where it does.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "monoidlab"

# Lower number = lower layer. A module may import its own layer and the ones below.
LAYERS: dict[str, int] = {
    # 0: no monoidlab dependencies (errors, small utilities, compiled kernels, recursions,
    # the geometry of lengths, padding and offsets that every layer speaks)
    "errors": 0, "_suggest": 0, "geometry": 0, "_util": 0, "_paths": 0, "_kernels": 0, "_checks": 0,
    "_html": 0,
    "laws": 0, "sublanguage": 0, "bundled": 0, "recipes": 0,
    # 1: figures (which only read the objects they draw)
    "viz": 1,
    # 2: the algebra: automata, monoids, Green's relations, families, specs, the language
    # suite and the random-language generators (folder algebra/)
    "algebra": 2,
    # 3: sequence tasks (independent of the algebra but for the suite's automata)
    "tasks": 3,
    # 4: strings and trees (folder strings/)
    "strings": 4,
    # 5: compositions, coverage, covering plans, minimum training length (folder coverage/);
    # the public API on top
    "coverage": 5,
    "": 5,
    # 7: models and evaluation (which only calls the model it is given); 8: training;
    # 9: probing; 10: the report, and the studies (plan, train, ledger, tables: everything below)
    "models": 7, "evaluation": 7, "training": 8, "probing": 9, "report": 10, "studies": 10,
    # 11: the command line
    "cli": 11, "__main__": 11,
}

# Lazy (function-level) imports that may point upward, each with its reason.
ALLOWED_UPWARD = {
    # the monoid cache lives on the (immutable, shared) automaton: lang.monoid()
    ("automaton", "monoid"),
    # `ml.extract_automaton` / `ml.extract_monoid` / `ml.certify`: the top level names them,
    # loaded on first use
    ("", "probing"),
    # `ml.FiniteTable` / `ml.monoid_table` (a finite tree model's tables), likewise
    ("", "models"),
    # the distillation step of training (training/distil.py) runs probing's L* on the model
    # being trained, imported inside the function
    ("training", "probing"),
}


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE).with_suffix("")
    parts = ["monoidlab", *rel.parts]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


MODULES = all_modules()


def layer_of(module: str) -> int:
    top = module.split(".")[1] if module.count(".") else ""
    if top not in LAYERS:
        raise AssertionError(f"{module}: not assigned to a layer in tests/test_layers.py")
    return LAYERS[top]


def imports_of(module: str) -> list[tuple[str, bool, int]]:
    """``(imported monoidlab module, at module level?, line)`` for every import statement."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    top_level = {id(n) for n in tree.body}
    # imports inside `if TYPE_CHECKING:` never run
    type_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                 and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
    out = []
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from pkg import mod` is an edge to pkg.mod when mod is a module
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                     for a in node.names]
        else:
            continue
        for name in names:
            if name == "monoidlab" or name.startswith("monoidlab."):
                out.append((name, id(node) in top_level, node.lineno))
    return out


def test_every_module_has_a_layer():
    for module in MODULES:
        layer_of(module)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_upward_imports(module):
    here = layer_of(module)
    bad = []
    for target, _, line in imports_of(module):
        if layer_of(target) > here:
            pair = (module.split(".")[1] if "." in module else "", target.split(".")[1])
            if pair not in ALLOWED_UPWARD:
                bad.append(f"line {line}: {target} (layer {layer_of(target)} > {here})")
    assert not bad, f"{module} imports upward: {bad}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if not m.startswith("monoidlab.cli")
                                          and m != "monoidlab.__main__"))
def test_nothing_below_the_cli_imports_it(module):
    bad = [t for t, _, _ in imports_of(module) if t == "monoidlab.cli" or
           t.startswith("monoidlab.cli.")]
    assert not bad, f"{module} imports the command line: {bad}"


def test_no_module_level_import_cycles():
    g = nx.DiGraph()
    for module in MODULES:
        for target, top, _ in imports_of(module):
            if top and target != module:
                g.add_edge(module, target)
    # a package's __init__ importing its own submodules is how packages work, not a cycle
    cycles = [c for c in nx.simple_cycles(g)
              if not any(a.startswith(b + ".") or b.startswith(a + ".") for a in c for b in c)]
    assert not cycles, f"module-level import cycles: {cycles[:5]}"


# Module pairs that import each other inside functions, each with its reason (a cycle among the
# modules of one package is invisible to the layer rule, which assigns layers per package).
ALLOWED_CYCLES = {
    # the monoid cache lives on the automaton (see ALLOWED_UPWARD); the monoid is built from it
    frozenset({"monoidlab.algebra.automaton", "monoidlab.algebra.monoid"}),
    # Green's structure is a property of the monoid, computed on demand from it
    frozenset({"monoidlab.algebra.monoid", "monoidlab.algebra.green"}),
    # a coverage draws its own heatmap; the figure module reads coverages (type hints only)
    frozenset({"monoidlab.coverage.exact", "monoidlab.viz.coverage"}),
}


def test_no_import_cycles_between_modules_even_inside_functions():
    """Lazy imports included: two modules that import each other are a tangle unless listed
    in ALLOWED_CYCLES with a reason (training/next_token.py and training/problems.py were one:
    next_token took a private base class from problems, which imported next_token back)."""
    g = nx.DiGraph()
    for module in MODULES:
        for target, _, _ in imports_of(module):
            if target != module and target in MODULES:
                g.add_edge(module, target)
    cycles = [c for c in nx.simple_cycles(g, length_bound=2)
              if not any(a.startswith(b + ".") or b.startswith(a + ".") for a in c for b in c)
              and frozenset(c) not in ALLOWED_CYCLES]
    assert not cycles, f"modules that import each other: {cycles[:5]}"


def test_the_layer_rule_can_fail(tmp_path, monkeypatch):
    """The checker itself: a fake upward import is reported."""
    fake = PACKAGE / "errors.py"
    source = fake.read_text(encoding="utf-8") + "\n\ndef _x():\n    from monoidlab import report\n"
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None: source
                        if self == fake else Path.read_bytes(self).decode())
    with pytest.raises(AssertionError, match="imports upward"):
        test_no_upward_imports("monoidlab.errors")


def test_import_monoidlab_stays_light():
    """``import monoidlab`` loads no torch, sklearn, matplotlib, pandas or scipy."""
    import subprocess

    code = ("import sys, monoidlab; heavy = [m for m in ('torch', 'sklearn', 'matplotlib', "
            "'pandas', 'scipy', 'seaborn', 'umap') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=PACKAGE.parent)
    assert out.stdout.strip() == "[]", out.stdout
