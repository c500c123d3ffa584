#include "core/cluster_json.hpp"

#include "core/closest_name.hpp"
#include "core/enum_names.hpp"
#include "core/error.hpp"
#include "core/json_bounds.hpp"
#include "core/json_input.hpp"
#include "core/presets.hpp"
#include "core/units.hpp"

#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

namespace hetsim {
namespace {

// Defaults for links a file leaves out: an NVLink-class port and a 100 Gb/s NIC.
const Link kDefaultIntraNode{1200 * units::kGbps, 2 * units::kMicrosecond};
const Link kDefaultNic{100 * units::kGbps, 5 * units::kMicrosecond};
constexpr int kMaxDevices = Cluster::kMaxDevices;

/// A file without "name" is named after itself: "preset:case5_worldwide_geo" or "dir/my.json" -> its stem.
std::string default_name(const JsonInput& root)
{
  std::string name = root.file();
  if (auto slash = name.find_last_of("/:"); slash != std::string::npos)
    name = name.substr(slash + 1);
  if (name.size() > 5 && name.ends_with(".json"))
    name.resize(name.size() - 5);
  return name;
}

/// Throws when adding `more` devices would pass kMaxDevices.
void check_device_budget(const Cluster& cluster, long long more, const JsonInput& where)
{
  const long long total = cluster.device_count() + more;
  if (total > kMaxDevices)
    throw InputError(where.where() + ": expected a cluster of at most " + std::to_string(kMaxDevices) +
                     " devices, got " + std::to_string(total));
}

/// A link's bandwidth in the unit `unit` (bytes/s per unit): from 1 kbit/s (below it an iteration takes ages
/// and its figures leave what can be printed) to 100 Tbit/s (beyond any link: NVLink 5 is 14.4 Tbit/s).
double link_bandwidth(const JsonInput& value, double unit)
{
  constexpr double kSlowest = 1e3, kFastest = 1e14; // bits per second
  const double bytes_per_s  = bounded_number(value, kFastest / 8 / unit, true) * unit;
  if (bytes_per_s * 8 < kSlowest)
    value.fail("a bandwidth of at least 1 kbit/s");
  return bytes_per_s;
}

/// A latency in `unit` seconds: at most 100 s (a geostationary hop is 0.6 s).
double link_latency(const JsonInput& value, double unit)
{
  return bounded_number(value, 100 / unit) * unit;
}

double read_latency_s(const JsonInput& object, double fallback_s)
{
  auto ms = object.find("latency_ms");
  auto us = object.find("latency_us");
  if (ms && us)
    throw InputError(object.where() + ": give either latency_ms or latency_us, not both");
  if (ms)
    return link_latency(*ms, units::kMillisecond);
  if (us)
    return link_latency(*us, units::kMicrosecond);
  return fallback_s;
}

double read_bandwidth(const JsonInput& object, double fallback)
{
  auto gbps  = object.find("bandwidth_gbps");
  auto gbyte = object.find("bandwidth_GBps");
  if (gbps && gbyte)
    throw InputError(object.where() + ": give either bandwidth_gbps or bandwidth_GBps, not both");
  if (gbps)
    return link_bandwidth(*gbps, units::kGbps);
  if (gbyte)
    return link_bandwidth(*gbyte, units::kGBps);
  return fallback;
}

constexpr EnumNames<IntraFabric, 3> kFabricNames{
    {{{IntraFabric::nvswitch, "nvswitch"}, {IntraFabric::nvlink, "nvlink"}, {IntraFabric::pcie, "pcie"}}}};
constexpr EnumNames<NicTransport, 4> kTransportNames{{{{NicTransport::infiniband, "infiniband"},
                                                       {NicTransport::roce, "roce"},
                                                       {NicTransport::efa, "efa"},
                                                       {NicTransport::socket, "socket"}}}};

/// A link (`fallback` where the file leaves it out) and what kind it is, by its field `kind` named as `names`
/// has it; `Enum::unstated` where not said. `expected` is the refusal's words for a name not in `names`.
template <class Enum, std::size_t N>
std::pair<Link, Enum> read_link_of_kind(const std::optional<JsonInput>& object, Link fallback, std::string_view kind,
                                        const EnumNames<Enum, N>& names, const char* expected,
                                        bool only_these_fields = true)
{
  if (!object)
    return {fallback, Enum::unstated};
  if (only_these_fields)
    object->allow_only({"bandwidth_gbps", "bandwidth_GBps", "latency_ms", "latency_us", kind});
  Enum value = Enum::unstated;
  if (const auto field = object->find(kind); field && !names.parse(field->string(), value))
    field->fail(expected);
  return {Link{read_bandwidth(*object, fallback.bandwidth_bytes_per_s), read_latency_s(*object, fallback.latency_s)},
          value};
}

/// A node's `intra_node`: its link, and what the link is ("fabric").
std::pair<Link, IntraFabric> read_intra_node(const std::optional<JsonInput>& object)
{
  return read_link_of_kind(object, kDefaultIntraNode, "fabric", kFabricNames,
                           "\"nvswitch\", \"nvlink\" or \"pcie\"");
}

struct NicRead {
  Link link;
  NicTransport transport   = NicTransport::unstated;
  double achieved_bytes_per_s = 0; ///< what the socket transport moves through it, as the file says; 0: not said
};

/// A node's `nic`: its link, how NCCL's traffic crosses it ("transport"), and under the socket transport what
/// the user's own nccl-tests moved through it at large sizes ("achieved_GBps", the bus bandwidth nccl-tests
/// prints, or "achieved_gbps"), at most the line rate.
NicRead read_nic(const std::optional<JsonInput>& object)
{
  NicRead nic;
  if (object)
    object->allow_only({"bandwidth_gbps", "bandwidth_GBps", "latency_ms", "latency_us", "transport", "achieved_gbps",
                        "achieved_GBps"});
  std::tie(nic.link, nic.transport) = read_link_of_kind(object, kDefaultNic, "transport", kTransportNames,
                                                        "\"infiniband\", \"roce\", \"efa\" or \"socket\"", false);
  for (const char* field : {"achieved_gbps", "achieved_GBps"}) {
    const auto achieved = object ? object->find(field) : std::nullopt;
    if (!achieved)
      continue;
    if (nic.transport != NicTransport::socket)
      achieved->fail("only with \"transport\": \"socket\" (what NCCL's sockets move through this NIC)");
    if (nic.achieved_bytes_per_s > 0)
      achieved->fail("one of achieved_gbps and achieved_GBps");
    const bool gigabits      = std::string_view(field) == "achieved_gbps";
    nic.achieved_bytes_per_s = achieved->positive_number() * (gigabits ? units::kGbps : units::kGBps);
    if (nic.achieved_bytes_per_s > nic.link.bandwidth_bytes_per_s * (1 + 1e-9)) {
      char line_rate[64];
      std::snprintf(line_rate, sizeof line_rate, "at most the NIC's line rate (%g Gb/s)",
                    nic.link.bandwidth_bytes_per_s / units::kGbps);
      achieved->fail(line_rate);
    }
  }
  return nic;
}

GpuSpec read_inline_gpu(const JsonInput& spec, const std::string& name)
{
  spec.allow_only(
      {"name", "memory_gib", "memory_bandwidth_GBps", "peak_tflops_fp16", "peak_tflops_fp32", "multiprocessors",
       "bf16", "compute_capability", "peak_tflops_fp8"});
  GpuSpec gpu;
  gpu.name                         = spec.string_or("name", name);
  gpu.memory_bytes                 = spec.at("memory_gib").positive_number() * units::kGiB;
  gpu.memory_bandwidth_bytes_per_s = spec.at("memory_bandwidth_GBps").positive_number() * units::kGBps;
  gpu.peak_flops_fp16              = spec.at("peak_tflops_fp16").positive_number() * units::kTera;
  gpu.peak_flops_fp32              = spec.positive_number_or("peak_tflops_fp32", gpu.peak_flops_fp16 / 8) * units::kTera;
  if (auto fp8 = spec.find("peak_tflops_fp8")) // dense; unstated: no fp8 tensor cores
    gpu.peak_flops_fp8 = fp8->positive_number() * units::kTera;
  if (auto multiprocessors = spec.find("multiprocessors"))
    gpu.multiprocessors = multiprocessors->positive_int();
  gpu.bf16 = spec.boolean_or("bf16", true); // docs/inputs.md: a GPU given inline takes bf16 unless it says otherwise
  // As nvidia-smi --query-gpu=compute_cap writes it (8.0, 9.0); which attention kernels run there follows.
  if (auto capability = spec.find("compute_capability")) {
    const double version = capability->positive_number();
    if (version < 3 || version >= 20 || std::fabs(version * 10 - std::round(version * 10)) > 1e-9)
      capability->fail("a CUDA compute capability as major.minor, e.g. 8.0 or 9.0");
    gpu.compute_capability = static_cast<int>(std::lround(version * 10));
  }
  return gpu;
}

/// Resolves GPU names against the file's own `gpus` first, then the catalog.
class GpuResolver {
public:
  GpuResolver(Cluster& cluster, const std::optional<JsonInput>& inline_specs) : cluster_(cluster)
  {
    if (!inline_specs)
      return;
    if (!inline_specs->is_object())
      inline_specs->fail("an object mapping GPU names to specs");
    for (const auto& [key, unused] : inline_specs->value().items())
      inline_.emplace(key, read_inline_gpu(inline_specs->at(key), key));
  }

