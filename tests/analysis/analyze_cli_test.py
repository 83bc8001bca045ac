#!/usr/bin/env python3
"""`dtsim analyze` end to end, on results files this test writes itself.

The rows hold real results: `dtsim simulate --engine analytic --json` of scenarios/default.yaml at
1, 2 and 4 nodes (and one configuration marked as failed), wrapped in the results format of
driver/sweep_results.h (JSON Lines, and the same rows as CSV). Checks:
- the happy path: exit 0, strong scaling detected, both fits, the skipped row listed, units;
  --json parses and carries every point; a weak-scaling series is named as such;
- --plot writes an SVG and a PNG of the documented size (960 x 1560 px), or, in a build without
  Qt 6 Charts (second argument "noplot"), is refused with exit 2 and says how to get it;
- exit 2, with a message naming the problem, for: a missing file, a corrupt file, a foreign file,
  an unknown --x key, a non-numeric --x key, too few ok rows, a --plot of another format.

Usage: analyze_cli_test.py DTSIM plot|noplot   (run from anywhere; the repository is found from
this file's location)
"""
import csv
import io
import json
import os
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAILURES = []


def check(ok, message):
    if not ok:
        FAILURES.append(message)
        print("FAIL:", message)


def run(dtsim, args):
    return subprocess.run([dtsim] + args, capture_output=True, text=True, timeout=120, cwd=ROOT)


def simulate(dtsim, overrides):
    args = ["simulate", "scenarios/default.yaml", "--engine", "analytic", "--json"]
    for k, v in overrides:
        args += ["--set", f"{k}={v}"]
    p = run(dtsim, args)
    if p.returncode != 0:
        sys.exit(f"FAIL: dtsim {' '.join(args)} exited {p.returncode}: {p.stderr}")
    return json.loads(p.stdout)


def row(overrides, result=None, status="ok", error=""):
    return {"config": ";".join(f"{k}={v}" for k, v in overrides),
            "overrides": dict(overrides), "status": status,
            "exit_code": 0 if status == "ok" else 2, "wall_s": 0.1, "error": error,
            "result": result}


def write_jsonl(path, rows):
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def flatten(prefix, value, out):
    if isinstance(value, dict) and prefix not in ("time_by_kind_s",):
        for k, v in value.items():
            flatten(f"{prefix}.{k}" if prefix else k, v, out)
    elif isinstance(value, (list, dict)):
        out[prefix] = json.dumps(value)
    elif isinstance(value, bool):
        out[prefix] = "true" if value else "false"
    else:
        out[prefix] = "" if value is None else str(value)


def write_csv(path, rows, varied):
    flat_rows = []
    columns = []
    for r in rows:
        flat = {}
        if r["result"] is not None:
            flatten("", r["result"], flat)
        for k in flat:
            if k not in columns:
                columns.append(k)
        flat_rows.append(flat)
    header = ["config"] + varied + ["status", "exit_code", "wall_s", "error"] + columns
    text = io.StringIO()
    w = csv.writer(text, lineterminator="\n")
    w.writerow(header)
    for r, flat in zip(rows, flat_rows):
        w.writerow([r["config"]] + [r["overrides"].get(k, "") for k in varied] +
                   [r["status"], r["exit_code"], r["wall_s"], r["error"]] +
                   [flat.get(c, "") for c in columns])
    with open(path, "w") as f:
        f.write(text.getvalue())


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return struct.unpack(">II", head[16:24])


def expect_bad_input(dtsim, name, args, *texts):
    p = run(dtsim, ["analyze"] + args)
    check(p.returncode == 2, f"{name}: exit {p.returncode}, expected 2; stderr: {p.stderr}")
    check("Traceback" not in p.stderr and "terminate" not in p.stderr, f"{name}: crashed")
    for t in texts:
        check(t in p.stderr, f"{name}: stderr lacks {t!r}: {p.stderr}")


def main():
    dtsim, plotting = sys.argv[1], sys.argv[2]
    dtsim = os.path.abspath(dtsim)
    # Every file of the test lives in a scratch folder of its own, removed however the test ends
    # (tests/support/scratch_dir.h).
    with tempfile.TemporaryDirectory(prefix=f"dtsim-test-analyze-{os.getpid()}-") as work:
        checks(dtsim, plotting, work)
    if FAILURES:
        sys.exit(f"FAIL: {len(FAILURES)} problem(s)")
    print("OK: dtsim analyze reports, plots and refuses bad input as documented")


