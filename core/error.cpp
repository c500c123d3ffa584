#include "core/error.hpp"

#include <cstdio>

namespace hetsim {

void fail_assertion(const char* expression, const char* file, int line)
{
  throw InternalError(std::string("internal error: assertion '") + expression + "' failed at " + file + ":" +
                      std::to_string(line));
}

namespace {

/// The length of the UTF-8 bidirectional control at `text[i]`, 0 when there is none: U+202A-U+202E are
/// E2 80 AA-AE, U+2066-U+2069 are E2 81 A6-A9.
std::size_t bidi_control_at(std::string_view text, std::size_t i)
{
  if (i + 2 >= text.size() || static_cast<unsigned char>(text[i]) != 0xE2)
    return 0;
  const auto second = static_cast<unsigned char>(text[i + 1]), third = static_cast<unsigned char>(text[i + 2]);
  if ((second == 0x80 && third >= 0xAA && third <= 0xAE) || (second == 0x81 && third >= 0xA6 && third <= 0xA9))
    return 3;
  return 0;
}

bool is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }

} // namespace

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
        } else if (bidi_control_at(text, i) != 0) {
          result += single_line(text.substr(i, 3)); // "\u202e"
          i += 2;
        } else {
          result += static_cast<char>(c);
        }
    }
  }
  return result + "'";
}

std::string single_line(std::string_view message)
{
  std::string result;
  result.reserve(message.size());
  for (std::size_t i = 0; i < message.size(); ++i) {
    const auto c = static_cast<unsigned char>(message[i]);
    char escaped[12];
    if (c == '\n') {
      result += "\\n";
    } else if (is_control(c)) {
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      result += escaped;
    } else if (bidi_control_at(message, i) != 0) {
      const unsigned code = 0x2000u + ((static_cast<unsigned char>(message[i + 1]) & 0x3fu) << 6) +
                            (static_cast<unsigned char>(message[i + 2]) & 0x3fu);
      std::snprintf(escaped, sizeof escaped, "\\u%04x", code);
      result += escaped;
      i += 2;
    } else {
      result += static_cast<char>(c);
    }
  }
  return result;
}

std::string shown_path(std::string_view path)
{
  return holds_control_characters(path) ? quote(path, 300) : std::string(path);
}

bool holds_control_characters(std::string_view text)
{
  for (std::size_t i = 0; i < text.size(); ++i)
    if (is_control(static_cast<unsigned char>(text[i])) || bidi_control_at(text, i) != 0)
      return true;
  return false;
}

} // namespace hetsim
