#!/usr/bin/env python3
"""Every input kind at its bound, under a 4 GiB address-space limit: each run must end in exit 0 or in one
"hetsim: ..." line with exit 2, never out of memory (exit 3), a crash or a hang.

    python3 bench/input_bounds.py [--hetsim build/cli/hetsim] [--keep DIR]

Writes the inputs (about 2 GB) into a temporary folder, removed at the end, and prints one row per input: what
it is, the exit code, the seconds and the line printed last. docs/benchmarks.md quotes the figures.
"""

import argparse
import gzip
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CAP = 4 << 30
MIB = 1 << 20


def capped():
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))


def run(hetsim, args, timeout=600):
    start = time.monotonic()
    try:
        done = subprocess.run([hetsim] + args, capture_output=True, text=True, errors="replace",
                              preexec_fn=capped, timeout=timeout)
        code, err = done.returncode, done.stderr
    except subprocess.TimeoutExpired:
        code, err = "timeout", ""
    lines = [line for line in err.splitlines() if line.strip()]
    return code, time.monotonic() - start, lines[-1] if lines else ""


def padded_json(path, size):
    """A valid cluster file of `size` bytes: the data file's cluster and white space after it."""
    text = open(os.path.join(ROOT, "tests/exec/data/cluster4.json")).read()
    with open(path, "w") as out:
        out.write(text)
        out.write(" " * (size - len(text)))


def trace_events(path, events, opener=open):
    """A HetSim trace of `events` compute tasks (what `hetsim run` writes), one per line."""
    with opener(path, "wt") as out:
        out.write('{"displayTimeUnit": "ms", "otherData": {"source": "cpu"}, "traceEvents": [\n')
        line = ('{"name":"fwd s0 r0 t0 mb%d","ph":"X","pid":0,"tid":0,"ts":%d,"dur":1,'
                '"args":{"task_id":%d,"kind":"forward","stream":"compute","start_s":0,"end_s":1e-6}}')
        for i in range(events):
            out.write(line % (i, i, i))
            out.write(",\n" if i + 1 < events else "\n")
        out.write("]}\n")


def gzip_bomb(path, inflated):
    """A gzip of white space that inflates to `inflated` bytes (deflate packs it about 1000:1)."""
    block = b" " * (64 * MIB)
    with gzip.open(path, "wb", compresslevel=9) as out:
        out.write(b'{"traceEvents": [')
        for _ in range(inflated // len(block)):
            out.write(block)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hetsim", default=os.path.join(ROOT, "build/cli/hetsim"))
    parser.add_argument("--keep", help="write the inputs here and keep them")
    options = parser.parse_args()
    folder = options.keep or tempfile.mkdtemp(prefix="hetsim_bounds_")
    os.makedirs(folder, exist_ok=True)
    data = os.path.join(ROOT, "tests/exec/data")
    scenario = ["--cluster", f"{data}/cluster4.json", "--model", f"{data}/model4.json"]
    validate = ["validate", "--plan", f"{data}/dp4.json"] + scenario + ["--trace"]
    cases = []
    try:
        over = os.path.join(folder, "cluster_over.json")
        padded_json(over, 256 * MIB + 1)
        cases.append(("cluster file of 256 MiB + 1 B", ["inspect", "cluster", over]))
        under = os.path.join(folder, "cluster_under.json")
        padded_json(under, 256 * MIB - 1)
        cases.append(("cluster file of 256 MiB - 1 B", ["inspect", "cluster", under]))
        cases.append(("/dev/zero as a cluster", ["inspect", "cluster", "/dev/zero"]))
        sparse = os.path.join(folder, "sparse.json")
        with open(sparse, "wb") as out:
            out.truncate(3 << 30)
        cases.append(("3 GB sparse file as a trace", validate + [sparse]))
        cases.append(("/dev/zero as a trace", validate + ["/dev/zero"]))
        bomb = os.path.join(folder, "bomb.json.gz")
        gzip_bomb(bomb, 9 << 30)
        cases.append((f"gzip of {os.path.getsize(bomb) / MIB:.1f} MiB inflating to 9 GiB", validate + [bomb]))
        # 2.4 M events keep more than 512 MiB; 1 M keep about 230 MiB and are read whole.
        many = os.path.join(folder, "many.json.gz")
        trace_events(many, 2_400_000, lambda p, m: gzip.open(p, m, compresslevel=1))
        cases.append((f"HetSim trace of 2.4 M events ({os.path.getsize(many) / MIB:.0f} MiB gzipped)",
                      ["calibrate", "--trace", many] + scenario + ["--plan", f"{data}/dp4.json", "--out",
                                                                  os.path.join(folder, "cal.json")]))
        fewer = os.path.join(folder, "fewer.json")
        trace_events(fewer, 1_000_000)
        cases.append((f"HetSim trace of 1 M events ({os.path.getsize(fewer) / MIB:.0f} MiB)", validate + [fewer]))
        print(f"| input | exit | seconds | last line |\n|---|---|---|---|")
        failed = 0
        for what, args in cases:
            code, seconds, last = run(options.hetsim, args)
            ok = code in (0, 1) or (code == 2 and last.startswith("hetsim: "))
            failed += 0 if ok else 1
            print(f"| {what} | {code} | {seconds:.1f} | {last[:160]} |", flush=True)
        return 1 if failed else 0
    finally:
        if not options.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
