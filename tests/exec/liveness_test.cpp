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
