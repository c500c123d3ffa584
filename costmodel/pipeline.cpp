#include "costmodel/pipeline.hpp"

#include "core/error.hpp"

#include <algorithm>

namespace hetsim::costmodel {
namespace {

constexpr double kUnknown = -1;

double occupancy(const std::vector<double>& occupancy_s, const std::vector<double>& transfer_s, int boundary)
{
  const double transfer = transfer_s[boundary];
  return occupancy_s.empty() ? transfer : std::max(transfer, occupancy_s[boundary]);
}

} // namespace

std::vector<double> pipeline_finish_seconds(const std::vector<std::vector<PipelineStep>>& orders,
                                            const PipelineDurations& durations)
{
  const int stages = static_cast<int>(orders.size());
  int micro_batches = 0, chunks_per_stage = 1;
  for (const auto& order : orders)
    for (const PipelineStep& step : order) {
      micro_batches    = std::max(micro_batches, step.micro_batch + 1);
      chunks_per_stage = std::max(chunks_per_stage, step.chunk + 1);
    }
  const int chunks     = stages * chunks_per_stage; // in pipeline order: chunk c of stage s is c x stages + s
  const int boundaries = std::max(chunks - 1, 0);
  HETSIM_ASSERT(static_cast<int>(durations.forward_transfer_s.size()) >= boundaries &&
                static_cast<int>(durations.backward_transfer_s.size()) >= boundaries);

  // arrival[k][m]: when chunk k has micro-batch m's input for that direction (kUnknown until the peer sent it).
  const auto table = [&] { return std::vector<std::vector<double>>(chunks, std::vector<double>(micro_batches, kUnknown)); };
  auto forward_input = table(), backward_input = table();
  std::vector<double> forward_link_free(boundaries, 0), backward_link_free(boundaries, 0);
  std::vector<double> stage_free(stages, 0);
  std::vector<std::size_t> next(stages, 0);

  // Advance every stage as far as its inputs allow, round after round; a valid order never stalls every stage.
  std::size_t remaining = 0;
  for (const auto& order : orders)
    remaining += order.size();
  while (remaining > 0) {
    std::size_t advanced = 0;
    for (int s = 0; s < stages; ++s)
      for (; next[s] < orders[s].size(); ++next[s], ++advanced) {
        const PipelineStep& step = orders[s][next[s]];
        const int m              = step.micro_batch;
        const int k              = step.chunk * stages + s;
        double ready             = stage_free[s];
        if (step.weight) { // after the stage's own backward of the micro-batch, earlier in its order
          stage_free[s] = ready + durations.step_seconds(s, step);
          continue;
        }
        if (!step.backward && k > 0) {
          if (forward_input[k][m] == kUnknown)
            break;
          ready = std::max(ready, forward_input[k][m]);
        } else if (step.backward && k + 1 < chunks) {
          if (backward_input[k][m] == kUnknown)
            break;
          ready = std::max(ready, backward_input[k][m]);
        }
        const double end = ready + durations.step_seconds(s, step);
        stage_free[s]    = end;
        if (!step.backward && k + 1 < chunks) {
          const double start      = std::max(end, forward_link_free[k]);
          forward_link_free[k]    = start + occupancy(durations.forward_occupancy_s, durations.forward_transfer_s, k);
          forward_input[k + 1][m] = start + durations.forward_transfer_s[k];
          if (durations.sends_block)
            stage_free[s] = forward_input[k + 1][m];
        } else if (step.backward && k > 0) {
          const double start = std::max(end, backward_link_free[k - 1]);
          backward_link_free[k - 1] =
              start + occupancy(durations.backward_occupancy_s, durations.backward_transfer_s, k - 1);
          backward_input[k - 1][m] = start + durations.backward_transfer_s[k - 1];
          if (durations.sends_block)
            stage_free[s] = backward_input[k - 1][m];
        }
      }
    HETSIM_ASSERT(advanced > 0); // a stage waiting on a step that no stage will ever run
    remaining -= advanced;
  }
  return stage_free;
}

} // namespace hetsim::costmodel
