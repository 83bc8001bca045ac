#!/usr/bin/env python3
"""Inputs that could exhaust memory or block forever end quickly with exit 2 and a clear message.

Each case runs dtsim once and must end within 5 s of CPU (user + system, so that a loaded machine
does not fail it; 60 s of wall time is the hang guard), with exit 2, a message naming the
problem, and a peak RSS under 1 GiB. Usage: resource_limits_test.py DTSIM REPO_ROOT
"""
import os
import resource
import subprocess
import sys
import tempfile
import time

DTSIM, ROOT = sys.argv[1], sys.argv[2]
DEFAULT = os.path.join(ROOT, "scenarios/default.yaml")
failures = []


def cpu_of_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(label, args, expect_text):
    start, cpu0 = time.time(), cpu_of_children()
    try:
        p = subprocess.run([DTSIM] + args, capture_output=True, text=True, timeout=60,
                           errors="replace")
    except subprocess.TimeoutExpired:
        failures.append(label)
        print(f"FAIL {label}: still running after 60 s")
        return
    wall, cpu = time.time() - start, cpu_of_children() - cpu0
    # ru_maxrss of waited-for children is the largest so far; each case runs after smaller ones,
    # and any one above 1 GiB fails here.
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    ok = p.returncode == 2 and expect_text in p.stderr and peak_mib < 1024 and cpu < 5
    print(f"{'ok  ' if ok else 'FAIL'} {label}: exit {p.returncode} in {cpu:.2f} s of CPU "
          f"({wall:.2f} s wall), peak {peak_mib:.0f} MiB: {p.stderr.strip()[:300]}")
    if not ok:
        failures.append(label)


