#pragma once
/// Where each framework's default for each FrameworkSettings field comes from: a line of the framework's own
/// code at the release HetSim's exports target (DeepSpeed v0.17.4, Megatron-LM core_v0.13.0, Megatron-DeepSpeed at
/// commit 4efb479d; PyTorch's DDP and
/// FSDP at the commits named below, the versions of those files the code index holds), or the measurement it was
/// taken from. tests/strategies/plan/framework_sources_test.cpp holds
/// every excerpt against those lines (tests/data/frameworks/) and every default against its excerpt.

#include "strategies/plan/framework.hpp"

#include <span>
#include <string_view>

namespace hetsim::strategies {

struct SettingSource {
  std::string_view setting; ///< the plan file's field ("bucket_params")
  Framework framework;
  /// kDeepSpeedRelease (or kDeepSpeedEarlierRelease), kMegatronRelease, kMegatronDeepSpeedRelease,
  /// kPyTorch*Release, kTorchtitanRelease or kMeasured
  std::string_view release;
  std::string_view file;    ///< in the release's tree (or the measurement's file in this repository)
  int line = 0;             ///< 1-based
  std::string_view excerpt; ///< words of that line
  std::string_view reading; ///< what the line means for the setting, and what else the behaviour depends on
};

inline constexpr std::string_view kDeepSpeedRelease = "DeepSpeed v0.17.4";
/// The release a line of DeepSpeed was read from where the v0.17.4 tree was not at hand (tests/data/frameworks).
inline constexpr std::string_view kDeepSpeedEarlierRelease = "DeepSpeed v0.16.5 (38327e0)";
inline constexpr std::string_view kMegatronRelease  = "Megatron-LM core_v0.13.0";
/// github.com/deepspeedai/Megatron-DeepSpeed at commit 4efb479d (2025-07-16; it tags no releases)
inline constexpr std::string_view kMegatronDeepSpeedRelease = "Megatron-DeepSpeed 4efb479d";
inline constexpr std::string_view kPyTorchDdpRelease  = "PyTorch 25562d3"; ///< torch/nn/parallel/distributed.py
inline constexpr std::string_view kPyTorchFsdpRelease = "PyTorch 005df1d"; ///< torch/distributed/fsdp/ (01caf79: _flat_param.py, acd8c9e: api.py)
/// github.com/pytorch/torchtitan at commit 9dec370 (2024-12-26), the commit of its Llama 3 H100 benchmarks
/// (benchmarks/llama3_h100_202412_torchtitan.md)
inline constexpr std::string_view kTorchtitanRelease = "torchtitan 9dec370";
inline constexpr std::string_view kMeasured         = "HetSim tests/data";

/// Every (setting, framework) pair's source.
std::span<const SettingSource> framework_sources();

} // namespace hetsim::strategies
