/// A folded replay (strategies/lowering/fold.hpp) against the full one: the iteration time and every device's
/// figures within 1% on the cluster presets, homogeneous and heterogeneous, under the plans users run on them.

#include "core/cluster_json.hpp"
#include "core/error.hpp"
#include "models/workload.hpp"
#include "sim/simulate/simulate.hpp"
#include "strategies/lowering/fold.hpp"
#include "strategies/lowering/lower.hpp"
#include "strategies/plan/plan_json.hpp"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

using namespace hetsim;

namespace {

struct Replays {
  sim::Report folded;
  sim::Report exact;
  std::string summary; ///< the fold's, or empty when nothing folded
};

Replays replay_both(const Cluster& cluster, const models::Workload& workload, const strategies::Plan& plan)
{
  const auto problem = strategies::problem_for_plan(cluster, workload, plan);
  sim::SimOptions options;
  options.trace = false;
  options.links = true;
  Replays replays;
  const strategies::Schedule folded = strategies::lower_for_replay(plan, problem, false);
  if (folded.fold)
    replays.summary = folded.fold->summary();
  replays.folded = sim::simulate(plan, problem, folded, options).report;
  options.exact  = true;
  replays.exact  = sim::simulate(plan, problem, strategies::lower(plan, problem), options).report;
  return replays;
}

/// Iteration time within 1%; every device's compute, communication, idle and bubble time within 1% of the
/// iteration; the links' bytes by kind within 1%.
void check_agreement(const Replays& r)
{
  const double time = r.exact.iteration_time_s;
  CHECK(r.folded.iteration_time_s == doctest::Approx(time).epsilon(0.01));
  REQUIRE(r.folded.devices.size() == r.exact.devices.size());
  double worst = 0;
  for (std::size_t i = 0; i < r.exact.devices.size(); ++i) {
    const auto& f = r.folded.devices[i];
    const auto& e = r.exact.devices[i];
    CHECK(f.device == e.device);
    for (const auto& [a, b] : {std::pair{f.compute_s, e.compute_s}, std::pair{f.comm_s, e.comm_s},
                               std::pair{f.idle_s, e.idle_s}, std::pair{f.bubble_s, e.bubble_s}})
      worst = std::max(worst, std::abs(a - b) / time);
  }
  CHECK_MESSAGE(worst <= 0.01, r.summary);
  REQUIRE(r.folded.links.kinds.size() == r.exact.links.kinds.size());
  for (std::size_t k = 0; k < r.exact.links.kinds.size(); ++k) {
    CAPTURE(r.exact.links.kinds[k].kind);
    CHECK(r.folded.links.kinds[k].bytes == doctest::Approx(r.exact.links.kinds[k].bytes).epsilon(0.01));
    CHECK(r.folded.links.kinds[k].used_links == r.exact.links.kinds[k].used_links);
  }
}

strategies::Plan plan_of(const nlohmann::json& json, const Cluster& cluster, const models::Workload& workload)
{
  return strategies::plan_from_json(json, "fold_test plan", cluster, workload);
}

} // namespace

