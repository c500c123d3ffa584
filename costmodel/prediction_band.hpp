#pragma once
/// The range a predicted step time falls in, from the measured error of each mechanism that priced it: the GPU
/// generation's kernel constants (measured on it, taken from public runs on it, or carried over from another),
/// the attention kernel on that architecture, and communication across nodes. Each error is a row of
/// docs/fidelity.md; prediction_band.cpp names the row. Errors of independent mechanisms add in quadrature, and
/// a plan's band is its least certain GPU's.

#include "core/gpu_spec.hpp"
#include "core/software_release.hpp"
#include "costmodel/calibration.hpp"

#include <string>
#include <vector>

namespace hetsim::costmodel {

/// How the kernel constants of a GPU came to be.
enum class ConstantsOrigin {
  measured,    ///< fitted or checked on traces of this generation (Hopper: tests/data/h100, h200)
  published,   ///< checked against published runs on this generation (A100: Megatron-LM's SC'21 tables)
  carried,     ///< another generation's, scaled by this one's datasheet
  unknown,     ///< no NVIDIA architecture HetSim knows (an inline GPU without a compute capability, AMD, Ascend)
  calibrated,  ///< fitted by the user's calibration to traces of this GPU
};

/// A GPU's constants: where they come from, and how far a step priced with them has measured from the truth,
/// as measured / predicted - 1 at the low and high end.
struct ConstantsProvenance {
  ConstantsOrigin origin = ConstantsOrigin::unknown;
  double below = 0, above = 0; ///< fractions: the truth lies in [1 - below, 1 + above] x the prediction
  std::string source;
};
/// `pytorch`: the release the run trains with, when the plan says (an older one than the GPU was measured with
/// brings other libraries and kernels: its constants count as carried over).
ConstantsProvenance constants_provenance(const GpuSpec& gpu, const Calibration* calibration,
                                         SoftwareRelease pytorch = {});
const char* origin_name(ConstantsOrigin origin);

/// What one GPU type of the plan contributes.
struct BandDevice {
  const GpuSpec* gpu = nullptr;
  /// Of its layer time, the share in attention kernels whose speed on this architecture is unmeasured.
  double unmeasured_attention_share = 0;
  std::string attention_kernel; ///< the kernel that runs there, for the reason line
  /// Its blocks' products run in fp8, whose ceiling no training step measured: its constants count as
  /// carried over whatever else measured them.
  bool fp8_products = false;
};

struct PredictionBand {
  double low = 0, high = 0;          ///< seconds
  std::vector<std::string> reasons;  ///< what widens it, one phrase each
  /// "45.5 s (38.9-52.1 s; A100 constants from published runs, ...)"
  std::string describe(double point_s) const;
};

/// What the plan's traffic crosses.
struct BandNetwork {
  bool multi_node = false;
  /// Where some of it crosses NCCL's socket transport at the public runs' median rate (kSocketTransportGbps,
  /// core/cluster.hpp), the share of the step the communication leaves exposed, and how much longer and
  /// shorter that communication would take at the slowest and fastest public rates (each bounded by the NIC's
  /// line rate): fractions of it.
  double socket_exposed_share = 0;
  double socket_slower = 0, socket_faster = 0;
};

/// The band around `point_s` for a plan on `devices` whose traffic crosses `network`.
PredictionBand prediction_band(double point_s, const std::vector<BandDevice>& devices, const BandNetwork& network,
                               const Calibration* calibration, SoftwareRelease pytorch = {});

} // namespace hetsim::costmodel
