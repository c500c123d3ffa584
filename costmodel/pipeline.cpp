#include "costmodel/pipeline.hpp"

#include <algorithm>
#include <numeric>

namespace hetsim::costmodel {

double pipeline_seconds(const std::vector<double>& stage_seconds, int micro_batches)
{
  return pipeline_seconds(stage_seconds, stage_seconds, micro_batches);
}

double pipeline_seconds(const std::vector<double>& fill_seconds, const std::vector<double>& period_seconds,
                        int micro_batches)
{
  if (fill_seconds.empty() || micro_batches <= 0)
    return 0;
  const double slowest = *std::max_element(period_seconds.begin(), period_seconds.end());
  const double fill    = std::accumulate(fill_seconds.begin(), fill_seconds.end(), 0.0);
  return (micro_batches - 1) * slowest + fill;
}

} // namespace hetsim::costmodel
