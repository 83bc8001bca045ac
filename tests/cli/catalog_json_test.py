#!/usr/bin/env python3
"""Validates `dtsim catalog WHAT --json`, for every WHAT, against docs/schemas/catalog.schema.json.

"integer" is strict (a whole value written as 85899345920.0 fails), NaN and Infinity are refused,
and each WHAT must match exactly one of the schema's shapes. A missing jsonschema module is a
failure, not a skip.

Usage: catalog_json_test.py DTSIM SOURCE_DIR
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

WHATS = ["gpus", "fabrics", "networks", "models", "hardware", "engines", "keys"]


def strict_integer(checker, instance):
    return isinstance(instance, int) and not isinstance(instance, bool)


def refuse(constant):
    raise ValueError(f"non-finite number {constant}")


def main():
    dtsim, source = sys.argv[1], sys.argv[2]
    with open(os.path.join(source, "docs", "schemas", "catalog.schema.json")) as f:
        schema = json.load(f)
    base = jsonschema.validators.validator_for(schema)
    base.check_schema(schema)
    validator = jsonschema.validators.extend(
        base, type_checker=base.TYPE_CHECKER.redefine("integer", strict_integer))(schema)
    failures = 0
    for what in WHATS:
        p = subprocess.run([dtsim, "catalog", what, "--json"], capture_output=True, text=True,
                           timeout=60)
        if p.returncode != 0:
            print(f"FAIL {what}: exit {p.returncode}: {p.stderr[-500:]}")
            failures += 1
            continue
        catalog = json.loads(p.stdout, parse_constant=refuse)
        errors = list(validator.iter_errors(catalog))
        for e in errors:
            # oneOf: report the branch that came closest
            best = jsonschema.exceptions.best_match(e.context) if e.context else e
            print(f"FAIL {what}: at {'/'.join(map(str, best.absolute_path)) or '(top)'}: "
                  f"{best.message[:300]}")
        failures += len(errors)
        print(f"{what}: {len(catalog)} entries, {len(errors)} schema errors")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
