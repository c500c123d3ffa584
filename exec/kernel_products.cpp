#include "exec/kernel_products.hpp"

#include "strategies/lowering/scale.hpp"

#include <algorithm>
#include <cmath>

namespace hetsim::exec {

using models::Kernel;

namespace {

long whole(double x)
{
  return std::max(1L, std::lround(x));
}

} // namespace

AttentionTensors attention_tensors(const Kernel& kernel)
{
  return {whole(kernel.batch), whole(kernel.m), whole(kernel.k), kernel.backward};
}

std::vector<Product> kernel_products(const Kernel& kernel)
{
  switch (kernel.kind) {
  case Kernel::Kind::matmul:
    return {{whole(kernel.m), whole(kernel.n), whole(kernel.k), whole(kernel.batch)}};
  case Kernel::Kind::fused_attention: {
    const long s = whole(kernel.m), d = whole(kernel.k);
    const long block  = std::min(s, 128L);
    const long blocks = (s + block - 1) / block;
    const long heads  = whole(kernel.batch);
    const Product scores{block, s, d, heads}, context{block, d, s, heads}, keys{s, d, block, heads};
    // Per block, two products of 2 block s d FLOPs per head forward; the backward's 2.5 times as many are five.
    const std::vector<Product> per_block =
        attention_tensors(kernel).backward
            ? std::vector<Product>{scores, scores, context, keys, keys}  // scores, their gradient; dQ; dK, dV
            : std::vector<Product>{scores, context};
    std::vector<Product> products;
    for (long b = 0; b < blocks; ++b)
      products.insert(products.end(), per_block.begin(), per_block.end());
    return products;
  }
  case Kernel::Kind::stream:
    break;
  }
  return {};
}

StreamPasses stream_passes(const Kernel& kernel)
{
  auto elements = [](double bytes) { return std::max<std::size_t>(1, static_cast<std::size_t>(std::llround(bytes / 4))); };
  StreamPasses passes;
  passes.elements = elements(kernel.bytes);
  passes.tensor   = kernel.tensor_bytes > 0 ? std::min(passes.elements, elements(2 * kernel.tensor_bytes))
                                            : passes.elements;
  return passes;
}

Operands kernel_operands(const Kernel& kernel)
{
  if (kernel.kind == Kernel::Kind::stream) {
    const std::size_t tensor = stream_passes(kernel).tensor;
    return {tensor, 0, tensor};
  }
  Operands operands;
  if (kernel.kind == Kernel::Kind::fused_attention) {
    const AttentionTensors tensors = attention_tensors(kernel);
    operands.a                     = tensors.inputs();
    operands.c                     = tensors.outputs();
  }
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
