#!/usr/bin/env python3
"""Validates sweep rows and `dtsim analyze --json` against their JSON Schemas.

docs/schemas/sweep-row.schema.json for every line of `dtsim sweep -o FILE.jsonl` (rows ok,
does-not-fit and error; the result of ok and does-not-fit rows also against
simulate-result.schema.json), and docs/schemas/analyze-result.schema.json for one series (with a
skipped row) and for several series. "integer" is strict (a count written as 8.0 fails), and
NaN, Infinity and stray nulls are refused where the schema does not allow them. A missing
jsonschema module is a failure, not a skip.

Usage: sweep_analyze_json_test.py DTSIM SOURCE_DIR SCRATCH_DIR
"""
import os
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from strict_schema import closest, strict_loads, validator  # noqa: E402



failures = 0


def check(v, obj, what):
    global failures
    for e in sorted(v.iter_errors(obj), key=lambda e: list(e.path)):
        e = closest(e)  # oneOf / anyOf: the branch that came closest says what is wrong
        print(f"FAIL {what}: at {'/'.join(map(str, e.absolute_path)) or '(top)'}: "
              f"{e.message[:300]}")
        failures += 1


def run(args, expect=(0,)):
    p = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if p.returncode not in expect:
        sys.exit(f"FAIL: {' '.join(args)} exited {p.returncode}: {p.stderr[-800:]}")
    return p.stdout


def main():
    dtsim, source, scratch = sys.argv[1], sys.argv[2], sys.argv[3]
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    row_schema = validator(source, "sweep-row.schema.json")
    result_schema = validator(source, "simulate-result.schema.json")
    analyze_schema = validator(source, "analyze-result.schema.json")
    default = os.path.join(source, "scenarios", "default.yaml")
    oom = os.path.join(source, "scenarios", "llama3-8b-dp64-h100-oom.yaml")

    # One series with a refused row (3 nodes: 24 replicas do not divide the batch of 512).
    one = os.path.join(scratch, "one.jsonl")
    run([dtsim, "sweep", default, "--vary", "cluster.nodes=1,2,3,4", "--engine", "analytic",
         "-o", one], expect=(0, 1))
    # Several series, and configurations that do not fit.
    two = os.path.join(scratch, "two.jsonl")
    run([dtsim, "sweep", default, "--vary", "cluster.nodes=1,2,4", "--vary",
         "training.micro_batch_size=2,4", "--engine", "analytic", "-o", two])
    misfit = os.path.join(scratch, "oom.jsonl")
    run([dtsim, "sweep", oom, "--vary", "cluster.nodes=2,4", "--engine", "analytic", "-o", misfit],
        expect=(0, 1))

    statuses = set()
    for path in (one, two, misfit):
        with open(path) as f:
            for n, line in enumerate(f, 1):
                row = strict_loads(line)
                what = f"{os.path.basename(path)} row {n}"
                check(row_schema, row, what)
                statuses.add(row["status"])
                if row["status"] in ("ok", "does-not-fit"):
                    check(result_schema, row["result"], what + " result")
    for status in ("ok", "does-not-fit", "error"):
        if status not in statuses:
            print(f"FAIL: no row with status {status} was checked (saw {sorted(statuses)})")
            failures_add()

    single = strict_loads(run([dtsim, "analyze", one, "--json"]))
    check(analyze_schema, single, "analyze, one series")
    if not single.get("skipped"):
        print("FAIL analyze, one series: the refused row should be listed as skipped")
        failures_add()
    several = strict_loads(run([dtsim, "analyze", two, "--json"]))
    check(analyze_schema, several, "analyze, several series")
    if len(several.get("series", [])) != 2:
        print(f"FAIL analyze, several series: expected 2 series, got {several.keys()}")
        failures_add()
    shutil.rmtree(scratch, ignore_errors=True)
    print(f"{len(statuses)} row statuses and 2 analyses checked, {failures} failures")
    sys.exit(1 if failures else 0)


def failures_add():
    global failures
    failures += 1


if __name__ == "__main__":
    main()
