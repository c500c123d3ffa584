#include "sweep/run_sweep.hpp"

#include "core/error.hpp"
#include "core/output_file.hpp"
#include "sweep/run_cell.hpp"
#include "sweep/sweep_table.hpp"

#include <algorithm>
#include <filesystem>
#include <map>

namespace hetsim::sweep {
namespace {

namespace fs = std::filesystem;

/// Where rank r > 0 keeps the rows it has finished, rewritten after each of its cells, so that a job killed
/// mid-sweep (every process at once, as a scheduler does) loses no finished cell: `<csv>.part<r>`.
std::string part_file(const std::string& csv_file, int rank)
{
  return csv_file + ".part" + std::to_string(rank);
}

/// The part files beside `csv_file` from any earlier run, whatever its number of ranks.
std::vector<std::string> existing_part_files(const std::string& csv_file)
{
  const fs::path csv(csv_file);
  const fs::path dir    = csv.has_parent_path() ? csv.parent_path() : fs::path(".");
  const std::string stem = csv.filename().string() + ".part";
  std::vector<std::string> found;
  std::error_code ignored;
  for (const auto& entry : fs::directory_iterator(dir, ignored)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > stem.size() && name.compare(0, stem.size(), stem) == 0 &&
        name.find_first_not_of("0123456789", stem.size()) == std::string::npos)
      found.push_back((csv.has_parent_path() ? dir / name : fs::path(name)).string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

/// Rows in cell order: the resumed ones and the new ones (a cell has one or the other).
std::vector<Row> ordered_rows(const std::vector<Cell>& cells,
                              const std::map<std::string, Row>& resumed, const std::map<int, Row>& fresh)
{
  std::vector<Row> rows;
  for (const Cell& cell : cells) {
    if (auto it = fresh.find(cell.index); it != fresh.end())
      rows.push_back(it->second);
    else if (auto old = resumed.find(row_key(cell_key(cell))); old != resumed.end())
      rows.push_back(old->second);
  }
  return rows;
}

/// Rows travel between ranks as "index\n<csv line>\n" records.
std::string pack(const std::map<int, Row>& rows)
{
  std::string text;
  for (const auto& [index, row] : rows)
    text += std::to_string(index) + "\n" + csv_line(row) + "\n";
  return text;
}

void unpack(const std::string& text, std::map<int, Row>& rows)
{
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t index_end = text.find('\n', at);
    const std::size_t line_end  = text.find('\n', index_end + 1);
    rows[std::stoi(text.substr(at, index_end - at))] =
        parse_csv_line(text.substr(index_end + 1, line_end - index_end - 1), "sweep: gathered row");
    at = line_end + 1;
  }
}

} // namespace

SweepSummary run_sweep(const SweepSpec& spec, const SweepOutput& output, Communicator& communicator,
                       const strategies::ProgressFn& progress)
{
  const std::vector<Cell> cells = sweep_cells(spec);
  // Rank 0 reads the existing output, with the rows other ranks of an interrupted run kept in part files, and
  // tells everyone, so all ranks agree on what is left. It folds the part files into the CSV before any rank
  // rewrites its own, so a second interruption loses nothing either.
  std::string existing;
  if (communicator.rank() == 0) {
    std::map<int, Row> rows;
    int k = 0;
    for (Row& row : read_sweep_csv(output.csv_file))
      rows[k++] = std::move(row);
    const std::vector<std::string> parts = existing_part_files(output.csv_file);
    for (const std::string& part : parts)
      for (Row& row : read_sweep_csv(part))
        rows[k++] = std::move(row);
    if (!parts.empty()) {
      std::map<std::string, Row> by_key;
      for (auto& [index, row] : rows)
        by_key.emplace(row_key(row), row);
      write_file_atomically(output.csv_file, sweep_csv(ordered_rows(cells, by_key, {})));
      for (const std::string& part : parts)
        fs::remove(part);
    }
    existing = pack(rows);
  }
  existing = communicator.broadcast(existing);
  std::map<int, Row> existing_rows;
  unpack(existing, existing_rows);
  std::map<std::string, Row> resumed;
  for (auto& [k, row] : existing_rows)
    resumed[row_key(row)] = std::move(row);

  std::vector<Cell> pending;
  SweepSummary summary;
  summary.cells = static_cast<int>(cells.size());
  for (const Cell& cell : cells)
    if (resumed.count(row_key(cell_key(cell))))
      ++summary.resumed;
    else
      pending.push_back(cell);
  summary.run = static_cast<int>(pending.size());

  const SweepInputs inputs = load_sweep_inputs(cells);
  std::map<int, Row> mine;
  const int ranks = communicator.size();
  const long long my_total = (static_cast<long long>(pending.size()) - communicator.rank() + ranks - 1) / ranks;
  for (std::size_t k = communicator.rank(); k < pending.size(); k += ranks) {
    mine[pending[k].index] = run_cell(pending[k], spec, inputs);
    if (communicator.rank() != 0) {
      write_file_atomically(part_file(output.csv_file, communicator.rank()), sweep_csv(ordered_rows(cells, {}, mine)));
      continue;
    }
    write_file_atomically(output.csv_file, sweep_csv(ordered_rows(cells, resumed, mine)));
    if (progress)
      progress("sweep cells (rank 0 of " + std::to_string(ranks) + ")", static_cast<long long>(mine.size()),
               my_total);
  }

  const std::vector<std::string> parts = communicator.gather(pack(mine));
  if (communicator.rank() != 0)
    return summary;
  std::map<int, Row> fresh;
  for (const std::string& part : parts)
    unpack(part, fresh);
  const std::vector<Row> rows = ordered_rows(cells, resumed, fresh);
  write_file_atomically(output.csv_file, sweep_csv(rows));
  for (int r = 1; r < ranks; ++r) // every row is in the CSV now
    fs::remove(part_file(output.csv_file, r));
  if (!output.json_file.empty())
    write_file_atomically(output.json_file, sweep_json(rows).dump(1) + "\n");
  return summary;
}

} // namespace hetsim::sweep
