#pragma once
/// Cluster files. Three shapes are accepted:
///  - the native shape: `regions` is a list of region objects, each with `nodes`;
///  - the compact geo shape of shared/data/geo: `regions` is a list of names, with `devices_per_region`
///    single-GPU machines, `intra_region` (or `intra_region_per_region`) and `latency_ms`/`bandwidth_gbps`
///    matrices between regions;
///  - the compact data-centre shape: `groups` of multi-GPU nodes joined by `inter_group`.
/// See docs/inputs.md ("Cluster") for every field.

#include "core/cluster.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace hetsim {

class JsonInput;

/// Loads `preset:NAME` from the built-in presets or a file path.
Cluster load_cluster(const std::string& file_or_preset);
/// Builds a cluster from parsed JSON; `origin` prefixes every error message.
Cluster cluster_from_json(const nlohmann::json& json, const std::string& origin);

/// The cluster's name for the GPU a file names by catalog name or alias (for files measured on a cluster, such
/// as profiles); InputError naming the cluster's GPUs otherwise.
std::string cluster_gpu_name(const JsonInput& value, const Cluster& cluster);

/// The node or region (its index in cluster.nodes() or cluster.regions()) a user's file names by `value`;
/// InputError naming the field otherwise ("expected a node of cluster 'x', got string \"y\"").
int cluster_node_index(const JsonInput& value, const Cluster& cluster);
int cluster_region_index(const JsonInput& value, const Cluster& cluster);

} // namespace hetsim
