#include "sim/replay/replay.hpp"

#include "core/error.hpp"
#include "core/units.hpp"
#include "costmodel/compute.hpp"
#include "sim/replay/durations.hpp"
#include "sim_fixtures.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <sstream>

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

/// Two regions of one single-GPU node each.
Cluster two_regions(Link wan, WanSharing sharing = WanSharing::shared)
{
  Cluster cluster("two");
  const int gpu = cluster.add_gpu(testing::test_gpu());
  const int a   = cluster.add_region("a", 0.2 * kMillisecond);
  const int b   = cluster.add_region("b", 0.4 * kMillisecond);
  cluster.add_device(cluster.add_node(a, "a0", {300e9, 2 * kMicrosecond}, {100 * kGbps, 10 * kMicrosecond}), gpu);
  cluster.add_device(cluster.add_node(b, "b0", {300e9, 2 * kMicrosecond}, {100 * kGbps, 10 * kMicrosecond}), gpu);
  cluster.set_inter_region(a, b, wan);
  cluster.set_inter_region(b, a, wan);
  cluster.set_wan_sharing(sharing);
  return cluster;
}

} // namespace

TEST_CASE("replay: a lone transfer takes exactly latency + bytes / bandwidth")
{
  const Cluster cluster = two_regions(Link{1 * kGbps, 25 * kMillisecond});
  ScheduleBuilder b(2);
  const double bytes       = 123456789;
  const auto [send, recv]  = b.send_recv(0, 1, bytes);
  const auto timings       = replay_isolated(cluster, b.schedule(), testing::seconds_from_flops());
  const Link path          = cluster.path(0, 1);
  const double expected    = path.latency_s + bytes / path.bandwidth_bytes_per_s;
  CHECK(timings[send].start_s == 0);
  CHECK(timings[send].end_s == doctest::Approx(expected).epsilon(1e-9));
  CHECK(timings[recv].end_s == timings[send].end_s);
}

TEST_CASE("replay: asymmetric WAN bandwidth: each direction moves at its own rate, both at once")
{
  Cluster cluster           = two_regions(Link{1 * kGbps, 25 * kMillisecond});
  cluster.set_inter_region(1, 0, Link{0.25 * kGbps, 25 * kMillisecond}); // b -> a four times slower
  ScheduleBuilder b(2);
  const double bytes        = 50e6;
  const auto [ab_send, ab_recv] = b.send_recv(0, 1, bytes);
  const auto [ba_send, ba_recv] = b.send_recv(1, 0, bytes);
  const auto timings        = replay_isolated(cluster, b.schedule(), testing::seconds_from_flops());
  const Link forward        = cluster.path(0, 1);
  const Link backward       = cluster.path(1, 0);
  CHECK(backward.bandwidth_bytes_per_s == doctest::Approx(forward.bandwidth_bytes_per_s / 4));
  // Full duplex: neither direction slows the other.
  CHECK(timings[ab_recv].end_s ==
        doctest::Approx(forward.latency_s + bytes / forward.bandwidth_bytes_per_s).epsilon(1e-9));
  CHECK(timings[ba_recv].end_s ==
        doctest::Approx(backward.latency_s + bytes / backward.bandwidth_bytes_per_s).epsilon(1e-9));
}

TEST_CASE("replay: sends to the same peer go out one after the other, sends to different peers share links")
{
  const Cluster cluster = two_regions(Link{1 * kGbps, 25 * kMillisecond});
  const Link path       = cluster.path(0, 1);
  const double bytes    = 5e7;
  const double one      = path.latency_s + bytes / path.bandwidth_bytes_per_s;
  ScheduleBuilder b(2);
  const auto [first, first_recv]   = b.send_recv(0, 1, bytes);
  const auto [second, second_recv] = b.send_recv(0, 1, bytes);
  const auto [back, back_recv]     = b.send_recv(1, 0, bytes); // the other direction is another channel
  const auto timings = replay_isolated(cluster, b.schedule(), testing::seconds_from_flops());
  CHECK(timings[first].end_s == doctest::Approx(one));
  CHECK(timings[second].start_s == doctest::Approx(one));
  CHECK(timings[second].end_s == doctest::Approx(2 * one));
  CHECK(timings[second_recv].end_s == timings[second].end_s);
  CHECK(timings[back].end_s == doctest::Approx(one));
}

