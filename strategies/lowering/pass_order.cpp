#include "strategies/lowering/pass_order.hpp"

#include <algorithm>

namespace hetsim::strategies {

std::vector<costmodel::PipelineStep> pass_order(PipelineSchedule schedule, int pp, int stage, int micro_batches)
{
  std::vector<costmodel::PipelineStep> order;
  order.reserve(2 * static_cast<std::size_t>(std::max(micro_batches, 0)));
  if (schedule == PipelineSchedule::gpipe) {
    for (int m = 0; m < micro_batches; ++m)
      order.push_back({m, false});
    for (int m = micro_batches - 1; m >= 0; --m)
      order.push_back({m, true});
    return order;
  }
  const int warmup = std::clamp(pp - stage - 1, 0, micro_batches);
  for (int m = 0; m < warmup; ++m)
    order.push_back({m, false});
  for (int m = 0; m + warmup < micro_batches; ++m) {
    order.push_back({m + warmup, false});
    order.push_back({m, true});
  }
  for (int m = micro_batches - warmup; m < micro_batches; ++m)
    order.push_back({m, true});
  return order;
}

} // namespace hetsim::strategies
