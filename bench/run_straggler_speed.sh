#!/usr/bin/env bash
# What one straggler costs in simulation time (issue 14, acceptance 6a): GPT-3 175B on 1024 A100
# (scenarios/gpt3-175b-tp8-pp8-interleaved-1024-a100.yaml: TP 8 x PP 8 x DP 16), simulated
# without stragglers and with one slow rank (rank 517: TP rank 5 of stage 0 in replica 8, at
# slowdown 1.3), on each engine, one process per run, back to back. The straggler's replica is
# simulated apart (64 more ranks than the folded replica 0's 8), the other 14 stay folded
# (driver/predict.cc). Prints a markdown table with wall and CPU time, peak memory, the step
# time, straggler_wait and the simulated ranks, then the wall-time ratio per engine (target: < 2).
#   bench/run_straggler_speed.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dtsim=${1:-build}/cli/dtsim
scenario=scenarios/gpt3-175b-tp8-pp8-interleaved-1024-a100.yaml
tmp=$(mktemp)
trap 'rm -f "$tmp" "$tmp.json"' EXIT

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "| engine | stragglers | wall s | CPU s | MiB | step s | straggler_wait s |"
echo "|---|---|---|---|---|---|---|"
declare -A wall=()
for engine in analytic simgrid; do
  for case in 0 1; do
    stragglers="[]"
    [[ $case == 1 ]] && stragglers="[{ranks: [517], slowdown: 1.3}]"
    /usr/bin/time -f "%e %U %S %M" -o "$tmp" "$dtsim" simulate "$scenario" --engine "$engine" \
      --set "stragglers=$stragglers" --json --max-memory 64GiB >"$tmp.json"
    read -r wall_s user_s sys_s rss_kib <"$tmp"
    wall[$engine-$case]=$wall_s
    python3 - "$tmp.json" "$engine" "$stragglers" "$wall_s" "$user_s" "$sys_s" "$rss_kib" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
cpu = float(sys.argv[5]) + float(sys.argv[6])
print(f"| {sys.argv[2]} | `{sys.argv[3]}` | {sys.argv[4]} | {cpu:.2f} | {int(sys.argv[7]) // 1024} "
      f"| {d['step_time_s']:.4f} | {d['breakdown_s']['straggler_wait']:.4f} |")
PY
  done
done
echo
for engine in analytic simgrid; do
  python3 -c 'import sys; print(f"{sys.argv[1]}: wall time with one straggler / without = {float(sys.argv[3]) / float(sys.argv[2]):.2f}")' \
    "$engine" "${wall[$engine-0]}" "${wall[$engine-1]}"
done
echo
echo "load average (1, 5, 15 min): before $load_before, after $(cut -d' ' -f1-3 /proc/loadavg)"
