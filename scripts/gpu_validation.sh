#!/usr/bin/env bash
# GPU validation of real mode, in one command (docs/environment.md, "GPU validation"): on a machine
# with an NVIDIA GPU, run the gpu-labelled tests, calibrate the GPU, and for each single-GPU
# scenario under scenarios/real/ predict its step with the measured profile, measure it with the
# CUDA + NCCL back end, and compare the two. Everything lands in one folder, with summary.md
# saying when, on what, with which commands, and how far the predictions were off.
#
#   scripts/gpu_validation.sh [BUILD_DIR]        (default BUILD_DIR: build)
#   OUT=dir scripts/gpu_validation.sh            (default OUT: bench/results/gpu-validation-DATE)
#   QUICK=1 ...                                  (dtsim calibrate --quick, 1 timed iteration)
#   NCCL_LIB_DIR=dir ...                         (a libnccl.so.2 carried along with the build)
#
# A build folder carried over from a development machine is used as is (take libnccl.so.2 along,
# docs/environment.md); without one the script configures and builds. One step failing does not stop
# the others: the summary records every step's exit status, and the script exits 1 if any failed.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${1:-${BUILD:-$ROOT/build}}
OUT=${OUT:-$ROOT/bench/results/gpu-validation-$(date +%F)}
QUICK=${QUICK:-0}
ITERATIONS=${ITERATIONS:-5}
STEP_TIMEOUT=${STEP_TIMEOUT:-900}
export PATH=/usr/local/cuda/bin:$PATH
# NCCL_LIB_DIR: where a carried-over libnccl.so.2 lies, if not in /usr/local/cuda/lib64.
export LD_LIBRARY_PATH=${NCCL_LIB_DIR:+$NCCL_LIB_DIR:}/usr/local/cuda/lib64:/usr/local/cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

mkdir -p "$OUT/logs"
OUT=$(cd "$OUT" && pwd)
STEPS="$OUT/steps.tsv"
: >"$STEPS"
failed=0

# step NAME CMD...: runs CMD with a time limit, its output in logs/NAME.log; records the command,
# its exit status and its duration in steps.tsv.
step() {
  local name=$1
  shift
  local started=$SECONDS
  echo "== $name: $*" >&2
  timeout "$STEP_TIMEOUT" "$@" >"$OUT/logs/$name.log" 2>&1
  local rc=$?
  printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - started))" "$*" >>"$STEPS"
  if [ "$rc" -ne 0 ]; then
    failed=1
    echo "   exit $rc (see $OUT/logs/$name.log)" >&2
    tail -n 5 "$OUT/logs/$name.log" >&2
  fi
  return "$rc"
}

# The build: carried over, or made here.
DTSIM=$BUILD/cli/dtsim
if [ ! -x "$DTSIM" ]; then
  step configure cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DDTSIM_ENABLE_CUDA=ON
  step build cmake --build "$BUILD" --parallel "$(nproc)"
fi

# The machine.
if command -v nvidia-smi >/dev/null; then
  nvidia-smi -L >"$OUT/machine.txt" 2>&1
  nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1
else
  echo "no nvidia-smi on this machine (no NVIDIA driver?)" >"$OUT/machine.txt"
fi
uname -a >>"$OUT/machine.txt"

step tests-gpu ctest --test-dir "$BUILD" -L gpu --output-on-failure --timeout 600

calibrate_flags=()
[ "$QUICK" = 1 ] && calibrate_flags+=(--quick) && ITERATIONS=1
step calibrate "$DTSIM" calibrate --gpu -o "$OUT/profile.yaml" "${calibrate_flags[@]}"

