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
    """A clustered bar chart of the CSV's value columns (1-based) against its label column, with gnuplot; the
    legend outside the plot area, so it never covers a bar. `ylabel` names the quantity and its unit."""
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
set key outside right top
set yrange [0:*]
plot {plots}
"""
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    print("wrote", png)


def _cpu_counters():
    """(busy, steal, total) CPU time of the whole machine so far, in clock ticks, from /proc/stat's "cpu" line
    (busy is user + nice + system + irq + softirq + steal; total adds idle and iowait)."""
    with open("/proc/stat") as f:
        user, nice, system, idle, iowait, irq, softirq, steal = map(int, f.readline().split()[1:9])
    busy = user + nice + system + irq + softirq + steal
    return busy, steal, busy + idle + iowait


def core_speed_probe():
    """Seconds a fixed pure-Python loop takes, best of five: how fast the core runs right now. On CI's virtual
    machines the core has slow spells that last seconds to minutes and read as 0% steal: the loop then takes
    1.6-1.9 times its usual 5.5 ms, and a cpu-executor run in one is 20-45% slower throughout."""
    import time
    best = float("inf")
    for _ in range(5):
        start, total = time.perf_counter(), 0
        for i in range(100000):
            total += i * i
        best = min(best, time.perf_counter() - start)
    return best


class Disturbance:
    """Whether the machine left a timed run alone, by the rule of tests/exec/emulated_network_test.sh: other work
    used less than 20% of the CPUs in the half second before the run, and the hypervisor stole less than 15% of
    the CPU time during it. Quiet runs see 0-10% steal; spells that slowed runs by 10-70% stole 30-65%.
    A slow spell the counters do not see shows in core_speed_probe, timed before and after the run: `probe_s` is
    the slower of the two, for the caller to compare with the fastest it saw (quiet_core).

        disturbance = Disturbance.before_run()
        ... the timed run ...
        quiet, summary = disturbance.after_run()"""

    def __init__(self, background_pct, counters, probe_before_s):
        self.background_pct, self.counters, self.probe_s = background_pct, counters, probe_before_s

    @classmethod
    def before_run(cls):
        import time
        busy0, _, total0 = _cpu_counters()
        time.sleep(0.5)
        busy1, _, total1 = _cpu_counters()
        probe = core_speed_probe()
        return cls(100 * (busy1 - busy0) / max(1, total1 - total0), _cpu_counters(), probe)

    def after_run(self):
        _, steal1, total1 = _cpu_counters()
        self.probe_s = max(self.probe_s, core_speed_probe())
        steal_pct = 100 * (steal1 - self.counters[1]) / max(1, total1 - self.counters[2])
        quiet = self.background_pct < 20 and steal_pct < 15
        return quiet, (f"other work {self.background_pct:.0f}%, steal {steal_pct:.0f}%, "
                       f"core probe {self.probe_s * 1e3:.1f} ms")


QUIET_CORE = 1.15  # the fast spells' probes spread by 10%; the slow ones' are 60% up


def quiet_core(probe_s, fastest_probe_s):
    """Whether a run's core probe (Disturbance.probe_s) shows the core at its usual speed: at most QUIET_CORE
    times the fastest probe of the same experiment."""
    return probe_s <= QUIET_CORE * fastest_probe_s
