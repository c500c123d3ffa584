#pragma once
/// A CSV table reduced for a chart: the mean of one numeric column per (x category, series), categories and
/// series in order of first appearance. Rows with a `status` column other than "ok" are left out.

#include "sweep/sweep_table.hpp"

#include <string>
#include <vector>

namespace hetsim::sweep {

/// Which columns a summary reads.
struct SummaryColumns {
  std::string x;      ///< bar groups
  std::string y;      ///< the numeric value averaged
  std::string series; ///< bars inside a group
  /// Columns whose values may differ among the rows averaged into one bar (seeds, say). Rows of one bar that
  /// differ anywhere else are an error rather than a mean of unlike things. In a sweep table only its key columns
  /// (sweep_columns()[0, kKeyColumns)) are compared, the rest being results; in any other table every column
  /// but y is.
  std::vector<std::string> average_over;
};

struct Summary {
  std::vector<std::string> categories; ///< x values
  std::vector<std::string> series;
  std::vector<std::vector<double>> mean; ///< [category][series]; NaN where no row has a value
  std::vector<std::vector<double>> low;  ///< [category][series]: the least of the rows' values (NaN: none)
  std::vector<std::vector<double>> high; ///< [category][series]: the greatest of the rows' values (NaN: none)
  std::vector<std::vector<int>> rows;    ///< [category][series]: how many rows each mean is of
};

/// Throws InputError naming `file` and the column when a column is missing, and naming both rows and the column
/// when two rows of one bar differ in a column not in `average_over`.
Summary summarize(const std::vector<Row>& rows, const Row& header, const SummaryColumns& columns,
                  const std::string& file);

/// Tab-separated: a header "x<TAB>series..." then one line per category; missing means are "NaN".
std::string summary_table(const Summary& summary, const std::string& x);

/// A y-axis label for a column, its unit read from the name: "simulated_s (s)", "peak_memory_bytes (bytes)",
/// "tokens_per_s (1/s)"; other names as they are.
std::string axis_label(const std::string& column);

} // namespace hetsim::sweep
