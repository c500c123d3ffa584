"""Helpers shared by the experiment scripts: build and run `hetsim`, write CSV, plot with gnuplot, and write the
figures of a run into its block of docs/experiments.md."""

import csv
import datetime
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "experiments.md")
STARTED = time.monotonic()  # when the experiment started (this module is imported first thing)


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


MEASURED_HEADER = ["run", "gpu", "measured_s", "predicted_s", "band_low_s", "band_high_s"]


def band_of(report_file):
    """(low, high) seconds of a report's iteration_time_s_band."""
    with open(report_file) as f:
        low, high = json.load(f)["iteration_time_s_band"]
    return low, high


def write_measured(out_dir, rows):
    """measured.csv under out_dir: per measured run, its step time as measured (or as the published throughput
    implies), HetSim's and its band; experiments/band_coverage reads it from each experiment."""
    write_csv(os.path.join(out_dir, "measured.csv"), MEASURED_HEADER,
              [[r[0], r[1], f"{r[2]:.6g}", f"{r[3]:.6g}", f"{r[4]:.6g}", f"{r[5]:.6g}"] for r in rows])


def write_json(out_dir, name, content):
    """out_dir/name holding `content` as JSON (an experiment's generated cluster, model or plan file); its path."""
    path = os.path.join(out_dir, name)
    with open(path, "w") as f:
        json.dump(content, f, indent=1)
    return path


def error_summary(errors):
    """'Mean error +x%, from +a% to +b%.' over relative errors (predicted / published - 1)."""
    return (f"Mean error {signed_pct(100 * sum(errors) / len(errors))}, from {signed_pct(100 * min(errors))} to "
            f"{signed_pct(100 * max(errors))}.")


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


# The figures of an experiment in docs/experiments.md sit between these two lines, which the experiment's run
# script writes (write_figures) and scripts/check_doc_figures.py checks; the prose around them is written by hand.
FIGURES_START = re.compile(r"^<!-- figures: (?P<name>[A-Za-z0-9_]+) "
                           r"\(written by (?P<script>experiments/\S+); do not edit\) -->$")
FIGURES_END = re.compile(r"^<!-- end figures: (?P<name>[A-Za-z0-9_]+) -->$")


def figures_start(name, script):
    return f"<!-- figures: {name} (written by {script}; do not edit) -->"


def figures_end(name):
    return f"<!-- end figures: {name} -->"


def collective_algorithm_argument(parser):
    """Adds --collective-algorithm, the plans' collective_algorithm (ring unless asked)."""
    parser.add_argument("--collective-algorithm", default="ring",
                        help="the plans' collective_algorithm (ring, tree, hierarchical or nccl)")


def figures_argument(parser):
    """Adds --no-figures, for runs whose figures are not the documented ones (the ctests' subsets)."""
    parser.add_argument("--no-figures", action="store_true",
                        help="leave this experiment's figures in docs/experiments.md as they are")


def machine():
    """The machine, in words: the CPU's model name, "virtual machine" under a hypervisor, the cores."""
    model, virtual = "unknown CPU", False
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and model == "unknown CPU":
                    model = value.strip()
                elif key.strip() == "flags" and "hypervisor" in value.split():
                    virtual = True
    except OSError:
        pass
    cores = os.cpu_count() or 1
    return f"{model} {'virtual machine' if virtual else 'machine'} ({cores} core{'s' if cores != 1 else ''})"


def load_average():
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


LOAD_AT_START = load_average()


def run_command(argv=None):
    """The command that ran, as a reader would type it from the repository root: the script's path relative to
    the root and its arguments, less --out and its folder (where the outputs went, not what was measured)."""
    argv = list(sys.argv if argv is None else argv)
    script = os.path.relpath(os.path.abspath(argv[0]), ROOT) if argv else "?"
    args, skip = [], False
    for arg in argv[1:]:
        if skip:
            skip = False
        elif arg == "--out":
            skip = True
        elif not arg.startswith("--out="):
            args.append(arg)
    return shlex.join([script, *args])


def duration(seconds):
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} minutes"
    return f"{seconds / 3600:.1f} hours"


WIDTH = 113  # the pages' lines


