#!/usr/bin/env python3
"""AMP's measured configurations (Li et al., NeurIPS 2022, appendix 6.5, Tables 6-9, and §4.3's data-parallel run): GPT-2 medium (24 layers,
hidden 1,024, 1,024 tokens, vocabulary 52,256), global batch 32, on two AWS clusters, each configuration run by
DeepSpeed 0.3.13's pipeline engine over Megatron-LM v1.1.5's GPT-2 (the AMP repository's
DeepSpeed/DeepSpeedExamples/Megatron-LM-v1.1.5-3D_parallelism: fp16, `fp32_allreduce`, no activation
checkpointing, the attention mask passed between stages), each time the mean of iterations 21-40:

- homogeneous: 4 g4dn.12xlarge (4 T4 each, 50 Gb/s PCIe inside, 50 Gb/s between);
- heterogeneous: 3 p3.8xlarge (4 V100 each, about 170 Gb/s NVLink inside, 10 Gb/s between) and 1 g4dn.12xlarge.

Neither instance has EFA: NCCL crosses their NICs with its TCP socket transport ("transport": "socket" in both
cluster files), which moves what public socket runs moved, not the line rate (core/cluster.hpp).

Ranks follow DeepSpeed's topology (pipe, data, model) over the hosts in order, the T4 node last (AMP's default
rank map, cost_het_cluster.py `predict`); AMP's layer boundaries count 30 pipeline layers (embedding, a
transpose, 24 blocks, a transpose, final norm, tied head, fp32 cast), mapped here onto HetSim's 26 (embedding,
24 blocks, head). Each configuration is simulated and compared with its measured time; within each cluster the
Spearman rank correlation of predicted and measured times says whether HetSim orders them as measured.

Usage: run.py [--out DIR] [--no-figures] [--check CLUSTER ... --max-mean-error PCT --min-rho R]
Writes results.csv under --out (default out/amp_measured) and the figures into docs/experiments.md (not with
--no-figures). With --check, exits 1 when a cluster checked has a mean error beyond PCT or a rank correlation below
R (the ctest amp_measured checks both)."""

import argparse
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(common.ROOT, "out", "amp_measured")  # --out replaces it
MODEL = os.path.join(common.ROOT, "experiments", "amp_het_cluster", "gpt2-medium-amp.json")
CLUSTERS = {
    "homogeneous": os.path.join(HERE, "g4dn_cluster.json"),
    "heterogeneous": os.path.join(common.ROOT, "experiments", "amp_het_cluster", "cluster.json"),
}
GLOBAL_BATCH, GPUS = 32, 16
# (cluster, table, micro-batch, AMP's layer boundaries, tensor parallel, pipeline, measured seconds)
RUNS = [
    ("homogeneous", 6, 1, [0, 30], 1, 1, 1.32),
    ("homogeneous", 6, 2, [0, 14, 30], 1, 2, 1.37),
    ("homogeneous", 6, 2, [0, 30], 2, 1, 1.58),
    ("homogeneous", 6, 4, [0, 14, 30], 1, 2, 1.63),
    ("homogeneous", 6, 4, [0, 30], 2, 1, 1.53),
    ("homogeneous", 7, 1, [0, 15, 30], 1, 2, 1.28),
    ("homogeneous", 7, 1, [0, 9, 15, 21, 30], 1, 4, 1.20),
    ("homogeneous", 7, 1, [0, 6, 9, 12, 15, 18, 21, 24, 30], 1, 8, 1.23),
    ("homogeneous", 7, 2, [0, 15, 30], 1, 2, 1.38),
    ("homogeneous", 7, 1, [0, 4, 6, 8, 10, 12, 14, 16, 17, 18, 19, 20, 21, 22, 23, 25, 30], 1, 16, 1.55),
    # §4.3's text: "Megatron selects dp=16, which results in 2.72 second/iteration" (its micro-batch unstated: 2,
    # the whole batch in one step; at 1 HetSim's prediction moves by 0.5%).
    ("heterogeneous", "4.3", 2, [0, 30], 1, 1, 2.72),
    ("heterogeneous", 8, 2, [0, 14, 30], 1, 2, 2.27),
    ("heterogeneous", 8, 4, [0, 14, 30], 1, 2, 2.32),
    ("heterogeneous", 8, 8, [0, 8, 14, 20, 30], 1, 4, 1.97),
    ("heterogeneous", 8, 8, [0, 14, 30], 2, 2, 2.43),
    ("heterogeneous", 8, 16, [0, 8, 14, 20, 30], 2, 4, 2.34),
    ("heterogeneous", 9, 1, [0, 7, 14, 20, 30], 1, 4, 1.47),
    ("heterogeneous", 9, 1, [0, 5, 9, 12, 15, 18, 21, 24, 30], 1, 8, 1.28),
    ("heterogeneous", 9, 1, [0, 3, 5, 7, 9, 11, 13, 15, 16, 17, 19, 20, 21, 22, 23, 25, 30], 1, 16, 1.52),
    ("heterogeneous", 9, 2, [0, 8, 14, 20, 30], 1, 4, 1.52),
    ("heterogeneous", 9, 2, [0, 5, 9, 12, 14, 17, 20, 23, 30], 1, 8, 1.54),
]
FIRST_BLOCK, BLOCKS = 2, 24  # AMP's pipeline layers 2..25 are the blocks


