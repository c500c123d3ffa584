#include "launch/launch_scripts.hpp"

#include "core/error.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <limits>

namespace hetsim::launch {
namespace {

std::string joined(const std::vector<int>& values, char separator)
{
  std::string text;
  for (std::size_t i = 0; i < values.size(); ++i)
    text += (i ? std::string(1, separator) : "") + std::to_string(values[i]);
  return text;
}

/// virtual rank -> {host, node_rank, local_rank, gpu, device}, for people and tools.
ExportFile rank_map_file(const ExportInputs& inputs, const RankMap& map)
{
  nlohmann::json ranks = nlohmann::json::array();
  std::vector<nlohmann::json> by_rank(map.world_size);
  for (std::size_t k = 0; k < map.nodes.size(); ++k)
    for (std::size_t l = 0; l < map.nodes[k].ranks.size(); ++l)
      by_rank[map.nodes[k].ranks[l]] = {{"rank", map.nodes[k].ranks[l]},
                                        {"host", map.nodes[k].host},
                                        {"node_rank", k},
                                        {"local_rank", l},
                                        {"gpu", map.nodes[k].gpus[l]},
                                        {"device", inputs.plan->placement[map.nodes[k].ranks[l]]}};
  for (auto& entry : by_rank)
    ranks.push_back(std::move(entry));
  return {"rank_map.json", nlohmann::json{{"world_size", map.world_size}, {"ranks", ranks}}.dump(1) + "\n", false};
}

// torchrun's options in their underscore spelling, which torch 1.x and 2.x both accept (2.0 added dashes).

/// Sets the plan's rank for the process at LOCAL_RANK (HETSIM_RANKS lists them by local rank), then runs the
/// training command. The node's CUDA_VISIBLE_DEVICES already orders its GPUs by local rank, and every process
/// sees all of them, so NCCL keeps its peer-to-peer paths.
ExportFile rank_env_script()
{
  return {"rank_env.sh",
          "#!/usr/bin/env bash\n"
          "# Runs the training command as the plan's rank for this local process (hetsim export).\n"
          "set -euo pipefail\n"
          "read -r -a ranks <<< \"$HETSIM_RANKS\"\n"
          "export RANK=${ranks[$LOCAL_RANK]}\n"
          "exec \"$@\"\n",
          true};
}

std::string header(const ExportInputs& inputs)
{
  return "# hetsim export: " + quote(inputs.workload->name) + " on " + quote(inputs.cluster->name()) + ", plan " +
         quote(inputs.plan_origin) + " (tp " + std::to_string(inputs.plan->tp) +
         (inputs.plan->cp > 1 ? " x cp " + std::to_string(inputs.plan->cp) : "") + " x pp " +
         std::to_string(inputs.plan->pp) + " x dp " + std::to_string(inputs.plan->replicas()) + ")\n";
}

/// What every process of the job gets whatever the launcher: GPU indices as the cluster file counts them (PCI
/// order, not CUDA's fastest-first), and the plan's collective algorithm.
std::string launch_environment(const ExportInputs& inputs)
{
  std::string text = "export CUDA_DEVICE_ORDER=PCI_BUS_ID\n";
  switch (inputs.plan->collective_algorithm) {
    case strategies::CollectiveAlgorithm::ring:
      return text + "export NCCL_ALGO=Ring\n";
    case strategies::CollectiveAlgorithm::tree:
      return text + "export NCCL_ALGO=Tree\n";
    case strategies::CollectiveAlgorithm::nccl: {
      const costmodel::NcclEnvironment& nccl = inputs.plan->nccl;
      text += "# collective_algorithm nccl: NCCL picks its algorithm and protocol per call\n";
      // The lists hold only NCCL's names, ',', ';', ':' and '^' (checked when the plan was read): single quotes do.
      if (!nccl.algorithms.empty())
        text += "export NCCL_ALGO='" + nccl.algorithms + "'\n";
      if (!nccl.protocols.empty())
        text += "export NCCL_PROTO='" + nccl.protocols + "'\n";
      if (nccl.min_channels > 0)
        text += "export NCCL_MIN_NCHANNELS=" + std::to_string(nccl.min_channels) + "\n";
      if (nccl.max_channels > 0)
        text += "export NCCL_MAX_NCHANNELS=" + std::to_string(nccl.max_channels) + "\n";
      if (nccl.buffer_bytes > 0)
        text += "export NCCL_BUFFSIZE=" + std::to_string(nccl.buffer_bytes) + "\n";
      return text;
    }
    case strategies::CollectiveAlgorithm::hierarchical:
      break;
  }
  return text + "# collective_algorithm hierarchical: NCCL has no such choice; it picks rings or trees itself\n";
}

ExportFile hostfile(const RankMap& map)
{
  std::string text;
  for (const NodeProcesses& node : map.nodes)
    text += node.host + " slots=" + std::to_string(node.ranks.size()) + "\n";
  return {"hostfile", text, false};
}

/// Node names become host names in scripts and hostfiles: letters, digits, '.', '_' and '-' only.
void check_host_names(const ExportInputs& inputs, const RankMap& map)
{
  for (const NodeProcesses& node : map.nodes) {
    const bool hostname = !node.host.empty() && std::all_of(node.host.begin(), node.host.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    });
    if (!hostname)
      throw InputError(inputs.cluster_origin + ": node " + quote(node.host) +
                       ": expected a host name (letters, digits, '.', '_', '-') for the launch scripts");
  }
}

} // namespace