namespace {

/// Pure data parallelism (ZeRO-0 and ZeRO-3, ring and hierarchical), pipelines of 2 and 4 stages, an interleaved
/// one (and tensor parallelism of 4 where nodes hold 8 GPUs), each folded and replayed in full on `preset`.
void check_plans_on_preset(const std::string& preset, const models::Workload& gpt2)
{
  const Cluster cluster = load_cluster("preset:" + preset);
  const int n           = cluster.device_count();
  std::vector<nlohmann::json> plans{
      {{"tp", 1}, {"pp", 1}, {"dp", n}, {"micro_batch", 2}, {"grad_accum", 2}, {"zero_stage", 0}},
      {{"tp", 1}, {"pp", 1}, {"dp", n}, {"micro_batch", 2}, {"grad_accum", 1}, {"zero_stage", 3}},
      {{"tp", 1}, {"pp", 2}, {"dp", n / 2}, {"micro_batch", 2}, {"grad_accum", 4}, {"zero_stage", 1}},
      {{"tp", 1}, {"pp", 4}, {"dp", n / 4}, {"micro_batch", 1}, {"grad_accum", 8}, {"recompute", true}},
      {{"tp", 1}, {"pp", 2}, {"dp", n / 2}, {"micro_batch", 1}, {"grad_accum", 8}, {"virtual_stages", 2},
       {"zero_stage", 1}}};
  if (preset == "case1_datacenter_on_demand") {
    plans.push_back({{"tp", 4}, {"pp", 2}, {"dp", n / 8}, {"micro_batch", 2}, {"grad_accum", 4}});
    plans.push_back({{"tp", 1}, {"pp", 1}, {"dp", n}, {"micro_batch", 2}, {"grad_accum", 1}, {"zero_stage", 3},
                     {"collective_algorithm", "hierarchical"}});
  }
  for (const auto& json : plans) {
    CAPTURE(preset);
    CAPTURE(json.dump());
    const Replays r = replay_both(cluster, gpt2, plan_of(json, cluster, gpt2));
    MESSAGE(preset << " " << json.dump() << ": " << (r.summary.empty() ? "not folded" : r.summary) << ", "
                   << r.folded.iteration_time_s << " s folded, " << r.exact.iteration_time_s << " s full");
    check_agreement(r);
  }
}

} // namespace

// One homogeneous data-centre preset (with tensor parallelism and hierarchical rings) and one geo-distributed
// one; the four others under -L long (30 of this check's 46 s).
TEST_CASE("a folded replay agrees with the full one within 1% on a data-centre and a worldwide preset")
{
  const models::Workload gpt2 = models::load_workload("preset:gpt2-medium");
  for (const char* preset : {"case1_datacenter_on_demand", "case5_worldwide_geo"})
    check_plans_on_preset(preset, gpt2);
}

TEST_CASE("a folded replay agrees with the full one within 1% on the other cluster presets" *
          doctest::test_suite("long"))
{
  const models::Workload gpt2 = models::load_workload("preset:gpt2-medium");
  for (const char* preset : {"case2_datacenter_spot", "case3_multi_datacenter", "case4_regional_geo",
                             "fluidstack_a40"})
    check_plans_on_preset(preset, gpt2);
}

TEST_CASE("context-parallel groups fold whole: their rings run as in the full replay, within 1%")
{
  const models::Workload llama = models::load_workload("preset:llama-2-7b"); // flash attention, 4,096 tokens
  int folded = 0, ranks_kept_of_cp = 1 << 30;
  for (const std::string preset : {"case1_datacenter_on_demand", "case5_worldwide_geo"}) {
    const Cluster cluster = load_cluster("preset:" + preset);
    const int n           = cluster.device_count();
    std::vector<nlohmann::json> plans{
        {{"tp", 1}, {"pp", 2}, {"cp", 2}, {"dp", n / 4}, {"micro_batch", 1}, {"grad_accum", 4}, {"zero_stage", 1}}};
    if (preset == "case1_datacenter_on_demand") { // rings across nodes, tensor parallelism inside them
      plans.push_back({{"tp", 4}, {"pp", 1}, {"cp", 4}, {"dp", n / 16}, {"micro_batch", 1}, {"grad_accum", 2}});
      // each context-parallel rank a node of its own: half of each group replayed, as half the tp ranks
      plans.push_back({{"tp", 8}, {"pp", 1}, {"cp", 4}, {"dp", n / 32}, {"micro_batch", 1}, {"grad_accum", 2}});
    }
    for (const auto& json : plans) {
      CAPTURE(preset);
      CAPTURE(json.dump());
      const strategies::Plan plan = plan_of(json, cluster, llama);
      const Replays r             = replay_both(cluster, llama, plan);
      MESSAGE(preset << " " << json.dump() << ": " << (r.summary.empty() ? "not folded" : r.summary) << ", "
                     << r.folded.iteration_time_s << " s folded, " << r.exact.iteration_time_s << " s full");
      check_agreement(r);
      // A context-parallel group is replayed whole, or (uniform rings) the first rank of each block of it.
      const strategies::Fold fold = strategies::find_fold(plan, strategies::problem_for_plan(cluster, llama, plan));
      folded += fold.folds();
      for (int replica : fold.replicas) {
        const int first = plan.context_group_first(replica);
        const long kept = std::count_if(fold.replicas.begin(), fold.replicas.end(),
                                        [&](int rank) { return plan.context_group_first(rank) == first; });
        CHECK((kept == plan.cp || kept == 2));
        if (plan.cp >= 4)
          ranks_kept_of_cp = std::min(ranks_kept_of_cp, static_cast<int>(kept));
      }
    }
  }
  CHECK(folded >= 3);
  CHECK(ranks_kept_of_cp == 2); // the cp 4 plan with a node per context-parallel rank keeps 2 of each group
}

