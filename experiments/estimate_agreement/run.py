#!/usr/bin/env python3
"""The analytic estimate against the simulator: on every cluster preset, each planner's best plan (what
`hetsim search --top 1` ranks first by the estimate) is simulated, and the estimate must be within --max-error
of the simulated iteration time, so that `--top 0` ranks by something true. GPT-3 1.3B at a global batch of
1,536 sequences on the 48- and 64-GPU presets, Llama-2-70B at 256 on the 768-GPU DGX preset; simulated with pipelined
rings and the α-β model inside nodes, as the large sweeps are.

Usage: run.py [--planners amp,megatron,...] [--clusters NAME,...] [--quick] [--out DIR] [--max-error PCT]
              [--no-figures]
--quick leaves out the pairs in SLOW, whose best plan takes a minute or more to replay on two cores.
Writes results.csv under --out (default out/estimate_agreement), and the figures into docs/experiments.md (not
with --no-figures); with --max-error exits 1 when any pair is further off than that."""

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402

OUT = os.path.join(common.ROOT, "out", "estimate_agreement")  # --out replaces it
CLUSTERS = ["case1_datacenter_on_demand", "case2_datacenter_spot", "case3_multi_datacenter", "case4_regional_geo",
            "case5_worldwide_geo", "fluidstack_a40", "dgx_a100_768"]
PLANNERS = ["amp", "megatron", "hethub", "dtfm", "zero3", "deepspeed"]
SLOW = {("dgx_a100_768", "megatron"), ("dgx_a100_768", "dtfm")}  # 49 s and 24 s of a 130 s run, quiet 2 cores
WORKLOAD = {"dgx_a100_768": ("llama-2-70b", 256)}  # every other preset: gpt3-1.3b at 1,536 (divisible by 48 and 64 devices)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--planners", default=",".join(PLANNERS))
    parser.add_argument("--clusters", default=",".join(CLUSTERS))
    parser.add_argument("--quick", action="store_true", help="leave out the slow pairs (SLOW)")
    parser.add_argument("--out", default=OUT)
    parser.add_argument("--max-error", type=float, help="exit 1 when |estimate / simulated - 1| exceeds PCT")
    common.figures_argument(parser)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    rows, worst, worst_pair, cells = [], 0.0, None, {}  # cells: (cluster, planner) -> what the block shows
    for cluster in args.clusters.split(","):
        model, batch = WORKLOAD.get(cluster, ("gpt3-1.3b", 1536))
        for planner in args.planners.split(","):
            if args.quick and (cluster, planner) in SLOW:
                cells[cluster, planner] = "not run (--quick)"
                continue
            start = time.time()
            out = os.path.join(args.out, f"{cluster}-{planner}.json")
            command = [common.hetsim_binary(), "search", "--cluster", f"preset:{cluster}", "--model",
                       f"preset:{model}", "--planner", planner, "--global-batch", str(batch), "--top", "1",
                       "--pipelined-rings", "--analytic-intra-node", "--out", out]
            run = subprocess.run(command, capture_output=True, text=True)
            if run.returncode == 2:  # the planner refuses this job (e.g. a batch it cannot split): nothing to compare
                print(f"{cluster} {planner}: refused: {run.stderr.strip()}", flush=True)
                rows.append([cluster, planner, "", "", ""])
                cells[cluster, planner] = "refused"
                continue
            if run.returncode != 0:
                sys.stderr.write(run.stdout + run.stderr)
                raise SystemExit(f"{' '.join(command)} exited {run.returncode}")
            with open(out) as f:
                best = json.load(f)[0]
            if not best.get("fits", True) or best.get("simulated_s") is None:
                print(f"{cluster} {planner}: no plan that fits ({best.get('note', '')})", flush=True)
                rows.append([cluster, planner, "", "", ""])
                cells[cluster, planner] = "nothing fits"
                continue
            estimate, simulated = best["estimate_s"], best["simulated_s"]
            error = 100 * (estimate / simulated - 1)
            if abs(error) >= worst:
                worst, worst_pair = abs(error), (planner, cluster)
            cells[cluster, planner] = common.signed_pct(error)
            print(f"{cluster} {planner}: estimate {estimate:.4g} s, simulated {simulated:.4g} s, "
                  f"error {error:+.1f}% ({time.time() - start:.1f} s)", flush=True)
            rows.append([cluster, planner, f"{estimate:.6g}", f"{simulated:.6g}", f"{error:.2f}"])
    common.write_csv(os.path.join(args.out, "results.csv"),
                     ["cluster", "planner", "estimate_s", "simulated_s", "error_pct"], rows)
    print(f"worst |error|: {worst:.1f}%")
    if not args.no_figures:
        planners = args.planners.split(",")
        common.write_figures("estimate_agreement", "\n".join([
            "Estimate / simulated − 1 of each planner's best plan, per cluster preset:",
            "",
            common.markdown_table(["cluster preset", *planners],
                                  [[cluster, *(cells[cluster, p] for p in planners)]
                                   for cluster in args.clusters.split(",")]),
            "",
            f"Worst {worst:.1f}%" + (f" ({worst_pair[0]} on {worst_pair[1]})." if worst_pair else "."),
        ]))
    if args.max_error is not None and worst > args.max_error:
        print(f"FAIL: an estimate is {worst:.1f}% from its simulation (limit {args.max_error}%)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
