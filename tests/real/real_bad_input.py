#!/usr/bin/env python3
"""Bad input to dtsim real and dtsim calibrate: exit 2 with a clear message.

  real_bad_input.py DTSIM SCENARIO_OF_2_RANKS
"""
import json
import os
import subprocess
import sys
import tempfile


def main():
    # Every file of the test lives in a scratch folder of its own, removed however the test ends
    # (tests/support/scratch_dir.h).
    with tempfile.TemporaryDirectory(prefix=f"dtsim-test-real-bad-input-{os.getpid()}-") as tmp:
        return checks(tmp)


def checks(tmp):
    dtsim, scenario = sys.argv[1:3]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OMPI_", "PMI", "SLURM_")) and k not in ("RANK", "WORLD_SIZE")}
    cases = [
        # no launcher, a scenario of 2 ranks
        ([dtsim, "real", scenario], {}, "dtsim real was started as one process without a launcher"),
        # the CPU back end on a GPU scenario
        ([dtsim, "real", scenario, "--set", "cluster.gpu=H100-SXM", "--set",
          "cluster.gpus_per_node=1", "--set", "training.precision=bf16", "--cpu"], {},
         "the CPU back end runs the CPU-core device"),
        # a malformed launcher variable
        ([dtsim, "real", scenario], {"RANK": "one", "WORLD_SIZE": "2", "MASTER_ADDR": "x",
                                     "MASTER_PORT": "1"}, "RANK"),
        ([dtsim, "real", scenario, "--inject-fault", "crash:1"], {}, "--inject-fault"),
        ([dtsim, "real", scenario, "--timeout", "soon"], {}, "--timeout"),
        # what only a simulation can model: slowed GPUs, failures over a whole run (a launch
        # that agrees with the scenario's 2 ranks, refused before any connection is made)
        ([dtsim, "real", scenario, "--set", "stragglers=[{ranks: [1], slowdown: 1.3}]"],
         {"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"},
         "cannot slow it down"),
        # a configuration that does not fit is refused before any buffer is allocated
        ([dtsim, "real", scenario, "--set", "cluster.gpus_per_node=1", "--set",
          "model.hidden_size=65536"], {}, "memory: does not fit: the peak memory per device"),
        ([dtsim, "real", scenario, "--set", "cluster.gpus_per_node=1", "--set",
          "model.vocab_size=100000000"], {}, "memory: does not fit: the peak memory per device"),
        # a fault for a rank the run does not have would be injected nowhere
        ([dtsim, "real", scenario, "--inject-fault", "exit:7"],
         {"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"},
         "--inject-fault: rank 7 is not in this run, whose ranks are 0 to 1"),
        ([dtsim, "real", scenario, "--set", "failures.gpu_mtbf=1000h"],
         {"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"},
         "not a whole run"),
    ]
    # compare on files that are not dtsim results
    foreign = os.path.join(tmp, "foreign.json")
    with open(foreign, "w") as f:
        json.dump({"benchmark": "all_reduce_perf", "busbw": 180.2}, f)
    # two results: the default scenario's, and one that differs in step time only by engine
    result = os.path.join(tmp, "result.json")
    subprocess.run([dtsim, "simulate", os.path.join(os.path.dirname(os.path.abspath(scenario)),
                                                    "..", "default.yaml"),
                    "--engine", "analytic", "-o", result], capture_output=True, check=True)
    with open(result) as f:
        stopped = json.load(f)
    stopped["step_time_s"] = 0
    zero = os.path.join(tmp, "zero.json")
    with open(zero, "w") as f:
        json.dump(stopped, f)
    cases += [
        # a device is not a result (it would be read forever), nor a step time of 0
        ([dtsim, "compare", result, "/dev/zero"], {}, "not a regular file"),
        ([dtsim, "compare", result, zero], {}, "a result's step time must be positive"),
        # NaN passes a range check (every comparison with it is false): refused by name
        ([dtsim, "compare", result, result, "--max-error", "nan"], {}, "expected a finite number"),
        ([dtsim, "real", scenario, "--compute-scale", "nan"], {}, "expected a finite number"),
        ([dtsim, "compare", scenario, foreign], {}, "not a JSON result"),
        ([dtsim, "compare", foreign, foreign], {}, "step_time_s"),
    ]
    failures = 0
    for cmd, extra, expect in cases:
        p = subprocess.run(cmd, capture_output=True, text=True, env=dict(env, **extra), timeout=60)
        ok = p.returncode == 2 and expect in p.stderr
        print(("ok  " if ok else "FAIL") + f" exit {p.returncode}: {' '.join(cmd[1:])}\n     "
              + p.stderr.strip().replace("\n", "\n     "))
        failures += not ok
    # The GPU back end on a machine without an NVIDIA driver: a runtime failure (exit 1) with a
    # clear message that says what to do instead (--cpu, or a GPU node), never a crash. Skipped where a GPU is present (the gpu tests cover that).
    if not os.path.exists("/dev/nvidiactl"):
        gpu = os.path.join(os.path.dirname(os.path.abspath(scenario)), "gpu-compute-bound.yaml")
        for cmd in ([dtsim, "real", gpu, "--gpu"], [dtsim, "calibrate", "--gpu"]):
            p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)
            ok = (p.returncode == 1 and "no NVIDIA driver" in p.stderr and "--cpu" in p.stderr
                  and "node with an NVIDIA GPU" in p.stderr)
            print(("ok  " if ok else "FAIL") + f" exit {p.returncode}: {' '.join(cmd[1:])}\n     "
                  + p.stderr.strip().replace("\n", "\n     "))
            failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
