#include "costmodel/attention_speed.hpp"
#include "costmodel/kernel_time.hpp"
#include "costmodel/prediction_band.hpp"

#include <doctest/doctest.h>

#include <cmath>

using namespace hetsim;
using namespace hetsim::costmodel;
using models::AttentionKernel;

namespace {

const GpuSpec& gpu(const char* name)
{
  const GpuSpec* spec = find_catalog_gpu(name);
  REQUIRE(spec != nullptr);
  return *spec;
}

/// TFLOP/s of a causal forward and backward as the FlashAttention papers count it (half the square; the
/// backward 2.5 times the forward), at 16k tokens in total as their benchmarks run (batch x sequence).
double causal_tflops(const GpuSpec& g, AttentionKernel kernel, double sequence, double head_size)
{
  const KernelConstants c = kernel_constants(g);
  const double heads      = 2048 / head_size * 16384 / sequence;
  const double square     = 4 * sequence * sequence * head_size * heads; // the whole square, forward
  const double seconds    = attention_seconds(g, c, kernel, square, sequence, head_size, false, Dtype::bf16, 0) +
                         attention_seconds(g, c, kernel, 2.5 * square, sequence, head_size, true, Dtype::bf16, 0);
  return 3.5 * square / 2 / seconds / 1e12;
}

} // namespace

TEST_CASE("each attention kernel runs where its own code lets it, and otherwise the framework's fallback runs")
{
  const GpuSpec& v100 = gpu("V100-SXM2-32GB");
  const GpuSpec& t4   = gpu("T4");
  const GpuSpec& a100 = gpu("A100-SXM4-80GB");
  const GpuSpec& h100 = gpu("H100");
  // SDPA: cuDNN on Hopper, flash on Ampere, the memory-efficient kernel on Volta and Turing.
  CHECK(attention_run(AttentionKernel::sdpa, h100, false).kernel == AttentionKernel::cudnn);
  CHECK(attention_run(AttentionKernel::sdpa, a100, false).kernel == AttentionKernel::flash2);
  CHECK(attention_run(AttentionKernel::sdpa, v100, false).kernel == AttentionKernel::mem_efficient);
  CHECK(attention_run(AttentionKernel::sdpa, t4, false).kernel == AttentionKernel::mem_efficient);
  CHECK(attention_run(AttentionKernel::sdpa, v100, false).reason.empty()); // SDPA's own choice, nothing to say
  // An explicit mask (a sliding window shorter than the sequence) rules out flash and SDPA's cuDNN choice.
  const AttentionRun masked = attention_run(AttentionKernel::sdpa, h100, true);
  CHECK(masked.kernel == AttentionKernel::mem_efficient);
  CHECK(masked.reason.find("explicit mask") != std::string::npos);
  // FlashAttention 2 needs sm80: on a V100 the line says so and what is priced instead.
  const AttentionRun flash_on_v100 = attention_run(AttentionKernel::flash2, v100, false);
  CHECK(flash_on_v100.kernel == AttentionKernel::mem_efficient);
  CHECK(flash_on_v100.reason.find("sm70") != std::string::npos);
  CHECK(flash_on_v100.reason.find("sm80") != std::string::npos);
  CHECK(attention_run(AttentionKernel::flash2, a100, false).reason.empty());
  // FlashAttention 3 is Hopper's alone; Transformer Engine takes cuDNN on Hopper, flash-attn on Ampere, and
  // keeps the scores below sm80.
  CHECK(attention_run(AttentionKernel::flash3, a100, false).kernel == AttentionKernel::flash2);
  CHECK(attention_run(AttentionKernel::flash3, h100, false).kernel == AttentionKernel::flash3);
  CHECK(attention_run(AttentionKernel::te_fused, h100, false).kernel == AttentionKernel::cudnn);
  CHECK(attention_run(AttentionKernel::te_fused, a100, false).kernel == AttentionKernel::flash2);
  CHECK(attention_run(AttentionKernel::te_fused, v100, false).kernel == AttentionKernel::fused_softmax);
}

