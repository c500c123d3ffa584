#include "costmodel/layer_profile.hpp"

#include "core/cluster_json.hpp"
#include "core/error.hpp"
#include "core/json_input.hpp"

// Boost 1.74's pchip.hpp calls unqualified isnan; <math.h> declares it globally.
#include <math.h>

#include <boost/math/interpolators/pchip.hpp>

#include <algorithm>

namespace hetsim::costmodel {

namespace {

/// Seconds of `layer` in one measurement; backward defaults to twice forward.
double entry_seconds(const ProfileEntry& entry, int layer, bool backward)
{
  if (!backward)
    return entry.forward_s[layer];
  return entry.backward_s.empty() ? 2 * entry.forward_s[layer] : entry.backward_s[layer];
}

} // namespace

void LayerProfile::add(ProfileEntry entry)
{
  Series& series = series_[{entry.gpu, entry.tp}];
  auto& list     = series.entries;
  HETSIM_ASSERT(list.empty() || entry.forward_s.size() == list.front().forward_s.size());
  auto at = std::lower_bound(list.begin(), list.end(), entry.micro_batch,
                             [](const ProfileEntry& e, int mb) { return e.micro_batch < mb; });
  if (at != list.end() && at->micro_batch == entry.micro_batch)
    throw InputError("profile: two entries for gpu " + entry.gpu + ", tp " + std::to_string(entry.tp) +
                     ", micro_batch " + std::to_string(entry.micro_batch));
  list.insert(at, std::move(entry));
  if (list.size() < 4)
    return;
  // Monotone between measurements: a spline that overshoots would invent times no measurement shows.
  std::vector<double> batches;
  for (const ProfileEntry& e : list)
    batches.push_back(e.micro_batch);
  for (int backward = 0; backward < 2; ++backward) {
    auto& splines = backward ? series.backward : series.forward;
    splines.clear();
    for (std::size_t layer = 0; layer < list.front().forward_s.size(); ++layer) {
      std::vector<double> times;
      for (const ProfileEntry& e : list)
        times.push_back(entry_seconds(e, static_cast<int>(layer), backward));
      splines.push_back(boost::math::interpolators::pchip<std::vector<double>>(std::vector<double>(batches),
                                                                               std::move(times)));
    }
  }
}

std::optional<double> LayerProfile::layer_seconds(const std::string& gpu, int tp, int layer, double micro_batch,
                                                  bool backward, const BatchCurve& curve) const
{
  auto it = series_.find({gpu, tp});
  if (it == series_.end())
    return std::nullopt;
  const Series& series = it->second;
  const auto& list     = series.entries;
  auto seconds         = [&](const ProfileEntry& e) { return entry_seconds(e, layer, backward); };
  // Outside the measurements the model's curve carries the measurement along. A layer the model prices at
  // nothing (no FLOPs, no bytes: a no-op, a reshape) has no curve: its measured time scales with the batch.
  auto carried = [&](const ProfileEntry& e) {
    const double at_measured = curve(e.micro_batch);
    const double ratio       = at_measured > 0 ? curve(micro_batch) / at_measured : micro_batch / e.micro_batch;
    return seconds(e) * ratio;
  };
  if (micro_batch <= list.front().micro_batch)
    return carried(list.front());
  if (micro_batch >= list.back().micro_batch)
    return carried(list.back());
  if (!series.forward.empty())
    return (backward ? series.backward : series.forward)[layer](micro_batch);
  // Fewer than four measurements: a straight line between the two around the batch.
  auto upper     = std::lower_bound(list.begin(), list.end(), micro_batch,
                                    [](const ProfileEntry& e, double mb) { return e.micro_batch < mb; });
  auto lower     = upper - 1;
  const double t = (micro_batch - lower->micro_batch) / (upper->micro_batch - lower->micro_batch);
  return seconds(*lower) + t * (seconds(*upper) - seconds(*lower));
}

namespace {

std::vector<double> per_layer(const JsonInput& list, std::size_t layer_count)
{
  if (!list.is_array() || list.size() != layer_count)
    list.fail("an array of " + std::to_string(layer_count) + " seconds (one per model layer)");
  std::vector<double> values;
  for (const auto& value : list.elements())
    values.push_back(value.positive_number());
  return values;
}

} // namespace

LayerProfile load_layer_profile(const std::string& file, const models::Workload& workload, const Cluster& cluster)
{
  const nlohmann::json json = JsonInput::parse_file(file);
  JsonInput root(json, file);
  std::vector<JsonInput> entries;
  if (root.is_array())
    entries = root.elements();
  else if (root.is_object())
    entries.push_back(root);
  else
    root.fail("a profile entry or an array of them");
  if (entries.empty())
    root.fail("at least one profile entry");

  LayerProfile profile;
  for (const auto& input : entries) {
    input.allow_only({"gpu", "tp", "micro_batch", "layer_forward_s", "layer_backward_s"});
    ProfileEntry entry;
    entry.gpu         = cluster_gpu_name(input.at("gpu"), cluster);
    entry.tp          = input.positive_int_or("tp", 1);
    entry.micro_batch = input.at("micro_batch").positive_int();
    entry.forward_s   = per_layer(input.at("layer_forward_s"), workload.layers.size());
    if (auto backward = input.find("layer_backward_s"))
      entry.backward_s = per_layer(*backward, workload.layers.size());
    try {
      profile.add(std::move(entry));
    } catch (const InputError& e) {
      input.fail("one entry per (gpu, tp, micro_batch); " + std::string(e.what()));
    }
  }
  return profile;
}

} // namespace hetsim::costmodel
