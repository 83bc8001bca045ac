#!/usr/bin/env bash
# Simulation speed of the public validation set (scenarios/validation/, docs/validation.md "Public
# validation set"): wall time and peak memory of `dtsim simulate FILE --json` per run, with the
# analytic engine and with the SimGrid engine (fidelity auto, the scenario default). One process per
# run; a run past LIMIT_S seconds is stopped and reported as such. Prints a markdown table: wall
# time, CPU time (user + system: less sensitive to other load on a shared machine) and peak RSS,
# then the load average before and after.
#   bench/run_validation_speed.sh [BUILD_DIR] [LIMIT_S]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dtsim=${1:-build}/cli/dtsim
limit_s=${2:-300}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "| run | analytic wall s | analytic CPU s | analytic MiB | simgrid wall s | simgrid CPU s | simgrid MiB | simgrid step vs analytic |"
echo "|---|---|---|---|---|---|---|---|"
for file in scenarios/validation/*.yaml; do
  [[ $(basename "$file") == published.yaml ]] && continue
  row="| $(basename "$file" .yaml)"
  declare -A step=()
  for engine in analytic simgrid; do
    if /usr/bin/time -f "%e %U %S %M" -o "$tmp" timeout "$limit_s" "$dtsim" simulate "$file" \
      --engine "$engine" --json --max-memory 64GiB 2>/dev/null >"$tmp.json"; then
      read -r wall_s user_s sys_s rss_kib <"$tmp"
      cpu_s=$(python3 -c 'import sys; print(f"{float(sys.argv[1]) + float(sys.argv[2]):.2f}")' "$user_s" "$sys_s")
      step[$engine]=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step_time_s"])' "$tmp.json")
      row+=" | $wall_s | $cpu_s | $((rss_kib / 1024))"
    else
      row+=" | > $limit_s (stopped or failed) | - | -"
      step[$engine]=""
    fi
  done
  if [[ -n ${step[analytic]} && -n ${step[simgrid]} ]]; then
    row+=" | $(python3 -c 'import sys; print(f"{100 * (float(sys.argv[1]) / float(sys.argv[2]) - 1):+.2f}%")' "${step[simgrid]}" "${step[analytic]}")"
  else
    row+=" | -"
  fi
  echo "$row |"
  unset step
done
rm -f "$tmp.json"
echo
echo "load average (1, 5, 15 min): before $load_before, after $(cut -d' ' -f1-3 /proc/loadavg)"