TEST_CASE("attention kernels against the papers' charts they were fitted to, and their order")
{
  const GpuSpec& a100 = gpu("A100-SXM4-80GB");
  const GpuSpec& h100 = gpu("H100");
  // FlashAttention-2 paper, A100, causal forward + backward (TFLOP/s): head 64 at 512 and 16k tokens, head 128.
  CHECK(causal_tflops(a100, AttentionKernel::flash2, 512, 64) == doctest::Approx(88).epsilon(0.08));
  CHECK(causal_tflops(a100, AttentionKernel::flash2, 16384, 64) == doctest::Approx(171).epsilon(0.08));
  CHECK(causal_tflops(a100, AttentionKernel::flash2, 2048, 128) == doctest::Approx(155).epsilon(0.08));
  CHECK(causal_tflops(a100, AttentionKernel::mem_efficient, 4096, 128) == doctest::Approx(87).epsilon(0.1));
  CHECK(causal_tflops(a100, AttentionKernel::triton, 8192, 128) == doctest::Approx(78).epsilon(0.05));
  // The same paper's H100 chart: FlashAttention 2 there reaches a third of peak, not A100's two thirds.
  CHECK(causal_tflops(h100, AttentionKernel::flash2, 8192, 128) == doctest::Approx(308).epsilon(0.08));
  // On one GPU the kernels keep the order the papers measured: FA3 > cuDNN > FA2 > xformers > eager.
  const double fa3   = causal_tflops(h100, AttentionKernel::flash3, 4096, 128);
  const double cudnn = causal_tflops(h100, AttentionKernel::cudnn, 4096, 128);
  const double fa2   = causal_tflops(h100, AttentionKernel::flash2, 4096, 128);
  const double xf    = causal_tflops(h100, AttentionKernel::mem_efficient, 4096, 128);
  const double eager = causal_tflops(h100, AttentionKernel::eager, 4096, 128);
  CHECK(fa3 > cudnn);
  CHECK(cudnn > fa2);
  CHECK(fa2 > xf);
  CHECK(xf > eager);
  CHECK(causal_tflops(a100, AttentionKernel::flash2, 4096, 128) >
        2 * causal_tflops(a100, AttentionKernel::triton, 4096, 128)); // 173 against 74 in the chart
  // Eager attention on the A100 (the FA2 paper's "PyTorch" bars: 32 TFLOP/s at 4k, head 128): products plus
  // every score through memory, within 25%.
  CHECK(causal_tflops(a100, AttentionKernel::eager, 4096, 128) == doctest::Approx(32).epsilon(0.25));
  // What nobody measured says so.
  CHECK(attention_speed(AttentionKernel::flash2, a100).measured);
  CHECK_FALSE(attention_speed(AttentionKernel::mem_efficient, gpu("V100")).measured);
  CHECK_FALSE(attention_speed(AttentionKernel::flash2, gpu("L40S")).measured);
}

