#include "costmodel/zero.hpp"

namespace hetsim::costmodel {

double zero_bytes_sent_per_device(int zero_stage, double gradient_bytes, double parameter_bytes, int n,
                                  int micro_batches)
{
  if (n <= 1)
    return 0;
  const double share = (n - 1.0) / n; // what a ring reduce-scatter or all-gather sends per member
  switch (zero_stage) {
    case 0:
      return 2 * share * gradient_bytes;
    case 1:
      return share * (gradient_bytes + parameter_bytes);
    case 2:
      return share * (micro_batches * gradient_bytes + parameter_bytes);
    default:
      return share * micro_batches * (2 * parameter_bytes + gradient_bytes);
  }
}

} // namespace hetsim::costmodel
