#!/usr/bin/env python3
"""`dtsim collective` prints nccl-tests' table: a parser written for all_reduce_perf reads it.

The parser follows nccl-tests' output format (src/common.cu, Reporter): lines starting with '#'
are comments; a data row is whitespace-separated fields size count type redop root, then time
algbw busbw #wrong out of place and the same in place; '# Avg bus bandwidth : X' closes the run.
dtsim's own columns (algorithm, NCCL's pick, note) come after those 13, so the parser ignores them.
The test also checks the sweep arithmetic (whole elements, no duplicate sizes, the maximum
reached), the nccl-tests flag spellings (-b/-e/-f/-g/-d), and that busbw never falls without a
note saying why.

Usage: collective_table_test.py DTSIM SOURCE_DIR
"""
import os
import re
import subprocess
import sys

FAILURES = []


def check(ok, message):
    if not ok:
        FAILURES.append(message)
        print("FAIL:", message)


def parse_nccl_tests(text):
    """Rows and the average bus bandwidth of an nccl-tests *_perf output."""
    rows, avg = [], None
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("#"):
            m = re.match(r"#\s*Avg bus bandwidth\s*:\s*(\S+)", line)
            if m:
                avg = float(m.group(1))
            continue
        f = line.split()
        if len(f) < 13:
            raise ValueError(f"data row with {len(f)} fields: {line!r}")
        rows.append({
            "size": int(f[0]), "count": int(f[1]), "type": f[2], "redop": f[3], "root": int(f[4]),
            "out": {"time": float(f[5]), "algbw": float(f[6]), "busbw": float(f[7]),
                    "wrong": int(f[8])},
            "in": {"time": float(f[9]), "algbw": float(f[10]), "busbw": float(f[11]),
                   "wrong": int(f[12])},
            "extra": f[13:],
        })
    return rows, avg


def run(dtsim, args):
    p = subprocess.run([dtsim, "collective"] + args, capture_output=True, text=True, timeout=600)
    check(p.returncode == 0, f"dtsim collective {' '.join(args)} exited {p.returncode}: {p.stderr}")
    return p.stdout


def check_table(name, text, ranks, bus_factor, elem, type_name, redop="sum", root=-1):
    rows, avg = parse_nccl_tests(text)
    check(rows, f"{name}: no data rows")
    check(avg is not None, f"{name}: no '# Avg bus bandwidth' footer")
    check("none protocol" not in text, f"{name}: header says 'none protocol'")
    for r in rows:
        check(r["type"] == type_name, f"{name}: type {r['type']}, expected {type_name}")
        check(r["redop"] == redop and r["root"] == root, f"{name}: redop/root {r['redop']} {r['root']}")
        check(r["count"] * elem == r["size"], f"{name}: count {r['count']} x {elem} != {r['size']}")
        check(r["out"] == r["in"], f"{name}: in-place differs from out-of-place")
        check(r["out"]["wrong"] == 0, f"{name}: #wrong {r['out']['wrong']}")
        t = r["out"]["time"]
        if r["size"] > 0 and t > 0:
            algbw = r["size"] / t / 1e3  # bytes / us -> GB/s
            check(abs(algbw - r["out"]["algbw"]) <= 0.006 + 0.002 * algbw,
                  f"{name}: algbw {r['out']['algbw']} != size/time {algbw:.3f}")
            check(abs(r["out"]["algbw"] * bus_factor - r["out"]["busbw"]) <= 0.02 + 1e-3 * algbw,
                  f"{name}: busbw {r['out']['busbw']} != algbw x {bus_factor:.4f}")
        check(len(r["extra"]) >= 3, f"{name}: expected algorithm, nccl and note columns")
    if rows and avg is not None:
        mean = sum(r["out"]["busbw"] for r in rows) / len(rows)
        check(abs(mean - avg) <= 0.01 + 1e-3 * mean, f"{name}: avg busbw {avg} != mean {mean:.3f}")
    # busbw never falls from one size to the next without a note explaining the dip.
    for prev, r in zip(rows, rows[1:]):
        if r["out"]["busbw"] < prev["out"]["busbw"]:
            check(r["extra"][2:] != ["-"] and r["extra"][2] != "-",
                  f"{name}: busbw falls at {r['size']} B with no note")
    return rows


