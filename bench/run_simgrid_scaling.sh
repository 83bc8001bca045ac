#!/usr/bin/env bash
# Wall time and peak RSS of dtsim on SimGrid at growing scale (issue: SimGrid executor, point 4).
#   bench/run_simgrid_scaling.sh [BUILD_DIR] [TIMEOUT_S]  > bench/results/simgrid-scaling.md
# SECTIONS="dp allreduce" (the default) selects the tables. DTSIM_SIMGRID_BYPASS=0 measures the
# executor without its bypass of SimGrid 3.32's per-completion list walk (sim/maestro_activities.h).
# Each run is one `dtsim` process measured by GNU time (%e wall seconds, %M peak RSS in KiB);
# runs longer than TIMEOUT_S (default 120) are stopped and reported as such.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${1:-$here/../build}
limit=${2:-120}
sections=${SECTIONS:-dp allreduce}
dtsim=$build/cli/dtsim

measure() {  # label, command...
  local label=$1
  shift
  local out
  out=$( { /usr/bin/time -f "TIME %e %M %x" timeout "$limit" "$@" > /dev/null; } 2>&1 | tail -1)
  read -r tag wall rss code <<< "$out"
  if [[ $tag != TIME || $code == 124 ]]; then
    printf '| %s | > %s (stopped) | - |\n' "$label" "$limit"
  elif [[ $code == 2 ]]; then
    printf '| %s | refused: chunk fidelity beyond 20 M flows (exit 2) | - |\n' "$label"
  else
    printf '| %s | %s | %.0f |\n' "$label" "$wall" "$((rss / 1024))"
  fi
}

echo "# SimGrid engine: wall time and peak memory"
echo
echo "Measured $(date -u +%Y-%m-%d) on $(nproc) cores of $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'),"
echo "one process per run, with \`${DTSIM_SIMGRID_BYPASS:+DTSIM_SIMGRID_BYPASS=$DTSIM_SIMGRID_BYPASS }SECTIONS=\"$sections\" bench/run_simgrid_scaling.sh $build $limit\`."
echo
if [[ $sections == *dp* ]]; then
echo "## One data-parallel training step (dtsim simulate)"
echo
echo "| run | wall s | peak RSS MiB |"
echo "|---|---|---|"
for model in resnet50 gpt2-xl; do
  for gpus in 8 64 256 1024 4096; do
    nodes=$((gpus / 8))
    [[ $model == resnet50 ]] && batch=$((gpus * 128)) || batch=$((gpus * 4))
    for fidelity in chunk collective auto; do
      measure "$model, $gpus GPUs, $fidelity" "$dtsim" simulate "$here/scenarios/dp-$model.yaml" \
        --set cluster.nodes=$nodes --set training.global_batch_size=$batch --set simulate.fidelity=$fidelity
    done
  done
done
fi
if [[ $sections == *allreduce* ]]; then
echo
echo "## A 1 GiB all-reduce (dtsim collective)"
echo
echo "| run | wall s | peak RSS MiB |"
echo "|---|---|---|"
for ranks in 1024 4096 16384; do
  nodes=$((ranks / 8))
  for fidelity in chunk collective; do
    for algorithm in ring hierarchical; do
      measure "$ranks ranks, $algorithm, $fidelity" "$dtsim" collective "$here/scenarios/allreduce-cluster.yaml" \
        --set cluster.nodes=$nodes --set simulate.fidelity=$fidelity --bytes 1GiB --algorithm $algorithm
    done
  done
done
fi
