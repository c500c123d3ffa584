# Per cluster: the scheduler's best simulated time and its depth, random layouts of that depth (mean over seeds),
# the grid (mean over seeds of each seed's best grid point), ZeRO-3, and the speed-ups of the scheduler.
BEGIN { FS = ","; OFS = "," }
NR == 1 { for (i = 1; i <= NF; ++i) col[$i] = i; next }
$col["status"] != "ok" { next }
{
  c = $col["cluster"]; p = $col["planner"]; t = $col["simulated_s"] + 0; d = $col["pp"]
  if (!(c in seen)) { seen[c] = 1; order[++n] = c }
  if (p == "dtfm" && (!(c in best) || t < best[c])) { best[c] = t; depth[c] = d }
  if (p == "dtfm-random") { rsum[c, d] += t; rcount[c, d]++ }
  if (p == "megatron-grid") { gsum[c] += t; gcount[c]++ }
  if (p == "zero3") zero[c] = t
}
END {
  print "cluster", "scheduler_s", "scheduler_pp", "random_s", "grid_s", "zero3_s", "random_over_scheduler", "grid_over_scheduler"
  for (k = 1; k <= n; ++k) {
    c = order[k]; r = rcount[c, depth[c]] ? rsum[c, depth[c]] / rcount[c, depth[c]] : 0
    g = gcount[c] ? gsum[c] / gcount[c] : 0
    printf "%s,%.4g,%d,%.4g,%.4g,%.4g,%.3f,%.3f\n", c, best[c], depth[c], r, g, zero[c], r / best[c], g / best[c]
  }
}
