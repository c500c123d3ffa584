#include "strategies/planners/dtfm/dtfm_cost.hpp"

#include "core/error.hpp"
#include "strategies/planners/dtfm/bottleneck_matching.hpp"

#include <algorithm>
#include <span>

namespace hetsim::strategies {

CommGraph comm_graph(const Cluster& cluster)
{
  CommGraph graph;
  const int n    = cluster.device_count();
  graph.devices  = n;
  graph.latency_s.assign(static_cast<std::size_t>(n) * n, 0.0);
  graph.seconds_per_byte.assign(static_cast<std::size_t>(n) * n, 0.0);
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      const Link there = cluster.path(a, b);
      const Link back  = cluster.path(b, a);
      const double latency   = (there.latency_s + back.latency_s) / 2;
      const double bandwidth = (there.bandwidth_bytes_per_s + back.bandwidth_bytes_per_s) / 2;
      const double per_byte  = bandwidth > 0 && bandwidth < 1e300 ? 1.0 / bandwidth : 0.0;
      graph.latency_s[a * n + b] = graph.latency_s[b * n + a] = latency;
      graph.seconds_per_byte[a * n + b] = graph.seconds_per_byte[b * n + a] = per_byte;
    }
  return graph;
}

DtfmCost::DtfmCost(const CommGraph& graph, int pp, int dp, const TaskletVolumes& volumes, bool exact_tsp)
    : n_(graph.devices), pp_(pp), dp_(dp), exact_tsp_(exact_tsp)
{
  HETSIM_ASSERT(pp >= 1 && dp >= 1 && pp * dp == graph.devices);
  dp_weight_.resize(graph.latency_s.size());
  pp_weight_.resize(graph.latency_s.size());
  for (std::size_t k = 0; k < graph.latency_s.size(); ++k) {
    const double alpha = graph.latency_s[k], per_byte = graph.seconds_per_byte[k];
    // Eq. 2: each member serves a 1/dp shard, sent out and back. Eq. 3: activations forward, gradients back.
    dp_weight_[k] = 2 * (alpha + volumes.data_parallel_bytes / dp * per_byte);
    pp_weight_[k] = 2 * (alpha + volumes.pipeline_bytes * per_byte);
  }
}

double DtfmCost::group_data_parallel_seconds(std::span<const int> group) const
{
  double slowest = 0;
  for (int d : group) {
    double sum        = 0;
    const double* row = &dp_weight_[static_cast<std::size_t>(d) * n_];
    for (int e : group)
      sum += row[e]; // the diagonal weighs 0 (no latency, no bytes per second), so d itself adds nothing
    slowest = std::max(slowest, sum);
  }
  return slowest;
}

double DtfmCost::group_matching_seconds(std::span<const int> a, std::span<const int> b, std::vector<int>* match) const
{
  const int m = static_cast<int>(a.size());
  thread_local std::vector<double> pairs;
  pairs.resize(static_cast<std::size_t>(m) * m);
  for (int r = 0; r < m; ++r)
    for (int c = 0; c < m; ++c)
      pairs[r * m + c] = pp_weight_[static_cast<std::size_t>(a[r]) * n_ + b[c]];
  BottleneckMatching result = bottleneck_matching(pairs, m);
  if (match)
    *match = std::move(result.match);
  return result.bottleneck;
}

std::vector<double> DtfmCost::coarsened_graph(const Assignment& assignment) const
{
  std::vector<double> coarse(static_cast<std::size_t>(pp_) * pp_, 0.0);
  for (int i = 0; i < pp_; ++i)
    for (int j = i + 1; j < pp_; ++j)
      coarse[i * pp_ + j] = coarse[j * pp_ + i] =
          group_matching_seconds(std::span(assignment).subspan(i * dp_, dp_),
                                 std::span(assignment).subspan(j * dp_, dp_));
  return coarse;
}

AssignmentCost DtfmCost::cost(const Assignment& assignment, OpenPath& order) const
{
  HETSIM_ASSERT(static_cast<int>(assignment.size()) == n_);
  AssignmentCost result;
  for (int g = 0; g < pp_; ++g)
    result.data_parallel_s = std::max(result.data_parallel_s,
                                      group_data_parallel_seconds(std::span(assignment).subspan(g * dp_, dp_)));
  order             = this->order(coarsened_graph(assignment));
  result.pipeline_s = order.cost;
  return result;
}

AssignmentCost DtfmCost::cost(const Assignment& assignment) const
{
  OpenPath order;
  return cost(assignment, order);
}

OpenPath DtfmCost::order(std::span<const double> coarsened) const
{
  return exact_tsp_ || pp_ <= kExactSearchStages ? open_tsp(coarsened, pp_)
                                               : open_tsp_heuristic(coarsened, pp_, kSearchTspStarts);
}

DtfmCost::Terms DtfmCost::terms(const Assignment& assignment) const
{
  Terms t;
  t.group_data_parallel_s.resize(pp_);
  for (int g = 0; g < pp_; ++g)
    t.group_data_parallel_s[g] = group_data_parallel_seconds(std::span(assignment).subspan(g * dp_, dp_));
  t.coarsened = coarsened_graph(assignment);
  t.cost.data_parallel_s = *std::max_element(t.group_data_parallel_s.begin(), t.group_data_parallel_s.end());
  t.cost.pipeline_s      = order(t.coarsened).cost;
  return t;
}

void DtfmCost::update_terms(const Assignment& assignment, int j, int k, Terms& t) const
{
  auto group = [&](int g) { return std::span(assignment).subspan(g * dp_, dp_); };
  for (int g : {j, k})
    t.group_data_parallel_s[g] = group_data_parallel_seconds(group(g));
  for (int g : {j, k})
    for (int h = 0; h < pp_; ++h)
      if (h != g && !(g == k && h == j)) // the j-k edge once
        t.coarsened[g * pp_ + h] = t.coarsened[h * pp_ + g] = group_matching_seconds(group(g), group(h));
  t.cost.data_parallel_s = *std::max_element(t.group_data_parallel_s.begin(), t.group_data_parallel_s.end());
  t.cost.pipeline_s      = order(t.coarsened).cost;
}

std::vector<int> assignment_placement(const DtfmCost& cost, const Assignment& assignment)
{
  const int pp = cost.pp(), dp = cost.dp();
  OpenPath order;
  cost.cost(assignment, order);
  auto group = [&](int stage) { return std::span(assignment).subspan(order.order[stage] * dp, dp); };
  std::vector<int> placement(static_cast<std::size_t>(pp) * dp);
  std::vector<int> current(group(0).begin(), group(0).end()); // replica -> device at this stage
  for (int stage = 0;; ++stage) {
    std::copy(current.begin(), current.end(), placement.begin() + stage * dp);
    if (stage + 1 == pp)
      break;
    const auto next = group(stage + 1);
    std::vector<int> match;
    cost.group_matching_seconds(current, next, &match);
    for (int r = 0; r < dp; ++r)
      current[r] = next[match[r]];
  }
  return placement;
}

} // namespace hetsim::strategies
