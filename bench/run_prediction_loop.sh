#!/usr/bin/env bash
# The CPU prediction loop at its accuracy gate: calibrate, simulate with the profile, measure with
# dtsim real under mpirun, compare; each of the four real-mode scenarios must be predicted within
# 15 % of the measured step time. CI runs the same loop with a sanity bound only (a shared VM's
# slow phases move a measurement by 20 % for tens of seconds); run this on a quiet machine.
#
#   bench/run_prediction_loop.sh [BUILD] [TOLERANCE_PCT]     (results: bench/results/real-mode-cpu.md)
#
# Run it from the repository root with nothing else running; it prints every attempt's predicted
# and measured step time and exits 1 if a scenario misses the tolerance in all its attempts.
set -euo pipefail
build=${1:-build}
tolerance=${2:-15}
mpiexec=$(command -v mpiexec || command -v mpirun) || { echo "needs mpiexec (openmpi-bin)" >&2; exit 2; }
echo "dtsim $(git rev-parse --short HEAD 2>/dev/null || echo '?'); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
status=0
for scenario in cpu-data-parallel cpu-pipeline cpu-data-parallel-topk cpu-pipedream-async; do
  echo "== $scenario"
  out=$(mktemp)
  python3 tests/real/prediction_loop.py "$build/cli/dtsim" "$mpiexec" \
    "scenarios/real/$scenario.yaml" --ranks 2 --tolerance "$tolerance" > "$out" 2>&1 || status=1
  grep -E "^attempt|^FAIL|calibrated GEMM" "$out" || cat "$out"
  rm -f "$out"
done
exit $status
