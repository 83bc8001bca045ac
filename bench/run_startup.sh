#!/usr/bin/env bash
# Start-up cost of a dtsim command, with and without libcublasLt loaded at start.
#
# dtsim loads cuBLASLt only when the GPU back end first calls it (real/cuda/cublaslt_on_demand.cc);
# a build linked against it loaded it in every command. LD_PRELOAD of the same library into the
# same binary reproduces that, so both columns time one binary, one run after the other.
#   bench/run_startup.sh [BUILD_DIR] [REPEATS]      (results: bench/results/startup.md)
set -euo pipefail
build=${1:-build}
n=${2:-20}
dtsim=$build/cli/dtsim
lib=$(ldconfig -p | awk '/libcublasLt\.so\.[0-9]+ /{print $NF; exit}')
[[ -z $lib && -e /usr/local/cuda/lib/libcublasLt.so.13 ]] && lib=/usr/local/cuda/lib/libcublasLt.so.13
if [[ -z $lib ]]; then
  echo "no libcublasLt on this machine: nothing to compare" >&2
  exit 1
fi
mean_s() {  # command... -> mean wall seconds over $n runs
  local t0 t1
  t0=$(date +%s.%N)
  for ((i = 0; i < n; i++)); do "$@" >/dev/null 2>&1; done
  t1=$(date +%s.%N)
  echo "($t1 - $t0) / $n" | bc -l
}
echo "dtsim: $dtsim; preloaded: $lib; $n runs each; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-55s %12s %12s %8s\n' command "on demand s" "preloaded s" ratio
for cmd in "--version" "simulate scenarios/default.yaml --engine analytic --json"; do
  # shellcheck disable=SC2086
  a=$(mean_s "$dtsim" $cmd)
  # shellcheck disable=SC2086
  b=$(mean_s env LD_PRELOAD="$lib" "$dtsim" $cmd)
  printf '%-55s %12.3f %12.3f %8.2f\n' "dtsim $cmd" "$a" "$b" "$(echo "$b / $a" | bc -l)"
done
