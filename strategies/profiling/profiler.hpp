#pragma once
/// Poplar's online profiling (Algorithm 1): what a device can hold and how fast it computes, found by running
/// steps on it. A Profiler runs the steps: CostModelProfiler asks the cost model, exec::ExecutorProfiler runs them
/// on an executor, RecordedProfiler (device_profiles.hpp) answers with what that measured. The search itself
/// (`profile_device`) is the same for all.

#include "costmodel/compute.hpp"
#include "strategies/plan/problem.hpp"

#include <string>
#include <vector>

namespace hetsim::strategies {

/// What a profiled step trains under: the ZeRO stage, and whether activations are recomputed in backward (what
/// a planner turns on when no stage holds one sequence without it). A stage alone means without recompute.
struct ProfileSetting {
  int zero_stage      = 0;
  Recompute recompute = Recompute::none;

  ProfileSetting(int stage = 0, Recompute rerun = Recompute::none) // NOLINT: implicit from a stage, on purpose
      : zero_stage(stage), recompute(rerun)
  {
  }
  ProfileSetting(bool) = delete;   // a lone bool is not a stage
  ProfileSetting(double) = delete; // nor is a number that is not an int
  /// "ZeRO-2", "ZeRO-2 with recompute", "ZeRO-2 with selective recompute".
  std::string text() const;
  bool operator==(const ProfileSetting&) const = default;
};

/// Memory allocated on one device around a forward of `batch` sequences (Algorithm 1, lines 3-6).
struct MemoryProbe {
  double before_bytes = 0; ///< before the forward: model states, buffers, workspace
  double after_bytes  = 0; ///< after it: the same plus the activations kept for backward
  double total_bytes  = 0; ///< what the device may use
};

/// One training step on one device: its computation time (Poplar subtracts the collectives' time from the
/// measured step, so that waiting for slower devices does not count), or out of memory.
struct StepResult {
  bool out_of_memory   = false;
  double step_seconds  = 0;
};

/// Runs probes on a device in data-parallel training under a given setting.
class Profiler {
public:
  virtual ~Profiler() = default;
  virtual MemoryProbe probe_memory(int device, int batch, ProfileSetting setting) = 0;
  virtual StepResult run_step(int device, int batch, ProfileSetting setting) = 0;
};

/// The plan a profiler measures: every device of the problem's cluster in one data-parallel group (what ZeRO
/// shards over), `batch` sequences each, one micro-batch.
Plan profiling_plan(const Problem& problem, int batch, ProfileSetting setting);

/// Devices of one GPU type are equal, so each type is profiled once, on its first device.
struct GpuTypes {
  std::vector<int> type_of_device; ///< device id -> index into representative
  std::vector<int> representative; ///< per type, in order of first appearance: the device profiled
};
GpuTypes gpu_types(const Cluster& cluster);

/// The cost model as a profiler: memory from the memory model of a plan that puts every device of the
/// problem's cluster in one data-parallel group, time from the compute model (forward + backward).
class CostModelProfiler final : public Profiler {
public:
  CostModelProfiler(const Problem& problem, costmodel::ComputeModel compute) : problem_(problem), compute_(compute) {}
  MemoryProbe probe_memory(int device, int batch, ProfileSetting setting) override;
  StepResult run_step(int device, int batch, ProfileSetting setting) override;

private:
  const Problem& problem_;
  costmodel::ComputeModel compute_;
};

struct ProfilePoint {
  int batch           = 0;
  double step_seconds = 0;
};

/// What profiling found on one device.
struct DeviceProfile {
  int max_batch = 0;                ///< `mbs`: the largest batch that runs; 0 when not even one sequence does
  std::vector<ProfilePoint> points; ///< successful steps, by batch
  int steps = 0;                    ///< steps run (probes of the memory not counted)
};

/// Algorithm 1 on one device: estimate `mbs` linearly from one forward of one sequence, run steps at
/// 1, 2, 4, ... up to that estimate (at most `batch_cap`) until one runs out of memory, then binary-search
/// between the last success and the first failure. O(log mbs) steps.
DeviceProfile profile_device(Profiler& profiler, int device, ProfileSetting setting, int batch_cap);

} // namespace hetsim::strategies
