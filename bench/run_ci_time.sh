#!/usr/bin/env bash
# How long CI (.ci/run, the README's `scripts/setup.sh test`) takes on this machine, stage by
# stage: a fresh clone of HEAD, compiler caches off, every line of the run prefixed with the
# seconds since it started.
#   bench/run_ci_time.sh [CLONE_DIR]        (results: bench/results/ci-time.md)
# The stages are the lines starting with "setup:" and ctest's "Total Test time" lines; the last
# line is the exit status and the total. Packages must be installed already (the first run of
# scripts/setup.sh installs them), so apt's time is not counted.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
clone=${1:-$(mktemp -d /tmp/dtsim-ci-time.XXXXXX)}
rm -rf "$clone"
git clone -q "$root" "$clone"
export CCACHE_DISABLE=1
cd "$clone"
echo "commit $(git rev-parse --short HEAD); $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s)
set +e
.ci/run 2>&1 | while IFS= read -r line; do
  printf '%5d %s\n' $(($(date +%s) - start)) "$line"
done | grep -E '^ *[0-9]+ (setup:|Total Test time|[0-9]+% tests passed|0 bad outcomes|seed )'
status=${PIPESTATUS[0]}
echo "exit $status, total $(($(date +%s) - start)) s"
exit "$status"
