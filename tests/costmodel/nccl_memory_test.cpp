// What NCCL holds on each GPU for a communicator (costmodel/nccl_memory.hpp), from its allocations at v2.30.7-1.

#include "costmodel/nccl_collective.hpp"
#include "costmodel/nccl_memory.hpp"
#include "nccl_machine.hpp"

#include <doctest/doctest.h>

using namespace hetsim;
using namespace hetsim::costmodel;

namespace {

constexpr double kMiB = 1 << 20;
// One connection's LL, LL128 and Simple buffers (src/init.cc:810-813): 512 KiB + 4.6875 MiB + 4 MiB.
constexpr double kConnection = 0.5 * kMiB + 120.0 * 640 * 8 * 8 + 4 * kMiB;

} // namespace

TEST_CASE("NCCL's buffers per communicator: rings on every channel, NVLS heads on Hopper, trees across nodes")
{
  const Cluster h100 = eight_gpu_nodes("H100-SXM5-80GB", 2, 450, IntraFabric::nvswitch, 3200);
  const int channels = nccl_channels(nccl_topology_of(h100, devices(8)), {});
  REQUIRE(channels > 0);
  // Eight H100s: a ring connection per channel, and 16 NVLS channels x 2 buffers of 8 x 128 KiB per head.
  const double one_node = nccl_communicator_bytes(h100, devices(8), NcclUse::collectives);
  CHECK(one_node == doctest::Approx(channels * kConnection + 16 * 2 * 8 * 128 * 1024.0 * 8));
  CHECK(one_node > 400 * kMiB); // 24 channels: 220 MiB of rings, 256 MiB of NVLS
  // Across two nodes, trees connect to a parent and a child on every channel as well.
  const int wide_channels = nccl_channels(nccl_topology_of(h100, devices(16)), {});
  CHECK(nccl_communicator_bytes(h100, devices(16), NcclUse::collectives) ==
        doctest::Approx(3 * wide_channels * kConnection + 16 * 2 * 8 * 128 * 1024.0 * 8));

  // An A100 has no NVLS: rings only.
  const Cluster a100 = eight_gpu_nodes("A100-SXM4-80GB", 1, 300, IntraFabric::nvswitch, 1600);
  CHECK(nccl_communicator_bytes(a100, devices(8), NcclUse::collectives) ==
        doctest::Approx(nccl_channels(nccl_topology_of(a100, devices(8)), {}) * kConnection));

  // NCCL_BUFFSIZE sizes Simple's buffer, NCCL_MAX_NCHANNELS the channels.
  NcclEnvironment small;
  small.buffer_bytes = 1 << 20;
  small.max_channels = 4;
  CHECK(nccl_communicator_bytes(a100, devices(8), NcclUse::collectives, small) ==
        doctest::Approx(4 * (kConnection - 3 * kMiB)));
  CHECK(nccl_communicator_bytes(a100, {3}, NcclUse::collectives) == 0);
}

TEST_CASE("NCCL's buffers to a point-to-point peer: channels by the NVLinks between the two, by NICs across nodes")
{
  const Cluster h100 = eight_gpu_nodes("H100-SXM5-80GB", 2, 450, IntraFabric::nvswitch, 3200);
  // 18 NVLinks: 36 channels, rounded up to 64, at most the communicator's.
  const int pair_channels = nccl_channels(nccl_topology_of(h100, {0, 1}), {});
  CHECK(nccl_communicator_bytes(h100, {0, 1}, NcclUse::point_to_point) ==
        doctest::Approx(std::min(64, pair_channels) * kConnection));
  // Across nodes: one channel per NIC (eight of 400 Gb/s).
  CHECK(nccl_communicator_bytes(h100, {0, 8}, NcclUse::point_to_point) == doctest::Approx(8 * kConnection));
  // PCIe: two.
  const Cluster l40s = eight_gpu_nodes("L40S", 1, 31.5, IntraFabric::pcie, 100);
  CHECK(nccl_communicator_bytes(l40s, {0, 1}, NcclUse::point_to_point) == doctest::Approx(2 * kConnection));
}
