#pragma once
// A public nccl-tests machine (tests/data/nccl_tests) as a cluster file gives it: `gpu`, `nodes`, `gpus_per_node`,
// `intra_GBps`, `fabric`, `nic_gbps` and, where given, the NIC's `transport`; read by the cluster reader.

#include "core/cluster_json.hpp"
#include "core/json_input.hpp"

#include "core/gpu_spec.hpp"
#include "core/units.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

inline hetsim::Cluster nccl_test_machine(const hetsim::JsonInput& machine)
{
  nlohmann::json nic = {{"bandwidth_gbps", machine.at("nic_gbps").positive_number()}};
  if (machine.has("transport"))
    nic["transport"] = machine.at("transport").string();
  const nlohmann::json node = {
      {"gpu", machine.at("gpu").string()},
      {"devices", machine.at("gpus_per_node").positive_int()},
      {"repeat", machine.at("nodes").positive_int()},
      {"intra_node", {{"bandwidth_GBps", machine.at("intra_GBps").positive_number()},
                      {"fabric", machine.at("fabric").string()}}},
      {"nic", nic}};
  return hetsim::cluster_from_json({{"name", "nccl-tests machine"}, {"regions", {{{"nodes", {node}}}}}},
                                   machine.where());
}

/// `nodes` nodes of eight `gpu`s, each GPU `intra_GBps` to its node's `fabric`, each node `nic_gbps` out.
inline hetsim::Cluster eight_gpu_nodes(const char* gpu, int nodes, double intra_GBps, hetsim::IntraFabric fabric,
                                       double nic_gbps)
{
  using namespace hetsim;
  Cluster c;
  const int type   = c.add_gpu(*find_catalog_gpu(gpu));
  const int region = c.add_region("r", 2e-6);
  for (int n = 0; n < nodes; ++n) {
    const int node = c.add_node(region, "n" + std::to_string(n), Link{intra_GBps * units::kGBps, 2e-6},
                                Link{nic_gbps * units::kGbps, 5e-6});
    c.set_fabric(node, fabric);
    for (int d = 0; d < 8; ++d)
      c.add_device(node, type);
  }
  return c;
}

inline std::vector<int> devices(int n)
{
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i)
    v[i] = i;
  return v;
}
