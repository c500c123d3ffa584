#!/usr/bin/env bash
# Sets up, builds and runs the default scenario: GPT-3 1.3B on 64 V100 in 8 regions (case5_worldwide_geo),
# writing the report and a Perfetto timeline to out/.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh --target hetsim
mkdir -p out
./build/cli/hetsim simulate --report out/default_report.json --trace out/default_trace.json
