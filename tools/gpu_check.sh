#!/usr/bin/env bash
# The GPU path in one short lease: everything a CUDA machine should check, in under 8 minutes.
#
#   1. the trainer's CUDA path on dyck-2 (MLP-LDRU): bf16 off/on x torch.compile off/on, each
#      a short run with its strict verdict, wall time and steps per second;
#   1b. the depth-exact models (mlp-ldru-snap, pr-lstm-snap, transform-tree) on dyck-2 with their own recipe
#      'languages' (short runs, each with its strict verdict and its certificate);
#   2. bench/bench_speed.py on the device (the scaling table, --quick);
#   3. as many steps of the dyck-4 long run (configs/ldru-long-cpu.toml, condition
#      $LONG_CONDITION) as fit in $LONG_BUDGET_S seconds, paused at validation steps, with its
#      learning curve and a strict evaluation of the weights reached (on the validation's
#      lengths and sample size, with the test seed: a full test costs more than the lease);
#   4. OUT/summary.md and OUT/summary.json: every number above; every figure in OUT/figures/.
#
# Usage (from the repository root, the venv active or PY set):
#   bash tools/gpu_check.sh [OUT]                   # a CUDA machine: the real settings
#   TINY=1 DEVICE=cpu bash tools/gpu_check.sh OUT   # tiny settings on CPU (tests/test_gpu_check.py:
#                                                   # bf16 on only, 20 steps of the long run)
# Environment: DEVICE (auto), TINY (0), PY (python), LONG_CONDITION (dyck-4-identity-ours),
# LONG_BUDGET_S (150; TINY: 40), COMPILE (1; TINY: 0, since torch.compile takes ~90 s on a CPU).
set -euo pipefail

OUT=${1:-${OUT:-gpu-check}}
PY=${PY:-python}
DEVICE=${DEVICE:-auto}
TINY=${TINY:-0}
LONG_CONDITION=${LONG_CONDITION:-dyck-4-identity-ours}
if [ "$TINY" = 1 ]; then
  LONG_BUDGET_S=${LONG_BUDGET_S:-40}; COMPILE=${COMPILE:-0}
  TRAIN=(--steps 20 --batch_size=8 --train_lengths=1:6 --test_lengths=41:42 --test_samples=4
         --model_options.d=8 --eval_every=0 --early_stop=0 --restarts=0)
  EXACT=(--steps 20 --batch_size=8 --train_lengths=1:6 --test_lengths=41:42 --test_samples=4
         --eval_every=0 --early_stop=0 --restarts=0)
  SPEED=(--quick --sections scaling --lengths 1,4 --budget 0.02 --no-train)
else
  LONG_BUDGET_S=${LONG_BUDGET_S:-150}; COMPILE=${COMPILE:-1}
  TRAIN=(--steps 1000 --batch_size=256 --train_lengths=1:40 --test_lengths=41:500:3
         --test_samples=64 --model_options.d=32 --model_options.padding=identity
         --sampler=near_miss --lr_schedule=cosine --eval_every=0 --early_stop=0 --restarts=0)
  EXACT=(--steps 2000 --test_lengths=41:500:3 --test_samples=64 --eval_every=0 --early_stop=0
         --restarts=0)
  SPEED=(--quick --sections scaling)
fi
mkdir -p "$OUT/figures" "$OUT/train"
START=$(date +%s)
log() { echo "[gpu_check $(( $(date +%s) - START )) s] $*" | tee -a "$OUT/log.txt"; }

log "0. the machine"
"$PY" - "$OUT/env.json" "$DEVICE" <<'EOF'
import json, platform, sys
import torch
from monoidlab.training.trainer import pick_device
dev = pick_device(sys.argv[2])
info = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": str(dev),
        "device_name": torch.cuda.get_device_name(dev) if dev.type == "cuda" else platform.processor(),
        "python": platform.python_version()}
json.dump(info, open(sys.argv[1], "w"), indent=1)
print(info)
EOF

