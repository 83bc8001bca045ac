#!/usr/bin/env python3
"""Validates `dtsim catalog WHAT --json`, for every WHAT, against docs/schemas/catalog.schema.json.

"integer" is strict (a whole value written as 85899345920.0 fails), NaN and Infinity are refused,
and each WHAT must match exactly one of the schema's shapes. A missing jsonschema module is a
failure, not a skip.

Usage: catalog_json_test.py DTSIM SOURCE_DIR
"""
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from strict_schema import closest, strict_loads, validator  # noqa: E402

WHATS = ["gpus", "fabrics", "networks", "models", "hardware", "engines", "keys"]




def main():
    dtsim, source = sys.argv[1], sys.argv[2]
    schema = validator(source, "catalog.schema.json")
    failures = 0
    for what in WHATS:
        p = subprocess.run([dtsim, "catalog", what, "--json"], capture_output=True, text=True,
                           timeout=60)
        if p.returncode != 0:
            print(f"FAIL {what}: exit {p.returncode}: {p.stderr[-500:]}")
            failures += 1
            continue
        catalog = strict_loads(p.stdout)
        errors = list(schema.iter_errors(catalog))
        for e in errors:
            best = closest(e)
            print(f"FAIL {what}: at {'/'.join(map(str, best.absolute_path)) or '(top)'}: "
                  f"{best.message[:300]}")
        failures += len(errors)
        print(f"{what}: {len(catalog)} entries, {len(errors)} schema errors")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
