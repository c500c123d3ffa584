#include "core/error.hpp"

namespace hetsim {

void fail_assertion(const char* expression, const char* file, int line)
{
  throw InternalError(std::string("internal error: assertion '") + expression + "' failed at " + file + ":" +
                      std::to_string(line));
}

} // namespace hetsim
