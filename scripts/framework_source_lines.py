#!/usr/bin/env python3
"""Copies the framework lines strategies/plan/framework_sources.cpp cites out of the frameworks' own trees, into
tests/data/frameworks/, so that the tests can hold each excerpt against its line without the trees.

Usage: framework_source_lines.py --deepspeed GIT_DIR --megatron GIT_DIR --megatron-deepspeed GIT_DIR
GIT_DIR: a clone of github.com/deepspeedai/DeepSpeed, github.com/NVIDIA/Megatron-LM or
github.com/deepspeedai/Megatron-DeepSpeed holding the pinned tag or commit.
Writes one file per release, a line `PATH:LINE:TEXT` per cited line. The PyTorch lines (pytorch.lines) were
copied by hand from the files GitHub serves at the commits framework_sources.hpp names: no clone of PyTorch is
needed by anything else here."""

import argparse
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RELEASES = {"kDeepSpeedRelease": ("deepspeed", "v0.17.4", "deepspeed_v0.17.4.lines"),
            "kMegatronRelease": ("megatron", "core_v0.13.0", "megatron_core_v0.13.0.lines"),
            # Megatron-DeepSpeed tags no releases: the commit, named by its first eight digits
            "kMegatronDeepSpeedRelease": ("megatron_deepspeed", "4efb479d5317ce9b86096b9d8e3e8030b0b5263b",
                                          "megatron_deepspeed_4efb479d.lines")}


def cited_lines():
    """(release constant, path, line) of every source with a line."""
    with open(os.path.join(ROOT, "strategies", "plan", "framework_sources.cpp")) as f:
        text = f.read()
    pattern = re.compile(r'(kDeepSpeedRelease|kMegatronRelease|kMegatronDeepSpeedRelease),\s*"([^"]+)",\s*(\d+)')
    return sorted({(m.group(1), m.group(2), int(m.group(3))) for m in pattern.finditer(text) if m.group(3) != "0"})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--deepspeed", required=True)
    parser.add_argument("--megatron", required=True)
    parser.add_argument("--megatron-deepspeed", required=True)
    args = parser.parse_args()
    out = {}
    for release, path, line in cited_lines():
        name, tag, filename = RELEASES[release]
        source = subprocess.run(["git", "-C", getattr(args, name), "show", f"{tag}:{path}"], check=True,
                                capture_output=True, text=True).stdout.split("\n")
        out.setdefault(filename, []).append(f"{path}:{line}:{source[line - 1]}")
    for filename, lines in out.items():
        with open(os.path.join(ROOT, "tests", "data", "frameworks", filename), "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