def stage_starts(boundaries):
    """HetSim's first layer of each stage: AMP's layer b (a block, 2..25) is HetSim's layer b - 1."""
    starts = [0]
    for b in boundaries[1:-1]:
        if not FIRST_BLOCK < b <= FIRST_BLOCK + BLOCKS - 1:
            sys.exit(f"boundary {b} does not start a block")
        starts.append(b - 1)
    return starts


def plan_of(micro_batch, boundaries, tp, pp):
    dp = GPUS // (tp * pp)
    return {"tp": tp, "pp": pp, "dp": dp, "micro_batch": micro_batch, "global_batch": GLOBAL_BATCH,
            "stage_starts": stage_starts(boundaries), "schedule": "1f1b", "recompute": False, "dtype": "fp16",
            "sequence_parallel": False,
            # DeepSpeed 0.3.13 (AMP's DeepSpeed/version.txt) with its ds_config.json: fp32_allreduce; Megatron-LM
            # v1.1.5's GPT2ModelPipe passes (hidden, mask) between stages.
            "framework": {"name": "megatron-deepspeed", "deepspeed": "0.3.13", "fp32_gradient_reduction": True,
                          "sends_attention_mask": True}}


def spearman(xs, ys):
    def ranks(values):
        order = sorted(range(len(values)), key=lambda i: values[i])
        r = [0.0] * len(values)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2
            i = j + 1
        return r
    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    var = (sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry)) ** 0.5
    return cov / var


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=OUT)
    parser.add_argument("--check", choices=sorted(CLUSTERS), action="append", default=[],
                        help="a cluster --max-mean-error and --min-rho hold (repeat for both)")
    parser.add_argument("--max-mean-error", type=float, default=100.0)
    parser.add_argument("--min-rho", type=float, default=-1.0)
    common.figures_argument(parser)
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    rows, shown = [], []
    for i, (cluster, table, mb, boundaries, tp, pp, measured) in enumerate(RUNS):
        plan = plan_of(mb, boundaries, tp, pp)
        report = common.simulate(out, f"{cluster}-{i}", CLUSTERS[cluster], MODEL, plan)
        predicted = report["iteration_time_s"]
        low, high = report["iteration_time_s_band"]
        error = predicted / measured - 1
        rows.append((cluster, table, mb, tp, pp, plan["dp"], measured, predicted, low, high))
        inside = "yes" if low <= measured <= high else "no"
        shown.append([cluster, table, f"tp {tp}, pp {pp}, dp {plan['dp']}, micro-batch {mb}", f"{measured:.2f}",
                      f"{predicted:.3f} ({common.signed_pct(100 * error)})", f"{low:.2f}-{high:.2f}", inside])
        print(f"{cluster:13s} table {table:>3} tp {tp} pp {pp:2d} dp {plan['dp']:2d} mb {mb:2d}: measured {measured:.2f} s,"
              f" predicted {predicted:.3f} s ({100 * error:+.1f}%), band {low:.2f}-{high:.2f}", flush=True)
    with open(os.path.join(out, "results.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["cluster", "table", "micro_batch", "tp", "pp", "dp", "measured_s", "predicted_s",
                         "band_low_s", "band_high_s"])
        writer.writerows(rows)
    gpus = {"homogeneous": "T4", "heterogeneous": "V100-SXM2-16GB + T4"}
    common.write_measured(out, [(f"{r[0]} table {r[1]} tp {r[3]} pp {r[4]} dp {r[5]} mb {r[2]}", gpus[r[0]], r[6], r[7],
                                 r[8], r[9]) for r in rows])
    summary, failures = [], []
    for cluster in CLUSTERS:
        mine = [r for r in rows if r[0] == cluster]
        errors = [abs(r[7] / r[6] - 1) for r in mine]
        rho = spearman([r[6] for r in mine], [r[7] for r in mine])
        inside = sum(1 for r in mine if r[8] <= r[6] <= r[9])
        line = (f"{cluster}: mean error {100 * sum(errors) / len(errors):.1f}% (worst {100 * max(errors):.1f}%), "
                f"Spearman rho {rho:.2f}, {inside} of {len(mine)} inside their band")
        print(line)
        summary.append(line)
        if cluster in args.check and (100 * sum(errors) / len(errors) > args.max_mean_error or rho < args.min_rho):
            failures.append(f"{cluster}: beyond a mean error of {args.max_mean_error}% or below rho {args.min_rho}")
    if not args.no_figures:
        common.write_figures("amp_measured", "\n".join([
            common.markdown_table(["cluster", "AMP table or section", "configuration", "measured s", "predicted s", "band s",
                                   "inside the band"], shown),
            "", *[s + "." for s in summary]]))
    if failures:
        sys.exit("; ".join(failures))


if __name__ == "__main__":
    main()
