#!/usr/bin/env python3
"""Re-record the public validation set's errors after a deliberate model change.

Runs the validation test binary, reads each run's current error from its table and writes it as
recorded_error_pct in scenarios/validation/published.yaml (keeping every other line as it is).
Usage: scripts/record-validation-errors.py [BUILD_DIR]   (default: build)
"""
import pathlib
import re
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parent.parent
build = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else root / "build")
binary = build / "tests" / "validation" / "validation_test"
out = subprocess.run([str(binary), "--gtest_filter=PublicValidationSet.NoErrorGrows*"],
                     capture_output=True, text=True).stdout
errors = {}
for line in out.splitlines():
    m = re.match(r"^(\S+\.yaml)\s.*\s([-+]?\d+\.\d)\s+[-+]?\d+\.\d\s*$", line)
    if m:
        errors[m.group(1)] = float(m.group(2))
if not errors:
    sys.exit("no run table in the output of " + str(binary))
manifest = root / "scenarios" / "validation" / "published.yaml"
lines = manifest.read_text().splitlines(keepends=True)
current = None
changed = 0
for i, line in enumerate(lines):
    m = re.match(r"^\s*- file: (\S+)", line)
    if m:
        current = m.group(1)
    m = re.match(r"^(\s*recorded_error_pct: )(\S+)", line)
    if m and current in errors:
        lines[i] = "%s%+.1f\n" % (m.group(1), errors[current])
        changed += 1
manifest.write_text("".join(lines))
print("recorded %d runs in %s" % (changed, manifest))
