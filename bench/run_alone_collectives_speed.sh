#!/usr/bin/env bash
# SimGrid speed with and without alone collectives (core/exec/activity_graph.h: a collective that
# provably shares no link with anything running at the same time is one activity of its
# schedule's time, timed once alone), on the public validation set (scenarios/validation/) and on
# Megatron-LM's largest published run, GPT 1T on 3072 A100 (TP 8, PP 64, DP 6, 512 micro-batches
# per pipeline: the validation set's 1T scenario with 384 nodes, data 6 and a global batch of 3072).
#
# Per run, one process each, with the SimGrid engine (fidelity auto, the scenario default):
#   before: BASE_BUILD's dtsim, if given (a build of the code before this change);
#   flows:  this build with DTSIM_SIMGRID_ALONE=0 (every collective as its flows);
#   alone:  this build as it runs by default.
# Prints a markdown table: wall time, CPU time (user + system: steadier on a shared machine) and
# peak RSS, the step times' relative differences (alone against flows, and against before), then
# the load average before and after.
#   bench/run_alone_collectives_speed.sh [BUILD_DIR] [BASE_BUILD_DIR] [LIMIT_S]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dtsim=${1:-build}/cli/dtsim
base=${2:-}
limit_s=${3:-300}
tmp=$(mktemp)
trap 'rm -f "$tmp" "$tmp".*' EXIT

# name|file|extra flags
runs=()
for file in scenarios/validation/*.yaml; do
  [[ $(basename "$file") == published.yaml ]] && continue
  runs+=("$(basename "$file" .yaml)|$file|")
done
runs+=("gpt-1t-tp8-pp64-dp6-3072-a100|scenarios/validation/k22-1t-tp8-pp64-selective-sp-512-a100.yaml|--set cluster.nodes=384 --set parallelism.data=6 --set training.global_batch_size=3072")

# run LABEL DTSIM ENV_ALONE FILE FLAGS: appends " | wall | cpu | MiB" to $row and sets $step.
run() {
  local dtsim_bin=$2 alone=$3 file=$4 flags=$5
  if /usr/bin/time -f "%e %U %S %M" -o "$tmp" env DTSIM_SIMGRID_ALONE="$alone" timeout "$limit_s" \
    "$dtsim_bin" simulate "$file" $flags --engine simgrid --json --max-memory 64GiB \
    2>/dev/null >"$tmp.json"; then
    read -r wall_s user_s sys_s rss_kib <"$tmp"
    cpu_s=$(python3 -c 'import sys; print(f"{float(sys.argv[1]) + float(sys.argv[2]):.2f}")' "$user_s" "$sys_s")
    step=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step_time_s"])' "$tmp.json")
    row+=" | $wall_s | $cpu_s | $((rss_kib / 1024))"
  else
    row+=" | > $limit_s (stopped or failed) | - | -"
    step=""
  fi
}

diff_of() {  # relative difference of $1 against $2, or - when either is missing
  if [[ -n $1 && -n $2 ]]; then
    python3 -c 'import sys; print(f"{float(sys.argv[1]) / float(sys.argv[2]) - 1:+.1e}")' "$1" "$2"
  else
    echo "-"
  fi
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
header="| run |"
rule="|---|"
[[ -n $base ]] && header+=" before wall s | before CPU s | before MiB |" && rule+="---|---|---|"
header+=" flows wall s | flows CPU s | flows MiB | alone wall s | alone CPU s | alone MiB | step, alone vs flows |"
rule+="---|---|---|---|---|---|---|"
[[ -n $base ]] && header+=" step, alone vs before |" && rule+="---|"
echo "$header"
echo "$rule"
for entry in "${runs[@]}"; do
  IFS='|' read -r name file flags <<<"$entry"
  row="| $name"
  before_step=""
  if [[ -n $base ]]; then
    run before "$base/cli/dtsim" 1 "$file" "$flags"
    before_step=$step
  fi
  run flows "$dtsim" 0 "$file" "$flags"
  flows_step=$step
  run alone "$dtsim" 1 "$file" "$flags"
  row+=" | $(diff_of "$step" "$flows_step")"
  [[ -n $base ]] && row+=" | $(diff_of "$step" "$before_step")"
  echo "$row |"
done
echo
echo "load average (1, 5, 15 min): before $load_before, after $(cut -d' ' -f1-3 /proc/loadavg)"
