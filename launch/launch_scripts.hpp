#pragma once
/// Launch scripts that run every virtual rank of a plan on the device the plan places it on: one torchrun line
/// per node, or one Slurm job whose srun places each task by a hostfile in rank order. Both take the training
/// command as their arguments and set RANK, WORLD_SIZE, LOCAL_RANK and the node's GPU order for it.

#include "launch/plan_export.hpp"
#include "launch/rank_map.hpp"

#include <vector>

namespace hetsim::launch {

/// launch_node<k>.sh per node, rank_env.sh, hostfile and rank_map.json.
std::vector<ExportFile> torchrun_scripts(const ExportInputs& inputs, const RankMap& map);
/// job.sbatch (which writes srun's host list, one host per rank in rank order), hostfile and rank_map.json.
std::vector<ExportFile> slurm_scripts(const ExportInputs& inputs, const RankMap& map);

} // namespace hetsim::launch
