#include "sweep/summary.hpp"

#include "core/error.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

using namespace hetsim;
using namespace hetsim::sweep;

namespace {

/// The index of a sweep table's column.
std::size_t column(const std::string& name)
{
  const auto& columns = sweep_columns();
  const auto it       = std::find(columns.begin(), columns.end(), name);
  REQUIRE(it != columns.end());
  return static_cast<std::size_t>(it - columns.begin());
}

/// A sweep table's row with the given key columns and simulated_s; the results columns empty.
Row sweep_row(const std::string& cluster, const std::string& planner, const std::string& seed,
              const std::string& simulated_s, const std::string& status = "ok")
{
  Row row(sweep_columns().size());
  row[column("cluster")]      = cluster;
  row[column("model")]        = "preset:gpt2";
  row[column("planner")]      = planner;
  row[column("global_batch")] = "64";
  row[column("seed")]         = seed;
  row[column("status")]       = status;
  row[column("simulated_s")]  = simulated_s;
  return row;
}

} // namespace

TEST_CASE("summary: the mean per bar, in order of first appearance; failed rows and empty values left out")
{
  const Row header            = {"cluster", "planner", "simulated_s", "status"};
  const std::vector<Row> rows = {{"c1", "b", "3", "ok"}, {"c1", "a", "1", "ok"},         {"c2", "a", "2", "ok"},
                                 {"c2", "a", "4", "ok"}, {"c2", "b", "9", "infeasible"}, {"c2", "b", "", "ok"}};
  const Summary s             = summarize(rows, header, {"cluster", "simulated_s", "planner", {}}, "t.csv");
  CHECK(s.categories == std::vector<std::string>{"c1", "c2"});
  CHECK(s.series == std::vector<std::string>{"b", "a"});
  CHECK(s.mean[0][0] == 3);
  CHECK(s.mean[0][1] == 1);
  CHECK(s.mean[1][1] == 3); // (2 + 4) / 2
  CHECK(std::isnan(s.mean[1][0]));
  CHECK(s.rows[1][1] == 2);
  CHECK(summary_table(s, "cluster") == "cluster\tb\ta\nc1\t3\t1\nc2\tNaN\t3\n");
}

TEST_CASE("summary: rows of one bar that differ in a column not averaged over are refused, naming both lines")
{
  const Row header            = {"cluster", "planner", "model", "simulated_s"};
  const std::vector<Row> rows = {{"c1", "a", "gpt2", "1"}, {"c1", "a", "llama", "5"}};
  try {
    (void)summarize(rows, header, {"cluster", "simulated_s", "planner", {}}, "t.csv");
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    const std::string message = e.what();
    CHECK(message.find("t.csv: lines 2 and 3") == 0);
    CHECK(message.find("differ in 'model'") != std::string::npos);
    CHECK(message.find("--average-over model") != std::string::npos);
  }
  const Summary s = summarize(rows, header, {"cluster", "simulated_s", "planner", {"model"}}, "t.csv");
  CHECK(s.mean[0][0] == 3);
  CHECK_THROWS_AS(summarize(rows, header, {"cluster", "simulated_s", "planner", {"nope"}}, "t.csv"), InputError);
}

TEST_CASE("summary: in a sweep table only the key columns must agree, so seeds need --average-over seed")
{
  const Row& header     = sweep_columns();
  std::vector<Row> rows = {sweep_row("c1", "dtfm-random", "1", "10"), sweep_row("c1", "dtfm-random", "2", "20")};
  rows[1][column("estimate_s")] = "17"; // a result: free to differ
  CHECK_THROWS_AS(summarize(rows, header, {"cluster", "simulated_s", "planner", {}}, "r.csv"), InputError);
  const Summary s = summarize(rows, header, {"cluster", "simulated_s", "planner", {"seed"}}, "r.csv");
  CHECK(s.mean[0][0] == 15);
  rows[1][column("seed")] = "1"; // the same seed twice (a table concatenated with itself): nothing left to differ
  CHECK(summarize(rows, header, {"cluster", "simulated_s", "planner", {}}, "r.csv").mean[0][0] == 15);
}

TEST_CASE("axis labels carry the unit their column name gives")
{
  CHECK(axis_label("simulated_s") == "simulated_s (s)");
  CHECK(axis_label("tokens_per_s") == "tokens_per_s (1/s)");
  CHECK(axis_label("peak_memory_bytes") == "peak_memory_bytes (bytes)");
  CHECK(axis_label("seconds") == "seconds");
  CHECK(axis_label("mfu") == "mfu (fraction of peak FLOP/s)");
}
