#!/usr/bin/env python3
"""The attention kernels' speed constants (costmodel/attention_speed.cpp), fitted to the published charts.

Each kernel's efficiency on causal attention is modelled as
    ceiling x head / (head + depth) x keys / (keys + overhead) x n / (n + 1)
where keys = s (n + 1) / (2 n) is what a query tile sees on average over n = ceil(s / 128) key tiles, and the last
factor is the diagonal's tiles, which the kernel computes whole while the papers count half the square. One
least-squares search (worst relative error) per kernel gives ceiling, depth and overhead. Charts that give
forward and backward together are split as the FlashAttention-3 paper's separate H100 charts split all three
kernels it times: the backward at 0.87 of the forward's rate (FA2 322 against 370, cuDNN 516 against 595, FA3
561 against 648 TFLOP/s at head size 128 and 16k tokens); forward + backward then runs at 3.5 / (1 + 2.5 / 0.87)
= 0.9035 of the forward's ceiling.

Sources (TFLOP/s, the bar labels, sequence lengths 512, 1k, 2k, 4k, 8k, 16k at 16k tokens a batch):
  - FlashAttention-2 paper (Dao 2023, arXiv 2307.08691), A100 80GB and H100 forward + backward, causal
    (the flash-attention repository's assets/flash2_a100_fwd_bwd_benchmark.png and flash2_h100_fwd_bwd_benchmark.png);
  - FlashAttention-3 paper (Shah et al. 2024, arXiv 2407.08608), H100 forward fp16, causal (assets/flash3_fp16_fwd.png).

Usage: fit.py (prints each kernel's constants and its worst error; takes a few seconds)."""

import math

SEQUENCES = [512, 1024, 2048, 4096, 8192, 16384]
FORWARD_BACKWARD = 3.5 / (1 + 2.5 / 0.87)

CHARTS = {
    # name: (peak TFLOP/s, forward only?, {head size: TFLOP/s per sequence length})
    "flash3 H100 (FA3 paper, forward)": (989, True, {
        64: [197, 265, 371, 420, 460, 473], 128: [292, 423, 521, 579, 602, 616], 256: [286, 427, 537, 612, 628, 642]}),
    "cudnn H100 (FA3 paper, forward; HetSim keeps the H200-measured figures)": (989, True, {
        64: [225, 288, 334, 363, 379, 388], 128: [315, 410, 484, 518, 529, 539], 256: [308, 391, 450, 483, 497, 509]}),
    "flash2 H100 (FA2 paper, forward + backward)": (989, False, {
        64: [141, 192, 232, 257, 273, 284], 128: [163, 221, 265, 294, 308, 328]}),
    "flash2 A100 (FA2 paper, forward + backward)": (312, False, {
        64: [88, 119, 140, 156, 165, 171], 128: [99, 133, 155, 173, 182, 189]}),
    "mem_efficient A100 (xformers in the FA2 paper, forward + backward)": (312, False, {
        64: [51, 60, 66, 68, 69, 67], 128: [58, 72, 82, 87, 91, 92]}),
    "triton A100 (FlashAttention's Triton kernel in the FA2 paper, forward + backward)": (312, False, {
        64: [59, 75, 79, 76, 79, 80], 128: [50, 61, 68, 74, 78, 80]}),
}


def shape_factor(depth, overhead, head, sequence):
    tiles = math.ceil(sequence / 128)
    keys = sequence * (tiles + 1) / (2 * tiles)
    return head / (head + depth) * keys / (keys + overhead) * tiles / (tiles + 1)


def fit(chart, peak):
    best = None
    for depth in range(0, 200):
        for overhead in range(0, 600, 4):
            points = [(v / peak, shape_factor(depth, overhead, h, s)) for h, row in chart.items()
                      for s, v in zip(SEQUENCES, row)]
            ceiling = math.exp(sum(math.log(e / f) for e, f in points) / len(points))
            worst = max(abs(ceiling * f / e - 1) for e, f in points)
            if best is None or worst < best[0]:
                best = (worst, ceiling, depth, overhead)
    return best


def main():
    for name, (peak, forward_only, chart) in CHARTS.items():
        worst, ceiling, depth, overhead = fit(chart, peak)
        forward = ceiling if forward_only else ceiling / FORWARD_BACKWARD
        print(f"{name}: forward ceiling {forward:.3f}, backward {0.87 * forward:.3f}, softmax depth {depth}, "
              f"query tile overhead {overhead} keys; worst error {100 * worst:.1f}%")


if __name__ == "__main__":
    main()
