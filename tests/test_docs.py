"""The documentation stays true: the Python snippets of docs/api.md run, the code points to
pages that exist inside the repository, docs/architecture.md mirrors the layer table, and
docs/index.md lists every page."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), re.S)


def test_api_md_snippets_run(tmp_path, monkeypatch):
    """Every fenced python block of docs/api.md, in order, in one namespace, as doctests."""
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)  # the tour writes runs/
    blocks = python_blocks(DOCS / "api.md")
    assert len(blocks) >= 4
    globs: dict = {}
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for i, block in enumerate(blocks):
        assert ">>>" in block, f"block {i} of docs/api.md is not a doctest"
        test = parser.get_doctest(block, globs, f"api.md[{i}]", str(DOCS / "api.md"), 0)
        runner.run(test, clear_globs=False)
        globs = test.globs
    res = runner.summarize(verbose=False)
    assert res.failed == 0 and res.attempted > 20
    assert (tmp_path / "runs" / "parity" / "checkpoint.pt").is_file()


def test_no_pointer_outside_the_repository():
    """Comments and docstrings point to docs/, never to DESIGN.md / STYLE.md (not in the repo)."""
    bad = [f"{p.relative_to(ROOT)}:{n}" for p in sorted((ROOT / "monoidlab").rglob("*.py"))
           for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
           if re.search(r"DESIGN|STYLE|\.\./shared", line)]
    assert not bad, bad


def test_pages_named_in_the_code_exist():
    named = {}
    for folder in ("monoidlab", "tests", "bench"):
        for p in (ROOT / folder).rglob("*.py"):
            for page in re.findall(r"docs/([\w-]+\.md)", p.read_text(encoding="utf-8")):
                named.setdefault(page, p.relative_to(ROOT))
    for p in [ROOT / "README.md", *DOCS.glob("*.md")]:
        for page in re.findall(r"\]\(((?!http)[\w-]+\.md)", p.read_text(encoding="utf-8")):
            named.setdefault(page, p.relative_to(ROOT))
    missing = {page: str(src) for page, src in named.items() if not (DOCS / page).is_file()
               and page != "README.md"}
    assert not missing, missing
    assert {"models.md", "architecture.md"} <= set(named)


def test_index_lists_every_page():
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    pages = sorted(p.name for p in DOCS.glob("*.md") if p.name != "index.md")
    assert [p for p in pages if f"]({p})" not in index] == []


def test_architecture_mirrors_the_layer_table():
    """Each module of tests/test_layers.py LAYERS is in docs/architecture.md's layer table, on a
    row of its layer (and the table names nothing else)."""
    from test_layers import LAYERS

    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    documented = {}
    for layer, modules in re.findall(r"^\| (\d+) \| ([^|]+) \|", section, re.M):
        for name in re.findall(r"`([\w.]+)`", modules):
            documented[name] = int(layer)
    want = {("monoidlab" if k == "" else k): v for k, v in LAYERS.items()}
    assert documented == want


# Names of 0.1.0 that are gone (no alias): each is in architecture.md's table of what moved
REMOVED = ["monoidlab.trees", "monoidlab.plots", "monoidlab.plots_probe",
           "monoidlab.associativity", "monoidlab.evalsets", "monoidlab.training.evaluate",
           "TrainConfig", "model_kwargs", "task_kwargs", "sample(method=)",
           "exact_coverage(distribution=)", "min_training_length(train_offsets=)", "pad_offset",
           "--train-offsets", "min-length --train", "CLIError", "parse_range",
           "coverage.offsets_for", "score_balanced", "random_state", "Task.problem_kind",
           "Problem.kind", "available_models", "LanguageProblem.lang"]


@pytest.mark.parametrize("old", REMOVED)
def test_moved_table_names_every_removed_name(old):
    table = (DOCS / "architecture.md").read_text(encoding="utf-8").split("## What moved where")[1]
    assert f"`{old}`" in table


OLD_SPELLINGS = re.compile(r"method=|distribution=|train_offsets|--train-offsets|pad_offset|"
                           r"max_buffer|monoidlab\.(trees|plots|plots_probe|associativity|evalsets)"
                           r"\b|min-length[^\n]*--train\b|TrainConfig|model_kwargs|task_kwargs|"
                           r"score_balanced|random_state=|--kinds[= ]balanced|offsets_for|"
                           r"training\.evaluate\b|CLIError|parse_range")


def test_capability_table_is_generated_from_the_registry():
    """docs/architecture.md's table of capabilities is the registry's (regenerate it with
    ``python -c "from monoidlab.models.registry import capability_table_markdown as t;
    print(t())"`` between its markers when a model or a capability changes)."""
    from monoidlab.models.registry import capability_table_markdown

    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    begin, end = "<!-- begin capabilities -->\n", "<!-- end capabilities -->"
    assert begin in text and end in text
    assert text.split(begin, 1)[1].split(end, 1)[0] == capability_table_markdown() + "\n"


def test_docs_use_the_new_vocabulary():
    """README, docs and notebooks spell things the new way (RunConfig, model_options, the test
    kind paper, sampler=, offsets=, --offsets, --sample-lengths, seed=, monoidlab.evaluation /
    schedules / viz / probing); architecture.md's "what moved where" lists the old names on
    purpose and results.md records the settings of past runs."""
    files = [ROOT / "README.md", *sorted(DOCS.glob("*.md")),
             *sorted((ROOT / "notebooks").glob("*.ipynb"))]
    bad = []
    for p in files:
        if p.name in ("architecture.md", "results.md"):
            continue
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            if OLD_SPELLINGS.search(line) and not re.search(r"0\.1\.0|old name", line):
                bad.append(f"{p.relative_to(ROOT)}:{n}: {line.strip()[:100]}")
    assert not bad, "\n".join(bad)


def test_coverage_md_d6_output_is_what_the_command_prints(capsys):
    """docs/coverage.md's D_6 example is the command's output (the lines shown; the table is
    cut after a few rows and the `wrote` line needs --out)."""
    from monoidlab.cli import main

    text = (DOCS / "coverage.md").read_text(encoding="utf-8")
    cmd = "$ monoidlab coverage dyck-6 --train 10:40 --test 480:500 --exact --out out/d6\n"
    shown = text.split(cmd, 1)[1].split("\n...\n", 1)[0].splitlines()
    assert main(["coverage", "dyck-6", "--train", "10:40", "--test", "480:500", "--exact"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert len(shown) >= 8
    assert printed[:len(shown)] == shown


def _render_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("render_notebooks",
                                                  ROOT / "tools" / "render_notebooks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")),
                         ids=lambda p: p.stem)
def test_every_notebook_has_a_rendered_page_of_its_current_source(path):
    """docs/notebooks/<name>.md shows the notebook with its outputs; it was rendered from the
    notebook's present cells (else: python tools/render_notebooks.py NAME) and every figure it
    shows is committed beside it."""
    page = DOCS / "notebooks" / f"{path.stem}.md"
    assert page.is_file(), f"{page.relative_to(ROOT)} missing: python tools/render_notebooks.py"
    first = page.read_text(encoding="utf-8").splitlines()[0]
    found = re.search(r"source sha256 ([0-9a-f]{64})", first)
    assert found and found.group(1) == _render_module().source_hash(path), \
        f"{page.relative_to(ROOT)} is older than {path.name}: python tools/render_notebooks.py {path.stem}"
    text = page.read_text(encoding="utf-8")
    images = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", text)
    assert images, f"{page.name} shows no figure"
    assert all((page.parent / x).is_file() for x in images), [x for x in images
                                                              if not (page.parent / x).is_file()]
    assert "Traceback (most recent call last)" not in text


def test_the_source_hash_follows_the_cells_and_not_the_outputs(tmp_path):
    import json

    mod = _render_module()
    nb = {"cells": [{"cell_type": "code", "source": ["x = 1\n", "x"], "outputs": [],
                     "metadata": {}, "execution_count": None}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    p = tmp_path / "n.ipynb"
    p.write_text(json.dumps(nb))
    h = mod.source_hash(p)
    nb["cells"][0]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "1"}]
    p.write_text(json.dumps(nb))
    assert mod.source_hash(p) == h
    nb["cells"][0]["source"] = ["x = 2\n", "x"]
    p.write_text(json.dumps(nb))
    assert mod.source_hash(p) != h
