#include "core/cluster_json.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/presets.hpp"
#include "core/units.hpp"
#include "tests/temp_folder.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

using hetsim::Cluster;
using hetsim::InputError;
using hetsim::units::kGbps;

namespace {

Cluster parse(const std::string& text)
{
  return hetsim::cluster_from_json(nlohmann::json::parse(text), "c.json");
}

/// The message of the InputError thrown by parsing `text`, or "" when it parses.
std::string error_of(const std::string& text)
{
  try {
    parse(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

const char* kTwoRegions = R"({
  "name": "two",
  "regions": [
    {"name": "east", "latency_ms": 1, "nodes": [
      {"name": "e0", "gpu": "A100-SXM4-40GB", "devices": 4, "intra_node": {"bandwidth_GBps": 300, "latency_us": 2},
       "nic": {"bandwidth_gbps": 100, "latency_us": 10}},
      {"name": "e1", "devices": ["T4", "T4"], "nic": {"bandwidth_gbps": 25}}]},
    {"name": "west", "nodes": [{"name": "w", "gpu": "V100", "devices": 2, "repeat": 3}]}],
  "inter_region": {"latency_ms": [[0, 30], [40, 0]], "bandwidth_gbps": [[0, 10], [5, 0]]},
  "overrides": [{"src_node": "e0", "dst_node": "e1", "bandwidth_gbps": 8, "latency_ms": 3}]
})";

} // namespace

TEST_CASE("every geo preset loads as a cluster")
{
  struct Expected {
    const char* name;
    int devices;
    std::size_t regions;
  };
  for (auto e : {Expected{"case1_datacenter_on_demand", 64, 1}, Expected{"case2_datacenter_spot", 48, 1},
                 Expected{"case3_multi_datacenter", 64, 2}, Expected{"case4_regional_geo", 64, 4},
                 Expected{"case5_worldwide_geo", 64, 8}, Expected{"fluidstack_a40", 32, 2}}) {
    CAPTURE(e.name);
    const Cluster c = hetsim::load_cluster(std::string("preset:") + e.name);
    CHECK(c.device_count() == e.devices);
    CHECK(c.regions().size() == e.regions);
    CHECK(c.name() == e.name);
  }
}

TEST_CASE("geo preset figures become links")
{
  const Cluster c = hetsim::load_cluster("preset:case5_worldwide_geo");
  // Oregon (0) -> Virginia (1): 67 ms, 1.15 Gb/s; devices 0..7 are in Oregon, 8..15 in Virginia.
  const hetsim::Link wan = c.path(0, 8);
  CHECK(wan.latency_s == doctest::Approx(0.067));
  CHECK(wan.bandwidth_bytes_per_s == doctest::Approx(1.15 * kGbps));
  // Inside a region: 5 ms and the 2 Gb/s of each machine.
  const hetsim::Link local = c.path(0, 1);
  CHECK(local.latency_s == doctest::Approx(0.005));
  CHECK(local.bandwidth_bytes_per_s == doctest::Approx(2 * kGbps));

  const Cluster fluid = hetsim::load_cluster("preset:fluidstack_a40");
  CHECK(fluid.gpu_of(0).name == "A40");
  // Asymmetric: Mid -> East 3.87 Gb/s, East -> Mid 3.73 Gb/s.
  CHECK(fluid.path(0, 16).bandwidth_bytes_per_s == doctest::Approx(3.87 * kGbps));
  CHECK(fluid.path(16, 0).bandwidth_bytes_per_s == doctest::Approx(3.73 * kGbps));
  CHECK(fluid.path(16, 17).bandwidth_bytes_per_s == doctest::Approx(11.98 * kGbps));

  const Cluster dc = hetsim::load_cluster("preset:case1_datacenter_on_demand");
  CHECK(dc.nodes().size() == 8);
  CHECK(dc.path(0, 1).bandwidth_bytes_per_s == doctest::Approx(1200 * kGbps));
  CHECK(dc.path(0, 8).bandwidth_bytes_per_s == doctest::Approx(25 * kGbps));
}

TEST_CASE("native cluster: nodes, repeats, mixed GPUs, overrides and paths")
{
  const Cluster c = parse(kTwoRegions);
  CHECK(c.device_count() == 4 + 2 + 6);
  CHECK(c.nodes().size() == 5);
  CHECK(c.gpu_of(4).name == "T4");
  CHECK(c.gpu_of(6).name == "V100-SXM2-16GB");
  CHECK(c.nodes()[2].name == "w.0");

  // Same node: the port link.
  CHECK(c.path(0, 1).bandwidth_bytes_per_s == doctest::Approx(300e9));
  CHECK(c.path(0, 1).latency_s == doctest::Approx(2e-6).scale(0));
  // e0 -> e1 uses the override: 8 Gb/s, 3 ms plus half of each end's port and NIC latency.
  const hetsim::Link o = c.path(0, 4);
  CHECK(o.bandwidth_bytes_per_s == doctest::Approx(8 * kGbps));
  CHECK(o.latency_s == doctest::Approx(3e-3 + (2e-6 + 10e-6 + 2e-6 + 5e-6) / 2).scale(0));
  // Region to region, asymmetric.
  CHECK(c.path(0, 6).bandwidth_bytes_per_s == doctest::Approx(10 * kGbps));
  CHECK(c.path(6, 0).bandwidth_bytes_per_s == doctest::Approx(5 * kGbps));
  CHECK(c.path(6, 0).latency_s > 0.040);
}

TEST_CASE("a node's fabric is what its intra_node says, unstated otherwise")
{
  const Cluster c = parse(R"({"regions": [{"nodes": [
      {"gpu": "A100-SXM4-80GB", "devices": 8, "intra_node": {"bandwidth_GBps": 300, "fabric": "nvswitch"}},
      {"gpu": "T4", "devices": 4, "intra_node": {"bandwidth_GBps": 32, "fabric": "pcie"}},
      {"gpu": "V100", "devices": 8}]}]})");
  CHECK(c.nodes()[0].fabric == hetsim::IntraFabric::nvswitch);
  CHECK(c.nodes()[1].fabric == hetsim::IntraFabric::pcie);
  CHECK(c.nodes()[2].fabric == hetsim::IntraFabric::unstated);
}

