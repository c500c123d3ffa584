#!/usr/bin/env python3
"""Megatron-LM's weak scaling (Narayanan et al., SC'21, Table 1): the ten GPT models on Selene, each simulated
with its published tensor and pipeline degrees, data parallel over the rest, 1F1B, recompute, fp16, at
micro-batch 1 and 2. The prediction is Megatron's own FLOP count (paper eq. 3, recompute included),
96 B s l h^2 (1 + s/6h + V/16lh), over the simulated iteration time and the GPUs; the error is against the
published TFLOP/s per GPU.

Usage: run.py [--rows 1-6] [--micro-batches 1,2] [--timeout-s 600] [--out DIR] [--max-error PCT]
              [--max-fold-error PCT [--fold-rows 1-2]] [--no-figures]
A row whose simulation runs over --timeout-s (or that the simulator refuses) is reported as not run.
Writes results.csv and results.png under --out (default out/megatron_weak_scaling), and the figures into
docs/experiments.md (not with --no-figures); with --max-error, exits 1 when a row is further off than that or did
not run (the ctest megatron_weak_scaling runs rows 1-3 so)."""

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(common.ROOT, "out", "megatron_weak_scaling")  # --out replaces it
VOCAB, SEQ = 51200, 2048

ALGORITHM = "ring"  # the plans' collective_algorithm (--collective-algorithm)


def megatron_flops(row):
    """FLOPs of one iteration by the paper's eq. 3 (with activation recomputation)."""
    b, l, h = row["batch"], row["layers"], row["hidden"]
    return 96 * b * SEQ * l * h * h * (1 + SEQ / (6 * h) + VOCAB / (16 * l * h))


def inputs(row, micro_batch, name):
    """Writes the cluster, model and plan of one row; returns their paths."""
    cluster = {"name": f"selene_{row['gpus']}", "description": "DGX A100 80GB nodes as on Selene",
               "regions": [{"name": "fabric", "latency_us": 2, "nodes": [
                   {"name": "dgx", "gpu": "A100-SXM4-80GB", "devices": 8, "repeat": row["gpus"] // 8,
                    "intra_node": {"bandwidth_GBps": 300, "latency_us": 2},
                    "nic": {"bandwidth_gbps": 1600, "latency_us": 3}}]}]}
    model = {"model_type": "gpt2", "n_embd": row["hidden"], "n_head": row["heads"], "n_layer": row["layers"],
             "n_positions": SEQ, "vocab_size": VOCAB, "seq_len": SEQ, "tie_word_embeddings": True,
             "fused_gelu": True}
    tp, pp = row["tp"], row["pp"]
    dp = row["gpus"] // (tp * pp)
    # The embedding rides with the first stage's blocks and the head with the last's, as in Megatron-LM.
    per_stage = row["layers"] // pp
    plan = {"tp": tp, "pp": pp, "dp": dp, "micro_batch": micro_batch, "global_batch": row["batch"],
            "zero_stage": 0, "schedule": "1f1b", "recompute": True, "dtype": "fp16",
            # SC'21 Megatron-LM predates sequence parallelism; its scatter-gather sends are the framework's.
            "sequence_parallel": False,
            "collective_algorithm": ALGORITHM, "stage_starts": [0] + [1 + s * per_stage for s in range(1, pp)]}
    paths = []
    for kind, content in (("cluster", cluster), ("model", model), ("plan", plan)):
        path = os.path.join(OUT, f"{name}.{kind}.json")
        with open(path, "w") as f:
            json.dump(content, f, indent=1)
        paths.append(path)
    return paths


def simulate(row, micro_batch, timeout_s, exact=False):
    """(simulated iteration seconds or None, wall seconds, note); `exact` replays every GPU (--exact) instead of
    folding the identical ones."""
    name = f"{row['params_b']}b-mb{micro_batch}"
    cluster, model, plan = inputs(row, micro_batch, name)
    report = os.path.join(OUT, name + (".exact" if exact else "") + ".report.json")
    command = [common.hetsim_binary(), "simulate", "--cluster", cluster, "--model", model, "--plan", plan,
               "--report", report] + (["--exact"] if exact else [])
    print("$", " ".join(command[1:]), flush=True)
    start = time.time()
    try:
        done = subprocess.run(command, timeout=timeout_s, capture_output=True, text=True)
    except subprocess.TimeoutExpired:
        return None, time.time() - start, f"over {timeout_s} s"
    wall = time.time() - start
    if done.returncode != 0:
        return None, wall, (done.stderr.strip().splitlines() or ["failed"])[-1]
    with open(report) as f:
        return json.load(f)["iteration_time_s"], wall, ""


def parse_rows(text, count):
    if "-" in text:
        first, last = map(int, text.split("-"))
        return list(range(first, last + 1))
    return [int(part) for part in text.split(",")] if text else list(range(1, count + 1))


