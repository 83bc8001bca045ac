#!/usr/bin/env bash
# The tree's chunk-fidelity benchmark (bench/results/tree-chunk-speed.md): one data-parallel
# GPT-2-XL step on 64 H100 (8 nodes, global batch 256) at chunk fidelity on the SimGrid engine,
# with two builds in one run, interleaved (A, B, A, B, ...) so that both see the same load.
# Prints a markdown table row per run: wall and CPU seconds (user + system, the simulation
# processes included), peak RSS, the step time; then the medians' ratio and the load averages.
#   bench/run_tree_chunk_speed.sh DTSIM_A DTSIM_B [REPEATS]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
a=$1
b=$2
repeats=${3:-3}
tmp=$(mktemp)
trap 'rm -f "$tmp" "$tmp".*' EXIT
args=(simulate bench/scenarios/dp-gpt2-xl.yaml --set cluster.nodes=8
  --set training.global_batch_size=256 --set simulate.fidelity=chunk --json)

echo "Measured $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores, $repeats interleaved runs per build."
echo "Load average (1, 5, 15 min) before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| build | run | wall s | CPU s | peak RSS MiB | step time s |"
echo "|---|---|---|---|---|---|"
declare -A walls
for ((i = 1; i <= repeats; i++)); do
  for which in A B; do
    bin=$a
    [[ $which == B ]] && bin=$b
    /usr/bin/time -f "%e %U %S %M" -o "$tmp" "$bin" "${args[@]}" 2>/dev/null >"$tmp.json"
    read -r wall_s user_s sys_s rss_kib <"$tmp"
    python3 - "$which" "$i" "$wall_s" "$user_s" "$sys_s" "$rss_kib" "$tmp.json" <<'PY'
import json, sys
which, run, wall, user, sys_s, rss, out = sys.argv[1:]
step = json.load(open(out))["step_time_s"]
print(f"| {which} | {run} | {float(wall):.2f} | {float(user) + float(sys_s):.2f} | "
      f"{int(rss) / 1024:.0f} | {step:.12g} |")
PY
    walls[$which]+="$wall_s "
  done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
ma=$(echo "${walls[A]}" | median)
mb=$(echo "${walls[B]}" | median)
echo
echo "Median wall: A $ma s, B $mb s; A / B = $(awk -v a="$ma" -v b="$mb" 'BEGIN {printf "%.2f", a / b}')x."
echo "Load average (1, 5, 15 min) after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "- A: \`$a\`"
echo "- B: \`$b\`"
