#!/usr/bin/env python3
"""Runs every shell command that README.md and docs/*.md show, and checks what they print.

A command is a line in a fenced block opened with ```sh, ```bash or ```shell (a line ending in a
backslash continues on the next). Each runs with bash from a scratch folder that links every
top-level entry of the repository, so relative paths such as scenarios/default.yaml resolve as
from the repository root while files a command writes (r.json, t.json) stay out of the source
tree. `build/cli/dtsim` is replaced by the binary under test (--dtsim), so the build folder may
have any name. Commands of one file run in order in one scratch folder, so a later command may
read what an earlier one wrote.

A command must exit 0 unless a marker says otherwise. Markers are comment lines inside the
block, and apply to the next command:

    # doc-test: skip (why)        not run (it installs packages, needs mpirun, builds the tree, ...)
    # doc-test: exit N            the command is a documented failure and must exit with N
    # doc-test: expect "TEXT"     TEXT must appear in its output (stdout and stderr together);
                                  runs of whitespace count as one space on both sides
    # doc-test: timeout S         allow S seconds instead of --timeout
    # doc-test: output            the next fenced block that is not shell code is this command's
                                  output as the doc quotes it: each of its lines, but for "..."
                                  lines (elisions), must appear in the output in that order
                                  (whitespace runs count as one space), so a figure the doc quotes
                                  that the command no longer prints fails the test

A skip without a reason, an unknown marker, a marker with no command after it in its block, and a
`build/cli/dtsim` command inside a block not marked as shell are failures too, so nothing is
skipped silently. The summary line counts the commands run and skipped.

Exit status: 0 when every command passed, 1 when any failed, 2 for bad arguments.
"""

import argparse
import glob
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SHELL_FENCES = {"sh", "bash", "shell"}
MARKER = re.compile(r"^#\s*doc-test:\s*(?P<verb>[a-z-]+)\s*(?P<arg>.*)$")
DTSIM = re.compile(r"(?<![\w./-])build/cli/dtsim(?![\w./-])")


class Command:
    def __init__(self, path, line, text):
        self.path = path  # relative to the repository root
        self.line = line  # 1-based line of the command's first line
        self.text = text
        self.skip = None  # reason, when skipped
        self.exit_code = 0
        self.expect = []
        self.timeout = None
        self.wants_output = False  # '# doc-test: output'
        self.output = None  # the quoted output's lines, once its block is read
        self.output_line = 0  # where that block starts

    def where(self):
        return f"{self.path}:{self.line}"


def fence_language(line):
    """The language of a fence line ("sh" for ```sh), "" for a bare fence, None if not a fence."""
    stripped = line.strip()
    if not stripped.startswith("```"):
        return None
    return stripped[3:].strip().split(" ")[0].lower()


