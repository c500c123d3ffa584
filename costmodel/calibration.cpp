#include "costmodel/calibration.hpp"

#include "core/error.hpp"
#include "core/gpu_spec.hpp"
#include "core/json_bounds.hpp"
#include "core/json_input.hpp"

// Boost 1.74's pchip.hpp calls unqualified isnan; <math.h> declares it globally.
#include <math.h>

#include <boost/math/interpolators/pchip.hpp>

#include <algorithm>
#include <cstdio>

namespace hetsim::costmodel {

bool Calibration::calibrates(const std::string& gpu) const
{
  auto it = efficiency_points.find(gpu);
  return it != efficiency_points.end() && !it->second.empty();
}

double Calibration::efficiency(const std::string& gpu, double tokens) const
{
  auto it = efficiency_points.find(gpu);
  if (it == efficiency_points.end() || it->second.empty())
    return -1;
  const auto& points = it->second;
  // Outside the measured range the nearest measurement is the honest answer.
  if (tokens <= points.front().first)
    return points.front().second;
  if (tokens >= points.back().first)
    return points.back().second;
  if (points.size() < 4) {
    auto upper = std::lower_bound(points.begin(), points.end(), std::make_pair(tokens, 0.0));
    auto lower = upper - 1;
    const double t = (tokens - lower->first) / (upper->first - lower->first);
    return lower->second + t * (upper->second - lower->second);
  }
  // PCHIP keeps the curve monotone between measurements (no overshoot past peak efficiency).
  std::vector<double> x, y;
  for (const auto& [tok, eff] : points) {
    x.push_back(tok);
    y.push_back(eff);
  }
  boost::math::interpolators::pchip<std::vector<double>> spline(std::move(x), std::move(y));
  return spline(tokens);
}

Calibration calibration_from_json(const nlohmann::json& json, const std::string& origin)
{
  JsonInput root(json, origin);
  root.allow_only({"efficiency", "kernels", "links", "evidence", "families"});
  Calibration calibration;
  if (auto efficiency = root.find("efficiency")) {
    if (!efficiency->is_object())
      efficiency->fail("an object mapping GPU names to [[tokens, efficiency], ...]");
    for (const auto& [gpu, unused] : efficiency->value().items()) {
      auto& points = calibration.efficiency_points[gpu];
      for (const auto& point : efficiency->at(gpu).elements()) {
        if (point.size() != 2)
          point.fail("a [tokens, efficiency] pair");
        const double tokens = point.at(0).positive_number();
        const double eff    = point.at(1).positive_number();
        if (eff > 1)
          point.at(1).fail("an efficiency in (0, 1]");
        points.emplace_back(tokens, eff);
      }
      std::sort(points.begin(), points.end());
      for (std::size_t i = 1; i < points.size(); ++i)
        if (points[i].first == points[i - 1].first)
          throw InputError(efficiency->at(gpu).where() + ": expected distinct token counts, got " +
                           std::to_string(points[i].first) + " twice");
    }
  }
  if (auto kernels = root.find("kernels")) {
    if (!kernels->is_object())
      kernels->fail("an object mapping GPU names to kernel constants");
    for (const auto& [gpu, unused] : kernels->value().items()) {
      JsonInput entry = kernels->at(gpu);
      entry.allow_only({"gemm_ceiling", "memory_efficiency", "tile_m", "tile_n", "k_overhead", "launch_gap_s",
                        "host_dispatch_s", "unaligned_ceiling", "attention_ceiling",
                        "attention_backward_ceiling", "attention_softmax_depth", "unvectorized_bytes_per_sm_s"});
      // What the file leaves out stays the GPU family's (a file written before a constant existed).
      const GpuSpec* known = find_catalog_gpu(gpu);
      KernelConstants c    = known ? kernel_constants(*known) : KernelConstants{};
      // Fractions of a catalog GPU's datasheet peak and bandwidth: no kernel runs faster than the hardware. A
      // device a cluster file describes has the figures its author wrote, which a fit may pass.
      c.gemm_ceiling      = entry.at("gemm_ceiling").positive_number();
      c.memory_efficiency = entry.at("memory_efficiency").positive_number();
      if (known)
        for (const char* fraction : {"gemm_ceiling", "memory_efficiency"})
          if (entry.at(fraction).positive_number() > 1)
            entry.at(fraction).fail("a fraction of " + gpu + "'s datasheet figure in (0, 1]");
      // No GPU has a thread-block tile past 4,096, a depth overhead past a million, a ceiling past its peak, or
      // a launch or dispatch of a second.
      constexpr bool kPositive = true;
      if (auto tile = entry.find("tile_m"))
        c.tile_m = bounded_number(*tile, 4096, kPositive);
      if (auto tile = entry.find("tile_n"))
        c.tile_n = bounded_number(*tile, 4096, kPositive);
      if (auto overhead = entry.find("k_overhead"))
        c.k_overhead = bounded_number(*overhead, 1e6);
      // Attention's forward and backward ceilings go together: one alone is a file of another model.
      if (auto attention = entry.find("attention_ceiling")) {
        c.attention_ceiling = bounded_number(*attention, 1, kPositive);
        c.attention_backward_ceiling = bounded_number(entry.at("attention_backward_ceiling"), 1, kPositive);
        if (auto depth = entry.find("attention_softmax_depth"))
          c.attention_softmax_depth = bounded_number(*depth, 1e4);
      }
      if (auto unaligned = entry.find("unaligned_ceiling"))
        c.unaligned_ceiling = bounded_number(*unaligned, 1, kPositive);
      // No multiprocessor moves 100 GB/s on its own (a Hopper SM about 18 through PyTorch's unvectorized loops).
      if (auto rate = entry.find("unvectorized_bytes_per_sm_s"))
        c.unvectorized_bytes_per_sm_s = bounded_number(*rate, 1e11, kPositive);
      c.launch_gap_s    = bounded_number(entry.at("launch_gap_s"), 1);
      c.host_dispatch_s = bounded_number(entry.at("host_dispatch_s"), 1);
      calibration.kernels[gpu] = c;
    }
  }
  if (auto evidence = root.find("evidence")) {
    if (!evidence->is_object())
      evidence->fail("an object mapping GPU names to what their kernel constants were fitted to");
    for (const auto& [gpu, unused] : evidence->value().items()) {
      JsonInput entry = evidence->at(gpu);
      entry.allow_only({"source", "traces", "tokens", "errors"});
      CalibrationEvidence e;
      e.source = entry.at("source").string();
      e.traces = entry.at("traces").positive_int();
      const JsonInput tokens = entry.at("tokens");
      if (!tokens.is_array() || tokens.size() != 2)
        tokens.fail("[smallest, largest] micro-batch tokens of the calibrating traces");
      e.min_tokens = tokens.at(0).non_negative_number();
      e.max_tokens = tokens.at(1).non_negative_number();
      if (auto errors = entry.find("errors"))
        for (const auto& [kind, unused_kind] : errors->value().items()) {
          JsonInput error = errors->at(kind);
          error.allow_only({"kernels", "median", "p90"});
          e.errors[kind] = {error.at("kernels").positive_int(), error.at("median").non_negative_number(),
                            error.at("p90").non_negative_number()};
        }
      calibration.evidence[gpu] = e;
    }
  }
  if (auto links = root.find("links")) {
    if (!links->is_object())
      links->fail("an object mapping link classes to {alpha_s, beta_seconds_per_byte}");
    for (const auto& [name, unused] : links->value().items()) {
      JsonInput entry = links->at(name);
      entry.allow_only({"alpha_s", "beta_seconds_per_byte", "collective_overhead_s"});
      // No link waits 10 s before a byte moves or carries fewer than 1,000 bytes a second (the slowest WAN
      // links HetSim models take 0.3 s and move 37 MB/s).
      LinkCalibration link{bounded_number(entry.at("alpha_s"), 10),
                           bounded_number(entry.at("beta_seconds_per_byte"), 1e-3, true)};
      if (auto overhead = entry.find("collective_overhead_s"))
        link.collective_overhead_s = bounded_number(*overhead, 10);
      calibration.links[name] = link;
    }
  }
  if (auto families = root.find("families")) {
    if (!families->is_object())
      families->fail("an object mapping model types to {elementwise_scale, fitted_on, traces}");
    for (const auto& [type, unused] : families->value().items()) {
      JsonInput entry = families->at(type);
      entry.allow_only({"elementwise_scale", "fitted_on", "traces"});
      FamilyCalibration family;
      // Kernels a family's operators leave out may double its elementwise time, not make it ten times: a factor
      // past 4 or under 1/4 says the trace ran another model.
      family.elementwise_scale = entry.at("elementwise_scale").positive_number();
      if (family.elementwise_scale > 4 || family.elementwise_scale < 0.25)
        entry.at("elementwise_scale").fail("a factor between 0.25 and 4");
      family.fitted_on = entry.at("fitted_on").string();
      family.traces    = entry.at("traces").positive_int();
      calibration.families[type] = family;
    }
  }
  return calibration;
}

std::vector<std::string> calibration_confidence(const Calibration& calibration, const std::string& gpu,
                                                double tokens)
{
  auto it = calibration.evidence.find(gpu);
  if (it == calibration.evidence.end())
    return {};
  const CalibrationEvidence& e = it->second;
  char line[512];
  std::vector<std::string> lines;
  std::string errors;
  for (const auto& [kind, error] : e.errors) {
    std::snprintf(line, sizeof line, "%s%s %.0f%% (p90 %.0f%%, %d kernels)", errors.empty() ? "" : ", ",
                  kind.c_str(), 100 * error.median_error, 100 * error.p90_error, error.kernels);
    errors += line;
  }
  std::snprintf(line, sizeof line, "%s calibrated on %d %s trace%s; error left per kernel: %s", gpu.c_str(),
                e.traces, e.source.c_str(), e.traces == 1 ? "" : "s", errors.empty() ? "none measured" : errors.c_str());
  lines.push_back(line);
  if (tokens >= e.min_tokens && tokens <= e.max_tokens)
    std::snprintf(line, sizeof line, "%s: %.0f tokens per micro-batch, inside the calibrated %.0f-%.0f", gpu.c_str(),
                  tokens, e.min_tokens, e.max_tokens);
  else
    std::snprintf(line, sizeof line, "%s: %.0f tokens per micro-batch extrapolates %.1fx %s the calibrated %.0f-%.0f",
                  gpu.c_str(), tokens, tokens > e.max_tokens ? tokens / e.max_tokens : e.min_tokens / tokens,
                  tokens > e.max_tokens ? "beyond" : "below", e.min_tokens, e.max_tokens);
  lines.push_back(line);
  return lines;
}

Calibration load_calibration(const std::string& file)
{
  return calibration_from_json(JsonInput::parse_file(file), file);
}

nlohmann::json calibration_to_json(const Calibration& calibration)
{
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [gpu, points] : calibration.efficiency_points)
    for (const auto& [tokens, eff] : points)
      out["efficiency"][gpu].push_back({tokens, eff});
  for (const auto& [gpu, c] : calibration.kernels) {
    out["kernels"][gpu] = {{"gemm_ceiling", c.gemm_ceiling}, {"memory_efficiency", c.memory_efficiency},
                           {"tile_m", c.tile_m},             {"tile_n", c.tile_n},
                           {"k_overhead", c.k_overhead},     {"launch_gap_s", c.launch_gap_s},
                           {"host_dispatch_s", c.host_dispatch_s}};
    if (c.unaligned_ceiling > 0)
      out["kernels"][gpu]["unaligned_ceiling"] = c.unaligned_ceiling;
    if (c.unvectorized_bytes_per_sm_s > 0)
      out["kernels"][gpu]["unvectorized_bytes_per_sm_s"] = c.unvectorized_bytes_per_sm_s;
    if (c.attention_ceiling > 0 && c.attention_backward_ceiling > 0) {
      out["kernels"][gpu]["attention_ceiling"]          = c.attention_ceiling;
      out["kernels"][gpu]["attention_backward_ceiling"] = c.attention_backward_ceiling;
      out["kernels"][gpu]["attention_softmax_depth"]    = c.attention_softmax_depth;
    }
  }
  for (const auto& [gpu, e] : calibration.evidence) {
    nlohmann::json& entry = out["evidence"][gpu];
    entry = {{"source", e.source}, {"traces", e.traces}, {"tokens", {e.min_tokens, e.max_tokens}}};
    for (const auto& [kind, error] : e.errors)
      entry["errors"][kind] = {{"kernels", error.kernels}, {"median", error.median_error}, {"p90", error.p90_error}};
  }
  for (const auto& [type, family] : calibration.families)
    out["families"][type] = {{"elementwise_scale", family.elementwise_scale},
                             {"fitted_on", family.fitted_on},
                             {"traces", family.traces}};
  for (const auto& [name, link] : calibration.links)
    out["links"][name] = {{"alpha_s", link.alpha_s},
                          {"beta_seconds_per_byte", link.beta_seconds_per_byte},
                          {"collective_overhead_s", link.collective_overhead_s}};
  return out;
}

} // namespace hetsim::costmodel
