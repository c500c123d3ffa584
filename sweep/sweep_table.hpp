#pragma once
/// Sweep results as a table: one row of text fields per cell, written as CSV (the resumable record) and JSON.
/// Numbers are formatted once, when a row is made, so every process writes the same bytes for the same cell.

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace hetsim::sweep {

using Row = std::vector<std::string>;

/// Column names, in order. The first kKeyColumns identify the cell.
const std::vector<std::string>& sweep_columns();
inline constexpr int kKeyColumns = 8;

/// "cluster,model,planner,global_batch,zero_stage,pp,seed,beside" values joined, the identity of a row.
std::string row_key(const Row& row);

/// RFC 4180 line (fields with commas or quotes are quoted), no newline.
std::string csv_line(const Row& row);
/// Inverse of csv_line; throws InputError prefixed with `where` on an unterminated quote.
Row parse_csv_line(const std::string& line, const std::string& where);

/// The rows of a sweep CSV; an absent file is empty. A header other than sweep_columns() is an InputError:
/// resuming into a file written by something else would mix tables.
std::vector<Row> read_sweep_csv(const std::string& file);
/// Any CSV with a header line: the header and the rows (for plots of other tables).
std::vector<Row> read_csv(const std::string& file, Row& header);

std::string sweep_csv(const std::vector<Row>& rows);
/// An array of objects; numeric fields become numbers, empty ones null.
nlohmann::json sweep_json(const std::vector<Row>& rows);

} // namespace hetsim::sweep
