#!/usr/bin/env python3
"""Validates `dtsim plan --json` against docs/schemas/plan-result.schema.json.

Runs the real dtsim binary twice: a search whose best configuration is simulated (a SimGrid
child), and an analytic-only search with configurations that do not fit (closest_misses). Each
object is checked against the schema with Python's jsonschema, with "integer" strict (a count
written as 2.0 fails), and ranked rows must fit (headroom_bytes >= 0). A missing jsonschema
module is a failure, not a skip.

Usage: plan_json_test.py DTSIM SOURCE_DIR
"""
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from strict_schema import closest, strict_loads, validator  # noqa: E402



def main():
    dtsim, source = sys.argv[1], sys.argv[2]
    schema = validator(source, "plan-result.schema.json")
    scenario = os.path.join(source, "scenarios", "default.yaml")
    cases = {
        "simulated top 1": [scenario, "--set", "model.preset=gpt3-125m", "--constraint",
                            "parallelism.pipeline=1", "--constraint", "parallelism.zero_stage=1",
                            "--top", "1"],
        "analytic only, with misses": [scenario, "--constraint", "parallelism.zero_stage=0",
                                       "--analytic-only"],
    }
    failures = 0
    for name, args in cases.items():
        p = subprocess.run([dtsim, "plan"] + args + ["--json"], capture_output=True, text=True,
                           timeout=600)
        if p.returncode != 0:
            print(f"FAIL {name}: exit {p.returncode}: {p.stderr[-800:]}")
            failures += 1
            continue
        result = strict_loads(p.stdout)
        errors = sorted(schema.iter_errors(result), key=lambda e: list(e.path))
        for e in map(closest, errors):
            print(f"FAIL {name}: at {'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}")
        failures += len(errors)
        if not result["ranked"]:
            print(f"FAIL {name}: nothing ranked")
            failures += 1
        for row in result["ranked"]:
            if row["headroom_bytes"] < 0:
                print(f"FAIL {name}: ranked {row['config']} does not fit")
                failures += 1
        if name.startswith("simulated") and not result["ranked"][0]["simulated"]:
            print(f"FAIL {name}: the best row was not simulated: {result['ranked'][0]}")
            failures += 1
        if name.startswith("analytic") and not result["closest_misses"]:
            print(f"FAIL {name}: expected configurations that do not fit")
            failures += 1
        print(f"{name}: {len(result['ranked'])} ranked, {len(result['closest_misses'])} misses, "
              f"{len(errors)} schema errors")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
