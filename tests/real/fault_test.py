#!/usr/bin/env python3
"""Faults in real mode on CPU (docs/real-mode.md, "Faults"): a rank that exits mid-step and a rank
that hangs must end the job within the timeout, with exit 1 and an error naming the rank, and leave
no process behind.

  fault_test.py DTSIM MPIEXEC SCENARIO
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

TIMEOUT_S = 4


def live_processes(marker):
    """dtsim processes (not zombies) whose command line holds the marker."""
    out = subprocess.run(["ps", "-eo", "stat=,args="], capture_output=True, text=True).stdout
    return [l for l in out.splitlines() if marker in l and not l.lstrip().startswith("Z")]


def case(dtsim, mpiexec, scenario, fault, must_say):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = [mpiexec, "-np", "2", dtsim, "real", scenario, "--inject-fault", fault,
           "--timeout", f"{TIMEOUT_S}s", "--warmup", "0"]
    print("+ " + " ".join(cmd), flush=True)
    start = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    took = time.monotonic() - start
    print(p.stderr)
    failures = []
    if p.returncode != 1:
        failures.append(f"exit {p.returncode}, expected 1")
    # Startup (MPI, planning) plus the timeout plus the diagnosis (3 s at most) and the abort.
    if took > TIMEOUT_S + 15:
        failures.append(f"took {took:.1f} s, beyond the {TIMEOUT_S} s timeout plus 15 s")
    if must_say not in p.stderr:
        failures.append(f"stderr does not say {must_say!r}")
    time.sleep(1)
    left = live_processes(scenario)
    if left:
        failures.append("processes left behind: " + "; ".join(left))
        subprocess.run(["pkill", "-9", "-f", scenario])
    for f in failures:
        print(f"FAIL ({fault}): {f}")
    print(f"{fault}: exit {p.returncode} after {took:.1f} s", flush=True)
    return not failures


def main():
    dtsim, mpiexec, scenario = sys.argv[1:4]
    with tempfile.TemporaryDirectory(prefix=f"dtsim-test-fault-{os.getpid()}-") as d:
        # A unique path, so that the process check finds only this test's processes.
        marked = os.path.join(d, f"fault-{os.getpid()}.yaml")
        shutil.copy(scenario, marked)
        ok = case(dtsim, mpiexec, marked, "exit:1", "rank 1")
        ok &= case(dtsim, mpiexec, marked, "hang:1", "rank 1 stopped making progress")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
