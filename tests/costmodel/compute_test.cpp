#include "costmodel/calibration.hpp"
#include "costmodel/compute.hpp"
#include "costmodel/kernel_time.hpp"
#include "core/error.hpp"
#include "models/transformer.hpp"
#include "tests/models/gpt_shape.hpp"

#include <doctest/doctest.h>

using namespace hetsim;
using namespace hetsim::costmodel;

namespace {

models::TransformerShape gpt2_medium()
{
  return models::testing::gpt_shape();
}

} // namespace

TEST_CASE("a large matrix product reaches the family's ceiling; a part-empty last wave costs a whole wave")
{
  const GpuSpec& a100    = *find_catalog_gpu("A100-80GB");
  const KernelConstants c = kernel_constants(a100);
  const double big        = 16384;
  const double seconds    = matmul_seconds(a100, c, big, big, big, 1, Dtype::fp16);
  const double achieved   = 2 * big * big * big / seconds / a100.peak_flops_fp16;
  CHECK(achieved == doctest::Approx(c.gemm_ceiling * big / (big + c.k_overhead)).epsilon(0.01));
  CHECK(achieved < c.gemm_ceiling);
  // One tile more than the multiprocessors takes two waves: as long as twice the tiles.
  const double one_more = c.tile_n * (a100.multiprocessors + 1), twice = c.tile_n * 2 * a100.multiprocessors;
  CHECK(matmul_seconds(a100, c, c.tile_m, one_more, 4096, 1, Dtype::fp16) ==
        doctest::Approx(matmul_seconds(a100, c, c.tile_m, twice, 4096, 1, Dtype::fp16)));
}

TEST_CASE("an fp8 product runs at the fp8 peak and the fp8 ceiling: what a matmul sweep found, or carried")
{
  const GpuSpec& h100 = *find_catalog_gpu("H100");
  const KernelConstants c = kernel_constants(h100);
  models::Kernel product;
  product.kind = models::Kernel::Kind::matmul;
  product.m = product.n = product.k = 16384;
  product.flops = 2 * product.m * product.n * product.k;
  const double bf16 = kernel_seconds(h100, c, product, Dtype::bf16);
  product.fp8       = true;
  const double fp8  = kernel_seconds(h100, c, product, Dtype::bf16);
  // The same tiles and waves: the time scales by the peaks and the ceilings (ml-engineering's MAMF, 0.709 fp8).
  CHECK(bf16 / fp8 == doctest::Approx(1979 * 0.709 / (989 * 0.83)).epsilon(0.001));
  // The B200's sweep figure at the clock a step sustains (costmodel/sustained_clock.cpp); the B300's as swept.
  CHECK(fp8_gemm_ceiling(kernel_constants(*find_catalog_gpu("B200"))) == doctest::Approx(0.763 * 1237 / 1450));
  CHECK(fp8_gemm_ceiling(kernel_constants(*find_catalog_gpu("B300"))) == doctest::Approx(0.745));
  // The L40S has fp8 but no sweep of it: its 16-bit ceiling as the H100's fp8 and bf16 figures compare.
  const KernelConstants l40s = kernel_constants(*find_catalog_gpu("L40S"));
  CHECK(fp8_gemm_ceiling(l40s) == doctest::Approx(l40s.gemm_ceiling * 0.709 / 0.803));
  // A GPU without fp8 tensor cores prices it as its 16-bit product (plans refuse fp8 there).
  const GpuSpec& a100 = *find_catalog_gpu("A100-80GB");
  CHECK(kernel_seconds(a100, kernel_constants(a100), product, Dtype::bf16) ==
        doctest::Approx(matmul_seconds(a100, kernel_constants(a100), 16384, 16384, 16384, 1, Dtype::bf16)));
}

TEST_CASE("attention-shaped products and elementwise kernels are priced by their bytes")
{
  const GpuSpec& v100     = *find_catalog_gpu("V100");
  const KernelConstants c = kernel_constants(v100);
  // Scores of 16 heads over 2,048 tokens with a head size of 32: 2 bytes of matrices per FLOP... the output alone
  // is 2 x 16 x 2048^2 bytes.
  const double seconds = matmul_seconds(v100, c, 2048, 2048, 32, 16, Dtype::fp16);
  const double bytes   = 2.0 * (2048 * 32 + 32 * 2048 + 2048.0 * 2048) * 16;
  CHECK(seconds == doctest::Approx(bytes / (v100.memory_bandwidth_bytes_per_s * c.memory_efficiency)));
  models::Operator softmax;
  softmax.bytes_per_sample = 1e8;
  softmax.split            = models::TensorSplit::heads;
  auto seconds_of = [&](int tp, bool backward, Dtype dtype) {
    return kernels_seconds(v100, c, models::operator_kernels(softmax, tp, 4, backward), dtype) - c.launch_gap_s;
  };
  CHECK(seconds_of(2, false, Dtype::fp16) == doctest::Approx(memory_seconds(v100, c, 2e8)));
  CHECK(seconds_of(2, true, Dtype::fp16) == doctest::Approx(memory_seconds(v100, c, 4e8)));
  CHECK(seconds_of(1, false, Dtype::fp32) == doctest::Approx(memory_seconds(v100, c, 8e8)));
}

