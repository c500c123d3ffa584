/// The buffer plan: what the executors allocate, read without a device. The shared H100 plans (GPT-2 medium,
/// Llama-3.2-1B, Llama-3-8B cut to 8 blocks; tests/data/h100/inputs) against what PyTorch held training them.

#include "exec_fixtures.hpp"

#include "core/cluster_json.hpp"
#include "exec/buffer_plan.hpp"
#include "exec/executor_profiler.hpp"
#include "exec/kernel_products.hpp"
#include "exec/plugin.hpp"
#include "exec/store_directory.hpp"
#include "models/workload.hpp"
#include "strategies/lowering/lower.hpp"
#include "strategies/plan/plan_json.hpp"
#include "strategies/plan/framework.hpp"
#include "strategies/plan/problem.hpp"
#include "strategies/profiling/profiler.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <string>

using namespace hetsim;

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

std::string h100_input(const std::string& name)
{
  return std::string(HETSIM_SOURCE_DIR) + "/tests/data/h100/inputs/" + name;
}

/// One shared plan, lowered as `hetsim run` and `profile` lower it.
struct SharedPlan {
  Cluster cluster;
  models::Workload workload;
  strategies::Plan plan;
  strategies::Schedule schedule;

  SharedPlan(const std::string& model, const std::string& plan_file)
      : cluster(load_cluster(h100_input("h100x1.json"))), workload(models::load_workload(h100_input(model)))
  {
    plan     = strategies::load_plan(h100_input(plan_file), cluster, workload);
    workload = strategies::run_by(workload, plan.framework, plan.dtype);
    const strategies::Problem problem = strategies::problem_for_plan(cluster, workload, plan);
    schedule = strategies::lower(plan, problem, plan_file);
  }

  exec::BufferPlan buffers(bool hold_training_memory) const
  {
    exec::Workload w;
    w.schedule             = &schedule;
    w.model                = &workload;
    w.dtype                = plan.dtype;
    w.hold_training_memory = hold_training_memory;
    return exec::buffer_plan(w, 0);
  }
};

/// The cuda executor's peak: bf16 operands, a step through two fp32 vectors.
/// fp32 vectors the cuda executor's optimizer step reads (cuda_executor.cpp: kStepVectors).
constexpr std::size_t kCudaStepVectors = 2;

double cuda_peak_gib(const exec::BufferPlan& plan)
{
  return static_cast<double>(plan.peak_bytes(2, kCudaStepVectors)) / kGiB;
}

} // namespace

TEST_CASE("a stream kernel's passes touch its tensor, not every byte it moves")
{
  models::Kernel loss;
  loss.name         = "cross_entropy";
  loss.bytes        = 30e6; // Megatron's fp32 loss: the logits read and written over several passes...
  loss.tensor_bytes = 4e6;  // ...of one fp32 tensor of 2e6 16-bit elements' bytes
  const exec::StreamPasses passes = exec::stream_passes(loss);
  CHECK(passes.elements == 7'500'000);
  CHECK(passes.tensor == 2'000'000);
  const exec::Operands operands = exec::kernel_operands(loss);
  CHECK(operands.a == 2'000'000);
  CHECK(operands.c == 2'000'000);
  loss.tensor_bytes = 0; // unsaid: one read and one write
  CHECK(exec::stream_passes(loss).tensor == 7'500'000);
}

namespace {

/// A forward fused-attention kernel over `heads` heads of `sequence` tokens of `head_size`.
models::Kernel attention_kernel(double sequence, double head_size, double heads)
{
  models::Kernel attention;
  attention.kind  = models::Kernel::Kind::fused_attention;
  attention.m     = attention.n = sequence;
  attention.k     = head_size;
  attention.batch = heads;
  attention.flops = 4 * sequence * sequence * head_size * heads;
  return attention;
}

} // namespace

TEST_CASE("flash attention's emulation holds one block of queries, never the s x s scores")
{
  const models::Kernel attention = attention_kernel(1024, 64, 16);
  const exec::Operands operands = exec::kernel_operands(attention);
  CHECK(operands.c == 128u * 1024 * 16); // a 128-query block's scores per head
  double flops = 0;
  for (const exec::Product& p : exec::kernel_products(attention))
    flops += p.flops();
  CHECK(flops == doctest::Approx(attention.flops));
}

