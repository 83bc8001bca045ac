#!/usr/bin/env python3
"""Checks the passages of the docs that a program of the build tree prints, against what it prints now.

A generated passage sits between two HTML comments:

    <!-- generated: PROGRAM [ARGS...] [; ENV=VALUE ...] -->
    ... table rows, lines of a fenced block, prose lines the program prints ...
    <!-- end generated -->

PROGRAM is a path in the build tree, written as from the repository root with the build folder
named build (build/tests/validation/validation_test; --build names the real one); ENV=VALUE
pairs after a `;` are set for it. Every non-blank line of the passage except fence lines (```) must be a line
of the program's output, in the same order (runs of whitespace count as one space; a Markdown
table's header rule is left out, since no program prints it), so a figure
the docs quote that the program no longer prints fails the check, naming the file and line. Each
program runs once however many passages name it.

Exit status: 0 when every passage matches, 1 when one does not, 2 for bad arguments or markers.
"""

import argparse
import os
import re
import shlex
import subprocess
import sys

SEPARATOR = re.compile(r"^\|[-|: ]+\|$")  # a Markdown table's header rule, which no program prints
BEGIN = re.compile(r"^<!--\s*generated:\s*(?P<spec>.*?)\s*-->\s*$")
END = re.compile(r"^<!--\s*end generated\s*-->\s*$")


def norm(line):
    return " ".join(line.split())


def passages(path, rel):
    """(line of the begin marker, spec, [(line, text)]) for each passage; raises ValueError."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out, current = [], None
    for number, line in enumerate(lines, 1):
        if BEGIN.match(line):
            if current:
                raise ValueError(f"{rel}:{number}: a generated passage opens inside another")
            current = (number, BEGIN.match(line).group("spec"), [])
        elif END.match(line):
            if not current:
                raise ValueError(f"{rel}:{number}: 'end generated' without a passage open")
            out.append(current)
            current = None
        elif (current and line.strip() and not line.strip().startswith("```")
              and not SEPARATOR.match(line.strip())):
            current[2].append((number, line))
    if current:
        raise ValueError(f"{rel}:{current[0]}: the generated passage is never closed")
    return out


def run(spec, build, timeout):
    program_part, _, env_part = spec.partition(";")
    argv = shlex.split(program_part)
    if not argv:
        raise ValueError("no program named")
    program = argv[0][len("build/"):] if argv[0].startswith("build/") else argv[0]
    argv[0] = os.path.join(build, program)
    env = dict(os.environ)
    for pair in shlex.split(env_part):
        key, eq, value = pair.partition("=")
        if not eq:
            raise ValueError(f"'{pair}' is not ENV=VALUE")
        env[key] = value
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    return [norm(l) for l in (proc.stdout + proc.stderr).split("\n")]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", required=True, help="repository root")
    parser.add_argument("--build", required=True, help="build tree the programs are under")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per program")
    parser.add_argument("files", nargs="*", help="Markdown files relative to --root "
                        "(default: README.md docs/*.md)")
    args = parser.parse_args()
    files = args.files or ["README.md"] + sorted(
        os.path.join("docs", f) for f in os.listdir(os.path.join(args.root, "docs"))
        if f.endswith(".md"))
    outputs, failures, checked = {}, 0, 0
    for rel in files:
        try:
            found = passages(os.path.join(args.root, rel), rel)
        except (OSError, ValueError) as e:
            print(f"error: {e}")
            return 2
        for begin, spec, lines in found:
            if spec not in outputs:
                try:
                    outputs[spec] = run(spec, args.build, args.timeout)
                except (OSError, ValueError, subprocess.TimeoutExpired) as e:
                    print(f"error: {rel}:{begin}: cannot run '{spec}': {e}")
                    return 2
            printed = outputs[spec]
            at = 0
            for number, text in lines:
                want = norm(text)
                try:
                    at = printed.index(want, at) + 1
                except ValueError:
                    failures += 1
                    why = "not printed" if want not in printed else "printed, but out of order"
                    print(f"FAIL {rel}:{number}: {why} by '{spec}': {text.strip()}")
            checked += 1
    print(f"generated passages: {checked} checked, {failures} line(s) differ from what their "
          f"programs print now")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
