#!/usr/bin/env bash
# Builds everything with AddressSanitizer and UndefinedBehaviorSanitizer in build-sanitize/ and runs the whole
# test suite there: any report fails the test that caused it. Extra arguments go to ctest (e.g. -R exec).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
# -O1 with line tables only: the level ASan's documentation recommends, and what a report's stack needs; it
# builds in about half the time of -O2 -g on two cores.
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DHETSIM_SANITIZE=address,undefined -DHETSIM_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build-sanitize -j "$(nproc)"
# SimGrid switches stacks for its actors without ASan's fiber annotations: ASan is told not to track frames
# across the switches, and to ignore what libsimgrid's own libc calls trip over (asan_suppressions.txt). Leaks
# are reported at exit like any other error.
export ASAN_OPTIONS="suppressions=$PWD/scripts/asan_suppressions.txt:detect_stack_use_after_return=0"
ASAN_OPTIONS+=":detect_leaks=1:abort_on_error=1:halt_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
ctest --test-dir build-sanitize --output-on-failure --timeout 2700 "$@"
