/// The heartbeat files ranks keep in the rendezvous directory.

#include "exec/liveness.hpp"

#include "core/error.hpp"
#include "exec_fixtures.hpp"

#include <doctest/doctest.h>

using namespace hetsim;

TEST_CASE("liveness: a rendezvous directory that already holds this rank's files is another run's")
{
  test::ScratchDir dir("liveness");
  {
    exec::Liveness first(dir.path.string(), 1, 2);
    first.mark_done();
  }
  CHECK_NOTHROW(exec::Liveness(dir.path.string(), 0, 2)); // rank 0 has not been here
  CHECK_THROWS_WITH_AS(exec::Liveness(dir.path.string(), 1, 2),
                       doctest::Contains("already holds rank 1's files from another run"), InputError);
}

TEST_CASE("liveness: a rank killed before its first heartbeat is blamed by the launcher's reason, if it gives one")
{
  test::ScratchDir dir("liveness_blame");
  const exec::Liveness rank0(dir.path.string(), 0, 2); // rank 1 never writes a heartbeat
  // Without the launcher's word, rank 1 never started: said once the grace period is over.
  CHECK(rank0.blame(0.2) == "rank 1 never started");
  // The launcher saw it end (killed at start-up, as a race with its first heartbeat can leave it).
  exec::Liveness::abort_run(dir.path.string(), "rank 1 (pid 42) was killed by signal 9 (Killed)");
  CHECK(rank0.blame(60) == "the launcher ended the run: rank 1 (pid 42) was killed by signal 9 (Killed)");
}
