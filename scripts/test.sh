#!/usr/bin/env bash
# Sets up, builds everything (libraries, CLI, tests, benchmarks) and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
ctest --test-dir build --output-on-failure --timeout 900
