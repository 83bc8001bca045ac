#!/usr/bin/env python3
"""Output files survive every way a run can fail, and no simulation process outlives dtsim.

For each failure (bad input found late, an engine error, SIGKILL of the simulation process,
SIGKILL, SIGTERM and SIGINT of dtsim itself) the previous contents of -o and --trace must be
intact and no process of the run may remain; an -o that is the input, directly or through a
symbolic link, is refused before any work. Usage: output_safety_test.py DTSIM REPO_ROOT
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

DTSIM, ROOT = sys.argv[1], sys.argv[2]
# The longest example on SimGrid (about 4 s for one iteration here): the simulation process lives
# long enough to be found and killed.
SLOW = os.path.join(ROOT, "scenarios/gpt3-175b-tp8-pp8-interleaved-1024-a100.yaml")
FAST = os.path.join(ROOT, "scenarios/default.yaml")
OLD_RESULT, OLD_TRACE = "previous result\n", "previous trace\n"
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def children_of(pid):
    """Pids whose parent is `pid` (from /proc, so no ps is needed)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(entry))
    return out


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def fresh_outputs(d):
    result, trace = os.path.join(d, "result.json"), os.path.join(d, "trace.json")
    with open(result, "w") as f:
        f.write(OLD_RESULT)
    with open(trace, "w") as f:
        f.write(OLD_TRACE)
    return result, trace


def check_intact(d, result, trace, what):
    """Checks that -o and --trace keep their old contents; returns the temporaries left."""
    with open(result) as f:
        r = f.read()
    with open(trace) as f:
        t = f.read()
    check(r == OLD_RESULT and t == OLD_TRACE, f"{what}: -o and --trace keep their contents")
    leftovers = [n for n in os.listdir(d) if ".dtsim-" in n]
    return leftovers


