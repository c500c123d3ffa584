#include "strategies/planners/poplar/poplar.hpp"

#include "core/error.hpp"
#include "models/transformer.hpp"
#include "strategies/lowering/memory.hpp"
#include "strategies/profiling/profiler.hpp"
#include "fixtures.hpp"
#include "strategies/planners/registry.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace hetsim;
using namespace hetsim::strategies;
using namespace hetsim::strategies::testing;

namespace {

/// Memory grows linearly in the first forward but runs out at `limit` sequences, below the linear estimate
/// (fragmentation, workspace growth); steps take 1 + batch milliseconds.
class SyntheticProfiler final : public Profiler {
public:
  explicit SyntheticProfiler(int limit) : limit_(limit) {}
  MemoryProbe probe_memory(int, int batch, ProfileSetting) override
  {
    return MemoryProbe{10, 10.0 + batch, 10.0 + kEstimate};
  }
  StepResult run_step(int, int batch, ProfileSetting) override
  {
    ++steps;
    return batch > limit_ ? StepResult{true, 0} : StepResult{false, 1e-3 * (1 + batch)};
  }
  static constexpr int kEstimate = 300;
  int steps = 0;

private:
  int limit_;
};

DeviceProfile profile_with_points(std::vector<ProfilePoint> points, int max_batch)
{
  DeviceProfile profile;
  profile.points    = std::move(points);
  profile.max_batch = max_batch;
  return profile;
}

/// A saturating step-time curve: speed rises with the batch and levels off at `peak` sequences per second.
SpeedCurve saturating_curve(double peak, int max_batch)
{
  std::vector<ProfilePoint> points;
  for (int b = 1; b <= max_batch; b *= 2)
    points.push_back({b, b / (peak * b / (b + 4.0))});
  if (points.back().batch != max_batch)
    points.push_back({max_batch, max_batch / (peak * max_batch / (max_batch + 4.0))});
  return SpeedCurve(profile_with_points(points, max_batch));
}

void check_allocation(const BatchAllocation& allocation, const std::vector<const SpeedCurve*>& devices,
                      int global_batch, bool equal_accumulation)
{
  long long total = 0;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const DeviceBatch& d = allocation.devices[i];
    CAPTURE(i);
    CHECK(d.micro_batch >= 1);
    CHECK(d.micro_batch <= devices[i]->max_batch());
    CHECK(d.last_micro_batch >= 1);
    CHECK(d.last_micro_batch <= d.micro_batch);
    if (equal_accumulation)
      CHECK(d.grad_accum == allocation.devices[0].grad_accum);
    total += d.total();
  }
  CHECK(total == global_batch);
}

} // namespace

TEST_CASE("algorithm 1 finds the true memory limit in O(log mbs) steps")
{
  const int bound = 2 * static_cast<int>(std::ceil(std::log2(SyntheticProfiler::kEstimate))) + 2;
  for (int limit : {1, 2, 3, 7, 8, 9, 37, 64, 150, 255, 299, 300, 500}) {
    CAPTURE(limit);
    SyntheticProfiler profiler(limit);
    const DeviceProfile profile = profile_device(profiler, 0, 0, 1 << 20);
    CHECK(profile.max_batch == std::min(limit, SyntheticProfiler::kEstimate));
    CHECK(profile.steps == profiler.steps);
    CHECK(profile.steps <= bound);
    CHECK(profile.points.back().batch == profile.max_batch);
    for (std::size_t i = 1; i < profile.points.size(); ++i)
      CHECK(profile.points[i - 1].batch < profile.points[i].batch);
  }
  SyntheticProfiler profiler(100);
  CHECK(profile_device(profiler, 0, 0, 20).max_batch == 20); // capped by the global batch
}

TEST_CASE("a device that cannot hold one sequence has no profile")
{
  class Full final : public Profiler {
  public:
    MemoryProbe probe_memory(int, int, ProfileSetting) override { return MemoryProbe{10, 12, 11}; }
    StepResult run_step(int, int, ProfileSetting) override { return StepResult{true, 0}; }
  } profiler;
  const DeviceProfile profile = profile_device(profiler, 0, 0, 100);
  CHECK(profile.max_batch == 0);
  CHECK(profile.steps == 0);
}

TEST_CASE("a type that holds no sequence even at ZeRO-3 is profiled again with recompute")
{
  // Without recompute nothing fits; with it, 10 sequences at every stage.
  class NeedsRecompute final : public Profiler {
  public:
    MemoryProbe probe_memory(int, int batch, ProfileSetting setting) override
    {
      return setting.recompute != Recompute::none ? MemoryProbe{10, 10.0 + batch, 20} : MemoryProbe{10, 12, 11};
    }
    StepResult run_step(int, int batch, ProfileSetting setting) override
    {
      return setting.recompute != Recompute::none && batch <= 10 ? StepResult{false, 1e-3 * (1 + batch)}
                                                                  : StepResult{true, 0};
    }
  } profiler;
  const Cluster cluster           = make_cluster(1, 2);
  const models::Workload workload = make_workload(4);
  Problem problem                 = make_problem(cluster, workload);
  problem.global_batch            = 16;
  const ClusterProfile profile    = profile_cluster(problem, profiler, 1);
  CHECK(profile.setting == ProfileSetting(1, Recompute::full)); // a layer list has nothing to rerun selectively
  CHECK(profile.max_batch(0) == 10);
  CHECK(profile.note == "ZeRO-1 with recompute (V100-SXM2-16GB cannot hold one sequence without it, even at ZeRO-3)");
  const PoplarResult result = plan_poplar(problem, profiler, 1);
  CHECK(result.plan.recompute);
  CHECK(result.plan.zero_stage == 1);
}