  int resolve(const JsonInput& value)
  {
    if (value.is_object())
      return cluster_.add_gpu(read_inline_gpu(value, "custom"));
    const std::string name = value.string();
    if (auto it = inline_.find(name); it != inline_.end())
      return cluster_.add_gpu(it->second);
    if (const GpuSpec* spec = find_catalog_gpu(name))
      return cluster_.add_gpu(*spec);
    std::vector<std::string> known;
    for (const auto& spec : gpu_catalog()) {
      known.push_back(spec.name);
      for (const std::string& alias : catalog_gpu_aliases(spec.name))
        known.push_back(alias);
    }
    throw InputError(value.where() + ": unknown GPU " + quote(name) + did_you_mean(name, known) + "; known: " +
                     catalog_gpu_names() + " (`hetsim inspect gpus` lists them with the other names each is known "
                     "by), or define it under \"gpus\"");
  }

private:
  Cluster& cluster_;
  std::map<std::string, GpuSpec> inline_;
};

/// Reads a square matrix of size `count` whose off-diagonal entries go through `read`.
template <class Read>
void read_region_matrix(const JsonInput& matrix, int count, Read read)
{
  if (static_cast<int>(matrix.size()) != count)
    matrix.fail("a " + std::to_string(count) + "x" + std::to_string(count) + " matrix (one row per region)");
  for (int i = 0; i < count; ++i) {
    JsonInput row = matrix.at(i);
    if (static_cast<int>(row.size()) != count)
      row.fail("a row of " + std::to_string(count) + " numbers");
    for (int j = 0; j < count; ++j)
      if (i != j)
        read(i, j, row.at(j));
  }
}

void read_inter_region(Cluster& cluster, const JsonInput& latency_ms, const JsonInput& bandwidth_gbps)
{
  const int count = static_cast<int>(cluster.regions().size());
  std::vector<std::vector<Link>> links(count, std::vector<Link>(count));
  read_region_matrix(latency_ms, count, [&](int i, int j, const JsonInput& v) {
    links[i][j].latency_s = link_latency(v, units::kMillisecond);
  });
  read_region_matrix(bandwidth_gbps, count, [&](int i, int j, const JsonInput& v) {
    links[i][j].bandwidth_bytes_per_s = link_bandwidth(v, units::kGbps);
  });
  for (int i = 0; i < count; ++i)
    for (int j = 0; j < count; ++j)
      if (i != j)
        cluster.set_inter_region(i, j, links[i][j]);
}

void read_wan_sharing(Cluster& cluster, const JsonInput& root)
{
  auto sharing = root.find("wan_sharing");
  if (!sharing)
    return;
  const std::string value = sharing->string();
  if (value == "shared")
    cluster.set_wan_sharing(WanSharing::shared);
  else if (value == "per_flow")
    cluster.set_wan_sharing(WanSharing::per_flow);
  else
    sharing->fail("\"shared\" or \"per_flow\"");
}

void add_nodes(Cluster& cluster, GpuResolver& gpus, int region, const JsonInput& node)
{
  node.allow_only({"name", "gpu", "devices", "repeat", "intra_node", "nic"});
  const int repeat        = node.positive_int_or("repeat", 1);
  const std::string base  = node.name_or("name", cluster.regions()[region].name + ".node" +
                                                      std::to_string(cluster.regions()[region].nodes.size()));
  const auto [intra, fabric] = read_intra_node(node.find("intra_node"));
  const NicRead nic          = read_nic(node.find("nic"));
  JsonInput devices       = node.at("devices");
  std::vector<int> device_gpus;
  std::vector<std::string> gpu_origins; // where each device's GPU is named
  if (!devices.is_number() && !devices.is_array())
    devices.fail("a device count or a list of GPU names");
  if (devices.is_number()) {
    const int gpu   = gpus.resolve(node.at("gpu"));
    const int count = devices.positive_int();
    check_device_budget(cluster, count, devices);
    device_gpus.assign(count, gpu);
    gpu_origins.assign(count, node.at("gpu").where());
  } else {
    if (node.has("gpu"))
      throw InputError(node.where() + ": give either \"gpu\" with a device count or a list of GPU names in "
                                      "\"devices\", not both");
    if (devices.size() == 0)
      devices.fail("a positive device count or a non-empty list of GPU names");
    for (const auto& d : devices.elements()) {
      device_gpus.push_back(gpus.resolve(d));
      gpu_origins.push_back(d.where());
    }
  }
  check_device_budget(cluster, static_cast<long long>(repeat) * device_gpus.size(), node);
  for (int r = 0; r < repeat; ++r) {
    const int id = cluster.add_node(region, repeat == 1 ? base : base + "." + std::to_string(r), intra, nic.link);
    cluster.set_fabric(id, fabric);
    cluster.set_transport(id, nic.transport, nic.achieved_bytes_per_s);
    for (std::size_t k = 0; k < device_gpus.size(); ++k)
      cluster.add_device(id, device_gpus[k], gpu_origins[k]);
  }
}

void read_overrides(Cluster& cluster, const JsonInput& list)
{
  std::map<std::string, int> node_ids;
  std::map<std::pair<int, int>, std::string> directions; // (src, dst) -> the entry that set it
  for (std::size_t i = 0; i < cluster.nodes().size(); ++i)
    node_ids.emplace(cluster.nodes()[i].name, static_cast<int>(i));
  for (const auto& entry : list.elements()) {
    entry.allow_only({"src_node", "dst_node", "bandwidth_gbps", "bandwidth_GBps", "latency_ms", "latency_us",
                      "symmetric"});
    auto node_id = [&](const char* field) {
      JsonInput v = entry.at(field);
      auto it     = node_ids.find(v.string());
      if (it == node_ids.end())
        v.fail("the name of a node of this cluster");
      return it->second;
    };
    NodePairOverride o;
    o.src_node = node_id("src_node");
    o.dst_node = node_id("dst_node");
    if (o.src_node == o.dst_node)
      entry.at("dst_node").fail("a node other than src_node");
    if (cluster.nodes()[o.src_node].region != cluster.nodes()[o.dst_node].region)
      throw InputError(entry.where() + ": expected two nodes of the same region; links between regions belong in "
                                       "inter_region (give each node its own region for per-node matrices)");
    o.link = Link{read_bandwidth(entry, Link{}.bandwidth_bytes_per_s),
                  read_latency_s(entry, cluster.regions()[cluster.nodes()[o.src_node].region].latency_s)};
    // A direction given twice (a->b after a symmetric b->a, say) would be two links for one route.
    auto add = [&](const NodePairOverride& pair) {
      const auto [given, fresh] = directions.emplace(std::make_pair(pair.src_node, pair.dst_node), entry.where());
      if (!fresh)
        throw InputError(entry.where() + ": expected each direction between two nodes once, got " +
                         quote(cluster.nodes()[pair.src_node].name) + " -> " +
                         quote(cluster.nodes()[pair.dst_node].name) + " again (set by " + given->second +
                         "; an override is symmetric unless it says \"symmetric\": false)");
      cluster.add_override(pair);
    };
    add(o);
    if (entry.boolean_or("symmetric", true))
      add(NodePairOverride{o.dst_node, o.src_node, o.link});
  }
}

Cluster read_native(const JsonInput& root)
{
  root.allow_only({"name", "description", "source", "gpus", "regions", "inter_region", "overrides", "wan_sharing"});
  Cluster cluster(root.name_or("name", single_line(default_name(root))));
  GpuResolver gpus(cluster, root.find("gpus"));
  JsonInput regions = root.at("regions");
  if (regions.size() == 0)
    regions.fail("a non-empty list of regions");
  for (const auto& region : regions.elements()) {
    region.allow_only({"name", "latency_ms", "latency_us", "nodes"});
    const int id = cluster.add_region(region.name_or("name", "region" + std::to_string(cluster.regions().size())),
                                      read_latency_s(region, 0));
    JsonInput nodes = region.at("nodes");
    if (nodes.size() == 0)
      nodes.fail("a non-empty list of nodes");
    for (const auto& node : nodes.elements())
      add_nodes(cluster, gpus, id, node);
  }
  if (cluster.regions().size() > 1) {
    JsonInput inter = root.at("inter_region");
    inter.allow_only({"latency_ms", "bandwidth_gbps"});
    read_inter_region(cluster, inter.at("latency_ms"), inter.at("bandwidth_gbps"));
  }
  if (auto overrides = root.find("overrides"))
    read_overrides(cluster, *overrides);
  read_wan_sharing(cluster, root);
  return cluster;
}

/// shared/data/geo shape: single-GPU machines per region.
Cluster read_geo_regions(const JsonInput& root)
{
  root.allow_only({"name", "description", "source", "gpu", "regions", "devices_per_region", "intra_region",
                   "intra_region_per_region", "latency_ms", "bandwidth_gbps", "wan_sharing"});
  Cluster cluster(root.name_or("name", single_line(default_name(root))));
  GpuResolver gpus(cluster, std::nullopt);
  const int gpu         = gpus.resolve(root.at("gpu"));
  const std::string gpu_origin = root.at("gpu").where();
  JsonInput names       = root.at("regions");
  const int per_region  = root.at("devices_per_region").positive_int();
  check_device_budget(cluster, static_cast<long long>(per_region) * names.size(), root.at("devices_per_region"));
  auto shared_intra     = root.find("intra_region");
  auto per_region_intra = root.find("intra_region_per_region");
  if (!shared_intra && !per_region_intra)
    throw InputError(root.where() + ": missing required field 'intra_region' (or 'intra_region_per_region')");
  for (std::size_t r = 0; r < names.size(); ++r) {
    JsonInput intra = per_region_intra ? per_region_intra->at(r) : *shared_intra;
    intra.allow_only({"latency_ms", "bandwidth_gbps"});
    const std::string name = names.at(r).name();
    const int region       = cluster.add_region(name, read_latency_s(intra, 0));
    // Each machine's NIC carries the measured intra-region bandwidth; latency sits on the region switch.
    const Link nic{read_bandwidth(intra, kDefaultNic.bandwidth_bytes_per_s), 0};
    for (int d = 0; d < per_region; ++d) {
      const int node = cluster.add_node(region, name + "." + std::to_string(d), kDefaultIntraNode, nic);
      cluster.add_device(node, gpu, gpu_origin);
    }
  }
  if (names.size() > 1)
    read_inter_region(cluster, root.at("latency_ms"), root.at("bandwidth_gbps"));
  read_wan_sharing(cluster, root);
  return cluster;
}

/// shared/data/geo data-centre shape: multi-GPU nodes in one region.
Cluster read_geo_groups(const JsonInput& root)
{
  root.allow_only({"name", "description", "source", "gpu", "groups", "inter_group"});
  Cluster cluster(root.name_or("name", single_line(default_name(root))));
  GpuResolver gpus(cluster, std::nullopt);
  const int gpu      = gpus.resolve(root.at("gpu"));
  const std::string gpu_origin = root.at("gpu").where();
  JsonInput inter    = root.at("inter_group");
  inter.allow_only({"latency_ms", "bandwidth_gbps"});
  const Link nic{read_bandwidth(inter, kDefaultNic.bandwidth_bytes_per_s), kDefaultNic.latency_s};
  const int region   = cluster.add_region("datacenter", read_latency_s(inter, 0));
  JsonInput groups   = root.at("groups");
  if (groups.size() == 0)
    groups.fail("a non-empty list of groups");
  for (const auto& group : groups.elements()) {
    group.allow_only({"name", "devices", "intra_bandwidth_gbps"});
    Link intra = kDefaultIntraNode;
    if (auto bw = group.find("intra_bandwidth_gbps"))
      intra.bandwidth_bytes_per_s = link_bandwidth(*bw, units::kGbps);
    const int node  = cluster.add_node(region, group.at("name").name(), intra, nic);
    const int count = group.at("devices").positive_int();
    check_device_budget(cluster, count, group.at("devices"));
    for (int d = 0; d < count; ++d)
      cluster.add_device(node, gpu, gpu_origin);
  }
  return cluster;
}

/// Nodes and regions are named in slowdowns, jobs, overrides and exports: each name must say which one.
void check_unique_names(const Cluster& cluster, const JsonInput& root)
{
  const auto check = [&](const auto& list, const char* what) {
    std::map<std::string, std::size_t> seen;
    for (std::size_t k = 0; k < list.size(); ++k)
      if (const auto [it, fresh] = seen.emplace(list[k].name, k); !fresh)
        throw InputError(root.where() + ": " + what + " " + quote(list[k].name) + " is given twice (" + what +
                         "s " + std::to_string(it->second) + " and " + std::to_string(k) +
                         "); expected a name of its own for each " + what + ", as slowdowns, jobs and overrides name "
                         "them");
  };
  check(cluster.regions(), "region");
  check(cluster.nodes(), "node");
}

} // namespace

Cluster cluster_from_json(const nlohmann::json& json, const std::string& origin)
{
  JsonInput root(json, origin);
  if (!root.is_object())
    root.fail("an object describing a cluster");
  Cluster cluster;
  if (root.has("groups"))
    cluster = read_geo_groups(root);
  else if (root.has("regions") && root.at("regions").is_array() && root.at("regions").size() > 0 &&
           root.at("regions").at(0).is_string())
    cluster = read_geo_regions(root);
  else
    cluster = read_native(root);
  check_unique_names(cluster, root);
  check_cluster_complete(cluster, origin);
  return cluster;
}

Cluster load_cluster(const std::string& file_or_preset)
{
  InputText input = read_input("cluster", file_or_preset);
  return cluster_from_json(JsonInput::parse_text(input.text, input.origin), input.origin);
}

std::string cluster_gpu_name(const JsonInput& value, const Cluster& cluster)
{
  const std::string name = value.string();
  std::string known;
  for (const auto& spec : cluster.gpus()) {
    if (spec.name == name)
      return name;
    known += (known.empty() ? "" : ", ") + spec.name;
  }
  if (const GpuSpec* catalog = find_catalog_gpu(name))
    for (const auto& spec : cluster.gpus())
      if (spec.name == catalog->name)
        return spec.name;
  value.fail("a GPU of cluster " + quote(cluster.name()) + " (" + known + ")");
}

namespace {

/// The index of the entry of `list` (nodes or regions) that `value` names; `what` says what it must be.
template <class Named>
int index_named(const std::vector<Named>& list, const JsonInput& value, const std::string& what)
{
  const std::string name = value.string();
  std::vector<std::string> names;
  for (std::size_t k = 0; k < list.size(); ++k) {
    if (list[k].name == name)
      return static_cast<int>(k);
    names.push_back(list[k].name);
  }
  // A node written with "repeat" is known by its copies' names only: say which they are.
  std::string copies;
  int listed = 0;
  for (const std::string& candidate : names)
    if (candidate.size() > name.size() + 1 && candidate.starts_with(name + ".") && ++listed <= 4)
      copies += (copies.empty() ? "" : ", ") + quote(candidate);
  const std::string got = value.where() + ": expected " + what + ", got " + json_type_name(value.value());
  if (listed > 0)
    throw InputError(got + ", a node written with \"repeat\": its copies are named " + copies +
                     (listed > 4 ? ", ... (" + std::to_string(listed) + " in all)" : ""));
  throw InputError(got + did_you_mean(name, names));
}

} // namespace

int cluster_node_index(const JsonInput& value, const Cluster& cluster)
{
  return index_named(cluster.nodes(), value, "a node of cluster " + quote(cluster.name()));
}

int cluster_region_index(const JsonInput& value, const Cluster& cluster)
{
  return index_named(cluster.regions(), value, "a region of cluster " + quote(cluster.name()));
}

} // namespace hetsim