# Every file of the test lives in a scratch folder of its own, removed however the test ends
# (tests/support/scratch_dir.h).
with tempfile.TemporaryDirectory(prefix=f"dtsim-test-resource-limits-{os.getpid()}-") as d:
    run("/dev/zero as the scenario", ["simulate", "/dev/zero"], "is not a regular file")
    run("/dev/urandom as the scenario", ["validate", "/dev/urandom"], "is not a regular file")
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo)
    run("a FIFO as the scenario", ["simulate", fifo], "is not a regular file")
    run("a FIFO as -o", ["simulate", DEFAULT, "--engine", "analytic", "-o", fifo],
        "not a regular file")
    # Sweep files: a FIFO as the grid, the rows' file, a file to merge or to analyze.
    fifo_csv = os.path.join(d, "fifo.csv")
    os.mkfifo(fifo_csv)
    run("a FIFO as --grid", ["sweep", DEFAULT, "--grid", fifo, "-o", os.path.join(d, "g.csv")],
        "is not a regular file")
    run("a FIFO as sweep -o", ["sweep", DEFAULT, "--vary", "cluster.nodes=1,2", "-o", fifo_csv],
        "not a regular file")
    run("a FIFO to --merge", ["sweep", "--merge", fifo_csv, "-o", os.path.join(d, "m.csv")],
        "is not a regular file")
    run("a FIFO to analyze", ["analyze", fifo_csv], "is not a regular file")
    million = os.path.join(d, "million.csv")
    with open(million, "w") as f:
        f.write("config,cluster.nodes,status\n" + "cluster.nodes=1,1,ok\n" * 1_000_000)
    run("a results file of a million rows", ["analyze", million], "rows (about 35 kB")
    huge_csv = os.path.join(d, "huge.csv")
    with open(huge_csv, "wb") as f:
        f.truncate(2 << 30)  # 2 GiB, sparse
    run("a 2 GiB results file", ["analyze", huge_csv], "is larger than")
    run("a sweep of more configurations than a results file holds",
        ["sweep", DEFAULT, "--vary", "cluster.nodes=range(1,100000,1)", "-o",
         os.path.join(d, "r.csv")], "a sweep takes at most 25000 configurations")
    # Seven million list items fit in 14 MB of YAML but would take the parser minutes and GBs.
    with open(DEFAULT) as f:
        default_text = f.read()
    many = os.path.join(d, "many_items.yaml")
    with open(many, "w") as f:
        f.write(default_text + "stragglers:\n  - {ranks: [" + ",".join(["0"] * 7_000_000) +
                "], slowdown: 1.3}\n")
    run("a straggler list of 7 million ranks", ["validate", many],
        "more than 100000 lines and list items by here")
    big = os.path.join(d, "big.yaml")
    with open(big, "wb") as f:
        f.truncate(2 << 30)  # 2 GiB, sparse
    run("a 2 GiB scenario", ["simulate", big], "is larger than")
    run("iterations beyond the memory limit",
        ["simulate", DEFAULT, "--engine", "analytic", "--set", "simulate.iterations=4900"],
        "--max-memory")
    run("a run over a lowered --max-memory",
        ["simulate", DEFAULT, "--engine", "analytic", "--max-memory", "16MiB"],
        "fit the memory limit (--max-memory)")

    huge_pipeline = ["--set", "parallelism.pipeline=4096", "--set", "cluster.nodes=4096", "--set",
                     "model.num_layers=4096", "--set", "training.global_batch_size=4096"]
    run("a 4096-stage pipeline in validate", ["validate", DEFAULT] + huge_pipeline,
        "parallelism.pipeline: 4096 simulated ranks")
    run("a 4096-stage pipeline in simulate", ["simulate", DEFAULT] + huge_pipeline,
        "--max-memory")

    # Data parallelism over 131072 GPUs on SimGrid: few ops, but each all-reduce's flows over
    # every member are what the engine would hold (Executor::bytes_per_collective_member).
    run("a SimGrid run whose collectives span 131072 GPUs",
        ["simulate", DEFAULT, "--engine", "simgrid", "--set", "cluster.nodes=16384", "--set",
         "training.global_batch_size=524288"],
        "M collective members per iteration")

    # Messages: an echoed value is cut to a readable length, and control characters (terminal
    # escape sequences) are shown escaped, in errors and in the summary alike.
    with open(os.path.join(ROOT, "tests/bad_input/valid/base.yaml")) as f:
        base = f.read()
    long_value = os.path.join(d, "long_value.yaml")
    with open(long_value, "w") as f:
        f.write(base.replace("  gpu: H100-SXM", "  gpu: " + "x" * 10_000_000))
    p = subprocess.run([DTSIM, "validate", long_value], capture_output=True, text=True, timeout=60)
    ok = p.returncode == 2 and len(p.stderr) < 5000 and "bytes cut" in p.stderr
    print(f"{'ok  ' if ok else 'FAIL'} a 10 MB value is cut in the message ({len(p.stderr)} bytes)")
    if not ok:
        failures.append("long value")
    escape = os.path.join(d, "escape.yaml")
    with open(escape, "w") as f:
        f.write(base.replace("name: bad-input-base", 'name: "x\\e[2Jy"')
                    .replace("  gpu: H100-SXM", '  gpu: "H1\\e[31m00"'))
    p = subprocess.run([DTSIM, "validate", escape], capture_output=True, text=True, timeout=60)
    ok = p.returncode == 2 and "\x1b" not in p.stderr and "\\x1B[31m" in p.stderr
    print(f"{'ok  ' if ok else 'FAIL'} an escape sequence in an error is shown escaped")
    if not ok:
        failures.append("escape in error")
    with open(escape, "w") as f:
        f.write(base.replace("name: bad-input-base", 'name: "x\\e[2Jy"'))
    p = subprocess.run([DTSIM, "simulate", escape, "--engine", "analytic"], capture_output=True,
                       text=True, timeout=30)
    ok = p.returncode == 0 and "\x1b" not in p.stdout and "x\\x1B[2Jy" in p.stdout
    print(f"{'ok  ' if ok else 'FAIL'} an escape sequence in the scenario name is shown escaped")
    if not ok:
        failures.append("escape in summary")

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
