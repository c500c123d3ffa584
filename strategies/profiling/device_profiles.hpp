#pragma once
/// Device profiles measured by running steps (`hetsim profile`: Poplar's online profiling through an executor):
/// per GPU type and setting (ZeRO stage, recompute), the largest batch that ran and the step times measured on
/// the way. The planners that profile (poplar, deepspeed, whale) read them through a RecordedProfiler instead of
/// asking the cost model.
///
/// File:
/// `{"model": "tiny4", "executor": "cpu", "scale": 0.5, "dtype": "fp16", "batch_limit": 1024, "profiles": [`
/// `{"gpu": "V100", "zero_stage": 0, "recompute": false, "memory_cap_bytes": 1.7e10, "max_batch": 37, "steps": 12,`
/// ` "points": [{"batch": 1, "step_s": 0.0012}, ...]}, ...]}`

#include "core/cluster.hpp"
#include "core/dtype.hpp"
#include "models/workload.hpp"
#include "strategies/profiling/profiler.hpp"
#include "strategies/profiling/speed_curve.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace hetsim::strategies {

/// What profiling found for one GPU type under one setting.
struct DeviceProfileEntry {
  std::string gpu; ///< the cluster's GPU name
  ProfileSetting setting; ///< "recompute" absent from the file: false
  double memory_cap_bytes = 0; ///< the cap the steps ran under
  DeviceProfile profile;
};

struct DeviceProfiles {
  std::string origin; ///< the file, for messages
  std::string model;  ///< the workload's name
  std::string executor;
  double scale    = 1; ///< the executor's --scale: hidden sizes were multiplied by it
  Dtype dtype     = Dtype::fp16;
  int batch_limit = 0; ///< the largest batch tried: a max_batch equal to it may be short of the memory's limit
  std::vector<DeviceProfileEntry> entries;

  /// Index of the entry of (gpu, setting), -1 when none.
  int find(const std::string& gpu, ProfileSetting setting) const;
};

nlohmann::json device_profiles_to_json(const DeviceProfiles& profiles);

/// Reads profiles for `workload` on `cluster`: the file's model must be the workload, every GPU type of the
/// cluster must have an entry (GPU names resolve like the cluster's), one entry per (gpu, zero_stage, recompute),
/// and each entry's points have increasing batches up to its max_batch. Errors name the file, the JSON path and what was
/// expected.
DeviceProfiles load_device_profiles(const std::string& file, const models::Workload& workload, const Cluster& cluster);

/// A Profiler that answers from profiles: a batch above the profiled max_batch runs out of memory, step times
/// follow the speed curve through the measured points (speed_curve.hpp). Memory is counted in sequences (one
/// forward holds one more, the device holds max_batch), so Algorithm 1's estimate is the profiled limit itself
/// and re-running it over the file costs no binary search.
class RecordedProfiler final : public Profiler {
public:
  /// Both must outlive the profiler.
  RecordedProfiler(const Cluster& cluster, const DeviceProfiles& profiles);
  MemoryProbe probe_memory(int device, int batch, ProfileSetting setting) override;
  StepResult run_step(int device, int batch, ProfileSetting setting) override;

private:
  /// The entry of the device's GPU under `setting`; InputError naming the file when it has none.
  int entry(int device, ProfileSetting setting) const;

  const Cluster& cluster_;
  const DeviceProfiles& profiles_;
  std::vector<std::optional<SpeedCurve>> curves_; ///< per entry; empty where max_batch is 0
};

} // namespace hetsim::strategies