TEST_CASE("a layer of small kernels runs no faster than the host issues them")
{
  const GpuSpec& h100     = *find_catalog_gpu("H100");
  const KernelConstants c = kernel_constants(h100);
  models::Operator tiny;
  tiny.bytes_per_sample = 1024;
  const std::vector<models::Operator> ops(20, tiny);
  CHECK(operators_seconds(h100, c, ops, 1, 1, Dtype::bf16, false) == doctest::Approx(20 * c.host_dispatch_s));
  models::Operator product;
  product.kind = models::OperatorKind::linear, product.m = 1, product.n = 64, product.k = 64;
  // Backward launches two kernels per product: input and weight gradients.
  CHECK(operators_seconds(h100, c, {product}, 1, 1, Dtype::bf16, true) == doctest::Approx(2 * c.host_dispatch_s));
}

TEST_CASE("a GPT-2-medium block's share of peak grows with the micro-batch and stays under the ceiling")
{
  const models::Workload gpt2 = models::build_transformer(gpt2_medium());
  ComputeModel model;
  for (const char* name : {"V100", "T4"}) {
    const GpuSpec& gpu = *find_catalog_gpu(name);
    double previous    = 0;
    for (int mb : {1, 2, 8, 32}) {
      const double seconds = model.layers_seconds(gpu, gpt2, 1, 2, 1, mb, Dtype::fp16, false) +
                             model.layers_seconds(gpu, gpt2, 1, 2, 1, mb, Dtype::fp16, true);
      const double share   = 3 * gpt2.layers[1].forward_flops_per_sample * mb / seconds / gpu.peak_flops_fp16;
      CAPTURE(name);
      CAPTURE(mb);
      CHECK(share > previous);
      CHECK(share < kernel_constants(gpu).gemm_ceiling);
      previous = share;
    }
  }
}

TEST_CASE("tensor parallelism divides a block's matrix products, not its norms and residuals")
{
  const models::Workload gpt2 = models::build_transformer(gpt2_medium());
  ComputeModel model;
  const GpuSpec& a100 = *find_catalog_gpu("A100");
  const double whole  = model.layers_seconds(a100, gpt2, 1, 2, 1, 8, Dtype::fp16, false);
  const double split  = model.layers_seconds(a100, gpt2, 1, 2, 4, 8, Dtype::fp16, false);
  CHECK(split > whole / 4);
  CHECK(split < whole / 2);
}

TEST_CASE("a calibrated GPU runs at its fitted efficiency, interpolated monotonically")
{
  const auto json = nlohmann::json::parse(R"({"efficiency": {"T4": [[1024, 0.2], [2048, 0.3], [4096, 0.35], [8192, 0.4]]},
                                            "links": {"inter_node": {"alpha_s": 1e-5, "beta_seconds_per_byte": 1e-9}}})");
  const Calibration cal = calibration_from_json(json, "cal.json");
  CHECK(cal.efficiency("T4", 2048) == doctest::Approx(0.3));
  CHECK(cal.efficiency("T4", 100) == doctest::Approx(0.2));
  CHECK(cal.efficiency("T4", 1e6) == doctest::Approx(0.4));
  const double mid = cal.efficiency("T4", 3000);
  CHECK(mid > 0.3);
  CHECK(mid < 0.35);
  CHECK(cal.efficiency("V100", 512) < 0);
  ComputeModel model(&cal);
  const GpuSpec& t4 = *find_catalog_gpu("T4");
  CHECK(model.compute_seconds(t4, 1e12, Dtype::fp16, 2048) == doctest::Approx(1e12 / (65e12 * 0.3)));
  CHECK(model.compute_seconds(t4, 1e12, Dtype::fp32, 2048) == doctest::Approx(1e12 / (8.1e12 * 0.3)));
  const GpuSpec& v100 = *find_catalog_gpu("V100");
  CHECK(model.compute_seconds(v100, 1e12, Dtype::fp16, 2048) ==
        doctest::Approx(ComputeModel().compute_seconds(v100, 1e12, Dtype::fp16, 2048)));
  CHECK(model.optimizer_seconds(v100, 1e9) == doctest::Approx(36e9 / 900e9));
  // Round trip.
  CHECK(calibration_to_json(calibration_from_json(calibration_to_json(cal), "x")) == calibration_to_json(cal));
}

