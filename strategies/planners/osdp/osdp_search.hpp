#pragma once
/// OSDP's search (Jiang et al., 2023, §3): per layer (an operator: attention and MLP are layers of their own
/// in models built with split blocks), replicated data parallel or ZeRO-sharded, with the layer cut into
/// 1, 2, 4 or 8 slices of which any number are sharded (§3.3), minimising the iteration time under a
/// per-device memory limit, for one micro-batch size.
///
/// Cost model (§3.1, no overlap of communication and computation): a sharded slice of S bytes costs two
/// all-gathers and a reduce-scatter of S every micro-step; a replicated one its share of the gradient
/// all-reduce once per iteration; model states take 16-bit weights and gradients plus the optimizer's bytes
/// per parameter, 1/n of that for sharded slices, plus a buffer of twice the largest sharded slice (the one
/// computing and the one prefetched; the memory model counts the two largest, never more).

#include "strategies/plan/plan.hpp"

#include <vector>

namespace hetsim::strategies {

struct OsdpLayer {
  double params              = 0;
  double all_gather_s[4]     = {0, 0, 0, 0}; ///< one all-gather of a slice, by slices 1, 2, 4, 8
  double reduce_scatter_s[4] = {0, 0, 0, 0}; ///< one reduce-scatter of a slice, by slices 1, 2, 4, 8
  double all_reduce_s        = 0;            ///< the whole layer's gradients all-reduced (bucketed, so linear)
};

struct OsdpProblem {
  std::vector<OsdpLayer> layers;
  int devices                   = 1;
  int micro_steps               = 1;  ///< micro-batches per iteration (sharded slices pay every one)
  double weight_bytes           = 2;  ///< per parameter, weights and gradients each
  double optimizer_bytes        = 12; ///< per parameter
  double available_bytes        = 0;  ///< the memory limit less activations and workspace
};

/// Slice counts a layer may be cut into, in the order of the cost arrays above.
inline constexpr int kOsdpSlices[4] = {1, 2, 4, 8};

/// Every choice for one layer: (0 of 1) replicated, then j of k sharded for k in 1, 2, 4, 8 and j in 1..k.
std::vector<LayerSharding> osdp_choices();

/// Communication seconds of an iteration (the computation is the same for every choice).
double osdp_seconds(const OsdpProblem& problem, const std::vector<LayerSharding>& choice);
/// Model-state bytes per device, gather buffer included.
double osdp_memory(const OsdpProblem& problem, const std::vector<LayerSharding>& choice);

struct OsdpResult {
  bool feasible = false;
  std::vector<LayerSharding> choice;
  double seconds = 0;
  double memory_bytes = 0;
};

/// The least osdp_seconds with osdp_memory <= available_bytes. Exact: for each bound on the largest sharded
/// slice, a dynamic programme over the layers keeps the Pareto front of (memory, seconds) of the prefixes —
/// the paper's depth-first search with its two prunings (over memory, slower than the best) without
/// revisiting equal prefixes. Ties go to the choice found first (replicated before sharded, fewer slices first).
OsdpResult osdp_search(const OsdpProblem& problem);

} // namespace hetsim::strategies