def checks(dtsim, plotting, work):
    """Every check, on files in `work`."""
    strong = [row([("cluster.nodes", str(n))], simulate(dtsim, [("cluster.nodes", n)]))
              for n in (1, 2, 4)]
    failed = row([("cluster.nodes", "64")], status="error",
                 error="error: scenarios/default.yaml: training.global_batch_size: not divisible")
    jsonl = os.path.join(work, "strong.jsonl")
    write_jsonl(jsonl, strong + [failed])
    csv_path = os.path.join(work, "strong.csv")
    write_csv(csv_path, strong + [failed], ["cluster.nodes"])

    # The happy path, in both formats.
    for path in (jsonl, csv_path):
        p = run(dtsim, ["analyze", path])
        check(p.returncode == 0, f"analyze {path}: exit {p.returncode}: {p.stderr}")
        for text in ("Scaling: strong", "samples/s", "Amdahl 1967", "Gustafson 1988",
                     "serial fraction f =", "Karp-Flatt", "How to read this",
                     "Skipped rows", "cluster.nodes=64: error, exit 2", "baseline 8 GPUs", "samples/s"):
            check(text in p.stdout, f"analyze {os.path.basename(path)}: report lacks {text!r}")
    p = run(dtsim, ["analyze", jsonl, "--json", "--x", "cluster.nodes"])
    check(p.returncode == 0, f"analyze --json: exit {p.returncode}: {p.stderr}")
    if p.returncode == 0:
        j = json.loads(p.stdout)
        check(j["scaling"] == "strong", f"--json: scaling {j['scaling']}")
        check([pt["x"] for pt in j["points"]] == [1, 2, 4], f"--json: x {j['points']}")
        check(j["points"][0]["speedup"] == 1 and j["points"][0]["efficiency"] == 1,
              "--json: the baseline's speedup and efficiency are 1")
        for pt in j["points"]:
            loss = sum(v for k, v in pt["efficiency_loss"].items() if k != "failures")
            check(abs(loss - (1 - pt["efficiency"])) < 1e-9, f"--json: losses add up: {pt}")
        check(len(j["skipped"]) == 1, "--json: one skipped row")
        low, high = j["amdahl"]["interval"]
        check(low <= j["amdahl"]["serial_fraction"] <= high, "--json: f inside its interval")

    # A results file written by dtsim sweep itself (analytic engine: a fraction of a second).
    swept = os.path.join(work, "swept.csv")
    p = run(dtsim, ["sweep", "scenarios/default.yaml", "--vary", "cluster.nodes=1,2,4",
                    "--engine", "analytic", "-o", swept])
    check(p.returncode == 0, f"dtsim sweep: exit {p.returncode}: {p.stderr}")
    p = run(dtsim, ["analyze", swept, "--json"])
    check(p.returncode == 0, f"analyze of a sweep's file: exit {p.returncode}: {p.stderr}")
    if p.returncode == 0:
        j = json.loads(p.stdout)
        check([pt["gpus"] for pt in j["points"]] == [8, 16, 32],
              f"analyze of a sweep's file: GPUs {[pt['gpus'] for pt in j['points']]}")
        # Strong scaling by data parallelism: the batch of 512 caps it at 512 / 8 = 64x.
        check(j["batch_ceiling"] is not None and j["batch_ceiling"]["scale"] == 64,
              f"analyze of a sweep's file: batch ceiling {j.get('batch_ceiling')}")
        check(j["speedup_limit"] <= 64, f"the limit offered is at most the batch's: {j['speedup_limit']}")
    p = run(dtsim, ["analyze", swept])
    check("batch ceiling 64x" in p.stdout and "the limit is therefore" in p.stdout,
          f"the report names the batch ceiling: {p.stdout[:2000]}")
    # Two keys varied at once: the rows split into one series per micro-batch size (the key
    # that changes among rows of one GPU count), each analysed; --where keeps one; --by a key tied
    # to x leaves series of one row, refused by name; --plot draws one series only.
    grid = os.path.join(work, "grid.jsonl")
    p = run(dtsim, ["sweep", "scenarios/default.yaml", "--vary", "cluster.nodes=1,2,4",
                    "--vary", "training.micro_batch_size=1,2", "--engine", "analytic", "-o", grid])
    check(p.returncode == 0, f"dtsim sweep of a grid: exit {p.returncode}: {p.stderr}")
    p = run(dtsim, ["analyze", grid])
    check(p.returncode == 0 and "2 series along config.gpus, split by training.micro_batch_size"
          in p.stdout and "=== series training.micro_batch_size=2 ===" in p.stdout,
          f"a grid splits into series: {p.returncode} {p.stdout[:600]} {p.stderr}")
    p = run(dtsim, ["analyze", grid, "--json"])
    if p.returncode == 0:
        j = json.loads(p.stdout)
        check(j["by"] == ["training.micro_batch_size"] and len(j["series"]) == 2 and
              all(len(s["analysis"]["points"]) == 3 for s in j["series"]),
              f"--json of a grid: {p.stdout[:600]}")
    else:
        check(False, f"--json of a grid: exit {p.returncode}: {p.stderr}")
    p = run(dtsim, ["analyze", grid, "--where", "training.micro_batch_size=2", "--json"])
    check(p.returncode == 0 and "series" not in json.loads(p.stdout or "{}") and
          len(json.loads(p.stdout)["points"]) == 3,
          f"--where keeps one series: {p.returncode} {p.stderr}")
    expect_bad_input(dtsim, "--by a key tied to x", [grid, "--by", "cluster.nodes"],
                     "series cluster.nodes=1", "at least 3 ok rows")
    expect_bad_input(dtsim, "--where on no key", [grid, "--where", "training.nope=1"],
                     "--where", "no row has the key 'training.nope'")
    expect_bad_input(dtsim, "--where without =", [grid, "--where", "training.micro_batch_size"],
                     "expected KEY=VALUE")
    if plotting == "plot":
        expect_bad_input(dtsim, "--plot of several series",
                         [grid, "--plot", os.path.join(work, "g.svg")], "2 series", "--where")

    # Weak scaling: the global batch grows with the node count.
    weak_rows = [row([("cluster.nodes", str(n)), ("training.global_batch_size", str(512 * n))],
                     simulate(dtsim, [("cluster.nodes", n),
                                      ("training.global_batch_size", 512 * n)]))
                 for n in (1, 2, 4)]
    weak = os.path.join(work, "weak.jsonl")
    write_jsonl(weak, weak_rows)
    p = run(dtsim, ["analyze", weak])
    check(p.returncode == 0 and "Scaling: weak" in p.stdout,
          f"weak scaling not detected: {p.returncode} {p.stdout[:400]} {p.stderr}")

    # Plots.
    svg, png = os.path.join(work, "s.svg"), os.path.join(work, "s.png")
    for out in (svg, png):
        p = run(dtsim, ["analyze", jsonl, "--plot", out])
        if plotting == "plot":
            check(p.returncode == 0, f"--plot {out}: exit {p.returncode}: {p.stderr}")
            check(os.path.exists(out) and os.path.getsize(out) > 1000, f"--plot {out}: no file")
        else:
            check(p.returncode == 2, f"--plot without Qt: exit {p.returncode}")
            check("without Qt 6 Charts" in p.stderr and "qt6-charts-dev" in p.stderr,
                  f"--plot without Qt: message {p.stderr}")
            check(not os.path.exists(out), "--plot without Qt wrote a file")
    if plotting == "plot":
        check(png_size(png) == (960, 1560), f"PNG size {png_size(png)}, expected (960, 1560)")
        with open(svg) as f:
            check("<svg" in f.read(), "the SVG is not SVG")

    # Bad input: exit 2, and the message names the problem.
    corrupt = os.path.join(work, "corrupt.jsonl")
    with open(corrupt, "w") as f:
        f.write(json.dumps(strong[0]) + "\n{not json\n" + json.dumps(strong[1]) + "\n")
    foreign = os.path.join(work, "foreign.csv")
    with open(foreign, "w") as f:
        f.write("name,value\nalpha,1\n")
    two_ok = os.path.join(work, "two.jsonl")
    write_jsonl(two_ok, strong[:2] + [failed])
    expect_bad_input(dtsim, "missing file", [os.path.join(work, "absent.csv")], "absent.csv")
    expect_bad_input(dtsim, "corrupt file", [corrupt], "corrupt.jsonl:2")
    expect_bad_input(dtsim, "foreign file", [foreign], "foreign.csv")
    expect_bad_input(dtsim, "unknown --x", [jsonl, "--x", "cluster.node"],
                     "no row has the key 'cluster.node'", "did you mean 'cluster.nodes'")
    expect_bad_input(dtsim, "non-numeric --x", [jsonl, "--x", "config.precision"],
                     "'bf16', not a number")
    expect_bad_input(dtsim, "too few ok rows", [two_ok], "at least 3 ok rows", "2 ok of 3 rows")
    expect_bad_input(dtsim, "plot format", [jsonl, "--plot", os.path.join(work, "s.pdf")],
                     ".svg or .png" if plotting == "plot" else "without Qt 6 Charts")


if __name__ == "__main__":
    main()
