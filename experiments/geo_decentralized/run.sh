#!/usr/bin/env bash
# geo_decentralized: the scheduler against random layouts, the tp/pp/dp grid and ZeRO-3 on the five scenarios.
# Usage: experiments/geo_decentralized/run.sh [--out DIR] [--no-figures] (default out/geo_decentralized); HETSIM=
# runs an installed hetsim.
# Runs on 2 MPI ranks when mpirun is there (HETSIM_RANKS overrides), resumes an interrupted run, and writes
# results.csv/.json (every cell), summary.csv (per case, with the speed-ups), summary_long.csv and results.png,
# and the figures into docs/experiments.md (not with --no-figures).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../common.sh"
experiment_setup geo_decentralized "$@"
ranks="${HETSIM_RANKS:-2}"
resumed=""  # said in the figures' block: the run's time is then only the remaining cells'
if compgen -G "$out/results.csv*" >/dev/null; then
  resumed=", resuming $(cat "$out"/results.csv* | grep -vc '^cluster,' || true) cells of an earlier run"
fi

if command -v mpirun >/dev/null && [ "$ranks" -gt 1 ]; then
  mpirun --oversubscribe --allow-run-as-root -np "$ranks" "$hetsim" sweep --spec "$here/sweep.json" --out "$out/results.csv"
  processes="$ranks MPI ranks"
else
  "$hetsim" sweep --spec "$here/sweep.json" --out "$out/results.csv"
  processes="one process"
fi
awk -f "$here/summarize.awk" "$out/results.csv" > "$out/summary.csv"
column -s, -t "$out/summary.csv" 2>/dev/null || cat "$out/summary.csv"
# The compared figures in long form (one row per case and method), which is what the plot draws.
awk -F, 'NR > 1 { sub(/^preset:/, "", $1); split("scheduler,,random layout,best grid point,ZeRO-3", name, ",")
                  for (k = 2; k <= 6; ++k) if (k != 3 && $k != "") print $1 "," name[k - 1] "," $k }' "$out/summary.csv" |
  sed '1i case,method,seconds' > "$out/summary_long.csv"
if command -v gnuplot >/dev/null; then
  "$hetsim" plot --csv "$out/summary_long.csv" --out "$out/results.png" --x case --y seconds --series method \
    --log-y --ylabel "simulated iteration time (s)" --title "GPT-3 XL, V100, global batch 1024: simulated iteration time (s)"
fi
write_figures geo_decentralized "$processes$resumed"
