/// The host's pace under `--host-dispatch`: one dispatch per launch, the executor's own launch calls counted in it.

#include "exec/executor.hpp"

#include <doctest/doctest.h>

#include <chrono>

using namespace hetsim;
using std::chrono::microseconds;

TEST_CASE("a kernel is issued one dispatch after the previous one, or at once when the host is already later")
{
  const exec::HostPacer::Time start{};
  // The launch call took 5 us of a 28 us dispatch: the next kernel waits for the other 23.
  CHECK(exec::HostPacer::next_issue(start, start + microseconds(5), 28e-6) == start + microseconds(28));
  // A kernel standing for three launches waits three dispatches.
  CHECK(exec::HostPacer::next_issue(start, start + microseconds(5), 3 * 28e-6) == start + microseconds(84));
  // The launch call took longer than the dispatch: nothing is added on top of it.
  CHECK(exec::HostPacer::next_issue(start, start + microseconds(40), 28e-6) == start + microseconds(40));
}

TEST_CASE("a paced task keeps the host busy for at least its kernels' dispatch")
{
  exec::HostPacer pacer(200e-6);
  const auto begun = std::chrono::steady_clock::now();
  pacer.begin_task();
  for (int kernel = 0; kernel < 10; ++kernel)
    pacer.before_kernel(kernel % 2 ? 2 : 1); // 15 launches in all
  CHECK(std::chrono::steady_clock::now() - begun >= microseconds(15 * 200));
  exec::HostPacer none(0); // --host-dispatch not given: kernels go back to back
  none.begin_task();
  none.before_kernel(1e6);
}
