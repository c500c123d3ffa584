#!/usr/bin/env python3
"""torchtitan's FSDP2 runs on 64 A100 (docs/performance.md at torchtitan 0413364, its first published
figures): Llama 3 8B and 70B at 8,192 tokens, Llama 2 13B and 70B at 4,096, bf16, local batch 1 or 2, each with
its activation checkpointing (none, torchtitan's op-level selective policy, or full), tokens per second per GPU
as published. The table's "selective layer" rows (every other block checkpointed whole) are left out: HetSim
does not model layer-level selective checkpointing.

The page names the GPUs (A100 80GB) but not their network; each node here has eight 200 Gb/s NICs, as DGX A100
nodes do, unless --nic-gbps and --transport say otherwise (docs/experiments.md gives an AWS p4de's 400 Gb/s EFA). Under FSDP at these sizes the gathers and reduce-scatters take far less than the compute they overlap
(the report's exposed communication is printed), so the rows check the A100's compute as torchtitan runs it.

Usage: run.py [--out DIR] [--no-figures] [--nic-gbps GBPS] [--transport infiniband|efa]
Writes results.csv under --out (default out/torchtitan_fsdp) and the figures into docs/experiments.md (not with
--no-figures)."""

import argparse
import csv
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402

OUT = os.path.join(common.ROOT, "out", "torchtitan_fsdp")  # --out replaces it
HF = os.path.join(common.ROOT, "tests", "models", "data", "hf")
GPUS = 64
# The Hugging Face configs of these models, from the 8B / 7B ones with the larger models' published dimensions
# (Llama 2 paper, Table 1 and Meta's config files: 13B hidden 5,120, MLP 13,824, 40 heads and layers; 70B hidden
# 8,192, MLP 28,672, 64 heads, 8 key-value heads, 80 layers; Llama 3 70B the same dimensions).
# "fused_norm": torchtitan's configs at 0413364 run the 8B and 13B with norm_type = "fused_rmsnorm" (its Triton
# kernel) and the 70B ones with "rmsnorm", the op-by-op expression (train_configs/llama*_*.toml, line 21).
MODELS = {
    "Llama 3 8B": ("llama-3-8b.json", {"fused_norm": True}),
    "Llama 3 70B": ("llama-3-8b.json", {"hidden_size": 8192, "intermediate_size": 28672, "num_attention_heads": 64,
                                        "num_key_value_heads": 8, "num_hidden_layers": 80}),
    "Llama 2 13B": ("llama-2-7b.json", {"hidden_size": 5120, "intermediate_size": 13824, "num_attention_heads": 40,
                                        "num_key_value_heads": 40, "num_hidden_layers": 40, "fused_norm": True}),
    "Llama 2 70B": ("llama-2-7b.json", {"hidden_size": 8192, "intermediate_size": 28672, "num_attention_heads": 64,
                                        "num_key_value_heads": 8, "num_hidden_layers": 80}),
}
# (model, tokens, local batch, activation checkpointing, published tokens per second per GPU)
RUNS = [
    ("Llama 3 8B", 8192, 1, "selective", 2973),
    ("Llama 3 70B", 8192, 1, "full", 331),
    ("Llama 2 13B", 4096, 2, "none", 2162),
    ("Llama 2 13B", 4096, 2, "selective", 1904),
    ("Llama 2 70B", 4096, 1, "selective", 355),
    ("Llama 2 70B", 4096, 2, "full", 353),
]
RECOMPUTE = {"none": False, "selective": "selective", "full": True}


def simulate(out, index, model, tokens, batch, checkpointing, nic):
    base, overrides = MODELS[model]
    with open(os.path.join(HF, base)) as f:
        config = json.load(f)
    config.update(overrides)
    config["seq_len"] = tokens
    name = f"run{index}"
    model_file = common.write_json(out, name + ".model.json", config)
    cluster = common.write_json(out, "cluster.json", {
        "name": "a100_64", "description": "8 nodes of 8 A100 80GB on NVSwitch, eight 200 Gb/s NICs each (assumed)",
        "regions": [{"name": "r", "latency_us": 2, "nodes": [
            {"name": "node", "gpu": "A100-SXM4-80GB", "devices": 8, "repeat": GPUS // 8,
             "intra_node": {"bandwidth_GBps": 300, "latency_us": 2},
             "nic": nic}]}]})
    # FSDP2 with torchtitan's MixedPrecisionPolicy (bf16 parameters, fp32 reduction), its selective policy.
    plan = {"tp": 1, "pp": 1, "dp": GPUS, "micro_batch": batch, "global_batch": GPUS * batch, "zero_stage": 3,
            "recompute": RECOMPUTE[checkpointing], "dtype": "bf16",
            "framework": {"name": "fsdp", "autocast": False, "fp32_gradient_reduction": True}}
    return common.simulate(out, name, cluster, model_file, plan, "--allow-oom")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=OUT)
    common.figures_argument(parser)
    parser.add_argument("--nic-gbps", type=float, default=1600,
                        help="each node's network in Gb/s (default 1,600: eight 200 Gb/s NICs, as a DGX A100)")
    parser.add_argument("--transport", choices=["infiniband", "efa"], default="infiniband",
                        help="how NCCL crosses it (efa: an AWS p4de's four 100 Gb/s EFA ports)")
    args = parser.parse_args()
    nic = {"bandwidth_gbps": args.nic_gbps, "latency_us": 3, "transport": args.transport}
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    rows, shown, errors, measured = [], [], [], []
    for i, (model, tokens, batch, checkpointing, published) in enumerate(RUNS):
        report = simulate(out, i, model, tokens, batch, checkpointing, nic)
        predicted = report["tokens_per_s"] / GPUS
        device = report["devices"][0]
        peak = report["stages"][0]["peak_memory_bytes"] / 2**30
        error = predicted / published - 1
        errors.append(error)
        # The published tokens per second per GPU give the measured step: the simulated one times predicted / published.
        step = report["iteration_time_s"]
        measured.append((f"{model} {tokens} tokens batch {batch} {checkpointing}", "A100-SXM4-80GB",
                         step * predicted / published, step, *report["iteration_time_s_band"]))
        rows.append([model, tokens, batch, checkpointing, published, f"{predicted:.0f}", f"{peak:.1f}",
                     report["memory_verdict"]])
        shown.append([model, common.thousands(tokens), batch, checkpointing, common.thousands(published),
                      f"{common.thousands(round(predicted))} ({common.signed_pct(100 * error)})",
                      f"{device['exposed_comm_s']:.2f} of {report['iteration_time_s']:.2f} s", f"{peak:.1f}",
                      report["memory_verdict"]])
        print(f"{model:12s} {tokens:5d} tokens, batch {batch}, {checkpointing:9s}: published {published}, predicted "
              f"{predicted:.0f} tokens/s per GPU ({100 * error:+.1f}%), peak {peak:.1f} GiB "
              f"({report['memory_verdict']})", flush=True)
    with open(os.path.join(out, "results.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["model", "tokens", "local_batch", "checkpointing", "published_tps", "predicted_tps",
                         "peak_gib", "memory_verdict"])
        writer.writerows(rows)
    common.write_measured(out, measured)
    summary = common.error_summary(errors)
    print(summary)
    if not args.no_figures:
        common.write_figures("torchtitan_fsdp", "\n".join([
            common.markdown_table(["model", "tokens", "local batch", "checkpointing", "published tokens/s per GPU",
                                   "predicted", "exposed communication", "peak GiB", "memory verdict"], shown),
            "", summary]))


if __name__ == "__main__":
    main()
