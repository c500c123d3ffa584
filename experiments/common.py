"""Helpers shared by the experiment scripts: build and run `hetsim`, write CSV, plot with gnuplot."""

import csv
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def hetsim_binary():
    """The hetsim binary of $HETSIM, or build/cli/hetsim, built first when missing."""
    binary = os.environ.get("HETSIM") or os.path.join(ROOT, "build", "cli", "hetsim")
    if not os.path.exists(binary):
        subprocess.run([os.path.join(ROOT, "scripts", "build.sh"), "--target", "hetsim"], check=True)
    return binary


def hetsim(*args):
    """Runs hetsim, echoing its command line; its output goes to this script's output."""
    command = [hetsim_binary(), *map(str, args)]
    print("$", " ".join(command[1:]), flush=True)
    subprocess.run(command, check=True)


def search(out_dir, name, *args):
    """`hetsim search ... --out` into out_dir/name.json; returns the ranked candidates."""
    out = os.path.join(out_dir, name + ".json")
    hetsim("search", *args, "--out", out)
    with open(out) as f:
        return json.load(f)


def simulate(out_dir, name, cluster, model, plan, *extra):
    """`hetsim simulate` of a plan (a dict, written to out_dir/name.plan.json); returns the report."""
    plan_file = os.path.join(out_dir, name + ".plan.json")
    report = os.path.join(out_dir, name + ".report.json")
    with open(plan_file, "w") as f:
        json.dump(plan, f, indent=1)
    hetsim("simulate", "--cluster", cluster, "--model", model, "--plan", plan_file, "--report", report, *extra)
    with open(report) as f:
        return json.load(f)


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    print("wrote", path)


def plot_bars(data_file, png, title, ylabel, label_column, value_columns):
    """A clustered bar chart of the CSV's value columns (1-based) against its label column, with gnuplot."""
    if shutil.which("gnuplot") is None:
        print("gnuplot not found: skipping", png, "(./scripts/setup.sh installs it)", file=sys.stderr)
        return
    plots = ", ".join(f"'{data_file}' using {c}:xtic({label_column}) title columnheader({c})" for c in value_columns)
    script = f"""
set terminal pngcairo size 1000,600 noenhanced
set output '{png}'
set datafile separator ','
set title '{title}'
set ylabel '{ylabel}'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set xtics rotate by -30
set key top left
set yrange [0:*]
plot {plots}
"""
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    print("wrote", png)
