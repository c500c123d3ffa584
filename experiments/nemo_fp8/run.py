#!/usr/bin/env python3
"""fp8 pre-training as NVIDIA's Megatron-Bridge recipes ran it (docs/fern/versions/0.4.2/pages/performance-summary.mdx
of NVIDIA-NeMo/Megatron-Bridge at 067f987, the 26.04.01 NeMo container's table): Llama 3 70B and Llama 3.1 405B
at 8,192 tokens on DGX H100 (FP8: per-tensor current scaling, `tensorwise` here) and on GB200 NVL72 (MXFP8),
each with the table's parallel layout, tokens per second per GPU as published. No row was used to build
anything: the fp8 products' ceilings are ml-engineering's MAMF sweeps.

The table gives neither the network nor the memory settings: DGX H100 nodes have eight 400 Gb/s NICs; a GB200
rack is one NVLink domain with a 400 Gb/s NIC a GPU (preset gb200_nvl72, docs/inputs.md), of which these runs are
taken to use 64 GPUs a rack (64 and 256 GPUs are not multiples of 72). HetSim puts
more on each GPU than it has on some rows (recompute or offloading the table does not state): every row is
simulated with --allow-oom and its verdict reported.

Usage: run.py [--out DIR] [--no-figures]
Writes results.csv and measured.csv under --out (default out/nemo_fp8) and the figures into docs/experiments.md
(not with --no-figures)."""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402

OUT = os.path.join(common.ROOT, "out", "nemo_fp8")  # --out replaces it
HF = os.path.join(common.ROOT, "tests", "models", "data", "hf")
SEQ = 8192
# Llama 3 70B's dimensions (Meta's config: hidden 8,192, MLP 28,672, 64 heads, 8 key-value heads, 80 layers) on
# the 8B config; Llama 3.1 405B is a preset.
LLAMA3_70B = {"hidden_size": 8192, "intermediate_size": 28672, "num_attention_heads": 64, "num_key_value_heads": 8,
              "num_hidden_layers": 80}
SYSTEMS = {
    "DGX-H100": {"gpu": "H100-SXM5-80GB", "devices": 8, "intra_GBps": 450, "nic_gbps": 3200},
    "DGX-GB200": {"gpu": "GB200", "devices": 64, "intra_GBps": 900, "nic_gbps": 25600},
}
# (model, system, GPUs, recipe, GBS, MBS, TP, PP, CP, VP, published tokens per second per GPU)
RUNS = [
    ("Llama 3 70B", "DGX-H100", 64, "tensorwise", 256, 1, 4, 8, 1, 5, 1664),
    ("Llama 3 70B", "DGX-GB200", 64, "mxfp8", 256, 1, 2, 4, 1, 5, 3712),
    ("Llama 3.1 405B", "DGX-H100", 1024, "tensorwise", 1536, 1, 8, 8, 2, 8, 328),
    ("Llama 3.1 405B", "DGX-GB200", 256, "mxfp8", 1536, 1, 4, 16, 1, 8, 800),
]


def simulate(out, index, run):
    model, system, gpus, recipe, gbs, mbs, tp, pp, cp, vp, _ = run
    s = SYSTEMS[system]
    nodes = -(-gpus // s["devices"])
    cluster = common.write_json(out, f"run{index}.cluster.json", {
        "name": f"{system.lower()}_{gpus}", "description": f"{system} as the Megatron-Bridge table ran it",
        "regions": [{"name": "fabric", "latency_us": 2, "nodes": [
            {"name": "node", "gpu": s["gpu"], "devices": min(gpus, s["devices"]), "repeat": nodes,
             "intra_node": {"bandwidth_GBps": s["intra_GBps"], "latency_us": 2, "fabric": "nvswitch"},
             "nic": {"bandwidth_gbps": s["nic_gbps"] * min(gpus, s["devices"]) / s["devices"], "latency_us": 3}}]}]})
    if model == "Llama 3 70B":
        with open(os.path.join(HF, "llama-3-8b.json")) as f:
            config = json.load(f)
        config.update(LLAMA3_70B)
        config["seq_len"] = SEQ
        model_args = ["--model", common.write_json(out, f"run{index}.model.json", config)]
    else:
        model_args = ["--model", "preset:llama-3.1-405b", "--seq-len", str(SEQ)]
    dp = gpus // (tp * pp * cp)
    plan = {"tp": tp, "pp": pp, "cp": cp, "dp": dp, "virtual_stages": vp, "micro_batch": mbs, "global_batch": gbs,
            "zero_stage": 1, "schedule": "1f1b", "recompute": False, "dtype": "fp8", "fp8_recipe": recipe,
            "sequence_parallel": tp > 1, "framework": {"name": "megatron"}}
    name = f"run{index}"
    plan_file = common.write_json(out, name + ".plan.json", plan)
    report = os.path.join(out, name + ".report.json")
    common.hetsim("simulate", "--cluster", cluster, *model_args, "--plan", plan_file, "--report", report,
                  "--allow-oom")
    with open(report) as f:
        return json.load(f)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=OUT)
    common.figures_argument(parser)
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    rows, shown, measured, errors = [], [], [], []
    for i, run in enumerate(RUNS):
        model, system, gpus, recipe, gbs, mbs, tp, pp, cp, vp, published = run
        report = simulate(out, i, run)
        predicted = report["tokens_per_s"] / gpus
        error = predicted / published - 1
        errors.append(error)
        step = report["iteration_time_s"]
        measured.append((f"{model} {system} {gpus}", SYSTEMS[system]["gpu"], step * predicted / published, step,
                         *report["iteration_time_s_band"]))
        layout = f"tp {tp}, pp {pp}, cp {cp}, vp {vp}, mbs {mbs}, gbs {gbs}"
        rows.append([model, system, gpus, recipe, layout, published, f"{predicted:.0f}", report["memory_verdict"]])
        shown.append([model, system, common.thousands(gpus), recipe, layout, common.thousands(published),
                      f"{common.thousands(round(predicted))} ({common.signed_pct(100 * error)})",
                      report["memory_verdict"]])
        print(f"{model:14s} {system:9s} {gpus:5d} GPUs {recipe:10s}: published {published}, predicted {predicted:.0f} "
              f"tokens/s per GPU ({100 * error:+.1f}%), memory {report['memory_verdict']}", flush=True)
    common.write_csv(os.path.join(out, "results.csv"),
                     ["model", "system", "gpus", "recipe", "layout", "published_tps", "predicted_tps", "memory_verdict"],
                     rows)
    common.write_measured(out, measured)
    summary = common.error_summary(errors)
    print(summary)
    if not args.no_figures:
        common.write_figures("nemo_fp8", "\n".join([
            common.markdown_table(["model", "system", "GPUs", "recipe", "layout", "published tokens/s per GPU",
                                   "predicted", "memory verdict"], shown), "", summary]))


if __name__ == "__main__":
    main()
