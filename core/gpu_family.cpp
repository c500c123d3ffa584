#include "core/gpu_family.hpp"

#include <initializer_list>

namespace hetsim {
namespace {

bool named(const GpuSpec& gpu, std::initializer_list<const char*> prefixes)
{
  for (const char* prefix : prefixes)
    if (gpu.name.starts_with(prefix))
      return true;
  return false;
}

} // namespace

bool datacenter_blackwell(const GpuSpec& gpu)
{
  return named(gpu, {"B200", "B300", "GB200", "GB300"});
}

bool instinct_cdna3_or_later(const GpuSpec& gpu)
{
  return named(gpu, {"MI300", "MI325", "MI355"});
}

} // namespace hetsim
