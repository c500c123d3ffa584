#pragma once
/// `hetsim simulate --cluster FILE --jobs FILE`: several jobs replayed together on one cluster's network
/// (jobs/jobs_file.hpp, sim/simulate/shared_jobs.hpp).

#include <string>

namespace hetsim::cli {

struct SharedJobsOptions {
  std::string cluster;
  std::string jobs_file;
  std::string report_file;
  std::string calibration_file;
  std::string slowdowns_file;
  bool allow_oom           = false;
  bool analytic_intra_node = false;
  bool pipelined_rings     = false;
};

int run_shared_jobs(const SharedJobsOptions& options);

} // namespace hetsim::cli
