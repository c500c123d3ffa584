#include "traces/pytorch_fit.hpp"

#include "costmodel/attention_speed.hpp"

#include "core/dtype.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>

namespace hetsim::traces {
namespace {

constexpr double kComputeBoundS   = 20e-6;  ///< shorter products sit on the launch floor, not on the ceiling
constexpr double kStreamingBytes  = 64e6;   ///< smaller passes hit L2 or the launch floor (kernel_sweep.json)

/// One operator call's kernels (a product and its split-k reduction are one call).
struct Call {
  const ProfiledKernel* first = nullptr;
  double seconds              = 0;
};

std::vector<Call> calls_of(const std::vector<PytorchTrace>& traces, ProfiledKind kind)
{
  std::vector<Call> calls;
  for (const PytorchTrace& trace : traces) {
    long long last = -2;
    for (const ProfiledKernel& k : trace.kernels) {
      if (k.kind != kind)
        continue;
      if (k.op_id >= 0 && k.op_id == last) {
        calls.back().seconds += k.seconds;
        continue;
      }
      calls.push_back({&k, k.seconds});
      last = k.op_id;
    }
  }
  return calls;
}

struct Product {
  double m = 0, n = 0, k = 0, batch = 1;
  Dtype dtype = Dtype::bf16;
};

/// The shape of a matrix-product call from its recorded inputs: mm and bmm (A, B), addmm and baddbmm (C, A, B).
std::optional<Product> product_of(const ProfiledKernel& kernel)
{
  const auto& dims = kernel.input_dims;
  std::size_t a = 0;
  if (kernel.op == "aten::addmm" || kernel.op == "aten::baddbmm")
    a = 1;
  else if (kernel.op != "aten::mm" && kernel.op != "aten::bmm")
    return std::nullopt;
  if (dims.size() < a + 2 || dims[a].size() < 2 || dims[a].size() != dims[a + 1].size() || dims[a].size() > 3)
    return std::nullopt;
  const auto& left = dims[a];
  const auto& right = dims[a + 1];
  Product p;
  p.m     = left[left.size() - 2];
  p.k     = left.back();
  p.n     = right.back();
  p.batch = left.size() == 3 ? left[0] : 1;
  const double bytes = kernel.input_element_bytes[a];
  if (bytes == 4)
    p.dtype = Dtype::fp32;
  else if (bytes != 2)
    return std::nullopt;
  if (p.m <= 0 || p.n <= 0 || p.k <= 0 || p.batch <= 0)
    return std::nullopt;
  return p;
}

/// Every dimension in whole 16-byte vectors: which of them a recorded product's operands lead with depends on its
/// strides (a weight gradient leads with m), so all three are asked.
bool aligned_product(const Product& p)
{
  return costmodel::whole_vectors(p.m, p.dtype) && costmodel::whole_vectors(p.n, p.dtype) &&
         costmodel::whole_vectors(p.k, p.dtype);
}

/// Full-square FLOPs of an attention call: 4 b h s_q s_k d forward, 2.5 times that backward.
double attention_flops(const ProfiledKernel& kernel)
{
  std::vector<const std::vector<double>*> four;
  for (const auto& d : kernel.input_dims)
    if (d.size() == 4)
      four.push_back(&d);
  if (four.size() < 2)
    return 0;
  const auto& q = *four[0];
  const auto& k = *four[1];
  const double forward = 4 * q[0] * q[1] * q[2] * k[2] * q[3];
  return kernel.op.find("backward") != std::string::npos ? 2.5 * forward : forward;
}

/// Bytes an elementwise call reads and writes, from its recorded tensors: the inputs, and an output as large as
/// the largest of them (copy_ names its destination among them). Zero where the operator is not elementwise.
double elementwise_bytes(const ProfiledKernel& kernel)
{
  static const std::set<std::string> elementwise = {
      "aten::add",  "aten::add_", "aten::mul",  "aten::mul_", "aten::sub", "aten::div", "aten::tanh",
      "aten::pow",  "aten::neg",  "aten::gelu", "aten::silu", "aten::rsqrt", "aten::copy_", "aten::native_dropout",
      "aten::gelu_backward", "aten::silu_backward", "aten::tanh_backward"};
  if (!elementwise.count(kernel.op))
    return 0;
  double total = 0, largest = 0, widest = 0;
  for (std::size_t i = 0; i < kernel.input_dims.size(); ++i) {
    if (kernel.input_element_bytes[i] == 0)
      continue;
    double elements = 1;
    for (double extent : kernel.input_dims[i])
      elements *= extent;
    total += elements * kernel.input_element_bytes[i];
    largest = std::max(largest, elements);
    widest  = std::max(widest, kernel.input_element_bytes[i]);
  }
  return kernel.op == "aten::copy_" ? total : total + largest * widest;
}

/// Whether PyTorch ran an elementwise call on its vectorized path: its unrolled (mixed dtypes) and generic
/// (broadcast, strided) kernels load an element at a time (aten/src/ATen/native/cuda/CUDALoops.cuh).
bool loads_in_vectors(const ProfiledKernel& kernel)
{
  const bool unrolled = kernel.name.find("unrolled_elementwise_kernel") != std::string::npos;
  const bool generic  = kernel.name.find("elementwise_kernel<") != std::string::npos &&
                       kernel.name.find("vectorized_elementwise_kernel") == std::string::npos;
  return !unrolled && !generic;
}

double quantile(std::vector<double> values, double q)
{
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  return values[static_cast<std::size_t>(q * static_cast<double>(values.size() - 1) + 0.5)];
}

/// Adds (measured, modelled) pairs of one kind to the spread table.
void add_spread(PytorchFit& fit, const std::string& kind, const std::vector<std::pair<double, double>>& pairs)
{
  if (pairs.empty())
    return;
  KindSpread spread;
  std::vector<double> errors;
  for (const auto& [measured, modelled] : pairs) {
    spread.measured_s += measured;
    spread.modelled_s += modelled;
    errors.push_back(std::fabs(modelled / measured - 1));
  }
  spread.kernels      = static_cast<int>(pairs.size());
  spread.median_error = quantile(errors, 0.5);
  spread.p90_error    = quantile(errors, 0.9);
  fit.spread[kind]    = spread;
}

std::string fitted_line(const char* what, double value, std::size_t count, const char* from)
{
  char line[256];
  std::snprintf(line, sizeof line, "%s %.3g: fitted to %zu %s", what, value, count, from);
  return line;
}

} // namespace

PytorchFit fit_pytorch_traces(const GpuSpec& gpu, const std::vector<PytorchTrace>& traces,
                              costmodel::KernelConstants start)
{
  PytorchFit fit;
  costmodel::KernelConstants& c = fit.constants;
  c                              = start;

  // Products: time is inversely proportional to the ceiling where the model is compute-bound.
  struct Timed {
    Product product;
    double seconds;
  };
  std::vector<Timed> aligned, unaligned;
  for (const Call& call : calls_of(traces, ProfiledKind::matmul)) {
    const auto product = product_of(*call.first);
    if (!product)
      continue;
    (aligned_product(*product) ? aligned : unaligned).push_back({*product, call.seconds});
  }
  auto refit_ceiling = [&](const std::vector<Timed>& timed, double& ceiling, double limit, const char* what) {
    double modelled = 0, measured = 0;
    std::size_t used = 0;
    for (const Timed& t : timed) {
      const Product& p = t.product;
      const double flops = 2 * p.m * p.n * p.k * p.batch;
      const double seconds = costmodel::matmul_seconds(gpu, c, p.m, p.n, p.k, p.batch, p.dtype, aligned_product(p));
      const double bytes = dtype_bytes(p.dtype) * (p.m * p.k + p.k * p.n + p.m * p.n) * p.batch;
      const bool compute_bound = seconds > costmodel::memory_seconds(gpu, c, bytes) * 1.5;
      if (t.seconds < kComputeBoundS || !compute_bound || flops <= 0)
        continue;
      modelled += seconds;
      measured += t.seconds;
      ++used;
    }
    if (used < 3) {
      fit.notes.push_back(std::string(what) + " kept at the family's " + std::to_string(ceiling).substr(0, 5) +
                          ": the traces show fewer than 3 such products of 20 us or more");
      return;
    }
    ceiling = std::min(limit, ceiling * modelled / measured);
    fit.notes.push_back(fitted_line(what, ceiling, used, "products of 20 us or more"));
  };
  refit_ceiling(aligned, c.gemm_ceiling, 1.0, "matrix-product ceiling");
  refit_ceiling(unaligned, c.unaligned_ceiling, c.gemm_ceiling, "unaligned-product ceiling");

  // Fused attention: forward and backward ceilings, each what its calls' time at a ceiling of 1 over the time
  // they took, for the kernel PyTorch's SDPA runs on this GPU; the softmax's depth stays that kernel's.
  struct AttentionCall {
    double measured, at_full_ceiling;
    bool backward;
  };
  std::vector<AttentionCall> attention_calls;
  const models::AttentionKernel sdpa_kernel = costmodel::attention_run(models::AttentionKernel::sdpa, gpu, false).kernel;
  if (c.attention_softmax_depth <= 0)
    c.attention_softmax_depth = costmodel::attention_speed(sdpa_kernel, gpu).softmax_depth;
  costmodel::KernelConstants full = c;
  full.attention_ceiling = full.attention_backward_ceiling = 1;
  for (const Call& call : calls_of(traces, ProfiledKind::attention)) {
    const double flops = attention_flops(*call.first);
    const std::vector<double>* queries = nullptr; // [batch, heads, sequence, head size]
    for (const auto& dims : call.first->input_dims)
      if (dims.size() == 4) {
        queries = &dims;
        break;
      }
    if (flops <= 0 || !queries || call.seconds < kComputeBoundS)
      continue;
    const Dtype dtype = call.first->input_element_bytes.empty() || call.first->input_element_bytes[0] != 4
                            ? Dtype::bf16
                            : Dtype::fp32;
    const auto& q      = *queries;
    const double tokens = q[0] * q[2]; // the micro-batch's tokens, what the fit covered
    fit.max_tokens      = std::max(fit.max_tokens, tokens);
    fit.min_tokens      = fit.min_tokens == 0 ? tokens : std::min(fit.min_tokens, tokens);
    const bool backward = call.first->op.find("backward") != std::string::npos;
    attention_calls.push_back(
        {call.seconds, costmodel::attention_seconds(gpu, full, sdpa_kernel, flops, q[2], q[3], backward, dtype, 0), backward});
  }
  for (const bool backward : {false, true}) {
    double at_full = 0, measured = 0;
    int used       = 0;
    for (const AttentionCall& call : attention_calls)
      if (call.backward == backward) {
        at_full += call.at_full_ceiling;
        measured += call.measured;
        ++used;
      }
    double& ceiling  = backward ? c.attention_backward_ceiling : c.attention_ceiling;
    const char* what = backward ? "attention backward ceiling" : "attention ceiling";
    if (used >= 2) {
      ceiling = std::min(1.0, at_full / measured);
      fit.notes.push_back(fitted_line(what, ceiling, used, backward ? "attention backward calls" : "attention calls"));
    } else {
      fit.notes.push_back(std::string(what) + " kept at the family's: the traces show fewer than 2 such calls");
    }
  }

  // Streaming: large elementwise passes, those that load in vectors at the memory efficiency, the others at the
  // multiprocessors' unvectorized rate (each a property of the GPU and PyTorch, whatever model runs them).
  std::vector<std::pair<double, double>> streams, unvectorized; // (measured, bytes)
  for (const Call& call : calls_of(traces, ProfiledKind::memory)) {
    const double bytes = elementwise_bytes(*call.first);
    if (bytes >= kStreamingBytes)
      (loads_in_vectors(*call.first) ? streams : unvectorized).push_back({call.seconds, bytes});
  }
  auto bytes_per_second = [](const std::vector<std::pair<double, double>>& passes) {
    double bytes = 0, seconds = 0;
    for (const auto& [measured, moved] : passes) {
      bytes += moved;
      seconds += measured;
    }
    return bytes / seconds;
  };
  if (streams.size() >= 3) {
    c.memory_efficiency = std::min(1.0, bytes_per_second(streams) / gpu.memory_bandwidth_bytes_per_s);
    fit.notes.push_back(fitted_line("memory efficiency", c.memory_efficiency, streams.size(),
                                    "vectorized elementwise passes of 64 MB or more"));
  } else {
    fit.notes.push_back("memory efficiency kept at the family's: fewer than 3 vectorized elementwise passes of "
                        "64 MB or more");
  }
  // Bounded by the memory: a rate past what the memory moves would not show in a step.
  if (unvectorized.size() >= 3 && gpu.multiprocessors > 0) {
    const double rate = std::min(bytes_per_second(unvectorized), gpu.memory_bandwidth_bytes_per_s * c.memory_efficiency);
    c.unvectorized_bytes_per_sm_s = rate / gpu.multiprocessors;
    fit.notes.push_back(fitted_line("unvectorized bytes per SM and second", c.unvectorized_bytes_per_sm_s,
                                    unvectorized.size(), "unvectorized elementwise passes of 64 MB or more"));
  } else {
    fit.notes.push_back("unvectorized rate kept at the family's: fewer than 3 unvectorized elementwise passes of "
                        "64 MB or more");
  }
  fit.notes.push_back("launch gap and host dispatch kept at the family's: the profiler's bookkeeping slows the host "
                      "it traces (about twice on the GPT-2 traces), so its host times overstate an unprofiled step");

  // How well the fitted constants explain what they were fitted to, kernel by kernel.
  auto product_pairs = [&](const std::vector<Timed>& timed) {
    std::vector<std::pair<double, double>> pairs;
    for (const Timed& t : timed)
      if (t.seconds >= kComputeBoundS)
        pairs.push_back({t.seconds, costmodel::matmul_seconds(gpu, c, t.product.m, t.product.n, t.product.k,
                                                              t.product.batch, t.product.dtype,
                                                              aligned_product(t.product))});
    return pairs;
  };
  add_spread(fit, "matmul", product_pairs(aligned));
  add_spread(fit, "matmul (unaligned)", product_pairs(unaligned));
  std::vector<std::pair<double, double>> attention_pairs;
  for (const AttentionCall& call : attention_calls)
    attention_pairs.push_back(
        {call.measured, call.at_full_ceiling / (call.backward ? c.attention_backward_ceiling : c.attention_ceiling)});
  add_spread(fit, "attention", attention_pairs);
  for (auto& [measured, bytes] : streams)
    bytes = costmodel::memory_seconds(gpu, c, bytes);
  add_spread(fit, "memory", streams);
  for (auto& [measured, bytes] : unvectorized)
    bytes = costmodel::unvectorized_seconds(gpu, c, bytes);
  add_spread(fit, "memory (unvectorized)", unvectorized);
  return fit;
}

} // namespace hetsim::traces
