#!/usr/bin/env python3
"""Checks that the tests leave nothing behind in the system temp folder.

    temp_leftovers.py snapshot FILE   writes the temp folder's watched entries to FILE
    temp_leftovers.py check FILE      fails, naming them, on watched entries new since FILE

ctest runs the two modes as the tests temp_snapshot, before every other test, and
temp_leftovers, after every other test (the fixture temp_folder, tests/CMakeLists.txt). The rule
they check is in tests/support/scratch_dir.h: a test writes only into a scratch folder of its own
and removes it.

The temp folder is Python's tempfile.gettempdir() in the environment ctest gives the tests (TMPDIR
when set, else /tmp, as for std::filesystem::temp_directory_path and Qt). Watched entries: names
that start with "dtsim" (in any case), names holding ".dtsim-" (the temporaries of dtsim's output
files), and the fixed names that tests once wrote there (FIXED_NAMES).

An entry is left behind when it is not in the snapshot, is not older than the snapshot file, and is
still there after a grace period (GRACE_S, for processes that end just after their test). Two
kinds are skipped with a note, so that two ctest runs at once (two clones) both pass: a scratch
folder dtsim-test-NAME-PID-XXXXXX whose process PID still runs, and, while another ctest runs,
entries that do not name their process.

Exit status: 0 when nothing was left behind, 1 when something was, 2 for bad arguments or a
missing snapshot.
"""
import json
import os
import re
import sys
import tempfile
import time

# Names that tests wrote straight into the temp folder before they had scratch folders.
FIXED_NAMES = {
    "a.csv", "b.jsonl", "m.csv", "m2.csv", "other.csv", "missing.csv",  # driver sweep_results_test
    "foreign.csv", "foreign.jsonl", "rows.csv", "rows.jsonl", "cut.csv", "cut.jsonl",
    "grid.yaml",
    "scaling.svg", "scaling.png",  # analysis plot_test
    "fuzz_case.yaml", "fuzz_crashes",  # tests/fuzz/mutate_scenarios.py
}
FIXED_PATTERNS = [re.compile(r"^shared_cluster_\d+$")]  # sim shared_cluster_test

# A scratch folder that names its process: dtsim-test-NAME-PID-XXXXXX (tests/support/scratch_dir.h).
OWNED = re.compile(r"^dtsim-test-.+-(\d+)-[A-Za-z0-9_]+$")

GRACE_S = float(os.environ.get("DTSIM_TEMP_GRACE_S", "10"))


def watched(name):
    return (name.lower().startswith("dtsim") or ".dtsim-" in name.lower() or name in FIXED_NAMES
            or any(p.match(name) for p in FIXED_PATTERNS))


def watched_entries(folder):
    return sorted(n for n in os.listdir(folder) if watched(n))


def running(pid):
    """Whether process `pid` exists and has not ended (a zombie has)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def parent_of(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def other_ctest_runs():
    """Pids of ctest processes other than the one running this script (Linux /proc only)."""
    mine = set()
    pid = os.getpid()
    while pid > 1 and pid not in mine:
        mine.add(pid)
        pid = parent_of(pid)
    others = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return others
    for entry in entries:
        if not entry.isdigit() or int(entry) in mine:
            continue
        try:
            with open(f"/proc/{entry}/comm") as f:
                if f.read().strip() == "ctest":
                    others.append(int(entry))
        except OSError:
            pass
    return others


def describe(path):
    try:
        st = os.lstat(path)
    except OSError:
        return "(gone)"
    kind = "folder" if os.path.isdir(path) and not os.path.islink(path) else "file"
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(st.st_mtime))
    if kind == "folder":
        try:
            count = sum(len(files) for _, _, files in os.walk(path))
        except OSError:
            count = "?"
        return f"folder of {count} files, modified {when}"
    return f"file of {st.st_size} bytes, modified {when}"


def snapshot(file):
    folder = tempfile.gettempdir()
    entries = watched_entries(folder)
    os.makedirs(os.path.dirname(os.path.abspath(file)), exist_ok=True)
    with open(file, "w", encoding="utf-8") as f:
        json.dump({"temp_folder": folder, "entries": entries}, f, indent=1)
        f.write("\n")
    print(f"temp folder {folder}: {len(entries)} watched entries before the tests, in {file}")
    return 0


def new_entries(folder, before, since):
    """Watched entries of `folder` not in `before` and not older than `since`."""
    out = []
    for name in watched_entries(folder):
        if name in before:
            continue
        try:
            if os.lstat(os.path.join(folder, name)).st_mtime < since:
                continue
        except FileNotFoundError:
            continue
        out.append(name)
    return out


def check(file):
    try:
        with open(file, encoding="utf-8") as f:
            snap = json.load(f)
        since = os.stat(file).st_mtime
    except (OSError, ValueError) as e:
        print(f"error: no usable snapshot {file} ({e}); the ctest temp_snapshot writes it, and "
              "ctest runs it before temp_leftovers")
        return 2
    folder, before = snap["temp_folder"], set(snap["entries"])
    if os.path.realpath(folder) != os.path.realpath(tempfile.gettempdir()):
        print(f"note: the snapshot lists {folder}, the temp folder is now "
              f"{tempfile.gettempdir()}; checking {folder}")

    # Wait out the grace period while anything new remains (normally nothing: no wait).
    deadline = time.monotonic() + GRACE_S
    left = new_entries(folder, before, since)
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = new_entries(folder, before, since)

    in_use, unowned = [], []
    others = other_ctest_runs() if left else []
    for name in left:
        m = OWNED.match(name)
        if m and running(int(m.group(1))):
            in_use.append(name)
        elif not m and others:
            unowned.append(name)
    for name in in_use:
        print(f"note: skipped {name}: its process {OWNED.match(name).group(1)} still runs "
              "(another ctest run's test?)")
    for name in unowned:
        print(f"note: skipped {name}: another ctest run is in progress (pid "
              f"{', '.join(map(str, others))}), and the name does not say whose it is")
    leftovers = [n for n in left if n not in in_use and n not in unowned]
    if leftovers:
        print(f"error: the tests left {len(leftovers)} entries in the temp folder {folder} "
              "(tests/support/scratch_dir.h: a test writes only into a scratch folder of its "
              "own and removes it):")
        for name in leftovers:
            print(f"  {os.path.join(folder, name)}: {describe(os.path.join(folder, name))}")
        return 1
    print(f"temp folder {folder}: nothing left behind ({len(before)} watched entries were "
          "there before the tests)")
    return 0


def main(argv):
    if len(argv) != 3 or argv[1] not in ("snapshot", "check"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    return snapshot(argv[2]) if argv[1] == "snapshot" else check(argv[2])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
