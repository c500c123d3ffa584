#include "launch/rank_map.hpp"

#include "export_fixture.hpp"
#include "launch/launch_scripts.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>

using namespace hetsim;
using namespace hetsim::launch;
using namespace hetsim::launch::testing;

namespace {

/// Every virtual rank once, on the host and GPU of the device the plan places it on.
void check_realises_placement(const Cluster& cluster, const strategies::Plan& plan, const RankMap& map)
{
  CHECK(map.world_size == plan.world_size());
  std::set<int> seen;
  for (const NodeProcesses& node : map.nodes) {
    REQUIRE(node.ranks.size() == node.gpus.size());
    CHECK(std::is_sorted(node.ranks.begin(), node.ranks.end())); // local ranks in rank order (srun's LOCALID)
    for (std::size_t l = 0; l < node.ranks.size(); ++l) {
      const Device& device = cluster.device(plan.placement[node.ranks[l]]);
      CHECK(seen.insert(node.ranks[l]).second);
      CHECK(cluster.nodes()[device.node].name == node.host);
      CHECK(device.local_rank == node.gpus[l]);
    }
  }
  CHECK(static_cast<int>(seen.size()) == plan.world_size());
  REQUIRE(!map.nodes.empty());
  CHECK(map.nodes[0].ranks[0] == 0); // node rank 0 hosts the master
}

} // namespace

TEST_CASE("the rank map is a bijection that runs every virtual rank on its planned device")
{
  ExportCase c(2, 4, 2);
  SUBCASE("Megatron's order: node k holds ranks 4k..4k+3 on GPUs 0-3")
  {
    const RankMap map = make_rank_map(c.cluster, c.plan);
    check_realises_placement(c.cluster, c.plan, map);
    REQUIRE(map.nodes.size() == 4);
    CHECK(map.nodes[2].ranks == std::vector<int>{8, 9, 10, 11});
    CHECK(map.nodes[2].gpus == std::vector<int>{0, 1, 2, 3});
  }
  SUBCASE("a device permutation (dtfm), across nodes and inside them")
  {
    std::mt19937 random(7);
    for (int trial = 0; trial < 20; ++trial) {
      std::shuffle(c.plan.placement.begin(), c.plan.placement.end(), random);
      check_realises_placement(c.cluster, c.plan, make_rank_map(c.cluster, c.plan));
    }
  }
}

TEST_CASE("torchrun scripts set each local process's rank and the node's GPU order from the map")
{
  ExportCase c(1, 2, 8);
  std::reverse(c.plan.placement.begin(), c.plan.placement.end()); // rank 0 on the last device of node3
  const RankMap map = make_rank_map(c.cluster, c.plan);
  const auto files  = torchrun_scripts(c.inputs(), map);
  const auto script = std::find_if(files.begin(), files.end(), [](const ExportFile& f) {
    return f.name == "launch_node0.sh";
  });
  REQUIRE(script != files.end());
  CHECK(script->executable);
  CHECK(map.nodes[0].host == "node3");
  CHECK(script->content.find("export CUDA_VISIBLE_DEVICES=3,2,1,0\n") != std::string::npos);
  CHECK(script->content.find("export HETSIM_RANKS=\"0 1 2 3\"\n") != std::string::npos);
  CHECK(script->content.find("--nnodes 4 --nproc_per_node 4 --node_rank 0") != std::string::npos);
}

TEST_CASE("slurm places task r on line r of the host list its job writes, on nodes it holds whole")
{
  ExportCase c(1, 2, 8);
  std::reverse(c.plan.placement.begin(), c.plan.placement.end());
  const auto files = slurm_scripts(c.inputs(), make_rank_map(c.cluster, c.plan));
  REQUIRE(files[0].name == "job.sbatch");
  const std::string& job = files[0].content;
  std::string expected = "<<'RANK_HOSTS'\n";
  for (int rank = 0; rank < 16; ++rank)
    expected += "node" + std::to_string(3 - rank / 4) + "\n";
  CHECK(job.find(expected + "RANK_HOSTS\n") != std::string::npos);
  CHECK(job.find("#SBATCH --exclusive\n") != std::string::npos);
  CHECK(job.find("#SBATCH --gpus-per-node=4\n") != std::string::npos);
  CHECK(job.find("--distribution=arbitrary") != std::string::npos);
  CHECK(job.find("node3) export CUDA_VISIBLE_DEVICES=3,2,1,0 ;;") != std::string::npos);
  CHECK(job.find("export MASTER_ADDR=node3\n") != std::string::npos); // rank 0's host
}

TEST_CASE("a node name that is no host name is refused, naming the cluster file")
{
  ExportCase c(1, 1, 16);
  Cluster odd("odd");
  const int gpu = odd.add_gpu(strategies::testing::v100());
  const int region = odd.add_region("dc", 1e-6);
  for (int n = 0; n < 4; ++n) {
    const int node = odd.add_node(region, n == 2 ? "node 2'" : "node" + std::to_string(n), Link{1e9, 1e-6},
                                  Link{1e9, 1e-6});
    for (int d = 0; d < 4; ++d)
      odd.add_device(node, gpu);
  }
  ExportInputs inputs = c.inputs();
  inputs.cluster      = &odd;
  CHECK_THROWS_WITH_AS(slurm_scripts(inputs, make_rank_map(odd, c.plan)),
                       doctest::Contains("expected a host name"), InputError);
}

TEST_CASE("slurm asks nodes of unequal size for all their GPUs as one total, not a per-node count they cannot share")
{
  // Two nodes of 4 GPUs and two of 8, the plan on all 24.
  Cluster uneven("uneven");
  const int gpu    = uneven.add_gpu(strategies::testing::v100());
  const int region = uneven.add_region("dc", 1e-6);
  for (int n = 0; n < 4; ++n) {
    const int node = uneven.add_node(region, "node" + std::to_string(n), Link{1e9, 1e-6}, Link{1e9, 1e-6});
    for (int d = 0; d < (n < 2 ? 4 : 8); ++d)
      uneven.add_device(node, gpu);
  }
  ExportCase c(1, 1, 16);
  c.cluster = uneven;
  c.plan    = strategies::testing::make_plan(c.cluster, c.workload, 1, 1, 24, 2, 4);
  const auto files = slurm_scripts(c.inputs(), make_rank_map(c.cluster, c.plan));
  const std::string& job = files[0].content;
  CHECK(job.find("#SBATCH --gpus=24\n") != std::string::npos);
  CHECK(job.find("--gpus-per-node") == std::string::npos);
}
