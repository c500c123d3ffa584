// A plan's prediction band (strategies/lowering/band.hpp): what the cluster's links add to it.

#include "../fixtures.hpp"

#include "costmodel/compute.hpp"
#include "strategies/lowering/band.hpp"

#include <doctest/doctest.h>

namespace hetsim::strategies {

TEST_CASE("sockets widen a band only where a NIC could move more or less than the public median")
{
  const models::Workload workload = testing::make_workload(4);
  const costmodel::ComputeModel compute;
  auto band_of = [&](const Cluster& cluster) {
    const Problem problem = testing::make_problem(cluster, workload);
    return plan_band(testing::make_plan(cluster, workload, 1, 1, 4), problem, compute, 10, 0.5);
  };
  Cluster rdma = testing::make_cluster(2, 2); // 100 Gb/s NICs
  const costmodel::PredictionBand without = band_of(rdma);

  // Both NICs on sockets at the median 30 of their 100: as slow as 13.6 or as fast as 65.
  Cluster sockets = testing::make_cluster(2, 2);
  for (int node : {0, 1})
    sockets.set_transport(node, NicTransport::socket);
  const costmodel::PredictionBand wide = band_of(sockets);
  CHECK(wide.high > without.high);
  CHECK(wide.low < without.low);
  CHECK(wide.describe(10).find("NCCL's sockets") != std::string::npos);

  // A peer whose NIC carries 10 Gb/s bounds every flow to it below any public socket rate: nothing to widen.
  Cluster slow_peer = testing::make_cluster(2, 2);
  slow_peer.set_nic(1, Link{10 * units::kGbps, 5e-6});
  slow_peer.set_transport(0, NicTransport::socket);
  slow_peer.set_transport(1, NicTransport::socket);
  CHECK(band_of(slow_peer).high == doctest::Approx(without.high));

  // A rate the file measured is no median: nothing to widen either.
  Cluster measured = testing::make_cluster(2, 2);
  for (int node : {0, 1})
    measured.set_transport(node, NicTransport::socket, 40 * units::kGbps);
  CHECK(band_of(measured).high == doctest::Approx(without.high));
}

} // namespace hetsim::strategies
