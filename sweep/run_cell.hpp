#pragma once
/// One sweep cell: the planner's search, the ZeRO stage of the cell applied to every candidate, the best `top`
/// re-scored in the simulator, and the fastest simulated plan as the cell's row. With jobs beside, the search
/// runs on the nodes they leave and the rescored candidates are replayed together with them: the fastest
/// together is the row.

#include "sweep/sweep_spec.hpp"
#include "sweep/sweep_table.hpp"

#include "core/cluster.hpp"
#include "jobs/jobs_file.hpp"
#include "models/workload.hpp"

#include <map>
#include <memory>
#include <vector>

namespace hetsim::sweep {

/// The clusters and models of a sweep's cells, each loaded once (and validated before any cell runs).
struct SweepInputs {
  std::map<std::string, std::unique_ptr<Cluster>> clusters; ///< by resolved path
  std::map<std::string, std::unique_ptr<models::Workload>> models;
  /// The jobs beside a cell, by beside_key: loaded (and their planners run) once per cluster and jobs file.
  std::map<std::string, std::vector<std::unique_ptr<jobs::Job>>> beside;
};

/// The key of a cell's jobs beside in SweepInputs::beside.
std::string beside_key(const Cell& cell);

SweepInputs load_sweep_inputs(const std::vector<Cell>& cells);

/// A plan that cannot run (no candidate fits, the planner finds none) is a row with status "infeasible" and the
/// reason in `note`; one whose best candidates are all too large to replay, status "too_large"; input errors
/// propagate.
Row run_cell(const Cell& cell, const SweepSpec& spec, const SweepInputs& inputs);

/// The key fields of a cell's row, to find it in a resumed file.
Row cell_key(const Cell& cell);

} // namespace hetsim::sweep
