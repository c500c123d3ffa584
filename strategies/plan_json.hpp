#pragma once
/// Plan files: reading with full validation against the cluster and the model, and writing.
///
/// Fields: tp, pp, dp (default 1); placement (list of device ids, default identity); stage_starts (default:
/// layers split evenly); micro_batch (number or one per replica); grad_accum (number or one per replica;
/// or global_batch to derive it); zero_stage 0-3; schedule "gpipe"|"1f1b"; recompute; dtype;
/// collective_algorithm "ring"|"tree"|"hierarchical"; bucket_mib.

#include "core/cluster.hpp"
#include "models/workload.hpp"
#include "strategies/plan.hpp"

#include <nlohmann/json.hpp>

namespace hetsim::strategies {

/// Loads `preset:NAME` or a file and validates it; every error names the file, the JSON path and what was expected.
Plan load_plan(const std::string& file_or_preset, const Cluster& cluster, const models::Workload& workload);
Plan plan_from_json(const nlohmann::json& json, const std::string& origin, const Cluster& cluster,
                    const models::Workload& workload);
nlohmann::json plan_to_json(const Plan& plan);

/// Checks a plan built in code (by a planner) the same way; throws InputError prefixed with `origin`.
void validate_plan(const Plan& plan, const Cluster& cluster, const models::Workload& workload,
                   const std::string& origin);

/// Stage boundaries that give every stage the same number of layers (the first ones get one more).
std::vector<int> uniform_stage_starts(int layer_count, int pp);

} // namespace hetsim::strategies