TEST_CASE("replay: send/recv is a rendezvous; both sides span the transfer once both are ready")
{
  const Cluster cluster = two_regions(Link{10 * kGbps, 5 * kMillisecond});
  ScheduleBuilder b(2);
  const int before_send = b.compute(0, 1.0);
  const int before_recv = b.compute(1, 3.0);
  const auto [send, recv] = b.send_recv(0, 1, 1e8, {before_send}, {before_recv});
  const int after_recv    = b.compute(1, 0.5, {recv});
  const auto timings      = replay_isolated(cluster, b.schedule(), testing::seconds_from_flops());
  const Link path         = cluster.path(0, 1);
  const double arrival    = 3.0 + path.latency_s + 1e8 / path.bandwidth_bytes_per_s;
  CHECK(timings[send].start_s == doctest::Approx(3.0));
  CHECK(timings[recv].start_s == doctest::Approx(3.0));
  CHECK(timings[send].end_s == doctest::Approx(arrival).epsilon(1e-9));
  CHECK(timings[recv].end_s == doctest::Approx(arrival).epsilon(1e-9));
  CHECK(timings[after_recv].start_s == doctest::Approx(arrival).epsilon(1e-9));
  CHECK(timings[after_recv].end_s == doctest::Approx(arrival + 0.5).epsilon(1e-9));
}

TEST_CASE("replay: deps and stream order are respected")
{
  // 4 devices, 3 ordered streams each, a web of cross-stream deps plus pipeline transfers.
  const Cluster cluster = testing::uniform_cluster(2, 2, {100e9, 2 * kMicrosecond}, {10 * kGbps, 10 * kMicrosecond},
                                                   20 * kMicrosecond);
  ScheduleBuilder b(4);
  std::vector<int> last(4, -1);
  for (int step = 0; step < 6; ++step) {
    for (int d = 0; d < 4; ++d) {
      std::vector<int> deps;
      if (last[d] >= 0)
        deps.push_back(last[d]);
      last[d] = b.compute(d, 0.01 * (1 + (d + step) % 3), deps);
    }
    if (step % 2 == 0) {
      const auto [s, r] = b.send_recv(step % 4, (step + 1) % 4, 2e7, {last[step % 4]}, {});
      last[(step + 1) % 4] = b.compute((step + 1) % 4, 0.02, {r, last[(step + 1) % 4]});
    }
    std::vector<std::vector<int>> deps;
    for (int d = 0; d < 4; ++d)
      deps.push_back({last[d]});
    b.collective(TaskKind::all_reduce, {0, 1, 2, 3}, 5e7, CollectiveAlgorithm::ring,
                 step % 2 ? Stream::data_parallel : Stream::tensor_parallel, deps);
  }
  const auto& schedule = b.schedule();
  const auto timings   = replay_isolated(cluster, schedule, testing::seconds_from_flops());
  for (const auto& task : schedule.tasks) {
    CAPTURE(task.id);
    CHECK(timings[task.id].start_s >= 0);
    CHECK(timings[task.id].end_s >= timings[task.id].start_s);
    for (int dep : task.deps)
      CHECK(timings[task.id].start_s >= timings[dep].end_s);
  }
  for (int d = 0; d < 4; ++d)
    for (int s = 0; s < 3; ++s) {
      const auto& queue = schedule.queues[d][s];
      for (std::size_t i = 1; i < queue.size(); ++i)
        CHECK(timings[queue[i]].start_s >= timings[queue[i - 1]].end_s);
    }
}

TEST_CASE("replay: two runs give identical timings and traces")
{
  const Cluster cluster = testing::uniform_cluster(4, 2, {100e9, 2 * kMicrosecond}, {10 * kGbps, 10 * kMicrosecond},
                                                   20 * kMicrosecond);
  ScheduleBuilder b(8);
  for (int r = 0; r < 3; ++r) {
    b.collective(TaskKind::all_reduce, {0, 2, 4, 6}, 3e7 + r, CollectiveAlgorithm::ring);
    b.collective(TaskKind::all_reduce, {1, 3, 5, 7}, 2e7 + r, CollectiveAlgorithm::tree, Stream::tensor_parallel);
    b.collective(TaskKind::reduce_scatter, {0, 1, 2, 3, 4, 5, 6, 7}, 1e7, CollectiveAlgorithm::hierarchical);
    b.send_recv(r, 7 - r, 1e6 * (r + 1));
  }
  const auto first  = replay_isolated(cluster, b.schedule(), testing::seconds_from_flops());
  const auto second = replay_isolated(cluster, b.schedule(), testing::seconds_from_flops());
  REQUIRE(first.size() == second.size());
  CHECK(std::memcmp(first.data(), second.data(), first.size() * sizeof(TaskTiming)) == 0);
  std::ostringstream a, c;
  traces::write_chrome_trace(make_trace(cluster, b.schedule(), first, 1, Dtype::fp16), a);
  traces::write_chrome_trace(make_trace(cluster, b.schedule(), second, 1, Dtype::fp16), c);
  CHECK(a.str() == c.str());
}

