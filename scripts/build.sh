#!/usr/bin/env bash
# Configures and builds HetSim (Release) in build/. Extra arguments are passed to `cmake --build`.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" "$@"
