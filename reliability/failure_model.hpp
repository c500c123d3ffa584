#pragma once
/// How often a cluster's parts fail, what a restart costs and where checkpoints go: the what-if file of
/// `--failures FILE`. Every figure is the user's (published fleet figures are in experiments/goodput/); a part
/// the file leaves out does not fail.
///
///   {"mtbf_hours": {"gpu": {"H100": 86000, "default": 50000}, "node": 500000, "region_link": 8760},
///    "restart_minutes": 10,
///    "checkpoint": {"storage_GBps": 100, "async": false, "host_GBps": 25},
///    "run_days": 54}
///
/// A job needs every device, node and inter-region link of its cluster (a plan places a rank on every device),
/// so its failure rate is their sum: failures are independent and memoryless, as Young's and Daly's models
/// assume.

#include "core/cluster.hpp"

#include <map>
#include <string>

namespace hetsim::reliability {

struct FailureModel {
  std::string file;
  std::map<std::string, double> gpu_mtbf_s; ///< by the cluster's GPU name
  double default_gpu_mtbf_s = 0;            ///< any other GPU; 0: never fails
  double node_mtbf_s        = 0;            ///< a node's own parts (host, NIC, power); 0: never fails
  double region_link_mtbf_s = 0;            ///< one link between two regions; 0: never fails
  double restart_s          = 0;
  double storage_bytes_per_s = 0; ///< aggregate write bandwidth of the checkpoint storage
  bool async_checkpoint      = false;
  double host_bytes_per_s    = 0; ///< async: each device's copy to host memory, what stops training
  double run_s               = 0;
};

/// Reads `file` for `cluster`: a GPU named there must be one of the cluster's (by catalog name or alias).
FailureModel load_failure_model(const std::string& file, const Cluster& cluster);

/// The cluster's mean time between failures: 1 / the sum of its parts' rates; infinity when nothing fails.
double cluster_mtbf_s(const FailureModel& model, const Cluster& cluster);

} // namespace hetsim::reliability
