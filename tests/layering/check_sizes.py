#!/usr/bin/env python3
"""Checks the size of the code: no source file over --max-file-lines (800) and no function over
--max-function-lines (150), outside the data tables listed in TABLES below.

    python3 tests/layering/check_sizes.py --root .            # the stages' sources
    python3 tests/layering/check_sizes.py --root DIR --dirs . # any tree

A function is a brace block at namespace or class scope whose head (the text since the previous
';', '{' or '}') has a parameter list; its length counts every line from the one that opens its
body to the one that closes it. Comments, string literals and raw strings are blanked first, so
braces inside them do not count. Lambdas and local classes count inside their function.

Output: one line per problem, `FILE:LINE: message`, then a summary. Exit status: 0 when nothing
is too long, 1 when something is, 2 for bad arguments.
"""
import argparse
import os
import re
import sys

STAGES = ["core", "models", "sim", "real", "driver", "cli", "gui"]
# Data tables: declarations of rows, one after another, which would not read better split.
TABLES = {
    ("core/scenario/scenario_schema.cc", "build_schema"): "the scenario schema: one entry per key",
    ("core/hardware/catalog.cc", "make_gpu_catalog"): "the GPU catalog: one row per GPU, cited",
    ("core/hardware/catalog.cc", "make_fabric_catalog"): "the fabric catalog: one row per fabric",
}
TABLE_FILES = {"core/hardware/catalog.cc": "the hardware catalogs: rows with their sources"}


def blank(src):
    """The source with comments and literals replaced by blanks, newlines kept."""
    out, i, n = [], 0, len(src)
    while i < n:
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
            continue
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * src.count("\n", i, j))
            i = j
            continue
        m = re.match(r'R"([^(\s]*)\(', src[i:i + 20]) if src[i] == "R" else None
        if m and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            end = ")" + m.group(1) + '"'
            j = src.find(end, i)
            j = n if j < 0 else j + len(end)
            out.append('""' + "\n" * src.count("\n", i, j))
            i = j
            continue
        c = src[i]
        if c == '"' or (c == "'" and not (i > 0 and (src[i - 1].isalnum()))):
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            out.append('""')
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def sources(root, dirs):
    """(path relative to root, text) of every C++ source under the dirs, in a stable order."""
    for d in dirs:
        for folder, subdirs, names in os.walk(os.path.join(root, d)):
            subdirs.sort()
            for name in sorted(names):
                if not name.endswith((".cc", ".h", ".cpp", ".hpp", ".cu")):
                    continue
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    yield os.path.relpath(path, root).replace(os.sep, "/"), f.read()


def functions(text):
    """(name, first line, lines) of each function in blanked source text."""
    found, stack, last, line = [], [], 0, 1
    for i, c in enumerate(text):
        if c == "\n":
            line += 1
        elif c == "{":
            head = text[last:i]
            at_scope = all(kind in ("namespace", "type") for kind, _, _ in stack)
            if re.search(r"\bnamespace\b", head):
                kind = "namespace"
            elif re.search(r"\b(class|struct|enum|union)\b", head) and "(" not in head:
                kind = "type"
            elif at_scope and ")" in head and not head.rstrip().endswith("="):
                kind = "function"
            else:
                kind = "block"
            name = ""
            if kind == "function":
                m = re.search(r"([~\w:]+)\s*\(", head)
                name = m.group(1).split("::")[-1] if m else "?"
            stack.append((kind, line, name))
            last = i + 1
        elif c == "}":
            if stack:
                kind, start, name = stack.pop()
                if kind == "function":
                    found.append((name, start, line - start + 1))
            last = i + 1
        elif c == ";":
            last = i + 1
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    ap.add_argument("--dirs", nargs="+", default=STAGES)
    ap.add_argument("--max-file-lines", type=int, default=800)
    ap.add_argument("--max-function-lines", type=int, default=150)
    a = ap.parse_args()
    if not os.path.isdir(a.root):
        print(f"check_sizes: --root {a.root} is not a folder", file=sys.stderr)
        return 2
    problems, files = [], 0
    for rel, src in sources(a.root, a.dirs):
        files += 1
        lines = src.count("\n")
        if lines > a.max_file_lines and rel not in TABLE_FILES:
            problems.append(f"{rel}:1: {lines} lines, more than {a.max_file_lines}: "
                            "split it by concern")
        for fn, start, length in functions(blank(src)):
            if length > a.max_function_lines and (rel, fn) not in TABLES:
                problems.append(f"{rel}:{start}: function {fn} is {length} lines, more "
                                f"than {a.max_function_lines}: split it")
    for p in problems:
        print(p)
    print(f"check_sizes: {files} files read, {len(problems)} too long")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
