#!/usr/bin/env python3
"""Mixtral-8x7B (46.7 B parameters, 8 experts, top-2) on a mixed cluster: 4 DGX H100 and 4 DGX A100 80GB nodes
(a100_h100.json: 400 Gb/s per node inside each type, 100 Gb/s between them), global batch 256 x 4,096 tokens, bf16
(the config's torch_dtype), flash attention, routing taken as balanced.

For each planner that searches parallelism degrees (amp, hethub, megatron) the best plan is compared with the best
plan without expert parallelism (ep 1): the planner's own best (simulated), and its fastest ep-1 candidates by the
analytic estimate, the three best simulated. Without ep every device holds all 8 experts of its blocks: 45 B of the
46.7 B parameters are experts, so dense layouts need deeper pipelines or tensor parallelism to fit.
The model is the published config (tests/models/data/hf/mixtral-8x7b.json) at --seq-len 4096.
Usage: run.py [--out DIR] [--no-figures]; HETSIM= runs an installed hetsim.
Writes results.csv and results.png under --out (default out/moe_hetero), and the figures into docs/experiments.md
(not with --no-figures). Exits 1 if, for some planner, the best plan without expert parallelism is faster than its
best with it (expert parallelism is then never worth it here, which would contradict the memory argument above)."""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(common.ROOT, "out", "moe_hetero")  # --out replaces it
CLUSTER = os.path.join(HERE, "a100_h100.json")
MODEL = os.path.join(common.ROOT, "tests", "models", "data", "hf", "mixtral-8x7b.json")
SEQ_LEN = ["--seq-len", 4096]
MODEL_ARGS = ["--model", MODEL, *SEQ_LEN]
GLOBAL_BATCH = 256
PLANNERS = ("amp", "hethub", "megatron")
DENSE_TRIED = 3  # ep-1 candidates simulated, best estimates first


def describe(plan):
    text = f'tp{plan["tp"]} pp{plan["pp"]} dp{plan["dp"]}'
    if plan.get("virtual_stages", 1) > 1:
        text += f' v{plan["virtual_stages"]}'
    text += f' ep{plan.get("ep", 1)} mb{plan["micro_batch"]}'
    return text + (" recompute" if plan["recompute"] else "")


def compare(planner):
    """(best candidate, its simulated s, best ep-1 plan, its simulated s) for one planner."""
    ranked = common.search(OUT, planner, "--cluster", CLUSTER, *MODEL_ARGS, "--global-batch", GLOBAL_BATCH,
                           "--planner", planner, "--top", 1)
    best = ranked[0]
    dense = sorted((c for c in ranked if c["fits"] and c["plan"].get("ep", 1) == 1), key=lambda c: c["estimate_s"])
    best_dense, best_dense_s = None, float("inf")
    for i, candidate in enumerate(dense[:DENSE_TRIED]):
        report = common.simulate(OUT, f"{planner}-ep1-{i}", CLUSTER, MODEL, candidate["plan"], *SEQ_LEN)
        seconds = report["iteration_time_s"]
        if seconds < best_dense_s:
            best_dense, best_dense_s = candidate["plan"], seconds
    return best, best_dense, best_dense_s


def main():
    global OUT
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=OUT, help="output folder (default out/moe_hetero)")
    common.figures_argument(parser)
    args = parser.parse_args()
    OUT = os.path.abspath(args.out)
    os.makedirs(OUT, exist_ok=True)
    rows, worth_it, shown = [], True, []
    for planner in PLANNERS:
        best, dense, dense_s = compare(planner)
        ep_s = best["simulated_s"]
        gain = dense_s / ep_s
        worth_it = worth_it and best["plan"].get("ep", 1) > 1 and gain > 1
        rows.append([planner, describe(best["plan"]), f"{ep_s:.4f}", describe(dense) if dense else "none fits",
                     f"{dense_s:.4f}" if dense else "", f"{gain:.3f}"])
        shown.append([planner, common.describe_plan(best["plan"]), f"{ep_s:.2f}",
                      common.describe_plan(dense) if dense else "none fits", f"{dense_s:.2f}" if dense else "—",
                      f"{gain:.2f}×"])
        print(f"{planner}: best {describe(best['plan'])} {ep_s:.3f} s; without ep "
              f"{describe(dense) if dense else 'nothing fits'} {dense_s:.3f} s; {gain:.2f}x", flush=True)
    results = os.path.join(OUT, "results.csv")
    common.write_csv(results, ["planner", "best plan", "best s/iteration", "best plan without ep",
                               "without ep s/iteration", "gain of ep"], rows)
    common.plot_bars(results, os.path.join(OUT, "results.png"),
                     "Mixtral-8x7B, 32 H100 + 32 A100: with and without expert parallelism (simulated)",
                     "seconds per iteration", 1, [3, 5])
    if not args.no_figures:
        common.write_figures("moe_hetero", common.markdown_table(
            ["planner", "best plan", "s/iteration", "best without ep", "s/iteration", "gain"], shown))
    return 0 if worth_it else 1


if __name__ == "__main__":
    sys.exit(main())
