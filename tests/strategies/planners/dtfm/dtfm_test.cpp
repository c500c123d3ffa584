/// The decentralized-training scheduler's parts against brute force, and its search's guarantees.

#include "core/cluster_json.hpp"
#include "strategies/plan/plan_json.hpp"
#include "strategies/planners/dtfm/bottleneck_matching.hpp"
#include "strategies/planners/dtfm/dtfm_cost.hpp"
#include "strategies/planners/dtfm/dtfm_genetic.hpp"
#include "strategies/planners/dtfm/open_tsp.hpp"
#include "strategies/planners/registry.hpp"
#include "strategies/search/search.hpp"

#include "fixtures.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>

namespace hetsim::strategies {
namespace {

std::vector<double> random_matrix(int n, std::mt19937_64& rng, int distinct_values, bool symmetric)
{
  std::vector<double> m(n * n);
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < n; ++c)
      m[r * n + c] = static_cast<double>(rng() % distinct_values) + 1;
  if (symmetric)
    for (int r = 0; r < n; ++r) {
      m[r * n + r] = 0;
      for (int c = 0; c < r; ++c)
        m[r * n + c] = m[c * n + r];
    }
  return m;
}

double brute_force_bottleneck(const std::vector<double>& cost, int n)
{
  std::vector<int> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  double best = 1e300;
  do {
    double worst = 0;
    for (int r = 0; r < n; ++r)
      worst = std::max(worst, cost[r * n + perm[r]]);
    best = std::min(best, worst);
  } while (std::next_permutation(perm.begin(), perm.end()));
  return best;
}

double brute_force_open_tsp(const std::vector<double>& w, int n)
{
  std::vector<int> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  double best = 1e300;
  do
    best = std::min(best, path_cost(w, n, perm));
  while (std::next_permutation(perm.begin(), perm.end()));
  return best;
}

void check_matching(const BottleneckMatching& m, const std::vector<double>& cost, int n)
{
  std::vector<int> sorted = m.match;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> all(n);
  std::iota(all.begin(), all.end(), 0);
  REQUIRE(sorted == all); // a perfect matching
  double worst = 0;
  for (int r = 0; r < n; ++r)
    worst = std::max(worst, cost[r * n + m.match[r]]);
  CHECK(worst == m.bottleneck);
}

/// Eight regions of `per_region` single-GPU machines with the measured world-wide matrices.
Cluster worldwide() { return load_cluster("preset:case5_worldwide_geo"); }

} // namespace

TEST_CASE("bottleneck matching equals brute force on small groups")
{
  std::mt19937_64 rng(7);
  for (int n = 1; n <= 7; ++n)
    for (int trial = 0; trial < 40; ++trial) {
      // Few distinct values make ties, the case a threshold search gets wrong most easily.
      const auto cost = random_matrix(n, rng, trial % 2 ? 4 : 1000, false);
      const auto m    = bottleneck_matching(cost, n);
      CAPTURE(n);
      CHECK(m.bottleneck == brute_force_bottleneck(cost, n));
      check_matching(m, cost, n);
    }
}

TEST_CASE("bottleneck matching of large groups: the bit-parallel and Boost.Graph tests agree")
{
  std::mt19937_64 rng(11);
  for (int n : {64, 70}) {
    const auto cost = random_matrix(n, rng, 100000, false);
    const auto m    = bottleneck_matching(cost, n); // 64: bit-parallel; 70: Boost.Graph
    check_matching(m, cost, n);
    std::vector<int> match;
    CHECK(has_perfect_matching_boost(cost, n, m.bottleneck, match));
    double below = 0; // the largest cost under the bottleneck: no perfect matching may fit under it
    for (double w : cost)
      if (w < m.bottleneck)
        below = std::max(below, w);
    CHECK_FALSE(has_perfect_matching_boost(cost, n, below, match));
  }
}

TEST_CASE("Held-Karp equals brute force up to 8 stages; the heuristic is a valid path never below it")
{
  std::mt19937_64 rng(3);
  for (int n = 1; n <= 8; ++n)
    for (int trial = 0; trial < 10; ++trial) {
      const auto w     = random_matrix(n, rng, trial % 2 ? 5 : 1000, true);
      const auto exact = open_tsp_exact(w, n);
      CAPTURE(n);
      CHECK(exact.cost == doctest::Approx(brute_force_open_tsp(w, n)));
      CHECK(exact.cost == doctest::Approx(path_cost(w, n, exact.order)));
      const auto heuristic = open_tsp_heuristic(w, n);
      CHECK(heuristic.cost >= exact.cost - 1e-9);
      CHECK(heuristic.cost == doctest::Approx(path_cost(w, n, heuristic.order)));
    }
  // Above the exact limit: a permutation of the nodes.
  const auto w = random_matrix(20, rng, 1000, true);
  auto order   = open_tsp(w, 20).order;
  std::sort(order.begin(), order.end());
  std::vector<int> all(20);
  std::iota(all.begin(), all.end(), 0);
  CHECK(order == all);
}

