#include "sim/replay/collective_flows.hpp"

#include "core/units.hpp"
#include "costmodel/collective.hpp"
#include "sim/replay/durations.hpp"
#include "sim/replay/replay.hpp"
#include "sim_fixtures.hpp"

#include <doctest/doctest.h>

#include <numeric>

using namespace hetsim;
using namespace hetsim::sim;
using hetsim::sim::testing::ScheduleBuilder;
using hetsim::strategies::CollectiveAlgorithm;
using hetsim::strategies::Stream;
using hetsim::strategies::TaskKind;
using hetsim::units::kGbps;
using hetsim::units::kMicrosecond;
using hetsim::units::kMillisecond;

namespace {

const Link kNvlink{300e9, 2 * kMicrosecond};
const Link kNic{100 * kGbps, 5 * kMicrosecond};

std::vector<int> iota(int n, int first = 0)
{
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

/// Replays one collective alone and returns when its last member finishes.
double time_one(const Cluster& cluster, TaskKind kind, const std::vector<int>& devices, double bytes,
                CollectiveAlgorithm algorithm, bool analytic = false)
{
  ScheduleBuilder b(cluster.device_count());
  b.collective(kind, devices, bytes, algorithm);
  ReplayOptions options = testing::seconds_from_flops();
  if (analytic)
    options.analytic_collective_seconds = analytic_intra_node_time(cluster);
  const auto timings = replay_isolated(cluster, b.schedule(), options);
  double end = 0;
  for (const auto& t : timings)
    end = std::max(end, t.end_s);
  return end;
}

/// Regions x (devices 0-3) and y (4-7) of 4 single-GPU nodes each, joined by one 1 Gb/s WAN link each way.
Cluster two_regions(WanSharing sharing = WanSharing::shared)
{
  Cluster cluster("xy");
  const int gpu = cluster.add_gpu(testing::test_gpu());
  const int x   = cluster.add_region("x", 10 * kMicrosecond);
  const int y   = cluster.add_region("y", 10 * kMicrosecond);
  for (int r : {x, y})
    for (int n = 0; n < 4; ++n)
      cluster.add_device(cluster.add_node(r, "n" + std::to_string(r) + std::to_string(n), kNvlink, kNic), gpu);
  cluster.set_inter_region(x, y, Link{1 * kGbps, 1 * kMillisecond});
  cluster.set_inter_region(y, x, Link{1 * kGbps, 1 * kMillisecond});
  cluster.set_wan_sharing(sharing);
  return cluster;
}

costmodel::CollectiveOp op_of(TaskKind kind)
{
  return kind == TaskKind::all_reduce       ? costmodel::CollectiveOp::all_reduce
         : kind == TaskKind::reduce_scatter ? costmodel::CollectiveOp::reduce_scatter
                                            : costmodel::CollectiveOp::all_gather;
}

} // namespace

TEST_CASE("ring collectives on a uniform ring of 8 single-GPU nodes match the alpha-beta formula")
{
  const Cluster cluster = testing::uniform_cluster(8, 1, kNvlink, {10 * kGbps, 10 * kMicrosecond}, 20 * kMicrosecond);
  const int n           = 8;
  const double bytes    = 256e6;
  const Link edge       = cluster.path(0, 1);
  const double step     = edge.latency_s + bytes / n / edge.bandwidth_bytes_per_s;
  for (TaskKind kind : {TaskKind::all_reduce, TaskKind::reduce_scatter, TaskKind::all_gather}) {
    CAPTURE(strategies::task_kind_name(kind));
    const double steps     = kind == TaskKind::all_reduce ? 2 * (n - 1) : n - 1;
    const double simulated = time_one(cluster, kind, iota(n), bytes, CollectiveAlgorithm::ring);
    CHECK(simulated == doctest::Approx(steps * step).epsilon(0.01));
    CHECK(simulated == doctest::Approx(costmodel::ring_seconds(cluster, iota(n), op_of(kind), bytes)).epsilon(0.01));
  }
}

TEST_CASE("two all-reduces sharing one WAN link take about twice as long as one alone")
{
  // Both rings cross the WAN once in each direction.
  const std::vector<int> ring_a = {0, 1, 4, 5};
  const std::vector<int> ring_b = {2, 3, 6, 7};
  const double bytes            = 100e6;
  for (WanSharing sharing : {WanSharing::shared, WanSharing::per_flow}) {
    const Cluster cluster = two_regions(sharing);
    const double alone    = time_one(cluster, TaskKind::all_reduce, ring_a, bytes, CollectiveAlgorithm::ring);
    ScheduleBuilder b(cluster.device_count());
    b.collective(TaskKind::all_reduce, ring_a, bytes);
    b.collective(TaskKind::all_reduce, ring_b, bytes);
    const auto timings = replay_isolated(cluster, b.schedule(), testing::seconds_from_flops());
    double together    = 0;
    for (const auto& t : timings)
      together = std::max(together, t.end_s);
    if (sharing == WanSharing::shared) {
      CHECK(together / alone > 1.9);
      CHECK(together / alone < 2.05);
    } else {
      CHECK(together / alone == doctest::Approx(1.0).epsilon(0.01));
    }
  }
}

TEST_CASE("a pipelined ring moves its phase once every member has joined, not on the edges of the first to arrive")
{
  // Regions x and y, one 1 Gb/s WAN link each way. The ring 0 -> 4 -> 5 -> 1 crosses
  // it at 0 -> 4, whose two ends join at once; 5 and 1 join after 10 s of compute. A send from 2 to 6 crosses
  // the same link meanwhile.
  const Cluster cluster = two_regions();
  const double late = 10, bytes = 400e6, sent = 500e6;
  ScheduleBuilder b(cluster.device_count());
  const int late_5 = b.compute(5, late), late_1 = b.compute(1, late);
  const std::vector<int> ring = b.collective(TaskKind::all_reduce, {0, 4, 5, 1}, bytes, CollectiveAlgorithm::ring,
                                             Stream::data_parallel, {{}, {}, {late_5}, {late_1}});
  const auto [send, recv] = b.send_recv(2, 6, sent);
  ReplayOptions options   = testing::seconds_from_flops();
  options.pipelined_rings = true;
  const auto timings      = replay_isolated(cluster, b.schedule(), options);
  // The send has the WAN link to itself (8.0 s were the ring's 0 -> 4 edge to share it): that edge waits for 5
  // and 1, as it could only forward what it has received from them.
  const double alone = sent / (1 * kGbps);
  CHECK(timings[recv].end_s == doctest::Approx(alone).epsilon(0.01));
  CHECK(timings[recv].end_s < late);
  // The ring then runs as a whole: 3/2 of its bytes over each WAN edge, after the late members.
  for (int task : ring)
    CHECK(timings[task].end_s > late + 1.5 * bytes / (1 * kGbps));
}

TEST_CASE("tree all-reduce completes within sensible bounds of its formula")
{
  const Cluster cluster = testing::uniform_cluster(8, 1, kNvlink, {10 * kGbps, 10 * kMicrosecond}, 20 * kMicrosecond);
  for (int n : {2, 3, 5, 8}) {
    CAPTURE(n);
    const double bytes     = 64e6;
    const double simulated = time_one(cluster, TaskKind::all_reduce, iota(n), bytes, CollectiveAlgorithm::tree);
    const double formula   = costmodel::tree_seconds(cluster, iota(n), costmodel::CollectiveOp::all_reduce, bytes,
                                                     costmodel::kTreeChunks);
    CHECK(simulated > 0.9 * formula); // the formula charges every level with the fan-in of two children
    CHECK(simulated <= formula * (1 + 1e-9));
    // Never faster than moving the whole buffer up one edge and back down.
    const Link edge = cluster.path(0, 1);
    CHECK(simulated > 2 * (edge.latency_s + bytes / edge.bandwidth_bytes_per_s));
  }
  SUBCASE("reduce-scatter falls back to ring")
  {
    CHECK(time_one(cluster, TaskKind::reduce_scatter, iota(8), 8e6, CollectiveAlgorithm::tree) ==
          time_one(cluster, TaskKind::reduce_scatter, iota(8), 8e6, CollectiveAlgorithm::ring));
  }
}

TEST_CASE("hierarchical collectives complete within sensible bounds of their formula")
{
  const Cluster cluster = testing::uniform_cluster(4, 4, kNvlink, {25 * kGbps, 10 * kMicrosecond}, 20 * kMicrosecond);
  const double bytes    = 128e6;
  for (TaskKind kind : {TaskKind::all_reduce, TaskKind::reduce_scatter, TaskKind::all_gather}) {
    CAPTURE(strategies::task_kind_name(kind));
    const double simulated = time_one(cluster, kind, iota(16), bytes, CollectiveAlgorithm::hierarchical);
    const double formula   = costmodel::hierarchical_seconds(cluster, iota(16), op_of(kind), bytes);
    CHECK(simulated == doctest::Approx(formula).epsilon(0.01));
    // Cheaper than a flat ring, which pushes 2(n-1)/n of the buffer through every NIC.
    CHECK(simulated < time_one(cluster, kind, iota(16), bytes, CollectiveAlgorithm::ring));
  }
  SUBCASE("uneven nodes fall back to ring")
  {
    const std::vector<int> uneven = {0, 1, 2, 4, 5, 8};
    CHECK(time_one(cluster, TaskKind::all_reduce, uneven, bytes, CollectiveAlgorithm::hierarchical) ==
          time_one(cluster, TaskKind::all_reduce, uneven, bytes, CollectiveAlgorithm::ring));
  }
}

TEST_CASE("analytic intra-node collectives wait the alpha-beta time once every member has arrived")
{
  const Cluster cluster = testing::uniform_cluster(2, 4, kNvlink, kNic, 20 * kMicrosecond);
  const double bytes    = 32e6;
  const double expected = costmodel::collective_seconds(cluster, iota(4), costmodel::CollectiveOp::all_reduce,
                                                        costmodel::Algorithm::ring, bytes);
  CHECK(time_one(cluster, TaskKind::all_reduce, iota(4), bytes, CollectiveAlgorithm::ring, true) ==
        doctest::Approx(expected).epsilon(1e-9));

  ScheduleBuilder b(8);
  const int late = b.compute(2, 1.5);
  const auto members = b.collective(TaskKind::all_reduce, iota(4), bytes, CollectiveAlgorithm::ring,
                                    Stream::data_parallel, {{}, {}, {late}, {}});
  ReplayOptions options                 = testing::seconds_from_flops();
  options.analytic_collective_seconds = analytic_intra_node_time(cluster);
  const auto timings                    = replay_isolated(cluster, b.schedule(), options);
  CHECK(timings[members[0]].start_s == 0);
  for (int m : members)
    CHECK(timings[m].end_s == doctest::Approx(1.5 + expected).epsilon(1e-9));

  // Collectives that span nodes still run as flows.
  CHECK(time_one(cluster, TaskKind::all_reduce, iota(8), bytes, CollectiveAlgorithm::ring, true) ==
        time_one(cluster, TaskKind::all_reduce, iota(8), bytes, CollectiveAlgorithm::ring, false));
}

TEST_CASE("an all-to-all moves a share to every other member at once: the NICs bound it across nodes")
{
  const double bytes = 512e6; // each member's buffer, a share of bytes / 8 per member
  // Two nodes of four: each device sends 4 shares out of its node, so each NIC carries 4 x 4 x bytes / 8.
  const Cluster two = testing::uniform_cluster(2, 4, kNvlink, kNic, 20 * kMicrosecond);
  const double nic  = 16 * bytes / 8 / kNic.bandwidth_bytes_per_s;
  const double across = time_one(two, TaskKind::all_to_all, iota(8), bytes, CollectiveAlgorithm::ring);
  CHECK(across == doctest::Approx(nic).epsilon(0.02));
  CHECK(across == doctest::Approx(costmodel::all_to_all_seconds(two, iota(8), bytes)).epsilon(0.02));
  // One node of eight: each port carries its member's 7 shares out.
  const Cluster one  = testing::uniform_cluster(1, 8, kNvlink, kNic, 20 * kMicrosecond);
  const double inside = time_one(one, TaskKind::all_to_all, iota(8), bytes, CollectiveAlgorithm::ring);
  CHECK(inside == doctest::Approx(7 * bytes / 8 / kNvlink.bandwidth_bytes_per_s).epsilon(0.02));
  CHECK(inside == doctest::Approx(costmodel::all_to_all_seconds(one, iota(8), bytes)).epsilon(0.02));
  CHECK(across > 20 * inside);
}
