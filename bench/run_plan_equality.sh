#!/usr/bin/env bash
# dtsim plan ranks by `dtsim simulate --engine analytic`: for each of the two large searches
# (GPT-3 175B on 1024 A100, Llama 3 70B on 512 H100), list every configuration that fits by the
# analytic engine's step time (`dtsim plan --analytic-only --json`), then simulate every STRIDE-th
# of them, in rank order, with `dtsim simulate --engine analytic --json` in a process of its own
# and compare the step time and peak memory per GPU. Prints one markdown row per search: the
# configurations ranked, how many were compared, and the largest relative differences.
# STRIDE 1 compares them all: about 2 s of CPU per GPT-3 configuration (4451 of them) and 0.4 s
# per Llama one, so about 3 hours of CPU; JOBS simulations run at once (default: the cores).
# FIRST=N starts at the N-th ranked configuration (0-based), to finish a run that was stopped.
#   bench/run_plan_equality.sh [BUILD_DIR] [STRIDE]
#   JOBS=2 bench/run_plan_equality.sh build 1
#   FIRST=2700 JOBS=1 SCENARIOS=scenarios/gpt3-175b-tp8-pp8-interleaved-1024-a100.yaml bench/run_plan_equality.sh build 1
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dtsim=${1:-build}/cli/dtsim
stride=${2:-25}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

first=${FIRST:-0}
echo "| scenario | ranked | compared (every ${stride}th from the ${first}th) | largest step-time difference (relative) | largest peak-memory difference (relative) |"
echo "|---|---|---|---|---|"
# SCENARIOS (space-separated) replaces the two searches, e.g. to run one of them alone.
for scenario in ${SCENARIOS:-scenarios/gpt3-175b-tp8-pp8-interleaved-1024-a100.yaml \
                scenarios/llama3-70b-zero1-512-h100.yaml}; do
  "$dtsim" plan "$scenario" --analytic-only --top 1000000 --json >"$tmp/plan.json" 2>/dev/null
  python3 - "$dtsim" "$scenario" "$stride" "$tmp/plan.json" "$first" <<'PY'
import json, os, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
dtsim, scenario, stride, plan, first = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
rows = json.load(open(plan))["ranked"]
jobs = int(os.environ.get("JOBS", os.cpu_count() or 1))

def simulate(row):
    cmd = [dtsim, "simulate", scenario, "--engine", "analytic", "--json"]
    for o in row["overrides"]:
        cmd += ["--set", o]
    out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    t, m = out["step_time_s"], out["memory"]["peak_bytes_per_gpu"]
    return abs(row["analytic_step_time_s"] - t) / t, abs(row["peak_bytes_per_gpu"] - m) / m

chosen = rows[first::stride]
worst_t = worst_m = 0.0
with ThreadPoolExecutor(max_workers=jobs) as pool:
    for k, (dt, dm) in enumerate(pool.map(simulate, chosen), 1):
        worst_t, worst_m = max(worst_t, dt), max(worst_m, dm)
        if k % 100 == 0:
            print(f"  {scenario}: {k}/{len(chosen)} compared, worst {worst_t:.2e} / {worst_m:.2e}",
                  file=sys.stderr, flush=True)
print(f"| {scenario} | {len(rows)} | {len(chosen)} | {worst_t:.2e} | {worst_m:.2e} |")
PY
done
