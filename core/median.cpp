#include "core/median.hpp"

#include "core/error.hpp"

#include <algorithm>

namespace hetsim {

double median(std::vector<double> values)
{
  HETSIM_ASSERT(!values.empty());
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

} // namespace hetsim
