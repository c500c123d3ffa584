#pragma once
/// What the end-to-end tests of published models on DGX clusters share: the cluster, the model at a chosen
/// sequence, and a plan's largest per-device memory.

#include "core/cluster_json.hpp"
#include "models/workload.hpp"
#include "strategies/lowering/memory.hpp"

#include <algorithm>
#include <string>

namespace hetsim::e2e {

/// `nodes` DGX nodes of eight `gpu`: NVSwitch ports of `nvswitch_GBps`, `nic_gbps` per node to the fabric.
inline Cluster dgx_cluster(const std::string& name, const std::string& gpu, int nodes, double nvswitch_GBps,
                           double nic_gbps)
{
  const nlohmann::json node = {{"name", "dgx"},
                               {"gpu", gpu},
                               {"devices", 8},
                               {"repeat", nodes},
                               {"intra_node", {{"bandwidth_GBps", nvswitch_GBps}, {"latency_us", 2}}},
                               {"nic", {{"bandwidth_gbps", nic_gbps}, {"latency_us", 3}}}};
  return cluster_from_json({{"name", name}, {"regions", {{{"name", "fabric"}, {"latency_us", 2},
                                                           {"nodes", {node}}}}}},
                           name + ".json");
}

/// A published Hugging Face config of tests/models/data/hf trained at `seq_len` tokens.
inline models::Workload hf_model(const std::string& file, int seq_len)
{
  return models::with_seq_len(models::load_workload(std::string(HETSIM_SOURCE_DIR) + "/tests/models/data/hf/" + file),
                              seq_len, "--seq-len");
}

/// The most memory one device of the plan needs.
inline double largest_need(const strategies::Plan& plan, const strategies::Problem& problem)
{
  double largest = 0;
  for (const auto& device : strategies::plan_memory(plan, problem))
    largest = std::max(largest, device.total_bytes());
  return largest;
}

} // namespace hetsim::e2e