TEST_CASE("causal attention is priced as cuDNN's flash kernels ran on an H200")
{
  // Per kernel, microseconds, bf16, no dropout (tests/data/h200): the cuda executor's cuDNN graphs (executor/run-*)
  // and PyTorch's own (pytorch/sdpa_probe.txt); heads counts the micro-batch's sequences times their heads.
  struct Measured {
    double heads, sequence, head_size, forward_us, backward_us;
  };
  const Measured measured[] = {{256, 1024, 64, 109.0, 357.5},  {1024, 1024, 64, 397.0, 1345.0},
                               {64, 2048, 64, 106.7, 304.7},   {256, 2048, 64, 403.7, 1225.5},
                               {64, 4096, 128, 516.4, 1711.9}, {256, 4096, 128, 2169.8, 6748.8},
                               {256, 1024, 64, 111.9, 364.8},  {64, 2048, 64, 102.3, 311.9},
                               {64, 4096, 128, 476.8, 1442.2}};
  const GpuSpec& h200     = *find_catalog_gpu("H200");
  const KernelConstants c = kernel_constants(h200);
  const auto cudnn        = models::AttentionKernel::cudnn; // what SDPA runs on Hopper
  double total_error      = 0;
  for (const Measured& m : measured) {
    CAPTURE(m.sequence);
    CAPTURE(m.heads);
    const double flops = 4 * m.sequence * m.sequence * m.head_size * m.heads; // the whole square, forward
    const double forward =
        attention_seconds(h200, c, cudnn, flops, m.sequence, m.head_size, false, Dtype::bf16, 0) / (m.forward_us * 1e-6);
    const double backward = attention_seconds(h200, c, cudnn, 2.5 * flops, m.sequence, m.head_size, true, Dtype::bf16, 0) /
                            (m.backward_us * 1e-6);
    CHECK(forward == doctest::Approx(1).epsilon(0.25));
    CHECK(backward == doctest::Approx(1).epsilon(0.25));
    total_error += std::abs(forward - 1) + std::abs(backward - 1);
  }
  CHECK(total_error / (2 * std::size(measured)) < 0.1);
  // The whole square at the ceiling, the model before: 1.6 to 2.7 times what Llama-3-8B's kernels took.
  const double whole = 4 * 4096.0 * 4096 * 128 * 256 / (h200.peak_flops(Dtype::bf16) * 0.4);
  CHECK(whole > 2 * 2169.8e-6);
  // A head size of 128 uses the products better than 64: the softmax's cost per score does not grow with it.
  const double per_flop_64  = attention_seconds(h200, c, cudnn, 1e12, 2048, 64, false, Dtype::bf16, 0);
  const double per_flop_128 = attention_seconds(h200, c, cudnn, 1e12, 2048, 128, false, Dtype::bf16, 0);
  CHECK(per_flop_128 < 0.8 * per_flop_64);
}

TEST_CASE("bad calibration input")
{
  auto parse = [](const char* text) { return calibration_from_json(nlohmann::json::parse(text), "cal.json"); };
  CHECK_THROWS_WITH_AS(parse(R"({"efficiency": {"T4": [[1024, 1.5]]}})"),
                       "cal.json: efficiency.T4[0][1]: expected an efficiency in (0, 1], got number 1.5", InputError);
  CHECK_THROWS_WITH_AS(parse(R"({"efficiency": {"T4": [[1024]]}})"),
                       "cal.json: efficiency.T4[0]: expected a [tokens, efficiency] pair, got array", InputError);
  CHECK_THROWS_WITH_AS(parse(R"({"links": {"x": {"alpha_s": 1}}})"),
                       "cal.json: links.x: missing required field 'beta_seconds_per_byte'", InputError);
  // Figures no hardware has: before, a latency of 1e308 s deadlocked the replay at t = inf and a tile of 1e308
  // gave an iteration of 7.8e303 s, exit 0.
  CHECK_THROWS_WITH_AS(parse(R"({"links": {"x": {"alpha_s": 1e308, "beta_seconds_per_byte": 1e-9}}})"),
                       "cal.json: links.x.alpha_s: expected a non-negative number of at most 10, got number 1e+308",
                       InputError);
  CHECK_THROWS_WITH_AS(parse(R"({"kernels": {"V100": {"gemm_ceiling": 0.8, "memory_efficiency": 0.8,
                       "tile_m": 1e308, "launch_gap_s": 0, "host_dispatch_s": 0}}})"),
                       "cal.json: kernels.V100.tile_m: expected a positive number of at most 4096, got number 1e+308",
                       InputError);
  // A forward attention ceiling without its backward one is a file of another model of attention.
  CHECK_THROWS_WITH_AS(parse(R"({"kernels": {"H100": {"gemm_ceiling": 0.7, "memory_efficiency": 0.9,
                       "launch_gap_s": 0, "host_dispatch_s": 0, "attention_ceiling": 0.4}}})"),
                       "cal.json: kernels.H100: missing required field 'attention_backward_ceiling'", InputError);
  CHECK_THROWS_WITH_AS(parse(R"({"families": {"llama": {"elementwise_scale": 12, "fitted_on": "H200", "traces": 1}}})"),
                       "cal.json: families.llama.elementwise_scale: expected a factor between 0.25 and 4, got number 12",
                       InputError);
}

