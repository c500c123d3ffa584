#include "strategies/planners/osdp/osdp_search.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <cmath>

namespace hetsim::strategies {
namespace {

int slice_index(int slices)
{
  for (int i = 0; i < 4; ++i)
    if (kOsdpSlices[i] == slices)
      return i;
  HETSIM_ASSERT(false);
  return 0;
}

/// Communication of one layer under one choice, per iteration.
double layer_seconds(const OsdpProblem& problem, const OsdpLayer& layer, const LayerSharding& c)
{
  const int k = slice_index(c.slices);
  return problem.micro_steps * c.sharded * (2 * layer.all_gather_s[k] + layer.reduce_scatter_s[k]) +
         (1 - c.fraction()) * layer.all_reduce_s;
}

/// Model states of one layer under one choice, without the gather buffer.
double layer_state_bytes(const OsdpProblem& problem, const OsdpLayer& layer, const LayerSharding& c)
{
  const double per_param = 2 * problem.weight_bytes + problem.optimizer_bytes;
  const double f         = c.fraction();
  return per_param * layer.params * (1 - f + f / problem.devices);
}

double slice_bytes(const OsdpProblem& problem, const OsdpLayer& layer, const LayerSharding& c)
{
  return c.sharded > 0 ? problem.weight_bytes * layer.params / c.slices : 0;
}

struct Entry {
  double memory  = 0;
  double seconds = 0;
  int previous   = -1; ///< index in the previous layer's front
  int choice     = 0;  ///< index into osdp_choices()
};

} // namespace

std::vector<LayerSharding> osdp_choices()
{
  std::vector<LayerSharding> choices{{0, 1}};
  for (int k : kOsdpSlices)
    for (int j = 1; j <= k; ++j)
      choices.push_back({j, k});
  return choices;
}

double osdp_seconds(const OsdpProblem& problem, const std::vector<LayerSharding>& choice)
{
  double seconds = 0;
  for (std::size_t l = 0; l < problem.layers.size(); ++l)
    seconds += layer_seconds(problem, problem.layers[l], choice[l]);
  return seconds;
}

double osdp_memory(const OsdpProblem& problem, const std::vector<LayerSharding>& choice)
{
  double bytes = 0, largest_slice = 0;
  for (std::size_t l = 0; l < problem.layers.size(); ++l) {
    bytes += layer_state_bytes(problem, problem.layers[l], choice[l]);
    largest_slice = std::max(largest_slice, slice_bytes(problem, problem.layers[l], choice[l]));
  }
  return bytes + 2 * largest_slice;
}

OsdpResult osdp_search(const OsdpProblem& problem)
{
  const auto choices = osdp_choices();
  const int layers   = static_cast<int>(problem.layers.size());
  const int count    = static_cast<int>(choices.size());

  // Candidate bounds on the largest sharded slice: none (everything replicated), then every slice size.
  std::vector<double> bounds{0};
  for (const OsdpLayer& layer : problem.layers)
    for (const LayerSharding& c : choices)
      bounds.push_back(slice_bytes(problem, layer, c));
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());

  // The least state memory each suffix of layers can reach, for the memory pruning.
  // The least state memory and time each suffix of layers can reach, for the two prunings.
  std::vector<double> least_after(layers + 1, 0), fastest_after(layers + 1, 0);
  for (int l = layers - 1; l >= 0; --l) {
    double least = INFINITY, fastest = INFINITY;
    for (const LayerSharding& c : choices) {
      least   = std::min(least, layer_state_bytes(problem, problem.layers[l], c));
      fastest = std::min(fastest, layer_seconds(problem, problem.layers[l], c));
    }
    least_after[l]   = least_after[l + 1] + least;
    fastest_after[l] = fastest_after[l + 1] + fastest;
  }
  // Per layer and bound, only the fastest allowed choice of each sharded fraction matters: equal fractions
  // take equal memory. Largest bounds first: they allow the most and set a good best early.
  std::reverse(bounds.begin(), bounds.end());
  std::vector<int> useful;

  OsdpResult best;
  std::vector<std::vector<Entry>> fronts(layers + 1);
  std::vector<Entry> grown;
  for (double bound : bounds) {
    const double budget = problem.available_bytes - 2 * bound;
    if (least_after[0] > budget)
      continue;
    fronts[0] = {Entry{}};
    bool empty = false;
    for (int l = 0; l < layers && !empty; ++l) {
      const OsdpLayer& layer = problem.layers[l];
      grown.clear();
      useful.clear();
      for (int c = 0; c < count; ++c) {
        if (slice_bytes(problem, layer, choices[c]) > bound)
          continue;
        auto same = std::find_if(useful.begin(), useful.end(), [&](int u) {
          return choices[u].sharded * choices[c].slices == choices[c].sharded * choices[u].slices;
        });
        if (same == useful.end())
          useful.push_back(c);
        else if (layer_seconds(problem, layer, choices[c]) < layer_seconds(problem, layer, choices[*same]))
          *same = c;
      }
      for (int e = 0; e < static_cast<int>(fronts[l].size()); ++e)
        for (int c : useful) {
          const Entry& from = fronts[l][e];
          Entry next{from.memory + layer_state_bytes(problem, layer, choices[c]),
                     from.seconds + layer_seconds(problem, layer, choices[c]), e, c};
          if (next.memory + least_after[l + 1] > budget) // pruning 1: over the memory limit
            continue;
          if (best.feasible && next.seconds + fastest_after[l + 1] >= best.seconds) // pruning 2: no faster
            continue;
          grown.push_back(next);
        }
      // Pareto front: by memory, keep only entries faster than every one using less memory. Stable, so equal
      // entries keep their generation order (earlier prefixes and choices first).
      std::stable_sort(grown.begin(), grown.end(), [](const Entry& a, const Entry& b) { return a.memory < b.memory; });
      fronts[l + 1].clear();
      for (const Entry& entry : grown)
        if (fronts[l + 1].empty() || entry.seconds < fronts[l + 1].back().seconds)
          fronts[l + 1].push_back(entry);
      empty = fronts[l + 1].empty();
    }
    if (empty)
      continue;
    // The last front's fastest entry is its last one.
    const Entry& last = fronts[layers].back();
    if (best.feasible && last.seconds >= best.seconds)
      continue;
    best.feasible = true;
    best.seconds  = last.seconds;
    best.choice.assign(layers, LayerSharding{});
    for (int l = layers, e = static_cast<int>(fronts[layers].size()) - 1; l > 0; --l) {
      const Entry& entry = fronts[l][e];
      best.choice[l - 1] = choices[entry.choice];
      e                  = entry.previous;
    }
    best.memory_bytes = osdp_memory(problem, best.choice);
  }
  return best;
}

} // namespace hetsim::strategies
