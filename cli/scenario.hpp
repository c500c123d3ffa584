#pragma once
/// The three inputs of a simulation, loaded and checked together.

#include "core/cluster.hpp"
#include "costmodel/calibration.hpp"
#include "models/workload.hpp"
#include "strategies/lowering/schedule.hpp"
#include "strategies/plan/plan.hpp"
#include "strategies/plan/problem.hpp"

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

namespace hetsim::cli {

/// Where the inputs come from; all empty means the built-in default scenario.
struct ScenarioOptions {
  std::string cluster;
  std::string model;
  std::string plan;
  std::string memory_limit; ///< a size with a unit; empty: each device's own memory
  std::string workspace;    ///< a size with a unit; empty: the framework's own figures
  int seq_len = 0;          ///< --seq-len: tokens per sequence instead of the model file's; 0: the file's

  void add_to(CLI::App& command);
  /// The inputs as given, for checks that outputs do not overwrite them.
  std::vector<std::string> inputs() const { return {cluster, model, plan}; }
};

/// The default scenario: GPT-3 1.3B on case5_worldwide_geo, 8-stage 1F1B x 8-way data parallel.
inline constexpr const char* kDefaultCluster = "preset:case5_worldwide_geo";
inline constexpr const char* kDefaultModel   = "preset:gpt3-1.3b";
inline constexpr const char* kDefaultPlan    = "preset:gpt3-1.3b-case5";

struct Scenario {
  Cluster cluster;
  models::Workload workload;
  strategies::Plan plan;
  strategies::Problem problem; ///< points into this object: do not copy a Scenario
  Scenario() = default;
  Scenario(const Scenario&) = delete;
  Scenario& operator=(const Scenario&) = delete;
};

/// `--memory-limit SIZE` and `--workspace SIZE` (sizes with a unit, core/byte_size.hpp), the same in every
/// command that checks memory; apply_memory_options sets them on a Problem.
void add_memory_options(CLI::App& command, std::string& memory_limit, std::string& workspace);
void apply_memory_options(const std::string& memory_limit, const std::string& workspace,
                          strategies::Problem& problem);

/// `--seq-len N`: the sequence length to train at, over the model file's.
void add_seq_len_option(CLI::App& command, int& seq_len);
/// The model of `file` (at `seq_len` tokens when positive), printing on stderr, one "hetsim: note:" line each,
/// what its file left unsaid and HetSim assumed.
models::Workload load_model(const std::string& file, int seq_len);

/// `--framework NAME [--autocast]`: sets the framework's settings on `problem` and returns `given` as that
/// framework runs it (Megatron's fused kernels, or DeepSpeed's and FSDP's eager modules, under torch.autocast
/// with `autocast`); an unknown name, or autocast without eager modules, is an InputError. `problem.dtype` must
/// be chosen first.
models::Workload apply_framework(const std::string& name, bool autocast, const models::Workload& given,
                                 strategies::Problem& problem);
/// `--autocast` for apply_framework.
void add_autocast_flag(CLI::App& command, bool& autocast);

/// Fills in the default scenario when no input is given; a partial set is an InputError.
void resolve_defaults(ScenarioOptions& options);
void load_scenario(const ScenarioOptions& options, Scenario& scenario);
/// Replaces the cluster's links by the calibration's fitted link classes (compute efficiencies are applied by
/// whoever times compute, from the same Calibration).
void apply_link_calibration(Scenario& scenario, const costmodel::Calibration& calibration);

/// A measured run's scenario (the cluster, the model and the plan it ran; links calibrated when given) and the
/// Schedule it executed: lowered, then scaled by the run's `--scale`, so that a replay does exactly its work.
struct MeasuredRun {
  std::unique_ptr<Scenario> scenario;
  strategies::Schedule schedule;
};
MeasuredRun load_measured_run(const std::string& cluster, const std::string& model, const std::string& plan,
                              double scale, const costmodel::Calibration* calibration = nullptr);

/// How sure calibrated figures of `plan` are, one line each: per GPU type it uses, the error its calibrating
/// traces left and whether its micro-batches stay inside the tokens they covered.
std::vector<std::string> calibration_confidence(const costmodel::Calibration& calibration,
                                                const strategies::Plan& plan, const Cluster& cluster,
                                                const models::Workload& workload);
/// Those lines on stdout, each after "calibration: ".
void print_calibration_confidence(const std::vector<std::string>& lines);

/// Which of `cluster`'s GPU types the calibration in `file` fitted compute constants for: a warning on stderr
/// when it fitted some and none is in the cluster (its links still apply), a line on stdout naming those left
/// uncalibrated when some are. Returns the cluster's GPU names it calibrates.
std::vector<std::string> report_calibration_match(const costmodel::Calibration& calibration, const std::string& file,
                                                  const Cluster& cluster);

/// On stderr, one "hetsim: note:" line per GPU type that runs another attention kernel than the model asks for,
/// or one whose speed there is unmeasured (costmodel::attention_notes).
void print_attention_notes(const models::Workload& workload, const Cluster& cluster);

} // namespace hetsim::cli
