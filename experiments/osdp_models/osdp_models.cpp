/// OSDP's comparison (§4): narrow-and-deep, wide-and-shallow and inconsistent GPT-like models on 8 GPUs under
/// 8 GiB and 16 GiB per-device limits; simulated samples per second of osdp, ZeRO-3 on every layer and plain
/// data parallelism (where it fits), each at its best micro-batch.
/// Usage: hetsim-osdp-models OUT.csv (experiments/osdp_models/run.sh runs it)

#include "experiments/experiment.hpp"

#include "core/error.hpp"
#include "core/units.hpp"
#include "models/transformer.hpp"
#include "strategies/planners/registry.hpp"
#include "strategies/search/plan_space.hpp"

#include <cstdio>
#include <iostream>
#include <numeric>

using namespace hetsim;

namespace {

/// Two nodes of four A100-40GB: NVLink inside, 100 Gb/s between, so sharding has a real price.
Cluster eight_gpus()
{
  Cluster cluster("8xA100-40GB");
  const int gpu    = cluster.add_gpu(*find_catalog_gpu("A100-SXM4-40GB"));
  const int region = cluster.add_region("dc", 5 * units::kMicrosecond);
  for (int n = 0; n < 2; ++n) {
    const int node = cluster.add_node(region, "node" + std::to_string(n), Link{300 * units::kGBps, 2e-6},
                                      Link{100 * units::kGbps, 5e-6});
    for (int d = 0; d < 4; ++d)
      cluster.add_device(node, gpu);
  }
  return cluster;
}

/// GPT-2-style blocks, attention and MLP as layers of their own (OSDP decides per operator).
models::TransformerShape gpt(const std::string& name, int layers, int hidden, int intermediate)
{
  models::TransformerShape shape;
  shape.name            = name;
  shape.family          = "gpt2";
  shape.layers          = layers;
  shape.hidden          = hidden;
  shape.heads           = hidden / 64;
  shape.kv_heads        = shape.heads;
  shape.intermediate    = intermediate;
  shape.vocab           = 50257;
  shape.seq_len         = 1024;
  shape.max_positions   = 1024;
  shape.flash_attention = true;
  shape.split_blocks    = true;
  return shape;
}

/// Blocks whose MLP alternates between 2x and 8x the hidden width: operators of very different sizes.
models::Workload inconsistent()
{
  const models::Workload narrow = models::build_transformer(gpt("narrow", 12, 2048, 4096));
  const models::Workload wide   = models::build_transformer(gpt("wide", 12, 2048, 16384));
  models::Workload workload     = narrow;
  workload.name                 = "inconsistent-0.8b";
  workload.layers.clear();
  workload.layers.push_back(narrow.layers.front());
  for (int b = 0; b < 12; ++b) {
    const auto& from = b % 2 == 0 ? narrow : wide;
    workload.layers.push_back(from.layers[1 + 2 * b]);
    workload.layers.push_back(from.layers[2 + 2 * b]);
  }
  workload.layers.push_back(narrow.layers.back());
  return workload;
}

/// The same micro-batch on every device, one ZeRO stage on every layer, every micro-batch size.
class UniformZeroPlanner final : public strategies::Planner {
public:
  explicit UniformZeroPlanner(int stage) : stage_(stage) {}
  std::vector<strategies::Candidate> propose(const strategies::Problem& problem,
                                             const strategies::PlannerContext& context) const override
  {
    const int n = problem.cluster->device_count();
    std::vector<int> placement(n);
    std::iota(placement.begin(), placement.end(), 0);
    std::vector<strategies::Candidate> out;
    for (int micro : strategies::micro_batch_sizes(problem.global_batch, n)) {
      strategies::Plan plan = strategies::uniform_batch_plan({1, 1, n}, placement, {0}, micro, problem);
      plan.zero_stage       = stage_;
      out.push_back(strategies::evaluate(std::move(plan), problem, context));
    }
    return out;
  }

private:
  int stage_;
};

} // namespace

int main(int argc, char** argv)
{
  if (argc != 2) {
    std::cerr << "usage: hetsim-osdp-models OUT.csv\n";
    return 2;
  }
  try {
    const Cluster cluster = eight_gpus();
    const std::vector<models::Workload> workloads = {
        models::build_transformer(gpt("narrow-deep-0.7b", 48, 1024, 4096)),
        models::build_transformer(gpt("wide-shallow-1.4b", 6, 4096, 16384)),
        inconsistent(),
    };
    const auto osdp = strategies::make_osdp_planner();
    const UniformZeroPlanner zero3(3), data_parallel(0);

    std::ofstream out = experiments::open_output(argv[1]);
    out << "model,params_b,limit_gib,osdp_samples_per_s,zero3_samples_per_s,dp_samples_per_s,osdp_vs_zero3,"
           "osdp_vs_dp,osdp_plan\n";
    for (const models::Workload& workload : workloads)
      for (double limit : {8.0, 16.0}) {
        strategies::Problem problem;
        problem.cluster            = &cluster;
        problem.workload           = &workload;
        problem.global_batch       = 128;
        problem.memory_limit_bytes = limit * units::kGiB;
        const strategies::PlannerContext context;
        auto rate = [&](const strategies::Planner& planner) -> std::optional<experiments::Scored> {
          try {
            return experiments::best_simulated(planner, problem, context, 3);
          } catch (const InfeasiblePlan&) {
            return std::nullopt;
          }
        };
        auto samples = [&](const std::optional<experiments::Scored>& s) {
          return s ? problem.global_batch / s->report.iteration_time_s : 0.0;
        };
        const auto o = rate(*osdp), z = rate(zero3), d = rate(data_parallel);
        std::string plan = o ? o->candidate.note + ", micro-batch " + std::to_string(o->candidate.plan.micro_batch[0])
                             : "none fits";
        char dp_text[32] = "";
        char dp_ratio[32] = "";
        if (d) {
          std::snprintf(dp_text, sizeof dp_text, "%.2f", samples(d));
          std::snprintf(dp_ratio, sizeof dp_ratio, "%.3f", samples(o) / samples(d));
        }
        char line[512];
        std::snprintf(line, sizeof line, "%s,%.2f,%.0f,%.2f,%.2f,%s,%.3f,%s,\"%s\"\n", workload.name.c_str(),
                      workload.total_params() / 1e9, limit, samples(o), samples(z), dp_text,
                      samples(z) > 0 ? samples(o) / samples(z) : 0, dp_ratio, plan.c_str());
        out << line;
        std::cout << line << std::flush;
      }
  } catch (const std::exception& e) {
    std::cerr << "osdp_models: " << e.what() << '\n';
    return 2;
  }
  return 0;
}