for scenario in gpu-compute-bound gpu-memory-bound gpu-fp8; do
  file=$ROOT/scenarios/real/$scenario.yaml
  step "$scenario-simulate" "$DTSIM" simulate "$file" --set "cluster.profile=$OUT/profile.yaml" \
    --json -o "$OUT/$scenario-predicted.json"
  step "$scenario-real" "$DTSIM" real "$file" --gpu -o "$OUT/$scenario-measured.json" \
    --trace "$OUT/$scenario-measured-trace.json" --warmup 2 --iterations "$ITERATIONS" \
    --timeout 120s
  # compare writes its JSON to stdout; the log keeps stderr.
  echo "== $scenario-compare" >&2
  started=$SECONDS
  timeout "$STEP_TIMEOUT" "$DTSIM" compare "$OUT/$scenario-predicted.json" \
    "$OUT/$scenario-measured.json" --json >"$OUT/$scenario-compare.json" \
    2>"$OUT/logs/$scenario-compare.log"
  rc=$?
  printf '%s\t%s\t%s\t%s\n' "$scenario-compare" "$rc" "$((SECONDS - started))" \
    "$DTSIM compare $OUT/$scenario-predicted.json $OUT/$scenario-measured.json --json > $OUT/$scenario-compare.json" >>"$STEPS"
  [ "$rc" -ne 0 ] && failed=1
done

# summary.md: the date, the machine, the commands and the prediction errors.
python3 - "$OUT" <<'PY'
import json, os, sys, datetime
out = sys.argv[1]
lines = ["# GPU validation of real mode", ""]
lines.append("Date: " + datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
lines.append("")
lines.append("## Machine")
lines.append("")
lines.append("```")
lines.append(open(os.path.join(out, "machine.txt")).read().rstrip())
lines.append("```")
lines.append("")
lines.append("## Commands")
lines.append("")
lines.append("| step | exit | seconds | command |")
lines.append("|---|---|---|---|")
for row in open(os.path.join(out, "steps.tsv")):
    name, rc, secs, cmd = row.rstrip("\n").split("\t", 3)
    lines.append(f"| {name} | {rc} | {secs} | `{cmd}` |")
lines.append("")
lines.append("## GPU tests (ctest -L gpu)")
lines.append("")
try:
    log = open(os.path.join(out, "logs", "tests-gpu.log")).read().splitlines()
    summary = [l for l in log if "tests passed" in l]
    skipped = [l.strip() for l in log if "(Skipped)" in l and " - " in l]
    failed = [l.strip() for l in log if "(Failed)" in l or "***Failed" in l]
    lines.extend(summary or ["no ctest summary in logs/tests-gpu.log"])
    if skipped:
        lines.append("")
        lines.append(f"{len(skipped)} skipped (no usable GPU?): see logs/tests-gpu.log")
    for l in failed:
        lines.append("- failed: " + l)
except OSError as e:
    lines.append(f"no test log ({e})")
lines.append("")
lines.append("## Prediction errors")
lines.append("")
lines.append("error = (predicted - measured) / measured (dtsim compare); positive: the prediction is slower or larger.")
lines.append("")
for scenario in ["gpu-compute-bound", "gpu-memory-bound", "gpu-fp8"]:
    lines.append(f"### {scenario}")
    lines.append("")
    path = os.path.join(out, scenario + "-compare.json")
    try:
        c = json.load(open(path))
    except Exception as e:
        lines.append(f"no comparison ({path}: {e})")
        lines.append("")
        continue
    lines.append("| metric | unit | predicted | measured | error |")
    lines.append("|---|---|---|---|---|")
    for group in ("metrics", "by_kind"):
        for v in c.get(group, []):
            err = v.get("error_fraction")
            err_text = "-" if err is None else f"{err * 100:+.1f} %"
            lines.append(f"| {v['name']} | {v['unit']} | {v['predicted']:.6g} | {v['measured']:.6g} | {err_text} |")
    w = c.get("worst_metric_error_fraction")
    if w is not None:
        lines.append("")
        lines.append(f"Worst metric error: {w * 100:.1f} %")
    lines.append("")
open(os.path.join(out, "summary.md"), "w").write("\n".join(lines) + "\n")
print(os.path.join(out, "summary.md"))
PY

echo "results in $OUT" >&2
exit "$failed"
