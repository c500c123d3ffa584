#!/usr/bin/env bash
# Coverage-guided fuzzing with libFuzzer: builds build-fuzz/ with clang, ASan and UBSan, then runs the target of
# one input kind on its seeds (fuzz/seeds, fuzz/regressions and the files hetsim_fuzz starts from).
#   scripts/fuzz.sh KIND [libFuzzer options, e.g. -max_total_time=600]
# KIND: cluster, model, plan, sweep, calibration, layer_profile, device_profile, trace, export, pytorch_trace,
# failures, slowdowns, jobs or all (each kind in turn, so give -max_total_time or -runs). Crashing inputs are written to
# build-fuzz/crashes/KIND/; keep each one in fuzz/regressions/KIND/ once fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:?usage: scripts/fuzz.sh KIND [libFuzzer options]}
shift
kinds=("$kind")
[ "$kind" = all ] && kinds=(cluster model plan sweep calibration layer_profile device_profile trace export pytorch_trace
  failures slowdowns jobs)
./scripts/setup.sh
if ! command -v clang++ >/dev/null; then
  if [ "$(id -u)" -eq 0 ]; then apt-get install -y -qq clang; else sudo apt-get install -y -qq clang; fi
fi
# -O1 with line tables, as in sanitize.sh: what libFuzzer's and ASan's documentation recommend.
CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DHETSIM_LIBFUZZER=ON -DHETSIM_SANITIZE=address,undefined -DHETSIM_BUILD_TESTS=OFF -DHETSIM_BUILD_BENCHMARKS=OFF \
  >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target "${kinds[@]/#/fuzz_}" hetsim_fuzz
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1"
status=0
for k in "${kinds[@]}"; do
  corpus=build-fuzz/corpus/$k
  mkdir -p "$corpus" "build-fuzz/crashes/$k"
  # The seeds hetsim_fuzz mutates, listed by the harness itself.
  build-fuzz/fuzz/hetsim_fuzz --list-seeds "$k" | while read -r seed; do cp "$seed" "$corpus/"; done
  "build-fuzz/fuzz/fuzz_$k" "$corpus" -artifact_prefix="build-fuzz/crashes/$k/" -rss_limit_mb=4096 "$@" || status=$?
done
exit "$status"
