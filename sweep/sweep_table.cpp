#include "sweep/sweep_table.hpp"

#include "core/error.hpp"

#include <charconv>
#include <fstream>

namespace hetsim::sweep {

const std::vector<std::string>& sweep_columns()
{
  static const std::vector<std::string> columns = {
      "cluster", "model", "planner", "global_batch", "zero_stage", "pp_request", "seed", "beside", "status", "tp",
      "pp", "virtual_stages", "cp", "dp", "micro_batch", "grad_accum", "plan_zero_stage", "recompute",
      "estimate_s", "simulated_s", "tokens_per_s", "mfu", "slowdown", "beside_slowdown", "peak_memory_bytes",
      "note"};
  return columns;
}

std::string row_key(const Row& row)
{
  std::string key;
  for (int k = 0; k < kKeyColumns && k < static_cast<int>(row.size()); ++k)
    key += (k ? "\x1f" : "") + row[k];
  return key;
}

std::string csv_line(const Row& row)
{
  std::string line;
  for (std::size_t k = 0; k < row.size(); ++k) {
    if (k)
      line += ',';
    const std::string& f = row[k];
    if (f.find_first_of(",\"\n") == std::string::npos) {
      line += f;
      continue;
    }
    line += '"';
    for (char c : f)
      line += c == '"' ? std::string("\"\"") : std::string(1, c == '\n' ? ' ' : c);
    line += '"';
  }
  return line;
}

Row parse_csv_line(const std::string& line, const std::string& where)
{
  Row row(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"')
        row.back() += line[++i];
      else if (c == '"')
        quoted = false;
      else
        row.back() += c;
    } else if (c == '"')
      quoted = true;
    else if (c == ',')
      row.emplace_back();
    else if (c != '\r')
      row.back() += c;
  }
  if (quoted)
    throw InputError(where + ": unterminated quoted field");
  return row;
}

std::vector<Row> read_csv(const std::string& file, Row& header)
{
  std::ifstream in(file);
  if (!in)
    throw InputError(file + ": cannot read the file");
  std::string line;
  if (!std::getline(in, line))
    throw InputError(file + ": expected a header line, got an empty file");
  header = parse_csv_line(line, file + ": line 1");
  std::vector<Row> rows;
  for (int number = 2; std::getline(in, line); ++number) {
    if (line.empty())
      continue;
    rows.push_back(parse_csv_line(line, file + ": line " + std::to_string(number)));
    if (rows.back().size() != header.size())
      throw InputError(file + ": line " + std::to_string(number) + ": expected " + std::to_string(header.size()) +
                       " fields, got " + std::to_string(rows.back().size()));
  }
  return rows;
}

std::vector<Row> read_sweep_csv(const std::string& file)
{
  if (!std::ifstream(file))
    return {};
  Row header;
  std::vector<Row> rows = read_csv(file, header);
  if (header != sweep_columns())
    throw InputError(file + ": line 1: expected the sweep columns (" + csv_line(sweep_columns()) +
                     "), got " + csv_line(header) + "; give another --out to start a new sweep");
  return rows;
}

std::string sweep_csv(const std::vector<Row>& rows)
{
  std::string text = csv_line(sweep_columns()) + "\n";
  for (const Row& row : rows)
    text += csv_line(row) + "\n";
  return text;
}

nlohmann::json sweep_json(const std::vector<Row>& rows)
{
  const auto& columns = sweep_columns();
  nlohmann::json out  = nlohmann::json::array();
  for (const Row& row : rows) {
    nlohmann::json object = nlohmann::json::object();
    for (std::size_t k = 0; k < columns.size() && k < row.size(); ++k) {
      const std::string& f = row[k];
      double number        = 0;
      const auto [end, error] = std::from_chars(f.data(), f.data() + f.size(), number);
      // Key columns stay text (a cluster called "1" is still a name); other numeric fields become numbers.
      if (f.empty())
        object[columns[k]] = nullptr;
      else if (k >= static_cast<std::size_t>(kKeyColumns) && error == std::errc() && end == f.data() + f.size())
        object[columns[k]] = number;
      else
        object[columns[k]] = f;
    }
    out.push_back(std::move(object));
  }
  return out;
}

} // namespace hetsim::sweep
