#!/usr/bin/env bash
# HetSim installed into a prefix runs from there: `hetsim run` finds its executors in <prefix>/lib/hetsim, and an
# experiment run with HETSIM=<prefix>/bin/hetsim and --out uses the installed programs and writes only under --out.
# Usage: installed_test.sh CMAKE BUILD_DIR WORK_DIR (WORK_DIR is emptied first).
set -euo pipefail
cmake=$1 build=$2 work=$3
src="$(cd "$(dirname "$0")/../.." && pwd)"
rm -rf "$work"
mkdir -p "$work"
fail() { echo "installed_test: $*" >&2; exit 1; }

command -v gnuplot >/dev/null || { echo "installed_test: skipped, no gnuplot to draw the chart"; exit 77; }
"$cmake" --install "$build" --prefix "$work/prefix" >/dev/null
hetsim="$work/prefix/bin/hetsim"
executors="$("$hetsim" run --list-executors)"
grep -qx cpu <<<"$executors" || fail "the installed hetsim lists no cpu executor: $executors"

# A copy of the experiments with no build tree beside it: only the installed programs can run them, and any
# output outside --out would appear under $work/out.
cp -r "$src/experiments" "$work/experiments"
HETSIM="$hetsim" "$work/experiments/osdp_models/run.sh" --out "$work/results" >"$work/log" 2>&1 ||
  fail "osdp_models failed: $(tail -n 3 "$work/log")"
[ ! -e "$work/out" ] || fail "the experiment wrote outside --out: $(find "$work/out" | head -n 3)"
[ -s "$work/results/throughput.svg" ] || fail "no chart in --out"
rows=$(tail -n +2 "$work/results/results.csv" | grep -c ',') || true
[ "$rows" -ge 6 ] || fail "expected a row per model and memory limit (6), got $rows"

# Without HETSIM and with no build tree, the experiment says what is missing: exit 2 and one line.
if env -u HETSIM "$work/experiments/osdp_models/run.sh" --out "$work/other" >"$work/log" 2>&1; then
  fail "ran without any hetsim program"
else
  status=$?
  [ "$status" -eq 2 ] && [ "$(wc -l <"$work/log")" -eq 1 ] || fail "expected exit 2 and one line, got $status: $(cat "$work/log")"
fi
rm -rf "$work"
echo "installed hetsim and experiment: ok"
