#include "strategies/lowering/pass_order.hpp"

#include "core/error.hpp"

#include <algorithm>

namespace hetsim::strategies {
namespace {

/// Megatron-Core's interleaved schedule (pipeline_parallel/schedules.py, forward_backward_pipelining_with_
/// interleaving and its schedule table): micro-batches pass every chunk in groups of `group`, the last group
/// holding what is left; the k-th forward and the k-th backward of the stage are the table's k-th entry (the
/// backward's chunk counted from the last).
std::vector<costmodel::PipelineStep> interleaved_order(int pp, int stage, int micro_batches, int chunks, int group)
{
  HETSIM_ASSERT(group >= pp && group <= micro_batches);
  std::vector<std::pair<int, int>> table; // (micro-batch, chunk)
  for (int first = 0; first < micro_batches; first += group) {
    const int end = first + group >= micro_batches ? micro_batches : first + group;
    for (int chunk = 0; chunk < chunks; ++chunk)
      for (int m = first; m < end; ++m)
        table.emplace_back(m, chunk);
    if (end == micro_batches)
      break;
  }
  const int total = micro_batches * chunks;
  const auto step = [&](int k, bool backward) {
    const auto [m, chunk] = table[static_cast<std::size_t>(k)];
    return costmodel::PipelineStep{m, backward, backward ? chunks - 1 - chunk : chunk};
  };
  const int warmup =
      micro_batches == pp ? total : std::min((pp - stage - 1) * 2 + (chunks - 1) * group, total);
  std::vector<costmodel::PipelineStep> order;
  order.reserve(2 * static_cast<std::size_t>(total));
  for (int k = 0; k < warmup; ++k)
    order.push_back(step(k, false));
  for (int k = 0; k + warmup < total; ++k) {
    order.push_back(step(k + warmup, false));
    order.push_back(step(k, true));
  }
  for (int k = std::max(total - warmup, 0); k < total; ++k)
    order.push_back(step(k, true));
  return order;
}

} // namespace

std::vector<costmodel::PipelineStep> pass_order(PipelineSchedule schedule, int pp, int stage, int micro_batches,
                                                int virtual_stages, int group)
{
  if (virtual_stages > 1) {
    HETSIM_ASSERT(schedule == PipelineSchedule::one_f_one_b);
    return interleaved_order(pp, stage, micro_batches, virtual_stages, group > 0 ? group : pp);
  }
  std::vector<costmodel::PipelineStep> order;
  order.reserve(3 * static_cast<std::size_t>(std::max(micro_batches, 0)));
  if (schedule == PipelineSchedule::gpipe) {
    for (int m = 0; m < micro_batches; ++m)
      order.push_back({m, false});
    for (int m = micro_batches - 1; m >= 0; --m)
      order.push_back({m, true});
    return order;
  }
  const int warmup = std::clamp(pp - stage - 1, 0, micro_batches);
  // ZB-H1 (PyTorch's ScheduleInterleavedZeroBubble with one chunk per stage): after its k-th backward a stage
  // runs a weight-gradient step once k >= stage, the oldest first; the rest close the iteration.
  const bool split = schedule == PipelineSchedule::zero_bubble;
  int weights      = 0;
  int backwards    = 0;
  auto backward    = [&](int m) {
    order.push_back({m, true});
    if (split && backwards++ >= stage)
      order.push_back({weights++, true, 0, true});
  };
  for (int m = 0; m < warmup; ++m)
    order.push_back({m, false});
  for (int m = 0; m + warmup < micro_batches; ++m) {
    order.push_back({m + warmup, false});
    backward(m);
  }
  for (int m = micro_batches - warmup; m < micro_batches; ++m)
    backward(m);
  while (split && weights < micro_batches)
    order.push_back({weights++, true, 0, true});
  return order;
}

} // namespace hetsim::strategies
