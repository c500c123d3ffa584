/// Pipeline timing (costmodel::pipeline_finish_seconds) over the schedules' step orders (pass_order): bubbles,
/// steady states bound by a stage, by a round trip or by a link.

#include "costmodel/pipeline.hpp"
#include "strategies/lowering/pass_order.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>

using namespace hetsim::costmodel;

namespace {

/// Every stage's steps under GPipe or 1F1B, as the lowering issues them.
std::vector<std::vector<PipelineStep>> orders(int stages, int micro_batches, bool one_f_one_b)
{
  std::vector<std::vector<PipelineStep>> result;
  for (int s = 0; s < stages; ++s)
    result.push_back(hetsim::strategies::pass_order(
        one_f_one_b ? hetsim::strategies::PipelineSchedule::one_f_one_b : hetsim::strategies::PipelineSchedule::gpipe,
        stages, s, micro_batches));
  return result;
}

PipelineDurations uniform(int stages, double forward, double backward, double transfer)
{
  PipelineDurations durations;
  durations.step_seconds        = [=](int, const PipelineStep& step) { return step.backward ? backward : forward; };
  durations.forward_transfer_s  = std::vector<double>(stages - 1, transfer);
  durations.backward_transfer_s = std::vector<double>(stages - 1, transfer);
  return durations;
}

} // namespace

TEST_CASE("without transfers GPipe and 1F1B take (m + p - 1) steps of forward plus backward")
{
  for (bool one_f_one_b : {false, true})
    for (int stages : {1, 2, 4})
      for (int micro_batches : {1, 3, 8}) {
        CAPTURE(one_f_one_b);
        CAPTURE(stages);
        CAPTURE(micro_batches);
        const auto finish = pipeline_finish_seconds(orders(stages, micro_batches, one_f_one_b),
                                                    uniform(stages, 1, 2, 0));
        REQUIRE(finish.size() == static_cast<std::size_t>(stages));
        CHECK(finish.front() == doctest::Approx((micro_batches + stages - 1) * 3.0)); // the first stage ends last
        // The last stage ends one backward per stage before the first.
        CHECK(finish.back() == doctest::Approx(finish.front() - (stages - 1) * 2.0));
      }
}

TEST_CASE("1F1B with transfers: every micro-batch pays one round trip over a boundary")
{
  // Two stages: stage 0's forward m+2 waits for its backward m, which waits for stage 1's forward and backward
  // of m and both transfers: two micro-batches take 2 (f + b) + 2 T, not 2 max(f + b, T).
  const double f = 1, b = 2, t = 0.5;
  const auto at = [&](int m) { return pipeline_finish_seconds(orders(2, m, true), uniform(2, f, b, t)).front(); };
  CHECK(at(102) - at(100) == doctest::Approx(2 * (f + b + t)));
}

TEST_CASE("transfers over one boundary queue: a slow link paces the pipeline")
{
  // GPipe over 2 stages, each transfer 3 s against 1 s of compute: stage 1 gets a forward input every 3 s
  // (F9 at 31 s), runs its backwards from 32 s to 42 s, and stage 0 gets their gradients every 3 s from 36 s.
  const auto finish = pipeline_finish_seconds(orders(2, 10, false), uniform(2, 1, 1, 3));
  CHECK(finish[1] == doctest::Approx(42));
  CHECK(finish[0] == doctest::Approx(64));
}

TEST_CASE("a slower stage sets the steady state; step durations may depend on the micro-batch")
{
  PipelineDurations durations = uniform(3, 1, 2, 0);
  durations.step_seconds      = [](int s, const PipelineStep& step) {
    const double scale = s == 1 ? 2.0 : 1.0;            // stage 1 is twice as slow
    const double last  = step.micro_batch == 7 ? 0.5 : 1; // a smaller last micro-batch
    return scale * last * (step.backward ? 2.0 : 1.0);
  };
  const auto slow = pipeline_finish_seconds(orders(3, 8, true), durations);
  const auto fast = pipeline_finish_seconds(orders(3, 8, true), uniform(3, 1, 2, 0));
  // Eight micro-batches at stage 1's 6 s (the last one 3 s), plus at least the other stages' fill.
  CHECK(slow.front() >= 7 * 6.0 + 3.0 + 2 * 1.5);
  CHECK(slow.front() > fast.front() * 1.5);
}

TEST_CASE("blocking sends hold the sending stage until the transfer is done")
{
  // One micro-batch over two stages, 3 s transfers: stage 1's backward ends at 6 s and its gradient arrives at
  // 9 s; stage 0 runs its backward from 9 s to 10 s either way.
  PipelineDurations durations = uniform(2, 1, 1, 3);
  CHECK(pipeline_finish_seconds(orders(2, 1, true), durations) == std::vector<double>{10, 6});
  durations.sends_block = true;
  CHECK(pipeline_finish_seconds(orders(2, 1, true), durations) == std::vector<double>{10, 9});
  // With more micro-batches stage 0 cannot run its next forward before its last activation has arrived.
  const auto overlapped = pipeline_finish_seconds(orders(2, 4, false), uniform(2, 1, 1, 3));
  const auto blocked    = pipeline_finish_seconds(orders(2, 4, false), durations);
  CHECK(blocked.front() > overlapped.front());
}

namespace {

/// Interleaved 1F1B over `stages` stages of `chunks` chunks each, every chunk a 1/chunks share of its stage;
/// micro-batches in groups of `group` (0: stages).
std::vector<std::vector<PipelineStep>> interleaved(int stages, int micro_batches, int chunks, int group = 0)
{
  std::vector<std::vector<PipelineStep>> result;
  for (int s = 0; s < stages; ++s)
    result.push_back(hetsim::strategies::pass_order(hetsim::strategies::PipelineSchedule::one_f_one_b, stages, s,
                                                    micro_batches, chunks, group));
  return result;
}

} // namespace

