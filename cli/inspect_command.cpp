/// `hetsim inspect cluster|model FILE`, `hetsim inspect gpus|frameworks`: show what HetSim understood from an
/// input file, the GPU catalog, or each framework's defaults with the line of the framework's code behind each.

#include "cli/command.hpp"
#include "cli/scenario.hpp"
#include "core/cluster_json.hpp"
#include "core/error.hpp"
#include "core/gpu_spec.hpp"
#include "core/units.hpp"
#include "costmodel/attention_speed.hpp"
#include "costmodel/prediction_band.hpp"
#include "models/workload.hpp"
#include "strategies/plan/framework_sources.hpp"
#include "strategies/plan/plan_json.hpp"

#include <cstdio>
#include <map>
#include <memory>

namespace hetsim::cli {
namespace {

void print_link(const char* label, const Link& link)
{
  std::printf("%s %.4g Gb/s, %.4g ms", label, link.bandwidth_bytes_per_s / units::kGbps, link.latency_s * 1e3);
}

/// Per catalog GPU: its compute capability, where its kernel constants come from with the range a step priced
/// with them has measured in, and which attention kernel runs for SDPA and Transformer Engine, measured or not.
void inspect_gpu_provenance()
{
  std::printf("where each GPU's figures come from (costmodel/prediction_band.cpp, costmodel/attention_speed.cpp):\n");
  for (const GpuSpec& gpu : gpu_catalog()) {
    const costmodel::ConstantsProvenance p = costmodel::constants_provenance(gpu, nullptr);
    std::printf("%-16s %-5s constants %s (-%.0f%%/+%.0f%%: %s)\n", gpu.name.c_str(),
                gpu.compute_capability > 0 ? ("sm" + std::to_string(gpu.compute_capability)).c_str() : "-",
                costmodel::origin_name(p.origin), 100 * p.below, 100 * p.above, p.source.c_str());
    for (const models::AttentionKernel asked : {models::AttentionKernel::sdpa, models::AttentionKernel::te_fused}) {
      const costmodel::AttentionRun run    = costmodel::attention_run(asked, gpu, false);
      const costmodel::AttentionSpeed speed = costmodel::attention_speed(run.kernel, gpu);
      std::printf("%-22s attention %s runs %s, %s: %s\n", "", std::string(models::attention_kernel_name(asked)).c_str(),
                  std::string(models::attention_kernel_name(run.kernel)).c_str(),
                  speed.measured ? "measured" : "unmeasured", speed.source);
    }
  }
}

void inspect_gpus()
{
  std::printf("%-16s %8s %9s %11s %10s %10s %11s %5s %5s  %s\n", "gpu", "mem GiB", "HBM GB/s", "fp16 TFLOP",
              "fp8 TFLOP", "fp4 TFLOP", "fp32 TFLOP", "SMs", "bf16", "also written");
  auto peak = [](double flops) {
    char text[16];
    std::snprintf(text, sizeof text, "%.1f", flops / units::kTera);
    return flops > 0 ? std::string(text) : std::string("-");
  };
  for (const GpuSpec& gpu : gpu_catalog()) {
    std::string aliases;
    for (const std::string& alias : catalog_gpu_aliases(gpu.name))
      aliases += (aliases.empty() ? "" : ", ") + alias;
    std::printf("%-16s %8.1f %9.0f %11.1f %10s %10s %11.1f %5d %5s  %s\n", gpu.name.c_str(),
                gpu.memory_bytes / units::kGiB, gpu.memory_bandwidth_bytes_per_s / units::kGBps,
                gpu.peak_flops_fp16 / units::kTera, peak(gpu.peak_flops_fp8).c_str(), peak(gpu.peak_flops_fp4).c_str(),
                gpu.peak_flops_fp32 / units::kTera, gpu.multiprocessors, gpu.bf16 ? "yes" : "no", aliases.c_str());
  }
  std::printf("peaks are dense (no sparsity); fp16 is the tensor-core peak, also bf16's where the GPU takes bf16; "
              "fp8 and fp4 where it has such tensor cores (plans train in fp8, not fp4); "
              "a cluster file names a GPU by catalog name or alias, or gives its own figures\n\n");
  inspect_gpu_provenance();
}

void inspect_frameworks()
{
  using namespace strategies;
  for (Framework framework :
       {Framework::megatron, Framework::deepspeed, Framework::fsdp, Framework::megatron_deepspeed}) {
    Plan plan;
    plan.framework              = framework_defaults(framework);
    plan.framework.bucket_params += 1; // so that every field is written
    nlohmann::json defaults     = plan_to_json(plan).at("framework");
    defaults["bucket_params"]   = framework_defaults(framework).bucket_params;
    std::printf("%s\n", std::string(framework_name(framework)).c_str());
    for (const SettingSource& s : framework_sources()) {
      if (s.framework != framework)
        continue;
      const std::string value = defaults.contains(s.setting) ? defaults.at(std::string(s.setting)).dump() : "unset";
      std::printf("  %-27s %-12s %s", std::string(s.setting).c_str(), value.c_str(), std::string(s.release).c_str());
      if (s.line > 0)
        std::printf(", %s:%d", std::string(s.file).c_str(), s.line);
      std::printf("\n    %s\n", std::string(s.reading).c_str());
    }
  }
}

void inspect_cluster(const std::string& file)
{
  const Cluster cluster = load_cluster(file);
  std::map<std::string, int> per_gpu;
  for (const auto& d : cluster.devices())
    ++per_gpu[cluster.gpus()[d.gpu].name];
  std::printf("cluster %s: %d devices, %zu nodes, %zu regions\n", cluster.name().c_str(), cluster.device_count(),
              cluster.nodes().size(), cluster.regions().size());
  for (const auto& [gpu, count] : per_gpu)
    std::printf("  %4d x %s\n", count, gpu.c_str());
  for (const auto& region : cluster.regions()) {
    std::printf("region %s: %zu nodes, switch latency %.4g ms\n", region.name.c_str(), region.nodes.size(),
                region.latency_s * 1e3);
    // Consecutive identical nodes are summarised on one line.
    for (std::size_t i = 0; i < region.nodes.size();) {
      const Node& first = cluster.nodes()[region.nodes[i]];
      std::size_t j     = i + 1;
      while (j < region.nodes.size()) {
        const Node& other = cluster.nodes()[region.nodes[j]];
        if (other.devices.size() != first.devices.size() ||
            other.nic.bandwidth_bytes_per_s != first.nic.bandwidth_bytes_per_s ||
            other.nic_nominal_bytes_per_s != first.nic_nominal_bytes_per_s ||
            other.intra.bandwidth_bytes_per_s != first.intra.bandwidth_bytes_per_s ||
            cluster.gpu_of(other.devices[0]).name != cluster.gpu_of(first.devices[0]).name)
          break;
        ++j;
      }
      std::printf("  %s%s: %zu x %s;", first.name.c_str(), j - i > 1 ? (" (+" + std::to_string(j - i - 1) + " alike)").c_str() : "",
                  first.devices.size(), cluster.gpu_of(first.devices[0]).name.c_str());
      print_link(" port", first.intra);
      print_link("; NIC", first.nic);
      if (first.nic_nominal_bytes_per_s > 0)
        std::printf(" through NCCL's sockets (line rate %.4g Gb/s)", first.nic_nominal_bytes_per_s / units::kGbps);
      std::printf("\n");
      i = j;
    }
  }
  const auto count = cluster.regions().size();
  if (count > 1) {
    std::printf("inter-region bandwidth (Gb/s) / latency (ms), row = source:\n");
    for (std::size_t i = 0; i < count; ++i) {
      std::printf("  %-12s", cluster.regions()[i].name.c_str());
      for (std::size_t j = 0; j < count; ++j) {
        if (i == j) {
          std::printf("        -       ");
          continue;
        }
        const Link l = cluster.inter_region(static_cast<int>(i), static_cast<int>(j));
        std::printf(" %7.3g/%-7.3g", l.bandwidth_bytes_per_s / units::kGbps, l.latency_s * 1e3);
      }
      std::printf("\n");
    }
  }
  if (!cluster.overrides().empty())
    std::printf("%zu node-pair overrides\n", cluster.overrides().size());
}

void inspect_model(const std::string& file)
{
  const models::Workload w = load_model(file, 0);
  std::printf("model %s: %zu layers, sequence %d, %.4g B parameters, %.4g TFLOP forward per sequence\n",
              w.name.c_str(), w.layers.size(), w.seq_len, w.total_params() / 1e9,
              w.forward_flops_per_sample() / units::kTera);
  if (w.dtype)
    std::printf("  trains in %s by default (%s)\n", std::string(dtype_name(*w.dtype)).c_str(), w.dtype_origin.c_str());
  std::printf("  %-4s %-16s %-12s %12s %14s %14s %14s\n", "#", "name", "kind", "params (M)", "fwd GFLOP/seq",
              "out MiB/seq", "saved MiB/seq");
  for (std::size_t i = 0; i < w.layers.size(); ++i) {
    const auto& l = w.layers[i];
    std::printf("  %-4zu %-16s %-12s %12.2f %14.2f %14.2f %14.2f\n", i, l.name.c_str(), l.kind.c_str(), l.params / 1e6,
                l.forward_flops_per_sample / 1e9, l.activation_bytes_per_sample / units::kMiB,
                l.saved_activation_bytes_per_sample / units::kMiB);
  }
}

} // namespace

CommandRunner add_inspect_command(CLI::App& app)
{
  struct Options {
    std::string what;
    std::string file;
  };
  auto options      = std::make_shared<Options>();
  CLI::App* command = app.add_subcommand("inspect", "Show what HetSim reads from a cluster or model file "
                                                    "(devices, links, layers, parameter counts), the GPU "
                                                    "catalog that cluster files name their GPUs from, or each "
                                                    "framework's defaults with the line of its code behind each.");
  command->add_option("what", options->what, "cluster, model, gpus or frameworks")
      ->required()
      ->check(CLI::IsMember({"cluster", "model", "gpus", "frameworks"}));
  command->add_option("file", options->file, "the file, or preset:NAME (not for gpus or frameworks)");
  return [options] {
    if (options->what == "gpus" || options->what == "frameworks") {
      if (!options->file.empty())
        throw InputError("inspect " + options->what + ": expected no file, got " + quote(options->file));
      options->what == "gpus" ? inspect_gpus() : inspect_frameworks();
      return 0;
    }
    if (options->file.empty())
      throw InputError("inspect " + options->what + ": expected a file or preset:NAME");
    if (options->what == "cluster")
      inspect_cluster(options->file);
    else
      inspect_model(options->file);
    return 0;
  };
}

} // namespace hetsim::cli
