#!/usr/bin/env bash
# Sets up, builds everything (libraries, CLI, tests, benchmarks) and runs the test suite: every test but those
# labelled long, which time the machine itself and need a quiet one (`ctest --test-dir build -L long`).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
ctest --test-dir build --output-on-failure --timeout 900 --label-exclude long