TEST_CASE("assignment cost: eq. 2 by hand, and a placement that is a bijection")
{
  const Cluster cluster = worldwide();
  const CommGraph graph = comm_graph(cluster);
  const DtfmCost cost(graph, 8, 8, {1e8, 1e9});
  // Group {0, 1}: one pair, so eq. 2 is twice (latency + shard bytes / bandwidth).
  const std::vector<int> pair{0, 1};
  const double expected = 2 * (graph.latency_s[1] + 1e8 / 8 * graph.seconds_per_byte[1]);
  CHECK(cost.group_data_parallel_seconds(pair) == doctest::Approx(expected));

  std::mt19937_64 rng(1);
  const Assignment x = random_assignment(64, rng);
  auto placement     = assignment_placement(cost, x);
  // Every stage's devices are exactly one group of the assignment.
  for (int s = 0; s < 8; ++s) {
    std::set<int> stage(placement.begin() + s * 8, placement.begin() + (s + 1) * 8);
    bool is_group = false;
    for (int g = 0; g < 8; ++g)
      is_group = is_group || stage == std::set<int>(x.begin() + g * 8, x.begin() + (g + 1) * 8);
    CHECK(is_group);
  }
  std::sort(placement.begin(), placement.end());
  std::vector<int> all(64);
  std::iota(all.begin(), all.end(), 0);
  CHECK(placement == all);
}

TEST_CASE("genetic search: never worse than its starting population, deterministic, beats random layouts")
{
  const Cluster cluster = worldwide();
  const DtfmCost cost(comm_graph(cluster), 8, 8, {3e8, 1.1e9});
  GeneticOptions options;
  options.generations = 40;
  for (LocalSearch kind : {LocalSearch::dtfm, LocalSearch::kernighan_lin, LocalSearch::none}) {
    options.local_search = kind;
    const auto a         = genetic_search(cost, options);
    CHECK(a.costs.front().total_s() <= a.initial_best_s);
    CHECK(std::is_sorted(a.costs.begin(), a.costs.end(),
                         [](const AssignmentCost& x, const AssignmentCost& y) { return x.total_s() < y.total_s(); }));
    const auto b = genetic_search(cost, options);
    CHECK(a.population == b.population);
  }
  options.local_search = LocalSearch::dtfm;
  const double scheduled = genetic_search(cost, options).costs.front().total_s();
  std::mt19937_64 rng(5);
  double random_mean = 0;
  for (int k = 0; k < 3; ++k)
    random_mean += cost.cost(random_assignment(64, rng)).total_s() / 3;
  CHECK(scheduled * 2 < random_mean);
}

TEST_CASE("local search never makes an assignment worse")
{
  const Cluster cluster = worldwide();
  const DtfmCost cost(comm_graph(cluster), 4, 16, {6e8, 2e9});
  std::mt19937_64 rng(9);
  for (LocalSearch kind : {LocalSearch::dtfm, LocalSearch::kernighan_lin}) {
    Assignment x        = random_assignment(64, rng);
    const double before = cost.cost(x).total_s();
    const double after  = local_search(cost, x, kind).total_s();
    CHECK(after <= before);
    CHECK(after == doctest::Approx(cost.cost(x).total_s()));
  }
}

TEST_CASE("dtfm planners propose valid tp = 1 plans")
{
  const Cluster cluster = load_cluster("preset:case4_regional_geo");
  const auto workload   = testing::make_workload(8, 50e6);
  Problem problem;
  problem.cluster      = &cluster;
  problem.workload     = &workload;
  problem.global_batch = 64;
  PlannerContext context;
  for (const char* name : {"dtfm", "dtfm-kl", "dtfm-random", "megatron-grid", "zero3"}) {
    CAPTURE(name);
    const auto result = search(*find_planner(name).make(), problem, context);
    REQUIRE_FALSE(result.ranked.empty());
    for (const Candidate& c : result.ranked)
      CHECK_NOTHROW(validate_plan(c.plan, cluster, workload, name));
    if (std::string(name).starts_with("dtfm"))
      CHECK(result.ranked.front().plan.tp == 1);
  }
}

} // namespace hetsim::strategies
