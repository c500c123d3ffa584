#!/usr/bin/env bash
# OSDP on three GPT-like models and two memory limits: writes results.csv and throughput.svg here.
# Usage: run.sh [BUILD_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-$here/../../build}"
"$build/experiments/osdp_models" "$here/results.csv"
gnuplot -e "csv='$here/results.csv'; out='$here/throughput.svg'" "$here/plot.gp"
echo "wrote $here/results.csv and $here/throughput.svg"
