#include "sim/platform/platform.hpp"

#include "core/error.hpp"
#include "core/units.hpp"
#include "sim/replay/engine.hpp"
#include "sim/replay/isolate.hpp"
#include "sim_fixtures.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <thread>
#include <unistd.h>

using namespace hetsim;
using namespace hetsim::sim;
using hetsim::units::kGbps;
using hetsim::units::kMicrosecond;
using hetsim::units::kMillisecond;

namespace {

/// Three regions with uneven nodes, overrides (one faster than the switch, one asymmetric with unlimited
/// bandwidth) and an asymmetric WAN matrix.
Cluster three_regions(WanSharing sharing)
{
  Cluster cluster("three");
  const int fast = cluster.add_gpu(testing::test_gpu("fast", 300));
  const int slow = cluster.add_gpu(testing::test_gpu("slow", 100));
  const int a    = cluster.add_region("a", 1 * kMillisecond);
  const int b    = cluster.add_region("b", 0.5 * kMillisecond);
  const int c    = cluster.add_region("c", 0);
  const Link nvlink{300e9, 2 * kMicrosecond};
  const Link pcie{16e9, 5 * kMicrosecond};
  const int a0 = cluster.add_node(a, "a0", nvlink, {100 * kGbps, 10 * kMicrosecond});
  const int a1 = cluster.add_node(a, "a1", pcie, {25 * kGbps, 8 * kMicrosecond});
  const int a2 = cluster.add_node(a, "a2", pcie, {10 * kGbps, 0});
  for (int i = 0; i < 4; ++i)
    cluster.add_device(a0, fast);
  cluster.add_device(a1, slow);
  cluster.add_device(a1, slow);
  cluster.add_device(a2, slow);
  for (int n = 0; n < 3; ++n) {
    const int node = cluster.add_node(b, "b" + std::to_string(n), nvlink, {50 * kGbps, 5 * kMicrosecond});
    cluster.add_device(node, fast);
    cluster.add_device(node, slow);
  }
  const int c0 = cluster.add_node(c, "c0", pcie, {1 * kGbps, 20 * kMicrosecond});
  cluster.add_device(c0, slow);

  cluster.add_override({a0, a1, Link{8 * kGbps, 0.3 * kMillisecond}});
  cluster.add_override({a1, a0, Link{}}); // unlimited bandwidth, no latency
  const double lat[3][3] = {{0, 30, 80}, {40, 0, 120}, {90, 110, 0}};
  const double gbps[3][3] = {{0, 10, 1}, {5, 0, 0.3}, {2, 0.5, 0}};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      if (i != j)
        cluster.set_inter_region(i, j, Link{gbps[i][j] * kGbps, lat[i][j] * kMillisecond});
  cluster.set_wan_sharing(sharing);
  return cluster;
}

/// SimGrid's route for every ordered device pair, computed in a child process.
std::vector<Link> all_routes(const Cluster& cluster)
{
  return from_bytes<Link>(run_isolated([&] {
    Engine engine;
    Platform platform(cluster);
    std::vector<Link> routes;
    for (int s = 0; s < cluster.device_count(); ++s)
      for (int d = 0; d < cluster.device_count(); ++d)
        routes.push_back(platform.route(s, d));
    return to_bytes(routes);
  }));
}

void check_routes_match_paths(const Cluster& cluster)
{
  const auto routes = all_routes(cluster);
  REQUIRE(routes.size() == static_cast<std::size_t>(cluster.device_count() * cluster.device_count()));
  for (int s = 0; s < cluster.device_count(); ++s)
    for (int d = 0; d < cluster.device_count(); ++d) {
      const Link route = routes[s * cluster.device_count() + d];
      const Link path  = cluster.path(s, d);
      CAPTURE(s);
      CAPTURE(d);
      CHECK(route.latency_s == doctest::Approx(path.latency_s).epsilon(1e-12));
      if (std::isinf(path.bandwidth_bytes_per_s))
        CHECK(std::isinf(route.bandwidth_bytes_per_s));
      else
        CHECK(route.bandwidth_bytes_per_s == doctest::Approx(path.bandwidth_bytes_per_s).epsilon(1e-12));
    }
}

} // namespace