TEST_CASE("context-parallel ranks fold only onto ranks that sit as they do: NICs of two speeds keep every rank")
{
  // Eight DGX-like nodes of one GPU whose NICs alternate 400 and 200 Gb/s: every ring edge has the slower
  // card's type, but a rank on a 200 Gb/s node cannot stand for one on a 400 Gb/s node.
  nlohmann::json nodes = nlohmann::json::array();
  for (int n = 0; n < 8; ++n)
    nodes.push_back({{"name", "n" + std::to_string(n)},
                     {"gpu", "A100-SXM4-80GB"},
                     {"devices", 8},
                     {"intra_node", {{"bandwidth_GBps", 300}, {"latency_us", 2}}},
                     {"nic", {{"bandwidth_gbps", n % 2 == 0 ? 400 : 200}, {"latency_us", 3}}}});
  const Cluster cluster = cluster_from_json(
      {{"name", "mixed_nics"}, {"regions", {{{"name", "dc"}, {"latency_us", 2}, {"nodes", nodes}}}}}, "mixed_nics");
  const models::Workload llama = models::load_workload("preset:llama-2-7b");
  const strategies::Plan plan  = plan_of(
      {{"tp", 8}, {"pp", 1}, {"cp", 4}, {"dp", 2}, {"micro_batch", 1}, {"grad_accum", 2}}, cluster, llama);
  const strategies::Fold fold = strategies::find_fold(plan, strategies::problem_for_plan(cluster, llama, plan));
  for (int replica : fold.replicas) // whole context-parallel groups
    CHECK(std::count_if(fold.replicas.begin(), fold.replicas.end(), [&](int rank) {
            return plan.context_group_first(rank) == plan.context_group_first(replica);
          }) == plan.cp);
  check_agreement(replay_both(cluster, llama, plan));
}

TEST_CASE("the default scenario folds and agrees with the full replay")
{
  const Cluster cluster           = load_cluster("preset:case5_worldwide_geo");
  const models::Workload workload = models::load_workload("preset:gpt3-1.3b");
  const Replays r = replay_both(cluster, workload, strategies::load_plan("preset:gpt3-1.3b-case5", cluster, workload));
  MESSAGE("default scenario: " << (r.summary.empty() ? "not folded" : r.summary));
  check_agreement(r);
}

namespace {

struct Preset768 {
  Cluster cluster           = load_cluster("preset:dgx_a100_768");
  models::Workload workload = models::load_workload("preset:llama-2-70b");
  strategies::Plan plan     = strategies::load_plan("preset:llama-2-70b-768", cluster, workload);
};

} // namespace

TEST_CASE("the 768-GPU preset folds every replica and half the tensor-parallel ranks")
{
  // Llama-2-70B, tp 8 x pp 12 x dp 8 on 96 DGX nodes.
  const Preset768 preset;
  const auto problem          = strategies::problem_for_plan(preset.cluster, preset.workload, preset.plan);
  const strategies::Fold fold = strategies::find_fold(preset.plan, problem);
  CHECK(fold.replicas == std::vector<int>{0, 4});
  CHECK(fold.tp_ranks == std::vector<int>{0, 4});
  CHECK(fold.summary() == "replays 48 of 768 devices");
}