log "1. the trainer's device path: bf16 x compile"
compiles=(false); [ "$COMPILE" = 1 ] && compiles=(false true)
# TINY: bf16 on only (the plain path is every other training run of the suite)
bf16s=(false true); [ "$TINY" = 1 ] && bf16s=(true)
for bf16 in "${bf16s[@]}"; do
  for compile in "${compiles[@]}"; do
    run="$OUT/train/bf16-$bf16-compile-$compile"
    t0=$(date +%s%N)
    "$PY" -m monoidlab train --language dyck-2 --model mlp-ldru --device="$DEVICE" "${TRAIN[@]}" \
      --bf16=$bf16 --compile=$compile --out "$run" --overwrite --json > "$run.json" 2> "$run.err" \
      || { log "   bf16=$bf16 compile=$compile FAILED: $(tail -1 "$run.err")"; continue; }
    log "   bf16=$bf16 compile=$compile: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  done
done

log "1b. the depth-exact models on dyck-2, their recipe 'languages'"
for model in mlp-ldru-snap pr-lstm-snap transform-tree; do
  run="$OUT/train/exact-$model"
  t0=$(date +%s%N)
  "$PY" -m monoidlab train --language dyck-2 --model "$model" --device="$DEVICE" "${EXACT[@]}" \
    --out "$run" --overwrite --json > "$run.json" 2> "$run.err" \
    || { log "   $model FAILED: $(tail -1 "$run.err")"; continue; }
  log "   $model: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
done

log "2. bench_speed.py on the device"
"$PY" -m bench.bench_speed --device "$DEVICE" --out "$OUT/speed" "${SPEED[@]}" > "$OUT/speed.md" \
  2> "$OUT/speed.err" || log "   bench_speed FAILED: $(tail -1 "$OUT/speed.err")"
