#!/usr/bin/env bash
# Poplar's three clusters: writes results.csv and throughput.svg under --out (default out/poplar_clusters).
# Usage: run.sh [--out DIR]; HETSIM=/path/to/hetsim runs an installed build (hetsim-poplar-clusters beside it).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../common.sh"
experiment_setup poplar_clusters "$@"
"$bin/hetsim-poplar-clusters" "$out/results.csv"
gnuplot -e "csv='$out/results.csv'; out='$out/throughput.svg'" "$here/plot.gp"
echo "wrote $out/results.csv and $out/throughput.svg"
