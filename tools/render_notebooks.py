"""Execute every notebook under notebooks/ and write it, outputs and figures included, as a
Markdown page under docs/notebooks/, so that a reader browsing the repository sees what the
notebook shows without running it (the notebooks themselves are committed without outputs).

Usage:
    python tools/render_notebooks.py [NAME ...] [--full]   # default: every notebook, small

Each page starts with a comment holding the SHA-256 of the notebook's cell sources, so
tests/test_docs.py can tell a page that no longer matches its notebook (re-render it). By
default the notebooks run on their small settings (MONOIDLAB_SMALL=1, the test suite's, about
a minute each); ``--full`` runs the full ones. Figures go to docs/notebooks/<name>_files/.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
PAGES = ROOT / "docs" / "notebooks"


def source_hash(path: Path) -> str:
    """SHA-256 over the notebook's cell types and sources (not its outputs or metadata)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells = [[c["cell_type"], "".join(c["source"]) if isinstance(c["source"], list)
              else c["source"]] for c in nb["cells"]]
    return hashlib.sha256(json.dumps(cells, ensure_ascii=False).encode()).hexdigest()


def header(path: Path, small: bool) -> str:
    return (f"<!-- rendered from notebooks/{path.name} by tools/render_notebooks.py"
            f"{'' if small else ' --full'}; source sha256 {source_hash(path)} -->\n")


def render(path: Path, small: bool = True) -> tuple[Path, float]:
    """Execute one notebook in a scratch folder and write its Markdown page; (page, seconds)."""
    import nbclient
    import nbformat
    from nbconvert import MarkdownExporter

    nb = nbformat.read(path, as_version=4)
    if small:
        os.environ["MONOIDLAB_SMALL"] = "1"
    else:
        os.environ.pop("MONOIDLAB_SMALL", None)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        nbclient.NotebookClient(nb, timeout=900, kernel_name="python3",
                                resources={"metadata": {"path": scratch}}).execute()
    seconds = time.perf_counter() - t0
    files = f"{path.stem}_files"
    body, resources = MarkdownExporter().from_notebook_node(
        nb, resources={"output_files_dir": files})
    PAGES.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(PAGES / files, ignore_errors=True)
    for name, data in resources.get("outputs", {}).items():
        target = PAGES / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    page = PAGES / f"{path.stem}.md"
    from monoidlab._util import atomic_write_text

    atomic_write_text(page, header(path, small) + body)
    return page, seconds


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("names", nargs="*", help="notebook stems (default: all)")
    p.add_argument("--full", action="store_true", help="the notebooks' full settings")
    args = p.parse_args(argv)
    paths = sorted(NOTEBOOKS.glob("*.ipynb"))
    if args.names:
        known = {x.stem: x for x in paths}
        missing = [n for n in args.names if n not in known]
        if missing:
            p.error(f"no notebook {missing}; notebooks: {sorted(known)}")
        paths = [known[n] for n in args.names]
    for path in paths:
        page, seconds = render(path, small=not args.full)
        print(f"{path.name}: {page.relative_to(ROOT)} ({seconds:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
