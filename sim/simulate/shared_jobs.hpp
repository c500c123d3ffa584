#pragma once
/// Several jobs on one cluster, replayed together: each job is a model and a plan on its own devices, and their
/// collectives and pipeline transfers share, max-min fairly, every link they meet on (a NIC of a node two jobs
/// use, a region's WAN link, a node-pair link). Each job is also replayed alone on the same platform, so that
/// the difference is the contention and nothing else.
///
/// A job's plan, problem and schedule are those of its part of the cluster (core/cluster_part.hpp): the job's
/// device i is the cluster's device `devices[i]`. Its schedule must not be folded (another job's traffic makes
/// identical devices differ). The jobs' schedules are joined into one: task, collective and device ids are
/// renumbered, nothing else changes, so that one replay moves every job's bytes on one SimGrid platform.

#include "sim/report/link_report.hpp"
#include "sim/report/report.hpp"
#include "sim/simulate/simulate.hpp"

#include <string>
#include <vector>

namespace hetsim::sim {

struct SharedJob {
  std::string name;
  const strategies::Plan* plan         = nullptr; ///< on the job's part of the cluster
  const strategies::Problem* problem   = nullptr; ///< its cluster is the part
  const strategies::Schedule* schedule = nullptr; ///< lowered without folding
  std::vector<int> devices;                       ///< part device -> cluster device
};

/// A link that two or more jobs used, with each job's bytes on it (in SharedJob order) and how long it was busy
/// when they ran together and when each ran alone.
struct SharedLink {
  std::string label;
  std::string kind; ///< link_kind_name
  double bandwidth_bytes_per_s = 0; ///< 0: unlimited
  std::vector<double> bytes;        ///< per job
  std::vector<double> busy_alone_s; ///< per job
  double busy_together_s = 0;
};

struct SharedRun {
  std::vector<Report> alone;    ///< per job, replayed with the other jobs absent
  std::vector<Report> together; ///< per job, replayed with all jobs
  std::vector<SharedLink> links; ///< links of two or more jobs, longest busy together first

  /// Job `k`'s iteration together over alone.
  double slowdown(std::size_t k) const { return together[k].iteration_time_s / alone[k].iteration_time_s; }
};

/// Replays each job alone and all together on `cluster`. `options` apply to every job (the calibration and the
/// layer profile are the same for all; slowdowns name the cluster's devices and links). Throws InputError when
/// two jobs name one device.
SharedRun simulate_shared(const Cluster& cluster, const std::vector<SharedJob>& jobs, const SimOptions& options);

nlohmann::json shared_run_to_json(const std::vector<SharedJob>& jobs, const SharedRun& run);
/// Per job its time alone and together and the slowdown, then the shared links by busy time.
void print_shared_run(const Cluster& cluster, const std::vector<SharedJob>& jobs, const SharedRun& run,
                      std::ostream& out);

} // namespace hetsim::sim
