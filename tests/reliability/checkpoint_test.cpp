/// A cluster's failure rate from the what-if file, and what a plan's checkpoint writes and costs.

#include "core/cluster_json.hpp"
#include "core/error.hpp"
#include "models/workload.hpp"
#include "reliability/checkpoint.hpp"
#include "reliability/failure_model.hpp"
#include "strategies/plan/plan_json.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <numeric>

using namespace hetsim;
namespace fs = std::filesystem;

namespace {

const std::string kData = std::string(HETSIM_SOURCE_DIR) + "/tests/exec/data/";

/// Four one-device nodes of a "cpu" GPU, two regions of two; 1 Gb/s per node.
struct Fixture {
  Cluster cluster           = load_cluster(kData + "cluster4.json");
  models::Workload workload = models::load_workload(kData + "model4.json");
};

std::string write_file(const std::string& name, const std::string& text)
{
  const fs::path file = fs::temp_directory_path() / ("hetsim_reliability_" + name);
  std::ofstream(file) << text;
  return file.string();
}

reliability::FailureModel failures(const Cluster& cluster, const std::string& checkpoint = R"({"storage_GBps": 1e6})")
{
  return reliability::load_failure_model(
      write_file("failures.json", R"({"mtbf_hours": {"gpu": {"cpu": 1000}, "node": 2000, "region_link": 500},
        "restart_minutes": 10, "checkpoint": )" + checkpoint + R"(, "run_days": 30})"),
      cluster);
}

double sum(const std::vector<double>& values) { return std::accumulate(values.begin(), values.end(), 0.0); }

} // namespace

TEST_CASE("a cluster fails at the sum of its devices', nodes' and region links' rates")
{
  const Fixture f;
  const auto model = failures(f.cluster);
  // 4 devices at 1/1000 h, 4 nodes at 1/2000 h, the one pair of regions at 1/500 h: 1/125 h.
  CHECK(reliability::cluster_mtbf_s(model, f.cluster) == doctest::Approx(125 * 3600.0));
  CHECK(model.restart_s == 600);
  CHECK(model.run_s == 30 * 86400);
}

TEST_CASE("a failure file's mistakes are one line naming the file and the field")
{
  const Fixture f;
  struct Case {
    std::string text, expected;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"mtbf_hours": {"gpu": {"H100": 5}}, "restart_minutes": 1, "checkpoint": {"storage_GBps": 1}, "run_days": 1})",
            "mtbf_hours.gpu: expected a GPU of the cluster (cpu) or \"default\" as a key, got 'H100'"},
           {R"({"restart_minutes": 1, "checkpoint": {"storage_GBps": 0}, "run_days": 1})", "checkpoint.storage_GBps"},
           {R"({"restart_minutes": 1, "checkpoint": {"storage_GBps": 1, "host_GBps": 2}, "run_days": 1})",
            "checkpoint.host_GBps: expected no host_GBps without \"async\": true"},
           {R"({"restart_minutes": 1, "checkpoint": {"storage_GBps": 1}, "run_days": 1, "mtbf": 3})", "mtbf"},
           {R"({"mtbf_hours": {"node": 1e300}, "restart_minutes": 1, "checkpoint": {"storage_GBps": 1}, "run_days": 1})",
            "mtbf_hours.node: expected hours from 0.01 to 1e9"},
       }) {
    CAPTURE(c.text);
    const std::string file = write_file("bad.json", c.text);
    try {
      (void)reliability::load_failure_model(file, f.cluster);
      FAIL("accepted");
    } catch (const InputError& e) {
      const std::string what = e.what();
      CHECK(what.rfind(file + ": ", 0) == 0);
      CHECK(what.find(c.expected) != std::string::npos);
      CHECK(what.find('\n') == std::string::npos);
    }
  }
}

TEST_CASE("a checkpoint is one copy of the states, written as the framework writes it: ZeRO spreads the shards")
{
  const Fixture f;
  const double bytes = reliability::checkpoint_bytes(f.workload, Dtype::fp16);
  CHECK(bytes == doctest::Approx(f.workload.total_params() * 14));
  auto plan_of = [&](int zero, const char* framework) {
    return strategies::plan_from_json({{"tp", 1}, {"pp", 1}, {"dp", 4}, {"micro_batch", 1}, {"grad_accum", 1},
                                       {"zero_stage", zero}, {"dtype", "fp16"}, {"framework", framework}},
                                      "plan", f.cluster, f.workload);
  };
  // Megatron-LM's fully parallel save: each replica writes a quarter of what they share.
  const auto megatron = plan_of(0, "megatron");
  const auto even = reliability::checkpoint_shares(megatron, strategies::problem_for_plan(f.cluster, f.workload, megatron));
  for (int r = 0; r < 4; ++r)
    CHECK(even[megatron.device(0, r, 0)] == doctest::Approx(bytes / 4));
  // DeepSpeed: the first replica writes the model states; with ZeRO each replica its optimizer shard.
  const auto replicated = plan_of(0, "deepspeed"), sharded = plan_of(1, "deepspeed");
  const auto problem    = strategies::problem_for_plan(f.cluster, f.workload, replicated);
  const auto whole      = reliability::checkpoint_shares(replicated, problem);
  const auto spread     = reliability::checkpoint_shares(sharded, problem);
  CHECK(sum(whole) == doctest::Approx(bytes));
  CHECK(sum(spread) == doctest::Approx(bytes));
  CHECK(whole[replicated.device(0, 0, 0)] == doctest::Approx(bytes));
  // ZeRO-1: the weights (2 of 14 bytes) from the first replica, the optimizer states (12) from all four.
  CHECK(spread[sharded.device(0, 0, 0)] == doctest::Approx(bytes * (2 + 3) / 14));
  CHECK(spread[sharded.device(0, 3, 0)] == doctest::Approx(bytes * 3 / 14));

  // Each node writes through its 1 Gb/s interface (storage is not the limit): sharded, the busiest node writes
  // 5/14 of what one node writes whole, and the restart reads it back as long.
  const auto model      = failures(f.cluster);
  const auto one_writer = reliability::checkpoint_costs(model, replicated, problem);
  const auto all_write  = reliability::checkpoint_costs(model, sharded, problem);
  CHECK(one_writer.blocking_s == doctest::Approx(bytes / 0.125e9));
  CHECK(all_write.blocking_s == doctest::Approx(one_writer.blocking_s * 5 / 14));
  CHECK(one_writer.restart_s == doctest::Approx(600 + one_writer.blocking_s));
  CHECK(one_writer.mtbf_s == doctest::Approx(125 * 3600.0));

  // Asynchronous: training stops only for the largest share's copy to host memory; the write bounds the interval.
  const auto async = reliability::checkpoint_costs(
      failures(f.cluster, R"({"storage_GBps": 1e6, "async": true, "host_GBps": 10})"), sharded, problem);
  CHECK(async.blocking_s == doctest::Approx(bytes * 5 / 14 / 10e9));
  CHECK(async.min_interval_s == doctest::Approx(all_write.blocking_s));
}
