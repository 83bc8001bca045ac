#!/usr/bin/env python3
"""Validates `dtsim collective --json` against docs/schemas/collective-result.schema.json.

Runs the real dtsim binary for one size, a sweep and a barrier, and checks each object against the
schema with Python's jsonschema module (tests/support/strict_schema.py: "integer" strict, NaN
refused). A missing module is a failure, not a skip: the check must run in CI.

Usage: collective_json_test.py DTSIM SOURCE_DIR
"""
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from strict_schema import strict_loads, validator as schema_validator  # noqa: E402


def run(dtsim, args):
    p = subprocess.run([dtsim, "collective"] + args + ["--json"], capture_output=True, text=True,
                       timeout=300)
    if p.returncode != 0:
        sys.exit(f"FAIL: dtsim collective {' '.join(args)} exited {p.returncode}: {p.stderr}")
    return strict_loads(p.stdout)


def main():
    dtsim, source = sys.argv[1], sys.argv[2]
    validator = schema_validator(source, "collective-result.schema.json")
    scenario = os.path.join(source, "scenarios", "default.yaml")
    cases = {
        "one size": [scenario, "--op", "all-reduce", "--bytes", "1GiB", "--engine", "analytic"],
        "sweep": [scenario, "--op", "all-reduce", "-b", "8", "-e", "64M", "-f", "4", "--engine",
                  "analytic"],
        "sweep on simgrid": [scenario, "--op", "all-gather", "--min-bytes", "1MiB", "--max-bytes",
                             "4MiB", "--ranks", "12"],
        "barrier": [scenario, "--op", "barrier", "--engine", "analytic"],
        "uncovered system": [scenario, "--op", "broadcast", "--bytes", "1MiB", "--set",
                             "cluster.intra_node=pcie", "--engine", "analytic"],
    }
    failures = 0
    for name, args in cases.items():
        result = run(dtsim, args)
        errors = sorted(validator.iter_errors(result), key=lambda e: list(e.path))
        for e in errors:
            print(f"FAIL {name}: {'/'.join(map(str, e.path))}: {e.message}")
        failures += len(errors)
        # The contract keys (docs/design.md section 5) are reachable in every row.
        for row in result["rows"]:
            for key in ("time_s", "algbw_GBps", "busbw_GBps"):
                if not isinstance(row.get(key), (int, float)):
                    print(f"FAIL {name}: rows[].{key} missing")
                    failures += 1
            # Whole counts are written as integers (536870912, not 536870912.0).
            for key in ("size_bytes", "count_elements"):
                if type(row.get(key)) is not int:
                    print(f"FAIL {name}: rows[].{key} is {row.get(key)!r}, not an integer")
                    failures += 1
    one = run(dtsim, cases["one size"])
    if len(one["rows"]) != 1 or one["rows"][0]["size_bytes"] != 1073741824:
        print("FAIL one size: expected one row of 1073741824 bytes")
        failures += 1
    # A document that breaks the schema is rejected, so the check above can fail.
    broken = dict(one, rows=[dict(one["rows"][0], time_us=1.0)])
    if validator.is_valid(broken):
        print("FAIL: the schema accepts a row with an unknown key")
        failures += 1
    if failures:
        sys.exit(f"FAIL: {failures} problem(s)")
    print("OK: dtsim collective --json matches docs/schemas/collective-result.schema.json")


if __name__ == "__main__":
    main()
