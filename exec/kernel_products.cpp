#include "exec/kernel_products.hpp"

#include "strategies/lowering/scale.hpp"

#include <algorithm>
#include <cmath>

namespace hetsim::exec {

using models::Kernel;

std::vector<Product> kernel_products(const Kernel& kernel)
{
  auto whole = [](double x) { return std::max(1L, std::lround(x)); };
  switch (kernel.kind) {
  case Kernel::Kind::matmul:
    return {{whole(kernel.m), whole(kernel.n), whole(kernel.k), whole(kernel.batch)}};
  case Kernel::Kind::fused_attention: {
    const long s = whole(kernel.m), d = whole(kernel.k);
    const long block  = std::min(s, 128L);
    const long blocks = (s + block - 1) / block;
    const long count  = whole(kernel.batch) * blocks;
    const Product scores{block, s, d, count}, context{block, d, s, count}, keys{s, d, block, count};
    // Two products of 2 s^2 d FLOPs per head forward; the backward's 2.5 times as many are five.
    if (kernel.flops < 3.5 * scores.flops())
      return {scores, context};
    return {scores, scores, context, keys, keys}; // scores and their gradient again; dQ; dK and dV
  }
  case Kernel::Kind::stream:
    break;
  }
  return {};
}

std::size_t stream_elements(const Kernel& kernel)
{
  return std::max<std::size_t>(1, static_cast<std::size_t>(std::llround(kernel.bytes / 4)));
}

Operands kernel_operands(const Kernel& kernel)
{
  if (kernel.kind == Kernel::Kind::stream)
    return {stream_elements(kernel), 0, stream_elements(kernel)};
  Operands operands;
  for (const Product& p : kernel_products(kernel)) {
    operands.a = std::max(operands.a, static_cast<std::size_t>(p.m * p.k * p.count));
    operands.b = std::max(operands.b, static_cast<std::size_t>(p.k * p.n * p.count));
    operands.c = std::max(operands.c, static_cast<std::size_t>(p.m * p.n * p.count));
  }
  return operands;
}

long optimizer_elements(const strategies::Task& task, double scale)
{
  return std::max(1L, std::lround(strategies::scaled_params(task, scale)));
}

} // namespace hetsim::exec