TEST_CASE("a node's NIC transport is what its nic says, unstated otherwise")
{
  const Cluster c = parse(R"({"regions": [{"nodes": [
      {"gpu": "H100-SXM5-80GB", "devices": 8, "nic": {"bandwidth_gbps": 3200, "transport": "efa"}},
      {"gpu": "H100-SXM5-80GB", "devices": 8, "nic": {"bandwidth_gbps": 3200, "transport": "roce"}},
      {"gpu": "H100-SXM5-80GB", "devices": 8, "nic": {"bandwidth_gbps": 3200}}]}]})");
  CHECK(c.nodes()[0].transport == hetsim::NicTransport::efa);
  CHECK(c.nodes()[1].transport == hetsim::NicTransport::roce);
  CHECK(c.nodes()[2].transport == hetsim::NicTransport::unstated);
  CHECK(c.nodes()[0].nic.bandwidth_bytes_per_s == doctest::Approx(3200 * hetsim::units::kGbps));
}

TEST_CASE("under NCCL's sockets a NIC carries what the transport moves, not its line rate")
{
  const Cluster c = parse(R"({"regions": [{"nodes": [
      {"gpu": "T4", "devices": 4, "nic": {"bandwidth_gbps": 50, "transport": "socket"}},
      {"gpu": "T4", "devices": 4, "nic": {"bandwidth_gbps": 100, "transport": "socket", "achieved_gbps": 41}},
      {"gpu": "V100", "devices": 4, "nic": {"bandwidth_gbps": 10, "transport": "socket"}},
      {"gpu": "V100", "devices": 4, "nic": {"bandwidth_gbps": 100, "transport": "socket", "achieved_GBps": 4.7}},
      {"gpu": "T4", "devices": 4, "nic": {"bandwidth_gbps": 50, "transport": "roce"}}]}]})");
  CHECK(c.nodes()[0].transport == hetsim::NicTransport::socket);
  // The public runs' median, and the line rate kept for `inspect`.
  CHECK(c.nodes()[0].nic.bandwidth_bytes_per_s == doctest::Approx(hetsim::kSocketTransportGbps * kGbps));
  CHECK(c.nodes()[0].nic_nominal_bytes_per_s == doctest::Approx(50 * kGbps));
  CHECK_FALSE(c.nodes()[0].socket_rate_measured);
  // The user's own figure replaces it, in Gb/s or as nccl-tests prints it (GB/s); the line rate bounds both.
  CHECK(c.nodes()[1].nic.bandwidth_bytes_per_s == doctest::Approx(41 * kGbps));
  CHECK(c.nodes()[1].socket_rate_measured);
  CHECK(c.nodes()[2].nic.bandwidth_bytes_per_s == doctest::Approx(10 * kGbps));
  CHECK(c.nodes()[3].nic.bandwidth_bytes_per_s == doctest::Approx(4.7 * hetsim::units::kGBps));
  // RDMA moves the line rate.
  CHECK(c.nodes()[4].nic.bandwidth_bytes_per_s == doctest::Approx(50 * kGbps));
  CHECK(c.nodes()[4].nic_nominal_bytes_per_s == 0);
  CHECK(error_of(R"({"regions": [{"nodes": [{"gpu": "T4", "devices": 2,
      "nic": {"bandwidth_gbps": 100, "transport": "roce", "achieved_gbps": 41}}]}]})") ==
        "c.json: regions[0].nodes[0].nic.achieved_gbps: expected only with \"transport\": \"socket\" (what NCCL's "
        "sockets move through this NIC), got number 41");
  CHECK(error_of(R"({"regions": [{"nodes": [{"gpu": "T4", "devices": 2,
      "nic": {"bandwidth_gbps": 25, "transport": "socket", "achieved_gbps": 40}}]}]})") ==
        "c.json: regions[0].nodes[0].nic.achieved_gbps: expected at most the NIC's line rate (25 Gb/s), got number 40");
}