def parse(path, rel, errors):
    """The commands of one Markdown file; problems with markers go to `errors`."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    commands = []
    in_block = False
    shell = False
    pending = None  # markers waiting for their command: (line, Command template)
    awaiting = None  # the command whose quoted output is the next non-shell block
    quoted = None  # lines of that block while it is read
    i = 0
    while i < len(lines):
        line = lines[i]
        number = i + 1
        language = fence_language(line)
        if language is not None:
            if not in_block:
                in_block, shell = True, language in SHELL_FENCES
                pending = None
                if awaiting is not None and not shell:
                    quoted = []
                    awaiting.output_line = number
                elif awaiting is not None and shell:
                    errors.append(f"{rel}:{awaiting.line}: '# doc-test: output' with no quoted "
                                  "output block before the next shell block")
                    awaiting = None
            else:
                if quoted is not None:
                    awaiting.output = quoted
                    awaiting, quoted = None, None
                if pending is not None:
                    errors.append(f"{rel}:{pending[0]}: a doc-test marker with no command after "
                                  "it in its block")
                in_block, shell, pending = False, False, None
            i += 1
            continue
        if not in_block:
            i += 1
            continue
        stripped = line.strip()
        if quoted is not None:
            quoted.append(line)
            i += 1
            continue
        if not shell:
            if DTSIM.match(stripped) or stripped.startswith("$ build/cli/dtsim"):
                errors.append(f"{rel}:{number}: a dtsim command in a block not marked as shell "
                              "(open the block with ```sh so the doc test runs it, or move it)")
            i += 1
            continue
        if not stripped:
            i += 1
            continue
        if stripped.startswith("#"):
            m = MARKER.match(stripped)
            if m:
                if pending is None:
                    pending = (number, Command(rel, 0, ""))
                apply_marker(pending[1], m.group("verb"), m.group("arg").strip(), rel, number,
                             errors)
            elif "doc-test" in stripped:
                errors.append(f"{rel}:{number}: malformed doc-test marker: {stripped}")
            i += 1
            continue
        # A command, possibly continued over several lines.
        text = line.rstrip()
        start = number
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1] + " " + lines[i].strip()
        command = pending[1] if pending else Command(rel, 0, "")
        command.path, command.line, command.text = rel, start, text.strip()
        commands.append(command)
        if command.wants_output:
            awaiting = command
        pending = None
        i += 1
    if awaiting is not None:
        errors.append(f"{rel}:{awaiting.line}: '# doc-test: output' with no quoted output block "
                      "after it")
    return commands


def apply_marker(command, verb, arg, rel, number, errors):
    where = f"{rel}:{number}"
    if verb == "skip":
        reason = arg.strip("() ")
        if not reason:
            errors.append(f"{where}: '# doc-test: skip' needs a reason, e.g. "
                          "'# doc-test: skip (installs packages)'")
        command.skip = reason or "no reason given"
    elif verb == "exit":
        try:
            command.exit_code = int(arg)
        except ValueError:
            errors.append(f"{where}: '# doc-test: exit' needs an exit status, found '{arg}'")
    elif verb == "expect":
        m = re.fullmatch(r'"(.*)"', arg)
        if not m or not m.group(1).strip():
            errors.append(f"{where}: '# doc-test: expect' needs quoted text, found '{arg}'")
        else:
            command.expect.append(m.group(1))
    elif verb == "output":
        command.wants_output = True
    elif verb == "timeout":
        try:
            command.timeout = float(arg)
        except ValueError:
            errors.append(f"{where}: '# doc-test: timeout' needs seconds, found '{arg}'")
    else:
        errors.append(f"{where}: unknown doc-test marker '{verb}' "
                      "(known: skip, exit, expect, timeout, output)")


def squash(text):
    return " ".join(text.split())


def quoted_output_problems(command, text):
    """The quoted lines the output lacks, in order: each must match a later output line."""
    actual = [squash(l) for l in text.split("\n")]
    problems = []
    at = 0
    for offset, line in enumerate(command.output):
        want = squash(line)
        if not want or want == "...":
            continue
        found = next((k for k in range(at, len(actual)) if actual[k] == want), None)
        if found is None:
            near = next((a for a in actual if a.split(" ")[:2] == want.split(" ")[:2] and a), None)
            problems.append(f"{command.path}:{command.output_line + 1 + offset}: the quoted "
                            f'output line "{want}" is not in the output'
                            + (f' (it prints "{near}")' if near else ""))
        else:
            at = found + 1
    return problems


def make_sandbox(root):
    # A scratch folder of this run's own (tests/support/scratch_dir.h); the caller removes it.
    sandbox = tempfile.mkdtemp(prefix=f"dtsim-test-doc-commands-{os.getpid()}-")
    for entry in os.listdir(root):
        if entry == ".git":
            continue
        os.symlink(os.path.join(root, entry), os.path.join(sandbox, entry))
    return sandbox


def run(command, dtsim, sandbox, default_timeout):
    """(passed, seconds, message)."""
    script = DTSIM.sub(lambda _: shlex.quote(dtsim), command.text)
    timeout = command.timeout or default_timeout
    start = time.monotonic()
    proc = subprocess.Popen(["bash", "-o", "pipefail", "-c", script], cwd=sandbox,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return False, time.monotonic() - start, (
            f"timed out after {timeout:g} s (mark a slow command '# doc-test: timeout S' or "
            "'# doc-test: skip (why)', or show a faster form such as --engine analytic)")
    seconds = time.monotonic() - start
    text = output.decode("utf-8", errors="replace")
    problems = []
    if proc.returncode != command.exit_code:
        problems.append(f"exit status {proc.returncode}, the doc expects {command.exit_code}"
                        + (" (mark a documented failure '# doc-test: exit N')"
                           if command.exit_code == 0 else ""))
        if proc.returncode == 127:
            problems.append("a program was not found; write dtsim as build/cli/dtsim, which the "
                            "test maps to the built binary")
    squashed = squash(text)
    for want in command.expect:
        if squash(want) not in squashed:
            problems.append(f'output lacks the text the doc expects: "{want}"')
    if command.output is not None:
        problems += quoted_output_problems(command, text)
    if not problems:
        return True, seconds, ""
    tail = "\n".join("      | " + l for l in text.rstrip("\n").split("\n")[-25:])
    return False, seconds, "; ".join(problems) + ("\n    output (last lines):\n" + tail
                                                  if text.strip() else "\n    (no output)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", required=True, help="repository root")
    parser.add_argument("--dtsim", required=True, help="the dtsim binary under test")
    parser.add_argument("--timeout", type=float, default=30, help="seconds per command")
    parser.add_argument("files", nargs="*",
                        help="Markdown files relative to --root (default: README.md docs/*.md)")
    args = parser.parse_args()

    root = os.path.abspath(args.root)
    dtsim = os.path.abspath(args.dtsim)
    if not os.access(dtsim, os.X_OK):
        print(f"error: --dtsim {dtsim} is not an executable", file=sys.stderr)
        return 2
    files = args.files or (["README.md"] + sorted(
        os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "docs", "*.md"))))

    errors = []
    failures = []
    ran = skipped = 0
    start = time.monotonic()
    for rel in files:
        path = os.path.join(root, rel)
        if not os.path.isfile(path):
            errors.append(f"{rel}: no such file")
            continue
        commands = parse(path, rel, errors)
        if not commands:
            continue
        sandbox = make_sandbox(root)
        try:
            for command in commands:
                if command.skip is not None:
                    skipped += 1
                    print(f"skip {command.where()}: {command.text}  ({command.skip})")
                    continue
                ran += 1
                passed, seconds, message = run(command, dtsim, sandbox, args.timeout)
                print(f"{'ok  ' if passed else 'FAIL'} {command.where()}: {command.text}"
                      f"  [{seconds:.1f} s]", flush=True)
                if not passed:
                    failures.append(f"{command.where()}: {command.text}\n    {message}")
        finally:
            shutil.rmtree(sandbox, ignore_errors=True)

    print(f"\ndoc commands: {ran} run, {skipped} skipped (each skip is marked in its doc), "
          f"{len(failures)} failed, {len(errors)} marker problems, "
          f"{time.monotonic() - start:.1f} s")
    for e in errors:
        print(f"error: {e}")
    for f in failures:
        print(f"error: {f}")
    if ran == 0 and not errors:
        print("error: no commands found; is --root the repository root?")
        return 1
    return 1 if failures or errors else 0


if __name__ == "__main__":
    sys.exit(main())
