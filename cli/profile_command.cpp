/// `hetsim profile`: Poplar's online profiling (Algorithm 1) through an executor, one device of each GPU type,
/// written as the device profiles `hetsim search --device-profile` reads.

#include "cli/command.hpp"
#include "cli/option_checks.hpp"
#include "cli/scenario.hpp"
#include "core/cluster_json.hpp"
#include "core/byte_size.hpp"
#include "core/error.hpp"
#include "core/output_file.hpp"
#include "core/units.hpp"
#include "exec/executor_profiler.hpp"
#include "strategies/profiling/device_profiles.hpp"
#include "strategies/search/plan_space.hpp"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

namespace hetsim::cli {
namespace {

struct ProfileOptions {
  std::string cluster;
  std::string model;
  int seq_len = 0;
  std::string executor   = "cpu";
  std::string zero_stage = "all";
  double scale           = 1;
  std::string memory_limit;
  int max_batch          = 1024;
  std::string dtype; ///< empty: the model's
  std::string framework = "megatron";
  bool autocast          = false;
  int warmup             = 1;
  int iterations         = 3;
  std::string out;
};

std::vector<int> zero_stages(const std::string& text)
{
  if (text == "all")
    return {0, 1, 2, 3};
  if (text.size() == 1 && text[0] >= '0' && text[0] <= '3')
    return {text[0] - '0'};
  throw InputError("--zero-stage: expected 0, 1, 2, 3 or all, got '" + text + "'");
}

int run_profile(const ProfileOptions& options)
{
  const std::vector<int> stages = zero_stages(options.zero_stage);
  check_output(options.out, {options.cluster, options.model}, "--out");
  const Cluster cluster           = load_cluster(options.cluster);
  const models::Workload given = load_model(options.model, options.seq_len);
  strategies::Problem problem;
  problem.cluster = &cluster;
  if (!options.memory_limit.empty())
    problem.memory_limit_bytes = parse_byte_size(options.memory_limit, "--memory-limit");
  problem.dtype = strategies::choose_dtype(options.dtype, "--dtype", cluster, given);
  const models::Workload workload = apply_framework(options.framework, options.autocast, given, problem);
  problem.workload                = &workload;

  exec::ExecutorProfilerOptions run;
  run.executor    = options.executor;
  run.scale       = options.scale;
  run.warmup      = options.warmup;
  run.repetitions = options.iterations;
  exec::ExecutorProfiler profiler(problem, run);

  strategies::DeviceProfiles profiles;
  profiles.model       = workload.name;
  profiles.executor    = options.executor;
  profiles.scale       = options.scale;
  profiles.dtype       = problem.dtype;
  profiles.batch_limit = options.max_batch;
  std::cout << "profile: " << workload.name << " on " << cluster.name() << " as " << options.framework
            << " runs it, with the " << options.executor << " executor (scale " << options.scale << "), one device of each GPU type\n";
  // Profiles every GPU type under one setting; true when some type holds no sequence.
  auto profile_setting = [&](strategies::ProfileSetting setting) {
    bool short_of_memory = false;
    for (int device : strategies::gpu_types(cluster).representative) {
      const auto start = std::chrono::steady_clock::now();
      strategies::DeviceProfileEntry entry;
      entry.gpu              = cluster.gpu_of(device).name;
      entry.setting          = setting;
      entry.memory_cap_bytes = problem.memory_capacity(device);
      entry.profile          = strategies::profile_device(profiler, device, setting, options.max_batch);
      const double seconds   = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const auto& p          = entry.profile;
      std::printf("%-16s %-22s cap %7.2f GiB  max batch %5d%s  %3d steps in %6.2f s", entry.gpu.c_str(),
                  setting.text().c_str(), entry.memory_cap_bytes / units::kGiB, p.max_batch,
                  p.max_batch == options.max_batch ? " (--max-batch; memory holds more)" : "", p.steps, seconds);
      if (!p.points.empty())
        std::printf("; step %.4g s at 1, %.4g s at %d", p.points.front().step_seconds, p.points.back().step_seconds,
                    p.points.back().batch);
      std::printf("\n");
      std::fflush(stdout);
      short_of_memory = short_of_memory || p.max_batch == 0;
      profiles.entries.push_back(std::move(entry));
    }
    return short_of_memory;
  };
  bool short_at_zero3 = false;
  for (int stage : stages)
    short_at_zero3 = profile_setting(stage) && stage == 3;
  // The planners turn recompute on when not even ZeRO-3 holds a sequence without it (profile_cluster): the
  // stages again with it, so that they find what they ask for.
  if (short_at_zero3)
    for (strategies::Recompute recompute : strategies::recompute_choices(workload))
      if (recompute != strategies::Recompute::none)
        for (int stage : stages)
          profile_setting(strategies::ProfileSetting(stage, recompute));
  write_file_atomically(options.out, strategies::device_profiles_to_json(profiles).dump(1) + "\n");
  std::cout << "device profiles written to " << options.out << " (hetsim search --device-profile " << options.out
            << ")\n";
  return 0;
}

} // namespace

CommandRunner add_profile_command(CLI::App& app)
{
  auto options      = std::make_shared<ProfileOptions>();
  CLI::App* command = app.add_subcommand(
      "profile", "Poplar's online profiling through an executor: on one device of each GPU type, run training "
                 "steps (forward, backward, optimizer; no collectives) at growing micro-batches, exponentially then "
                 "by binary search, until one runs out of memory; write the largest batch that ran and the step "
                 "times, per GPU type and ZeRO stage (and with activation recompute when even the highest stage "
                 "holds no sequence without it), for `hetsim search --device-profile`.");
  command->add_option("--cluster", options->cluster, "cluster JSON file, or preset:NAME")->required();
  command->add_option("--model", options->model, "Hugging Face config.json or layer-list JSON, or preset:NAME")
      ->required();
  add_seq_len_option(*command, options->seq_len);
  command->add_option("--executor", options->executor, "executor plugin: cpu (Eigen) or cuda (cuBLAS)")
      ->capture_default_str();
  command->add_option("--zero-stage", options->zero_stage, "0, 1, 2, 3 or all (ZeRO shards over every device)")
      ->capture_default_str();
  command->add_option("--scale", options->scale, "multiply hidden sizes by this (FLOPs and weights by its square)")
      ->check(finite_in(1e-4, 1.0));
  command
      ->add_option("--memory-limit", options->memory_limit,
                   "out of memory past this much of the executor's allocations, with a unit (e.g. 20MiB; default, "
                   "and at most: each GPU's memory in the cluster file)");
  command->add_option("--max-batch", options->max_batch, "largest micro-batch tried")
      ->capture_default_str()
      ->check(finite_in(1, 1 << 20));
  command->add_option("--dtype", options->dtype, "fp16, bf16 or fp32 (default: the model's torch_dtype, else fp16)");
  command->add_option("--warmup", options->warmup, "untimed steps before each measurement")
      ->capture_default_str()
      ->check(non_negative());
  command->add_option("--iterations", options->iterations, "timed steps per batch (the median counts)")
      ->capture_default_str()
      ->check(positive());
  command->add_option("--framework", options->framework,
                      "megatron (default), deepspeed, fsdp or megatron-deepspeed: whose kernels and memory the steps have (docs/inputs.md, "
                      "Frameworks)");
  add_autocast_flag(*command, options->autocast);
  command->add_option("--out", options->out, "device profiles JSON to write")->required();
  return [options] { return run_profile(*options); };
}

} // namespace hetsim::cli
