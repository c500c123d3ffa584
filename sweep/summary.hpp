#pragma once
/// A CSV table reduced for a chart: the mean of one numeric column per (x category, series), categories and
/// series in order of first appearance. Rows with a `status` column other than "ok" are left out.

#include "sweep/sweep_table.hpp"

#include <string>
#include <vector>

namespace hetsim::sweep {

struct Summary {
  std::vector<std::string> categories; ///< x values
  std::vector<std::string> series;
  std::vector<std::vector<double>> mean; ///< [category][series]; NaN where no row has a value
};

/// Throws InputError naming `file` and the column when a column is missing.
Summary summarize(const std::vector<Row>& rows, const Row& header, const std::string& x, const std::string& y,
                  const std::string& series, const std::string& file);

/// Tab-separated: a header "x<TAB>series..." then one line per category; missing means are "NaN".
std::string summary_table(const Summary& summary, const std::string& x);

} // namespace hetsim::sweep