TEST_CASE("interleaved 1F1B: every micro-batch passes each chunk forward then backward once, in Megatron's order")
{
  const int stages = 4, chunks = 2, micro_batches = 8;
  const auto all   = interleaved(stages, micro_batches, chunks);
  for (int s = 0; s < stages; ++s) {
    CAPTURE(s);
    std::map<std::pair<int, int>, int> forward_at, backward_at;
    for (int i = 0; i < static_cast<int>(all[s].size()); ++i) {
      const PipelineStep& step = all[s][i];
      auto& seen               = step.backward ? backward_at : forward_at;
      CHECK(seen.emplace(std::pair{step.micro_batch, step.chunk}, i).second);
    }
    CHECK(forward_at.size() == static_cast<std::size_t>(micro_batches * chunks));
    CHECK(backward_at.size() == forward_at.size());
    for (const auto& [key, at] : backward_at)
      CHECK(forward_at.at(key) < at);
    // Warm-up: (p - s - 1) x 2 + (v - 1) x p forwards, then the first forward and backward of the steady state.
    int forwards = 0;
    while (!all[s][forwards].backward)
      ++forwards;
    CHECK(forwards == (stages - s - 1) * 2 + (chunks - 1) * stages + 1);
  }
  // Stage 0 goes through chunk 0 for micro-batches 0-3, then chunk 1 for the same, then chunk 0 for 4-7; its
  // backwards start from its last chunk.
  const std::vector<std::pair<int, int>> first_forwards = {{0, 0}, {1, 0}, {2, 0}, {3, 0}, {0, 1},
                                                           {1, 1}, {2, 1}, {3, 1}, {4, 0}, {5, 0}};
  for (std::size_t i = 0; i < first_forwards.size(); ++i)
    CHECK(std::pair{all[0][i].micro_batch, all[0][i].chunk} == first_forwards[i]);
  const PipelineStep first_backward = all[0][first_forwards.size() + 1];
  CHECK(first_backward.backward);
  CHECK(std::pair{first_backward.micro_batch, first_backward.chunk} == std::pair{0, 1});
}

TEST_CASE("interleaved 1F1B with micro-batches that are no multiple of the group: the last group holds the rest")
{
  // Megatron-Core's schedule table: 6 micro-batches in groups of 4 pass chunk 0 as 0-3, chunk 1 as 0-3, then
  // chunk 0 and chunk 1 for 4-5; a group of 5 takes 0-4, then 5 alone.
  for (int group : {4, 5}) {
    CAPTURE(group);
    const int stages = 4, chunks = 2, micro_batches = 6;
    const auto all   = interleaved(stages, micro_batches, chunks, group);
    for (int s = 0; s < stages; ++s) {
      std::map<std::pair<int, int>, int> forward_at, backward_at;
      for (int i = 0; i < static_cast<int>(all[s].size()); ++i)
        CHECK((all[s][i].backward ? backward_at : forward_at)
                  .emplace(std::pair{all[s][i].micro_batch, all[s][i].chunk}, i)
                  .second);
      CHECK(forward_at.size() == static_cast<std::size_t>(micro_batches * chunks));
      CHECK(backward_at.size() == forward_at.size());
    }
    std::vector<std::pair<int, int>> forwards;
    for (const PipelineStep& step : all[0])
      if (!step.backward)
        forwards.emplace_back(step.micro_batch, step.chunk);
    const std::vector<std::pair<int, int>> expected =
        group == 4 ? std::vector<std::pair<int, int>>{{0, 0}, {1, 0}, {2, 0}, {3, 0}, {0, 1}, {1, 1},
                                                      {2, 1}, {3, 1}, {4, 0}, {5, 0}, {4, 1}, {5, 1}}
                   : std::vector<std::pair<int, int>>{{0, 0}, {1, 0}, {2, 0}, {3, 0}, {4, 0}, {0, 1},
                                                      {1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 0}, {5, 1}};
    CHECK(forwards == expected);
    // The stages can run it together.
    PipelineDurations durations;
    durations.step_seconds        = [](int, const PipelineStep& step) { return step.backward ? 1.0 : 0.5; };
    durations.forward_transfer_s  = std::vector<double>(stages * chunks - 1, 0);
    durations.backward_transfer_s = durations.forward_transfer_s;
    const auto finish             = pipeline_finish_seconds(all, durations);
    CHECK(*std::max_element(finish.begin(), finish.end()) >= micro_batches * chunks * 1.5);
  }
}

TEST_CASE("interleaved 1F1B: the ramp shrinks by the chunks per stage, (m + (p - 1) / v) steps of a whole stage")
{
  // Narayanan et al., SC'21 §2.2.2: with v chunks the bubble is (p - 1) / v of a stage's forward and backward.
  for (int chunks : {1, 2, 4})
    for (int micro_batches : {4, 8, 16}) {
      CAPTURE(chunks);
      CAPTURE(micro_batches);
      const int stages = 4;
      PipelineDurations durations;
      const double forward = 1.0 / chunks, backward = 2.0 / chunks; // a whole stage: 1 + 2
      durations.step_seconds = [=](int, const PipelineStep& step) { return step.backward ? backward : forward; };
      durations.forward_transfer_s  = std::vector<double>(stages * chunks - 1, 0);
      durations.backward_transfer_s = durations.forward_transfer_s;
      const auto finish = pipeline_finish_seconds(interleaved(stages, micro_batches, chunks), durations);
      const double end  = *std::max_element(finish.begin(), finish.end());
      CHECK(end == doctest::Approx((micro_batches + (stages - 1.0) / chunks) * 3.0));
    }
}
