"""tools/gpu_check.sh, the script for a short GPU lease, at tiny settings on the CPU (so it
cannot rot between leases): every part runs and lands in its summary."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from monoidlab.evaluation.kinds import KINDS

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_gpu_check_runs_every_part_on_cpu(tmp_path):
    out = tmp_path / "gpu-check"
    env = {**os.environ, "TINY": "1", "DEVICE": "cpu", "PY": sys.executable,
           "MPLBACKEND": "Agg", "PYTHONPATH": str(ROOT)}
    r = subprocess.run(["bash", "tools/gpu_check.sh", str(out)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["env"]["device"] == "cpu"
    rows = summary["train"]
    assert [(row["bf16"], row["compile"]) for row in rows] == [("true", "false")]
    assert all(row["steps"] == 20 and row["verdict"] != "FAILED" for row in rows)
    exact = {e["model"]: e for e in summary["exact"]}
    assert sorted(exact) == ["mlp-ldru-snap", "pr-lstm-snap", "transform-tree"]
    assert all(e["steps"] == 20 and e["certificate"].startswith(f"certificate of {m}")
               for m, e in exact.items())
    long = summary["long"]
    assert long["condition"] == "dyck-4-identity-ours" and long["steps"] == 20
    assert [v["step"] for v in long["validations"]] == [10, 20]
    assert set(long["strict"]["min"]) == set(KINDS)
    figures = sorted(p.name for p in (out / "figures").iterdir())
    assert figures == ["long-curve.png", "speed-cpu.png"]
    text = (out / "summary.md").read_text()
    assert "| true | false | 20 |" in text and "dyck-4-identity-ours: 20 steps" in text
    assert "FAILED" not in (out / "log.txt").read_text()