TEST_CASE("replay: compute time follows each device's GPU")
{
  Cluster cluster("mixed");
  const int fast = cluster.add_gpu(testing::test_gpu("fast", 300));
  const int slow = cluster.add_gpu(testing::test_gpu("slow", 100));
  const int r    = cluster.add_region("r", 0);
  const int n    = cluster.add_node(r, "n", {100e9, 1e-6}, {10e9, 1e-6});
  cluster.add_device(n, fast);
  cluster.add_device(n, slow);
  ScheduleBuilder b(2);
  const int f = b.compute(0, 0);
  const int s = b.compute(1, 0);
  for (int id : {f, s}) {
    b.task(id).flops   = 3e14;
    b.task(id).samples = 4;
  }
  models::Workload workload;
  workload.seq_len = 1024;
  strategies::Plan plan;
  ReplayOptions options;
  options.compute_seconds = compute_time_model(cluster, workload, plan, nullptr);
  const auto timings      = replay_isolated(cluster, b.schedule(), options);
  const costmodel::ComputeModel model(nullptr);
  CHECK(timings[f].end_s == doctest::Approx(model.compute_seconds(cluster.gpu_of(0), 3e14, Dtype::fp16, 4096)));
  CHECK(timings[s].end_s == doctest::Approx(model.compute_seconds(cluster.gpu_of(1), 3e14, Dtype::fp16, 4096)));
  CHECK(timings[s].end_s / timings[f].end_s == doctest::Approx(3.0));
}

TEST_CASE("replay: a dependency cycle is reported as a deadlock")
{
  const Cluster cluster = testing::uniform_cluster(1, 2, {100e9, 1e-6}, {10e9, 1e-6}, 0);
  ScheduleBuilder b(2);
  const int x = b.compute(0, 1);
  const int y = b.compute(1, 1, {x});
  b.task(x).deps.push_back(y);
  try {
    replay_isolated(cluster, b.schedule(), testing::seconds_from_flops());
    FAIL("expected a deadlock");
  } catch (const InternalError& e) {
    const std::string what = e.what();
    CHECK(what.find("deadlocked") != std::string::npos);
    CHECK(what.find("2 of 2 tasks") != std::string::npos);
  }
}

TEST_CASE("check_schedule: malformed schedules are rejected with the task's name")
{
  const Cluster cluster = testing::uniform_cluster(1, 2, {100e9, 1e-6}, {10e9, 1e-6}, 0);
  SUBCASE("unmatched send")
  {
    ScheduleBuilder b(2);
    const auto [s, r]  = b.send_recv(0, 1, 10);
    b.task(s).match    = s;
    CHECK_THROWS_AS(check_schedule(b.schedule(), 2), InternalError);
  }
  SUBCASE("task queued on the wrong stream")
  {
    ScheduleBuilder b(2);
    const int t        = b.compute(0, 1);
    b.task(t).stream   = Stream::data_parallel;
    CHECK_THROWS_AS(check_schedule(b.schedule(), 2), InternalError);
  }
  SUBCASE("more devices than the cluster")
  {
    ScheduleBuilder b(3);
    b.compute(2, 1);
    CHECK_THROWS_AS(check_schedule(b.schedule(), 2), InternalError);
  }
  SUBCASE("no compute model")
  {
    ScheduleBuilder b(2);
    b.compute(0, 1);
    CHECK_THROWS_AS(replay_isolated(cluster, b.schedule(), ReplayOptions{}), InternalError);
  }
}

TEST_CASE("replay: compute beside a collective runs on the share of its GPU the call leaves")
{
  const Cluster cluster = testing::uniform_cluster(2, 1, {100e9, 2 * kMicrosecond}, {10 * kGbps, 10 * kMicrosecond},
                                                   20 * kMicrosecond);
  // Device 0 computes 1 s while an all-reduce of a fixed 0.4 s runs from time 0; device 1 only reduces. A second
  // compute task follows the first, after the call has ended.
  ScheduleBuilder b(2);
  const int first  = b.compute(0, 1.0);
  const int second = b.compute(0, 0.5, {first});
  b.collective(TaskKind::all_reduce, {0, 1}, 1e6);
  ReplayOptions options = testing::seconds_from_flops();
  options.analytic_collective_seconds = [](const strategies::Collective&) { return std::optional<double>(0.4); };
  SUBCASE("without a share, the compute is as long as it is")
  {
    const auto timings = replay_isolated(cluster, b.schedule(), options);
    CHECK(timings[first].end_s == doctest::Approx(1.0));
  }
  SUBCASE("with a quarter of the GPU held, the 0.4 s beside the call do 0.3 s of work")
  {
    options.collective_compute_shares = [](const strategies::Collective& c) {
      return std::vector<double>(c.devices.size(), 0.25);
    };
    const auto timings = replay_isolated(cluster, b.schedule(), options);
    CHECK(timings[first].end_s == doctest::Approx(1.1));
    CHECK(timings[second].end_s - timings[second].start_s == doctest::Approx(0.5)); // the call is over
  }
}
