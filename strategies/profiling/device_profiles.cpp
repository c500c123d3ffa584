#include "strategies/profiling/device_profiles.hpp"

#include "core/cluster_json.hpp"
#include "core/error.hpp"
#include "core/json_input.hpp"

namespace hetsim::strategies {

int DeviceProfiles::find(const std::string& gpu, ProfileSetting setting) const
{
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (entries[i].gpu == gpu && entries[i].setting == setting)
      return static_cast<int>(i);
  return -1;
}

nlohmann::json device_profiles_to_json(const DeviceProfiles& profiles)
{
  nlohmann::json out;
  out["model"]       = profiles.model;
  out["executor"]    = profiles.executor;
  out["scale"]       = profiles.scale;
  out["dtype"]       = dtype_name(profiles.dtype);
  out["batch_limit"] = profiles.batch_limit;
  out["profiles"]    = nlohmann::json::array();
  for (const DeviceProfileEntry& e : profiles.entries) {
    nlohmann::json points = nlohmann::json::array();
    for (const ProfilePoint& p : e.profile.points)
      points.push_back({{"batch", p.batch}, {"step_s", p.step_seconds}});
    out["profiles"].push_back({{"gpu", e.gpu},
                               {"zero_stage", e.setting.zero_stage},
                               {"recompute", e.setting.recompute == Recompute::selective
                                                 ? nlohmann::json("selective")
                                                 : nlohmann::json(e.setting.recompute == Recompute::full)},
                               {"memory_cap_bytes", e.memory_cap_bytes},
                               {"max_batch", e.profile.max_batch},
                               {"steps", e.profile.steps},
                               {"points", std::move(points)}});
  }
  return out;
}

namespace {

/// Points with increasing batches, none above `max_batch`, at least one when a sequence fits.
std::vector<ProfilePoint> read_points(const JsonInput& list, int max_batch)
{
  if (!list.is_array())
    list.fail("an array of {\"batch\", \"step_s\"} points");
  if (max_batch > 0 && list.size() == 0)
    list.fail("at least one point (max_batch is " + std::to_string(max_batch) + ")");
  std::vector<ProfilePoint> points;
  for (const auto& input : list.elements()) {
    input.allow_only({"batch", "step_s"});
    const JsonInput batch = input.at("batch");
    ProfilePoint point{batch.positive_int(), input.at("step_s").positive_number()};
    if (!points.empty() && point.batch <= points.back().batch)
      batch.fail("a batch above the previous point's " + std::to_string(points.back().batch) +
                 " (points in increasing batch order)");
    if (point.batch > max_batch)
      batch.fail("a batch of at most the entry's max_batch " + std::to_string(max_batch));
    points.push_back(point);
  }
  return points;
}

DeviceProfileEntry read_entry(const JsonInput& input, const Cluster& cluster, int batch_limit)
{
  input.allow_only({"gpu", "zero_stage", "recompute", "memory_cap_bytes", "max_batch", "steps", "points"});
  DeviceProfileEntry entry;
  entry.gpu                  = cluster_gpu_name(input.at("gpu"), cluster);
  const JsonInput stage      = input.at("zero_stage");
  entry.setting.zero_stage   = stage.non_negative_int();
  if (entry.setting.zero_stage > 3)
    stage.fail("a ZeRO stage from 0 to 3");
  // true, false or "selective"; absent in files from before recompute was profiled.
  if (auto recompute = input.find("recompute")) {
    if (recompute->value().is_string()) {
      if (recompute->string() != "selective")
        recompute->fail("true, false or \"selective\"");
      entry.setting.recompute = Recompute::selective;
    } else {
      entry.setting.recompute = recompute->boolean() ? Recompute::full : Recompute::none;
    }
  }
  entry.memory_cap_bytes    = input.at("memory_cap_bytes").positive_number();
  const JsonInput max_batch = input.at("max_batch");
  entry.profile.max_batch   = max_batch.non_negative_int();
  if (entry.profile.max_batch > batch_limit)
    max_batch.fail("at most the batch_limit " + std::to_string(batch_limit));
  entry.profile.steps  = input.at("steps").non_negative_int();
  entry.profile.points = read_points(input.at("points"), entry.profile.max_batch);
  return entry;
}

} // namespace

DeviceProfiles load_device_profiles(const std::string& file, const models::Workload& workload, const Cluster& cluster)
{
  const nlohmann::json json = JsonInput::parse_file(file);
  const JsonInput root(json, file);
  if (!root.is_object())
    root.fail("an object as `hetsim profile` writes it");
  root.allow_only({"model", "executor", "scale", "dtype", "batch_limit", "profiles"});
  DeviceProfiles profiles;
  profiles.origin       = file;
  const JsonInput model = root.at("model");
  profiles.model        = model.string();
  if (profiles.model != workload.name)
    model.fail("\"" + workload.name + "\", the model being planned (profiles of another model do not apply)");
  profiles.executor = root.string_or("executor", "");
  profiles.scale    = root.positive_number_or("scale", 1);
  if (const auto dtype = root.find("dtype"); dtype && !parse_dtype(dtype->string(), profiles.dtype))
    dtype->fail("fp16, bf16 or fp32");
  profiles.batch_limit = root.at("batch_limit").positive_int();

  const JsonInput list = root.at("profiles");
  if (!list.is_array() || list.size() == 0)
    list.fail("a non-empty array of profiles");
  for (const auto& input : list.elements()) {
    DeviceProfileEntry entry = read_entry(input, cluster, profiles.batch_limit);
    if (profiles.find(entry.gpu, entry.setting) >= 0)
      input.at("zero_stage")
          .fail("one entry per GPU and setting, not a second one for " + entry.gpu + " at " + entry.setting.text());
    profiles.entries.push_back(std::move(entry));
  }
  for (const int device : gpu_types(cluster).representative) {
    const std::string& gpu = cluster.gpu_of(device).name;
    bool found             = false;
    for (const DeviceProfileEntry& e : profiles.entries)
      found = found || e.gpu == gpu;
    if (!found)
      throw InputError(list.where() + ": expected an entry for every GPU type of cluster '" + cluster.name() +
                       "', got none for " + gpu);
  }
  return profiles;
}

RecordedProfiler::RecordedProfiler(const Cluster& cluster, const DeviceProfiles& profiles)
    : cluster_(cluster), profiles_(profiles)
{
  for (const DeviceProfileEntry& e : profiles.entries)
    curves_.push_back(e.profile.max_batch > 0 ? std::optional<SpeedCurve>(SpeedCurve(e.profile)) : std::nullopt);
}

int RecordedProfiler::entry(int device, ProfileSetting setting) const
{
  const std::string& gpu = cluster_.gpu_of(device).name;
  const int index        = profiles_.find(gpu, setting);
  if (index >= 0)
    return index;
  std::string settings;
  for (const DeviceProfileEntry& e : profiles_.entries)
    if (e.gpu == gpu)
      settings += (settings.empty() ? "" : ", ") + e.setting.text();
  throw InputError(profiles_.origin + ": profiles: expected an entry for " + gpu + " at " + setting.text() +
                   ", got " + settings +
                   " only (`hetsim profile --zero-stage all` profiles every stage, and with recompute where a GPU "
                   "holds no sequence without it)");
}

MemoryProbe RecordedProfiler::probe_memory(int device, int batch, ProfileSetting setting)
{
  const int max_batch = profiles_.entries[entry(device, setting)].profile.max_batch;
  return MemoryProbe{0, static_cast<double>(batch), static_cast<double>(max_batch)};
}

StepResult RecordedProfiler::run_step(int device, int batch, ProfileSetting setting)
{
  const int index = entry(device, setting);
  if (batch > profiles_.entries[index].profile.max_batch)
    return StepResult{true, 0};
  return StepResult{false, curves_[index]->step_seconds(batch)};
}

} // namespace hetsim::strategies