TEST_CASE("a prediction's band widens with what priced it unmeasured")
{
  const GpuSpec& h100 = gpu("H100");
  const GpuSpec& a100 = gpu("A100-80GB");
  const GpuSpec& v100 = gpu("V100");
  const PredictionBand measured = prediction_band(10, {BandDevice{&h100, 0, "cudnn"}}, {}, nullptr);
  CHECK(measured.low == doctest::Approx(9.3));
  CHECK(measured.high == doctest::Approx(10.9));
  const PredictionBand published = prediction_band(10, {BandDevice{&a100, 0, "flash2"}}, {}, nullptr);
  CHECK(published.high > measured.high);
  // A mixed cluster takes its least certain GPU's band; an unmeasured attention kernel and communication
  // across nodes each widen it, and each reason is named.
  const PredictionBand mixed =
      prediction_band(10, {BandDevice{&a100, 0, "flash2"}, BandDevice{&v100, 0.3, "mem_efficient"}}, {true}, nullptr);
  CHECK(mixed.high > prediction_band(10, {BandDevice{&v100, 0, ""}}, {}, nullptr).high);
  CHECK(mixed.low < 10);
  const std::string text = mixed.describe(10);
  CHECK(text.find("A100-SXM4-80GB constants from published runs") != std::string::npos);
  CHECK(text.find("V100-SXM2-16GB attention (mem_efficient, 30% of its compute) unmeasured") != std::string::npos);
  CHECK(text.find("across nodes") != std::string::npos);
  // A calibration fitted to this GPU's traces counts as measured.
  Calibration calibration;
  calibration.kernels["A100-SXM4-80GB"] = kernel_constants(a100);
  CHECK(constants_provenance(a100, &calibration).origin == ConstantsOrigin::calibrated);
  CHECK(constants_provenance(v100, &calibration).origin == ConstantsOrigin::carried);
}

TEST_CASE("Blackwell and Instinct GPUs are priced from published matmul sweeps, the rest carried over, and say so")
{
  // The MAMF table's best products over each dense peak: B200 1,745 of 2,250 (at the clock a training step
  // sustains: 1,237 of FlashAttention-4's 1,450 TFLOP/s once the B200 throttles), B300 1,769, MI300X 668 of 1,300.
  const double sustained = 1237.0 / 1450;
  CHECK(kernel_constants(gpu("B200")).gemm_ceiling == doctest::Approx(1745.0 / 2250 * sustained).epsilon(0.01));
  CHECK(kernel_constants(gpu("B300")).gemm_ceiling == doctest::Approx(1769.0 / 2250).epsilon(0.01));
  CHECK(kernel_constants(gpu("H100")).gemm_ceiling == 0.83); // whole training steps' traces: no factor
  CHECK(kernel_constants(gpu("MI300X")).gemm_ceiling == doctest::Approx(668.4 / 1300).epsilon(0.01));
  for (const std::string name : {"B200", "B300", "GB200", "GB300", "MI300X", "MI325X", "MI355X", "H20"}) {
    CAPTURE(name);
    CHECK(constants_provenance(gpu(name.c_str()), nullptr).origin == ConstantsOrigin::carried);
  }
  // Hopper's attention figures carry over to Blackwell, which says they are not its own.
  const AttentionSpeed b200 = attention_speed(AttentionKernel::cudnn, gpu("B200"));
  CHECK_FALSE(b200.measured);
  CHECK(b200.forward_ceiling ==
        doctest::Approx(attention_speed(AttentionKernel::cudnn, gpu("H100")).forward_ceiling * sustained));
  CHECK(attention_speed(AttentionKernel::cudnn, gpu("GB300")).backward_ceiling ==
        attention_speed(AttentionKernel::cudnn, gpu("H100")).backward_ceiling);
  CHECK(attention_speed(AttentionKernel::cudnn, gpu("H100")).measured);
  CHECK_FALSE(attention_speed(AttentionKernel::cudnn, gpu("H20")).measured);
  // FlashAttention 3 is Hopper's alone; Blackwell falls back to FlashAttention 2.
  CHECK(attention_run(AttentionKernel::flash3, gpu("B200"), false).kernel == AttentionKernel::flash2);
}

