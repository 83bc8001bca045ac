#!/usr/bin/env bash
# Wall time and peak RSS of one training step of each example scenario (issue: parallel
# strategies, point 8), on the SimGrid engine at the fidelity `auto` picks, and on the analytic
# engine for comparison, with the predicted step time next to each.
#   bench/run_strategy_examples.sh [BUILD_DIR] [TIMEOUT_S]  > bench/results/strategy-examples.md
# Each run is one `dtsim simulate` process measured by GNU time (%e wall s, %M peak RSS KiB).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${1:-$here/../build}
limit=${2:-300}
dtsim=$build/cli/dtsim
scenarios=(
  gpt3-175b-tp8-pp8-interleaved-1024-a100
  llama3-70b-zero1-512-h100
  llama3-405b-tp8-pp16-dp128-16384-h100
  mixtral-8x7b-ep8-64-h100
  gpt3-13b-zero3-64-a100
)

echo "# Example scenarios: simulation cost of one step"
echo
echo "Measured $(date -u +%Y-%m-%d) on $(nproc) cores of $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'),"
echo "one process per run, with \`bench/run_strategy_examples.sh $build $limit\`."
echo "Targets (issue 5): under 5 s for GPT-3 175B on 1024 GPUs, under 60 s for Llama-3 405B on"
echo "16384 GPUs, under 4 GiB of RSS, at the fidelity auto picks."
echo
echo "| scenario | engine | wall s | peak RSS MiB | simulated ranks | predicted step s | MFU |"
echo "|---|---|---|---|---|---|---|"
for name in "${scenarios[@]}"; do
  file=$here/../scenarios/$name.yaml
  ranks=$("$dtsim" validate "$file" | sed -n 's/.*simulated ranks: \([0-9]* of [0-9]*\).*/\1/p')
  for engine in simgrid analytic; do
    json=$(mktemp)
    out=$( { /usr/bin/time -f "TIME %e %M %x" timeout "$limit" "$dtsim" simulate "$file" \
      --engine "$engine" --json > "$json"; } 2>&1 | tail -1)
    read -r tag wall rss code <<< "$out"
    if [[ $tag != TIME || $code != 0 ]]; then
      printf '| %s | %s | failed or > %s s (exit %s) | - | %s | - | - |\n' "$name" "$engine" "$limit" "$code" "$ranks"
    else
      read -r step mfu < <(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["step_time_s"], r["flops"]["mfu"])' "$json")
      printf '| %s | %s | %s | %.0f | %s | %.3f | %.3f |\n' "$name" "$engine" "$wall" "$((rss / 1024))" "$ranks" "$step" "$mfu"
    fi
    rm -f "$json"
  done
done