// The full replay of 768 devices takes over two minutes on two cores.
TEST_CASE("the 768-GPU preset's folded replay agrees with the full one" * doctest::test_suite("long"))
{
  const Preset768 preset;
  check_agreement(replay_both(preset.cluster, preset.workload, preset.plan));
}

namespace {

/// case1 (8 nodes of 8 V100) with the GPUs of two nodes at half speed.
Cluster with_slow_nodes(int a, int b)
{
  const Cluster catalog = load_cluster("preset:case1_datacenter_on_demand");
  Cluster mixed("mixed");
  const int v100 = mixed.add_gpu(catalog.gpus()[0]);
  GpuSpec slower = catalog.gpus()[0];
  slower.name    = "V100-slow";
  slower.peak_flops_fp16 /= 2;
  const int slow   = mixed.add_gpu(slower);
  const int region = mixed.add_region("dc", catalog.regions()[0].latency_s);
  for (int n = 0; n < static_cast<int>(catalog.nodes().size()); ++n) {
    const Node& node = catalog.nodes()[n];
    const int id     = mixed.add_node(region, node.name, node.intra, node.nic);
    for (std::size_t d = 0; d < node.devices.size(); ++d)
      mixed.add_device(id, n == a || n == b ? slow : v100);
  }
  return mixed;
}

} // namespace

