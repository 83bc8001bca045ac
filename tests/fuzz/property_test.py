#!/usr/bin/env python3
"""Property test: boundary values on every numeric scenario key never break dtsim.

Each case sets one to three numeric keys of the scenario schema (read from `dtsim catalog keys
--json`, so a key added later is covered without an edit here) to boundary values: 0, 1, 2^31-1,
2^31, 2^63-1, 1e-300, 1e300, NaN, inf and negatives, with the key's unit where it has one. The
run must end within the time limit with
  - exit 0 and finite outputs: no inf, nan or null in the JSON, no "inf"/"nan" in the summary; or
  - exit 2 and an `error:` line that names a key or flag;
never exit 1, a signal, a sanitizer report or a hang.

    tests/fuzz/property_test.py DTSIM SEED CASES [BASE_SCENARIO]

ctest runs fixed seeds (tests/CMakeLists.txt); bench/results/property-fuzz.md records a longer
run and its command.
"""
import json
import math
import os
import random
import re
import subprocess
import sys

DTSIM = sys.argv[1]
SEED = int(sys.argv[2]) if len(sys.argv) > 2 else 1
CASES = int(sys.argv[3]) if len(sys.argv) > 3 else 100
HERE = os.path.dirname(os.path.abspath(__file__))
BASE = sys.argv[4] if len(sys.argv) > 4 else os.path.join(HERE, "..", "bad_input", "valid",
                                                          "base.yaml")
TIMEOUT_S = int(os.environ.get("PROPERTY_TIMEOUT_S", "120"))
rng = random.Random(SEED)

NUMBERS = ["0", "1", "2", "-1", "2147483647", "2147483648", "4294967296", "9223372036854775807",
           "9223372036854775808", "1e-300", "1e300", "nan", ".nan", "inf", ".inf", "-.inf", "0.5",
           "1e-9", "65536"]
# Ordinary values, so that a share of the cases run and their outputs are checked too.
ORDINARY = ["1", "2", "4", "8", "16", "0.5", "0.9", "3", "64", "1024"]
UNITS = {"bytes": ["B", "GiB"], "bandwidth": ["bps", "GBps"], "duration": ["s", "us"],
         "flop-rate": ["FLOPS", "TFLOPS"]}


def numeric_keys():
    out = subprocess.run([DTSIM, "catalog", "keys", "--json"], capture_output=True, text=True,
                         check=True).stdout
    keys = []

    def walk(node):  # each node's key is its whole dotted path
        t = node.get("type")
        if t in ("count", "count-or-auto", "number", "number-or-auto") or t in UNITS:
            keys.append((node["key"], t))
        for c in node.get("children", []):
            walk(c)

    for n in json.loads(out)["keys"]:
        walk(n)
    return keys


def value_for(kind):
    v = rng.choice(NUMBERS if rng.random() < 0.6 else ORDINARY)
    if kind in UNITS and rng.random() < 0.9:
        v += rng.choice(UNITS[kind])
    return v


def non_finite(x, path=""):
    """Paths of values that are not finite numbers (null stands for NaN/inf in nlohmann JSON)."""
    bad = []
    if x is None:
        bad.append(path or "(root)")
    elif isinstance(x, float) and not math.isfinite(x):
        bad.append(path)
    elif isinstance(x, dict):
        for k, v in x.items():
            bad += non_finite(v, f"{path}.{k}" if path else k)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            bad += non_finite(v, f"{path}[{i}]")
    return bad


KEYED = re.compile(r"^error: (\S+:\d+(:\d+)?: )?(--[\w-]+|[\w.\[\]-]+): ", re.M)


def main():
    keys = numeric_keys()
    assert len(keys) > 20, f"only {len(keys)} numeric keys found in the schema"
    failures = 0
    counts = {"ok": 0, "bad input": 0}
    for i in range(CASES):
        sets = [f"{k}={value_for(t)}" for k, t in rng.sample(keys, rng.choice([1, 1, 2, 3]))]
        verb = rng.choice(["simulate", "simulate", "validate"])
        args = [DTSIM, verb, BASE]
        for s in sets:
            args += ["--set", s]
        as_json = verb == "simulate" and rng.random() < 0.7
        if verb == "simulate":
            args += ["--engine", "analytic" if rng.random() < 0.8 else "simgrid"]
            if as_json:
                args.append("--json")
        problem = None
        try:
            r = subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT_S,
                               errors="replace",
                               env=dict(os.environ, ASAN_OPTIONS="detect_leaks=1"))
        except subprocess.TimeoutExpired:
            problem, r = f"no answer within {TIMEOUT_S} s", None
        if r is not None:
            if "Sanitizer" in r.stderr or "runtime error" in r.stderr:
                problem = "sanitizer report"
            elif r.returncode == 0:
                counts["ok"] += 1
                if as_json:
                    try:
                        bad = non_finite(json.loads(r.stdout))
                        if bad:
                            problem = "non-finite values at " + ", ".join(bad[:5])
                    except ValueError as e:
                        problem = f"stdout is not JSON ({e})"
                elif re.search(r"\b(inf|nan)\b", r.stdout, re.I):
                    problem = "inf or nan in the output"
            elif r.returncode == 2:
                counts["bad input"] += 1
                if not KEYED.search(r.stderr):
                    problem = "exit 2 without an error line naming a key or flag"
            else:
                problem = f"exit {r.returncode}"
        if problem:
            failures += 1
            tail = (r.stderr[-600:] if r else "").strip()
            print(f"FAIL case {i}: {problem}\n  dtsim {' '.join(args[1:])}\n  {tail}")
    print(f"seed {SEED}: {CASES} cases over {len(keys)} numeric keys: {counts['ok']} ran, "
          f"{counts['bad input']} refused as bad input, {failures} failed")
    sys.exit(1 if failures else 0)


main()
