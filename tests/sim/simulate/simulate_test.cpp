#include "sim/simulate/simulate.hpp"
#include "tests/temp_folder.hpp"

#include "core/units.hpp"
#include "costmodel/compute.hpp"
#include "models/workload.hpp"
#include "sim_fixtures.hpp"
#include "costmodel/kernel_time.hpp"
#include "strategies/lowering/estimate.hpp"
#include "strategies/lowering/fp32_accumulation.hpp"
#include "strategies/lowering/lower.hpp"
#include "strategies/lowering/memory.hpp"
#include "tests/strategies/fixtures.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <unistd.h>

#include <sstream>
#include <utility>

using namespace hetsim;
using namespace hetsim::sim;
using hetsim::sim::testing::ScheduleBuilder;
using hetsim::strategies::CollectiveAlgorithm;
using hetsim::strategies::Stream;
using hetsim::strategies::TaskKind;
using hetsim::units::kGbps;
using hetsim::units::kMicrosecond;

namespace {

constexpr double kForwardFlopsPerLayer = 2e12; // per sample
constexpr int kSeqLen                  = 1024;

models::Workload four_layers()
{
  models::Workload w;
  w.name    = "toy";
  w.seq_len = kSeqLen;
  for (int l = 0; l < 4; ++l) {
    models::Layer layer;
    layer.name                              = "block" + std::to_string(l);
    layer.kind                              = "transformer";
    layer.params                            = 50e6;
    layer.forward_flops_per_sample          = kForwardFlopsPerLayer;
    layer.backward_flops_per_sample         = 2 * kForwardFlopsPerLayer;
    layer.activation_bytes_per_sample       = 8e6;
    layer.saved_activation_bytes_per_sample = 64e6;
    w.layers.push_back(layer);
  }
  return w;
}

/// Two nodes of two GPUs (a fast pair and a slow pair); pp=2 x dp=2, stage s on node s.
struct Scenario {
  Cluster cluster{"pair-of-pairs"};
  models::Workload workload = four_layers();
  strategies::Plan plan;
  strategies::Problem problem;
  strategies::Schedule schedule;

  Scenario()
  {
    const int fast = cluster.add_gpu(testing::test_gpu("fast", 300));
    const int slow = cluster.add_gpu(testing::test_gpu("slow", 100));
    const int r    = cluster.add_region("r", 10 * kMicrosecond);
    for (int n = 0; n < 2; ++n) {
      const int node = cluster.add_node(r, "n" + std::to_string(n), {150e9, 2 * kMicrosecond},
                                        {25 * kGbps, 5 * kMicrosecond});
      cluster.add_device(node, n == 0 ? fast : slow);
      cluster.add_device(node, n == 0 ? fast : slow);
    }
    plan.pp           = 2;
    plan.dp           = 2;
    plan.placement    = {0, 1, 2, 3};
    plan.stage_starts = {0, 2};
    plan.micro_batch  = {2, 2};
    plan.grad_accum   = {2, 2};
    problem.cluster      = &cluster;
    problem.workload     = &workload;
    problem.global_batch = 8;

    // GPipe by hand: per replica r, stage 0 on device r and stage 1 on device 2 + r.
    ScheduleBuilder b(4);
    const double per_mb_fwd = 2 * 2 * kForwardFlopsPerLayer; // 2 layers x 2 samples
    std::vector<int> last_bwd(4, -1);
    for (int rep = 0; rep < 2; ++rep) {
      const int d0 = rep, d1 = 2 + rep;
      std::vector<int> f0, bwd1;
      int prev0 = -1, prev1 = -1;
      for (int mb = 0; mb < 2; ++mb) {
        const int f = b.compute(d0, 0, prev0 >= 0 ? std::vector<int>{prev0} : std::vector<int>{});
        b.task(f).flops = per_mb_fwd, b.task(f).samples = 2, b.task(f).stage = 0, b.task(f).micro_batch = mb;
        prev0 = f;
        const auto [s, rcv] = b.send_recv(d0, d1, 2 * 8e6, {f}, {});
        const int g = b.compute(d1, 0, prev1 >= 0 ? std::vector<int>{rcv, prev1} : std::vector<int>{rcv});
        b.task(g).flops = per_mb_fwd, b.task(g).samples = 2, b.task(g).stage = 1, b.task(g).micro_batch = mb;
        prev1 = g;
      }
      std::vector<int> grads;
      for (int mb = 0; mb < 2; ++mb) {
        const int g = b.compute(d1, 0, {prev1});
        b.task(g).kind  = TaskKind::backward;
        b.task(g).flops = 2 * per_mb_fwd, b.task(g).samples = 2, b.task(g).stage = 1, b.task(g).micro_batch = mb;
        prev1 = g;
        const auto [s, rcv] = b.send_recv(d1, d0, 2 * 8e6, {g}, {});
        b.task(s).backward = b.task(rcv).backward = true;
        const int h = b.compute(d0, 0, {rcv, prev0});
        b.task(h).kind  = TaskKind::backward;
        b.task(h).flops = 2 * per_mb_fwd, b.task(h).samples = 2, b.task(h).stage = 0, b.task(h).micro_batch = mb;
        prev0 = h;
      }
      last_bwd[d0] = prev0;
      last_bwd[d1] = prev1;
    }
    for (int stage = 0; stage < 2; ++stage) {
      const std::vector<int> members = {2 * stage, 2 * stage + 1};
      const auto ar = b.collective(TaskKind::all_reduce, members, 2 * 50e6 * 2, CollectiveAlgorithm::ring,
                                   Stream::data_parallel, {{last_bwd[members[0]]}, {last_bwd[members[1]]}});
      for (int i = 0; i < 2; ++i) {
        const int opt = b.compute(members[i], 0, {ar[i]});
        b.task(opt).kind   = TaskKind::optimizer;
        b.task(opt).params = 100e6;
      }
    }
    schedule = b.schedule();
  }
};

} // namespace