TEST_CASE("fused attention's operands hold cuDNN's tensors: Q, K, V, O forward; their gradients and fp32 buffers backward")
{
  models::Kernel attention = attention_kernel(2048, 128, 64);
  const std::size_t tensor = 64u * 2048 * 128, rows = 2u * 64 * 2048; // rows: fp32 per head and query
  exec::AttentionTensors forward = exec::attention_tensors(attention);
  CHECK_FALSE(forward.backward);
  CHECK(forward.tensor() == tensor);
  CHECK(exec::kernel_operands(attention).a == 3 * tensor);    // Q, K, V
  CHECK(exec::kernel_operands(attention).c >= tensor + rows); // O and the log-sum-exp
  attention.flops *= 2.5; // the backward's five products
  attention.backward = true;
  const exec::AttentionTensors backward = exec::attention_tensors(attention);
  CHECK(backward.backward);
  const exec::Operands operands = exec::kernel_operands(attention);
  CHECK(operands.a == 5 * tensor + rows); // Q, K, V, O, dO and the log-sum-exp
  CHECK(operands.c == 5 * tensor + rows); // dQ, dK, dV, fp32 dQ, row sums of dO * O
  // Whichever way it runs, its products' operands fit in the same place.
  std::size_t emulated = 0;
  for (const exec::Product& p : exec::kernel_products(attention))
    emulated = std::max(emulated, static_cast<std::size_t>((p.m * p.k + p.k * p.n + p.m * p.n) * p.count));
  CHECK(emulated <= operands.total());
}

TEST_CASE("the shared H100 plans: the executor holds what PyTorch held, and runs out of memory where it did")
{
  // PyTorch's max_memory_reserved for Hugging Face GPT-2 medium (fp32 weights, bf16 autocast, fused AdamW,
  // SDPA) on the H100, tests/data/h100/pytorch/gpt2-medium-steps.json; 0: out of memory on 79.18 GiB.
  struct Case {
    const char* plan;
    double pytorch_gib;
  };
  const Case cases[] = {{"plan-gpt2-medium-mb1.json", 7.4},     {"plan-gpt2-medium-mb2.json", 10.1},
                        {"plan-gpt2-medium-mb4.json", 15.6},    {"plan-gpt2-medium-mb8.json", 26.9},
                        {"plan-gpt2-medium-mb16.json", 48.5},   {"plan-gpt2-medium-mb32.json", 0},
                        {"plan-gpt2-medium-mb64.json", 0},      {"plan-gpt2-medium-mb32-rc.json", 28.7},
                        {"plan-gpt2-medium-mb64-rc.json", 55.9}};
  // cudaMalloc hands out the device's memory less the CUDA context's 0.5 GiB.
  const double usable = 79.18 - 0.5;
  for (const Case& c : cases) {
    CAPTURE(c.plan);
    const SharedPlan shared("gpt2-medium.json", c.plan);
    const double peak = cuda_peak_gib(shared.buffers(true));
    MESSAGE(c.plan << ": buffer plan peak " << peak << " GiB, PyTorch " << c.pytorch_gib << " GiB");
    CHECK((peak <= usable) == (c.pytorch_gib > 0));
    if (c.pytorch_gib > 0)
      CHECK(std::abs(peak / (c.pytorch_gib + 0.5) - 1) < 0.25);
  }
}

