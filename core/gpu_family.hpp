#pragma once
/// Which catalog family a GPU belongs to, where constants and boards differ by family rather than by the
/// figures GpuSpec holds: one home for the name lists the cost model, the band and NCCL's topology share.

#include "core/gpu_spec.hpp"

namespace hetsim {

/// Data-center Blackwell: B200, B300, GB200, GB300 (sold on HGX/DGX boards and NVL racks only).
bool datacenter_blackwell(const GpuSpec& gpu);
/// AMD Instinct CDNA3 and CDNA4: MI300X, MI325X, MI355X.
bool instinct_cdna3_or_later(const GpuSpec& gpu);

} // namespace hetsim
