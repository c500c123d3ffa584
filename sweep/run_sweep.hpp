#pragma once
/// A whole sweep: the cells not yet in the output, shared round-robin between the communicator's ranks, and one
/// output in cell order, whatever the number of ranks.

#include "strategies/search/planner.hpp"
#include "sweep/communicator.hpp"
#include "sweep/sweep_spec.hpp"

#include <string>

namespace hetsim::sweep {

struct SweepOutput {
  std::string csv_file;  ///< resumable record: rows already there are kept and their cells skipped
  std::string json_file; ///< empty: none
};

struct SweepSummary {
  int cells   = 0;
  int resumed = 0; ///< cells found in the existing output
  int run     = 0; ///< cells run by all ranks together
};

/// Rank 0 rewrites the CSV after each of its own cells and every other rank r its own `<csv>.part<r>`, so a sweep
/// killed at any moment (one process or all of an MPI job) resumes with every finished cell; rank 0 folds part
/// files into the CSV when it resumes and writes the complete CSV and JSON at the end. `progress` runs on rank 0.
SweepSummary run_sweep(const SweepSpec& spec, const SweepOutput& output, Communicator& communicator,
                       const strategies::ProgressFn& progress = {});

} // namespace hetsim::sweep