TEST_CASE("a node's transport can change, and its NIC carries what the last one moves")
{
  Cluster c = parse(R"({"regions": [{"nodes": [{"gpu": "T4", "devices": 4,
      "nic": {"bandwidth_gbps": 50, "transport": "socket", "achieved_gbps": 20}}]}]})");
  c.set_transport(0, hetsim::NicTransport::socket); // again, now at the public median
  CHECK(c.nodes()[0].nic.bandwidth_bytes_per_s == doctest::Approx(hetsim::kSocketTransportGbps * kGbps));
  CHECK(c.nodes()[0].nic_nominal_bytes_per_s == doctest::Approx(50 * kGbps));
  c.set_transport(0, hetsim::NicTransport::roce); // off sockets: the line rate again
  CHECK(c.nodes()[0].nic.bandwidth_bytes_per_s == doctest::Approx(50 * kGbps));
  CHECK(c.nodes()[0].nic_nominal_bytes_per_s == 0);
  CHECK_FALSE(c.nodes()[0].socket_rate_measured);
}

TEST_CASE("inline GPU specs")
{
  const Cluster c = parse(R"({"gpus": {"X1": {"memory_gib": 24, "memory_bandwidth_GBps": 500, "peak_tflops_fp16": 100}},
    "regions": [{"nodes": [{"gpu": "X1", "devices": 2}]}]})");
  CHECK(c.gpu_of(1).name == "X1");
  CHECK(c.gpu_of(1).memory_bytes == doctest::Approx(24 * hetsim::units::kGiB));
  CHECK(c.gpu_of(1).bf16); // docs/inputs.md's stated default for a GPU given inline
  CHECK(c.gpu_of(1).peak_flops_fp8 == 0); // no fp8 unless it says

  const Cluster fp8 = parse(R"({"gpus": {"X3": {"memory_gib": 96, "memory_bandwidth_GBps": 4000,
    "peak_tflops_fp16": 500, "peak_tflops_fp8": 1000}}, "regions": [{"nodes": [{"gpu": "X3", "devices": 1}]}]})");
  CHECK(fp8.gpu_of(0).peak_flops_fp8 == doctest::Approx(1000 * hetsim::units::kTera));

  const Cluster fp16_only = parse(R"({"gpus": {"X2": {"memory_gib": 16, "memory_bandwidth_GBps": 900,
    "peak_tflops_fp16": 125, "bf16": false}}, "regions": [{"nodes": [{"gpu": "X2", "devices": 1}]}]})");
  CHECK_FALSE(fp16_only.gpu_of(0).bf16);
  CHECK(hetsim::first_device_lacking(fp16_only, hetsim::Dtype::bf16) == 0);
  CHECK(hetsim::first_device_lacking(fp16_only, hetsim::Dtype::fp16) == -1);
}

