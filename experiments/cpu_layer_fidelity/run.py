#!/usr/bin/env python3
"""The cpu executor as the real machine: layer times measured with `hetsim run --executor cpu` against the
cost model's prediction from constants that `hetsim calibrate` fitted to other runs on the same machine.

The model is one GPT block (GPT-2's operators: norms, QKV, attention scores, softmax, dropout, context, output
projection, MLP, residuals) between an embedding and a head over a vocabulary of 64 words, so that a forward
or backward task is that layer. Calibration measures hidden 48, 96, 384 and 768 at micro-batches 1-16; the test
grid is hidden 64-1024 against micro-batches 1-32 (no point shared with calibration). Every run is one device,
fp32 (what the cpu executor computes in), sequence 128. Calibration and measurement run back to back on the
same machine, so a machine that is busy throughout moves both alike. Each point runs --repeat times, in rounds
over all points, and keeps its fastest run: one run's memory placement, or a slow spell of a virtual machine,
can slow all of a run's iterations by a fifth, which no model of the kernels should learn.

Usage: run.py [--grid small|full] [--iterations N] [--repeat N] [--out DIR] [--max-error PCT]
Writes results.csv under --out (default out/cpu_layer_fidelity); with --max-error, exits 1 when a task's
predicted time is further off than that (the ctest cpu_layer_fidelity runs the small grid with 15)."""

import argparse
import csv
import json
import os
import subprocess
import sys

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


def write(out, name, content):
    path = os.path.join(out, name)
    with open(path, "w") as f:
        json.dump(content, f, indent=1)
    return path


def inputs(out, hidden, micro_batch):
    """The model and plan of one point; returns their paths."""
    name = f"h{hidden}-mb{micro_batch}"
    model = {"model_type": "gpt2", "n_embd": hidden, "n_head": max(1, hidden // 64), "n_layer": 1,
             "n_positions": SEQ, "vocab_size": VOCAB, "seq_len": SEQ}
    plan = {"tp": 1, "pp": 1, "dp": 1, "micro_batch": micro_batch, "global_batch": micro_batch, "zero_stage": 0,
            "schedule": "1f1b", "recompute": False, "dtype": "fp32"}
    return write(out, name + ".model.json", model), write(out, name + ".plan.json", plan)


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


def measure(binary, out, cluster, points, iterations, repeat):
    """{point: (model, plan, measured trace file)}: for each point the run whose compute tasks took least in all.
    Points are run in rounds, one run of each per round, so that a slow spell of the machine costs every point
    a run instead of all of one point's."""
    best = {}
    for attempt in range(repeat):
        for hidden, micro_batch in points:
            model, plan = inputs(out, hidden, micro_batch)
            trace_dir = os.path.join(out, f"run-h{hidden}-mb{micro_batch}-{attempt}")
            run(binary, "run", "--executor", "cpu", "--cluster", cluster, "--model", model, "--plan", plan,
                "--trace-dir", trace_dir, "--warmup", 1, "--iterations", iterations)
            trace = os.path.join(trace_dir, "trace.json")
            seconds = sum(compute_tasks(trace).values())
            if (hidden, micro_batch) not in best or seconds < best[(hidden, micro_batch)][3]:
                best[(hidden, micro_batch)] = (model, plan, trace, seconds)
    return {point: found[:3] for point, found in best.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--grid", choices=sorted(GRIDS), default="small")
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", default=OUT)
    parser.add_argument("--max-error", type=float)
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    binary = common.hetsim_binary()
    cluster = write(out, "cluster.json", CLUSTER)

    calibration_args = []
    calibration_runs = measure(binary, out, cluster, CALIBRATION, args.iterations, args.repeat)
    for point in CALIBRATION:
        model, plan, trace = calibration_runs[point]
        calibration_args += ["--trace", trace, "--plan", plan, "--model", model]
    calibration = os.path.join(out, "calibration.json")
    print(run(binary, "calibrate", *calibration_args, "--cluster", cluster, "--out", calibration), end="")

    rows, worst = [], 0.0
    grid_runs = measure(binary, out, cluster, GRIDS[args.grid], args.iterations, args.repeat)
    for hidden, micro_batch in GRIDS[args.grid]:
        model, plan, trace = grid_runs[(hidden, micro_batch)]
        predicted_trace = os.path.join(out, f"sim-h{hidden}-mb{micro_batch}.json")
        run(binary, "simulate", "--cluster", cluster, "--model", model, "--plan", plan,
            "--calibration", calibration, "--trace", predicted_trace)
        measured, predicted = compute_tasks(trace), compute_tasks(predicted_trace)
        for name, seconds in sorted(measured.items()):
            error = predicted[name] / seconds - 1
            worst = max(worst, abs(error))
            rows.append([hidden, micro_batch, name, f"{seconds:.6g}", f"{predicted[name]:.6g}", f"{100 * error:+.1f}"])
            print(f"hidden {hidden:5d}  micro-batch {micro_batch:3d}  {name:10s} measured {seconds * 1e3:9.3f} ms  "
                  f"predicted {predicted[name] * 1e3:9.3f} ms  {100 * error:+6.1f}%", flush=True)
    with open(os.path.join(out, "results.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["hidden", "micro_batch", "task", "measured_s", "predicted_s", "error_pct"])
        writer.writerows(rows)
    print(f"largest error {100 * worst:.1f}% over {len(rows)} tasks")
    if args.max_error is not None and 100 * worst > args.max_error:
        sys.exit(f"a task is {100 * worst:.1f}% off, beyond {args.max_error}%")


if __name__ == "__main__":
    main()
