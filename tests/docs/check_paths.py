#!/usr/bin/env python3
"""Checks that every repository path named in the repository's text files exists.

The repository must stand alone: a comment, document, script or test that names a file of the
project must name one that a fresh clone has. This script reads every text file (the files git
knows, tracked or new and not ignored; without git, every file under --root except .git and
build*/ folders) and looks for tokens that start with a top-level folder of the repository
(docs/, core/, driver/, cli/, sim/, real/, gui/, models/, tests/, scripts/, bench/, scenarios/,
cmake/, .ci/, and any other top-level folder present) and continue like a path, for example
`docs/validation.md`, `core/exec/activity_graph.h` or `tests/bad_input/`. Each must exist under
--root, as a file or a folder, or as a stem whose file adds an extension (`core/exec/compute_cost`
for compute_cost.h and .cc). A glob (`core/scenario/bind_*.cc`) must match at least one file.

Skipped, because they are not one concrete path: tokens with a placeholder (<...>, {...}, $VAR,
..., or a component such as X, N, NAME, FILE, DATE written as a placeholder), tokens preceded by
another path component (`build/cli/dtsim`, `$ROOT/docs/x`, `../docs/x`), and the entries of
ALLOWED below, each with its reason.

It also fails on:
- the four contributor documents (design, reference, style and environment, each with .md)
  named without their docs/ folder; inside docs/*.md a relative Markdown link to one of them
  (the link target right after "](") is fine;
- a path into the sibling folder that held those documents outside the repository (dot-dot
  slash "shared"), and absolute paths of the development machines (slash "work" slash, slash
  "farm" slash).

Output: one line per problem, `FILE:LINE: message`, then a summary line. Exit status: 0 when
nothing is wrong, 1 when something is, 2 for bad arguments.

    python3 tests/docs/check_paths.py                 # the repository this script lives in
    python3 tests/docs/check_paths.py --root DIR      # another tree (the negative test's fixture)
"""

import argparse
import fnmatch
import glob
import os
import re
import subprocess
import sys

# Top-level folders whose paths are checked even when --root lacks them (a fixture tree).
KNOWN_TOP = ["docs", "core", "driver", "cli", "sim", "real", "gui", "models", "tests", "scripts",
             "bench", "scenarios", "cmake", ".ci"]

# Folders (relative to --root, with a trailing slash) not scanned in the default run: fixtures
# hold broken references on purpose, relative to their own --root.
DEFAULT_EXCLUDE = ["tests/docs/fixtures/"]

# Files that are not text, by extension.
BINARY_EXTENSIONS = {".png", ".jpg", ".jpeg", ".gif", ".ico", ".pdf", ".gz", ".tgz", ".zip",
                     ".xz", ".bz2", ".so", ".a", ".o"}

# Paths that are named but need not exist in a checkout, with the reason. An entry ending in "/"
# accepts every path under it; any other entry accepts that exact path. Keep this short: fix a
# reference rather than list it here.
_MEGATRON = "a Megatron-LM source path (megatron/core/...), cited in docs/models.md with 'M:'"
_HISTORY = "a former location, in docs/design-notes.md's table of what moved where"
ALLOWED = {
    "core/models/": _MEGATRON,
    "core/transformer/": _MEGATRON,
    "core/fusions/": _MEGATRON,
    "core/tensor_parallel/": _MEGATRON,
    "core/distributed/": _MEGATRON,
    "core/optimizer/": _MEGATRON,
    "core/pipeline_parallel/": _MEGATRON,
    "core/extensions/": _MEGATRON,
    "core/fp8_utils.py": _MEGATRON,
    "core/parallel_state.py": _MEGATRON,
    "docs/source/": "Megatron-LM's and NeMo's documentation folders, cited as sources",
    "docs/examples/gemm_profiling/": "NVIDIA/TransformerEngine's GEMM profiling tutorial, cited "
                                     "in docs/evidence/kernel-benchmark-sources.md",
    "docs/performance-summary-archive.md": "NVIDIA-NeMo/Megatron-Bridge's performance table, "
                                           "cited by scenarios/validation/bridge-*.yaml",
    "cli/dtsim": "the program, in a build tree",
    "gui/app/dtsim-gui": "the desktop program, in a build tree",
    "core/base/bad.h": "the upward include of the fixture tree tests/layering/violation, as "
                       "cmake/check_layering.cmake names it (docs/architecture.md)",
    "core/ir/reads_scenario.h": "the include the link graph refuses in the fixture tree "
                                "tests/layering/violation (docs/architecture.md)",
    "core/strategy/reads_schema.h": "the schema include the link graph refuses in the fixture "
                                    "tree tests/layering/violation (docs/architecture.md)",
    "scenarios/cpu.yaml": "written in a scratch folder by tests/core/profile_test.cc",
    "scenarios/profiles/cpu.yaml": "written in a scratch folder by tests/core/profile_test.cc",
    "core/units": _HISTORY,
    "core/scenario.h": _HISTORY,
    "core/schema": _HISTORY,
    "core/program": _HISTORY,
    "core/collective_schedule": _HISTORY,
    "core/activity_graph": _HISTORY,
    "core/metrics": _HISTORY,
    "cli/pipeline": _HISTORY,
}


