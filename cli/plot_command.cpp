/// `hetsim plot`: a CSV (a sweep's results, or any table with a header) as a clustered bar chart drawn by
/// gnuplot: one group of bars per --x value, one bar per --series value, the mean of --y over the rows of that bar
/// (which must agree in every column but those of --average-over).

#include "cli/command.hpp"
#include "core/error.hpp"
#include "core/output_file.hpp"
#include "sweep/summary.hpp"

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <vector>

namespace hetsim::cli {
namespace {

struct PlotOptions {
  std::string csv_file;
  std::string out_file;
  std::string x      = "cluster";
  std::string y      = "simulated_s";
  std::string series = "planner";
  std::string title;
  std::string ylabel;
  std::vector<std::string> average_over;
  std::string table_file;
  bool log_y = false;
};

bool gnuplot_on_path()
{
  const char* path = std::getenv("PATH");
  std::stringstream folders(path ? path : "");
  for (std::string folder; std::getline(folders, folder, ':');)
    if (!folder.empty() && std::filesystem::exists(std::filesystem::path(folder) / "gnuplot"))
      return true;
  return false;
}

/// gnuplot strings are single-quoted; a quote inside doubles.
std::string quoted(const std::string& text)
{
  std::string out = "'";
  for (char c : text)
    out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

int run_plot(const PlotOptions& options)
{
  if (options.csv_file.empty() || options.out_file.empty())
    throw InputError("plot: give --csv (a table with a header line) and --out (a .png or .svg file)");
  const std::string extension = std::filesystem::path(options.out_file).extension().string();
  if (extension != ".png" && extension != ".svg")
    throw InputError("--out: expected a file ending in .png or .svg, got '" + options.out_file + "'");
  check_output(options.out_file, {options.csv_file}, "--out");
  if (!options.table_file.empty())
    check_output(options.table_file, {options.csv_file, options.out_file}, "--table");

  sweep::Row header;
  const auto rows    = sweep::read_csv(options.csv_file, header);
  const auto summary = sweep::summarize(rows, header, {options.x, options.y, options.series, options.average_over},
                                       options.csv_file);
  if (summary.categories.empty())
    throw InputError(options.csv_file + ": no row with a numeric '" + options.y + "' to plot");
  const std::string table = sweep::summary_table(summary, options.x);
  if (!options.table_file.empty())
    write_file_atomically(options.table_file, table);
  if (!gnuplot_on_path())
    throw BackendUnavailable("plot: gnuplot is not on PATH (scripts/setup.sh installs it)");

  const auto folder = std::filesystem::temp_directory_path() /
                      ("hetsim-plot-" + std::to_string(std::hash<std::string>{}(options.out_file + table)));
  std::filesystem::create_directories(folder);
  const auto data = folder / "data.tsv", script = folder / "plot.gp";
  write_file_atomically(data.string(), table);
  std::ostringstream gp;
  gp << "set terminal " << (extension == ".png" ? "pngcairo size 1000,600" : "svg size 1000,600") << "\n"
     << "set output " << quoted(options.out_file) << "\n"
     << "set title " << quoted(options.title.empty() ? options.y + " by " + options.x : options.title) << " noenhanced\n"
     << "set ylabel " << quoted(options.ylabel.empty() ? sweep::axis_label(options.y) : options.ylabel)
     << " noenhanced\n"
     << "set style data histograms\nset style histogram clustered gap 1\nset style fill solid 0.8 border -1\n"
     // Outside the plot area, so the legend never covers a bar.
     << "set key outside right top noenhanced\nset xtics rotate by -30 noenhanced\nset datafile separator '\\t'\n"
     << "set datafile missing 'NaN'\nset grid ytics\nset yrange [0:*]\n"
     << (options.log_y ? "set logscale y\nset yrange [*:*]\n" : "") << "plot for [c=2:" << summary.series.size() + 1
     << "] " << quoted(data.string()) << " using c:xtic(1) title columnheader(c)\n";
  write_file_atomically(script.string(), gp.str());
  const std::string command = "gnuplot " + quoted(script.string()) + " 2>&1";
  const int status          = std::system(command.c_str());
  std::filesystem::remove_all(folder);
  if (status != 0)
    throw BackendUnavailable("plot: gnuplot failed (exit status " + std::to_string(status) + ") drawing " +
                             options.out_file);
  std::cout << "plot: " << summary.categories.size() << " " << options.x << " x " << summary.series.size() << " "
            << options.series << " written to " << options.out_file << '\n';
  return 0;
}

} // namespace

CommandRunner add_plot_command(CLI::App& app)
{
  auto options      = std::make_shared<PlotOptions>();
  CLI::App* command = app.add_subcommand(
      "plot", "Draw a CSV table (e.g. hetsim sweep results) as a clustered bar chart with gnuplot: the mean of --y "
              "for each --x value and --series value.");
  command->add_option("--csv", options->csv_file, "input CSV with a header line");
  command->add_option("--out", options->out_file, "chart file, .png or .svg");
  command->add_option("--x", options->x, "column of the bar groups (default cluster)");
  command->add_option("--y", options->y, "numeric column to plot (default simulated_s)");
  command->add_option("--series", options->series, "column of the bars inside a group (default planner)");
  command->add_option("--title", options->title, "chart title");
  command->add_option("--ylabel", options->ylabel, "y-axis label (default: --y with its unit, e.g. simulated_s (s))");
  command
      ->add_option("--average-over", options->average_over,
                   "columns whose values may differ among the rows averaged into one bar (e.g. seed); rows of one "
                   "bar that differ in any other column are refused")
      ->delimiter(',');
  command->add_option("--table", options->table_file, "also write the plotted means as a tab-separated table");
  command->add_flag("--log-y", options->log_y, "logarithmic y axis");
  return [options] { return run_plot(*options); };
}

} // namespace hetsim::cli