TEST_CASE("every shared plan runs: a run's buffers fit the H100 where PyTorch's training does")
{
  // `hetsim run` holds no training memory: the workspace and the optimizer's vectors. The first GPU run asked
  // for 46 GiB at once for GPT-2 medium at 32 and 64 sequences, 58.7 GiB for Llama-3.2-1B at 8 and 16 and
  // Llama-3-8B (8 blocks) at 4 and 8, and 117 GiB for Llama-3.2-1B at 32 with recompute.
  const std::pair<const char*, const char*> plans[] = {
      {"gpt2-medium.json", "plan-gpt2-medium-mb1.json"},       {"gpt2-medium.json", "plan-gpt2-medium-mb16.json"},
      {"gpt2-medium.json", "plan-gpt2-medium-mb32.json"},      {"gpt2-medium.json", "plan-gpt2-medium-mb64.json"},
      {"gpt2-medium.json", "plan-gpt2-medium-mb64-rc.json"},   {"llama-3.2-1b.json", "plan-llama-3.2-1b-mb1.json"},
      {"llama-3.2-1b.json", "plan-llama-3.2-1b-mb8.json"},     {"llama-3.2-1b.json", "plan-llama-3.2-1b-mb16.json"},
      {"llama-3.2-1b.json", "plan-llama-3.2-1b-mb16-rc.json"}, {"llama-3.2-1b.json", "plan-llama-3.2-1b-mb32-rc.json"},
      {"llama-3-8b-8l.json", "plan-llama-3-8b-8l-mb1.json"},   {"llama-3-8b-8l.json", "plan-llama-3-8b-8l-mb4.json"},
      {"llama-3-8b-8l.json", "plan-llama-3-8b-8l-mb8.json"},   {"llama-3-8b-8l.json", "plan-llama-3-8b-8l-mb8-rc.json"}};
  for (const auto& [model, plan] : plans) {
    CAPTURE(plan);
    const SharedPlan shared(model, plan);
    const exec::BufferPlan run = shared.buffers(false);
    const double gib = cuda_peak_gib(run);
    const double held = cuda_peak_gib(shared.buffers(true));
    MESSAGE(plan << ": run " << gib << " GiB (workspace " << run.workspace_elements * 2 / kGiB
                 << " GiB), profiling " << held << " GiB");
    CHECK(gib <= 79.18 - 0.5); // what cudaMalloc can hand out beside the CUDA context
  }
}

namespace {

/// Poplar's profile of a shared plan's model as the cuda executor runs it, answered from the buffer plan of each
/// profiling step instead of a GPU: what `hetsim profile --executor cuda` finds where the allocations are the
/// plan's, under the cap the H200 measurements ran under (an H100's 79.18 GiB, the CUDA context outside it).
class BufferPlanProfiler final : public strategies::Profiler {
public:
  explicit BufferPlanProfiler(const SharedPlan& shared) : shared_(shared) {}

  strategies::MemoryProbe probe_memory(int device, int batch, strategies::ProfileSetting setting) override
  {
    const exec::BufferPlan plan = step_plan(device, batch, setting);
    strategies::MemoryProbe probe;
    probe.total_bytes  = usable(device);
    probe.before_bytes = static_cast<double>(plan.peak_bytes(2, kCudaStepVectors) - plan.peak_activation_bytes);
    probe.after_bytes  = probe.before_bytes + static_cast<double>(forward_bytes_);
    return probe;
  }
  strategies::StepResult run_step(int device, int batch, strategies::ProfileSetting setting) override
  {
    const double peak = static_cast<double>(step_plan(device, batch, setting).peak_bytes(2, kCudaStepVectors));
    return {peak > usable(device), 0.01 * batch};
  }

private:
  /// The executor's memory cap: the device's memory (tests/data/h200 held both PyTorch's allocator and the
  /// executor's budget to it, with the CUDA context outside).
  double usable(int device) const { return problem().memory_capacity(device); }
  strategies::Problem problem() const
  {
    return strategies::problem_for_plan(shared_.cluster, shared_.workload, shared_.plan);
  }
  exec::BufferPlan step_plan(int device, int batch, strategies::ProfileSetting setting)
  {
    const strategies::Problem p       = problem();
    const strategies::Schedule schedule = strategies::lower(strategies::profiling_plan(p, batch, setting), p);
    exec::Workload w;
    w.schedule             = &schedule;
    w.model                = &shared_.workload;
    w.dtype                = shared_.plan.dtype;
    w.hold_training_memory = true;
    // What the forward keeps: every layer's saved activations, as the executor's probe sees them after it.
    forward_bytes_ = 0;
    for (int l = 0; l < static_cast<int>(shared_.workload.layers.size()); ++l)
      forward_bytes_ += exec::kept_activation_bytes(shared_.workload, schedule, l, batch, w.dtype, 1);
    return exec::buffer_plan(w, device);
  }

  const SharedPlan& shared_;
  std::size_t forward_bytes_ = 0;
};

} // namespace

