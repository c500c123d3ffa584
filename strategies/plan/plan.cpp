#include "strategies/plan/plan.hpp"

#include "core/enum_names.hpp"
#include "core/error.hpp"

namespace hetsim::strategies {
namespace {

constexpr EnumNames<PipelineSchedule, 3> kScheduleNames{{{{PipelineSchedule::gpipe, "gpipe"},
                                                          {PipelineSchedule::one_f_one_b, "1f1b"},
                                                          {PipelineSchedule::zero_bubble, "zero_bubble"}}}};
constexpr EnumNames<CollectiveAlgorithm, 4> kAlgorithmNames{{{{CollectiveAlgorithm::ring, "ring"},
                                                              {CollectiveAlgorithm::tree, "tree"},
                                                              {CollectiveAlgorithm::hierarchical, "hierarchical"},
                                                              {CollectiveAlgorithm::nccl, "nccl"}}}};

} // namespace

int Plan::stage_end(int chunk, int layer_count) const
{
  HETSIM_ASSERT(chunk >= 0 && chunk < static_cast<int>(stage_starts.size()));
  return chunk + 1 < static_cast<int>(stage_starts.size()) ? stage_starts[chunk + 1] : layer_count;
}

std::vector<int> Plan::stage_chunks(int stage) const
{
  std::vector<int> chunks;
  for (int c = 0; c < virtual_stages; ++c)
    chunks.push_back(c * pp + stage);
  return chunks;
}

std::vector<std::pair<int, int>> Plan::stage_ranges(int stage, int layer_count) const
{
  std::vector<std::pair<int, int>> ranges;
  for (int chunk : stage_chunks(stage))
    ranges.emplace_back(stage_starts[chunk], stage_end(chunk, layer_count));
  return ranges;
}

long long Plan::global_batch() const
{
  long long total = 0;
  for (std::size_t r = 0; r < micro_batch.size() && r < grad_accum.size(); ++r)
    total += static_cast<long long>(micro_batch[r]) * grad_accum[r];
  for (std::size_t r = 0; r < last_micro_batch.size() && r < micro_batch.size(); ++r)
    total -= micro_batch[r] - last_micro_batch[r];
  return total / cp;
}

int Plan::micro_batch_samples(int replica, int m) const
{
  if (!last_micro_batch.empty() && m + 1 == grad_accum[replica])
    return last_micro_batch[replica];
  return micro_batch[replica];
}

double Plan::gradient_reduction_bytes() const
{
  return reduces_in_fp32(framework, dtype) ? 4 : dtype_bytes(dtype);
}

double Plan::gradient_bucket_bytes() const
{
  if (bucket_bytes > 0)
    return bucket_bytes;
  if (framework.bucket_params > 0)
    return framework.bucket_params * gradient_reduction_bytes();
  return 25.0 * (1 << 20);
}

double Plan::sharded_fraction(int layer) const
{
  if (dp <= 1)
    return 0;
  if (!layer_sharding.empty())
    return layer_sharding[layer].fraction();
  return zero_stage == 3 ? 1 : 0;
}

bool Plan::shards_layers() const
{
  if (dp <= 1)
    return false;
  for (const LayerSharding& s : layer_sharding)
    if (s.sharded > 0)
      return true;
  return false;
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
