#!/usr/bin/env python3
"""The cpu executor as the real machine: layer times measured with `hetsim run --executor cpu` against the
cost model's prediction from constants that `hetsim calibrate` fitted to other runs on the same machine.

The model is one GPT block (GPT-2's operators: norms, QKV, attention scores, softmax, dropout, context, output
projection, MLP, residuals) between an embedding and a head over a vocabulary of 64 words, so that a forward
or backward task is that layer. Calibration measures hidden 48, 96, 384 and 768 at micro-batches 1-16; the test
grid is hidden 64-1024 against micro-batches 1-32 (no point shared with calibration). Every run is one device,
fp32 (what the cpu executor computes in), sequence 128. Calibration and test points run in the same rounds on
the same machine, so a machine that is busy throughout moves both alike. Each point runs --repeat times and
keeps its fastest run: one run's memory placement, or a slow spell of a virtual machine, can slow all of a
run's iterations by a fifth, which no model of the kernels should learn. A run counts only when the machine left
it alone (common.Disturbance: other work, steal time, and a core probe before and after within 15% of the
experiment's fastest, for the slow spells steal time does not show); a point with no such run keeps its fastest,
and a miss that rests on it is "inconclusive: machine busy", exit 77, not a failure. A miss with every run it
rests on undisturbed fails.

Usage: run.py [--grid small|full] [--iterations N] [--repeat N] [--budget-s S] [--out DIR] [--max-error PCT]
              [--no-figures]
Writes results.csv under --out (default out/cpu_layer_fidelity), and the figures into docs/experiments.md (not with
--no-figures) when every point kept a run the machine left alone: a busy machine's errors are its own, not the
model's. With --max-error, exits 1 when a task's predicted time is further off than that (the ctest
cpu_layer_fidelity runs the small grid with 15), or 77 when the machine was too busy to tell."""

import argparse
import csv
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402

OUT = os.path.join(common.ROOT, "out", "cpu_layer_fidelity")  # --out replaces it
SEQ, VOCAB = 128, 64
CALIBRATION = [(48, 1), (96, 2), (96, 16), (384, 1), (384, 8), (768, 2)]
GRIDS = {
    # Corners and middle of hidden 64-1024 x micro-batch 1-32, sized for CI's two loaded cores.
    "small": [(64, 1), (64, 32), (256, 4), (1024, 1), (1024, 8)],
    "full": [(h, b) for h in (64, 256, 1024) for b in (1, 4, 32)],
}
CLUSTER = {"name": "one-cpu", "description": "One CPU core as one device (nominal figures; calibration fits them)",
           "gpus": {"cpu": {"memory_gib": 64, "memory_bandwidth_GBps": 10, "peak_tflops_fp16": 0.1,
                            "peak_tflops_fp32": 0.1}},
           "regions": [{"name": "here", "nodes": [{"name": "host", "gpu": "cpu", "devices": 1}]}]}


def inputs(out, hidden, micro_batch):
    """The model and plan of one point; returns their paths."""
    name = f"h{hidden}-mb{micro_batch}"
    model = {"model_type": "gpt2", "n_embd": hidden, "n_head": max(1, hidden // 64), "n_layer": 1,
             "n_positions": SEQ, "vocab_size": VOCAB, "seq_len": SEQ, "fused_gelu": True}
    plan = {"tp": 1, "pp": 1, "dp": 1, "micro_batch": micro_batch, "global_batch": micro_batch, "zero_stage": 0,
            "schedule": "1f1b", "recompute": False, "dtype": "fp32"}
    return common.write_json(out, name + ".model.json", model), common.write_json(out, name + ".plan.json", plan)


def run(binary, *args):
    command = [binary, *map(str, args)]
    print("$", " ".join(command[1:]), flush=True)
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command[1:])} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def compute_tasks(trace_file):
    """{task name: seconds} of a trace's forward and backward tasks."""
    with open(trace_file) as f:
        events = json.load(f)["traceEvents"]
    return {e["name"]: e["dur"] * 1e-6 for e in events
            if e.get("ph") == "X" and e.get("args", {}).get("kind") in ("forward", "backward")}


