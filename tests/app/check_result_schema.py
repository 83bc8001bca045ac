#!/usr/bin/env python3
"""Validates `dtsim simulate SCENARIO --json` against docs/schemas/simulate-result.schema.json.

usage: check_result_schema.py DTSIM SCHEMA SCENARIO:ENGINE...

For each scenario and engine it runs dtsim (which exits 2, with the whole result, for a
configuration that does not fit in memory), parses the object strictly (NaN and Infinity are
errors, as is null anywhere: nlohmann_json writes a non-finite double as null), and validates it
with Python's jsonschema (Debian's python3-jsonschema 4.10 or later). The schema's "integer"
is checked strictly: 2.0 is not an integer here, so a count written as a float fails. A missing
jsonschema module is a failure, not a skip.
"""
import json
import subprocess
import sys

try:
    import jsonschema
except ImportError:
    sys.exit("error: Python's jsonschema module is missing; install python3-jsonschema "
             "(Debian) or `pip install jsonschema` to run this test")


def reject_constant(name):
    raise ValueError(f"non-finite number {name} in the result")


def find_nulls(value, path="$"):
    if value is None:
        yield path
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from find_nulls(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from find_nulls(v, f"{path}[{i}]")


def strict_integer(checker, instance):
    return isinstance(instance, int) and not isinstance(instance, bool)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    dtsim, schema_path = sys.argv[1], sys.argv[2]
    with open(schema_path, encoding="utf-8") as f:
        schema = json.load(f)
    base = jsonschema.validators.validator_for(schema)
    base.check_schema(schema)
    Strict = jsonschema.validators.extend(
        base, type_checker=base.TYPE_CHECKER.redefine("integer", strict_integer))
    validator = Strict(schema)
    failures = 0
    for arg in sys.argv[3:]:
        scenario, engine = arg.rsplit(":", 1)
        run = subprocess.run([dtsim, "simulate", scenario, "--engine", engine, "--json"],
                             capture_output=True, text=True)
        where = f"{scenario} ({engine})"
        # A configuration that does not fit exits 2 with its whole result on stdout and the
        # verdict on stderr; anything else must exit 0.
        does_not_fit = run.returncode == 2 and "memory: does not fit" in run.stderr
        if run.returncode != 0 and not does_not_fit:
            print(f"FAIL {where}: dtsim exited {run.returncode}\n{run.stderr}")
            failures += 1
            continue
        try:
            result = json.loads(run.stdout, parse_constant=reject_constant)
        except ValueError as e:
            print(f"FAIL {where}: {e}")
            failures += 1
            continue
        if does_not_fit and result.get("memory", {}).get("fits") is not False:
            print(f"FAIL {where}: exit 2 for memory, but the result says it fits")
            failures += 1
            continue
        problems = [f"null (a non-finite number?) at {p}" for p in find_nulls(result)]
        problems += [f"{'/'.join(str(x) for x in e.absolute_path) or '(top)'}: {e.message}"
                     for e in validator.iter_errors(result)]
        if result.get("engine") != engine:
            problems.append(f"engine is {result.get('engine')!r}, not {engine!r}")
        if problems:
            failures += 1
            print(f"FAIL {where}:")
            for p in problems:
                print(f"  {p}")
        else:
            print(f"ok   {where}")
    if failures:
        sys.exit(f"{failures} result(s) do not match {schema_path}")


if __name__ == "__main__":
    main()
