#!/usr/bin/env bash
# Speed of the whole-run model (issue 14, acceptance 6b): a 16K-GPU run of 30 days with
# per-component failures, its step time from one simulated step (the analytic engine; the
# scenario's default), then the run at step granularity (core/reliability/timeline.h). Runs the
# worked example scenarios/llama3-405b-16384-h100-failures.yaml:
#   - the step alone: the same job without a whole run (llama3-405b-tp8-pp16-dp128-16384-h100.yaml);
#   - 30 days: tokens = 30 d / step time x 16,777,216 tokens per step;
#   - 30 days with Weibull failures of shape 0.7 (each of the ~51K parts drawn on its own);
#   - the whole 15.6T-token run (77 days without failures).
# Prints a markdown table of wall time, CPU time and peak memory per run, and the load average.
#   bench/run_reliability.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dtsim=${1:-build}/cli/dtsim
example=scenarios/llama3-405b-16384-h100-failures.yaml
tmp=$(mktemp)
trap 'rm -f "$tmp" "$tmp.json"' EXIT

step_s=$("$dtsim" simulate "$example" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["step_time_s"])')
tokens_30d=$(python3 -c "import math,sys; print(f'{math.ceil(30 * 86400 / $step_s) * 2048 * 8192:.6e}')")

run() {
  local label=$1
  shift
  /usr/bin/time -f "%e %U %S %M" -o "$tmp" "$dtsim" simulate "$@" --json >"$tmp.json"
  read -r wall_s user_s sys_s rss_kib <"$tmp"
  local cpu_s summary
  cpu_s=$(python3 -c 'import sys; print(f"{float(sys.argv[1]) + float(sys.argv[2]):.2f}")' "$user_s" "$sys_s")
  summary=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["reliability"]
if not r["modelled"]:
    print("- | - | - | -")
else:
    days = r["time_to_train_s"] / 86400
    print("%d | %.2f | %d | %.1f%%" % (r["steps"], days, r["interruptions"], 100 * r["goodput"]))
' "$tmp.json")
  echo "| $label | $wall_s | $cpu_s | $((rss_kib / 1024)) | $summary |"
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "| run | wall s | CPU s | peak MiB | steps | time to train (days) | interruptions | goodput |"
echo "|---|---|---|---|---|---|---|---|"
run "one step only (llama3-405b-tp8-pp16-dp128-16384-h100.yaml, analytic)" \
  scenarios/llama3-405b-tp8-pp16-dp128-16384-h100.yaml --engine analytic
run "30 days, exponential failures" "$example" --set "training.tokens=$tokens_30d"
run "30 days, Weibull failures (shape 0.7)" "$example" --set "training.tokens=$tokens_30d" \
  --set failures.distribution=weibull --set failures.shape=0.7
run "whole run, 15.6T tokens" "$example"
echo
echo "load average before: $load_before; after: $(cut -d' ' -f1-3 /proc/loadavg)"
