#include "sweep/run_sweep.hpp"

#include "core/error.hpp"
#include "core/output_file.hpp"
#include "sweep/run_cell.hpp"
#include "sweep/sweep_table.hpp"

#include <map>

namespace hetsim::sweep {
namespace {

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
  // Rank 0 reads the existing output and tells everyone, so all ranks agree on what is left.
  std::string existing;
  if (communicator.rank() == 0)
    existing = pack([&] {
      std::map<int, Row> rows;
      int k = 0;
      for (Row& row : read_sweep_csv(output.csv_file))
        rows[k++] = std::move(row);
      return rows;
    }());
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
    if (communicator.rank() != 0)
      continue;
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
  if (!output.json_file.empty())
    write_file_atomically(output.json_file, sweep_json(rows).dump(1) + "\n");
  return summary;
}

} // namespace hetsim::sweep
