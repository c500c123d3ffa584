#!/usr/bin/env python3
"""Whether HetSim's prediction bands hold: every measured run the experiments compare with (AMP's 21 runs on
V100 and T4, torchtitan's six FSDP2 runs on 64 A100, SC'21 Table 1's rows 1-6 at micro-batches 1 and 2 and Table 2's
175B rows with PTD-P beside them), each experiment run again into its own folder, their measured.csv read back: how
many measured step times fall inside the band `simulate` printed, and how wide the bands are (half their width
over the prediction). Megatron-LM's published TFLOP/s stand for whichever micro-batch it ran, so both of its rows
count. The single-GPU H100 and H200 steps of tests/data are checked by the C++ tests, not here.

Usage: run.py [--out DIR] [--no-figures]
Writes coverage.csv under --out (default out/band_coverage) and the figures into docs/experiments.md (not with
--no-figures)."""

import argparse
import csv
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402

OUT = os.path.join(common.ROOT, "out", "band_coverage")  # --out replaces it
# (experiment, its arguments): each writes measured.csv under its --out.
EXPERIMENTS = [
    ("amp_measured", []),
    ("torchtitan_fsdp", []),
    ("megatron_weak_scaling", ["--rows", "1-6"]),
    ("zero3_scaling", ["--rows", "1-3", "--ptdp"]),
]


def run_experiment(out, name, arguments):
    folder = os.path.join(out, name)
    script = os.path.join(common.ROOT, "experiments", name, "run.py")
    print("$", name, *arguments, flush=True)
    done = subprocess.run([sys.executable, script, "--no-figures", "--out", folder, *arguments],
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{name} failed: {(done.stderr.strip().splitlines() or ['no message'])[-1]}")
    with open(os.path.join(folder, "measured.csv")) as f:
        return [dict(row, experiment=name) for row in csv.DictReader(f)]


def summarise(label, runs):
    inside = sum(1 for r in runs if float(r["band_low_s"]) <= float(r["measured_s"]) <= float(r["band_high_s"]))
    widths = [(float(r["band_high_s"]) - float(r["band_low_s"])) / 2 / float(r["predicted_s"]) for r in runs]
    errors = [abs(float(r["predicted_s"]) / float(r["measured_s"]) - 1) for r in runs]
    return [label, len(runs), f"{inside} ({100 * inside / len(runs):.0f}%)", f"±{100 * statistics.median(widths):.0f}%",
            f"{100 * statistics.mean(errors):.1f}%"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=OUT)
    common.figures_argument(parser)
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    runs = []
    for name, arguments in EXPERIMENTS:
        runs += run_experiment(out, name, arguments)
    common.write_csv(os.path.join(out, "coverage.csv"), ["experiment", *common.MEASURED_HEADER],
                     [[r["experiment"], *(r[k] for k in common.MEASURED_HEADER)] for r in runs])
    rows = [summarise(name, [r for r in runs if r["experiment"] == name]) for name, _ in EXPERIMENTS]
    for gpu in sorted({r["gpu"] for r in runs}):
        rows.append(summarise(f"on {gpu}", [r for r in runs if r["gpu"] == gpu]))
    rows.append(summarise("all", runs))
    header = ["runs", "measured", "inside the band", "median half-width", "mean error"]
    for row in rows:
        print(" | ".join(str(cell) for cell in row))
    if not args.no_figures:
        common.write_figures("band_coverage", common.markdown_table(header, rows))


if __name__ == "__main__":
    main()
