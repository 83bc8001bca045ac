#!/usr/bin/env bash
# Start-up cost of dtsim commands: two dtsim programs, interleaved run by run, in CPU seconds
# (user + system, from the kernel's accounting of each child) and wall seconds.
#
#   bench/run_startup.sh BEFORE_DTSIM AFTER_DTSIM [REPEATS]     (results: bench/results/startup.md)
#
# BEFORE_DTSIM is typically a dtsim built from an earlier commit (git worktree add ../before
# <commit>; build it there), AFTER_DTSIM build/cli/dtsim. Each repeat runs every command once
# with each program, alternating which goes first, so that a change in the machine's load
# affects both alike. Run it from the repository root (the commands read scenarios/).
set -euo pipefail
before=${1:?usage: bench/run_startup.sh BEFORE_DTSIM AFTER_DTSIM [REPEATS]}
after=${2:?usage: bench/run_startup.sh BEFORE_DTSIM AFTER_DTSIM [REPEATS]}
n=${3:-20}
echo "before: $before; after: $after; $n runs each, interleaved; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$before" "$after" "$n" <<'PY'
import os, resource, subprocess, sys, time
before, after, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
commands = [["--version"],
            ["simulate", "scenarios/default.yaml", "--engine", "analytic", "--json"],
            ["simulate", "scenarios/default.yaml", "--json"]]
def run(binary, args):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([binary] + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    t1 = time.perf_counter()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), t1 - t0
print(f"{'command':58} {'before CPU s':>12} {'after CPU s':>12} {'CPU ratio':>9} {'before wall s':>13} {'after wall s':>12}")
for args in commands:
    cpu = {before: 0.0, after: 0.0}
    wall = {before: 0.0, after: 0.0}
    for i in range(n):
        order = (before, after) if i % 2 == 0 else (after, before)
        for b in order:
            c, w = run(b, args)
            cpu[b] += c
            wall[b] += w
    text = "dtsim " + " ".join(args)
    print(f"{text:58} {cpu[before]/n:12.4f} {cpu[after]/n:12.4f} {cpu[before]/cpu[after]:9.2f} "
          f"{wall[before]/n:13.4f} {wall[after]/n:12.4f}")
PY
