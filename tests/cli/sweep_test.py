#!/usr/bin/env python3
"""dtsim sweep against the real binary: rows, failures, interruption and resume, shards, merge,
an mpirun sweep, and bad input.

- A 200-run analytic sweep with -j 2 gives 200 rows.
- Killed with SIGINT at about half, then resumed, it gives exactly 200 unique rows; the same for
  SIGKILL. No child process outlives the killed sweep for long.
- A failing configuration is an error row with its message, not an abort.
- --shard i/3 for i = 0, 1, 2 covers every configuration exactly once; --merge joins them.
- A 2-rank mpirun sweep gives the same rows as the serial sweep.
- Bad input exits 2: an unknown --vary key, an empty range, a malformed shard, an existing file
  without --resume, a resume over other keys.
Usage: sweep_test.py DTSIM REPO_ROOT [MPIEXEC]
"""
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

DTSIM, ROOT = sys.argv[1], sys.argv[2]
MPIEXEC = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else shutil.which("mpirun")
SCENARIO = os.path.join(ROOT, "scenarios/default.yaml")
# 40 global batches x 5 seeds: 200 distinct configurations, each a quick analytic run (the
# default scenario's 16 GPUs at micro-batch 4 take any multiple of 64 samples).
VARY_200 = ["--vary", "training.global_batch_size=range(64,2560,64)",
            "--vary", "simulate.seed=range(0,4,1)"]
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def children_of(pid):
    """Pids whose parent is `pid`, from /proc."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    return out


def alive(pid):
    """Whether `pid` runs (a zombie does not count)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def sweep(*args, **kw):
    return subprocess.run([DTSIM, "sweep", SCENARIO, "--engine", "analytic", *args],
                          capture_output=True, text=True, timeout=600, **kw)


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def expected_configs():
    return {f"training.global_batch_size={64 * n};simulate.seed={s}"
            for n in range(1, 41) for s in range(5)}


def interrupted_then_resumed(tmp, sig, name):
    out = os.path.join(tmp, name + ".csv")
    err_path = os.path.join(tmp, name + ".stderr")
    err = open(err_path, "w")
    p = subprocess.Popen([DTSIM, "sweep", SCENARIO, "--engine", "analytic", *VARY_200, "-j", "2",
                          "-o", out], stdout=subprocess.DEVNULL, stderr=err)
    # Wait for about half of the rows, then send the signal.
    deadline = time.time() + 300
    while time.time() < deadline:
        time.sleep(0.05)
        try:
            with open(out) as f:
                if sum(1 for _ in f) - 1 >= 100:
                    break
        except FileNotFoundError:
            pass
    running = children_of(p.pid)
    p.send_signal(sig)
    p.wait(timeout=60)
    err.close()
    with open(err_path) as f:
        stderr = f.read()
    before = rows(out)
    if sig != signal.SIGKILL:
        # The last words say how far it got and how to go on (the count may trail the file by
        # the rows finished as the signal arrived).
        m = re.search(r"interrupted; (\d+) of 200 configurations have their rows in .*"
                      r"Run the same command with --resume to run the other (\d+)", stderr)
        check(m is not None and int(m.group(1)) + int(m.group(2)) == 200 and
              int(m.group(1)) <= len(before),
              f"{name}: the stopped sweep says how many rows are done and how to resume "
              f"({stderr.strip()[-300:]})")
    check(0 < len(before) < 200, f"{name}: the sweep was stopped part-way ({len(before)} rows)")
    # A stopped sweep's children end with it (PR_SET_PDEATHSIG, or its handler).
    time.sleep(1.0)
    leftover = [pid for pid in running if alive(pid)]
    check(not leftover, f"{name}: none of the {len(running)} runs it had started is left running")
    r = sweep(*VARY_200, "-j", "2", "-o", out, "--resume")
    check(r.returncode == 0, f"{name}: the resumed sweep exits 0 ({r.stderr.strip()[-300:]})")
    after = rows(out)
    configs = [row["config"] for row in after]
    check(len(after) == 200, f"{name}: 200 rows after resuming (found {len(after)})")
    check(len(set(configs)) == len(configs), f"{name}: no configuration twice")
    check(set(configs) == expected_configs(), f"{name}: every configuration has its row")
    check(all(row["status"] == "ok" and float(row["step_time_s"]) > 0 for row in after),
          f"{name}: every row is a complete result")
    check(f"{len(before)} of 200 configurations are already in" in r.stderr,
          f"{name}: the resumed sweep says how many rows it kept")


