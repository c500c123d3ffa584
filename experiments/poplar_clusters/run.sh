#!/usr/bin/env bash
# Poplar's three clusters: writes results.csv and throughput.svg under --out (default out/poplar_clusters) and the
# figures into docs/experiments.md (not with --no-figures). Exits 1, after writing them, when poplar misses its
# goal (hetsim-poplar-clusters says which).
# Usage: run.sh [--out DIR] [--no-figures]; HETSIM=/path/to/hetsim runs an installed build (hetsim-poplar-clusters
# beside it).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../common.sh"
experiment_setup poplar_clusters "$@"
status=0
"$bin/hetsim-poplar-clusters" "$out/results.csv" || status=$?
[ "$status" -le 1 ] || exit "$status"
gnuplot -e "csv='$out/results.csv'; out='$out/throughput.svg'" "$here/plot.gp"
echo "wrote $out/results.csv and $out/throughput.svg"
write_figures poplar_clusters
exit "$status"
