#!/usr/bin/env python3
"""Checks that each stage asks about the network's topology in at most one place.

The questions a network answers live in core/hardware/network_topology.h, one implementation per
topology; everywhere else a test of the Topology enum (Topology::kTorus, or Cluster's is_torus(),
is_dragonfly(), is_rail_only()) is a place a new topology would have to touch. This script counts,
per stage, the functions whose code makes such a test, and fails when a stage has more than one.

Not counted: core/hardware's Cluster (cluster.h, cluster.cc: the predicates themselves and the
groups they compute), its enum and name table (cluster_config.h) and the implementations
(network_*.cc, which are the topologies); naming a value as text (to_string(Topology::k...), a
schema default); and the comment in core/base/enum_table.h that shows the table's syntax.

    python3 tests/layering/check_topology.py --root .

Output: each function that tests the enum, by stage, then a summary. Exit status: 0 when every
stage has at most one, 1 otherwise, 2 for bad arguments.
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_sizes import STAGES, blank, sources  # noqa: E402

EXEMPT = re.compile(r"^core/hardware/(cluster\.(h|cc)|cluster_config\.h|network_\w+\.(h|cc))$")
TEST = re.compile(r"Topology::k\w+|\bis_torus\(\)|\bis_dragonfly\(\)|\bis_rail_only\(\)")
NAMED = re.compile(r"to_string\(Topology::k\w+\)")


def stage_of(rel):
    for stage in ["core/base", "core/reliability", "core/hardware", "core/config",
                  "core/scenario", "core/ir", "core/strategy", "core/collectives", "core/exec",
                  "core/report", "gui/plot", "gui/views", "gui/app"] + STAGES:
        if rel == stage or rel.startswith(stage + "/"):
            return stage
    return rel.split("/")[0]


def enclosing(text, pos):
    """The name of the function around pos in blanked text (or the file scope)."""
    depth_stack, last, name = [], 0, None
    for m in re.finditer(r"[{};]", text[:pos]):
        c = m.group()
        if c == "{":
            head = text[last:m.start()]
            fn = re.search(r"([~\w:]+)\s*\([^()]*(\([^()]*\)[^()]*)*\)\s*(const)?\s*(override)?"
                           r"\s*(->\s*[\w:<>]+)?\s*$", head.strip())
            depth_stack.append(fn.group(1) if fn and not re.search(r"\b(if|for|while|switch)\b",
                                                                    head.strip()[:12]) else None)
        elif c == "}":
            if depth_stack:
                depth_stack.pop()
        last = m.end()
    names = [n for n in depth_stack if n]
    return names[0] if names else "(file scope)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    ap.add_argument("--dirs", nargs="+", default=STAGES)
    a = ap.parse_args()
    if not os.path.isdir(a.root):
        print(f"check_topology: --root {a.root} is not a folder", file=sys.stderr)
        return 2
    places = {}
    for rel, src in sources(a.root, a.dirs):
        if EXEMPT.match(rel):
            continue
        text = NAMED.sub("", blank(src))
        for m in TEST.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            key = (stage_of(rel), rel, enclosing(text, m.start()))
            places.setdefault(key, line)
    by_stage = {}
    for (stage, rel, fn), line in sorted(places.items()):
        by_stage.setdefault(stage, []).append(f"{rel}:{line}: {fn}")
    bad = 0
    for stage, where in by_stage.items():
        verdict = "ok" if len(where) <= 1 else "more than one place"
        print(f"{stage}: {len(where)} place(s), {verdict}")
        for w in where:
            print(f"  {w}")
        bad += len(where) > 1
    print(f"check_topology: {len(by_stage)} stage(s) test the topology; {bad} in more than one "
          "place")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
