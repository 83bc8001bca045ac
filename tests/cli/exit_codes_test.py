#!/usr/bin/env python3
"""The exit-code table of docs/user-guide.md is the contract: every row's example runs and exits
with the row's code.

The table is the one whose header is `| code | meaning | example |`; each example is the
backquoted command in its third column, run with bash from a scratch folder that links the
repository's top-level entries (so scenarios/... resolves and written files stay out of the tree),
with `build/cli/dtsim` replaced by the binary under test. The test also fails when the table is
missing, has no row for 0, 1 or 2, or a row without an example.
Usage: exit_codes_test.py DTSIM REPO_ROOT
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

DTSIM, ROOT = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
GUIDE = os.path.join(ROOT, "docs", "user-guide.md")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def table_rows():
    """(line, code, meaning, example) for each row of the exit-code table."""
    with open(GUIDE, encoding="utf-8") as f:
        lines = f.read().split("\n")
    rows, inside = [], False
    for number, line in enumerate(lines, 1):
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else None
        if cells == ["code", "meaning", "example"]:
            inside = True
            continue
        if not inside:
            continue
        if cells is None:
            break
        if set(cells[0]) <= set("-"):
            continue
        m = re.fullmatch(r"`(.+)`", cells[2]) if len(cells) == 3 else None
        rows.append((number, cells[0], cells[1], m.group(1) if m else None))
    return rows


def main():
    rows = table_rows()
    check(len(rows) > 0, "docs/user-guide.md has the exit-code table")
    codes = {code for _, code, _, _ in rows}
    check({"0", "1", "2"} <= codes, f"the table has rows for 0, 1 and 2 (has {sorted(codes)})")
    sandbox = tempfile.mkdtemp(prefix=f"dtsim-test-exit-codes-{os.getpid()}-")
    try:
        for entry in os.listdir(ROOT):
            if entry != ".git":
                os.symlink(os.path.join(ROOT, entry), os.path.join(sandbox, entry))
        for number, code, meaning, example in rows:
            where = f"docs/user-guide.md:{number} (exit {code}: {meaning[:60]})"
            if example is None:
                check(False, f"{where}: the row has a backquoted example")
                continue
            script = example.replace("build/cli/dtsim", shlex.quote(DTSIM))
            p = subprocess.run(["bash", "-c", script], cwd=sandbox, capture_output=True,
                               text=True, timeout=300)
            check(str(p.returncode) == code,
                  f"{where}: exits {p.returncode} ({p.stderr.strip()[-200:]})")
    finally:
        shutil.rmtree(sandbox, ignore_errors=True)
    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