TEST_CASE("the catalog's Volta, Turing and Ascend 910 GPUs take no bf16; the rest do")
{
  const Cluster two = parse(kTwoRegions); // A100 x 4, T4 x 2 (devices 4, 5), V100 x 6
  CHECK(hetsim::first_device_lacking(two, hetsim::Dtype::bf16) == 4);
  CHECK(hetsim::first_device_lacking(two, hetsim::Dtype::fp32) == -1);
  CHECK(hetsim::dtype_refusal(two, 4, hetsim::Dtype::bf16) ==
        "bf16 needs bf16 tensor cores, which device 4's T4 (c.json: regions[0].nodes[1].devices[0]) lacks: use fp16 "
        "or fp32");
  for (const char* name : {"V100", "V100S-PCIe-32GB", "T4", "Ascend-910"})
    CHECK_FALSE(hetsim::find_catalog_gpu(name)->bf16);
  for (const char* name : {"A100", "A40", "H100", "H200", "RTX-4090", "RTX-3060", "MI250X"})
    CHECK(hetsim::find_catalog_gpu(name)->bf16);
  // The Ascend 910 lists no fp32 peak: fp32 is refused there too, and the way out names fp16 alone.
  CHECK_FALSE(hetsim::supports_dtype(*hetsim::find_catalog_gpu("Ascend-910"), hetsim::Dtype::fp32));
  const Cluster ascend = parse(R"({"regions": [{"nodes": [{"gpu": "Ascend-910", "devices": 2}]}]})");
  CHECK(hetsim::dtype_refusal(ascend, 0, hetsim::Dtype::bf16) ==
        "bf16 needs bf16 tensor cores, which device 0's Ascend-910 (c.json: regions[0].nodes[0].gpu) lacks: use fp16");
}

