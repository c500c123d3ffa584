#pragma once
/// The decisions of a parallelization plan. Virtual ranks are laid out Megatron-style:
/// rank = (stage * dp + replica) * tp + tp_rank, and `placement[rank]` is the device that runs it.

#include "core/dtype.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace hetsim::strategies {

enum class PipelineSchedule { gpipe, one_f_one_b };

/// How a collective is decomposed into point-to-point transfers.
enum class CollectiveAlgorithm { ring, tree, hierarchical };

struct Plan {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  std::vector<int> placement;    ///< virtual rank -> device id; a bijection onto the cluster's devices
  std::vector<int> stage_starts; ///< first layer of each stage, strictly increasing, stage_starts[0] == 0
  std::vector<int> micro_batch;  ///< sequences per micro-batch, per replica (replicas may differ)
  std::vector<int> grad_accum;   ///< micro-batches per iteration, per replica
  int zero_stage                     = 0;
  PipelineSchedule schedule          = PipelineSchedule::one_f_one_b;
  bool recompute                     = false;
  Dtype dtype                        = Dtype::fp16;
  CollectiveAlgorithm collective_algorithm = CollectiveAlgorithm::ring;
  double bucket_bytes                = 25.0 * 1024 * 1024; ///< gradient bucket size for ZeRO 0-2

  int world_size() const { return tp * pp * dp; }
  int rank(int stage, int replica, int tp_rank) const { return (stage * dp + replica) * tp + tp_rank; }
  int device(int stage, int replica, int tp_rank) const { return placement[rank(stage, replica, tp_rank)]; }
  /// One past the last layer of `stage`.
  int stage_end(int stage, int layer_count) const;
  /// Sequences per iteration over all replicas.
  long long global_batch() const;

  bool operator==(const Plan&) const = default;
};

/// "gpipe" or "1f1b", as in plan files.
std::string_view schedule_name(PipelineSchedule schedule);
/// "ring", "tree" or "hierarchical", as in plan files.
std::string_view algorithm_name(CollectiveAlgorithm algorithm);
/// Inverses of the two above; return false for an unknown name.
bool parse_schedule(std::string_view name, PipelineSchedule& out);
bool parse_algorithm(std::string_view name, CollectiveAlgorithm& out);

} // namespace hetsim::strategies