TEST_CASE("the speed curve passes through its points")
{
  const std::vector<ProfilePoint> points = {{1, 0.010}, {2, 0.012}, {4, 0.020}, {8, 0.035}, {13, 0.060}, {16, 0.070}};
  const SpeedCurve curve(profile_with_points(points, 16));
  for (const ProfilePoint& p : points) {
    CAPTURE(p.batch);
    CHECK(curve.step_seconds(p.batch) == doctest::Approx(p.step_seconds).epsilon(1e-12));
  }
  CHECK(curve.max_batch() == 16);
  // Between points the speed stays between its neighbours' (monotone cubic, no overshoot).
  CHECK(curve.speed(10) <= curve.speed(8));
  CHECK(curve.speed(10) >= curve.speed(13));
  CHECK(curve.peak_high() == 16);
  CHECK(curve.batch_within(0.035) == 8);
  CHECK(curve.batch_within(0.009) == 0);

  const SpeedCurve two(profile_with_points({{1, 0.01}, {4, 0.02}}, 4)); // too few for a cubic: linear
  CHECK(two.step_seconds(1) == doctest::Approx(0.01));
  CHECK(two.step_seconds(4) == doctest::Approx(0.02));
}

TEST_CASE("allocations sum to the global batch and respect every device's mbs")
{
  const SpeedCurve fast   = saturating_curve(400, 24);
  const SpeedCurve slow   = saturating_curve(90, 7);
  const SpeedCurve medium = saturating_curve(200, 60);
  const std::vector<const SpeedCurve*> devices = {&fast, &fast, &slow, &medium, &slow, &fast, &medium};
  for (int gbs : {7, 8, 13, 100, 101, 512, 1023, 4096}) {
    CAPTURE(gbs);
    check_allocation(allocate_by_peak_speed(devices, gbs), devices, gbs, false);
    for (double communication : {0.0, 0.05, 5.0})
      check_allocation(allocate_by_step_time(devices, gbs, communication), devices, gbs, true);
  }
  CHECK_THROWS_AS(allocate_by_peak_speed(devices, 6), InfeasiblePlan);
}

TEST_CASE("faster devices get more of the batch; costly communication means fewer, larger micro-steps")
{
  const SpeedCurve fast = saturating_curve(400, 64);
  const SpeedCurve slow = saturating_curve(100, 64);
  const std::vector<const SpeedCurve*> devices = {&fast, &slow};
  const auto split = allocate_by_peak_speed(devices, 500);
  CHECK(split.devices[0].total() == doctest::Approx(400).epsilon(0.02));
  const auto cheap  = allocate_by_step_time(devices, 500, 0.0);
  const auto costly = allocate_by_step_time(devices, 500, 10.0);
  CHECK(costly.devices[0].grad_accum <= cheap.devices[0].grad_accum);
  CHECK(costly.devices[0].micro_batch == 64); // the largest micro-step the memory allows
}

TEST_CASE("poplar plans per-device batches that fit, and raises the ZeRO stage when it must")
{
  Cluster cluster("mixed");
  const int big    = cluster.add_gpu(a100());
  const int small  = cluster.add_gpu(v100());
  const int region = cluster.add_region("dc", 5e-6);
  for (int n = 0; n < 2; ++n) {
    const int node = cluster.add_node(region, "node" + std::to_string(n), Link{300 * units::kGBps, 2e-6},
                                      Link{100 * units::kGbps, 5e-6});
    for (int d = 0; d < 2; ++d)
      cluster.add_device(node, n == 0 ? big : small);
  }
  // 1.2 B parameters: 19 GB of model states unsharded, more than a V100 holds.
  const models::Workload workload = make_workload(12, 100e6);
  Problem problem                 = make_problem(cluster, workload);
  problem.global_batch            = 96;
  CostModelProfiler profiler(problem, costmodel::ComputeModel());
  const PoplarResult result = plan_poplar(problem, profiler, 0);
  CHECK(result.profile.setting.zero_stage >= 1);
  CHECK(result.profile.note.find("raised from ZeRO-0: V100-SXM2-16GB") != std::string::npos);
  validate_plan(result.plan, cluster, workload, "poplar");
  CHECK(result.plan.global_batch() == 96);
  CHECK(result.plan.micro_batch[0] > result.plan.micro_batch[2]); // the 80 GB A100 takes more

  PlannerContext context;
  context.flags = {"zero=3"};
  const auto candidates = make_poplar_planner()->propose(problem, context);
  // The sweep's best micro-step time and its runners-up, each a complete ZeRO-3 plan of the whole batch.
  REQUIRE(candidates.size() >= 2);
  REQUIRE(candidates.size() <= 4);
  for (const Candidate& c : candidates) {
    CHECK(c.fits());
    CHECK(c.plan.zero_stage == 3);
    CHECK(c.plan.global_batch() == 96);
    for (int r = 1; r < 4; ++r)
      CHECK(c.plan.grad_accum[r] == c.plan.grad_accum[0]);
  }
  CHECK(candidates[0].plan != candidates[1].plan);

  context.flags = {"zero=5"};
  CHECK_THROWS_AS(make_poplar_planner()->propose(problem, context), InputError);
}

