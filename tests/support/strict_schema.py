"""Loading dtsim's JSON Schemas (docs/schemas/) for the tests that check a verb's --json.

validator(source, name): a validator of docs/schemas/NAME whose "integer" is strict (a count
written as 8.0 fails); strict_loads(text): json.loads that refuses NaN and Infinity. A missing
jsonschema module is a failure, not a skip: the checks must run in CI.
"""
import json
import os
import sys

try:
    import jsonschema
except ImportError:
    sys.exit("FAIL: Python's jsonschema module is missing; install python3-jsonschema "
             "(scripts/setup.sh) to run this test")


def _strict_integer(checker, instance):
    return isinstance(instance, int) and not isinstance(instance, bool)


def validator(source, name):
    with open(os.path.join(source, "docs", "schemas", name), encoding="utf-8") as f:
        schema = json.load(f)
    base = jsonschema.validators.validator_for(schema)
    base.check_schema(schema)
    return jsonschema.validators.extend(
        base, type_checker=base.TYPE_CHECKER.redefine("integer", _strict_integer))(schema)


def _refuse(constant):
    raise ValueError(f"non-finite number {constant}")


def strict_loads(text):
    return json.loads(text, parse_constant=_refuse)


def closest(error):
    """For a oneOf/anyOf failure, the branch error that came closest; else the error itself."""
    return jsonschema.exceptions.best_match(error.context) if error.context else error
