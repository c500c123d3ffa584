#pragma once
/// A jobs file: several training jobs that share one cluster, each on nodes of its own
/// (sim/simulate/shared_jobs.hpp replays them together).
///
///   {"jobs": [
///     {"name": "pretrain", "nodes": ["a100-0", "a100-1"], "model": "preset:gpt3-1.3b", "plan": "pretrain.json"},
///     {"name": "finetune", "regions": ["eu-west"], "model": "llama.json", "planner": "megatron",
///      "global_batch": 64, "framework": "deepspeed", "dtype": "bf16", "seq_len": 2048}
///   ]}
///
/// - `nodes` (node names) and `regions` (every node of those regions) say where a job runs; no two jobs share a
///   node. The job sees those nodes as a cluster of their own (core/cluster_part.hpp), numbered node by node in
///   the cluster file's order: a `plan` file places its ranks on that numbering.
/// - `plan` (a plan file or preset) or `planner` with `global_batch`: the best candidate of that planner's
///   search (by its analytic estimate; `hetsim search` rescores in the simulator) on the job's nodes.
/// - `model`, `plan`: `preset:NAME` or paths relative to the jobs file.
/// - `framework` (megatron, deepspeed, fsdp; planner jobs only: a plan file names its own), `dtype`,
///   `seq_len`: as the options of `hetsim search` and `hetsim simulate`.

#include "core/cluster_part.hpp"
#include "models/workload.hpp"
#include "sim/simulate/shared_jobs.hpp"
#include "strategies/lowering/schedule.hpp"
#include "strategies/plan/plan.hpp"
#include "strategies/plan/problem.hpp"

#include <memory>
#include <string>
#include <vector>

namespace hetsim::jobs {

/// One job of the file, loaded and lowered (without folding) on its part of the cluster.
struct Job {
  std::string name;
  ClusterPart part;
  models::Workload workload;
  strategies::Plan plan;
  strategies::Problem problem; ///< points into this object: a Job is not copied
  strategies::Schedule schedule;
  std::string plan_origin; ///< the plan file, or "planner NAME"

  Job() = default;
  Job(const Job&)            = delete;
  Job& operator=(const Job&) = delete;
};

/// The most jobs a file may hold: each is replayed alone and all together.
inline constexpr int kMaxJobs = 64;

/// Loads every job of `file` on `cluster` (which must outlive them). A malformed field, an unknown node or
/// region, a node of two jobs, a plan that does not fit its devices' memory (unless `allow_oom`) are InputErrors
/// or InfeasiblePlans naming the file and the field.
std::vector<std::unique_ptr<Job>> load_jobs(const std::string& file, const Cluster& cluster, bool allow_oom = false);
/// The same from the file's JSON, read once (a jobs file given as a pipe cannot be read twice).
std::vector<std::unique_ptr<Job>> load_jobs(const nlohmann::json& json, const std::string& file,
                                            const Cluster& cluster, bool allow_oom = false);
/// A jobs file's JSON, checked as every input is (one line naming the file for a syntax error).
nlohmann::json read_jobs_file(const std::string& file);

/// The files `file`'s jobs name (models and plans, presets left out), before any is loaded: outputs must not
/// replace them.
std::vector<std::string> files_named(const std::string& file);
std::vector<std::string> files_named(const nlohmann::json& json, const std::string& file);

/// The jobs as the shared replay takes them (pointing into `jobs`).
std::vector<sim::SharedJob> shared_jobs(const std::vector<std::unique_ptr<Job>>& jobs);

} // namespace hetsim::jobs