def allowed(token):
    path = token.rstrip("/")
    return any(path == entry.rstrip("/") or (entry.endswith("/") and path.startswith(entry))
               for entry in ALLOWED)

# Placeholders written as a path component (bench/results/gpu-validation-DATE, docs/X.md).
PLACEHOLDER_COMPONENT = re.compile(
    r"^(?:X|Y|N|NAME|FILE|DIR|DATE|PATH|SCENARIO|OUT|STAGE|TEST|FOO|BAR)(?:[._-].*)?$|"
    r"(?:^|[._-])(?:X|NAME|FILE|DATE|DIR)(?:[._-]|$)")

PATH_CHARS = r"[A-Za-z0-9_./*<>{}$+@%=~-]"

# Contributor documents named without docs/ (the pattern is assembled so that this file does
# not name them itself).
DOC_NAMES = "|".join(["design", "reference", "style", "environment"])
BARE_DOC = re.compile(r"(?<![A-Za-z0-9_./-])(?:" + DOC_NAMES + r")\.md")
LINK_TO_DOC = re.compile(r"\]\((?:" + DOC_NAMES + r")\.md(?:#[^)]*)?\)")
OUTSIDE = [
    (re.compile(r"\.\.[/\\]" + "shared"), "a path outside the repository (" + ".." + "/shared)"),
    (re.compile(r"(?<![A-Za-z0-9_.-])/w[o]rk/"), "an absolute path of a development machine"),
    (re.compile(r"(?<![A-Za-z0-9_.-])/f[a]rm/"), "an absolute path of a development machine"),
]


def list_files(root, use_git):
    """Relative paths of the files to scan, sorted."""
    if use_git:
        try:
            top = subprocess.run(["git", "-C", root, "rev-parse", "--show-toplevel"],
                                 capture_output=True, text=True, check=True).stdout.strip()
            if os.path.realpath(top) == os.path.realpath(root):
                out = subprocess.run(
                    ["git", "-C", root, "ls-files", "-z", "--cached", "--others",
                     "--exclude-standard"],
                    capture_output=True, check=True).stdout
                names = [n.decode("utf-8", "surrogateescape") for n in out.split(b"\0") if n]
                return sorted({n for n in names if os.path.isfile(os.path.join(root, n))})
        except (OSError, subprocess.CalledProcessError):
            pass
    # Without git: skip .git, build*/ at the top, and the folders the root's .gitignore names
    # (lines such as "build*/", "/out/", ".cache/"; a leading "/" anchors one at the top).
    anywhere, top_only = {".git"}, {"build*"}
    try:
        with open(os.path.join(root, ".gitignore"), encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if line.endswith("/") and not line.startswith(("#", "!")):
                    pattern = line.rstrip("/")
                    if pattern.startswith("/"):
                        top_only.add(pattern[1:])
                    elif "/" not in pattern:
                        anywhere.add(pattern)
    except OSError:
        pass
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        skip = anywhere | top_only if rel_dir == "." else anywhere
        dirnames[:] = sorted(d for d in dirnames
                             if not any(fnmatch.fnmatch(d, pattern) for pattern in skip))
        for name in filenames:
            files.append(os.path.normpath(os.path.join(rel_dir, name)))
    return sorted(files)


def read_text(path):
    """The file's lines, or None for a binary file."""
    if os.path.splitext(path)[1].lower() in BINARY_EXTENSIONS:
        return None
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "replace").split("\n")


