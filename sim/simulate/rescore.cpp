#include "sim/simulate/rescore.hpp"

#include "core/sanitizers.hpp"

#include "strategies/lowering/lower.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

namespace hetsim::sim {

Rescored rescore(const std::vector<strategies::Candidate>& candidates, int count, const strategies::Problem& problem,
                 const SimOptions& options, const strategies::ProgressFn& progress)
{
  Rescored result;
  for (int i = 0; i < static_cast<int>(candidates.size()) && static_cast<int>(result.index.size()) < count; ++i)
    if (candidates[i].fits())
      result.index.push_back(i);
  result.reports.resize(result.index.size());

  SimOptions quiet = options;
  quiet.trace      = false;
  // Every simulation runs in its own child process (isolate.hpp), so they can run side by side: one worker
  // thread per core lowers a plan and waits for its child. Results land by position, so the order stays fixed.
  std::atomic<std::size_t> next{0};
  std::mutex mutex;
  std::size_t done = 0;
  std::exception_ptr failure;
  std::vector<std::string> too_large(result.index.size()); // why, by position; empty when simulated
  auto worker = [&] {
    for (std::size_t k = next++; k < result.index.size(); k = next++) {
      try {
        const auto& plan                    = candidates[result.index[k]].plan;
        const strategies::Schedule schedule = strategies::lower_for_replay(plan, problem, options.exact);
        Report report                       = simulate(plan, problem, schedule, quiet).report;
        std::lock_guard lock(mutex);
        result.reports[k] = std::move(report);
        if (progress)
          progress("simulating the best candidates", static_cast<long long>(++done),
                   static_cast<long long>(result.index.size()));
      } catch (const strategies::TooManyTasks& e) {
        std::lock_guard lock(mutex);
        too_large[k] = e.what();
      } catch (...) {
        std::lock_guard lock(mutex);
        if (!failure)
          failure = std::current_exception();
      }
    }
  };
  // Each simulate() forks. ASan's allocator in GCC 12's libasan takes no lock around fork() (upstream LLVM added
  // one in PR #75290), so a child forked while another thread refills an allocator size class inherits the
  // class's mutex held and hangs at its first allocation from it. Under ASan, fork from one thread only.
  const std::size_t threads =
      kAddressSanitizer ? 1
                        : std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1,
                                                  std::max<std::size_t>(1, result.index.size()));
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t)
    pool.emplace_back(worker);
  worker();
  for (auto& thread : pool)
    thread.join();
  if (failure)
    std::rethrow_exception(failure);
  Rescored kept;
  for (std::size_t k = 0; k < result.index.size(); ++k)
    if (too_large[k].empty()) {
      kept.index.push_back(result.index[k]);
      kept.reports.push_back(std::move(result.reports[k]));
    } else {
      kept.too_large.emplace_back(result.index[k], std::move(too_large[k]));
    }
  return kept;
}

} // namespace hetsim::sim