def main():
    dtsim, source = sys.argv[1], sys.argv[2]
    scenario = os.path.join(source, "scenarios", "default.yaml")  # 2 x 8 H100, NDR
    a100 = ["--set", "cluster.gpu=A100-SXM-80GB", "--set", "cluster.nodes=4", "--set",
            "cluster.network.preset=ib-hdr", "--set", "cluster.network.nics_per_node=4"]

    # nccl-tests spellings: plain numbers are bytes, K/M/G are binary; -g is the rank count.
    text = run(dtsim, [scenario, "--op", "all-reduce", "-b", "8", "-e", "128M", "-f", "2",
                       "-g", "16", "-d", "float", "--engine", "analytic"])
    rows = check_table("H100 analytic", text, 16, 2 * 15 / 16, 4, "float")
    check([r["size"] for r in rows] == [8 << i for i in range(25)],
          "H100 analytic: sizes are not 8 B doubling to 128 MiB")
    check(all(r["extra"][0] for r in rows), "H100 analytic: empty algorithm column")

    # nccl-tests' whole flag set: -t 2 threads of -g 8 GPUs are 16 ranks (the same rows as -g
    # 16), -o max fills the redop column, -n -w -c change nothing and each says so on stderr.
    flags = [scenario, "--op", "all-reduce", "-b", "1M", "-e", "16M", "-d", "float", "--engine",
             "analytic"]
    p = subprocess.run([dtsim, "collective"] + flags + ["-t", "2", "-g", "8", "-o", "max", "-n",
                                                        "20", "-w", "5", "-c", "1"],
                       capture_output=True, text=True)
    check(p.returncode == 0, f"nccl-tests flags: exit {p.returncode}: {p.stderr}")
    rows_t = check_table("-t 2 -g 8 -o max", p.stdout, 16, 2 * 15 / 16, 4, "float", redop="max")
    rows_g = check_table("-g 16", run(dtsim, flags + ["-g", "16"]), 16, 2 * 15 / 16, 4, "float")
    check([r["out"]["time"] for r in rows_t] == [r["out"]["time"] for r in rows_g],
          "-t 2 -g 8 -o max times equal -g 16's")
    for flag in ("-n 20", "-w 5", "-c 1"):
        check(f"note: {flag}:" in p.stderr, f"{flag} is noted on stderr")

    # The same sweep on the SimGrid engine, and one node (NVLS at large sizes).
    text = run(dtsim, [scenario, "--op", "all-reduce", "-b", "128K", "-e", "16M", "-g", "8", "-d",
                       "bfloat16"])
    rows = check_table("H100 one node simgrid", text, 8, 2 * 7 / 8, 2, "bfloat16")
    # NVLS pays NCCL's 25 us: never under 25 us, whatever the size.
    for r in rows:
        if r["extra"][0].startswith("nvls"):
            check(r["out"]["time"] >= 25.0, f"NVLS at {r['size']} B takes {r['out']['time']} us")

    # 4 nodes of 8 A100 with 4 HDR NICs: the sweep of the report, analytic and SimGrid.
    for engine in ("analytic", "simgrid"):
        text = run(dtsim, [scenario] + a100 + ["--op", "all-reduce", "--min-bytes", "1MiB",
                                               "--max-bytes", "256MiB", "--engine", engine])
        check_table(f"A100 HDR {engine}", text, 32, 2 * 31 / 32, 4, "float")

    # The textbook tree's busbw dips where its chunk count changes (analytic, 16 nodes): the row
    # says so. (Run as NCCL's, under its protocols and size-corrected caps, it does not dip here.)
    text = run(dtsim, [scenario, "--set", "cluster.nodes=16", "--op", "all-reduce", "--algorithm",
                       "tree", "--protocol", "none", "-b", "64K", "-e", "64M", "-f", "1.5",
                       "--engine", "analytic"])
    rows = check_table("tree dips", text, 128, 2 * 127 / 128, 4, "float")
    check(any("chunk count" in " ".join(r["extra"][2:]) for r in rows),
          "tree dips: expected a dip explained by the tree's chunking")

    # A factor that does not land on whole elements: rounded, no duplicates, maximum reached.
    text = run(dtsim, [scenario, "--op", "all-reduce", "--min-bytes", "8B", "--max-bytes", "100B",
                       "--factor", "1.1", "--dtype", "fp32", "--engine", "analytic"])
    sizes = [r["size"] for r in check_table("factor 1.1", text, 16, 2 * 15 / 16, 4, "float")]
    check(sizes == sorted(set(sizes)), f"factor 1.1: sizes repeat or fall: {sizes}")
    check(sizes and sizes[0] == 8 and sizes[-1] == 100, f"factor 1.1: ends {sizes[:1]} {sizes[-1:]}")
    check(all(s % 4 == 0 for s in sizes), f"factor 1.1: sizes not whole fp32 elements: {sizes}")

    # Collectives without a reduction, and a barrier without a size.
    text = run(dtsim, [scenario, "--op", "broadcast", "--bytes", "1MiB", "--engine", "analytic"])
    # Without -d, nccl-tests' default type: float.
    check_table("broadcast", text, 16, 1.0, 4, "float", redop="none", root=0)
    text = run(dtsim, [scenario, "--op", "barrier", "--engine", "analytic"])
    rows, _ = parse_nccl_tests(text)
    check(len(rows) == 1 and rows[0]["size"] == 0 and rows[0]["out"]["time"] > 0,
          "barrier: expected one row of 0 bytes with a time")

    if FAILURES:
        sys.exit(f"FAIL: {len(FAILURES)} problem(s)")
    print("OK: dtsim collective reads as nccl-tests output")


if __name__ == "__main__":
    main()
