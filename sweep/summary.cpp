#include "sweep/summary.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

namespace hetsim::sweep {
namespace {

int column(const Row& header, const std::string& name, const std::string& file)
{
  const auto it = std::find(header.begin(), header.end(), name);
  if (it == header.end())
    throw InputError(file + ": no column " + quote(name) + "; columns: " + csv_line(header));
  return static_cast<int>(it - header.begin());
}

int position(std::vector<std::string>& names, const std::string& name)
{
  const auto it = std::find(names.begin(), names.end(), name);
  if (it != names.end())
    return static_cast<int>(it - names.begin());
  names.push_back(name);
  return static_cast<int>(names.size()) - 1;
}

} // namespace

Summary summarize(const std::vector<Row>& rows, const Row& header, const std::string& x, const std::string& y,
                  const std::string& series, const std::string& file)
{
  const int xc = column(header, x, file), yc = column(header, y, file), sc = column(header, series, file);
  const auto status_it = std::find(header.begin(), header.end(), "status");
  const int status     = status_it == header.end() ? -1 : static_cast<int>(status_it - header.begin());
  Summary summary;
  std::vector<std::vector<double>> sum, count;
  for (const Row& row : rows) {
    if (status >= 0 && row[status] != "ok")
      continue;
    double value      = 0;
    const auto& text  = row[yc];
    const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || result.ec != std::errc())
      continue;
    const int c = position(summary.categories, row[xc]);
    const int s = position(summary.series, row[sc]);
    sum.resize(summary.categories.size());
    count.resize(summary.categories.size());
    for (auto* table : {&sum, &count})
      for (auto& line : *table)
        line.resize(summary.series.size(), 0.0);
    sum[c][s] += value;
    count[c][s] += 1;
  }
  summary.mean.assign(summary.categories.size(),
                      std::vector<double>(summary.series.size(), std::numeric_limits<double>::quiet_NaN()));
  for (std::size_t c = 0; c < sum.size(); ++c)
    for (std::size_t s = 0; s < sum[c].size(); ++s)
      if (count[c][s] > 0)
        summary.mean[c][s] = sum[c][s] / count[c][s];
  return summary;
}

std::string summary_table(const Summary& summary, const std::string& x)
{
  std::string text = x;
  for (const auto& s : summary.series)
    text += "\t" + s;
  text += "\n";
  for (std::size_t c = 0; c < summary.categories.size(); ++c) {
    text += summary.categories[c];
    for (double v : summary.mean[c]) {
      char cell[32];
      std::snprintf(cell, sizeof cell, "\t%.6g", v);
      text += std::isnan(v) ? "\tNaN" : cell;
    }
    text += "\n";
  }
  return text;
}

} // namespace hetsim::sweep