def figures(table, results):
    """The block of docs/experiments.md: per row run, the published and predicted TFLOP/s per GPU at each micro-batch
    and how long each simulation took; the worst error, and which rows of the table were run."""
    micro_batches = sorted({r[3] for r in results})
    by_row = {}
    for params_b, gpus, degrees, micro_batch, published, predicted, error, _, wall, _, note in results:
        entry = by_row.setdefault(params_b, {"gpus": gpus, "degrees": degrees, "published": published, "runs": {}})
        entry["runs"][micro_batch] = (f"{predicted} ({common.signed_pct(float(error))})" if predicted else
                                      f"not run ({note})", f"{float(wall):.1f} s")
    rows = []
    for params_b, entry in by_row.items():
        tp, pp = entry["degrees"].removeprefix("tp").split(" pp")
        runs = [entry["runs"].get(mb, ("—", "—")) for mb in micro_batches]
        rows.append([f"{params_b:g} B", common.thousands(entry["gpus"]), f"{tp} × {pp}", entry["published"],
                     *(run[0] for run in runs), " / ".join(run[1] for run in runs)])
    header = ["model", "GPUs", "tp × pp", "published", *(f"mb {mb}" for mb in micro_batches),
              f"simulation, folded ({' / '.join(f'mb {mb}' for mb in micro_batches)})"]
    errors = [abs(float(r[6])) for r in results if r[6]]
    summary = f"The worst is {max(errors):.1f}% off" if errors else "None ran"
    if len(errors) < len(results):
        summary += f"; {len(results) - len(errors)} of the {len(results)} simulations did not run"
    summary += f" ({len(by_row)} of the table's {len(table)} rows run)."
    return common.markdown_table(header, rows) + "\n\n" + summary


def main():
    global OUT, ALGORITHM
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", default="", help="1-based rows of Table 1, e.g. 1-6 or 1,3 (default: all)")
    parser.add_argument("--micro-batches", default="1,2")
    parser.add_argument("--timeout-s", type=float, default=600)
    parser.add_argument("--out", default=OUT)
    parser.add_argument("--max-error", type=float, help="exit 1 if a row is off by more (percent) or did not run")
    parser.add_argument("--max-fold-error", type=float,
                        help="also replay every row in full (--exact); exit 1 if the folded replay's iteration time "
                             "is further from it than this (percent)")
    parser.add_argument("--fold-rows", default="",
                        help="with --max-fold-error, the rows replayed in full (default: every row run); the full "
                             "replays take most of the time: 52 of rows 1-3's 64 s are row 3's")
    common.collective_algorithm_argument(parser)
    common.figures_argument(parser)
    args = parser.parse_args()
    OUT = os.path.abspath(args.out)
    ALGORITHM = args.collective_algorithm
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(HERE, "rows.json")) as f:
        table = json.load(f)["rows"]
    results, worst, worst_fold, measured = [], 0.0, 0.0, []
    fold_rows = set(parse_rows(args.fold_rows or args.rows, len(table)))
    for index in parse_rows(args.rows, len(table)):
        row = table[index - 1]
        for micro_batch in map(int, args.micro_batches.split(",")):
            seconds, wall, note = simulate(row, micro_batch, args.timeout_s)
            predicted = megatron_flops(row) / seconds / row["gpus"] / 1e12 if seconds else None
            error = (predicted / row["tflops_per_gpu"] - 1) * 100 if predicted else None
            if seconds:  # the published TFLOP/s per GPU give the measured step
                report = os.path.join(OUT, f"{row['params_b']}b-mb{micro_batch}.report.json")
                measured.append((f"{row['params_b']} B on {row['gpus']} mb {micro_batch}", "A100-SXM4-80GB",
                                 seconds * predicted / row["tflops_per_gpu"], seconds, *common.band_of(report)))
            worst = max(worst, abs(error)) if error is not None else float("inf")
            fold_error = ""
            if args.max_fold_error is not None and index in fold_rows:
                exact, exact_wall, exact_note = simulate(row, micro_batch, args.timeout_s, exact=True)
                off = abs(seconds / exact - 1) * 100 if seconds and exact else float("inf")
                worst_fold = max(worst_fold, off)
                fold_error = f"{off:.3f}" if exact else exact_note
                print(f"  full replay {exact or '-'} s in {exact_wall:.0f} s wall: folded is {fold_error}% off",
                      flush=True)
            results.append([row["params_b"], row["gpus"], f"tp{row['tp']} pp{row['pp']}", micro_batch,
                            row["tflops_per_gpu"], f"{predicted:.1f}" if predicted else "",
                            f"{error:+.1f}" if error is not None else "", f"{seconds:.3f}" if seconds else "",
                            f"{wall:.1f}", fold_error, note])
            print(f"  {row['params_b']} B mb {micro_batch}: published {row['tflops_per_gpu']}, predicted "
                  f"{results[-1][5] or '-'} TFLOP/s per GPU ({results[-1][6] or note}), {wall:.0f} s wall", flush=True)
    common.write_measured(OUT, measured)
    csv_path = os.path.join(OUT, "results.csv")
    common.write_csv(csv_path, ["params_b", "gpus", "degrees", "micro_batch", "published_tflops",
                                "predicted_tflops", "error_pct", "iteration_s", "wall_s", "fold_vs_exact_pct", "note"],
                     results)
    common.plot_bars(csv_path, os.path.join(OUT, "results.png"), "Megatron-LM weak scaling, SC21 Table 1",
                     "TFLOP/s per GPU", 1, [5, 6])
    print(f"largest error {worst:.1f}%")
    if args.max_fold_error is not None:
        print(f"folded against full replay: largest difference {worst_fold:.3f}%")
    if not args.no_figures:
        common.write_figures("megatron_weak_scaling", figures(table, results))
    if args.max_error is not None and worst > args.max_error:
        print(f"over the {args.max_error}% allowed", file=sys.stderr)
        sys.exit(1)
    if args.max_fold_error is not None and worst_fold > args.max_fold_error:
        print(f"folded replay over the {args.max_fold_error}% allowed from the full one", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