TEST_CASE("a family's elementwise scale prices that model type's eager layers, and no other")
{
  const GpuSpec& h100 = *find_catalog_gpu("H100");
  const Calibration cal = calibration_from_json(
      nlohmann::json::parse(R"({"families": {"gpt2": {"elementwise_scale": 1.5, "fitted_on": "H100-SXM5-80GB", "traces": 2}}})"),
      "cal.json");
  CHECK(calibration_from_json(calibration_to_json(cal), "x").families.at("gpt2").elementwise_scale == 1.5);
  auto eager_gpt = models::testing::gpt_shape(2);
  eager_gpt.family = "gpt2";
  eager_gpt.eager  = true;
  const models::Workload gpt2 = models::build_transformer(eager_gpt);
  auto llama_shape   = eager_gpt;
  llama_shape.family = "llama";
  const models::Workload llama = models::build_transformer(llama_shape);
  CHECK(ComputeModel(&cal).constants(h100, gpt2).elementwise_scale == 1.5);
  CHECK(ComputeModel(&cal).constants(h100, llama).elementwise_scale == 1);
  CHECK(ComputeModel(&cal).constants(h100).elementwise_scale == 1); // the GPU's own constants keep none
  // Only the memory-bound passes move: the block takes longer, by less than half.
  const double plain  = ComputeModel().layers_seconds(h100, gpt2, 1, 2, 1, 4, Dtype::bf16, false);
  const double scaled = ComputeModel(&cal).layers_seconds(h100, gpt2, 1, 2, 1, 4, Dtype::bf16, false);
  CHECK(scaled > plain);
  CHECK(scaled < 1.5 * plain);
}

TEST_CASE("fitted kernel constants price a GPU's layers, even beside fitted efficiencies")
{
  const GpuSpec& v100          = *find_catalog_gpu("V100");
  const models::Workload gpt   = models::build_transformer(models::testing::gpt_shape(2));
  const auto json              = nlohmann::json::parse(R"({
    "efficiency": {"V100-SXM2-16GB": [[1024, 0.05]]},
    "kernels": {"V100-SXM2-16GB": {"gemm_ceiling": 0.335, "memory_efficiency": 0.85, "launch_gap_s": 3e-6,
                                   "host_dispatch_s": 1e-5}}})");
  const Calibration fitted     = calibration_from_json(json, "cal.json");
  const Calibration efficiency = calibration_from_json(nlohmann::json::parse(R"({"efficiency": {"V100-SXM2-16GB": [[1024, 0.05]]}})"), "cal.json");
  CHECK(ComputeModel(&fitted).constants(v100).gemm_ceiling == doctest::Approx(0.335));
  CHECK(ComputeModel().constants(v100).gemm_ceiling == doctest::Approx(0.67));
  // Half the family's ceiling: a block whose time is mostly products takes well over 1.4 times as long.
  const double family = ComputeModel().layers_seconds(v100, gpt, 1, 2, 1, 8, Dtype::fp16, false);
  const double slower = ComputeModel(&fitted).layers_seconds(v100, gpt, 1, 2, 1, 8, Dtype::fp16, false);
  CHECK(slower / family > 1.4);
  CHECK(slower / family < 2.0);
  // With efficiencies alone the 5% point prices the layer instead, far slower still.
  CHECK(ComputeModel(&efficiency).layers_seconds(v100, gpt, 1, 2, 1, 8, Dtype::fp16, false) > 4 * slower);
  CHECK(calibration_to_json(calibration_from_json(calibration_to_json(fitted), "x")) == calibration_to_json(fitted));
  CHECK_THROWS_WITH_AS(calibration_from_json(nlohmann::json::parse(R"({"kernels": {"V100": {"gemm_ceiling": 0.4}}})"),
                                             "cal.json"),
                       "cal.json: kernels.V100: missing required field 'memory_efficiency'", InputError);
}