def task_kinds(trace_file):
    """{task name: forward or backward} of a trace's compute tasks."""
    with open(trace_file) as f:
        events = json.load(f)["traceEvents"]
    return {e["name"]: e["args"]["kind"] for e in events
            if e.get("ph") == "X" and e.get("args", {}).get("kind") in ("forward", "backward")}


def figures(grid, rows, kinds, calibration, worst):
    """The block of docs/experiments.md: the fitted constants and the error of each grid point's forward and
    backward tasks (their summed predicted time against their summed measured time)."""
    with open(calibration) as f:
        kernels = json.load(f).get("kernels", {}).get("cpu", {})
    nominal = CLUSTER["gpus"]["cpu"]["peak_tflops_fp32"]
    totals = {}  # (hidden, micro-batch, kind) -> [measured, predicted]
    for hidden, micro_batch, name, measured, predicted, _ in rows:
        total = totals.setdefault((hidden, micro_batch, kinds[hidden, micro_batch][name]), [0.0, 0.0])
        total[0] += float(measured)
        total[1] += float(predicted)

    def error(hidden, micro_batch, kind):
        measured, predicted = totals[hidden, micro_batch, kind]
        return common.signed_pct(100 * (predicted / measured - 1))

    hiddens, micro_batches = sorted({h for h, _ in grid}), sorted({b for _, b in grid})
    table = [[hidden, *(f"{error(hidden, b, 'forward')} / {error(hidden, b, 'backward')}"
                        if (hidden, b) in grid else "—" for b in micro_batches)] for hidden in hiddens]
    lines = [f"Fitted: matrix-product ceiling {kernels.get('gemm_ceiling', float('nan')):.2f} of the file's nominal "
             f"{nominal:g} TFLOP/s, depth overhead {kernels.get('k_overhead', float('nan')):.2g}, launch gap "
             f"{1e6 * kernels.get('launch_gap_s', float('nan')):.2g} µs. Error of the predicted time per task:",
             "",
             common.markdown_table(["hidden", *(f"mb {b} fwd / bwd" for b in micro_batches)], table),
             "",
             f"Largest error {100 * worst:.1f}% over {len(rows)} tasks; every point, calibration's included, kept a "
             "run the machine left alone."]
    return "\n".join(lines)


class Inconclusive(Exception):
    """The machine was too busy to judge the model by its timings."""


