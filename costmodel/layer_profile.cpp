#include "costmodel/layer_profile.hpp"

#include "core/cluster_json.hpp"
#include "core/error.hpp"
#include "core/json_input.hpp"

// Boost 1.74's pchip.hpp calls unqualified isnan; <math.h> declares it globally.
#include <math.h>

#include <boost/math/interpolators/pchip.hpp>

#include <algorithm>

namespace hetsim::costmodel {

void LayerProfile::add(ProfileEntry entry)
{
  auto& list = entries_[{entry.gpu, entry.tp}];
  auto at    = std::lower_bound(list.begin(), list.end(), entry.micro_batch,
                                [](const ProfileEntry& e, int mb) { return e.micro_batch < mb; });
  if (at != list.end() && at->micro_batch == entry.micro_batch)
    throw InputError("profile: two entries for gpu " + entry.gpu + ", tp " + std::to_string(entry.tp) +
                     ", micro_batch " + std::to_string(entry.micro_batch));
  list.insert(at, std::move(entry));
}

std::optional<double> LayerProfile::layer_seconds(const std::string& gpu, int tp, int layer, double micro_batch,
                                                  bool backward, const BatchCurve& curve) const
{
  auto it = entries_.find({gpu, tp});
  if (it == entries_.end())
    return std::nullopt;
  const auto& list = it->second;
  auto seconds     = [&](const ProfileEntry& e) {
    if (!backward)
      return e.forward_s[layer];
    return e.backward_s.empty() ? 2 * e.forward_s[layer] : e.backward_s[layer];
  };
  if (micro_batch <= list.front().micro_batch)
    return seconds(list.front()) * curve(micro_batch) / curve(list.front().micro_batch);
  if (micro_batch >= list.back().micro_batch)
    return seconds(list.back()) * curve(micro_batch) / curve(list.back().micro_batch);
  if (list.size() >= 4) {
    // Monotone between measurements: a spline that overshoots would invent times no measurement shows.
    std::vector<double> batches, times;
    for (const ProfileEntry& e : list) {
      batches.push_back(e.micro_batch);
      times.push_back(seconds(e));
    }
    boost::math::interpolators::pchip<std::vector<double>> spline(std::move(batches), std::move(times));
    return spline(micro_batch);
  }
  // PCHIP needs four points; below that, a straight line between the two measurements around the batch.
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
