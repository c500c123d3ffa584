#include "sweep/summary.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string_view>

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

Summary summarize(const std::vector<Row>& rows, const Row& header, const SummaryColumns& columns,
                  const std::string& file)
{
  const int xc = column(header, columns.x, file), yc = column(header, columns.y, file);
  const int sc          = column(header, columns.series, file);
  const auto status_it  = std::find(header.begin(), header.end(), "status");
  const int status      = status_it == header.end() ? -1 : static_cast<int>(status_it - header.begin());
  for (const auto& name : columns.average_over)
    (void)column(header, name, file);
  // The columns that must agree within one bar: a sweep table's keys (its other columns are results), or every
  // column of another table; never the bar's own x and series, y, or what the user said may vary.
  const bool sweep_table = header == sweep_columns();
  std::vector<int> compared;
  for (int k = 0; k < (sweep_table ? kKeyColumns : static_cast<int>(header.size())); ++k)
    if (k != xc && k != yc && k != sc && k != status &&
        std::find(columns.average_over.begin(), columns.average_over.end(), header[k]) == columns.average_over.end())
      compared.push_back(k);

  // One cell per bar: the sum of its values, how many, and its first row (for the message when rows differ).
  struct Cell {
    double sum        = 0;
    double low        = std::numeric_limits<double>::infinity();
    double high       = -std::numeric_limits<double>::infinity();
    int rows          = 0;
    std::size_t first = 0;
  };
  Summary summary;
  std::vector<std::vector<Cell>> cells; // [category][series]
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const Row& row = rows[r];
    if (status >= 0 && row[status] != "ok")
      continue;
    double value      = 0;
    const auto& text  = row[yc];
    const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || result.ec != std::errc() || !std::isfinite(value)) // "nan" and "inf" are no values
      continue;
    const int c = position(summary.categories, row[xc]);
    const int s = position(summary.series, row[sc]);
    cells.resize(summary.categories.size());
    for (auto& line : cells)
      line.resize(summary.series.size());
    Cell& cell = cells[c][s];
    if (cell.rows == 0)
      cell.first = r;
    else
      for (int k : compared) {
        const Row& first = rows[cell.first];
        if (first[k] != row[k])
          // Data lines are numbered from 2: line 1 is the header.
          throw InputError(file + ": lines " + std::to_string(cell.first + 2) + " and " + std::to_string(r + 2) +
                           " fall in one bar (" + columns.x + " " + quote(row[xc]) + ", " + columns.series + " " +
                           quote(row[sc]) + ") but differ in " + quote(header[k]) + " (" + quote(first[k]) +
                           " vs " + quote(row[k]) + "); give --average-over " + header[k] +
                           " to average them, or a table without the rows that differ");
      }
    cell.sum += value;
    cell.low  = std::min(cell.low, value);
    cell.high = std::max(cell.high, value);
    cell.rows += 1;
  }
  summary.mean.assign(summary.categories.size(),
                      std::vector<double>(summary.series.size(), std::numeric_limits<double>::quiet_NaN()));
  summary.low  = summary.mean;
  summary.high = summary.mean;
  summary.rows.assign(summary.categories.size(), std::vector<int>(summary.series.size(), 0));
  for (std::size_t c = 0; c < cells.size(); ++c)
    for (std::size_t s = 0; s < cells[c].size(); ++s) {
      summary.rows[c][s] = cells[c][s].rows;
      if (cells[c][s].rows > 0) {
        summary.mean[c][s] = cells[c][s].sum / cells[c][s].rows;
        summary.low[c][s]  = cells[c][s].low;
        summary.high[c][s] = cells[c][s].high;
      }
    }
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

std::string axis_label(const std::string& column)
{
  const auto ends_with = [&](std::string_view suffix) {
    return column.size() > suffix.size() && column.compare(column.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with("_per_s"))
    return column + " (1/s)";
  if (ends_with("_s"))
    return column + " (s)";
  if (ends_with("_bytes"))
    return column + " (bytes)";
  if (ends_with("_gib"))
    return column + " (GiB)";
  if (column == "mfu")
    return "mfu (fraction of peak FLOP/s)";
  return column;
}

} // namespace hetsim::sweep
