#pragma once
/// The input of every planner: what to train, on what, and under which limits.

#include "core/cluster.hpp"
#include "core/dtype.hpp"
#include "core/units.hpp"
#include "models/workload.hpp"
#include "strategies/plan/plan.hpp"

#include <optional>
#include <string>

namespace hetsim::strategies {

/// The largest global batch a search takes, in sequences: 2^20, 500 times the largest published batch (Llama 3's
/// 2,048 sequences of 8,192 tokens), where a search's time and memory grow with the micro-batches it lowers (a
/// search at 2^20 on the case-5 preset takes 45 s and 0.5 GB; at the option's old limit, 2^30, it ran out of
/// memory).
inline constexpr int kMaxGlobalBatch = 1 << 20;

struct Problem {
  const Cluster* cluster            = nullptr;
  const models::Workload* workload  = nullptr;
  int global_batch                  = 0; ///< sequences per iteration; 0 when the plan decides
  Dtype dtype                       = Dtype::fp16;
  FrameworkSettings framework;      ///< what the planners' plans run under (search --framework)
  /// How every candidate's collectives run (search --collective-algorithm): the planners propose, and each
  /// candidate is priced and written with it.
  CollectiveAlgorithm collective_algorithm = CollectiveAlgorithm::ring;
  double memory_limit_bytes         = 0; ///< per device; 0 means each device's own memory
  /// Memory per device for the framework's buffers, replacing the plan framework's context, NCCL buffers and
  /// cuBLAS workspace when given (--workspace).
  std::optional<double> workspace_bytes;

  /// Usable memory of one device under this problem's limit.
  double memory_capacity(int device) const;
};

/// The problem a given plan solves: its global batch and dtype, default limits. The cluster and the workload
/// must outlive the problem.
Problem problem_for_plan(const Cluster& cluster, const models::Workload& workload, const Plan& plan);

/// The dtype to train in: `given` ("fp16", "bf16", "fp32") when not empty, else the model's (its torch_dtype, or
/// fp16). Throws InputError when `given` is not a dtype, or when a device of the cluster lacks the dtype; the
/// message names `option` (e.g. "--dtype", "plan.json: dtype") or, for the model's default, the model's field.
Dtype choose_dtype(const std::string& given, const std::string& option, const Cluster& cluster,
                   const models::Workload& workload);

} // namespace hetsim::strategies
