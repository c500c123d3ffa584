/// Jobs sharing a cluster: jobs that meet on no link run as alone, and jobs that meet on one link share it as
/// max-min fairness says.

#include "core/cluster_json.hpp"
#include "core/cluster_part.hpp"
#include "core/error.hpp"
#include "models/workload.hpp"
#include "sim/simulate/shared_jobs.hpp"
#include "strategies/lowering/lower.hpp"
#include "strategies/plan/plan_json.hpp"

#include <doctest/doctest.h>

#include <limits>
#include <memory>

using namespace hetsim;

namespace {

const std::string kData = std::string(HETSIM_SOURCE_DIR) + "/tests/exec/data/";
constexpr double kWanBytesPerS = 1e8; // 0.8 Gb/s: every transfer across it is bandwidth-bound

/// Two regions of two one-GPU nodes (a0, b0 east; a1, b1 west). Ports and NICs take no time and no latency
/// anywhere, so that the one shared WAN link per direction is all a transfer costs.
Cluster two_regions()
{
  const Cluster catalog = load_cluster(kData + "cluster4.json");
  Cluster cluster("two-regions");
  const int gpu = cluster.add_gpu(catalog.gpus()[0]);
  const Link instant{std::numeric_limits<double>::infinity(), 0};
  for (const char* region : {"east", "west"}) {
    const int r = cluster.add_region(region, 0);
    for (const char* job : {"a", "b"})
      cluster.add_device(cluster.add_node(r, std::string(job) + (r == 0 ? "0" : "1"), instant, instant), gpu);
  }
  cluster.set_inter_region(0, 1, Link{kWanBytesPerS, 0});
  cluster.set_inter_region(1, 0, Link{kWanBytesPerS, 0});
  return cluster;
}

/// One job: a two-stage GPipe pipeline of one micro-batch (or a data-parallel pair) on two nodes of the cluster.
struct Job {
  ClusterPart part;
  models::Workload workload = models::load_workload(kData + "model4.json");
  strategies::Plan plan;
  strategies::Problem problem;
  strategies::Schedule schedule;

  Job(const Cluster& cluster, std::vector<int> nodes, const std::string& name, bool pipeline)
      : part(cluster_part(cluster, std::move(nodes), name))
  {
    const nlohmann::json shape = pipeline ? nlohmann::json{{"pp", 2}, {"dp", 1}, {"stage_starts", {0, 2}}}
                                          : nlohmann::json{{"pp", 1}, {"dp", 2}};
    nlohmann::json json = {{"tp", 1}, {"micro_batch", 1}, {"grad_accum", 1}, {"schedule", "gpipe"},
                           {"dtype", "fp16"}};
    json.update(shape);
    plan     = strategies::plan_from_json(json, name, part.cluster, workload);
    problem  = strategies::problem_for_plan(part.cluster, workload, plan);
    schedule = strategies::lower(plan, problem);
  }
  sim::SharedJob shared(const std::string& name) const { return {name, &plan, &problem, &schedule, part.devices}; }
};

} // namespace

TEST_CASE("a cluster part keeps its nodes' links and numbers its devices in the cluster's node order")
{
  const Cluster cluster   = two_regions();
  const ClusterPart part  = cluster_part(cluster, {3, 0}, "a-and-b1");
  CHECK(part.nodes == std::vector<int>{0, 3});
  CHECK(part.devices == std::vector<int>{0, 3});
  REQUIRE(part.cluster.regions().size() == 2);
  CHECK(part.cluster.nodes()[1].name == "b1");
  CHECK(part.cluster.inter_region(0, 1).bandwidth_bytes_per_s == kWanBytesPerS);
  // A part inside one region has no WAN link at all.
  CHECK(cluster_part(cluster, {0, 1}, "east").cluster.regions().size() == 1);
}

