#include "reliability/failure_model.hpp"

#include "core/error.hpp"
#include "core/gpu_spec.hpp"
#include "core/input_file.hpp"
#include "core/json_input.hpp"

#include <limits>
#include <set>

namespace hetsim::reliability {
namespace {

constexpr double kHour = 3600;
// Beyond a hundred thousand years a part may as well not fail; under 36 s no job could start.
constexpr double kMostHours = 1e9, kFewestHours = 0.01;

double hours(const JsonInput& value)
{
  const double h = value.positive_number();
  if (h < kFewestHours || h > kMostHours)
    value.fail("hours from 0.01 to 1e9");
  return h * kHour;
}

/// The cluster's GPU that the key `name` of `gpus` means (its own name, or a catalog name or alias of it). The
/// key is quoted, never put in the field's path: a user's key may hold anything.
std::string cluster_gpu(const JsonInput& gpus, const std::string& name, const Cluster& cluster)
{
  const GpuSpec* catalog = find_catalog_gpu(name);
  for (const GpuSpec& gpu : cluster.gpus())
    if (gpu.name == name || (catalog && gpu.name == catalog->name))
      return gpu.name;
  std::string known;
  for (const GpuSpec& gpu : cluster.gpus())
    known += (known.empty() ? "" : ", ") + gpu.name;
  throw InputError(gpus.where() + ": expected a GPU of the cluster (" + known + ") or \"default\" as a key, got " +
                   quote(name));
}

} // namespace

FailureModel load_failure_model(const std::string& file, const Cluster& cluster)
{
  const nlohmann::json json = JsonInput::parse_text(read_input_file(file), file);
  const JsonInput root(json, file);
  root.allow_only({"description", "mtbf_hours", "restart_minutes", "checkpoint", "run_days"});
  FailureModel model;
  model.file = file;
  if (const auto mtbf = root.find("mtbf_hours")) {
    mtbf->allow_only({"gpu", "node", "region_link"});
    if (const auto gpus = mtbf->find("gpu")) {
      if (!gpus->is_object())
        gpus->fail("an object of hours by GPU name");
      for (const auto& [name, value] : gpus->value().items()) {
        const std::string gpu = name == "default" ? name : cluster_gpu(*gpus, name, cluster);
        const JsonInput hours_of = gpus->at(name); // its path names a known GPU from here on
        if (gpu == "default")
          model.default_gpu_mtbf_s = hours(hours_of);
        else
          model.gpu_mtbf_s[gpu] = hours(hours_of);
      }
    }
    if (const auto node = mtbf->find("node"))
      model.node_mtbf_s = hours(*node);
    if (const auto link = mtbf->find("region_link"))
      model.region_link_mtbf_s = hours(*link);
  }
  const JsonInput restart = root.at("restart_minutes");
  model.restart_s         = restart.non_negative_number() * 60;
  if (model.restart_s > 1e3 * kHour)
    restart.fail("minutes up to 60,000");
  const JsonInput checkpoint = root.at("checkpoint");
  checkpoint.allow_only({"storage_GBps", "async", "host_GBps"});
  const JsonInput storage = checkpoint.at("storage_GBps");
  model.storage_bytes_per_s = storage.positive_number() * 1e9;
  if (model.storage_bytes_per_s > 1e18)
    storage.fail("GB/s up to 1e9");
  model.async_checkpoint = checkpoint.boolean_or("async", false);
  if (model.async_checkpoint) {
    const JsonInput host   = checkpoint.at("host_GBps");
    model.host_bytes_per_s = host.positive_number() * 1e9;
    if (model.host_bytes_per_s > 1e18)
      host.fail("GB/s up to 1e9");
  } else if (checkpoint.has("host_GBps")) {
    checkpoint.at("host_GBps").fail("no host_GBps without \"async\": true (a blocking checkpoint writes to storage)");
  }
  const JsonInput run = root.at("run_days");
  model.run_s         = run.positive_number() * 24 * kHour;
  if (model.run_s > 1e5 * 24 * kHour)
    run.fail("days up to 100,000");
  return model;
}

double cluster_mtbf_s(const FailureModel& model, const Cluster& cluster)
{
  auto rate = [](double mtbf_s) { return mtbf_s > 0 ? 1 / mtbf_s : 0.0; };
  double total = 0;
  for (int d = 0; d < cluster.device_count(); ++d) {
    const auto found = model.gpu_mtbf_s.find(cluster.gpu_of(d).name);
    total += rate(found != model.gpu_mtbf_s.end() ? found->second : model.default_gpu_mtbf_s);
  }
  total += static_cast<double>(cluster.nodes().size()) * rate(model.node_mtbf_s);
  std::set<int> regions;
  for (int d = 0; d < cluster.device_count(); ++d)
    regions.insert(cluster.region_of(d));
  const double pairs = static_cast<double>(regions.size()) * (static_cast<double>(regions.size()) - 1) / 2;
  total += pairs * rate(model.region_link_mtbf_s);
  return total > 0 ? 1 / total : std::numeric_limits<double>::infinity();
}

} // namespace hetsim::reliability