def start_slow(result, trace):
    return subprocess.Popen(
        [DTSIM, "simulate", SLOW, "--set", "simulate.iterations=2", "-o", result, "--trace", trace],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def wait_for_child(proc, timeout_s=60):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        kids = children_of(proc.pid)
        if kids:
            return kids[0]
        if proc.poll() is not None:
            return None
        time.sleep(0.02)
    return None


# Every file of the test lives in a scratch folder of its own, removed however the test ends
# (tests/support/scratch_dir.h).
with tempfile.TemporaryDirectory(prefix=f"dtsim-test-output-safety-{os.getpid()}-") as d:
    # Bad input found late: the chunk-fidelity limit is checked once the Program is built.
    result, trace = fresh_outputs(d)
    p = subprocess.run([DTSIM, "simulate", FAST, "--set", "cluster.nodes=512", "--set",
                        "training.global_batch_size=16384", "--set", "simulate.fidelity=chunk",
                        "--engine", "simgrid", "-o", result, "--trace", trace],
                       capture_output=True, text=True, timeout=120)
    check(p.returncode == 2, f"late bad input exits 2 (got {p.returncode}: {p.stderr.strip()})")
    check(not check_intact(d, result, trace, "late bad input"), "late bad input leaves no temporary")

    # An engine error: the simulation process killed under dtsim.
    result, trace = fresh_outputs(d)
    proc = start_slow(result, trace)
    child = wait_for_child(proc)
    check(child is not None, "the SimGrid run has its own process")
    if child:
        os.kill(child, signal.SIGKILL)
    _, err = proc.communicate(timeout=120)
    check(proc.returncode == 1 and "signal 9" in err,
          f"a killed simulation is a runtime error naming the signal (got {proc.returncode}: "
          f"{err.strip()[:200]})")
    check(not check_intact(d, result, trace, "engine error"), "an engine error leaves no temporary")

    # An engine that crashes (SIGABRT, as SimGrid's own aborts end) is a runtime error too.
    result, trace = fresh_outputs(d)
    proc = start_slow(result, trace)
    child = wait_for_child(proc)
    if child:
        os.kill(child, signal.SIGABRT)
    _, err = proc.communicate(timeout=120)
    check(proc.returncode == 1 and "SimGrid simulation failed" in err,
          f"a crashed engine is a runtime error (got {proc.returncode}: {err.strip()[:200]})")
    check(not check_intact(d, result, trace, "engine crash"), "an engine crash leaves no temporary")

    # dtsim itself killed or stopped: the simulation ends with it.
    for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT):
        name = signal.Signals(sig).name
        result, trace = fresh_outputs(d)
        proc = start_slow(result, trace)
        child = wait_for_child(proc)
        check(child is not None, f"{name}: the SimGrid run has its own process")
        os.kill(proc.pid, sig)
        proc.communicate(timeout=60)
        deadline = time.time() + 5
        while child and alive(child) and time.time() < deadline:
            time.sleep(0.05)
        check(child is not None and not alive(child),
              f"{name} of dtsim: no simulation process remains within 5 s")
        leftovers = check_intact(d, result, trace, f"{name} of dtsim")
        if sig != signal.SIGKILL:  # only SIGKILL cannot be handled
            check(not leftovers, f"{name} of dtsim removes its temporary files ({leftovers})")
        for n in leftovers:
            os.unlink(os.path.join(d, n))

    # A successful run replaces both files whole.
    result, trace = fresh_outputs(d)
    p = subprocess.run([DTSIM, "simulate", FAST, "--engine", "analytic", "-o", result, "--trace",
                        trace], capture_output=True, text=True, timeout=120)
    with open(result) as f:
        body = f.read()
    check(p.returncode == 0 and body.lstrip().startswith("{") and body.rstrip().endswith("}"),
          "a successful run writes the result")

    # A long run reports its progress on stderr, and stdout stays one JSON document.
    # (GPT 1T on 512 A100 with SimGrid: about 4 s alone, well past the 2 s before progress shows;
    # the 175B example became too quick for that once TP collectives run as one activity.)
    long_run = os.path.join(ROOT, "scenarios/validation/k22-1t-tp8-pp64-selective-sp-512-a100.yaml")
    p = subprocess.run([DTSIM, "simulate", long_run, "--engine", "simgrid", "--json"],
                       capture_output=True, text=True, timeout=300)
    try:
        import json
        json.loads(p.stdout)
        clean = True
    except ValueError:
        clean = False
    check(p.returncode == 0 and clean and "dtsim: simulating" in p.stderr,
          f"a long run shows progress on stderr only ({p.stderr.strip()[:200]})")
    p = subprocess.run([DTSIM, "simulate", FAST, "--engine", "analytic"], capture_output=True,
                       text=True, timeout=60)
    check(p.returncode == 0 and p.stderr == "", "a quick run prints nothing on stderr")

    # An output that is the input, or the other output, is refused before any work.
    scenario = os.path.join(d, "s.yaml")
    with open(FAST) as f, open(scenario, "w") as g:
        g.write(f.read())
    with open(scenario) as f:
        before = f.read()
    link = os.path.join(d, "link.yaml")
    os.symlink(scenario, link)
    for out, what in ((scenario, "the input"), (link, "a link to the input")):
        p = subprocess.run([DTSIM, "simulate", scenario, "--engine", "analytic", "-o", out],
                           capture_output=True, text=True, timeout=60)
        with open(scenario) as f:
            check(p.returncode == 2 and "is the input" in p.stderr and f.read() == before,
                  f"-o as {what} is refused and the scenario kept ({p.stderr.strip()})")
    p = subprocess.run([DTSIM, "simulate", scenario, "--engine", "analytic", "-o", result,
                        "--trace", result], capture_output=True, text=True, timeout=60)
    check(p.returncode == 2 and "--output file" in p.stderr, "-o and --trace on one file is refused")

    # A file the scenario names (a profile, a background job's scenario) is an input too: no
    # verb writes over it, directly, through a link or through --set.
    import shutil
    profile = os.path.join(d, "prof.yaml")
    shutil.copy(os.path.join(ROOT, "tests/real/data/cpu-profile-example.yaml"), profile)
    with open(os.path.join(ROOT, "scenarios/real/cpu-data-parallel.yaml")) as f:
        cpu = f.read()
    cpu_scenario = os.path.join(d, "cpu.yaml")
    with open(cpu_scenario, "w") as f:
        f.write(cpu)
    with open(profile) as f:
        profile_text = f.read()
    profile_link = os.path.join(d, "prof-link.yaml")
    os.symlink(profile, profile_link)
    for args, what in (
            (["simulate", cpu_scenario, "--engine", "analytic", "--set",
              f"cluster.profile={profile}", "-o", profile], "simulate -o over the profile"),
            (["simulate", cpu_scenario, "--engine", "analytic", "--set",
              f"cluster.profile={profile}", "-o", profile_link], "-o through a link to the profile"),
            (["simulate", cpu_scenario, "--engine", "analytic", "--set",
              f"cluster.profile={profile}", "--trace", profile], "--trace over the profile")):
        p = subprocess.run([DTSIM] + args, capture_output=True, text=True, timeout=60)
        with open(profile) as f:
            check(p.returncode == 2 and "which this run reads" in p.stderr and f.read() == profile_text,
                  f"{what} is refused and the profile kept ({p.stderr.strip()[:200]})")
    profile_csv = os.path.join(d, "prof.csv")
    shutil.copy(profile, profile_csv)
    p = subprocess.run([DTSIM, "sweep", cpu_scenario, "--engine", "analytic", "--vary",
                        "training.micro_batch_size=1,2", "--set", f"cluster.profile={profile_csv}",
                        "-o", profile_csv], capture_output=True, text=True, timeout=60)
    with open(profile_csv) as f:
        check(p.returncode == 2 and "which this run reads" in p.stderr and f.read() == profile_text,
              f"sweep -o over the profile is refused and the profile kept ({p.stderr.strip()[:200]})")
    background = os.path.join(d, "bg.yaml")
    shutil.copy(FAST, background)
    with open(background) as f:
        background_text = f.read()
    p = subprocess.run([DTSIM, "simulate", FAST, "--engine", "simgrid", "--set",
                        f"background.scenario={background}", "-o", background],
                       capture_output=True, text=True, timeout=120)
    with open(background) as f:
        check(p.returncode == 2 and f.read() == background_text,
              f"-o over the background job's scenario is refused and kept ({p.stderr.strip()[:200]})")

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
