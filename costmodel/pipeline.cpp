#include "costmodel/pipeline.hpp"

#include <algorithm>
#include <numeric>

namespace hetsim::costmodel {

double pipeline_seconds(const std::vector<double>& stage_seconds, int micro_batches)
{
  if (stage_seconds.empty() || micro_batches <= 0)
    return 0;
  const double slowest = *std::max_element(stage_seconds.begin(), stage_seconds.end());
  const double fill    = std::accumulate(stage_seconds.begin(), stage_seconds.end(), 0.0);
  return (micro_batches - 1) * slowest + fill;
}

} // namespace hetsim::costmodel