TEST_CASE("heterogeneity breaks the classes: the replicas of slower GPUs are replayed for themselves")
{
  const models::Workload gpt2 = models::load_workload("preset:gpt2-medium");
  const nlohmann::json json{{"tp", 8}, {"pp", 1}, {"dp", 8}, {"micro_batch", 4}, {"grad_accum", 2}};
  {
    // Nodes 6 and 7 slow: the six fast replicas fold in two blocks of three (0, 1, 2 and 3, 4, 5), and the ring
    // still goes fast, fast, slow, slow.
    const Cluster mixed         = with_slow_nodes(6, 7);
    const auto plan             = plan_of(json, mixed, gpt2);
    const strategies::Fold fold = strategies::find_fold(plan, strategies::problem_for_plan(mixed, gpt2, plan));
    CHECK(fold.replicas == std::vector<int>{0, 3, 6, 7});
    CHECK(fold.tp_ranks == std::vector<int>{0, 4});
    CHECK(fold.representative[1 * 8] == 0);
    CHECK(fold.representative[5 * 8 + 5] == 3 * 8 + 4);
    CHECK(fold.representative[6 * 8] == 6 * 8);
    CHECK(fold.representative[7 * 8 + 3] == 7 * 8);
    check_agreement(replay_both(mixed, gpt2, plan));
  }
  {
    // Nodes 5 and 6 slow: a folded ring would have node 0 receive from a slow replica where the real one has it
    // receive from replica 7, a fast one. Only the tensor-parallel ranks fold.
    const Cluster mixed         = with_slow_nodes(5, 6);
    const auto plan             = plan_of(json, mixed, gpt2);
    const strategies::Fold fold = strategies::find_fold(plan, strategies::problem_for_plan(mixed, gpt2, plan));
    CHECK(fold.replicas == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
    CHECK(fold.tp_ranks == std::vector<int>{0, 4});
    check_agreement(replay_both(mixed, gpt2, plan));
  }
}

TEST_CASE("a job too large to replay in full says that folding makes it fit")
{
  // Llama-2-70B on 768 A100 with 512 micro-batches per replica: about 33 M tasks in full, 2.1 M folded (with
  // sequence parallelism, a reduce-scatter and an all-gather for each tensor-parallel all-reduce).
  const Cluster cluster           = load_cluster("preset:dgx_a100_768");
  const models::Workload workload = models::load_workload("preset:llama-2-70b");
  const auto plan    = plan_of({{"tp", 8}, {"pp", 12}, {"dp", 8}, {"micro_batch", 1}, {"grad_accum", 512},
                                {"zero_stage", 1}, {"dtype", "bf16"}},
                               cluster, workload);
  const auto problem = strategies::problem_for_plan(cluster, workload, plan);
  CHECK_THROWS_WITH_AS(strategies::lower_for_replay(plan, problem, true),
                       doctest::Contains("or leave out --exact: the replay folds identical devices (replays 48 of "
                                         "768 devices)"),
                       InputError);
  const strategies::Schedule folded = strategies::lower_for_replay(plan, problem, false);
  CHECK(folded.fold != nullptr);
  CHECK(folded.tasks.size() < 2'500'000);
}

TEST_CASE("slow ports, per-flow WAN links and hierarchical rings out of node order fold only as far as stays exact")
{
  const models::Workload gpt2 = models::load_workload("preset:gpt2-medium");
  const auto cluster_of = [](const std::string& text) { return cluster_from_json(nlohmann::json::parse(text), "test"); };
  {
    // 32 GB/s ports against a 100 GB/s NIC shared by 4 GPUs: the tensor-parallel ranks fold, but their
    // collectives stay flows, since the NIC-bound traffic takes much of a port.
    const Cluster pcie = cluster_of(
        R"({"name": "pcie", "regions": [{"name": "r", "latency_ms": 0.01, "nodes": [{"name": "n", "gpu": "A100-SXM4-40GB",
            "devices": 4, "repeat": 16, "intra_node": {"bandwidth_GBps": 32, "latency_us": 2},
            "nic": {"bandwidth_gbps": 800, "latency_us": 5}}]}]})");
    const auto plan = plan_of({{"tp", 4}, {"pp", 1}, {"dp", 16}, {"micro_batch", 2}, {"grad_accum", 2}, {"zero_stage", 3}},
                              pcie, gpt2);
    CHECK(strategies::find_fold(plan, strategies::problem_for_plan(pcie, gpt2, plan)).tp_ranks ==
          std::vector<int>{0, 2});
    check_agreement(replay_both(pcie, gpt2, plan));
  }
  const std::string two_regions = R"({"name": "geo2", "regions": [
      {"name": "a", "latency_ms": 0.01, "nodes": [{"name": "a", "gpu": "A100-SXM4-40GB", "devices": 2, "repeat": 4,
        "intra_node": {"bandwidth_GBps": 300, "latency_us": 2}, "nic": {"bandwidth_gbps": 100, "latency_us": 5}}]},
      {"name": "b", "latency_ms": 0.01, "nodes": [{"name": "b", "gpu": "A100-SXM4-40GB", "devices": 2, "repeat": 4,
        "intra_node": {"bandwidth_GBps": 300, "latency_us": 2}, "nic": {"bandwidth_gbps": 100, "latency_us": 5}}]}],
      "inter_region": {"latency_ms": [[0, 20], [20, 0]], "bandwidth_gbps": [[0, 10], [10, 0]]})";
  {
    // Replica pairs on alternating regions: the hierarchical algorithm's inter-node ring goes in node order,
    // not the replicas' order that the fold counts, so the replicas do not fold.
    const Cluster geo = cluster_of(two_regions + "}");
    const auto plan   = plan_of({{"tp", 1}, {"pp", 1}, {"dp", 16}, {"micro_batch", 2}, {"grad_accum", 2},
                                 {"collective_algorithm", "hierarchical"},
                                 {"placement", {0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15}}},
                                geo, gpt2);
    CHECK_FALSE(strategies::find_fold(plan, strategies::problem_for_plan(geo, gpt2, plan)).folds());
    check_agreement(replay_both(geo, gpt2, plan));
  }
  {
    // A WAN link shared per flow is not narrowed, but its bytes still count every replica's transfers.
    const Cluster geo = cluster_of(two_regions + R"(, "wan_sharing": "per_flow"})");
    const auto plan = plan_of({{"tp", 1}, {"pp", 2}, {"dp", 8}, {"micro_batch", 2}, {"grad_accum", 4}}, geo, gpt2);
    const Replays r = replay_both(geo, gpt2, plan);
    CHECK_FALSE(r.summary.empty());
    check_agreement(r);
  }
}
