#pragma once
/// Link classes, the granularity at which a Calibration fits the network: "intra_node" (devices of one node),
/// "inter_node" (nodes of one region) and "inter_region" (across the WAN).

#include "core/cluster.hpp"
#include "costmodel/calibration.hpp"

#include <string_view>
#include <vector>

namespace hetsim::costmodel {

inline constexpr std::string_view kIntraNode   = "intra_node";
inline constexpr std::string_view kInterNode   = "inter_node";
inline constexpr std::string_view kInterRegion = "inter_region";

/// The class of the path between two distinct devices.
std::string_view link_class(const Cluster& cluster, int a, int b);
/// The most remote class among consecutive members of a ring (the last joined to the first).
std::string_view ring_link_class(const Cluster& cluster, const std::vector<int>& devices);

/// The calibrated software cost of one collective over `devices` (γ of the slowest link class its ring crosses);
/// 0 when the calibration has no figure for that class.
double collective_overhead_seconds(const Cluster& cluster, const Calibration& calibration,
                                   const std::vector<int>& devices);

/// `cluster` with its links replaced so that the idle path of every device pair of a calibrated class has the
/// fitted latency α and bandwidth 1/β: intra-node ports for "intra_node", NICs for "inter_node", WAN links for
/// "inter_region". Classes the calibration lacks keep their figures. Both the simulator and the analytic cost
/// model then see the calibrated network.
Cluster calibrated_cluster(const Cluster& cluster, const Calibration& calibration);

} // namespace hetsim::costmodel
