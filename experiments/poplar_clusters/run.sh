#!/usr/bin/env bash
# Poplar's three clusters: writes results.csv and throughput.svg here. Usage: run.sh [BUILD_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-$here/../../build}"
"$build/experiments/poplar_clusters" "$here/results.csv"
gnuplot -e "csv='$here/results.csv'; out='$here/throughput.svg'" "$here/plot.gp"
echo "wrote $here/results.csv and $here/throughput.svg"
