#!/usr/bin/env python3
"""Validates `dtsim plan --json` against docs/schemas/plan-result.schema.json.

Runs the real dtsim binary twice: a search whose best configuration is simulated (a SimGrid
child), and an analytic-only search with configurations that do not fit (closest_misses). Each
object is checked against the schema with Python's jsonschema, with "integer" strict (a count
written as 2.0 fails), and ranked rows must fit (headroom_bytes >= 0). A missing jsonschema
module is a failure, not a skip.

Usage: plan_json_test.py DTSIM SOURCE_DIR
"""
import json
import os
import subprocess
import sys

try:
    import jsonschema
except ImportError:
    sys.exit("FAIL: Python's jsonschema module is missing; install python3-jsonschema "
             "(scripts/setup.sh) to run this test")


def strict_integer(checker, instance):
    return isinstance(instance, int) and not isinstance(instance, bool)


def main():
    dtsim, source = sys.argv[1], sys.argv[2]
    with open(os.path.join(source, "docs", "schemas", "plan-result.schema.json")) as f:
        schema = json.load(f)
    base = jsonschema.validators.validator_for(schema)
    base.check_schema(schema)
    validator = jsonschema.validators.extend(
        base, type_checker=base.TYPE_CHECKER.redefine("integer", strict_integer))(schema)
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
        result = json.loads(p.stdout, parse_constant=lambda c: sys.exit(f"FAIL {name}: {c}"))
        errors = sorted(validator.iter_errors(result), key=lambda e: list(e.path))
        for e in errors:
            print(f"FAIL {name}: at {'/'.join(map(str, e.path)) or '(top)'}: {e.message}")
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