std::vector<ExportFile> torchrun_scripts(const ExportInputs& inputs, const RankMap& map)
{
  check_host_names(inputs, map);
  std::vector<ExportFile> files = {rank_env_script(), hostfile(map), rank_map_file(inputs, map)};
  const int nodes               = static_cast<int>(map.nodes.size());
  for (int k = 0; k < nodes; ++k) {
    const NodeProcesses& node = map.nodes[k];
    std::string script =
        "#!/usr/bin/env bash\n" + header(inputs) + "# Node rank " + std::to_string(k) + " of " + std::to_string(nodes) +
        ": run on " + node.host + " as\n#   launch_node" + std::to_string(k) +
        ".sh MASTER_ADDR [MASTER_PORT] -- TRAINING COMMAND...\n"
        "# where MASTER_ADDR is the address of " +
        map.nodes[0].host +
        " (node rank 0).\n"
        "set -euo pipefail\n"
        "usage() { echo \"usage: $0 MASTER_ADDR [MASTER_PORT] -- COMMAND...\" >&2; exit 2; }\n"
        "master_addr=${1:-}\n"
        "if [ -z \"$master_addr\" ] || [ \"$master_addr\" = \"--\" ]; then usage; fi\n"
        "shift\n"
        "master_port=29500\n"
        "if [ \"${1:-}\" != \"--\" ]; then master_port=${1:-}; shift || true; fi\n"
        "if ! [[ \"$master_port\" =~ ^[0-9]+$ ]] || [ \"${1:-}\" != \"--\" ]; then usage; fi\n"
        "shift\n" +
        launch_environment(inputs) +
        "# Local rank l runs the plan's rank HETSIM_RANKS[l] on GPU CUDA_VISIBLE_DEVICES[l].\n"
        "export CUDA_VISIBLE_DEVICES=" +
        joined(node.gpus, ',') +
        "\n"
        "export HETSIM_RANKS=\"" +
        joined(node.ranks, ' ') +
        "\"\n"
        "exec torchrun --nnodes " +
        std::to_string(nodes) + " --nproc_per_node " + std::to_string(node.ranks.size()) + " --node_rank " +
        std::to_string(k) +
        " --master_addr \"$master_addr\" --master_port \"$master_port\" \\\n"
        "  --no_python \"$(dirname \"$0\")/rank_env.sh\" \"$@\"\n";
    files.push_back({"launch_node" + std::to_string(k) + ".sh", script, true});
  }
  return files;
}