TEST_CASE("simulate: report figures follow from the timings")
{
  const Scenario s;
  const SimResult result = simulate(s.plan, s.problem, s.schedule);
  const Report& r        = result.report;
  REQUIRE(r.iteration_time_s > 0);
  double last_end = 0;
  for (const auto& e : result.trace.events)
    last_end = std::max(last_end, e.end_s);
  CHECK(r.iteration_time_s == last_end);
  CHECK(r.global_batch == 8);
  CHECK(r.tokens_per_s == doctest::Approx(8.0 * kSeqLen / r.iteration_time_s));
  const double model_flops = 8 * 4 * 3 * kForwardFlopsPerLayer;
  CHECK(r.tflops_per_s == doctest::Approx(model_flops / r.iteration_time_s / 1e12));
  CHECK(r.mfu == doctest::Approx(model_flops / r.iteration_time_s / (2 * 300e12 + 2 * 100e12)));

  const auto memory = strategies::plan_memory(s.plan, s.problem);
  REQUIRE(r.devices.size() == 4);
  for (const auto& d : r.devices) {
    CAPTURE(d.device);
    CHECK(d.compute_s + d.exposed_comm_s + d.idle_s == doctest::Approx(r.iteration_time_s));
    CHECK(d.comm_s >= d.exposed_comm_s);
    CHECK(d.stage == d.device / 2);
    CHECK(d.gpu == s.cluster.gpu_of(d.device).name);
    CHECK(d.memory.total_bytes() == memory[d.device].total_bytes());
    CHECK(d.idle_s >= r.devices[r.bottleneck.device].idle_s);
  }
  // Slow stage-1 GPUs do 3x the work time of the fast ones.
  CHECK(r.devices[2].compute_s > 2.5 * r.devices[0].compute_s);
  CHECK(r.bottleneck.device >= 2);
  CHECK(r.bottleneck.bound == "compute");

  // Compute tasks last what the cost model says.
  const costmodel::ComputeModel model;
  for (const auto& e : result.trace.events)
    if (e.kind == "forward" && e.device == 2)
      CHECK(e.end_s - e.start_s ==
            doctest::Approx(model.compute_seconds(s.cluster.gpu_of(2), e.flops, Dtype::fp16, 2.0 * kSeqLen)));

  CHECK(result.trace.events.size() == s.schedule.tasks.size());
  CHECK(result.trace.source == "simulation");
  CHECK(result.trace.device_labels.size() == 4);

  // Annotated as a measured trace is, so a simulated run can calibrate too.
  REQUIRE(result.trace.devices.size() == 4);
  CHECK(result.trace.devices[2].peak_flops == s.cluster.gpu_of(2).peak_flops(Dtype::fp16));
  int collectives = 0, sends = 0;
  for (const auto& e : result.trace.events) {
    CAPTURE(e.name);
    const strategies::Task& task = s.schedule.tasks[e.task_id];
    if (strategies::is_compute(task.kind)) {
      CHECK(e.tokens == static_cast<double>(task.samples) * kSeqLen);
    } else if (strategies::is_p2p(task.kind)) {
      ++sends;
      CHECK(!e.link.empty());
    } else {
      ++collectives;
      CHECK(e.collective == task.collective);
      CHECK(e.members == static_cast<int>(s.schedule.collectives[task.collective].devices.size()));
      CHECK(!e.link.empty());
    }
  }
  CHECK(collectives > 0);
  CHECK(sends > 0);
}

