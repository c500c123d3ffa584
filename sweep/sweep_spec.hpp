#pragma once
/// A sweep: the product of clusters x models x planners x parameters, each cell planned and simulated.
///
/// Spec file (JSON): {"clusters": [...], "models": [...], "planners": [...], "global_batch": [...],
/// "zero_stage": [...] (optional), "pp": [...] (optional), "seeds": [...] (optional, default [1]), "top": 3
/// (optional), "dtype": "fp16" (optional: each model's own), "beside": ["none", "jobs.json"] (optional)}; or {"products": [{...}, ...], "top": 3, "dtype":
/// "fp16"} where each product holds the lists and the cells are the products one after the other. Cluster and
/// model entries are `preset:NAME` or paths relative to the spec file.
///
/// `beside` places other jobs on the cluster: each entry is "none" or a jobs file (jobs/jobs_file.hpp, relative
/// to the spec). The cell's planner then plans on the nodes those jobs leave, its best candidates are replayed
/// together with them, and the row gives the cell's job's time beside them and both sides' slowdowns.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hetsim::sweep {

/// One product of lists.
struct SweepProduct {
  std::vector<std::string> clusters; ///< as written in the spec (these name the rows)
  std::vector<std::string> cluster_paths; ///< resolved against the spec's folder
  std::vector<std::string> models;
  std::vector<std::string> model_paths;
  std::vector<std::string> planners;
  std::vector<int> global_batches;
  std::vector<int> zero_stages;     ///< empty: each planner's own choice
  std::vector<int> pipeline_depths; ///< empty: each planner's own; else passed as the planner flag "pp=N"
  std::vector<std::uint64_t> seeds{1};
  std::vector<std::string> beside{"none"}; ///< "none" or jobs files, as written
  std::vector<std::string> beside_paths{""}; ///< resolved against the spec's folder; "" for none
};

/// The most cells a sweep spec may expand to; each is a whole search (seconds to minutes).
inline constexpr int kMaxSweepCells = 100'000;

struct SweepSpec {
  std::vector<SweepProduct> products;
  int top           = 3; ///< candidates re-scored in the simulator per cell
  std::string dtype; ///< empty: each model's own (its torch_dtype, else fp16)
};

/// One point of a product. Cells are numbered in the spec's order, the last list varying fastest.
struct Cell {
  int index = 0;
  std::string cluster, cluster_path, model, model_path, planner;
  int global_batch = 0;
  std::optional<int> zero_stage;
  std::optional<int> pipeline_depth;
  std::uint64_t seed = 1;
  std::string beside = "none", beside_path; ///< other jobs on the cluster: a jobs file, or none ("")
};

/// Throws InputError naming the file and field for anything malformed, and for unknown planners.
SweepSpec load_sweep_spec(const std::string& file);

/// Every cell: clusters, then models, planners, global batches, ZeRO stages, seeds and the jobs beside.
std::vector<Cell> sweep_cells(const SweepSpec& spec);

} // namespace hetsim::sweep
