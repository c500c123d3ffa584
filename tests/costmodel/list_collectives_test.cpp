// torch.distributed's list collectives, as DeepSpeed's ZeRO-3 called them before 0.6
// (costmodel/list_collectives.hpp).

#include "costmodel/list_collectives.hpp"
#include "tests/costmodel/nccl_machine.hpp"

#include <doctest/doctest.h>

using namespace hetsim;
using namespace hetsim::costmodel;

TEST_CASE("a list gather issues one copy per rank after the synchronize, beside the fill and the call")
{
  const GpuSpec a100 = *find_catalog_gpu("A100-SXM4-80GB");
  const KernelConstants c = kernel_constants(a100);
  // 2 MB gathered over 384 ranks: 387 kernels at the measured 15.7 us each, then 6 MB through memory.
  const double gather = list_collective_seconds(a100, c, CollectiveOp::all_gather, 384, 2e6);
  CHECK(gather == doctest::Approx(387 * kCopyIssueSeconds + memory_seconds(a100, c, 6e6)));
  // A reduce-scatter copies its pieces in, without the fill, the synchronize or the own piece.
  const double scatter = list_collective_seconds(a100, c, CollectiveOp::reduce_scatter, 384, 2e6);
  CHECK(scatter == doctest::Approx(384 * kCopyIssueSeconds + memory_seconds(a100, c, 4e6)));
  // Twice the ranks, about twice the cost: what makes DeepSpeed 0.3's ZeRO-3 slow down as it scales out.
  CHECK(list_collective_seconds(a100, c, CollectiveOp::all_gather, 768, 2e6) / gather == doctest::Approx(2).epsilon(0.01));
  CHECK(list_collective_seconds(a100, c, CollectiveOp::all_reduce, 384, 2e6) == 0);
  CHECK(list_collective_seconds(a100, c, CollectiveOp::all_gather, 1, 2e6) == 0);
}

TEST_CASE("calls of a list collective over a group cost as much each, on the group's slowest GPU")
{
  const Cluster dgx = eight_gpu_nodes("A100-SXM4-80GB", 2, 300, IntraFabric::nvswitch, 1600);
  const GpuSpec& gpu = dgx.gpu_of(0);
  const double one   = list_collective_seconds(gpu, kernel_constants(gpu), CollectiveOp::all_gather, 16, 1e6);
  CHECK(list_calls_seconds(dgx, devices(16), CollectiveOp::all_gather, 4, 4e6) == doctest::Approx(4 * one));
  CHECK(list_calls_seconds(dgx, devices(16), CollectiveOp::all_gather, 0, 4e6) == 0);
}
