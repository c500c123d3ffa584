#include "core/error.hpp"

#include <cstdio>

namespace hetsim {

void fail_assertion(const char* expression, const char* file, int line)
{
  throw InternalError(std::string("internal error: assertion '") + expression + "' failed at " + file + ":" +
                      std::to_string(line));
}

std::string quote(std::string_view text, std::size_t limit)
{
  std::string result = "'";
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (i == limit) {
      result += "…";
      break;
    }
    const auto c = static_cast<unsigned char>(text[i]);
    switch (c) {
      case '\n':
        result += "\\n";
        break;
      case '\r':
        result += "\\r";
        break;
      case '\t':
        result += "\\t";
        break;
      case '\'':
        result += "\\'";
        break;
      case '\\':
        result += "\\\\";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
          result += escaped;
        } else {
          result += static_cast<char>(c);
        }
    }
  }
  return result + "'";
}

} // namespace hetsim