TEST_CASE("bad cluster input gives one line naming the file, the path and the expectation")
{
  const std::string unknown_gpu = error_of(R"({"regions": [{"nodes": [{"gpu": "A10x", "devices": 2}]}]})");
  CHECK(unknown_gpu.find("c.json: regions[0].nodes[0].gpu: unknown GPU 'A10x' (did you mean 'A10") == 0);
  CHECK(unknown_gpu.find("?); known: V100-SXM2-16GB") != std::string::npos);
  CHECK(error_of(R"({"regions": [{"nodes": [{"gpu": "T4"}]}]})") ==
        "c.json: regions[0].nodes[0]: missing required field 'devices'");
  CHECK(error_of(R"({"regions": [{"nodes": [{"gpu": "T4", "devices": "two"}]}]})") ==
        "c.json: regions[0].nodes[0].devices: expected a device count or a list of GPU names, got string \"two\"");
  CHECK(error_of(R"({"regions": [{"nodes": [{"gpu": "T4", "devices": 2, "nic": {"bandwidth_gbps": 0}}]}]})") ==
        "c.json: regions[0].nodes[0].nic.bandwidth_gbps: expected a positive number of at most 100000, got number 0");
  CHECK(error_of(R"({"regions": [{"nodes": [{"gpu": "T4", "devices": 2, "nic": {"bandwidth_gbps": -3}}]}]})") ==
        "c.json: regions[0].nodes[0].nic.bandwidth_gbps: expected a positive number of at most 100000, got number -3");
  CHECK(error_of(R"({"regions": [{"nodes": [{"gpu": "T4", "devices": 2, "nic": {"bandwith_gbps": 3}}]}]})")
            .find("c.json: regions[0].nodes[0].nic: unknown field 'bandwith_gbps'") == 0);
  CHECK(error_of(R"({"regions": [{"nodes": [{"gpu": "T4", "devices": 2, "intra_node": {"fabric": "nvlnk"}}]}]})") ==
        "c.json: regions[0].nodes[0].intra_node.fabric: expected \"nvswitch\", \"nvlink\" or \"pcie\", got string "
        "\"nvlnk\"");
  CHECK(error_of(R"({"regions": [{"nodes": [{"gpu": "T4", "devices": 2, "nic": {"transport": "tcp"}}]}]})") ==
        "c.json: regions[0].nodes[0].nic.transport: expected \"infiniband\", \"roce\", \"efa\" or \"socket\", got string "
        "\"tcp\"");
  CHECK(error_of(R"({"regions": []})") == "c.json: regions: expected a non-empty list of regions, got array");
  CHECK(error_of(R"([1, 2])") == "c.json: (top level): expected an object describing a cluster, got array");

  std::string two = kTwoRegions;
  std::string bad_matrix = two;
  bad_matrix.replace(bad_matrix.find("[[0, 10], [5, 0]]"), 17, "[[0, 10]]");
  CHECK(error_of(bad_matrix) == "c.json: inter_region.bandwidth_gbps: expected a 2x2 matrix (one row per region), got array");
  std::string no_inter = two.substr(0, two.find(",\n  \"inter_region\"")) + "}";
  CHECK(error_of(no_inter) == "c.json: (top level): missing required field 'inter_region'");
  std::string cross = two;
  cross.replace(cross.find("\"dst_node\": \"e1\""), 16, "\"dst_node\": \"w.1\"");
  CHECK(error_of(cross).find("c.json: overrides[0]: expected two nodes of the same region") == 0);
  // b->a after a symmetric a->b is one route given two links; one-way overrides in both directions are fine.
  std::string twice = two;
  const std::string one = R"({"src_node": "e0", "dst_node": "e1", "bandwidth_gbps": 8, "latency_ms": 3})";
  twice.replace(twice.find(one), one.size(), one + R"(, {"src_node": "e1", "dst_node": "e0", "bandwidth_gbps": 4})");
  CHECK(error_of(twice) == "c.json: overrides[1]: expected each direction between two nodes once, got 'e1' -> 'e0' "
                           "again (set by c.json: overrides[0]; an override is symmetric unless it says "
                           "\"symmetric\": false)");
  std::string one_way = twice;
  const std::string symmetric_end = "\"latency_ms\": 3}";
  one_way.replace(one_way.find(symmetric_end), symmetric_end.size(), "\"latency_ms\": 3, \"symmetric\": false}");
  one_way.replace(one_way.find("\"bandwidth_gbps\": 4}"), 20, "\"bandwidth_gbps\": 4, \"symmetric\": false}");
  CHECK(error_of(one_way).empty());
  std::string short_wan = two;
  short_wan.replace(short_wan.find("[[0, 30], [40, 0]]"), 18, "[[0, 0.1], [40, 0]]");
  CHECK(error_of(short_wan).find("c.json: inter_region.latency_ms[0][1]: expected at least 0.5 ms") == 0);
}

TEST_CASE("files and presets that do not exist")
{
  CHECK_THROWS_WITH_AS(hetsim::load_cluster("/nonexistent/c.json"),
                       "/nonexistent/c.json: cannot open file (No such file or directory)", InputError);
  CHECK_THROWS_WITH_AS(hetsim::load_cluster("preset:mars"),
                       doctest::Contains("preset:mars: unknown cluster preset 'mars'; known: case1_datacenter_on_demand"),
                       InputError);
}

TEST_CASE("an input past its size bound is refused after reading the bound, not memory's worth")
{
  // Before, `inspect cluster /dev/zero` read 2.1 GB before running out of memory.
  CHECK_THROWS_WITH_AS(hetsim::load_cluster("/dev/zero"), "/dev/zero: expected a file of at most 256 MiB, got more",
                       InputError);
  const hetsim::test::TempFolder folder("bounded_input");
  const std::string file = folder.write("c.json", std::string(3u << 20, ' ') + "{}");
  CHECK_THROWS_WITH_AS(hetsim::read_input_file(file, 2u << 20), (file + ": expected a file of at most 2 MiB, got more").c_str(),
                       InputError);
  CHECK(hetsim::read_input_file(file, 4u << 20).size() == (3u << 20) + 2);
}

TEST_CASE("absurd sizes are refused before they exhaust memory")
{
  CHECK(error_of(R"({"regions": [{"nodes": [{"gpu": "T4", "devices": 100000, "repeat": 100000}]}]})") ==
        "c.json: regions[0].nodes[0]: expected a cluster of at most 1048576 devices, got 10000000000");
  CHECK(error_of(R"({"regions": [{"nodes": [{"gpu": "T4", "devices": 2000000}]}]})") ==
        "c.json: regions[0].nodes[0].devices: expected a cluster of at most 1048576 devices, got 2000000");
}
