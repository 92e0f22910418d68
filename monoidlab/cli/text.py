"""CLI command for text classification data: ``text-sample`` (a synthetic data set in the
layout of AG's News, DBPedia or SST-2, for first runs and tests without the real files)."""

from __future__ import annotations

import argparse

from monoidlab.cli._common import command, emit, positive

__all__ = ["COMMANDS"]


@command("text-sample", "write a small synthetic text data set in the layout of AG's News, "
                        "DBPedia or SST-2 (keyword topics with distractors)")
def cmd_text_sample(args: argparse.Namespace) -> None:
    from monoidlab.tasks.text import LAYOUTS
    from monoidlab.tasks.text_sample import write_sample

    positive(args.rows, "--rows")
    positive(args.test_rows, "--test-rows")
    folder = write_sample(args.folder, args.layout, rows=args.rows, test_rows=args.test_rows,
                          seed=args.seed, overwrite=args.overwrite)
    lay = LAYOUTS[args.layout]
    files = [str(folder / lay.train), str(folder / lay.test)]
    emit(args, {"layout": args.layout, "folder": str(folder), "files": files},
         f"wrote {files[0]} and {files[1]}\ntrain on it: monoidlab train --task {args.layout} "
         f"--data {folder} --train_lengths=40 --test_lengths=40")


def _configure(p: argparse.ArgumentParser) -> None:
    from monoidlab.tasks.text import LAYOUTS

    p.add_argument("folder", help="folder to write (created); its files are named as the real "
                                  "data set's")
    p.add_argument("--layout", choices=list(LAYOUTS), default="ag_news",
                   help="whose files to imitate: names, CSV or TSV layout, number of classes")
    p.add_argument("--rows", type=int, default=400, help="rows of the training file")
    p.add_argument("--test-rows", type=int, default=None,
                   help="rows of the test file (default: half of --rows)")
    p.add_argument("--seed", type=int, default=0, help="the rows (the words are fixed)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the data set's files when the folder already has them")
    p.add_argument("--json", action="store_true")


cmd_text_sample.configure = _configure

COMMANDS = (cmd_text_sample,)
