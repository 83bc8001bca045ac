#!/usr/bin/env bash
# Wall time and peak RSS of two dtsim builds on the same runs, interleaved (A, B, A, B, ...) so
# that both see the same machine load, reported as ratios B / A of the medians.
#   bench/compare_builds.sh DTSIM_A DTSIM_B [REPEATS]  > bench/results/<name>.md
# The runs: the strategy examples (one SimGrid step each, as bench/run_strategy_examples.sh) and
# the 1 GiB all-reduce over 16384 ranks at collective fidelity (as bench/run_simgrid_scaling.sh).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
a=$1
b=$2
repeats=${3:-3}

runs=(
  "gpt3-175b 1024 A100|simulate $here/../scenarios/gpt3-175b-tp8-pp8-interleaved-1024-a100.yaml"
  "llama3-70b 512 H100|simulate $here/../scenarios/llama3-70b-zero1-512-h100.yaml"
  "llama3-405b 16384 H100|simulate $here/../scenarios/llama3-405b-tp8-pp16-dp128-16384-h100.yaml"
  "mixtral EP8 64 H100|simulate $here/../scenarios/mixtral-8x7b-ep8-64-h100.yaml"
  "gpt3-13b ZeRO-3 64 A100|simulate $here/../scenarios/gpt3-13b-zero3-64-a100.yaml"
  "all-reduce 1 GiB, 16384 ranks, ring, collective|collective $here/scenarios/allreduce-cluster.yaml --set cluster.nodes=2048 --set simulate.fidelity=collective --bytes 1GiB --algorithm ring"
)

measure() {  # dtsim, args... -> "wall_s rss_kib"
  local bin=$1
  shift
  local out
  # shellcheck disable=SC2068
  out=$( { /usr/bin/time -f "TIME %e %M %x" "$bin" $@ > /dev/null; } 2>&1 | tail -1)
  read -r tag wall rss code <<< "$out"
  [[ $tag == TIME && $code == 0 ]] && echo "$wall $rss" || echo "nan nan"
}

median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }

echo "# Build comparison: wall time and peak memory, B / A"
echo
echo "Measured $(date -u +%Y-%m-%d) on $(nproc) cores of $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'),"
echo "$repeats interleaved runs of each build, with \`bench/compare_builds.sh A B $repeats\`."
echo
echo "- A: \`$a\`"
echo "- B: \`$b\`"
echo
echo "| run | A wall s | B wall s | wall B/A | A RSS MiB | B RSS MiB | RSS B/A |"
echo "|---|---|---|---|---|---|---|"
for entry in "${runs[@]}"; do
  label=${entry%%|*}
  args=${entry#*|}
  wa=() wb=() ra=() rb=()
  for ((i = 0; i < repeats; i++)); do
    read -r w r < <(measure "$a" $args)
    wa+=("$w") ra+=("$r")
    read -r w r < <(measure "$b" $args)
    wb+=("$w") rb+=("$r")
  done
  mwa=$(printf '%s\n' "${wa[@]}" | median) mwb=$(printf '%s\n' "${wb[@]}" | median)
  mra=$(printf '%s\n' "${ra[@]}" | median) mrb=$(printf '%s\n' "${rb[@]}" | median)
  awk -v l="$label" -v wa="$mwa" -v wb="$mwb" -v ra="$mra" -v rb="$mrb" 'BEGIN {
    printf "| %s | %.2f | %.2f | %.3f | %.0f | %.0f | %.3f |\n", l, wa, wb, wb / wa, ra / 1024, rb / 1024, rb / ra }'
done
