// NCCL's tuner as HetSim reads it (costmodel/nccl_tuning.hpp): the rules of src/graph/tuning.cc at v2.30.7-1
// that decide which algorithm and protocol a call takes, and the channels its topology search finds.

#include "core/error.hpp"
#include "core/units.hpp"
#include "costmodel/nccl_collective.hpp"
#include "costmodel/nccl_tuning.hpp"
#include "nccl_machine.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace hetsim;
using namespace hetsim::costmodel;

namespace {

NcclTopology system_of(int cc, int ranks, int nodes, NcclIntraLink intra, double intra_bw, double nic_bw, int nics,
                       bool nvswitch)
{
  NcclTopology t;
  t.compute_capability = t.max_compute_capability = cc;
  t.ranks         = ranks;
  t.nodes         = nodes;
  t.intra         = intra;
  t.intra_bw_GBps = intra_bw;
  t.nic_bw_GBps   = nic_bw;
  t.nics          = nics;
  t.nvswitch      = nvswitch;
  return nccl_topology(t);
}

// DGX A100: 12 NVLinks of SM80_NVLINK_BW (20 GB/s) per GPU through NVSwitches; eight 200 Gb/s NICs.
const NcclTopology kDgxA100 = system_of(80, 8, 1, NcclIntraLink::nvlink, 12 * 20.0, 25.0, 8, true);
// DGX H100: 18 NVLinks of SM90_NVLINK_BW (20.6 GB/s); eight 400 Gb/s NICs.
const NcclTopology kDgxH100 = system_of(90, 8, 1, NcclIntraLink::nvlink, 18 * 20.6, 50.0, 8, true);

} // namespace

TEST_CASE("the search's channels: DGX A100 rings split in two, DGX H100 adds NVLS heads")
{
  // Six channels of 40 GB/s carry a GPU's 240, and ncclTopoDupChannels splits them into twelve of 20.
  CHECK(kDgxA100.ring_channels == 12);
  CHECK(kDgxA100.ring_bw_GBps == doctest::Approx(20.0));
  CHECK(kDgxA100.nvls_channels == 0); // no NVLS before Hopper
  CHECK(kDgxH100.ring_channels * kDgxH100.ring_bw_GBps == doctest::Approx(360.0));
  CHECK(kDgxH100.nvls_channels == 8); // every GPU of the node a head (search.cc:1135-1137)
  // Past one node a ring channel leaves through one NIC: eight 200 Gb/s NICs carry 8 x 24 GB/s.
  const NcclTopology a100_nodes = system_of(80, 64, 8, NcclIntraLink::nvlink, 240.0, 25.0, 8, true);
  CHECK(a100_nodes.ring_channels * a100_nodes.ring_bw_GBps == doctest::Approx(192.0));
}

TEST_CASE("NCCL's choice moves from low-latency protocols to Simple as the call grows")
{
  const NcclChoice small = nccl_choose(kDgxA100, NcclFunction::all_reduce, 64 * 1024, {});
  CHECK(small.algorithm == NcclAlgorithm::ring);
  CHECK(small.protocol == NcclProtocol::ll);
  const NcclChoice large = nccl_choose(kDgxA100, NcclFunction::all_reduce, 1 << 30, {});
  CHECK(large.protocol == NcclProtocol::simple);
  // Large all-reduces reach the ring graph's bus bandwidth, 240 GB/s, less the base latency.
  const double bus = nccl_bus_bandwidth_GBps(NcclFunction::all_reduce, 8, 1 << 30, large.seconds);
  CHECK(bus == doctest::Approx(240.0).epsilon(0.01));
  CHECK(bus < 240.0);
  // Hopper's NVSwitch multicast takes large all-reduces on one node; not all-gathers past one node.
  CHECK(nccl_choose(kDgxH100, NcclFunction::all_reduce, 1 << 30, {}).algorithm == NcclAlgorithm::nvls);
  const NcclTopology two_h100 = system_of(90, 16, 2, NcclIntraLink::nvlink, 18 * 20.6, 50.0, 8, true);
  CHECK(nccl_choose(two_h100, NcclFunction::all_gather, 1 << 30, {}).algorithm == NcclAlgorithm::ring);
  CHECK(nccl_choose(two_h100, NcclFunction::all_reduce, 1 << 30, {}).algorithm == NcclAlgorithm::nvls_tree);
  // The communicator runs twice the search's channels.
  CHECK(large.channels == 24);
}