cp "$OUT"/speed/*.png "$OUT/figures/" 2>/dev/null || true

log "3. the long run $LONG_CONDITION, $LONG_BUDGET_S s"
"$PY" - "$OUT" "$DEVICE" "$LONG_CONDITION" "$LONG_BUDGET_S" "$TINY" <<'EOF' || log "   long run FAILED"
import json, sys, time
from pathlib import Path
from monoidlab.training import train
from monoidlab.training.sweep import load_sweep
from monoidlab.training.trainer import load_checkpoint, pick_device
from monoidlab.evaluation.run import evaluate_kinds
from monoidlab.training.run_folder import read_metrics

out, device, condition, budget, tiny = Path(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5] == "1"
sweep = load_sweep("configs/ldru-long-cpu.toml")
run = next((r for r in sweep["runs"] if r["problem"] == condition), None)
if run is None:
    raise SystemExit(f"no condition {condition!r} in configs/ldru-long-cpu.toml")
cfg = run["config"].replace(device=device, threads=1 if tiny else 0)
if tiny:  # the same path at toy sizes
    cfg = cfg.replace(steps=20, eval_every=10, batch_size=8, val_samples=4, test_samples=4,
                      val_lengths="41:44:3", test_lengths="41:44:3", checkpoint_every=10,
                      model_options={**cfg.model_options.as_dict(), "d": 8})
folder, t0, step, chunks = out / "long", time.time(), 0, []
while step < cfg.steps * (cfg.restarts + 1):
    t = time.time()
    res = train(cfg, folder, resume=(folder / "checkpoint.pt").exists(), progress=False,
                stop_at=step + cfg.eval_every if cfg.eval_every else None,
                evaluate_at_end=False, overwrite=not (folder / "checkpoint.pt").exists())
    step = res["steps"]
    chunks.append(time.time() - t)
    if not res.get("paused") or time.time() - t0 + max(chunks) > budget:
        break
records = [r for r in read_metrics(folder / "metrics.jsonl") if "val_solved" in r]
model, c, problem, ck = load_checkpoint(folder, pick_device(device))
ev = evaluate_kinds(model, problem, c.val_lengths, c.val_samples, c.seed, c.eval_kinds,
                    c.solved_threshold, device=pick_device(device))
summary = {"condition": condition, "steps": step, "seconds": round(time.time() - t0, 1),
           "steps_per_second": round(step / max(sum(chunks), 1e-9), 1),
           "validations": [{k: v for k, v in r.items() if k == "step" or k.startswith("val_")}
                           for r in records],
           "strict": {"lengths": str(c.val_lengths), "per_length": c.val_samples,
                      "solved": ev.solved, "verdict": ev.verdict(),
                      "min": {k: ev.min_accuracy(k) for k in ev.kinds}}}
(out / "long.json").write_text(json.dumps(summary, indent=1, default=float))
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(6, 3.5))
for kind in ev.kinds:
    xs = [r["step"] for r in records if f"val_min_{kind}" in r]
    ax.plot(xs, [r[f"val_min_{kind}"] for r in records if f"val_min_{kind}" in r], "o-", label=kind)
ax.set(xlabel="step", ylabel="validation: minimum accuracy over lengths", ylim=(0, 1.02),
       title=f"{condition} on {device}: {step} steps")
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(out / "figures" / "long-curve.png", dpi=100)
print(json.dumps(summary["strict"]))
EOF

log "4. summary"
"$PY" - "$OUT" <<'EOF'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
env = json.loads((out / "env.json").read_text())
lines = [f"# GPU check on {env['device_name']} ({env['device']}, torch {env['torch']}, "
         f"CUDA {env['cuda']})", "", "## 1. The trainer: dyck-2, MLP-LDRU", "",
         "| bf16 | compile | steps | train s | steps/s | verdict |", "|---|---|---|---|---|---|"]
rows = []
exact = []
for f in sorted((out / "train").glob("exact-*.json")):
    try:
        r = json.loads(f.read_text())
    except ValueError:
        r = {}
    exact.append({"model": f.stem[len("exact-"):], "steps": r.get("steps"),
                  "train_seconds": r.get("train_seconds"), "verdict": r.get("verdict", "FAILED"),
                  "certificate": (r.get("certificate") or {}).get("verdict", "-")})
for f in sorted((out / "train").glob("bf16-*.json")):
    try:
        r = json.loads(f.read_text())
    except ValueError:
        r = {}
    _, bf16, _, compile_ = f.stem.split("-")
    row = {"bf16": bf16, "compile": compile_, "steps": r.get("steps"),
           "train_seconds": r.get("train_seconds"), "verdict": r.get("verdict", "FAILED")}
    row["steps_per_second"] = (round(row["steps"] / row["train_seconds"], 1)
                               if row["steps"] and row["train_seconds"] else None)
    rows.append(row)
    lines.append(f"| {bf16} | {compile_} | {row['steps']} | {row['train_seconds']} | "
                 f"{row['steps_per_second']} | {row['verdict']} |")
lines += ["", "## 1b. The depth-exact models: dyck-2, recipe 'languages'", "",
          "| model | steps | train s | verdict | certificate |", "|---|---|---|---|---|"]
lines += [f"| {e['model']} | {e['steps']} | {e['train_seconds']} | {e['verdict']} | "
          f"{e['certificate']} |" for e in exact]
speed = (out / "speed.md").read_text() if (out / "speed.md").exists() else "(not run)"
lines += ["", "## 2. bench_speed.py", "", speed.strip(), ""]
long = json.loads((out / "long.json").read_text()) if (out / "long.json").exists() else None
lines += ["## 3. The long run", ""]
lines += ([f"{long['condition']}: {long['steps']} steps in {long['seconds']} s "
           f"({long['steps_per_second']} steps/s, validations included); strict evaluation of the weights reached: "
           f"{long['strict']['verdict']}", "", "![learning curve](figures/long-curve.png)"]
          if long else ["(failed: see log.txt)"])
(out / "summary.md").write_text("\n".join(lines) + "\n")
(out / "summary.json").write_text(json.dumps({"env": env, "train": rows, "exact": exact,
                                              "long": long},
                                             indent=1, default=float))
print("\n".join(lines))
EOF
took=$(( $(date +%s) - START ))
log "done in $took s: $OUT/summary.md"
[ "$TINY" = 1 ] || [ "$took" -le 480 ] || log "WARNING: over the 8-minute goal ($took s)"
