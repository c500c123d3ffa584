#include "strategies/plan.hpp"

#include "core/error.hpp"

namespace hetsim::strategies {

int Plan::stage_end(int stage, int layer_count) const
{
  HETSIM_ASSERT(stage >= 0 && stage < static_cast<int>(stage_starts.size()));
  return stage + 1 < static_cast<int>(stage_starts.size()) ? stage_starts[stage + 1] : layer_count;
}

long long Plan::global_batch() const
{
  long long total = 0;
  for (std::size_t r = 0; r < micro_batch.size() && r < grad_accum.size(); ++r)
    total += static_cast<long long>(micro_batch[r]) * grad_accum[r];
  return total;
}

std::string_view schedule_name(PipelineSchedule schedule)
{
  switch (schedule) {
    case PipelineSchedule::gpipe:
      return "gpipe";
    case PipelineSchedule::one_f_one_b:
      return "1f1b";
  }
  return "1f1b";
}

std::string_view algorithm_name(CollectiveAlgorithm algorithm)
{
  switch (algorithm) {
    case CollectiveAlgorithm::ring:
      return "ring";
    case CollectiveAlgorithm::tree:
      return "tree";
    case CollectiveAlgorithm::hierarchical:
      return "hierarchical";
  }
  return "ring";
}

bool parse_schedule(std::string_view name, PipelineSchedule& out)
{
  for (auto s : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b})
    if (schedule_name(s) == name) {
      out = s;
      return true;
    }
  return false;
}

bool parse_algorithm(std::string_view name, CollectiveAlgorithm& out)
{
  for (auto a : {CollectiveAlgorithm::ring, CollectiveAlgorithm::tree, CollectiveAlgorithm::hierarchical})
    if (algorithm_name(a) == name) {
      out = a;
      return true;
    }
  return false;
}

} // namespace hetsim::strategies