TEST_CASE("LL128 runs only where NCCL enables it by default")
{
  // Four GPUs on PCIe 4.0 x16: width x speed / 80 = 24 GB/s (src/graph/topo.cc:657).
  const NcclTopology over_pcie = system_of(80, 4, 1, NcclIntraLink::pci, 24.0, 12.5, 1, false);
  const NcclTable table        = nccl_table(over_pcie, NcclFunction::all_reduce, {});
  CHECK(table.cost[1][1].bandwidth_GBps == 0.0); // ring LL128: PCIe is past PATH_NVB
  CHECK(table.cost[1][2].bandwidth_GBps > 0.0);
  // Asked for by name, it runs anyway (NCCL_PROTO overrides the default rule).
  const NcclTable asked = nccl_table(over_pcie, NcclFunction::all_reduce, {"", "LL128", 0, 0});
  CHECK(asked.cost[1][1].bandwidth_GBps > 0.0);
  CHECK(asked.cost[1][2].bandwidth_GBps == 0.0);
  // Mixed generations below Hopper: off; both Hopper or later: on.
  NcclTopology mixed           = kDgxA100;
  mixed.compute_capability     = 70;
  mixed.max_compute_capability = 80;
  CHECK(nccl_table(mixed, NcclFunction::all_reduce, {}).cost[1][1].bandwidth_GBps == 0.0);
  CHECK(nccl_table(kDgxA100, NcclFunction::all_reduce, {}).cost[1][1].bandwidth_GBps > 0.0);
}

TEST_CASE("NCCL_ALGO and NCCL_PROTO as NCCL parses them, and their errors in one line")
{
  const NcclChoice ring_only = nccl_choose(kDgxH100, NcclFunction::all_reduce, 1 << 30, {"Ring", "", 0, 0});
  CHECK(ring_only.algorithm == NcclAlgorithm::ring);
  const NcclChoice not_nvls = nccl_choose(kDgxH100, NcclFunction::all_reduce, 1 << 30, {"^NVLS", "", 0, 0});
  CHECK(not_nvls.algorithm != NcclAlgorithm::nvls);
  // A prefix applies to its function only.
  const NcclChoice per_function =
      nccl_choose(kDgxH100, NcclFunction::all_reduce, 1 << 30, {"Ring;allgather:Ring", "", 0, 0});
  CHECK(per_function.algorithm == NcclAlgorithm::ring);
  CHECK(nccl_choose(kDgxA100, NcclFunction::all_reduce, 1 << 30, {"", "LL", 0, 0}).protocol == NcclProtocol::ll);
  CHECK_THROWS_WITH_AS(nccl_choose(kDgxA100, NcclFunction::all_reduce, 1 << 20, {"Ringg", "", 0, 0}),
                       doctest::Contains("NCCL_ALGO: 'Ringg' is not one of NCCL's algorithms"), InputError);
  CHECK_THROWS_WITH_AS(nccl_choose(kDgxA100, NcclFunction::all_reduce, 1 << 20, {"Ring;Tree", "", 0, 0}),
                       doctest::Contains("NCCL_ALGO: every entry but the first needs a function prefix"),
                       InputError);
  CHECK_THROWS_WITH_AS(nccl_choose(kDgxA100, NcclFunction::all_reduce, 1 << 20, {"gather:Ring", "", 0, 0}),
                       doctest::Contains("'gather' is not one of NCCL's functions"), InputError);
  // PAT runs all-gathers with one rank per node only; alone it leaves an all-reduce nothing.
  CHECK_THROWS_WITH_AS(nccl_choose(kDgxA100, NcclFunction::all_reduce, 1 << 20, {"PAT", "", 0, 0}),
                       doctest::Contains("no algorithm and protocol left for AllReduce"), InputError);
}

