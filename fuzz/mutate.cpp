#include "fuzz/mutate.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <string_view>
#include <vector>

namespace hetsim::fuzz {
namespace {

using Json = nlohmann::json;

std::size_t pick(std::mt19937_64& random, std::size_t count)
{
  return std::uniform_int_distribution<std::size_t>(0, count - 1)(random);
}

/// Literals that parsers and loaders mishandle, spliced in as text so that non-JSON numbers survive: numbers
/// past every bound, names holding control characters or a bidirectional override, and file names that are
/// no file (a device, a directory, the harness's pipe no one writes to, beside the input).
constexpr std::array<std::string_view, 31> kLiterals = {
    "1e309", "-1e309", "1e999", "-1", "0", "-0", "0.5", "1e-320", "2147483647", "2147483648", "-2147483649",
    "9223372036854775808", "1e18", "100000000", "NaN", "Infinity", "null", "true", "\"\"", "\"a\\nb\"",
    "\"\\u0000\"", "[]", "{}", "\"preset:moon\"", "\"na\\u202Eme\"", "\"a\\tb\\u001b[31m\"",
    "\"/dev/zero\"", "\"/dev/null\"", "\".\"", "\"special_fifo\"", "\"special_sparse.json\""};

/// Every value of `doc`, by JSON pointer.
void collect(const Json& value, const Json::json_pointer& at, std::vector<Json::json_pointer>& out)
{
  out.push_back(at);
  if (value.is_object())
    for (const auto& [key, member] : value.items())
      collect(member, at / key, out);
  else if (value.is_array())
    for (std::size_t i = 0; i < value.size(); ++i)
      collect(value[i], at / i, out);
}

/// A value of another type or size than usual.
Json extreme_value(std::mt19937_64& random)
{
  switch (pick(random, 12)) {
    case 0: return -1;
    case 1: return 0;
    case 2: return 1e18;
    case 3: return 2147483648.0;
    case 4: return 1e-300;
    case 5: return std::string(10000, 'x');
    case 6: return pick(random, 2) ? "line\nbreak\x1b[31m" : "eu\u202Ewest";
    case 7: return nullptr;
    case 8: return Json::array();
    case 9: return Json::object();
    case 10: return true;
    default: {
      Json deep = 1;
      for (int i = 0; i < 40; ++i)
        deep = Json::array({deep});
      return deep;
    }
  }
}

/// A small change to a value of the same type (a number scaled, a string changed, a list grown or cut).
Json nudged(const Json& value, std::mt19937_64& random)
{
  if (value.is_number()) {
    constexpr std::array<double, 8> factors = {0, -1, 0.5, 2, 1000, 1e-9, 1.0000001, 3};
    return value.get<double>() * factors[pick(random, factors.size())];
  }
  if (value.is_string()) {
    std::string s = value.get<std::string>();
    return pick(random, 2) == 0 ? s + "x" : s.substr(0, s.size() / 2);
  }
  if (value.is_array() && !value.empty()) {
    Json copy = value;
    if (pick(random, 2) == 0)
      copy.erase(pick(random, copy.size()));
    else
      for (std::size_t i = pick(random, 3) + 1; i > 0; --i)
        copy.push_back(copy[pick(random, copy.size())]);
    return copy;
  }
  return extreme_value(random);
}

std::string mutate_json(Json doc, std::mt19937_64& random)
{
  std::vector<Json::json_pointer> places;
  collect(doc, Json::json_pointer(), places);
  const Json::json_pointer at = places[pick(random, places.size())];
  Json& target                = doc[at];
  switch (pick(random, 6)) {
    case 0:
      target = extreme_value(random);
      break;
    case 1:
    case 2:
      target = nudged(target, random);
      break;
    case 3: // drop a member or element
      if (!at.empty()) {
        Json& parent = doc[at.parent_pointer()];
        if (parent.is_object())
          parent.erase(at.back());
        else
          parent.erase(std::stoul(at.back()));
      }
      break;
    case 4: // a misspelt member beside the real one
      if (!at.empty() && doc[at.parent_pointer()].is_object())
        doc[at.parent_pointer()][at.back() + "s"] = target;
      break;
    default: { // a literal spliced in as text in place of the value
      const std::string marker = "\"__hetsim_fuzz_marker__\"";
      target                   = "__hetsim_fuzz_marker__";
      std::string text         = doc.dump(1, ' ', false, Json::error_handler_t::replace);
      text.replace(text.find(marker), marker.size(), kLiterals[pick(random, kLiterals.size())]);
      return text;
    }
  }
  return doc.dump(1, ' ', false, Json::error_handler_t::replace);
}

std::string mutate_text(std::string text, std::mt19937_64& random)
{
  if (text.empty())
    return "{";
  const std::size_t at = pick(random, text.size());
  switch (pick(random, 6)) {
    case 0:
      text[at] = static_cast<char>(text[at] ^ (1 << pick(random, 8)));
      break;
    case 1:
      text.resize(at);
      break;
    case 2:
      text.erase(at, pick(random, 16) + 1);
      break;
    case 3:
      text.insert(at, text.substr(pick(random, text.size()), pick(random, 64) + 1));
      break;
    case 4: { // a key given twice: the first member of an object once more
      const std::size_t brace = text.find('{', at);
      const std::size_t comma = brace == std::string::npos ? brace : text.find(',', brace);
      if (comma != std::string::npos)
        text.insert(comma, ", " + text.substr(brace + 1, comma - brace - 1));
      break;
    }
    default:
      text.insert(at, kLiterals[pick(random, kLiterals.size())]);
      break;
  }
  return text;
}

} // namespace

std::string mutate(const std::string& text, std::mt19937_64& random)
{
  std::string out = text;
  for (std::size_t rounds = pick(random, 3) + 1; rounds > 0; --rounds) {
    const Json doc = Json::parse(out, nullptr, false);
    out = !doc.is_discarded() && pick(random, 5) != 0 ? mutate_json(doc, random) : mutate_text(out, random);
  }
  return out;
}

} // namespace hetsim::fuzz
