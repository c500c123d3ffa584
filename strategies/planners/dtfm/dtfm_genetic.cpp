#include "strategies/planners/dtfm/dtfm_genetic.hpp"

#include "core/error.hpp"
#include "strategies/search/seeded_random.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <span>

namespace hetsim::strategies {
namespace {

constexpr double kImprovement = 1e-12; ///< relative: swaps that gain less are rounding noise


struct Swap {
  int a = 0; ///< positions in the flat assignment
  int b = 0;
  double gain = 0;
};

/// The fastest link inside one group under the pipeline weights, as two positions.
std::pair<int, int> fastest_link(const DtfmCost& cost, const Assignment& x, int group)
{
  const int dp = cost.dp(), base = group * dp;
  std::pair<int, int> best{base, base};
  double cheapest = std::numeric_limits<double>::infinity();
  for (int i = 0; i < dp; ++i)
    for (int k = i + 1; k < dp; ++k) {
      const double w = cost.pp_weight(x[base + i], x[base + k]);
      if (w < cheapest) {
        cheapest = w;
        best     = {base + i, base + k};
      }
    }
  return best;
}

double mean_pp_weight(const DtfmCost& cost, const Assignment& x, int device, int group)
{
  double sum = 0;
  for (int i = 0; i < cost.dp(); ++i)
    sum += cost.pp_weight(device, x[group * cost.dp() + i]);
  return sum / cost.dp();
}

/// §3.4: with d1-d2 the fastest link of group j and e1-e2 that of group j', the four swaps between {d1, d2}
/// and {e1, e2}; moving d1 next to the rest of j' costs on average mean(w(d1, j')) before and w(d1, d2) after,
/// since the fast link it leaves behind is now likely a pipeline edge.
std::vector<Swap> dtfm_candidates(const DtfmCost& cost, const Assignment& x, int j, int k)
{
  if (cost.dp() < 2)
    return {};
  const auto [d1, d2] = fastest_link(cost, x, j);
  const auto [e1, e2] = fastest_link(cost, x, k);
  std::vector<Swap> swaps;
  for (auto [d, d_partner] : {std::pair{d1, d2}, std::pair{d2, d1}})
    for (auto [e, e_partner] : {std::pair{e1, e2}, std::pair{e2, e1}}) {
      const double gain = mean_pp_weight(cost, x, x[d], k) - cost.pp_weight(x[d], x[d_partner]) +
                          mean_pp_weight(cost, x, x[e], j) - cost.pp_weight(x[e], x[e_partner]);
      swaps.push_back({d, e, gain});
    }
  return swaps;
}

/// Kernighan-Lin's pair gain (external minus internal affinity, minus twice the pair's own) with the affinity
/// taken as the negated data-parallel cost; the best pair of the two groups.
std::vector<Swap> kernighan_lin_candidates(const DtfmCost& cost, const Assignment& x, int j, int k)
{
  const int dp = cost.dp();
  auto affinity = [&](int a, int b) { return -cost.dp_weight(a, b); };
  auto sum_to   = [&](int device, int group, int skip) {
    double sum = 0;
    for (int i = 0; i < dp; ++i)
      if (group * dp + i != skip)
        sum += affinity(device, x[group * dp + i]);
    return sum;
  };
  Swap best{0, 0, -std::numeric_limits<double>::infinity()};
  for (int i = 0; i < dp; ++i)
    for (int m = 0; m < dp; ++m) {
      const int a = j * dp + i, b = k * dp + m;
      const double gain = sum_to(x[a], k, -1) - sum_to(x[a], j, a) + sum_to(x[b], j, -1) - sum_to(x[b], k, b) -
                          2 * affinity(x[a], x[b]);
      if (gain > best.gain)
        best = {a, b, gain};
    }
  return {best};
}

/// Kang and Moon's normalisation: relabel `q`'s groups so that each overlaps as much as possible with the
/// same-numbered group of `p` (greedy on the overlap counts), making "inherit the group from either parent"
/// meaningful.
std::vector<int> aligned_groups(const Assignment& p, const Assignment& q, int pp, int dp)
{
  const int n = pp * dp;
  std::vector<int> group_in_p(n);
  for (int k = 0; k < n; ++k)
    group_in_p[p[k]] = k / dp;
  std::vector<int> overlap(pp * pp, 0); // [q group][p group]
  for (int k = 0; k < n; ++k)
    ++overlap[(k / dp) * pp + group_in_p[q[k]]];
  std::vector<int> relabel(pp, -1);
  std::vector<char> taken(pp, 0);
  for (int round = 0; round < pp; ++round) {
    int best_q = -1, best_p = -1;
    for (int g = 0; g < pp; ++g)
      for (int h = 0; h < pp; ++h)
        if (relabel[g] < 0 && !taken[h] && (best_q < 0 || overlap[g * pp + h] > overlap[best_q * pp + best_p])) {
          best_q = g;
          best_p = h;
        }
    relabel[best_q] = best_p;
    taken[best_p]   = 1;
  }
  std::vector<int> group_in_q(n);
  for (int k = 0; k < n; ++k)
    group_in_q[q[k]] = relabel[k / dp];
  return group_in_q;
}

Assignment crossover(const Assignment& p, const Assignment& q, int pp, int dp, std::mt19937_64& rng)
{
  const int n = pp * dp;
  std::vector<int> from_p(n), from_q = aligned_groups(p, q, pp, dp);
  for (int k = 0; k < n; ++k)
    from_p[p[k]] = k / dp;
  std::vector<int> group(n);
  for (int d = 0; d < n; ++d)
    group[d] = (rng() & 1) ? from_p[d] : from_q[d];
  // Rebalance: devices of overfull groups, in random order, move to underfull ones.
  std::vector<std::vector<int>> members(pp);
  for (int d = 0; d < n; ++d)
    members[group[d]].push_back(d);
  std::vector<int> spare;
  for (auto& m : members) {
    shuffle(m, rng);
    while (static_cast<int>(m.size()) > dp) {
      spare.push_back(m.back());
      m.pop_back();
    }
  }
  Assignment child;
  child.reserve(n);
  for (auto& m : members) {
    while (static_cast<int>(m.size()) < dp) {
      m.push_back(spare.back());
      spare.pop_back();
    }
    child.insert(child.end(), m.begin(), m.end());
  }
  return child;
}

} // namespace

Assignment random_assignment(int devices, std::mt19937_64& rng)
{
  Assignment x(devices);
  std::iota(x.begin(), x.end(), 0);
  shuffle(x, rng);
  return x;
}

AssignmentCost local_search(const DtfmCost& cost, Assignment& x, LocalSearch kind, long long* evaluations)
{
  DtfmCost::Terms current = cost.terms(x);
  long long evaluated     = 1;
  if (kind != LocalSearch::none && cost.pp() > 1)
    for (bool improved = true; improved;) {
      improved = false;
      for (int j = 0; j < cost.pp(); ++j)
        for (int k = j + 1; k < cost.pp(); ++k) {
          auto swaps = kind == LocalSearch::dtfm ? dtfm_candidates(cost, x, j, k) : kernighan_lin_candidates(cost, x, j, k);
          std::stable_sort(swaps.begin(), swaps.end(), [](const Swap& a, const Swap& b) { return a.gain > b.gain; });
          for (const Swap& s : swaps) {
            if (!(s.gain > 0))
              break;
            std::swap(x[s.a], x[s.b]);
            DtfmCost::Terms tried = current;
            cost.update_terms(x, j, k, tried);
            ++evaluated;
            if (tried.cost.total_s() < current.cost.total_s() * (1 - kImprovement)) {
              current  = std::move(tried);
              improved = true;
              break;
            }
            std::swap(x[s.a], x[s.b]);
          }
        }
    }
  if (evaluations)
    *evaluations += evaluated;
  return current.cost;
}

GeneticResult genetic_search(const DtfmCost& cost, const GeneticOptions& options, const ProgressFn& progress)
{
  HETSIM_ASSERT(options.population >= 2 && options.generations >= 0);
  std::mt19937_64 rng(options.seed);
  GeneticResult result;
  for (int i = 0; i < options.population; ++i) {
    result.population.push_back(random_assignment(cost.devices(), rng));
    result.costs.push_back(cost.cost(result.population.back()));
    ++result.evaluations;
  }
  auto total = [&](int i) { return result.costs[i].total_s(); };
  result.initial_best_s = total(0);
  for (int i = 1; i < options.population; ++i)
    result.initial_best_s = std::min(result.initial_best_s, total(i));

  const int n = options.population;
  for (int generation = 0; generation < options.generations; ++generation) {
    const int a = pick(rng, n);
    const int b = (a + 1 + pick(rng, n - 1)) % n;
    Assignment child = crossover(result.population[a], result.population[b], cost.pp(), cost.dp(), rng);
    const AssignmentCost child_cost = local_search(cost, child, options.local_search, &result.evaluations);
    int worst = 0;
    bool duplicate = false;
    for (int i = 0; i < n; ++i) {
      if (total(i) > total(worst))
        worst = i;
      duplicate = duplicate || total(i) == child_cost.total_s();
    }
    // Equal costs are almost always the same partition: keeping one preserves diversity.
    if (!duplicate && child_cost.total_s() < total(worst)) {
      result.population[worst] = std::move(child);
      result.costs[worst]      = child_cost;
    }
    if (progress)
      progress("genetic search", generation + 1, options.generations);
  }
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return total(x) < total(y); });
  GeneticResult sorted;
  sorted.initial_best_s = result.initial_best_s;
  sorted.evaluations    = result.evaluations;
  for (int i : order) {
    sorted.population.push_back(std::move(result.population[i]));
    sorted.costs.push_back(result.costs[i]);
  }
  return sorted;
}

} // namespace hetsim::strategies