def measure(binary, out, cluster, points, iterations, repeat, deadline):
    """{point: (model, plan, measured trace file, quiet)}: for each point its fastest run among those the machine
    left alone (common.Disturbance, with a core probe within common.quiet_core of the fastest probe seen), or its
    fastest run at all when none was (quiet is then False).

    Points are run in rounds, one run of each per round, so that a slow spell of the machine costs every point a
    run instead of all of one point's. After `repeat` rounds, points with no quiet run get up to `repeat` more.
    No round starts after the deadline (time.monotonic()); raises Inconclusive when the first round ends past it."""
    runs = {point: [] for point in points}  # point -> [(seconds, counters quiet, probe, model, plan, trace)]
    fastest_probe = float("inf")

    def quiet(run):
        return run[1] and common.quiet_core(run[2], fastest_probe)

    for attempt in range(2 * repeat):
        todo = [p for p in points if attempt < repeat or not any(quiet(r) for r in runs[p])]
        if not todo or (attempt > 0 and time.monotonic() > deadline):
            break
        for hidden, micro_batch in todo:
            model, plan = inputs(out, hidden, micro_batch)
            trace_dir = os.path.join(out, f"run-h{hidden}-mb{micro_batch}-{attempt}")
            disturbance = common.Disturbance.before_run()
            run(binary, "run", "--executor", "cpu", "--cluster", cluster, "--model", model, "--plan", plan,
                "--trace-dir", trace_dir, "--warmup", 1, "--iterations", iterations)
            counters_quiet, summary = disturbance.after_run()
            fastest_probe = min(fastest_probe, disturbance.probe_s)
            trace = os.path.join(trace_dir, "trace.json")
            seconds = sum(compute_tasks(trace).values())
            print(f"  {seconds * 1e3:.3f} ms of compute tasks ({summary}{'' if counters_quiet else ': disturbed'})")
            runs[(hidden, micro_batch)].append((seconds, counters_quiet, disturbance.probe_s, model, plan, trace))
        if attempt == 0 and time.monotonic() > deadline:
            raise Inconclusive("the first round of runs did not fit in the budget")
    print(f"fastest core probe {fastest_probe * 1e3:.2f} ms; a run counts with its probe up to "
          f"{common.QUIET_CORE * fastest_probe * 1e3:.2f} ms")
    best = {}
    for point, found in runs.items():
        pool = [r for r in found if quiet(r)] or found
        seconds, _, _, model, plan, trace = min(pool, key=lambda r: r[0])
        best[point] = (model, plan, trace, quiet(pool[0]))
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--grid", choices=sorted(GRIDS), default="small")
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", default=OUT)
    parser.add_argument("--max-error", type=float)
    parser.add_argument("--budget-s", type=float, default=480,
                        help="no new round of runs starts after this many seconds")
    common.figures_argument(parser)
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    binary = common.hetsim_binary()
    cluster = common.write_json(out, "cluster.json", CLUSTER)

    # Calibration and test points share the rounds, so a busy spell falls on both alike.
    points = CALIBRATION + GRIDS[args.grid]
    try:
        runs = measure(binary, out, cluster, points, args.iterations, args.repeat, time.monotonic() + args.budget_s)
    except Inconclusive as reason:
        print(f"INCONCLUSIVE: machine busy ({reason}); not judged")
        sys.exit(77)

    calibration_args = []
    for point in CALIBRATION:
        model, plan, trace, _ = runs[point]
        calibration_args += ["--trace", trace, "--plan", plan, "--model", model]
    calibration = os.path.join(out, "calibration.json")
    print(run(binary, "calibrate", *calibration_args, "--cluster", cluster, "--out", calibration), end="")

    rows, worst, missed, kinds = [], 0.0, set(), {}
    for hidden, micro_batch in GRIDS[args.grid]:
        model, plan, trace, _ = runs[(hidden, micro_batch)]
        predicted_trace = os.path.join(out, f"sim-h{hidden}-mb{micro_batch}.json")
        run(binary, "simulate", "--cluster", cluster, "--model", model, "--plan", plan,
            "--calibration", calibration, "--trace", predicted_trace)
        measured, predicted = compute_tasks(trace), compute_tasks(predicted_trace)
        kinds[hidden, micro_batch] = task_kinds(trace)
        for name, seconds in sorted(measured.items()):
            error = predicted[name] / seconds - 1
            worst = max(worst, abs(error))
            if args.max_error is not None and 100 * abs(error) > args.max_error:
                missed.add((hidden, micro_batch))
            rows.append([hidden, micro_batch, name, f"{seconds:.6g}", f"{predicted[name]:.6g}", f"{100 * error:+.1f}"])
            print(f"hidden {hidden:5d}  micro-batch {micro_batch:3d}  {name:10s} measured {seconds * 1e3:9.3f} ms  "
                  f"predicted {predicted[name] * 1e3:9.3f} ms  {100 * error:+6.1f}%", flush=True)
    with open(os.path.join(out, "results.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["hidden", "micro_batch", "task", "measured_s", "predicted_s", "error_pct"])
        writer.writerows(rows)
    print(f"largest error {100 * worst:.1f}% over {len(rows)} tasks")
    disturbed = [f"h{h}-mb{b}" for (h, b), found in runs.items() if not found[3]]
    if not args.no_figures and disturbed:
        print(f"figures not written into docs/experiments.md: the machine left no run of {len(disturbed)} of the "
              f"{len(runs)} points alone ({', '.join(disturbed)})", file=sys.stderr)
    elif not args.no_figures:
        common.write_figures("cpu_layer_fidelity", figures(GRIDS[args.grid], rows, kinds, calibration, worst))
    if missed:
        # A miss is judged only when the machine left alone every run it rests on: the calibration's and its own.
        disturbed = [f"h{h}-mb{b}" for h, b in CALIBRATION + sorted(missed) if not runs[(h, b)][3]]
        if disturbed:
            print(f"INCONCLUSIVE: machine busy (no undisturbed run of {', '.join(disturbed)}); "
                  f"a task is {100 * worst:.1f}% off; not judged")
            sys.exit(77)
        sys.exit(f"a task is {100 * worst:.1f}% off, beyond {args.max_error}%, with every run it rests on undisturbed")


if __name__ == "__main__":
    main()
