"""Writes the run folders of tests/data/runs-v0.1.0/ with monoidlab 0.1.0 as it was at commit
bfe25bd (before the run configuration was renovated). Kept to show how the folders were made;
it runs only against that version (`git worktree add /tmp/v010 bfe25bd`, then
`PYTHONPATH=/tmp/v010 python tests/data/make_v010_runs.py OUT`).

Each folder is a run of today's test suite in miniature:

* ``parity-ldru-finished``: MLP-LDRU on parity with identity padding, random offsets, the
  regulariser, validation, early stopping and a restart; finished (results.json, best.pt).
* ``parity-ldru-interrupted``: the same config, stopped after step 6 of 12 (its checkpoint,
  metrics and config as a kill would leave them): resuming it must give the finished run's
  weights bit for bit.
* ``reverse-rnn-finished``: an RNN on Delétang's reverse_string (a tape task).
"""

import shutil
import sys
from pathlib import Path

import torch

from monoidlab._util import Lengths
from monoidlab.training import TrainConfig, run_folder, train, trainer

out = Path(sys.argv[1])
torch.set_num_threads(1)
ldru = TrainConfig(language="parity", model="mlp-ldru", steps=6, restarts=1, eval_every=6,
                   early_stop=2, batch_size=8, train_lengths=Lengths(1, 6),
                   test_lengths=Lengths(41, 42), test_samples=4, val_lengths=Lengths(9, 10),
                   val_samples=4, offsets="random", assoc_weight=0.1, sampler="near_miss",
                   model_kwargs={"d": 8, "dropout": 0.0, "padding": "identity"},
                   checkpoint_every=3, log_every=1, device="cpu")
train(ldru, out / "parity-ldru-finished", progress=False)

# the interrupted copy: the checkpoint written at step 6, and the files as they were then
keep = out / "parity-ldru-interrupted"
saved = run_folder.save_checkpoint


def save_and_copy(payload, path):
    saved(payload, path)
    if payload.get("step") == 6 and Path(path).name == "checkpoint.pt":
        keep.mkdir(parents=True, exist_ok=True)
        for name in ("checkpoint.pt", "config.json", "metrics.jsonl", "best.pt"):
            if (Path(path).parent / name).is_file():
                shutil.copy(Path(path).parent / name, keep / name)


trainer.save_checkpoint = save_and_copy
train(ldru, out / "scratch", progress=False)
shutil.rmtree(out / "scratch")

tape = TrainConfig(task="reverse_string", model="rnn", steps=5, batch_size=8,
                   train_lengths=Lengths(1, 6), test_lengths=Lengths(8, 9), test_samples=4,
                   model_kwargs={"hidden": 8}, checkpoint_every=5, log_every=1, device="cpu")
train(tape, out / "reverse-rnn-finished", progress=False)