TEST_CASE("NCCL_MAX_NCHANNELS narrows what rings carry")
{
  const NcclChoice all = nccl_choose(kDgxA100, NcclFunction::all_gather, 1 << 30, {"Ring", "Simple", 0, 0});
  const NcclChoice few = nccl_choose(kDgxA100, NcclFunction::all_gather, 1 << 30, {"Ring", "Simple", 0, 6});
  CHECK(few.channels == 6);
  CHECK(few.seconds > 3.5 * all.seconds); // a quarter of the channels: nearly four times as long
}

TEST_CASE("a cluster's nodes as NCCL's search reads them: NVLink and PCIe credited as NCCL credits them")
{
  // A DGX A100 as a cluster file gives it: 300 GB/s of NVLink per GPU, eight 200 Gb/s NICs.
  const Cluster dgx = eight_gpu_nodes("A100-SXM4-80GB", 2, 300, IntraFabric::unstated, 1600);
  const NcclTopology one = nccl_topology_of(dgx, devices(8));
  CHECK(one.intra == NcclIntraLink::nvlink); // unstated SXM: an NVSwitch board
  CHECK(one.nvswitch);
  CHECK(one.intra_bw_GBps == doctest::Approx(240.0)); // 12 links x SM80_NVLINK_BW
  CHECK(one.nodes == 1);
  const NcclTopology two = nccl_topology_of(dgx, devices(16));
  CHECK(two.nodes == 2);
  CHECK(two.nics == 4); // 1,600 Gb/s read as NICs of at most 400
  CHECK(two.nic_bw_GBps == doctest::Approx(50.0));
  // Priced as NCCL expects: a large all-reduce at NCCL's 240 GB/s bus bandwidth, not the nominal 300, less
  // what its pipeline loses filling (nccl_pipeline.hpp: 1 GiB is 11 pipelines of 96 MiB, 3%).
  const double bytes = 1 << 30;
  const double tuner = nccl_collective(dgx, devices(8), CollectiveOp::all_reduce, bytes).seconds;
  CHECK(nccl_bus_bandwidth_GBps(NcclFunction::all_reduce, 8, bytes, tuner) == doctest::Approx(240).epsilon(0.01));
  const double nccl  = collective_seconds(dgx, devices(8), CollectiveOp::all_reduce, Algorithm::nccl, bytes);
  CHECK(nccl == doctest::Approx(tuner * (1 + 0.40 / (1 + bytes / (24.0 * 8 * (1 << 19))))));
  CHECK(nccl > collective_seconds(dgx, devices(8), CollectiveOp::all_reduce, Algorithm::ring, bytes));
  // Extra calls cost what NCCL expects a small call to; one call's latency is in collective_seconds.
  CHECK(library_latency_seconds(dgx, devices(8), CollectiveOp::all_gather, 1, Algorithm::nccl) == 0.0);
  CHECK(library_latency_seconds(dgx, devices(8), CollectiveOp::all_gather, 11, Algorithm::nccl) ==
        doctest::Approx(10 * nccl_collective_seconds(dgx, devices(8), CollectiveOp::all_gather, 0)));
  // Split into calls, each call fills its own pipeline: ten 100 MiB gathers cost more than one of 1000 MiB by
  // more than ten small calls' latency.
  const double gigabyte = 1000.0 * (1 << 20);
  const double split = library_latency_seconds(dgx, devices(8), CollectiveOp::all_gather, 10, Algorithm::nccl, {},
                                               gigabyte);
  CHECK(split == doctest::Approx(10 * nccl_collective_seconds(dgx, devices(8), CollectiveOp::all_gather, gigabyte / 10) -
                                 nccl_collective_seconds(dgx, devices(8), CollectiveOp::all_gather, gigabyte)));
  CHECK(split > 9 * nccl_collective_seconds(dgx, devices(8), CollectiveOp::all_gather, 0));

  // PCIe: NCCL's 24 GB/s of a 4.0 x16 slot's 31.5, no LL128, no NVLS.
  const Cluster pcie = eight_gpu_nodes("L40S", 1, 31.5, IntraFabric::pcie, 100);
  const NcclTopology slots = nccl_topology_of(pcie, devices(8));
  CHECK(slots.intra == NcclIntraLink::pci);
  CHECK_FALSE(slots.nvswitch);
  CHECK(slots.intra_bw_GBps == doctest::Approx(24.0));

  // Links without a limit (a cluster built in code) give a communicator's most channels, and a finite time.
  Cluster unlimited;
  const int gpu    = unlimited.add_gpu(*find_catalog_gpu("H100-SXM5-80GB"));
  const int region = unlimited.add_region("r", 0);
  for (int n = 0; n < 2; ++n) {
    const int node = unlimited.add_node(region, "n" + std::to_string(n), Link{}, Link{});
    for (int d = 0; d < 4; ++d)
      unlimited.add_device(node, gpu);
  }
  const double seconds = nccl_collective(unlimited, devices(8), CollectiveOp::all_reduce, 1 << 30).seconds;
  CHECK(std::isfinite(seconds));
  CHECK(seconds > 0);
}

