/// Poplar's main experiment (Figure 3): three heterogeneous clusters, a 0.5 B-parameter Llama, a global batch
/// of 2 M tokens, ZeRO 0-3; simulated TFLOP/s of poplar, deepspeed, whale and each GPU type alone.
/// Usage: hetsim-poplar-clusters OUT.csv (experiments/poplar_clusters/run.sh runs it)

#include "experiments/experiment.hpp"

#include "core/error.hpp"
#include "core/units.hpp"
#include "models/transformer.hpp"
#include "strategies/planners/registry.hpp"

#include <cstdio>
#include <iostream>

using namespace hetsim;

namespace {

struct NodeSpec {
  const char* gpu;
  int devices;
  double intra_gbytes_per_s; ///< NVLink or PCIe, per device port
};

struct ClusterSpec {
  const char* name;
  NodeSpec nodes[2];
};

/// Servers of different GPU generations meet over Ethernet ("sockets", Poplar's appendix): 25 Gb/s NICs.
constexpr double kNicGbps = 25;

/// Every node on one switch.
Cluster build_cluster(const std::string& name, const std::vector<NodeSpec>& nodes)
{
  Cluster cluster(name);
  const int region = cluster.add_region("dc", 5 * units::kMicrosecond);
  for (const NodeSpec& spec : nodes) {
    const GpuSpec* gpu = find_catalog_gpu(spec.gpu);
    if (!gpu)
      throw InputError(std::string("unknown GPU ") + spec.gpu);
    const int type = cluster.add_gpu(*gpu);
    const int node = cluster.add_node(region, spec.gpu, Link{spec.intra_gbytes_per_s * units::kGBps, 2e-6},
                                      Link{kNicGbps * units::kGbps, 5e-6});
    for (int d = 0; d < spec.devices; ++d)
      cluster.add_device(node, type);
  }
  return cluster;
}

/// A Llama-architecture model of about 0.5 B parameters (tied embeddings, like the small Llama-family models).
models::Workload llama_half_billion()
{
  models::TransformerShape shape;
  shape.name            = "llama-0.5b";
  shape.family          = "llama";
  shape.layers          = 24;
  shape.hidden          = 1280;
  shape.heads           = 20;
  shape.kv_heads        = 20;
  shape.intermediate    = 3456;
  shape.vocab           = 32000;
  shape.seq_len         = 2048;
  shape.gated_mlp       = true;
  shape.biases          = false;
  shape.rms_norm        = true;
  shape.tied_embeddings = true;
  shape.flash_attention = true;
  return models::build_transformer(shape);
}

std::optional<experiments::Scored> run(const strategies::Planner& planner, const Cluster& cluster,
                                       const models::Workload& workload, int zero_stage)
{
  strategies::Problem problem;
  problem.cluster      = &cluster;
  problem.workload     = &workload;
  problem.global_batch = (2 << 20) / workload.seq_len;
  strategies::PlannerContext context;
  context.flags = {"zero=" + std::to_string(zero_stage)};
  return experiments::best_simulated(planner, problem, context, 5);
}

double tflops(const std::optional<experiments::Scored>& scored)
{
  return scored ? scored->report.tflops_per_s : 0;
}

} // namespace

int main(int argc, char** argv)
{
  if (argc != 2) {
    std::cerr << "usage: hetsim-poplar-clusters OUT.csv\n";
    return 2;
  }
  try {
    const ClusterSpec clusters[] = {
        {"A", {{"A100-SXM4-80GB", 4, 300}, {"A100-PCIe-40GB", 4, 32}}},
        {"B", {{"V100-PCIe-16GB", 2, 16}, {"T4", 2, 16}}},
        {"C", {{"A800-SXM4-80GB", 4, 200}, {"V100S-PCIe-32GB", 4, 16}}},
    };
    const models::Workload workload = llama_half_billion();
    const auto poplar    = strategies::make_poplar_planner();
    const auto deepspeed = strategies::make_deepspeed_planner();
    const auto whale     = strategies::make_whale_planner();

    std::ofstream out = experiments::open_output(argv[1]);
    out << "cluster,zero_stage,poplar_tflops,deepspeed_tflops,whale_tflops,type1,type1_alone_tflops,type2,"
           "type2_alone_tflops,poplar_vs_deepspeed,poplar_vs_whale,poplar_plan\n";
    bool holds = true; // poplar >= deepspeed and whale everywhere, >= 1.02x deepspeed in each cluster's best stage
    for (const ClusterSpec& spec : clusters) {
      double best_poplar = 0, best_ratio = 0;
      const Cluster cluster = build_cluster(spec.name, {spec.nodes[0], spec.nodes[1]});
      const Cluster alone[2] = {build_cluster(spec.nodes[0].gpu, {spec.nodes[0]}),
                                build_cluster(spec.nodes[1].gpu, {spec.nodes[1]})};
      for (int zero = 0; zero <= 3; ++zero) {
        const auto p = run(*poplar, cluster, workload, zero);
        const auto d = run(*deepspeed, cluster, workload, zero);
        const auto w = run(*whale, cluster, workload, zero);
        const double a0 = tflops(run(*poplar, alone[0], workload, zero));
        const double a1 = tflops(run(*poplar, alone[1], workload, zero));
        std::string plan = p ? p->candidate.note : "none fits";
        if (p) {
          plan += " mb";
          for (int r = 0; r < p->candidate.plan.dp; ++r)
            plan += (r ? "/" : " ") + std::to_string(p->candidate.plan.micro_batch[r]);
          plan += " x" + std::to_string(p->candidate.plan.grad_accum[0]);
        }
        char line[512];
        std::snprintf(line, sizeof line, "%s,%d,%.2f,%.2f,%.2f,%s,%.2f,%s,%.2f,%.3f,%.3f,\"%s\"\n", spec.name, zero,
                      tflops(p), tflops(d), tflops(w), spec.nodes[0].gpu, a0, spec.nodes[1].gpu, a1,
                      tflops(d) > 0 ? tflops(p) / tflops(d) : 0, tflops(w) > 0 ? tflops(p) / tflops(w) : 0,
                      plan.c_str());
        out << line;
        std::cout << line << std::flush;
        holds = holds && tflops(p) >= tflops(d) && tflops(p) >= tflops(w);
        if (tflops(p) > best_poplar) {
          best_poplar = tflops(p);
          best_ratio  = tflops(d) > 0 ? tflops(p) / tflops(d) : 0;
        }
      }
      std::cout << "cluster " << spec.name << ": poplar's best stage is " << best_ratio << "x deepspeed\n";
      holds = holds && best_ratio >= 1.02;
    }
    std::cout << (holds ? "poplar >= deepspeed and whale in every cell, >= 1.02x deepspeed in each best stage\n"
                        : "FAILED: poplar below a baseline somewhere, or below 1.02x deepspeed in a best stage\n");
    if (!holds)
      return 1;
  } catch (const std::exception& e) {
    std::cerr << "poplar_clusters: " << e.what() << '\n';
    return 2;
  }
  return 0;
}
