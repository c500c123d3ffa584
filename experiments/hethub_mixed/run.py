#!/usr/bin/env python3
"""HETHUB §4: Llama-2-70B on a 1:5 mix of two accelerator types (16 nodes of 8 A100-40GB, 80 nodes of 8
MI250X; 200 Gb/s inside a type, 25 Gb/s between types), global batch 1,024 x 4,096 tokens.

The hethub planner's best plans are simulated with their non-uniform (speed-proportional) stages and again with
uniform stages (same degrees, placement and batch); non-uniform must win by at least 1.08x.
Writes out/hethub_mixed/results.csv and results.png."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(common.ROOT, "out", "hethub_mixed")
CLUSTER = os.path.join(HERE, "cluster.json")
MODEL = "preset:llama-2-70b"
TOP = 2
GLOBAL_BATCH = 1024
# 768 GPUs: pipelined ring phases keep each simulation near 15 s (see README, --pipelined-rings).
SIM = ["--pipelined-rings"]


def uniform_starts(layers, stages):
    base, extra = divmod(layers, stages)
    starts, first = [], 0
    for s in range(stages):
        starts.append(first)
        first += base + (1 if s < extra else 0)
    return starts


def main():
    os.makedirs(OUT, exist_ok=True)
    ranked = common.search(OUT, "hethub", "--cluster", CLUSTER, "--model", MODEL, "--global-batch", GLOBAL_BATCH,
                           "--planner", "hethub", "--top", TOP, *SIM)
    layers = 82  # Llama-2-70B: embedding, 80 blocks, head
    rows, ratios = [], []
    for c in ranked[:TOP]:
        if c["simulated_s"] is None:
            continue
        plan = dict(c["plan"])
        label = f'tp{plan["tp"]} pp{plan["pp"]} dp{plan["dp"]} mb{plan["micro_batch"]}'
        plan["stage_starts"] = uniform_starts(layers, plan["pp"])
        uniform = common.simulate(OUT, f"uniform-{c['rank']}", CLUSTER, MODEL, plan, "--allow-oom", *SIM)
        ratio = uniform["iteration_time_s"] / c["simulated_s"]
        ratios.append(ratio)
        rows.append([label, c["note"], f'{c["simulated_s"]:.4f}', f'{uniform["iteration_time_s"]:.4f}',
                     f"{ratio:.3f}", " ".join(map(str, c["plan"]["stage_starts"]))])
        print(f"{label}: non-uniform {c['simulated_s']:.3f} s, uniform {uniform['iteration_time_s']:.3f} s, "
              f"{ratio:.3f}x")
    results = os.path.join(OUT, "results.csv")
    common.write_csv(results, ["plan", "note", "non-uniform s/iteration", "uniform s/iteration", "speedup",
                               "non-uniform stage_starts"], rows)
    common.plot_bars(results, os.path.join(OUT, "results.png"),
                     "Llama-2-70B, 128 A100-40GB + 640 MI250X: non-uniform vs uniform stages (simulated)",
                     "seconds per iteration", 1, [3, 4])
    print(f"best plan: non-uniform stages are {ratios[0]:.3f}x faster than uniform (goal >= 1.08x)")
    return 0 if ratios and ratios[0] >= 1.08 else 1


if __name__ == "__main__":
    sys.exit(main())