def _wrapped(markdown):
    """The markdown with its lines of prose wrapped at WIDTH; table rows (starting with |) stay whole."""
    import textwrap
    return "\n".join(line if line.startswith("|") else
                     textwrap.fill(line, WIDTH, break_long_words=False, break_on_hyphens=False)
                     for line in markdown.split("\n"))


def write_figures(name, markdown, seconds=None, command=None, load=None, note=None, doc=DOC, script=None):
    """Replaces the figures block of experiment `name` in docs/experiments.md (the lines between its
    `<!-- figures: name ... -->` and `<!-- end figures: name -->`) with `markdown` (a table, a line or two) and a
    line saying when, where, how long and with which command it was measured. `seconds` defaults to the time since
    the experiment started, `command` to this script's command line (run_command), `load` to the load average when
    it started; `note` (e.g. "2 MPI ranks") joins the machine. Exits with a message when the page has no such
    block; does nothing but say so when there is no docs/experiments.md beside the experiments (an installed
    copy)."""
    script = script or os.path.relpath(os.path.abspath(sys.argv[0]), ROOT)
    start, end = figures_start(name, script), figures_end(name)
    if not os.path.exists(doc):
        print(f"no {os.path.relpath(doc, ROOT)} beside the experiments: figures of {name} not written", file=sys.stderr)
        return
    with open(doc, encoding="utf-8") as f:
        lines = f.read().split("\n")
    starts = [i for i, line in enumerate(lines) if line == start]
    ends = [i for i, line in enumerate(lines) if line == end]
    where = os.path.relpath(doc, ROOT)
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        sys.exit(f"{name}: {where} needs exactly one block of this experiment's figures, the lines\n  {start}\n"
                 f"  {end}\n(it has {len(starts)} of the first and {len(ends)} of the second"
                 f"{', the second first' if len(starts) == len(ends) == 1 else ''}): figures not written")
    seconds = time.monotonic() - STARTED if seconds is None else seconds
    load = LOAD_AT_START if load is None else load
    context = [f"load average {load:.1f} at the start"] if load is not None else []
    if note:
        context.insert(0, note)
    machine_text = machine()
    if context:
        machine_text = machine_text[:-1] + ", " + ", ".join(context) + ")"
    measured = (f"Measured {datetime.date.today().isoformat()} on an {machine_text} in {duration(seconds)}: "
                f"`{command or run_command()}`.")
    if machine_text[0].lower() not in "aeiou":
        measured = measured.replace(" on an ", " on a ", 1)
    block = ["", _wrapped(markdown.strip("\n")), "", _wrapped(measured), ""]
    lines[starts[0] + 1:ends[0]] = block
    temporary = doc + ".tmp"
    with open(temporary, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    os.replace(temporary, doc)
    print(f"wrote the figures of {name} into {where}")


def markdown_table(header, rows):
    """A markdown table of string cells."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def thousands(number):
    """An integer with thousands separators: 1,536."""
    return f"{int(number):,}"


def signed_pct(value):
    """+3.1% or −2.2% (a minus sign, not a hyphen)."""
    return f"{value:+.1f}%".replace("-", "\u2212")


def describe_plan(plan):
    """A plan's layout in words: tp 2, pp 8, dp 4, ep 2, micro-batch 1, recompute."""
    def per_replica(value):
        if isinstance(value, list):
            return str(value[0]) if len(set(value)) == 1 else "/".join(map(str, value))
        return str(value)
    parts = [f'tp {plan["tp"]}', f'pp {plan["pp"]}', f'dp {plan["dp"]}']
    if plan.get("cp", 1) > 1:
        parts.append(f'cp {plan["cp"]}')
    if plan.get("ep", 1) > 1:
        parts.append(f'ep {plan["ep"]}')
    if plan.get("virtual_stages", 1) > 1:
        parts.append(f'{plan["virtual_stages"]} virtual stages')
    if plan.get("zero_stage", 0) > 0:
        parts.append(f'ZeRO-{plan["zero_stage"]}')
    parts.append(f'micro-batch {per_replica(plan["micro_batch"])}')
    if plan.get("recompute") == "selective":
        parts.append("selective recompute")
    elif plan.get("recompute"):
        parts.append("recompute")
    return ", ".join(parts)