TEST_CASE("communication exposed over NCCL's sockets widens the band by the spread of what sockets move")
{
  const GpuSpec& h100 = gpu("H100");
  // A 50 Gb/s NIC at the median 30: the slowest public rate makes its communication 30 / 13.6 times as long,
  // the fastest (65, past the line rate: 50) 30 / 50 as long.
  const BandNetwork rdma{true, 0, 0, 0}, sockets{true, 0.5, 30 / 13.6 - 1, 1 - 30.0 / 50};
  const PredictionBand over_rdma    = prediction_band(10, {BandDevice{&h100, 0, ""}}, rdma, nullptr);
  const PredictionBand over_sockets = prediction_band(10, {BandDevice{&h100, 0, ""}}, sockets, nullptr);
  CHECK(over_sockets.high > over_rdma.high);
  CHECK(over_sockets.high == doctest::Approx(10 * (1 + std::hypot(std::hypot(0.09, 0.20), 0.5 * (30 / 13.6 - 1)))));
  CHECK(over_sockets.low == doctest::Approx(10 * (1 - std::hypot(std::hypot(0.07, 0.10), 0.5 * (1 - 30.0 / 50)))));
  CHECK(over_sockets.describe(10).find("NCCL's sockets (50% of the step exposed; public runs moved 13.6-65 Gb/s") !=
        std::string::npos);
  // A NIC whose line rate is below every public rate carries it whatever: no widening, no reason.
  const PredictionBand slow_nic = prediction_band(10, {BandDevice{&h100, 0, ""}}, BandNetwork{true, 0.5, 0, 0}, nullptr);
  CHECK(slow_nic.high == doctest::Approx(over_rdma.high));
  CHECK(slow_nic.describe(10).find("sockets") == std::string::npos);
  // On one node nothing crosses a NIC.
  CHECK(prediction_band(10, {BandDevice{&h100, 0, ""}}, BandNetwork{false, 0.5, 1, 0.5}, nullptr).high ==
        doctest::Approx(10.9));
}

TEST_CASE("a PyTorch release older than Hopper's constants were measured with counts them carried over")
{
  const GpuSpec& h100 = gpu("H100");
  const GpuSpec& v100 = gpu("V100");
  const SoftwareRelease old_stack{2, 1}, measured_stack{2, 11}, newer{3, 0};
  CHECK(constants_provenance(h100, nullptr, old_stack).origin == ConstantsOrigin::carried);
  CHECK(constants_provenance(h100, nullptr, measured_stack).origin == ConstantsOrigin::measured);
  CHECK(constants_provenance(h100, nullptr, newer).origin == ConstantsOrigin::measured);
  const PredictionBand band = prediction_band(10, {BandDevice{&h100, 0, "flash2"}}, {}, nullptr, old_stack);
  CHECK(band.high == doctest::Approx(14.5));
  CHECK(band.describe(10).find("H100-SXM5-80GB constants carried over (measured with PyTorch 2.11, run with 2.1)") !=
        std::string::npos);
  // A GPU carried over whatever the release says so without naming the release.
  const std::string v100_text = prediction_band(10, {BandDevice{&v100, 0, ""}}, {}, nullptr, old_stack).describe(10);
  CHECK(v100_text.find("V100-SXM2-16GB constants carried over)") != std::string::npos);
  // A calibration to the user's own traces is of their stack.
  Calibration calibration;
  calibration.kernels["H100-SXM5-80GB"] = kernel_constants(h100);
  CHECK(constants_provenance(h100, &calibration, old_stack).origin == ConstantsOrigin::calibrated);
}

TEST_CASE("a release is read as torch.__version__ prints it, MAJOR.MINOR first")
{
  CHECK(parse_software_release("2.1") == SoftwareRelease{2, 1});
  CHECK(parse_software_release("2.1.0+cu121") == SoftwareRelease{2, 1});
  CHECK(parse_software_release("2.11.0") == SoftwareRelease{2, 11});
  CHECK(SoftwareRelease{2, 9} < SoftwareRelease{2, 11}); // not 2.9 > 2.11 as decimals would have it
  CHECK(parse_software_release("0.3.15") == SoftwareRelease{0, 3}); // DeepSpeed's releases are 0.x
  for (const char* bad : {"", "2", "two", "2.", ".1", "2.1x", "0.0", "2.1.", "99999.1", "2.1-rc1"})
    CHECK_FALSE(parse_software_release(bad).has_value());
}
