#!/usr/bin/env bash
# Are two dtsim builds' results the same? Runs every scenario of scenarios/ (validation and the
# CPU real-mode ones included; the GPU real-mode ones are measured, not simulated) and a few
# topology variants (rail-only, rail-optimized with oversubscription, a 3-level fat-tree with
# pods, a dragonfly) through `dtsim simulate --json` with both builds, on the analytic engine and
# on SimGrid (for scenarios of at most SIMGRID_MAX_GPUS GPUs; all by default), and compares every
# number of the JSON to a relative 1e-9 (run time, dates and paths aside). Prints one line per
# difference and a summary; exits 1 if any.
#   bench/compare_results.sh DTSIM_BEFORE DTSIM_AFTER [SIMGRID_MAX_GPUS]
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
before=${1:?usage: bench/compare_results.sh DTSIM_BEFORE DTSIM_AFTER [SIMGRID_MAX_GPUS]}
after=${2:?usage: bench/compare_results.sh DTSIM_BEFORE DTSIM_AFTER [SIMGRID_MAX_GPUS]}
max_gpus=${3:-100000}
python3 - "$before" "$after" "$max_gpus" "$here" <<'PY'
import glob, json, math, os, subprocess, sys
before, after, max_gpus, root = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
scenarios = sorted(glob.glob(f"{root}/scenarios/*.yaml") + glob.glob(f"{root}/scenarios/validation/*.yaml")
                   + glob.glob(f"{root}/scenarios/real/cpu-*.yaml"))
base = f"{root}/scenarios/gpt3-2.7b-dp64-h100.yaml"
net = "cluster.network."
variants = [
    (base, [f"{net}topology=rail-only"]),
    (base, [f"{net}topology=rail-optimized", f"{net}oversubscription=2"]),
    (base, [f"{net}topology=fat-tree", f"{net}levels=3", f"{net}nodes_per_leaf=2",
            f"{net}leaves_per_pod=2", f"{net}pod_oversubscription=4"]),
    (base, [f"{net}topology=dragonfly"]),
]
runs = [(s, []) for s in scenarios] + variants
IGNORE = {"wall_s", "cpu_s", "elapsed_s", "created", "date", "command", "file", "path", "scenario_file"}

def flat(x, prefix=""):
    if isinstance(x, dict):
        for k, v in x.items():
            if k in IGNORE: continue
            yield from flat(v, f"{prefix}.{k}" if prefix else k)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from flat(v, f"{prefix}[{i}]")
    else:
        yield prefix, x

def run(binary, scenario, sets, engine):
    cmd = [binary, "simulate", scenario, "--engine", engine, "--json"]
    for s in sets: cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    return p.returncode, (p.stdout if p.returncode == 0 else p.stderr.strip().splitlines()[-1:])

differences = compared = 0
for scenario, sets in runs:
    name = os.path.relpath(scenario, root) + "".join(f" --set {s}" for s in sets)
    rc, out = run(after, scenario, sets, "analytic")
    gpus = json.loads(out)["config"]["gpus"] if rc == 0 else 0
    engines = ["analytic"] + (["simgrid"] if rc == 0 and gpus <= max_gpus else [])
    for engine in engines:
        ra, a = run(before, scenario, sets, engine)
        rb, b = run(after, scenario, sets, engine)
        compared += 1
        if ra != rb:
            print(f"DIFF {name} [{engine}]: exit {ra} before, {rb} after"); differences += 1; continue
        if ra != 0:
            if a != b:
                print(f"DIFF {name} [{engine}]: error {a} before, {b} after"); differences += 1
            continue
        fa, fb = dict(flat(json.loads(a))), dict(flat(json.loads(b)))
        for k in sorted(set(fa) | set(fb)):
            x, y = fa.get(k), fb.get(k)
            same = x == y or (isinstance(x, (int, float)) and isinstance(y, (int, float))
                              and math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-15))
            if not same:
                print(f"DIFF {name} [{engine}] {k}: {x!r} before, {y!r} after"); differences += 1
print(f"compare_results: {compared} runs compared ({len(runs)} scenarios and variants), "
      f"{differences} differences")
sys.exit(1 if differences else 0)
PY
