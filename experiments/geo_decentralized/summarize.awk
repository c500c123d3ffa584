# Per cluster: the scheduler's best simulated time and its depth, random layouts of that depth (mean over seeds),
# the grid (mean over seeds of each seed's best grid point), ZeRO-3, and the speed-ups of the scheduler; cases in
# name order, an empty field where a method has no feasible plan.
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
function fmt(x, f) { return x == "" ? "" : sprintf(f, x) }
END {
  print "cluster", "scheduler_s", "scheduler_pp", "random_s", "grid_s", "zero3_s", "random_over_scheduler", "grid_over_scheduler"
  # Insertion sort of the case names (POSIX awk has no sort).
  for (i = 2; i <= n; ++i) for (j = i; j > 1 && order[j] < order[j - 1]; --j) { t = order[j]; order[j] = order[j - 1]; order[j - 1] = t }
  for (k = 1; k <= n; ++k) {
    c = order[k]; s = (c in best) ? best[c] : ""
    r = rcount[c, depth[c]] ? rsum[c, depth[c]] / rcount[c, depth[c]] : ""
    g = gcount[c] ? gsum[c] / gcount[c] : ""
    print c, fmt(s, "%.4g"), depth[c], fmt(r, "%.4g"), fmt(g, "%.4g"), fmt(zero[c], "%.4g"),
          (r != "" && s != "") ? sprintf("%.3f", r / s) : "", (g != "" && s != "") ? sprintf("%.3f", g / s) : ""
  }
}
