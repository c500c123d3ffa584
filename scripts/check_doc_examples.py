#!/usr/bin/env python3
"""Runs the `hetsim` examples of README.md and docs/*.md, and fails when one of them fails.

Conventions the pages follow (and this script relies on):

* Only fenced blocks tagged ```bash are run. Blocks tagged ```text (synopses with placeholders such as FILE,
  NAME or [--opt], and commands that take minutes), ```json, ```sh, ```python or untagged are never run.
* In a ```bash block, every line that starts with `hetsim ` is one example; a line ending in `\\` continues
  on the next. Other lines of the block are not run.
* `hetsim` stands for the program given by --hetsim (default build/cli/hetsim); every example runs from the
  repository root, through bash, so that relative paths such as tests/exec/data/cluster4.json resolve.
* Outputs go under $TMP: the script sets the environment variable TMP to a fresh, empty directory for each
  page, so `--out $TMP/best.json` expands there, and the examples of one page run in order and may read what
  an earlier one of the same page wrote (search --best, then export --plan). Nothing is written elsewhere.
* Every example must take seconds: each runs with a timeout (--timeout, default 300 s). A command that takes
  minutes goes in a ```text block with a note saying so.

Exit status: 0 when every example exits 0; 1 when one does not (each failure names the file, the line and
the command, with the end of its output); 2 when the program or a page is missing.

  python3 scripts/check_doc_examples.py [--hetsim PATH] [--timeout S] [--list] [--keep] [FILE ...]
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^\s`]*)")


def examples(path):
    """(line number, command) for every `hetsim ` line of the page's ```bash blocks, continuations joined."""
    out = []
    fence = None  # the fence characters of the open block
    runnable = False
    pending = None  # (first line number, text so far) of a command continued with a backslash
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        stripped = line.strip()
        if fence is None:
            m = FENCE.match(line)
            if m:
                fence, runnable = m.group(2), m.group(3).lower() == "bash"
            continue
        if stripped.startswith(fence) and stripped.strip(fence[0]) == "":
            if pending:
                out.append(pending)
                pending = None
            fence = None
            continue
        if not runnable:
            continue
        if pending:
            text = pending[1] + " " + stripped
            pending = (pending[0], text)
        elif stripped.startswith("hetsim ") or stripped == "hetsim":
            pending = (number, stripped)
        else:
            continue
        if pending[1].endswith("\\"):
            pending = (pending[0], pending[1][:-1].rstrip())
        else:
            out.append(pending)
            pending = None
    return out


def display(page):
    """The page's path relative to the repository root, when it is inside it."""
    try:
        return str(page.relative_to(ROOT))
    except ValueError:
        return str(page)


def run(command, hetsim, tmp, timeout):
    """Runs one example through bash; returns (exit status or None on timeout, output, seconds)."""
    env = dict(os.environ, TMP=str(tmp), HETSIM_DOC_PROGRAM=str(hetsim))
    script = 'set -o pipefail\nhetsim() { "$HETSIM_DOC_PROGRAM" "$@"; }\n' + command + "\n"
    start = time.monotonic()
    process = subprocess.Popen(["bash", "-c", script], cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
        status = process.returncode
    except subprocess.TimeoutExpired:
        # The example's own children (hetsim run's ranks) are in its session: end them all.
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        status = None
    return status, output.decode("utf-8", "replace"), time.monotonic() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hetsim", default="build/cli/hetsim",
                        help="the hetsim program (relative to the repository root unless absolute)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds each example may take")
    parser.add_argument("--list", action="store_true", help="print the examples without running them")
    parser.add_argument("--keep", action="store_true", help="keep the $TMP directories and say where")
    parser.add_argument("files", nargs="*", type=Path,
                        help="pages to check (default: README.md and docs/*.md)")
    args = parser.parse_args()

    pages = [p if p.is_absolute() else ROOT / p for p in args.files] or \
        [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
    missing = [p for p in pages if not p.is_file()]
    if missing:
        print(f"check_doc_examples: no such page: {missing[0]}", file=sys.stderr)
        return 2
    found = [(page, examples(page)) for page in pages]
    total = sum(len(e) for _, e in found)
    if args.list:
        for page, cmds in found:
            for number, command in cmds:
                print(f"{display(page)}:{number}: {command}")
        print(f"{total} examples in {len(pages)} pages")
        return 0

    hetsim = Path(args.hetsim)
    hetsim = hetsim if hetsim.is_absolute() else ROOT / hetsim
    if not (hetsim.is_file() and os.access(hetsim, os.X_OK)):
        print(f"check_doc_examples: {hetsim} is not an executable program (build it, or give --hetsim)",
              file=sys.stderr)
        return 2

    scratch = Path(tempfile.mkdtemp(prefix="hetsim-doc-examples-"))
    failures = []
    start = time.monotonic()
    try:
        for page, cmds in found:
            if not cmds:
                continue
            name = display(page)
            tmp = scratch / re.sub(r"[^A-Za-z0-9_.-]", "_", name)
            tmp.mkdir()
            for number, command in cmds:
                status, output, seconds = run(command, hetsim, tmp, args.timeout)
                where = f"{name}:{number}"
                if status == 0:
                    print(f"ok   {seconds:6.1f} s  {where}: {command}", flush=True)
                    continue
                why = f"timed out after {args.timeout:g} s" if status is None else f"exit status {status}"
                print(f"FAIL {seconds:6.1f} s  {where}: {command}  ({why})", flush=True)
                tail = output.rstrip().splitlines()[-40:]
                print("\n".join("       | " + line for line in tail), flush=True)
                failures.append((where, command, why))
    finally:
        if args.keep:
            print(f"check_doc_examples: outputs kept in {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)

    elapsed = time.monotonic() - start
    if failures:
        print(f"\ncheck_doc_examples: {len(failures)} of {total} examples failed ({elapsed:.1f} s):", file=sys.stderr)
        for where, command, why in failures:
            print(f"  {where}: {command}  ({why})", file=sys.stderr)
        return 1
    print(f"check_doc_examples: {total} examples in {sum(1 for _, c in found if c)} pages passed in "
          f"{elapsed:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
