/// The building blocks 3D planners share (strategies/search/plan_space.hpp).

#include "strategies/search/plan_space.hpp"

#include "fixtures.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace hetsim;
using namespace hetsim::strategies;
using namespace hetsim::strategies::testing;

TEST_CASE("plan space: degrees and micro-batch sizes")
{
  // Nodes of 4 and 8 devices: tensor-parallel groups of 4 never straddle one.
  Cluster cluster("two node sizes");
  const int gpu    = cluster.add_gpu(a100());
  const int region = cluster.add_region("dc", 5e-6);
  for (int devices : {4, 8}) {
    const int node = cluster.add_node(region, "node" + std::to_string(devices), Link{300 * units::kGBps, 2e-6},
                                      Link{100 * units::kGbps, 5e-6});
    for (int d = 0; d < devices; ++d)
      cluster.add_device(node, gpu);
  }

  CHECK(divisors(12) == std::vector<int>{1, 2, 3, 4, 6, 12});
  CHECK(divisors(1) == std::vector<int>{1});
  CHECK(micro_batch_sizes(32, 4) == std::vector<int>{1, 2, 4, 8});
  CHECK(micro_batch_sizes(30, 4).empty());
  for (const Degrees& d : enumerate_degrees(16, 6, 4)) {
    CHECK(d.tp * d.pp * d.dp == 16);
    CHECK(d.tp <= 4);
    CHECK(d.pp <= 6);
  }
  CHECK(max_tensor_parallel(cluster) == 4);
}