TEST_CASE("a cluster part keeps what joins its nodes' GPUs and how their NICs carry NCCL's traffic")
{
  Cluster cluster = two_regions();
  cluster.set_fabric(0, hetsim::IntraFabric::pcie);
  cluster.set_transport(0, hetsim::NicTransport::socket, 1e9);
  cluster.set_transport(3, hetsim::NicTransport::efa);
  const ClusterPart part = cluster_part(cluster, {3, 0}, "a-and-b1");
  const hetsim::Node& socket = part.cluster.nodes()[0];
  CHECK(socket.fabric == hetsim::IntraFabric::pcie);
  CHECK(socket.transport == hetsim::NicTransport::socket);
  CHECK(socket.nic.bandwidth_bytes_per_s == cluster.nodes()[0].nic.bandwidth_bytes_per_s);
  CHECK(socket.nic_nominal_bytes_per_s == cluster.nodes()[0].nic_nominal_bytes_per_s);
  CHECK(part.cluster.nodes()[1].transport == hetsim::NicTransport::efa);
}

TEST_CASE("jobs that meet on no link run together as they run alone, and alone as on their own part")
{
  const Cluster cluster = two_regions();
  // Each job inside one region: data parallel over two nodes whose links take no time.
  const Job east(cluster, {0, 1}, "east", false), west(cluster, {2, 3}, "west", false);
  const std::vector<sim::SharedJob> jobs{east.shared("east"), west.shared("west")};
  const sim::SharedRun run = sim::simulate_shared(cluster, jobs, {});
  REQUIRE(run.together.size() == 2);
  for (int k = 0; k < 2; ++k) {
    CHECK(run.together[k].iteration_time_s == run.alone[k].iteration_time_s);
    CHECK(run.alone[k].iteration_time_s > 0);
  }
  CHECK(run.links.empty());
  const Job& job            = east;
  const double on_own_part  = sim::simulate(job.plan, job.problem, job.schedule).report.iteration_time_s;
  CHECK(run.alone[0].iteration_time_s == doctest::Approx(on_own_part).epsilon(1e-12));
}

TEST_CASE("two pipelines that cross one WAN link share it max-min fairly")
{
  // a0 -> a1 and b0 -> b1 each send one activation east to west and its gradient back. The jobs are identical,
  // so their transfers start together and each gets half of the link: every transfer on the critical path takes
  // twice its time alone, and the iteration grows by the time the link was busy for one job alone.
  const Cluster cluster = two_regions();
  const Job a(cluster, {0, 2}, "a", true), b(cluster, {1, 3}, "b", true);
  const std::vector<sim::SharedJob> jobs{a.shared("a"), b.shared("b")};
  const sim::SharedRun run = sim::simulate_shared(cluster, jobs, {});

  REQUIRE(run.links.size() == 2); // the WAN link each way; ports and NICs are the jobs' own
  double busy_alone_one_job = 0;
  for (const sim::SharedLink& link : run.links) {
    CHECK(link.kind == "wan");
    CHECK(link.bytes[0] == link.bytes[1]);
    CHECK(link.busy_alone_s[0] == doctest::Approx(link.bytes[0] / kWanBytesPerS).epsilon(1e-9));
    CHECK(link.busy_together_s == doctest::Approx(2 * link.busy_alone_s[0]).epsilon(1e-9));
    busy_alone_one_job += link.busy_alone_s[0];
  }
  CHECK(busy_alone_one_job > 0);
  for (int k = 0; k < 2; ++k)
    CHECK(run.together[k].iteration_time_s ==
          doctest::Approx(run.alone[k].iteration_time_s + busy_alone_one_job).epsilon(1e-9));
}

TEST_CASE("two jobs on one device are refused")
{
  const Cluster cluster = two_regions();
  const Job a(cluster, {0, 2}, "a", true), b(cluster, {0, 3}, "b", true);
  CHECK_THROWS_AS(sim::simulate_shared(cluster, {a.shared("a"), b.shared("b")}, {}), InputError);
}