namespace {

/// The largest micro-batch PyTorch trained `model` at without checkpointing, on the H200 held to an H100's 79.18
/// GiB (tests/data/h200/pytorch/steps.json), checked to have run out of memory one sequence above it.
int pytorch_largest(const std::string& model)
{
  std::ifstream file(std::string(HETSIM_SOURCE_DIR) + "/tests/data/h200/pytorch/steps.json");
  const nlohmann::json cases = nlohmann::json::parse(file);
  int largest = 0, smallest_out = 1 << 20;
  for (const auto& c : cases) {
    if (c.at("model") != model + ".json" || c.at("recompute").get<bool>())
      continue;
    const int batch = c.at("micro_batch");
    if (c.at("status") == "ok")
      largest = std::max(largest, batch);
    else
      smallest_out = std::min(smallest_out, batch);
  }
  REQUIRE(smallest_out == largest + 1);
  return largest;
}

} // namespace

TEST_CASE("profile's largest micro-batch from the buffer plan is within one of PyTorch's")
{
  // Measured: GPT-2 medium trains 28 sequences and runs out at 29; Llama-3.2-1B trains 8 and runs out at 9.
  for (const auto& [model, plan] : {std::pair{"gpt2-medium", "plan-gpt2-medium-mb1.json"},
                                    std::pair{"llama-3.2-1b", "plan-llama-3.2-1b-mb1.json"}}) {
    CAPTURE(model);
    const SharedPlan shared(std::string(model) + ".json", plan);
    BufferPlanProfiler profiler(shared);
    const strategies::DeviceProfile profile = strategies::profile_device(profiler, 0, 0, 128);
    const int pytorch = pytorch_largest(model);
    MESSAGE(model << ": largest micro-batch " << profile.max_batch << " in " << profile.steps << " steps; PyTorch's "
                  << pytorch);
    CHECK(std::abs(profile.max_batch - pytorch) <= 1);
  }
}

TEST_CASE("the cpu executor allocates what the buffer plan says, to the byte")
{
  ::setenv("HETSIM_EXECUTOR_PATH", HETSIM_EXECUTOR_DIR, 1);
  const test::ScratchDir dir("buffer_plan");
  {
    std::ofstream(dir.path / "model.json") << R"({"model_type": "gpt2", "n_embd": 128, "n_head": 2, "n_layer": 3,
        "n_positions": 64, "vocab_size": 500, "seq_len": 64})";
  }
  {
    std::ofstream(dir.path / "cluster.json") << R"({"name": "one", "gpus": {"small": {"memory_gib": 8,
        "memory_bandwidth_GBps": 100, "peak_tflops_fp16": 10, "peak_tflops_fp32": 1}},
        "regions": [{"name": "here", "nodes": [{"name": "host", "gpu": "small", "devices": 1}]}]})";
  }
  const Cluster cluster = load_cluster((dir.path / "cluster.json").string());
  for (const bool recompute : {false, true})
    for (const char* framework : {R"("megatron")", R"("fsdp")", R"({"name": "fsdp", "autocast": true})"}) {
      CAPTURE(recompute);
      CAPTURE(framework);
      {
        std::ofstream(dir.path / "plan.json")
            << R"({"tp": 1, "pp": 1, "dp": 1, "micro_batch": 3, "global_batch": 3, "zero_stage": 0, "recompute": )"
            << (recompute ? "true" : "false") << R"(, "dtype": "bf16", "framework": )" << framework << "}";
      }
      models::Workload model = models::load_workload((dir.path / "model.json").string());
      const strategies::Plan plan = strategies::load_plan((dir.path / "plan.json").string(), cluster, model);
      model = strategies::run_by(model, plan.framework, plan.dtype);
      const strategies::Problem problem = strategies::problem_for_plan(cluster, model, plan);
      const strategies::Schedule schedule = strategies::lower(plan, problem);
      exec::Workload workload;
      workload.schedule             = &schedule;
      workload.model                = &model;
      workload.dtype                = plan.dtype;
      workload.hold_training_memory = true;

      exec::StoreDirectory store;
      auto executor = exec::load_executor("cpu");
      exec::RankSetup setup;
      setup.store_dir    = store.path;
      setup.bind_address = "127.0.0.1";
      executor->connect(setup);
      executor->prepare(workload);
      for (int id : schedule.queues[0][static_cast<int>(strategies::Stream::compute)])
        executor->compute(schedule.tasks[id]);
      // The cpu executor computes in fp32 and its Adam steps through four fp32 vectors.
      const exec::BufferPlan buffers = exec::buffer_plan(workload, 0);
      CHECK(executor->memory_use().peak_bytes == static_cast<double>(buffers.peak_bytes(4, 4)));
      CHECK(buffers.peak_activation_bytes > 0);
    }
}
