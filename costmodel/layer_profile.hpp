#pragma once
/// Measured per-layer forward (and optionally backward) times, per GPU type, tensor-parallel degree and
/// micro-batch size. Where a profile covers a (GPU, tp) pair its times anchor the cost model's: at a measured
/// micro-batch the measurement itself; between measured ones a monotone interpolation (Boost PCHIP from four
/// measurements, straight lines below that); outside them the nearest measurement scaled along the cost model's
/// own curve, so the fixed part of a layer's time does not grow with the batch. A profiled time already contains
/// what ran inside the layer, its tensor-parallel all-reduces included: nothing is added to it.
///
/// File: one entry or an array of entries
/// `{"gpu": "V100", "tp": 1, "micro_batch": 4, "layer_forward_s": [...], "layer_backward_s": [...]}` with one
/// value per Workload layer; backward defaults to twice forward.

#include "core/cluster.hpp"
#include "models/workload.hpp"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hetsim::costmodel {

struct ProfileEntry {
  std::string gpu; ///< the cluster's GPU name
  int tp          = 1;
  int micro_batch = 1;
  std::vector<double> forward_s;  ///< per layer
  std::vector<double> backward_s; ///< per layer; empty means 2 x forward
};

class LayerProfile {
public:
  /// Throws InputError when an entry for the same (gpu, tp, micro_batch) already exists.
  void add(ProfileEntry entry);
  bool covers(const std::string& gpu, int tp) const { return series_.count({gpu, tp}) > 0; }
  /// How a layer's time grows with the micro-batch in the cost model; only its ratios are used.
  using BatchCurve = std::function<double(double micro_batch)>;
  /// Seconds of one layer for `micro_batch` sequences, as the header says, `curve` extending the measurements
  /// outside their range. Empty when (gpu, tp) is not profiled.
  std::optional<double> layer_seconds(const std::string& gpu, int tp, int layer, double micro_batch, bool backward,
                                      const BatchCurve& curve) const;

private:
  struct Series {
    std::vector<ProfileEntry> entries; ///< sorted by micro-batch
    /// Per layer, the monotone interpolation through the entries' forward and backward times; built by `add`
    /// once there are four entries (PCHIP needs four), so that a query builds nothing.
    std::vector<std::function<double(double micro_batch)>> forward, backward;
  };
  /// (gpu, tp) -> its measurements.
  std::map<std::pair<std::string, int>, Series> series_;
};

/// Reads a profile for `workload` on `cluster`: GPU names resolve like the cluster's (catalog aliases), and
/// every list has one positive value per layer. Errors name the file, the JSON path and what was expected.
LayerProfile load_layer_profile(const std::string& file, const models::Workload& workload, const Cluster& cluster);

} // namespace hetsim::costmodel
