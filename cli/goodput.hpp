#pragma once
/// `--failures FILE` in simulate and search: a plan's simulated iteration turned into the work it keeps when the
/// cluster fails (reliability/), printed after the report and written beside it.

#include "reliability/checkpoint.hpp"
#include "reliability/goodput.hpp"
#include "sim/report/report.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <ostream>
#include <string>

namespace hetsim::cli {

void add_failures_option(CLI::App& command, std::string& file);

struct GoodputFigures {
  double checkpoint_bytes = 0;
  reliability::CheckpointCosts costs;
  reliability::Goodput goodput;
};

/// The goodput of `plan` whose iteration `report` simulated.
GoodputFigures goodput_of(const reliability::FailureModel& failures, const strategies::Plan& plan,
                          const strategies::Problem& problem, const sim::Report& report);

void print_goodput(const GoodputFigures& figures, const reliability::FailureModel& failures, std::ostream& out);
nlohmann::json goodput_to_json(const GoodputFigures& figures);

} // namespace hetsim::cli
