#include "costmodel/collective.hpp"
#include "core/units.hpp"

#include <doctest/doctest.h>

using namespace hetsim;
using namespace hetsim::costmodel;

namespace {

/// `nodes` single-GPU machines in one region: each path is NIC-bound at `gbps`.
Cluster uniform_ring(int nodes, double gbps, double latency_s)
{
  Cluster c;
  const int gpu    = c.add_gpu(*find_catalog_gpu("V100"));
  const int region = c.add_region("r", latency_s);
  for (int i = 0; i < nodes; ++i)
    c.add_device(c.add_node(region, "n" + std::to_string(i), Link{1e15, 0}, Link{gbps * units::kGbps, 0}), gpu);
  return c;
}

std::vector<int> first(int n)
{
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i)
    v[i] = i;
  return v;
}

} // namespace

TEST_CASE("ring collectives follow the alpha-beta formula")
{
  const Cluster c    = uniform_ring(8, 10, 1e-3);
  const double bytes = 64e6;
  const double step  = 1e-3 + bytes / 8 / (10 * units::kGbps);
  CHECK(ring_seconds(c, first(8), CollectiveOp::all_reduce, bytes) == doctest::Approx(14 * step));
  CHECK(ring_seconds(c, first(8), CollectiveOp::reduce_scatter, bytes) == doctest::Approx(7 * step));
  CHECK(ring_seconds(c, first(8), CollectiveOp::all_gather, bytes) == doctest::Approx(7 * step));
  CHECK(ring_seconds(c, {3}, CollectiveOp::all_reduce, bytes) == 0);
  CHECK(transfer_seconds(c, 0, 1, bytes) == doctest::Approx(1e-3 + bytes / (10 * units::kGbps)).scale(0));
}

TEST_CASE("the slowest edge bounds a heterogeneous ring")
{
  Cluster c = uniform_ring(4, 10, 0);
  const int gpu = 0;
  c.add_device(c.add_node(0, "slow", Link{1e15, 0}, Link{1 * units::kGbps, 0}), gpu);
  const double bytes = 50e6;
  // Wires without latency: each of the 8 steps still pays NCCL's per-step cost between nodes.
  CHECK(ring_seconds(c, first(5), CollectiveOp::all_reduce, bytes) ==
        doctest::Approx(8 * (kNetworkStepLatency + bytes / 5 / (1 * units::kGbps))));
}

TEST_CASE("tree and hierarchical algorithms")
{
  const Cluster c = uniform_ring(8, 10, 1e-4);
  const double bytes = 64e6;
  const double ring  = ring_seconds(c, first(8), CollectiveOp::all_reduce, bytes);
  const double tree  = tree_seconds(c, first(8), CollectiveOp::all_reduce, bytes, kTreeChunks);
  CHECK(tree > 0);
  CHECK(tree > ring); // bandwidth-bound: the ring moves 2(n-1)/n of the data, the tree about 2x per port
  CHECK(tree_seconds(c, first(8), CollectiveOp::all_gather, bytes, kTreeChunks) ==
        doctest::Approx(ring_seconds(c, first(8), CollectiveOp::all_gather, bytes)));

  // Two nodes of four GPUs: fast ports, slow NICs.
  Cluster two;
  const int gpu    = two.add_gpu(*find_catalog_gpu("A100"));
  const int region = two.add_region("r", 0);
  for (int n = 0; n < 2; ++n) {
    const int node = two.add_node(region, "n" + std::to_string(n), Link{300e9, 0}, Link{100 * units::kGbps, 0});
    for (int d = 0; d < 4; ++d)
      two.add_device(node, gpu);
  }
  const double hier = hierarchical_seconds(two, first(8), CollectiveOp::all_reduce, bytes);
  const double flat = ring_seconds(two, first(8), CollectiveOp::all_reduce, bytes);
  CHECK(hier < flat);
  // Inter-node phase: 4 rings of bytes/4 share each 100 Gb/s NIC, 2(2-1) steps of bytes/4/2.
  const double intra = 3 * (kIntraNodeStepLatency + bytes / 4 / 300e9);
  const double inter = 2 * (kNetworkStepLatency + (bytes / 4 / 2) / (100 * units::kGbps / 4));
  CHECK(hier == doctest::Approx(2 * intra + inter));
}

TEST_CASE("a collective in many calls pays the library's latency for each")
{
  const Cluster c    = uniform_ring(16, 10, 0);
  const double one   = library_latency_seconds(c, first(16), CollectiveOp::all_gather, 1);
  const double many  = library_latency_seconds(c, first(16), CollectiveOp::all_gather, 12);
  CHECK(one == doctest::Approx(kCallLatency));
  // Every call after the first runs its 15 ring steps again.
  CHECK(many == doctest::Approx(12 * kCallLatency + 11 * 15 * kNetworkStepLatency));
  // Ring steps grow with the group: twice the members, about twice the latency per call.
  CHECK(library_latency_seconds(uniform_ring(32, 10, 0), first(32), CollectiveOp::all_gather, 12) > 1.9 * many);
  CHECK(library_latency_seconds(c, {0}, CollectiveOp::all_gather, 12) == 0);
}
