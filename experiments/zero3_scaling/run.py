#!/usr/bin/env python3
"""ZeRO-3 at scale (Narayanan et al., SC'21, Table 2): GPT-3 175B with DeepSpeed ZeRO-3 and no model
parallelism on Selene (DGX A100 80GB, eight 200 Gb/s HDR adapters per node), the global batch of 1,536 fixed
while the GPUs double, so each GPU's micro-batch halves. Published TFLOP/s per GPU fall from 144 to 44; the
prediction is Megatron's FLOP formula (recompute included) over the simulated iteration, under the deepspeed
framework's defaults (a gather per partitioned tensor, 5e7-parameter prefetch) at DeepSpeed v0.3.15, the release
of the paper's time, whose ZeRO-3 calls each through torch.distributed's list API, with Megatron-DeepSpeed's fused
GPT modules ("eager_modules": false). With --ptdp it also simulates the table's PTD parallelism on the same GPUs
(tensor 8 x pipeline 12), for the ranking of the two. The table's 530B rows are left out: at
their micro-batch of 4, HetSim's memory model puts 93 GiB on each 80 GB GPU (the checkpoints of 105 layers
alone take 35 GB), so the published runs must have partitioned or offloaded activations, which HetSim does
not model.

Usage: run.py [--rows 1-3] [--out DIR] [--max-drop-error PCT] [--ptdp] [--no-figures]
Writes results.csv under --out (default out/zero3_scaling), and the figures into docs/experiments.md (not with
--no-figures). With --max-drop-error, exits 1 when a model's predicted fall in TFLOP/s per GPU from its first to its
last row run is further than that from the published fall (the ctest zero3_scaling runs the 175B rows 1 and 3 with
15)."""

import argparse
import csv
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402

OUT = os.path.join(common.ROOT, "out", "zero3_scaling")  # --out replaces it
VOCAB, SEQ = 51200, 2048
# SC'21 Table 2, "ZeRO-3 without model parallelism": parameters, layers, hidden, heads, GPUs, global batch,
# micro-batch, published TFLOP/s per GPU.
# "ptdp": the same table's PTD parallelism on the same GPUs (tensor 8 x pipeline 12, micro-batch 1), published TFLOP/s.
ROWS = [
    {"model": "175B", "layers": 96, "hidden": 12288, "heads": 96, "gpus": 384, "batch": 1536, "mb": 4, "tflops": 144,
     "ptdp": 153},
    {"model": "175B", "layers": 96, "hidden": 12288, "heads": 96, "gpus": 768, "batch": 1536, "mb": 2, "tflops": 88,
     "ptdp": 149},
    {"model": "175B", "layers": 96, "hidden": 12288, "heads": 96, "gpus": 1536, "batch": 1536, "mb": 1, "tflops": 44,
     "ptdp": 141},
]
PTDP_TP, PTDP_PP = 8, 12


def megatron_flops(row):
    """FLOPs of one iteration by the paper's eq. 3 (with activation recomputation)."""
    b, l, h = row["batch"], row["layers"], row["hidden"]
    return 96 * b * SEQ * l * h * h * (1 + SEQ / (6 * h) + VOCAB / (16 * l * h))


def simulate(out, row, algorithm, ptdp=False):
    """(iteration seconds, wall seconds) of one row: ZeRO-3, or with `ptdp` the table's PTD parallelism."""
    name = f"{row['model']}-{row['gpus']}" + ("-ptdp" if ptdp else "")
    cluster = common.write_json(out, name + ".cluster.json", {
        "name": f"selene_{row['gpus']}", "description": "DGX A100 80GB nodes as on Selene",
        "regions": [{"name": "fabric", "latency_us": 2, "nodes": [
            {"name": "dgx", "gpu": "A100-SXM4-80GB", "devices": 8, "repeat": row["gpus"] // 8,
             "intra_node": {"bandwidth_GBps": 300, "latency_us": 2},
             "nic": {"bandwidth_gbps": 1600, "latency_us": 3}}]}]})
    model = common.write_json(out, name + ".model.json", {
        "model_type": "gpt2", "n_embd": row["hidden"], "n_head": row["heads"], "n_layer": row["layers"],
        "n_positions": SEQ, "vocab_size": VOCAB, "seq_len": SEQ, "tie_word_embeddings": True,
        "fused_gelu": True})
    if ptdp:  # Megatron-LM as in Table 1: the embedding with the first stage's blocks, no sequence parallelism
        per_stage = row["layers"] // PTDP_PP
        plan = common.write_json(out, name + ".plan.json", {
            "tp": PTDP_TP, "pp": PTDP_PP, "dp": row["gpus"] // (PTDP_TP * PTDP_PP), "micro_batch": 1,
            "global_batch": row["batch"], "zero_stage": 0, "schedule": "1f1b", "recompute": True, "dtype": "fp16",
            "sequence_parallel": False, "collective_algorithm": algorithm,
            "stage_starts": [0] + [1 + s * per_stage for s in range(1, PTDP_PP)]})
        return run(out, name, cluster, model, plan)
    plan = common.write_json(out, name + ".plan.json", {
        "tp": 1, "pp": 1, "dp": row["gpus"], "micro_batch": row["mb"], "global_batch": row["batch"],
        "zero_stage": 3, "schedule": "1f1b", "recompute": True, "dtype": "fp16", "collective_algorithm": algorithm,
        # Megatron-DeepSpeed's GPT modules, on the DeepSpeed of the paper's time (v0.3.15, April 2021).
        "framework": {"name": "deepspeed", "eager_modules": False, "deepspeed": "0.3.15"}})
    return run(out, name, cluster, model, plan)