TEST_CASE("a GB200 NVL72 rack is one NVLink domain of 72 GPUs to NCCL, with a NIC a GPU")
{
  const Cluster racks = load_cluster("preset:gb200_nvl72");
  REQUIRE(racks.nodes().size() == 4);
  CHECK(racks.nodes()[0].devices.size() == 72);
  const NcclTopology rack = nccl_topology_of(racks, devices(72));
  CHECK(rack.nodes == 1); // 18 trays, one domain
  CHECK(rack.nvswitch);
  CHECK(rack.compute_capability == 100);
  CHECK(rack.intra_bw_GBps == doctest::Approx(900 * 40.1 / 50)); // NVLink 5 as NCCL credits it (topo.h)
  const NcclTopology two = nccl_topology_of(racks, devices(144));
  CHECK(two.nodes == 2);
  CHECK(two.nics == 72); // the rack's 72 x 400 Gb/s ConnectX-7
  CHECK(two.nic_bw_GBps == doctest::Approx(50.0));
  const Cluster halves = load_cluster("preset:gb200_nvl36x2");
  CHECK(halves.nodes().size() == 8);
  CHECK(nccl_topology_of(halves, devices(72)).nodes == 2); // 36 a domain
}

TEST_CASE("an unstated fabric is the board the catalog GPU is sold on")
{
  for (const char* board : {"H100-SXM5-80GB", "B200", "B300", "GB200", "H20"}) {
    CAPTURE(std::string(board));
    const NcclTopology t = nccl_topology_of(eight_gpu_nodes(board, 1, 900, IntraFabric::unstated, 3200), devices(8));
    CHECK(t.nvswitch);
    CHECK(t.intra == NcclIntraLink::nvlink);
  }
  const NcclTopology mesh = nccl_topology_of(eight_gpu_nodes("MI300X", 1, 448, IntraFabric::unstated, 3200), devices(8));
  CHECK_FALSE(mesh.nvswitch); // xGMI links, no switch
  CHECK(mesh.intra == NcclIntraLink::nvlink);
  CHECK(nccl_topology_of(eight_gpu_nodes("L40S", 1, 31.5, IntraFabric::unstated, 400), devices(8)).intra ==
        NcclIntraLink::pci);
}