TEST_CASE("simulate: the pipeline bubble is each device's compute idle between the first forward and last backward")
{
  const Scenario s;
  SimOptions options;
  options.links          = true;
  const SimResult result = simulate(s.plan, s.problem, s.schedule, options);
  const Report& r        = result.report;
  double first = 1e300, last = 0;
  for (const auto& e : result.trace.events)
    if (e.kind == "forward" || e.kind == "backward")
      first = std::min(first, e.start_s), last = std::max(last, e.end_s);
  CHECK(r.bubble.window_s == doctest::Approx(last - first));
  for (const auto& d : r.devices) {
    CAPTURE(d.device);
    double compute = 0; // the optimizer too, where it runs inside the window (stage 1 steps while stage 0 works)
    for (const auto& e : result.trace.events)
      if (e.device == d.device && strategies::is_compute(s.schedule.tasks[e.task_id].kind))
        compute += std::max(0.0, std::min(e.end_s, last) - std::max(e.start_s, first));
    CHECK(d.bubble_s == doctest::Approx(last - first - compute));
    CHECK(d.bubble_s > 0); // two stages, two micro-batches: fill and drain
  }
  // GPipe, 2 stages, 2 micro-batches: (p - 1) / (m + p - 1).
  CHECK(r.bubble.ideal_fraction == doctest::Approx(1.0 / 3));
  REQUIRE(r.stages.size() == 2);
  for (const auto& stage : r.stages) {
    CAPTURE(stage.stage);
    CHECK(stage.devices == 2);
    const auto& a = r.devices[2 * stage.stage];
    const auto& b = r.devices[2 * stage.stage + 1];
    CHECK(stage.bubble_s == doctest::Approx((a.bubble_s + b.bubble_s) / 2));
    CHECK(stage.memory.total_bytes() == std::max(a.memory.total_bytes(), b.memory.total_bytes()));
  }
  // The stage-0 pipeline sends cross both NICs.
  REQUIRE(!r.links.top_by_bytes.empty());
  bool nic_used = false;
  for (const auto& kind : r.links.kinds)
    nic_used |= kind.kind == "nic" && kind.used_links > 0;
  CHECK(nic_used);
  const auto json = report_to_json(r);
  CHECK(json.at("stages").size() == 2);
  CHECK(json.at("pipeline_bubble").at("ideal_fraction") == doctest::Approx(1.0 / 3));
  CHECK(!json.at("links").at("top_by_busy_time").empty());
}

TEST_CASE("simulate: the trace's memory track peaks at the memory model's total less its transient buffers")
{
  const Scenario s;
  const SimResult result = simulate(s.plan, s.problem, s.schedule);
  const auto memory      = strategies::plan_memory(s.plan, s.problem);
  for (int device = 0; device < 4; ++device) {
    CAPTURE(device);
    std::vector<traces::MemorySample> track;
    for (const auto& m : result.trace.memory)
      if (m.device == device)
        track.push_back(m);
    REQUIRE(track.size() >= 3); // at the start, as micro-batches join, as they leave
    CHECK(track.front().time_s == 0);
    const double held = memory[device].total_bytes() - memory[device].transient_bytes;
    double peak       = 0;
    for (std::size_t i = 0; i < track.size(); ++i) {
      peak = std::max(peak, track[i].bytes);
      if (i > 0)
        CHECK(track[i].time_s > track[i - 1].time_s);
    }
    CHECK(peak == doctest::Approx(held));
    // Every micro-batch's activations are freed by the end of its backward.
    CHECK(track.back().bytes == doctest::Approx(held - memory[device].activation_bytes));
  }
  // The track survives a round trip through the Chrome trace file.
  const hetsim::test::TempFolder folder("memory_track");
  const auto path = folder.path / "trace.json";
  traces::write_chrome_trace(result.trace, path.string());
  const traces::Trace back = traces::read_chrome_trace(path.string());
  REQUIRE(back.memory.size() == result.trace.memory.size());
  CHECK(back.memory[3].bytes == doctest::Approx(result.trace.memory[3].bytes));
}

