#include "core/closest_name.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <cctype>

namespace hetsim {
namespace {

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

/// Levenshtein distance, ignoring case; names are short (at most a few hundred characters are compared).
std::size_t edit_distance(std::string_view a, std::string_view b)
{
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0]               = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

} // namespace

std::string closest_name(std::string_view given, const std::vector<std::string>& known)
{
  constexpr std::size_t kLongestCompared = 256;
  if (given.empty() || given.size() > kLongestCompared)
    return "";
  std::string best;
  std::size_t best_distance = 0;
  for (const std::string& name : known) {
    if (name.size() > kLongestCompared)
      continue;
    const std::size_t distance = edit_distance(given, name);
    const std::size_t allowed  = std::min<std::size_t>(3, std::max(given.size(), name.size()) / 3);
    if (distance <= allowed && (best.empty() || distance < best_distance)) {
      best          = name;
      best_distance = distance;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view given, const std::vector<std::string>& known)
{
  const std::string best = closest_name(given, known);
  return best.empty() ? "" : " (did you mean " + quote(best) + "?)";
}

} // namespace hetsim