def run(out, name, cluster, model, plan):
    report = os.path.join(out, name + ".report.json")
    command = [common.hetsim_binary(), "simulate", "--cluster", cluster, "--model", model, "--plan", plan,
               "--pipelined-rings", "--report", report]
    print("$", " ".join(command[1:]), flush=True)
    start = time.time()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{name}: {done.stderr.strip()}")
    with open(report) as f:
        return json.load(f)["iteration_time_s"], time.time() - start


def parse_rows(text):
    if "-" in text:
        first, last = map(int, text.split("-"))
        return list(range(first, last + 1))
    return [int(r) for r in text.split(",")]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", default="1-3")
    parser.add_argument("--out", default=OUT)
    parser.add_argument("--max-drop-error", type=float)
    parser.add_argument("--ptdp", action="store_true",
                        help="also simulate the table's PTD parallelism on each row's GPUs, for the ranking")
    common.collective_algorithm_argument(parser)
    common.figures_argument(parser)
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    results, shown, falls, measured = [], [], [], []
    for r in parse_rows(args.rows):
        row = ROWS[r - 1]
        seconds, wall = simulate(out, row, args.collective_algorithm)
        predicted = megatron_flops(row) / seconds / row["gpus"] / 1e12
        error = predicted / row["tflops"] - 1
        results.append((row, seconds, predicted))
        # TFLOP/s per GPU are the FLOPs over the step: the published figure gives the measured step.
        measured.append((f"{row['model']} ZeRO-3 on {row['gpus']}", "A100-SXM4-80GB", seconds * predicted / row["tflops"],
                         seconds, *common.band_of(os.path.join(out, f"{row['model']}-{row['gpus']}.report.json"))))
        line = [common.thousands(row["gpus"]), row["mb"], row["tflops"],
                f"{predicted:.1f} ({100 * error:+.0f}%)".replace("-", "\u2212"), f"{seconds:.2f} s", f"{wall:.0f} s"]
        if args.ptdp:
            ptdp_seconds, ptdp_wall = simulate(out, row, args.collective_algorithm, ptdp=True)
            ptdp = megatron_flops(row) / ptdp_seconds / row["gpus"] / 1e12
            ptdp_error = ptdp / row["ptdp"] - 1
            measured.append((f"{row['model']} PTD-P on {row['gpus']}", "A100-SXM4-80GB", ptdp_seconds * ptdp / row["ptdp"],
                             ptdp_seconds,
                             *common.band_of(os.path.join(out, f"{row['model']}-{row['gpus']}-ptdp.report.json"))))
            same = (predicted < ptdp) == (row["tflops"] < row["ptdp"])
            line += [row["ptdp"], f"{ptdp:.1f} ({100 * ptdp_error:+.0f}%)".replace("-", "\u2212"),
                     "yes" if same else "no"]
            print(f"  PTD-P on {row['gpus']} GPUs: {ptdp:.1f} TFLOP/s per GPU (published {row['ptdp']}, "
                  f"{100 * ptdp_error:+.1f}%); ZeRO-3 {'below' if predicted < ptdp else 'above'} it "
                  f"({'as' if same else 'not as'} published), simulated in {ptdp_wall:.0f} s", flush=True)
        shown.append(line)
        print(f"{row['model']} on {row['gpus']:5d} GPUs, micro-batch {row['mb']}: iteration {seconds:7.2f} s, "
              f"{predicted:6.1f} TFLOP/s per GPU (published {row['tflops']}, {100 * error:+.1f}%), "
              f"simulated in {wall:.0f} s", flush=True)
    common.write_measured(out, measured)
    with open(os.path.join(out, "results.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["model", "gpus", "micro_batch", "iteration_s", "predicted_tflops", "published_tflops"])
        for row, seconds, predicted in results:
            writer.writerow([row["model"], row["gpus"], row["mb"], f"{seconds:.4g}", f"{predicted:.4g}",
                             row["tflops"]])
    worst = 0.0
    for model in sorted({row["model"] for row, _, _ in results}):
        runs = [(row, p) for row, _, p in results if row["model"] == model]
        if len(runs) < 2:
            continue
        (first, p_first), (last, p_last) = runs[0], runs[-1]
        predicted_drop, published_drop = p_first / p_last, first["tflops"] / last["tflops"]
        error = predicted_drop / published_drop - 1
        worst = max(worst, abs(error))
        print(f"{model}: TFLOP/s per GPU fall {predicted_drop:.2f}x from {first['gpus']} to {last['gpus']} GPUs "
              f"(published {published_drop:.2f}x, {100 * error:+.1f}%)")
        falls.append(f"The fall of {model}'s TFLOP/s per GPU from {common.thousands(first['gpus'])} to "
                     f"{common.thousands(last['gpus'])} GPUs is {predicted_drop:.2f}× against the published "
                     f"{published_drop:.2f}× ({common.signed_pct(100 * error)}).")
    if not args.no_figures:
        common.write_figures("zero3_scaling", "\n".join([
            common.markdown_table(["GPUs", "micro-batch", "published TFLOP/s per GPU", "predicted",
                                   "iteration (simulated)", "simulation (wall)"] +
                                  (["PTD-P published", "PTD-P predicted", "ranked as published"] if args.ptdp
                                   else []), shown),
            *(["", *falls] if falls else [])]))
    if args.max_drop_error is not None and 100 * worst > args.max_drop_error:
        sys.exit(f"a fall is {100 * worst:.1f}% off the published one, beyond {args.max_drop_error}%")


if __name__ == "__main__":
    main()