TEST_CASE("deepspeed uses one micro-batch everywhere, whale splits by peak FLOP/s")
{
  Cluster cluster("mixed");
  const int big    = cluster.add_gpu(a100());
  const int small  = cluster.add_gpu(v100());
  const int region = cluster.add_region("dc", 5e-6);
  const int node   = cluster.add_node(region, "node", Link{300 * units::kGBps, 2e-6}, Link{100 * units::kGbps, 5e-6});
  cluster.add_device(node, big);
  cluster.add_device(node, small);
  const models::Workload workload = make_workload(4, 10e6);
  Problem problem                 = make_problem(cluster, workload);
  problem.global_batch            = 64;
  PlannerContext context;
  context.flags = {"zero=0"};

  const auto deepspeed = make_deepspeed_planner()->propose(problem, context);
  REQUIRE(deepspeed.size() == 1);
  CHECK(deepspeed[0].plan.micro_batch[0] == deepspeed[0].plan.micro_batch[1]);
  CHECK(deepspeed[0].plan.global_batch() == 64);

  const auto whale = make_whale_planner()->propose(problem, context);
  REQUIRE(whale.size() == 1);
  CHECK(whale[0].plan.global_batch() == 64);
  // 312 vs 125 TFLOP/s: about 46 and 18 of 64.
  const Plan& plan = whale[0].plan;
  long long first  = 0;
  for (int m = 0; m < plan.grad_accum[0]; ++m)
    first += plan.micro_batch_samples(0, m);
  CHECK(first >= 44);
  CHECK(first <= 48);
}

TEST_CASE("the cost-model profiler's largest batch is the largest the memory model lets the plan have")
{
  // A 0.5 B Llama on 80 GB and 40 GB A100s: the batch limit sits where the framework's buffers and the
  // short-lived ones (logit and attention gradients) matter, so counting only states and activations would pass
  // plans the memory model then refuses.
  Cluster cluster("two-a100s");
  const int big    = cluster.add_gpu(*find_catalog_gpu("A100-SXM4-80GB"));
  const int small  = cluster.add_gpu(*find_catalog_gpu("A100-PCIe-40GB"));
  const int region = cluster.add_region("dc", 5e-6);
  for (int type : {big, small}) {
    const int node = cluster.add_node(region, "node" + std::to_string(type), Link{300 * units::kGBps, 2e-6},
                                      Link{25 * units::kGbps, 5e-6});
    for (int d = 0; d < 2; ++d)
      cluster.add_device(node, type);
  }
  models::TransformerShape shape;
  shape.name            = "llama-0.5b";
  shape.family          = "llama";
  shape.layers          = 24;
  shape.hidden          = 1280;
  shape.heads           = shape.kv_heads = 20;
  shape.intermediate    = 3456;
  shape.vocab           = 32000;
  shape.seq_len         = 2048;
  shape.gated_mlp       = true;
  shape.rms_norm        = true;
  shape.tied_embeddings = true;
  shape.flash_attention = true;
  const models::Workload workload = models::build_transformer(shape);
  Problem problem                 = make_problem(cluster, workload);
  problem.global_batch            = 256;

  CostModelProfiler profiler(problem, costmodel::ComputeModel{});
  auto fits = [&](int device, int batch, int zero) {
    return plan_memory(profiling_plan(problem, batch, zero), problem)[device].over_bytes() <= 0;
  };
  for (int zero = 0; zero <= 3; ++zero)
    for (int device : {0, 2}) {
      CAPTURE(zero);
      CAPTURE(device);
      const int limit = profile_device(profiler, device, zero, 1 << 12).max_batch;
      REQUIRE(limit > 0);
      CHECK(fits(device, limit, zero));
      CHECK_FALSE(fits(device, limit + 1, zero));
    }
  for (int zero = 0; zero <= 3; ++zero) {
    PlannerContext context;
    context.flags = {"zero=" + std::to_string(zero)};
    for (const Candidate& candidate : make_poplar_planner()->propose(problem, context)) {
      CAPTURE(zero);
      CAPTURE(candidate.note);
      CHECK(candidate.fits());
    }
  }
}
