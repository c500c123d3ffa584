#include "cli/goodput.hpp"

#include "sim/report/report_format.hpp"

#include <cmath>
#include <cstdio>

namespace hetsim::cli {
namespace {

constexpr double kYear = 365.25 * 86400;

std::string duration_text(double seconds)
{
  char text[48];
  if (std::isinf(seconds))
    return "never";
  if (seconds < 120)
    std::snprintf(text, sizeof text, "%.1f s", seconds);
  else if (seconds < 2 * 3600)
    std::snprintf(text, sizeof text, "%.1f min", seconds / 60);
  else if (seconds < 2 * 86400)
    std::snprintf(text, sizeof text, "%.1f h", seconds / 3600);
  else if (seconds < 2 * kYear)
    std::snprintf(text, sizeof text, "%.1f days", seconds / 86400);
  else // a link of a few bits per second makes checkpoints of ages: still a number a person can read
    std::snprintf(text, sizeof text, "%.3g years", seconds / kYear);
  return text;
}

} // namespace

void add_failures_option(CLI::App& command, std::string& file)
{
  command.add_option("--failures", file,
                     "what-if file of failure rates, restart and checkpoint costs and run length "
                     "(docs/failures.md): report the goodput, the tokens per second whose work is kept, "
                     "and the checkpoint interval that maximises it");
}

GoodputFigures goodput_of(const reliability::FailureModel& failures, const strategies::Plan& plan,
                          const strategies::Problem& problem, const sim::Report& report)
{
  GoodputFigures figures;
  figures.checkpoint_bytes = reliability::checkpoint_bytes(*problem.workload, plan.dtype);
  figures.costs            = reliability::checkpoint_costs(failures, plan, problem);
  figures.goodput = reliability::best_goodput(report.iteration_time_s, report.tokens_per_s * report.iteration_time_s,
                                              figures.costs, failures.run_s);
  return figures;
}

void print_goodput(const GoodputFigures& f, const reliability::FailureModel& failures, std::ostream& out)
{
  const auto& g = f.goodput;
  char line[256];
  out << "under failures (" << failures.file << "):\n";
  std::snprintf(line, sizeof line, "  cluster MTBF %s, %.1f failures expected over %s\n",
                duration_text(f.costs.mtbf_s).c_str(), g.expected_failures, duration_text(failures.run_s).c_str());
  out << line;
  std::snprintf(line, sizeof line, "  checkpoint %.3g GB, stops training %s, restart %s\n", f.checkpoint_bytes / 1e9,
                duration_text(f.costs.blocking_s).c_str(), duration_text(f.costs.restart_s).c_str());
  out << line;
  std::snprintf(line, sizeof line,
                "  checkpoint every %d iterations (%s): %.1f%% of the time kept, goodput %s tokens/s\n",
                g.interval_iterations, duration_text(g.interval_s).c_str(), 100 * g.useful_fraction,
                sim::with_commas(g.tokens_per_s).c_str());
  out << line;
  std::snprintf(line, sizeof line, "  (Young's interval %s keeps %.1f%%)\n", duration_text(g.young_interval_s).c_str(),
                100 * g.young_fraction);
  out << line;
}

nlohmann::json goodput_to_json(const GoodputFigures& f)
{
  const auto& g = f.goodput;
  auto finite   = [](double v) { return std::isinf(v) ? nlohmann::json() : nlohmann::json(v); };
  return {{"mtbf_s", finite(f.costs.mtbf_s)},
          {"checkpoint_bytes", f.checkpoint_bytes},
          {"checkpoint_blocking_s", f.costs.blocking_s},
          {"restart_s", f.costs.restart_s},
          {"interval_iterations", g.interval_iterations},
          {"interval_s", g.interval_s},
          {"useful_fraction", g.useful_fraction},
          {"goodput_tokens_per_s", g.tokens_per_s},
          {"young_interval_s", finite(g.young_interval_s)},
          {"young_useful_fraction", g.young_fraction},
          {"expected_failures", g.expected_failures}};
}

} // namespace hetsim::cli
