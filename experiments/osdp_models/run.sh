#!/usr/bin/env bash
# OSDP on three GPT-like models and two memory limits: writes results.csv and throughput.svg under --out
# (default out/osdp_models) and the figures into docs/experiments.md (not with --no-figures).
# Usage: run.sh [--out DIR] [--no-figures]; HETSIM=/path/to/hetsim runs an installed build (hetsim-osdp-models
# beside it).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../common.sh"
experiment_setup osdp_models "$@"
"$bin/hetsim-osdp-models" "$out/results.csv"
gnuplot -e "csv='$out/results.csv'; out='$out/throughput.svg'" "$here/plot.gp"
echo "wrote $out/results.csv and $out/throughput.svg"
write_figures osdp_models