TEST_CASE("report from a trace: FLOP/s and MFU count the FLOPs done at the trace's scale")
{
  const Scenario s;
  const SimResult result = simulate(s.plan, s.problem, s.schedule);
  traces::Trace scaled   = result.trace;
  scaled.scale           = 0.5;
  const Report full      = report_from_trace(s.plan, s.problem, s.schedule, result.trace);
  const Report quarter   = report_from_trace(s.plan, s.problem, s.schedule, scaled);
  REQUIRE(full.mfu > 0);
  CHECK(quarter.mfu == doctest::Approx(full.mfu / 4));
  CHECK(quarter.tflops_per_s == doctest::Approx(full.tflops_per_s / 4));
  CHECK(quarter.iteration_time_s == full.iteration_time_s);
}

TEST_CASE("simulate: two runs give byte-identical report JSON and trace")
{
  const Scenario s;
  const SimResult a = simulate(s.plan, s.problem, s.schedule);
  const SimResult b = simulate(s.plan, s.problem, s.schedule);
  CHECK(report_to_json(a.report).dump() == report_to_json(b.report).dump());
  std::ostringstream ta, tb;
  traces::write_chrome_trace(a.trace, ta);
  traces::write_chrome_trace(b.trace, tb);
  CHECK(ta.str() == tb.str());
}

TEST_CASE("simulate: analytic intra-node collectives change only the intra-node collectives")
{
  const Scenario s;
  SimOptions options;
  options.analytic_intra_node = true;
  const SimResult flows    = simulate(s.plan, s.problem, s.schedule);
  const SimResult analytic = simulate(s.plan, s.problem, s.schedule, options);
  // Both data-parallel groups live inside one node; a lone ring of two matches its alpha-beta twin.
  CHECK(analytic.report.iteration_time_s == doctest::Approx(flows.report.iteration_time_s).epsilon(1e-6));
}

TEST_CASE("simulate and estimate: a profiled layer's time holds its tensor-parallel all-reduces, none is added")
{
  models::Workload workload = four_layers();
  for (auto& layer : workload.layers)
    layer.tensor_parallel_all_reduces = 2;
  // tp 2 on one node, two micro-batches of 2; the node's links fast (150 GB/s) or slow (1 GB/s).
  auto run = [&](double intra_node_bandwidth, const costmodel::LayerProfile* profile) {
    Cluster cluster("tp pair");
    const int gpu  = cluster.add_gpu(testing::test_gpu("fast", 300));
    const int r    = cluster.add_region("r", 10 * kMicrosecond);
    const int node = cluster.add_node(r, "n0", {intra_node_bandwidth, 2 * kMicrosecond}, {25 * kGbps, 5 * kMicrosecond});
    cluster.add_device(node, gpu);
    cluster.add_device(node, gpu);
    strategies::Plan plan;
    plan.tp           = 2;
    plan.placement    = {0, 1};
    plan.stage_starts = {0};
    plan.micro_batch  = {2};
    plan.grad_accum   = {2};
    strategies::Problem problem;
    problem.cluster      = &cluster;
    problem.workload     = &workload;
    problem.global_batch = 4;
    SimOptions options;
    options.profile = profile;
    options.trace   = false;
    const double simulated =
        simulate(plan, problem, strategies::lower(plan, problem), options).report.iteration_time_s;
    const double estimated =
        strategies::estimate(plan, problem, costmodel::ComputeModel(nullptr, profile)).iteration_time_s;
    return std::pair{simulated, estimated};
  };
  // Measured at tp 2: 50 ms forward per layer and micro-batch of 2, all-reduces included.
  costmodel::LayerProfile profile;
  profile.add({"fast", 2, 2, {0.05, 0.05, 0.05, 0.05}, {}});
  const auto [fast_profiled, fast_profiled_estimate] = run(150e9, &profile);
  const auto [slow_profiled, slow_profiled_estimate] = run(1e9, &profile);
  CHECK(slow_profiled == doctest::Approx(fast_profiled).epsilon(1e-9));
  CHECK(slow_profiled_estimate == doctest::Approx(fast_profiled_estimate).epsilon(1e-9));
  // Two micro-batches of 4 x 50 ms forward and 4 x 100 ms backward; the optimizer step is short.
  CHECK(fast_profiled == doctest::Approx(2 * (0.2 + 0.4)).epsilon(0.02));
  // Unprofiled, the all-reduces (16 MB each, 16 per micro-batch) are the model's to add, and the slow links show.
  const auto [fast, fast_estimate] = run(150e9, nullptr);
  const auto [slow, slow_estimate] = run(1e9, nullptr);
  CHECK(slow > fast + 0.4);
  CHECK(slow_estimate > fast_estimate + 0.4);
}