def main():
    # A scratch folder of the test's own, removed however it ends (tests/support/scratch_dir.h).
    tmp = tempfile.mkdtemp(prefix=f"dtsim-test-sweep-{os.getpid()}-")
    try:
        # 200 runs, two at a time.
        out = os.path.join(tmp, "all.csv")
        t = time.time()
        r = sweep(*VARY_200, "-j", "2", "-o", out)
        check(r.returncode == 0, f"200-run sweep exits 0 ({r.stderr.strip()[-300:]})")
        full = rows(out)
        check(len(full) == 200, f"200-run sweep gives 200 rows (found {len(full)})")
        check({row["config"] for row in full} == expected_configs(),
              "every configuration has exactly one row")
        check(all(row["status"] == "ok" for row in full), "every run of the 200 succeeded")
        # A row's result is the one dtsim simulate gives for the same overrides.
        one = subprocess.run([DTSIM, "simulate", SCENARIO, "--engine", "analytic", "--json",
                              "--set", "training.global_batch_size=448", "--set",
                              "simulate.seed=3"],
                             capture_output=True, text=True, check=True)
        direct = json.loads(one.stdout)
        row = next(r for r in full
                   if r["config"] == "training.global_batch_size=448;simulate.seed=3")
        check(abs(float(row["step_time_s"]) - direct["step_time_s"]) <= 1e-12 * direct["step_time_s"],
              "a row holds what dtsim simulate prints for its overrides")
        check(int(row["config.global_batch_size"]) == 448, "the row's config is its overrides'")
        print(f"     (200 runs with -j 2 took {time.time() - t:.1f} s)")

        interrupted_then_resumed(tmp, signal.SIGINT, "SIGINT")
        interrupted_then_resumed(tmp, signal.SIGKILL, "SIGKILL")

        # A failing configuration is a row, and the others go on.
        out = os.path.join(tmp, "fail.jsonl")
        r = sweep("--vary", "parallelism.tensor=2,16,4", "-o", out)
        check(r.returncode == 0, "a sweep with a failing configuration exits 0")
        lines = [json.loads(x) for x in open(out)]
        by = {x["overrides"]["parallelism.tensor"]: x for x in lines}
        check(len(lines) == 3, "three rows, the failed one included")
        check(by["16"]["status"] == "error" and by["16"]["exit_code"] == 2 and
              "does not divide" in by["16"]["error"], "the failed run's row has its error")
        check(by["2"]["status"] == "ok" and by["4"]["status"] == "ok" and
              by["4"]["result"]["config"]["tp"] == 4, "the other runs succeeded")

        # An error of several lines is one CSV row on one line, its lines joined with " | ".
        out = os.path.join(tmp, "multiline.csv")
        r = sweep("--vary", "parallelism.tensor=1,3", "-o", out)
        with open(out) as f:
            text = f.read()
        three = [row for row in rows(out) if row["config"] == "parallelism.tensor=3"]
        check(r.returncode == 0 and text.count("\n") == 3 and len(three) == 1 and
              " | parallelism.tensor:" in three[0]["error"],
              f"a row with a multi-line error is one line ({text.count(chr(10))} lines)")

        # A configuration that does not fit in memory: simulate exits 2 and still writes its
        # result; the sweep row is does-not-fit with the result; analyze leaves it out and says
        # so.
        oom = os.path.join(ROOT, "scenarios/llama3-8b-dp64-h100-oom.yaml")
        result_file = os.path.join(tmp, "oom.json")
        r = subprocess.run([DTSIM, "simulate", oom, "--engine", "analytic", "--json", "-o",
                            result_file], capture_output=True, text=True)
        check(r.returncode == 2 and "memory: does not fit" in r.stderr,
              f"simulate of a configuration that does not fit exits 2 (exit {r.returncode})")
        check(json.loads(r.stdout)["memory"]["fits"] is False and
              json.load(open(result_file))["memory"]["fits"] is False,
              "and still prints and writes its whole result")
        out = os.path.join(tmp, "oom.csv")
        r = subprocess.run([DTSIM, "sweep", oom, "--engine", "analytic", "--vary",
                            "training.micro_batch_size=1,2,4", "--vary",
                            "parallelism.zero_stage=0,3", "-o", out],
                           capture_output=True, text=True, timeout=600)
        got = rows(out)
        fit = [x for x in got if x["status"] == "ok"]
        not_fit = [x for x in got if x["status"] == "does-not-fit"]
        check(r.returncode == 0 and len(got) == 6 and fit and not_fit and
              len(fit) + len(not_fit) == 6,
              f"a sweep gives does-not-fit rows beside ok ones ({[x['status'] for x in got]})")
        check(all(x["memory.fits"] == "false" and x["step_time_s"] and x["exit_code"] == "2"
                  for x in not_fit), "a does-not-fit row keeps its result and exit code 2")
        check(f"{len(not_fit)} do not fit in memory" in r.stdout,
              "the sweep's summary counts them")
        a = subprocess.run([DTSIM, "analyze", out, "--x", "training.micro_batch_size"],
                           capture_output=True, text=True)
        check("does-not-fit" in a.stdout + a.stderr,
              "analyze leaves the does-not-fit rows out and says so")

        # A run past --timeout is a timeout row.
        out = os.path.join(tmp, "timeout.csv")
        slow = os.path.join(ROOT, "scenarios/gpt3-175b-tp8-pp8-interleaved-1024-a100.yaml")
        r = subprocess.run([DTSIM, "sweep", slow, "--engine", "simgrid", "--vary",
                            "simulate.seed=1", "--timeout", "0.2s", "-o", out],
                           capture_output=True, text=True, timeout=120)
        tr = rows(out)
        check(r.returncode == 0 and len(tr) == 1 and tr[0]["status"] == "timeout" and
              tr[0]["exit_code"] == "124", "a run past --timeout is a timeout row")

        # Shards cover every configuration exactly once, and merge back into one file.
        parts = []
        for i in range(3):
            part = os.path.join(tmp, f"shard{i}.csv")
            r = sweep("--vary", "training.global_batch_size=range(64,640,64)", "--vary",
                      "simulate.seed=0,1",
                      "--shard", f"{i}/3", "-o", part)
            check(r.returncode == 0, f"shard {i}/3 exits 0")
            parts.append(part)
        seen = [row["config"] for p in parts for row in rows(p)]
        want = {f"training.global_batch_size={64 * n};simulate.seed={s}"
                for n in range(1, 11) for s in (0, 1)}
        check(len(seen) == 20 and set(seen) == want,
              f"3 shards cover the 20 configurations exactly once ({len(seen)} rows)")
        check(all(4 <= len(rows(p)) <= 8 for p in parts), "each shard does about a third")
        merged = os.path.join(tmp, "merged.csv")
        r = subprocess.run([DTSIM, "sweep", "--merge", *parts, parts[0], "-o", merged],
                           capture_output=True, text=True)
        check(r.returncode == 0 and len(rows(merged)) == 20 and "duplicate" in r.stdout,
              "--merge joins the shards into 20 rows and drops duplicates")

        # --resume keeps only rows of this very sweep: another --set, engine or an edited
        # scenario file is refused by name, and so is --merge of different sweeps.
        own = os.path.join(tmp, "own.yaml")
        shutil.copy(SCENARIO, own)
        first = os.path.join(tmp, "first.csv")
        base = [DTSIM, "sweep", own, "--vary", "cluster.nodes=1,2", "-o", first]
        r = subprocess.run(base + ["--engine", "analytic"], capture_output=True, text=True)
        check(r.returncode == 0 and all(row["sweep"] for row in rows(first)),
              "every row carries its sweep's identity")
        for extra, what in ((["--engine", "analytic", "--set", "training.micro_batch_size=2"],
                             "other --set values"),
                            (["--engine", "simgrid"], "another engine")):
            r = subprocess.run(base + extra + ["--resume"], capture_output=True, text=True)
            check(r.returncode == 2 and "holds rows of another sweep" in r.stderr,
                  f"--resume with {what} is refused ({r.stderr.strip()[-200:]})")
        with open(own, "a") as f:
            f.write("# edited\n")
        r = subprocess.run(base + ["--engine", "analytic", "--resume"], capture_output=True,
                           text=True)
        check(r.returncode == 2 and "holds rows of another sweep" in r.stderr,
              f"--resume after the scenario file changed is refused ({r.stderr.strip()[-200:]})")
        other = os.path.join(tmp, "other.csv")
        subprocess.run([DTSIM, "sweep", os.path.join(ROOT, "scenarios/gpt3-2.7b-dp64-h100.yaml"),
                        "--engine", "analytic", "--vary", "cluster.nodes=8,16", "-o", other],
                       capture_output=True, text=True)
        r = subprocess.run([DTSIM, "sweep", "--merge", first, other, "-o",
                            os.path.join(tmp, "joined.csv")], capture_output=True, text=True)
        check(r.returncode == 2 and "holds rows of another sweep than" in r.stderr,
              f"--merge of two scenarios' sweeps is refused ({r.stderr.strip()[-200:]})")

        # mpirun -np 2 gives the same rows as the serial sweep.
        serial = os.path.join(tmp, "serial.csv")
        sweep("--vary", "cluster.nodes=1,2,3,4,5", "--vary", "parallelism.tensor=2,16",
              "-o", serial)
        if MPIEXEC:
            par = os.path.join(tmp, "mpi.csv")
            env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
            r = subprocess.run([MPIEXEC, "-np", "2", "--oversubscribe", DTSIM, "sweep", SCENARIO,
                                "--engine", "analytic", "--vary", "cluster.nodes=1,2,3,4,5",
                                "--vary", "parallelism.tensor=2,16", "-o", par],
                               capture_output=True, text=True, env=env, timeout=300)
            check(r.returncode == 0, f"the mpirun sweep exits 0 ({r.stderr.strip()[-400:]})")
            a = {x["config"]: x for x in rows(serial)}
            b = {x["config"]: x for x in rows(par)} if os.path.exists(par) else {}
            drop = {"wall_s"}
            same = a.keys() == b.keys() and all(
                {k: v for k, v in a[c].items() if k not in drop} ==
                {k: v for k, v in b[c].items() if k not in drop} for c in a)
            check(len(a) == 10 and same, "a 2-rank mpirun sweep gives the serial sweep's rows")
            check(not [f for f in os.listdir(tmp) if ".part" in f],
                  "the mpirun sweep leaves no part file behind")
        else:
            check(False, "mpirun is needed for the MPI sweep test (scripts/setup.sh installs it)")

        # Bad input: exit 2 and a message naming the problem.
        bad = [
            (["--vary", "parallelism.tensr=1,2", "-o", os.path.join(tmp, "b1.csv")],
             "did you mean 'parallelism.tensor'"),
            (["--vary", "cluster.nodes=range(8,1,1)", "-o", os.path.join(tmp, "b2.csv")],
             "is empty"),
            (["--vary", "cluster.nodes=", "-o", os.path.join(tmp, "b3.csv")], "no values"),
            (["--vary", "cluster.nodes=1,2", "--shard", "3/3", "-o", os.path.join(tmp, "b4.csv")],
             "expected i/n"),
            (["--vary", "cluster.nodes=1,2", "--shard", "x", "-o", os.path.join(tmp, "b5.csv")],
             "expected i/n"),
            (["--vary", "cluster.nodes=1,two", "-o", os.path.join(tmp, "b6.csv")], "cluster.nodes"),
            (["--vary", "cluster.nodes=1,2", "-o", os.path.join(tmp, "b7.txt")], ".csv or .jsonl"),
            (["--vary", "cluster.nodes=1,2", "-o", serial], "--resume"),
            (["--vary", "cluster.gpus_per_node=8", "-o", serial, "--resume"], "holds a sweep over"),
        ]
        for args, text in bad:
            r = sweep(*args)
            check(r.returncode == 2 and text in r.stderr,
                  f"exit 2 naming '{text}' for {' '.join(args[:4])} "
                  f"(exit {r.returncode}: {r.stderr.strip()[:200]})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(failures)} failed" if failures else "all sweep checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
