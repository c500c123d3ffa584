#include "strategies/plan.hpp"

#include "core/enum_names.hpp"
#include "core/error.hpp"

namespace hetsim::strategies {
namespace {

constexpr EnumNames<PipelineSchedule, 2> kScheduleNames{
    {{{PipelineSchedule::gpipe, "gpipe"}, {PipelineSchedule::one_f_one_b, "1f1b"}}}};
constexpr EnumNames<CollectiveAlgorithm, 3> kAlgorithmNames{{{{CollectiveAlgorithm::ring, "ring"},
                                                              {CollectiveAlgorithm::tree, "tree"},
                                                              {CollectiveAlgorithm::hierarchical, "hierarchical"}}}};

} // namespace

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
  return kScheduleNames.name(schedule);
}

std::string_view algorithm_name(CollectiveAlgorithm algorithm)
{
  return kAlgorithmNames.name(algorithm);
}

bool parse_schedule(std::string_view name, PipelineSchedule& out)
{
  return kScheduleNames.parse(name, out);
}

bool parse_algorithm(std::string_view name, CollectiveAlgorithm& out)
{
  return kAlgorithmNames.parse(name, out);
}

} // namespace hetsim::strategies
