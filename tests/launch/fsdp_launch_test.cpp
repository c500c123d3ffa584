#include "launch/fsdp_launch.hpp"

#include "core/error.hpp"
#include "export_fixture.hpp"

#include <doctest/doctest.h>

using namespace hetsim;
using namespace hetsim::launch;
using namespace hetsim::launch::testing;

namespace {

ExportCase fsdp_case(int tp, int pp, int dp)
{
  ExportCase c(tp, pp, dp);
  c.plan.framework = strategies::framework_defaults(strategies::Framework::fsdp);
  return c;
}

} // namespace

TEST_CASE("an FSDP plan launches through torchrun and Slurm when FSDP runs it: sharded data parallelism only")
{
  ExportCase full      = fsdp_case(1, 1, 16);
  full.plan.zero_stage = 3; // FULL_SHARD
  CHECK_NOTHROW(check_fsdp_runnable(full.inputs()));
  CHECK_FALSE(export_plan(full.inputs(), ExportFormat::torchrun).empty());
  full.plan.zero_stage = 2; // SHARD_GRAD_OP
  CHECK_NOTHROW(check_fsdp_runnable(full.inputs()));

  SUBCASE("ZeRO-1: no sharding strategy shards the optimizer states alone")
  {
    full.plan.zero_stage = 1;
    CHECK_THROWS_WITH_AS(export_plan(full.inputs(), ExportFormat::slurm), doctest::Contains("best.json: zero_stage: 1"),
                         InputError);
  }
  SUBCASE("model parallelism needs a rewritten model")
  {
    CHECK_THROWS_WITH_AS(check_fsdp_runnable(fsdp_case(2, 1, 8).inputs()), doctest::Contains("best.json: tp: 2"),
                         InputError);
    CHECK_THROWS_WITH_AS(export_plan(fsdp_case(1, 2, 8).inputs(), ExportFormat::torchrun),
                         doctest::Contains("best.json: pp: 2"), InputError);
    // Where to find a plan FSDP runs: the planners that shard data parallelism (a model too large for ZeRO-0 on
    // every GPU leaves the others with pipelines only).
    CHECK_THROWS_WITH_AS(check_fsdp_runnable(fsdp_case(1, 2, 8).inputs()),
                         doctest::Contains("search with --planner zero3 or deepspeed"), InputError);
    ExportCase context = fsdp_case(1, 1, 16);
    context.plan.cp    = 2;
    CHECK_THROWS_WITH_AS(check_fsdp_runnable(context.inputs()), doctest::Contains("best.json: cp: 2"), InputError);
  }
  SUBCASE("a plan simulated as another framework is that framework's to launch")
  {
    ExportCase megatron(2, 1, 8);
    CHECK_THROWS_WITH_AS(check_fsdp_runnable(megatron.inputs()), doctest::Contains("best.json: framework: megatron"),
                         InputError);
    CHECK_NOTHROW(export_plan(megatron.inputs(), ExportFormat::torchrun)); // runs Megatron-LM's own command
  }
}