TEST_CASE("print_report: a table for small runs, a summary for large ones")
{
  const Scenario s;
  const Report report = simulate(s.plan, s.problem, s.schedule).report;
  std::ostringstream out;
  print_report(report, out);
  const std::string text = out.str();
  CHECK(text.find("iteration time") != std::string::npos);
  CHECK(text.find("dev3") != std::string::npos);
  CHECK(text.find("bottleneck: dev") != std::string::npos);

  Report large = report;
  large.devices.clear();
  for (int d = 0; d < 100; ++d) {
    DeviceReport dev = report.devices[d % 4];
    dev.device       = d;
    dev.idle_s       = d;
    large.devices.push_back(dev);
  }
  large.bottleneck.device = 0;
  std::ostringstream big;
  print_report(large, big);
  const std::string summary = big.str();
  CHECK(summary.find("per GPU type and stage") != std::string::npos);
  CHECK(summary.find("busiest 8 devices") != std::string::npos);
  CHECK(summary.find("dev99") == std::string::npos);
  CHECK(std::count(summary.begin(), summary.end(), '\n') < 40);

  const auto json = report_to_json(report);
  CHECK(json.at("devices").size() == 4);
  CHECK(json.at("bottleneck").at("bound") == "compute");
}

TEST_CASE("simulate and estimate: DeepSpeed's BF16_Optimizer adds each micro-batch's gradients into its fp32 copy")
{
  using namespace strategies;
  // One A100, 4 blocks of 2^26 parameters in 12 tensors each, bf16, ZeRO-1 at dp 1 (nothing to shard), 8
  // micro-batches: the BF16_Optimizer (data_types.grad_accum_dtype fp32) against DeepSpeed's ZeRO optimizer.
  const Cluster cluster = strategies::testing::make_cluster(1, 1, strategies::testing::a100());
  models::Workload workload = strategies::testing::make_workload(4, 1 << 26);
  for (models::Layer& layer : workload.layers)
    layer.parameter_tensors = 12;
  Plan plan            = strategies::testing::make_plan(cluster, workload, 1, 1, 1, 1, 8);
  plan.dtype           = Dtype::bf16;
  plan.zero_stage      = 1;
  plan.framework       = framework_defaults(Framework::deepspeed);
  const Problem problem = strategies::testing::make_problem(cluster, workload);
  SimOptions options;
  options.trace = false;
  auto seconds  = [&](const Plan& p) {
    return std::pair{simulate(p, problem, lower(p, problem), options).report.iteration_time_s,
                     estimate(p, problem).iteration_time_s};
  };
  const auto [zero, zero_estimate] = seconds(plan);
  plan.framework.fp32_gradient_accumulation = true;
  const auto [bf16, bf16_estimate] = seconds(plan);
  // 20 bytes per parameter at 0.85 of the A100's 2,039 GB/s, and 2 x 48 launches' gaps, 8 times.
  const costmodel::ComputeModel model(nullptr);
  const double each = fp32_accumulation_seconds(model, cluster.gpu_of(0), workload, 0, 4, 1, 1);
  CHECK(each == doctest::Approx(20.0 * 4 * (1 << 26) / (2039e9 * 0.85) +
                                96 * costmodel::kernel_constants(cluster.gpu_of(0)).launch_gap_s));
  CHECK(bf16 - zero == doctest::Approx(8 * each).epsilon(1e-6));
  CHECK(bf16_estimate - zero_estimate == doctest::Approx(8 * each).epsilon(1e-6));
}