def clean(token):
    """The token without the punctuation that ends a sentence or closes a quote."""
    while token and token[-1] in ".,;:!?)]}'\"`>*":
        if token.endswith("*") and len(token) > 1 and token[-2] not in ".,;:!?)]}'\"`":
            break  # a glob such as core/scenario/bind_*
        token = token[:-1]
    return token


def is_placeholder(token):
    if any(c in token for c in "<>{}$") or "..." in token:
        return True
    return any(PLACEHOLDER_COMPONENT.search(part) for part in token.split("/")[1:] if part)


def exists(root, token):
    """Whether the path names something under root (file, folder, stem or glob)."""
    path = os.path.join(root, token.rstrip("/"))
    if "*" in token or "?" in token:
        return bool(glob.glob(path)) or bool(glob.glob(path + ".*"))
    if os.path.exists(path):
        return not token.endswith("/") or os.path.isdir(path)
    # A stem: core/exec/compute_cost for compute_cost.h, compute_cost.cc.
    folder, stem = os.path.split(path)
    if stem and os.path.isdir(folder):
        return any(fnmatch.fnmatch(n, stem + ".*") for n in os.listdir(folder))
    return False


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.normpath(os.path.join(here, "..", "..")),
                        help="the tree to check (default: this repository)")
    parser.add_argument("--no-git", action="store_true",
                        help="walk the tree instead of asking git for its files")
    parser.add_argument("--exclude", action="append", default=None, metavar="DIR/",
                        help="a folder (relative to --root) not to scan; repeatable "
                             f"(default: {' '.join(DEFAULT_EXCLUDE)})")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    if not os.path.isdir(root):
        print(f"error: --root {args.root}: not a folder", file=sys.stderr)
        return 2
    excludes = [e.rstrip("/") + "/" for e in (args.exclude if args.exclude is not None
                                             else DEFAULT_EXCLUDE)]

    files = [f for f in list_files(root, not args.no_git)
             if not any(f.startswith(e) for e in excludes)]
    tops = set(KNOWN_TOP)
    tops.update(f.split("/", 1)[0] for f in files if "/" in f)
    tops.discard("build")
    top_alt = "|".join(re.escape(t) for t in sorted(tops, key=len, reverse=True))
    path_ref = re.compile(r"(?<![A-Za-z0-9_./$@%~-])((?:" + top_alt + r")/" + PATH_CHARS + r"*)")

    problems = []
    checked = 0
    for rel in files:
        lines = read_text(os.path.join(root, rel))
        if lines is None:
            continue
        in_docs = rel.startswith("docs/") and rel.endswith(".md")
        for number, line in enumerate(lines, 1):
            for match in path_ref.finditer(line):
                token = clean(match.group(1))
                if "/" not in token or is_placeholder(token) or allowed(token):
                    continue
                checked += 1
                if not exists(root, token):
                    problems.append(f"{rel}:{number}: {token}: no such file or folder")
            for match in BARE_DOC.finditer(line):
                start = match.start()
                if in_docs and start >= 2 and LINK_TO_DOC.match(line, start - 2):
                    continue
                problems.append(f"{rel}:{number}: {match.group(0)}: name it as docs/"
                                f"{match.group(0)}, the copy in this repository")
            for pattern, what in OUTSIDE:
                for match in pattern.finditer(line):
                    problems.append(f"{rel}:{number}: {match.group(0)}: {what}")

    for problem in problems:
        print(problem)
    print(f"check_paths: {len(files)} files, {checked} path references, "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