TEST_CASE("platform: every route's latency and bottleneck bandwidth equal Cluster::path")
{
  SUBCASE("shared WAN")
  {
    check_routes_match_paths(three_regions(WanSharing::shared));
  }
  SUBCASE("per-flow WAN")
  {
    check_routes_match_paths(three_regions(WanSharing::per_flow));
  }
  SUBCASE("one region, no overrides")
  {
    check_routes_match_paths(
        testing::uniform_cluster(3, 4, {300e9, 2 * kMicrosecond}, {100 * kGbps, 10 * kMicrosecond}, 50 * kMicrosecond));
  }
}

TEST_CASE("platform: an incomplete cluster is an input error")
{
  Cluster missing("missing");
  const int gpu = missing.add_gpu(testing::test_gpu());
  const int r0  = missing.add_region("r0", 0);
  const int r1  = missing.add_region("r1", 0);
  missing.add_device(missing.add_node(r0, "n0", {}, {}), gpu);
  missing.add_device(missing.add_node(r1, "n1", {}, {}), gpu);
  missing.set_inter_region(r0, r1, Link{1e9, 0.01});
  CHECK_THROWS_AS(run_isolated([&] {
                    Engine engine;
                    Platform platform(missing);
                    return std::string("built");
                  }),
                  InputError);
}

TEST_CASE("platform: 4,096 devices (512 nodes of 8) get one port per device and one NIC per node, each way")
{
  // How long the build takes is sim_bench's business (BM_PlatformBuild/4096), not a unit test's.
  const Cluster cluster = testing::uniform_cluster(512, 8, {300e9, 2 * kMicrosecond}, {200 * kGbps, 5 * kMicrosecond},
                                                   10 * kMicrosecond);
  const std::string links = run_isolated([&] {
    Engine engine;
    Platform platform(cluster);
    return std::to_string(platform.link_count());
  });
  CHECK(links == std::to_string(2 * 4096 + 2 * 512));
}

TEST_CASE("engine: one per process, so each simulation runs in its own child")
{
  const std::string message = run_isolated([] {
    { Engine first; }
    try {
      Engine second;
    } catch (const InternalError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  });
  CHECK(message.find("already ran in this process") != std::string::npos);
  CHECK_FALSE(Engine::used_in_this_process());
}

TEST_CASE("run_isolated: results and errors cross the process boundary")
{
  CHECK(run_isolated([] { return std::string("a\0b", 3); }) == std::string("a\0b", 3));
  CHECK(run_isolated([] { return std::string(1 << 20, 'x'); }).size() == (1u << 20)); // larger than a pipe buffer
  CHECK_THROWS_WITH_AS(run_isolated([]() -> std::string { throw InputError("bad input"); }), "bad input", InputError);
  CHECK_THROWS_WITH_AS(run_isolated([]() -> std::string { throw InfeasiblePlan("too big"); }), "too big",
                       InfeasiblePlan);
  CHECK_THROWS_AS(run_isolated([]() -> std::string { throw std::runtime_error("odd"); }), InternalError);
  try {
    run_isolated([]() -> std::string {
      std::fputs("last words\n", stderr);
      std::abort();
    });
    FAIL("expected an error");
  } catch (const InternalError& e) {
    const std::string what = e.what();
    CHECK(what.find("signal " + std::to_string(SIGABRT)) != std::string::npos);
    CHECK(what.find("last words") != std::string::npos);
  }
}

TEST_CASE("run_isolated: concurrent calls from several threads each get their own result")
{
  // Children forked at the same time inherit each other's pipe ends: completion must not wait for EOF.
  std::vector<std::string> results(6);
  std::vector<std::thread> threads;
  for (int i = 0; i < 6; ++i)
    threads.emplace_back([&results, i] {
      results[i] = run_isolated([i] {
        ::usleep(20000 * (6 - i)); // the first ones finish last
        return std::to_string(i);
      });
    });
  for (auto& t : threads)
    t.join();
  for (int i = 0; i < 6; ++i)
    CHECK(results[i] == std::to_string(i));
}
