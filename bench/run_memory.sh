#!/usr/bin/env bash
# Peak memory of runs against the driver's estimate (driver/predict.h estimate_run), so the
# per-op figures it uses are measured, not guessed. Prints one line per run.
#   bench/run_memory.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dtsim=${1:-build}/cli/dtsim
# The trace goes to a scratch folder of this run, removed however it ends.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/dtsim-bench-memory.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
run() {  # label, args...
  local label=$1
  shift
  /usr/bin/time -f "$label: %e s, peak RSS %M KiB" "$dtsim" simulate "$@" --max-memory 64GiB \
    >/dev/null
}
run "default, analytic, 1 iteration" scenarios/default.yaml --engine analytic
run "default, analytic, 200 iterations" scenarios/default.yaml --engine analytic --set simulate.iterations=200
run "default, analytic, 800 iterations" scenarios/default.yaml --engine analytic --set simulate.iterations=800
run "default, simgrid, 200 iterations" scenarios/default.yaml --set simulate.iterations=200
run "gpt3-175b, simgrid" scenarios/gpt3-175b-tp8-pp8-interleaved-1024-a100.yaml
run "gpt3-175b, simgrid, --trace" scenarios/gpt3-175b-tp8-pp8-interleaved-1024-a100.yaml --trace "$scratch/trace.json"
