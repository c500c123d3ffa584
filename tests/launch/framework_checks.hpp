#pragma once
/// What the pinned frameworks would say of an export, from their own code: Megatron-LM core_v0.13.0's argument
/// parser, validate_args and config classes; DeepSpeed v0.17.4's configuration readers and engine checks. Each
/// check names the framework's file and line. The option lists are read from tests/data/frameworks/ (written
/// by scripts/framework_option_lists.py from the frameworks' trees).

#include "launch/megatron_args.hpp"
#include "launch/plan_export.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace hetsim::launch::testing {

/// A Megatron-LM launch: its arguments, the processes torchrun starts, and CUDA_DEVICE_MAX_CONNECTIONS=1.
struct MegatronLaunch {
  std::vector<Argument> args;
  int world_size           = 0;
  bool one_cuda_connection = false;
};

/// Megatron-LM's objections, one message each (empty: it parses and validates): an option its parser does
/// not define, a value not of its type or choices, an option given twice, and the combinations
/// validate_args, TransformerConfig, ModelParallelConfig, the pipeline layout and the micro-batch calculator
/// reject.
std::vector<std::string> megatron_objections(const MegatronLaunch& launch);

/// Megatron-DeepSpeed's objections (commit 4efb479d), one message each: an option neither its parser nor
/// DeepSpeed's add_config_arguments defines, a value not of its type or choices, an option given twice, and the
/// combinations its validate_args, microbatch calculator and model code reject.
std::vector<std::string> megatron_deepspeed_objections(const MegatronLaunch& launch);

/// DeepSpeed's objections to a configuration run on `world_size` processes, `pipeline_stages` x
/// `tensor_parallel` of them per replica: a key or section it does not read, a value not of the type its reader
/// takes, and the checks of its config and engines (batch arithmetic, one precision, ZeRO under a pipeline).
std::vector<std::string> deepspeed_objections(const nlohmann::json& config, int world_size, int pipeline_stages,
                                              int tensor_parallel = 1);

/// `args` with `change` applied, one field at a time: a flag not there is added, a value "-" drops its flag, any
/// other value replaces the flag's.
std::vector<Argument> changed(std::vector<Argument> args, const std::vector<Argument>& change);

/// The arguments of an exported megatron_args.sh (`MEGATRON_ARGS=( --flag value ... )`), and whether it sets
/// CUDA_DEVICE_MAX_CONNECTIONS=1.
MegatronLaunch read_megatron_args_sh(const std::string& text, int world_size);

/// The stages of a pipeline layout ("Et*3|t*4,L") as Megatron-Core reads it: each stage's layer letters, "t*n"
/// expanded, commas dropped.
std::vector<std::string> layout_stages(const std::string& layout);

/// The export's megatron_args.sh as Megatron-LM reads it: each objection a failed doctest check (a test that
/// calls this needs doctest), the arguments by flag.
std::map<std::string, std::string> launched_megatron(const ExportInputs& inputs);

/// The export's megatron_deepspeed_args.sh and ds_config.json as Megatron-DeepSpeed and DeepSpeed read them: each
/// objection a failed doctest check, the arguments by flag.
std::map<std::string, std::string> launched_megatron_deepspeed(const ExportInputs& inputs);

} // namespace hetsim::launch::testing
