#!/usr/bin/env python3
"""The figures of the shell experiments (poplar_clusters, osdp_models, geo_decentralized), from the CSV files
their run just wrote under OUT_DIR, into their block of docs/experiments.md (common.write_figures). Their
run.sh calls it through common.sh's write_figures.

Usage: figures.py NAME OUT_DIR [--seconds S] [--load L] [--note TEXT] -- COMMAND...
(COMMAND: the experiment's command line, as run, for the block's last line.)"""

import argparse
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def ratio_range(values):
    low, high = f"{min(values):.3f}", f"{max(values):.3f}"
    return f"{low}×" if low == high else f"{low}–{high}×"


def poplar_clusters(out):
    """Per cluster and ZeRO stage: TFLOP/s of poplar, deepspeed and whale, and poplar's ratios; the ranges and
    each cluster's best stage (poplar's fastest) against the goal that poplar_clusters.cpp checks."""
    rows = read_csv(os.path.join(out, "results.csv"))
    table = [[r["cluster"], r["zero_stage"], r["poplar_tflops"], r["deepspeed_tflops"], r["whale_tflops"],
              f'{float(r["poplar_vs_deepspeed"]):.3f}×', f'{float(r["poplar_vs_whale"]):.3f}×'] for r in rows]
    clusters, best = [], {}
    for r in rows:
        name = r["cluster"]
        if name not in best:
            clusters.append(f'{name} is {r["type1"]} + {r["type2"]}')
        if name not in best or float(r["poplar_tflops"]) > float(best[name]["poplar_tflops"]):
            best[name] = r
    every_cell = all(float(r["poplar_tflops"]) >= max(float(r["deepspeed_tflops"]), float(r["whale_tflops"]))
                     for r in rows)
    short = [name for name, r in best.items() if float(r["poplar_vs_deepspeed"]) < 1.02]
    goal = ("both hold" if every_cell and not short else
            "missed" + (f" in cluster {', '.join(short)}'s best stage" if short else "") +
            ("" if every_cell else " (poplar below a baseline in some cell)"))
    stages = ", ".join(f'{name} {float(r["poplar_vs_deepspeed"]):.3f}× (ZeRO-{r["zero_stage"]})'
                       for name, r in best.items())
    return "\n".join([
        common.markdown_table(["cluster", "ZeRO stage", "poplar TFLOP/s", "deepspeed", "whale", "poplar / deepspeed",
                               "poplar / whale"], table),
        "",
        f"{'; '.join(clusters)}. Poplar is {ratio_range([float(r['poplar_vs_deepspeed']) for r in rows])} deepspeed "
        f"and {ratio_range([float(r['poplar_vs_whale']) for r in rows])} whale; its best stage per cluster is "
        f"{stages} deepspeed. The goal (poplar ≥ both baselines in every cell, ≥ 1.02× deepspeed in each best "
        f"stage): {goal}.",
    ])


def osdp_models(out):
    """Per model and memory limit: samples/s of osdp, ZeRO-3 and plain data parallelism, and osdp's ratio and
    plan; the ranges of the ratios."""
    rows = read_csv(os.path.join(out, "results.csv"))
    table = [[r["model"], f'{r["params_b"]} B', f'{r["limit_gib"]} GiB', r["osdp_samples_per_s"],
              r["zero3_samples_per_s"], r["dp_samples_per_s"] or "does not fit",
              f'{float(r["osdp_vs_zero3"]):.3f}×', f'{float(r["osdp_vs_dp"]):.3f}×' if r["osdp_vs_dp"] else "—",
              r["osdp_plan"]] for r in rows]
    vs_zero3 = [float(r["osdp_vs_zero3"]) for r in rows]
    vs_dp = [float(r["osdp_vs_dp"]) for r in rows if r["osdp_vs_dp"]]
    line = f"osdp is {ratio_range(vs_zero3)} ZeRO-3 in the {len(rows)} cells"
    if vs_dp:
        line += f", and {ratio_range(vs_dp)} data parallelism in the {len(vs_dp)} where that fits"
    return "\n".join([
        common.markdown_table(["model", "parameters", "memory limit", "osdp samples/s", "ZeRO-3", "data parallel",
                               "osdp / ZeRO-3", "osdp / data parallel", "osdp's plan"], table),
        "", line + ".",
    ])


GEO_CASES = {
    "case1_datacenter_on_demand": "1 data centre, on demand",
    "case2_datacenter_spot": "2 data centre, spot (48 GPUs)",
    "case3_multi_datacenter": "3 two data centres",
    "case4_regional_geo": "4 regional geo",
    "case5_worldwide_geo": "5 world-wide geo",
}


def seconds_text(value):
    """Seconds as the table shows them: three significant figures under 100, whole seconds from there."""
    if value == "":
        return "—"
    x = float(value)
    return f"{x:.3g}" if x < 100 else common.thousands(round(x))


def geo_decentralized(out):
    """Per case (summary.csv): the scheduler's time and depth, random layouts of that depth, the grid's best point,
    ZeRO-3, and the scheduler's speed-ups."""
    table = []
    for r in read_csv(os.path.join(out, "summary.csv")):
        case = r["cluster"].removeprefix("preset:")
        scheduler = f'{seconds_text(r["scheduler_s"])} ({r["scheduler_pp"]})' if r["scheduler_s"] else "—"
        table.append([GEO_CASES.get(case, case), scheduler, seconds_text(r["random_s"]), seconds_text(r["grid_s"]),
                      seconds_text(r["zero3_s"]),
                      *(f"{float(r[k]):.2f}×" if r[k] else "—"
                        for k in ("random_over_scheduler", "grid_over_scheduler"))])
    return "\n".join([
        "Iteration times simulated in SimGrid, seconds:",
        "",
        common.markdown_table(["case", "scheduler (pp)", "random layout, same pp (3 seeds)",
                               "best grid point (3 layouts)", "ZeRO-3", "random / scheduler", "grid / scheduler"],
                              table),
    ])


FIGURES = {"poplar_clusters": poplar_clusters, "osdp_models": osdp_models, "geo_decentralized": geo_decentralized}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name", choices=sorted(FIGURES))
    parser.add_argument("out", help="the experiment's output folder")
    parser.add_argument("--seconds", type=float, help="how long the experiment ran")
    parser.add_argument("--load", default="", help="the load average when it started")
    parser.add_argument("--note", default="", help="joins the machine's description (e.g. 2 MPI ranks)")
    parser.add_argument("command", nargs="+", help="the experiment's command line")
    args = parser.parse_args()
    common.write_figures(args.name, FIGURES[args.name](args.out), seconds=args.seconds,
                         command=common.run_command(args.command), load=float(args.load) if args.load else None,
                         note=args.note or None, script=common.run_command(args.command[:1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
