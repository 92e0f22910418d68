"""No command replaces a file the user may own unless told to (docs/reliability.md): every
command that writes files is walked, each of its output names is planted with the user's
content, and the command must refuse, name the file and leave it byte for byte; ``--overwrite``
replaces it (atomically). The walk is checked against the parser, so a new command with an
``--out`` folder cannot slip past it."""

from __future__ import annotations

import argparse
import json
import shutil

import pytest

from monoidlab.cli import build_parser, main

pytestmark = pytest.mark.usefixtures("one_torch_thread")

MINE = "the user's own file\n"


def _writers(tmp, run) -> dict[str, tuple[list[str], list[str], list[str]]]:
    """command -> (argv writing into ``tmp``, every file it may write there, extra argv for a
    cheap successful run with --overwrite ([] when the run is minutes of training))."""
    probe_names = ["probe.json", "associativity.png", "contingency_kmeans.png"]
    return {
        "coverage": (["coverage", "parity", "--train", "1:6", "--test", "7:9", "--exact",
                      "--out", str(tmp)],
                     ["heatmaps.png", "missing.png", "ec_shift.png", "coverage.json"], [""]),
        "probe": (["probe", str(run), "--n-strings", "12", "--n-triples", "12", "--no-init",
                   "--no-umap", "--clusterers", "kmeans", "--out", str(tmp)],
                  probe_names, [""]),
        "report": (["report", "--checkpoint", str(run), "--no-probe", "--train", "1:6",
                    "--test", "7:9", "--out", str(tmp)], ["parity.html", "parity.json"], [""]),
        "demo": (["demo", "--language", "parity", "--out", str(tmp)],
                 ["parity.html", "parity.json"], []),
        "text-sample": (["text-sample", str(tmp), "--rows", "10"],
                        ["train.csv", "test.csv"], [""]),
    }


def _writing_commands() -> set[str]:
    """Commands whose parser takes an output folder: ``--out`` or a positional ``folder``."""
    sub = next(a for a in build_parser()._actions
               if isinstance(a, argparse._SubParsersAction))
    found = set()
    for name, p in sub.choices.items():
        dests = {a.dest for a in p._actions}
        if "out" in dests or "folder" in dests:
            found.add(name)
    return found


def test_the_walk_covers_every_command_that_writes(tmp_path):
    """Every command with an output folder is in the walk below, or is ``train``, whose run
    folder has its own rule (refused unless --resume or --overwrite, test_run_folder). A
    sweep's folder is named in its sweep file and holds only the sweep's own runs and tables."""
    walked = set(_writers(tmp_path, tmp_path))
    assert _writing_commands() == walked | {"train"}
    sub = next(a for a in build_parser()._actions
               if isinstance(a, argparse._SubParsersAction))
    for name in walked | {"train"}:
        assert "overwrite" in {a.dest for a in sub.choices[name]._actions}, name


@pytest.mark.parametrize("command", ["coverage", "probe", "report", "demo", "text-sample"])
def test_every_output_file_is_refused_kept_and_named(command, tmp_path, tiny_ldru_run, capsys):
    out = tmp_path / "out"
    argv, names, cheap = _writers(out, tiny_ldru_run)[command]
    for name in names:  # each file the command may write, planted alone
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        (out / name).write_text(MINE)
        code = main(argv)
        err = capsys.readouterr().err
        assert code not in (0, None), (command, name)
        assert f"{name} exists; refusing to replace it (--overwrite replaces it)" in err, err
        assert (out / name).read_text() == MINE
        assert sorted(p.name for p in out.iterdir()) == [name], "nothing else was written"
    if cheap:  # --overwrite replaces what is there
        assert main(argv + ["--overwrite"]) in (0, None), capsys.readouterr().err
        assert all((out / n).read_bytes() != MINE.encode() for n in names if (out / n).exists())
        assert (out / names[0]).exists()


def test_the_python_report_refuses_too(tmp_path, tiny_ldru_run):
    from monoidlab.errors import OutputPathError
    from monoidlab.report import build_report

    (tmp_path / "parity.json").write_text(MINE)
    with pytest.raises(OutputPathError, match=r"parity.json exists; refusing to replace it "
                                              r"\(overwrite=True replaces it\)"):
        build_report("parity", tmp_path, train_lengths=range(1, 5), test_lengths=range(6, 8))
    assert (tmp_path / "parity.json").read_text() == MINE
    page = build_report("parity", tmp_path, train_lengths=range(1, 5),
                        test_lengths=range(6, 8), overwrite=True)
    assert json.loads(page.with_suffix(".json").read_text())["language"] == "parity"


def test_the_demo_replaces_only_its_own_report_of_the_same_run(tmp_path):
    """Run again, ``monoidlab demo`` rewrites the report it wrote of its run folder (training
    is reused, the page is redrawn); a page of another run is the user's."""
    from monoidlab.cli.report import _own_report, _run_folder

    args = argparse.Namespace(command="demo", language="parity", out=str(tmp_path))
    run = str(_run_folder("parity", tmp_path))
    assert not _own_report(args, run)  # nothing there yet
    (tmp_path / "parity.json").write_text(json.dumps({"checkpoint": run}))
    assert _own_report(args, run)
    (tmp_path / "parity.json").write_text(json.dumps({"checkpoint": "elsewhere/run"}))
    assert not _own_report(args, run)
    (tmp_path / "parity.json").write_text(MINE)
    assert not _own_report(args, run)
    (tmp_path / "parity.json").write_text(json.dumps({"checkpoint": run}))
    assert not _own_report(argparse.Namespace(command="report", language="parity",
                                              out=str(tmp_path)), run), "report is not demo"
