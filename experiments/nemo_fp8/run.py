#!/usr/bin/env python3
"""fp8 pre-training as NVIDIA's Megatron-Bridge recipes ran it (docs/fern/versions/0.4.2/pages/performance-summary.mdx
of NVIDIA-NeMo/Megatron-Bridge at 067f987, the 26.04.01 NeMo container's table, and its 25.11 table in
performance-summary-archive.mdx): Llama 3 8B on one node, Llama 3 70B and Llama 3.1 405B at 8,192 tokens on DGX
H100, DGX B200 and GB200 and GB300 NVL72, per-tensor current scaling (`tensorwise` here) and MXFP8, each with the
table's parallel layout and the recipes' settings (perf_recipes/ at the same commit), tokens per second per GPU
as published; and AMD's MLPerf Training v5.1 Llama 3.1 8B run on eight MI355X, through NeMo too. No row was used
to build anything: the fp8 products' ceilings are ml-engineering's MAMF sweeps, the B200's and GB200's at the
clock a step sustains (costmodel/sustained_clock.cpp).

The table gives neither the network nor the memory settings: DGX H100 and B200 nodes have eight 400 Gb/s NICs; a
GB200 or GB300 rack is one NVLink domain with a NIC a GPU (preset gb200_nvl72, docs/inputs.md), of which these runs
are taken to use 64 GPUs a rack (64 and 256 GPUs are not multiples of 72). Every row is simulated with
--allow-oom and its memory verdict reported: all of them ran.

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
# NVLink per GPU and direction; NICs per node (DGX H100/B200: eight 400 Gb/s; GB200: ConnectX-7 400 Gb/s a GPU;
# GB300: ConnectX-8 800 Gb/s a GPU, NVIDIA's GB300 NVL72 page). A rack is taken to lend 64 of its 72 GPUs.
SYSTEMS = {
    "DGX-H100": {"gpu": "H100-SXM5-80GB", "devices": 8, "intra_GBps": 450, "nic_gbps": 3200},
    "DGX-B200": {"gpu": "B200", "devices": 8, "intra_GBps": 900, "nic_gbps": 3200},
    "DGX-GB200": {"gpu": "GB200", "devices": 64, "intra_GBps": 900, "nic_gbps": 25600},
    "DGX-GB300": {"gpu": "GB300", "devices": 64, "intra_GBps": 900, "nic_gbps": 51200},
    # AMD's 8 x MI355X node: seven 153.6 GB/s Infinity Fabric links a GPU, 537.6 GB/s each way.
    "MI355X x8": {"gpu": "MI355X", "devices": 8, "intra_GBps": 537.6, "nic_gbps": 3200},
}
# (model, system, GPUs, recipe, GBS, MBS, TP, PP, CP, VP, FSDP, published tokens per second per GPU, container):
# every fp8 Llama pre-training row of the 26.04.01 table but three: the two Llama 3 70B FP8 rows run Megatron-FSDP
# with 20 blocks' activations offloaded to the host (not modelled), and Llama 3.1 405B MXFP8 on GB300 (tp 2,
# pp 8, cp 2, vp 4, 960 tokens/s) lowers to 32 million tasks, more than a replay holds; and the 25.11 table's
# Llama 3 8B rows on one node (performance-summary-archive.mdx), whose "FP8-CS (FP8-MX)" cells give both recipes.
RUNS = [
    ("Llama 3 70B", "DGX-H100", 64, "tensorwise", 256, 1, 4, 8, 1, 5, False, 1664, "26.04.01"),
    ("Llama 3 70B", "DGX-GB200", 64, "mxfp8", 256, 1, 2, 4, 1, 5, False, 3712, "26.04.01"),
    ("Llama 3 70B", "DGX-GB300", 64, "mxfp8", 256, 1, 1, 4, 1, 5, False, 4864, "26.04.01"),
    ("Llama 3.1 405B", "DGX-H100", 1024, "tensorwise", 1536, 1, 8, 8, 2, 8, False, 328, "26.04.01"),
    ("Llama 3.1 405B", "DGX-GB200", 256, "tensorwise", 1536, 1, 4, 16, 1, 4, False, 864, "26.04.01"),
    ("Llama 3.1 405B", "DGX-GB200", 256, "mxfp8", 1536, 1, 4, 16, 1, 8, False, 800, "26.04.01"),
    ("Llama 3.1 405B", "DGX-GB300", 256, "tensorwise", 1536, 1, 4, 8, 1, 4, False, 1024, "26.04.01"),
    ("Llama 3 8B", "DGX-H100", 8, "tensorwise", 128, 1, 1, 1, 1, 1, True, 14451, "25.11"),
    ("Llama 3 8B", "DGX-B200", 8, "tensorwise", 128, 2, 1, 1, 1, 1, False, 30624, "25.11"),
    ("Llama 3 8B", "DGX-B200", 8, "mxfp8", 128, 2, 1, 1, 1, 1, False, 29521, "25.11"),
    ("Llama 3 8B", "DGX-GB200", 8, "tensorwise", 128, 2, 1, 1, 1, 1, False, 31508, "25.11"),
    ("Llama 3 8B", "DGX-GB200", 8, "mxfp8", 128, 2, 1, 1, 1, 1, False, 29789, "25.11"),
    ("Llama 3 8B", "DGX-GB300", 8, "tensorwise", 128, 2, 1, 1, 1, 1, False, 37556, "25.11"),
    ("Llama 3 8B", "DGX-GB300", 8, "mxfp8", 128, 2, 1, 1, 1, 1, False, 36108, "25.11"),
    # AMD's MLPerf Training v5.1 Llama 3.1 8B submission, NeMo 2.5 on ROCm with Transformer Engine's fp8 GEMMs
    # (config_MI355X_1x8x1_8b.sh: TP 1, MBS 2, GBS 32, FP8_PARAMS=1; its recipe unstated: delayed, Transformer
    # Engine's default): 30.68 samples of 8,192 tokens a second over 8 GPUs, the runs' tracked throughput
    # (mlcommons/training_results_v5.1 441d65f, AMD/results/MI355X_EPYC_9575F_pytorch/llama31_8b).
    ("Llama 3.1 8B", "MI355X x8", 8, "delayed", 32, 2, 1, 1, 1, 1, False, 31416, "MLPerf v5.1"),
]


def simulate(out, index, run):
    model, system, gpus, recipe, gbs, mbs, tp, pp, cp, vp, fsdp = run[:11]
    s = SYSTEMS[system]
    nodes = -(-gpus // s["devices"])
    cluster = common.write_json(out, f"run{index}.cluster.json", {
        "name": f"{system.lower()}_{gpus}", "description": f"{system} as the Megatron-Bridge table ran it",
        "regions": [{"name": "fabric", "latency_us": 2, "nodes": [
            {"name": "node", "gpu": s["gpu"], "devices": min(gpus, s["devices"]), "repeat": nodes,
             "intra_node": {"bandwidth_GBps": s["intra_GBps"], "latency_us": 2, "fabric": "nvswitch"},
             "nic": {"bandwidth_gbps": s["nic_gbps"] * min(gpus, s["devices"]) / s["devices"], "latency_us": 3}}]}]})
    if model == "Llama 3.1 405B":
        model_args = ["--model", "preset:llama-3.1-405b", "--seq-len", str(SEQ)]
    else:
        with open(os.path.join(HF, "llama-3.1-8b.json" if model == "Llama 3.1 8B" else "llama-3-8b.json")) as f:
            config = json.load(f)
        if model == "Llama 3 70B":
            config.update(LLAMA3_70B)
        config["seq_len"] = SEQ
        model_args = ["--model", common.write_json(out, f"run{index}.model.json", config)]
    dp = gpus // (tp * pp * cp)
    # As the performance recipes set it (Megatron-Bridge perf_recipes/_common.py at 067f987): gradients reduced
    # in bf16 (_benchmark_common, _perf_precision: grad_reduce_in_fp32 False), fp8 weights gathered in fp8
    # (training/mixed_precision.py: fp8_param_gather True in both fp8 recipes), the distributed optimizer or,
    # where the table says FSDP, Megatron-FSDP (priced as ZeRO-3, with a 16-bit weight copy beside the fp8 one).
    plan = {"tp": tp, "pp": pp, "cp": cp, "dp": dp, "virtual_stages": vp, "micro_batch": mbs, "global_batch": gbs,
            "zero_stage": 3 if fsdp else 1, "schedule": "1f1b", "recompute": False, "dtype": "fp8",
            "fp8_recipe": recipe, "sequence_parallel": tp > 1,
            "framework": {"name": "megatron", "fp32_gradient_reduction": False}}
    if not fsdp:
        plan["fp8_param_gather"] = True
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
    rows, shown, measured, errors, by_gpu = [], [], [], [], {}
    for i, run in enumerate(RUNS):
        model, system, gpus, recipe, gbs, mbs, tp, pp, cp, vp, fsdp, published, container = run
        report = simulate(out, i, run)
        predicted = report["tokens_per_s"] / gpus
        error = predicted / published - 1
        errors.append(error)
        step = report["iteration_time_s"]
        measured.append((f"{model} {system} {gpus}", SYSTEMS[system]["gpu"], step * predicted / published, step,
                         *report["iteration_time_s_band"]))
        layout = f"tp {tp}, pp {pp}, cp {cp}, vp {vp}, mbs {mbs}, gbs {gbs}" + (f", FSDP {gpus}" if fsdp else "")
        by_gpu.setdefault(SYSTEMS[system]["gpu"], []).append(error)
        rows.append([container, model, system, gpus, recipe, layout, published, f"{predicted:.0f}",
                     report["memory_verdict"]])
        shown.append([container, model, system, common.thousands(gpus), recipe, layout, common.thousands(published),
                      f"{common.thousands(round(predicted))} ({common.signed_pct(100 * error)})",
                      report["memory_verdict"]])
        print(f"{model:14s} {system:9s} {gpus:5d} GPUs {recipe:10s}: published {published}, predicted {predicted:.0f} "
              f"tokens/s per GPU ({100 * error:+.1f}%), memory {report['memory_verdict']}", flush=True)
    common.write_csv(os.path.join(out, "results.csv"),
                     ["container", "model", "system", "gpus", "recipe", "layout", "published_tps", "predicted_tps",
                      "memory_verdict"],
                     rows)
    common.write_measured(out, measured)
    summary = " ".join([common.error_summary(errors)] +
                       [f"{gpu}: {common.signed_pct(100 * sum(e) / len(e))} over {len(e)}." for gpu, e in by_gpu.items()])
    print(summary)
    if not args.no_figures:
        common.write_figures("nemo_fp8", "\n".join([
            common.markdown_table(["container", "model", "system", "GPUs", "recipe", "layout",
                                   "published tokens/s per GPU",
                                   "predicted", "memory verdict"], shown), "", summary]))


if __name__ == "__main__":
    main()