std::vector<ExportFile> slurm_scripts(const ExportInputs& inputs, const RankMap& map)
{
  check_host_names(inputs, map);
  // srun's arbitrary distribution places task r on line r of SLURM_HOSTFILE; SLURM_LOCALID then counts a
  // node's tasks in rank order, which is the map's local rank. The job writes that list itself: Slurm runs a
  // spooled copy of the script, away from the files beside it.
  std::string hosts, nodelist, gpu_cases;
  std::vector<std::string> by_rank(map.world_size);
  std::size_t most = 0, total = 0, fewest = std::numeric_limits<std::size_t>::max();
  for (const NodeProcesses& node : map.nodes) {
    for (int rank : node.ranks)
      by_rank[rank] = node.host;
    nodelist += (nodelist.empty() ? "" : ",") + node.host;
    gpu_cases += "  " + node.host + ") export CUDA_VISIBLE_DEVICES=" + joined(node.gpus, ',') + " ;;\n";
    const std::size_t on_node = inputs.cluster->nodes()[node.node].devices.size();
    most   = std::max(most, on_node);
    fewest = std::min(fewest, on_node);
    total += on_node;
  }
  // All of each node's GPUs (the plan names physical ones). Nodes of unequal size cannot share a per-node count,
  // which Slurm asks of every node: then the job's total, which the listed nodes can only meet with all of theirs.
  const std::string gpu_request = most == fewest ? "#SBATCH --gpus-per-node=" + std::to_string(most) + "\n"
                                                 : "#SBATCH --gpus=" + std::to_string(total) + "\n";
  for (const std::string& host : by_rank)
    hosts += host + "\n";
  const std::string job =
      "#!/usr/bin/env bash\n" + header(inputs) +
      "# Usage: sbatch job.sbatch TRAINING COMMAND...   (one task per rank, each on its planned host and GPU)\n"
      "#SBATCH --nodes=" +
      std::to_string(map.nodes.size()) +
      "\n"
      "#SBATCH --ntasks=" +
      std::to_string(map.world_size) +
      "\n"
      "#SBATCH --nodelist=" +
      nodelist +
      "\n"
      "#SBATCH --exclusive\n" + // every CPU of the node, whatever number of tasks the host list sends there
      gpu_request +
      "set -euo pipefail\n"
      "[ $# -gt 0 ] || { echo \"usage: sbatch job.sbatch COMMAND...\" >&2; exit 2; }\n"
      "rank_hosts=$(mktemp)\n"
      "trap 'rm -f \"$rank_hosts\"' EXIT\n"
      "cat > \"$rank_hosts\" <<'RANK_HOSTS'\n" +
      hosts +
      "RANK_HOSTS\n"
      "export SLURM_HOSTFILE=\"$rank_hosts\"\n"
      "export MASTER_ADDR=" +
      map.nodes[0].host +
      "\n"
      "export MASTER_PORT=${MASTER_PORT:-29500}\n"
      "export WORLD_SIZE=" +
      std::to_string(map.world_size) + "\n" + launch_environment(inputs) +
      "# shellcheck disable=SC2016  # the single-quoted script is expanded by each task's own shell\n"
      "srun --ntasks=" + std::to_string(map.world_size) +
      " --distribution=arbitrary --kill-on-bad-exit=1 bash -c '\n"
      "  export RANK=$SLURM_PROCID LOCAL_RANK=$SLURM_LOCALID\n"
      "  case $SLURMD_NODENAME in\n" +
      gpu_cases +
      "  *) echo \"hetsim export: $SLURMD_NODENAME is not a node of the plan\" >&2; exit 2 ;;\n"
      "  esac\n"
      "  exec \"$@\"' bash \"$@\"\n";
  return {{"job.sbatch", job, true}, hostfile(map), rank_map_file(inputs, map)};
}

} // namespace hetsim::launch
