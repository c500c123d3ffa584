// Elementwise kernels as PyTorch runs them (vectorized or one element at a time), autograd's gradient sums, and
// a causal attention kernel that too few sequences x heads leave unbalanced over the multiprocessors.

#include "costmodel/kernel_time.hpp"
#include "models/operator.hpp"

#include <doctest/doctest.h>

using namespace hetsim;
using namespace hetsim::costmodel;

namespace {

const GpuSpec& gpu(const char* name)
{
  const GpuSpec* spec = find_catalog_gpu(name);
  REQUIRE(spec != nullptr);
  return *spec;
}

/// Seconds per FLOP of cuDNN's causal forward at GPT-2 medium's shape (1,024 tokens, head size 64), for
/// `sequences_x_heads` blocks a query tile.
double attention_seconds_per_flop(const GpuSpec& g, double sequences_x_heads)
{
  const double flops = 4 * 1024.0 * 1024 * 64 * sequences_x_heads;
  return attention_seconds(g, kernel_constants(g), models::AttentionKernel::cudnn, flops, 1024, 64, false,
                           Dtype::bf16, 0) /
         flops;
}

} // namespace

TEST_CASE("an unvectorized pass is paced by the multiprocessors where they are slower than the memory")
{
  const GpuSpec& h100 = gpu("H100");
  const GpuSpec& h200 = gpu("H200");
  const double bytes  = 1e9;
  // The same SMs and clock, the H200's memory 43% faster: the vectorized pass follows the memory, the other
  // does not.
  CHECK(memory_seconds(h200, kernel_constants(h200), bytes) < 0.75 * memory_seconds(h100, kernel_constants(h100), bytes));
  CHECK(unvectorized_seconds(h200, kernel_constants(h200), bytes) ==
        doctest::Approx(unvectorized_seconds(h100, kernel_constants(h100), bytes)));
  CHECK(unvectorized_seconds(h100, kernel_constants(h100), bytes) > 1.2 * memory_seconds(h100, kernel_constants(h100), bytes));
  // A V100's 80 SMs outpace its 900 GB/s: there the memory sets both.
  const GpuSpec& v100 = gpu("V100");
  CHECK(unvectorized_seconds(v100, kernel_constants(v100), bytes) ==
        doctest::Approx(memory_seconds(v100, kernel_constants(v100), bytes)));
}

TEST_CASE("an eager operator's unvectorized share, its gradient sums and its casts up are kernels of their own")
{
  models::Operator op;
  op.name                          = "norm";
  op.bytes_per_sample              = 100;
  op.unvectorized_share_forward    = 0.25;
  op.unvectorized_share_backward   = 0.5;
  op.gradient_sum_bytes_per_sample = 30;
  op.cast_bytes_per_sample         = 6;
  op.launches_forward              = 6;
  op.launches_backward             = 10;
  const auto forward = models::operator_kernels(op, 1, 2, false, false);
  REQUIRE(forward.size() == 3); // vectorized, unvectorized, the cast down
  CHECK(forward[0].bytes == doctest::Approx(150));
  CHECK(!forward[1].vectorized);
  CHECK(forward[1].bytes == doctest::Approx(50));
  CHECK(forward[2].vectorized); // fp32 to 16-bit loads in vectors
  double launches = 0;
  for (const auto& k : forward)
    launches += k.launches;
  CHECK(launches == doctest::Approx(6));
  const auto backward = models::operator_kernels(op, 1, 2, true, false);
  REQUIRE(backward.size() == 4);
  CHECK(backward[0].bytes + backward[1].bytes == doctest::Approx(400));
  CHECK(backward[1].bytes == doctest::Approx(200));
  CHECK(!backward[2].vectorized); // the gradient cast back up to fp32
  CHECK(backward[3].name == "norm.gradient_sum");
  CHECK(backward[3].bytes == doctest::Approx(60));
}

TEST_CASE("a causal kernel of few sequences x heads lasts as long as its longest thread block")
{
  const GpuSpec& h100 = gpu("H100");
  // GPT-2 medium at one sequence (16 heads) against sixteen (256): the H100 traces took 1.83 times the time per
  // FLOP; the longest block's 8 key tiles against 4.4 tiles an SM give the same.
  CHECK(attention_seconds_per_flop(h100, 16) / attention_seconds_per_flop(h100, 256) == doctest::Approx(1.83).epsilon(0.02));
  // Enough blocks: the spread is even, whatever their number.
  CHECK(attention_seconds_per_flop(h100, 128) == doctest::Approx(attention_seconds_per_flop(h100, 1024)));
}
