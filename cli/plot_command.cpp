/// `hetsim plot`: a CSV (a sweep's results, or any table with a header) as a clustered bar chart drawn by
/// gnuplot: one group of bars per --x value, one bar per --series value, the mean of --y over the rows of that bar
/// (which must agree in every column but those of --average-over), with the rows' range as error bars.

#include "cli/command.hpp"
#include "core/error.hpp"
#include "core/output_file.hpp"
#include "sweep/summary.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>
#include <vector>

extern char** environ;

namespace hetsim::cli {
namespace {

namespace fs = std::filesystem;

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
    if (!folder.empty() && fs::exists(fs::path(folder) / "gnuplot"))
      return true;
  return false;
}

/// A gnuplot string: single-quoted, where nothing is special but the quote, which doubles. What goes in has no
/// control character (refused or replaced before), so no string can end a command and start another.
std::string quoted(const std::string& text)
{
  std::string out = "'";
  for (char c : text)
    out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

/// A label the user gave: one line, or refused naming the option.
void require_one_line(const std::string& text, const char* option)
{
  if (holds_control_characters(text))
    throw InputError(std::string(option) + ": expected text without control characters (a newline would end the "
                     "chart's command), got " + quote(text));
}

/// A name from the table as the chart shows it: control characters (a tab would shift the data's columns) as
/// spaces, and a file path as its file name without extension when that keeps the names apart.
std::vector<std::string> shown_names(const std::vector<std::string>& names)
{
  std::vector<std::string> shown, cleaned;
  std::map<std::string, int> uses;
  for (const std::string& name : names) {
    std::string clean = name;
    for (char& c : clean)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
        c = ' ';
    cleaned.push_back(clean);
    const fs::path path(clean);
    if (clean.find('/') != std::string::npos && path.has_stem())
      clean = path.stem().string();
    shown.push_back(clean);
    ++uses[clean];
  }
  for (std::size_t i = 0; i < shown.size(); ++i)
    if (uses[shown[i]] > 1) // two paths of one file name: keep them whole (cleaned)
      for (std::size_t j = 0; j < shown.size(); ++j)
        if (shown[j] == shown[i] && names[j] != shown[j])
          shown[j] = cleaned[j];
  return shown;
}

/// A column's name as an axis says it: "simulated iteration time (s)" for simulated_s, else the name with its
/// unit (sweep::axis_label).
std::string axis_title(const std::string& column)
{
  static const std::map<std::string, std::string> kKnown = {
      {"simulated_s", "simulated iteration time (s)"},
      {"estimate_s", "estimated iteration time (s)"},
      {"tokens_per_s", "tokens per second"},
      {"peak_memory_bytes", "peak memory per device (bytes)"},
      {"mfu", "MFU (fraction of peak FLOP/s)"},
      {"cluster", "cluster"},
      {"planner", "planner"}};
  const auto it = kKnown.find(column);
  return it != kKnown.end() ? it->second : sweep::axis_label(column);
}

/// The chart's data: a header, then per category its shown name and per series the mean, or the mean and the
/// range of the rows when `ranges` (gnuplot's histogram error bars read y, low, high).
std::string chart_data(const sweep::Summary& summary, bool ranges)
{
  const auto categories = shown_names(summary.categories);
  const auto series     = shown_names(summary.series);
  std::string text      = "x";
  for (const auto& s : series)
    text += "\t" + s + (ranges ? "\tlow\thigh" : "");
  text += "\n";
  const auto cell = [](double v) {
    char number[32];
    std::snprintf(number, sizeof number, "\t%.6g", v);
    return std::isnan(v) ? std::string("\tNaN") : std::string(number);
  };
  for (std::size_t c = 0; c < summary.categories.size(); ++c) {
    text += categories[c];
    for (std::size_t s = 0; s < summary.series.size(); ++s)
      text += cell(summary.mean[c][s]) + (ranges ? cell(summary.low[c][s]) + cell(summary.high[c][s]) : "");
    text += "\n";
  }
  return text;
}

/// The power of ten below the least value drawn: a log axis starts there, not at an arbitrary 0.001.
double log_axis_floor(const sweep::Summary& summary, const std::string& csv_file, const std::string& y)
{
  double least = INFINITY;
  for (const auto& line : summary.low)
    for (double v : line)
      if (!std::isnan(v))
        least = std::min(least, v);
  if (!(least > 0))
    throw InputError("--log-y: " + csv_file + ": column " + quote(y) +
                     " holds values of 0 or less, which a logarithmic axis cannot draw");
  return std::pow(10.0, std::ceil(std::log10(least)) - 1); // strictly below: a bar at 1 still shows
}

/// A folder of this process's own in the temporary directory (mkdtemp: a fresh name, mode 0700), removed with
/// what it holds when it goes: no other user can put a script there for gnuplot to run.
class PrivateFolder {
public:
  PrivateFolder()
  {
    std::string name = (fs::temp_directory_path() / "hetsim-plot-XXXXXX").string();
    if (!::mkdtemp(name.data()))
      throw InputError("plot: cannot make a folder in the temporary directory " +
                       fs::temp_directory_path().string() + " (" + std::strerror(errno) + ")");
    path = name;
  }
  ~PrivateFolder()
  {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  PrivateFolder(const PrivateFolder&)            = delete;
  PrivateFolder& operator=(const PrivateFolder&) = delete;
  fs::path path;
};

/// Runs `gnuplot SCRIPT` without a shell; its exit status.
int run_gnuplot(const fs::path& script)
{
  std::string program = "gnuplot", file = script.string();
  char* argv[] = {program.data(), file.data(), nullptr};
  pid_t pid    = 0;
  if (::posix_spawnp(&pid, "gnuplot", nullptr, nullptr, argv, environ) != 0)
    return 127;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string gnuplot_script(const PlotOptions& options, const sweep::Summary& summary, const fs::path& data,
                           bool ranges)
{
  const std::string extension = fs::path(options.out_file).extension().string();
  std::ostringstream gp;
  gp << "set terminal " << (extension == ".png" ? "pngcairo size 1000,600" : "svg size 1000,600") << "\n"
     << "set output " << quoted(options.out_file) << "\n"
     << "set title "
     << quoted(options.title.empty() ? axis_title(options.y) + " by " + axis_title(options.x) : options.title)
     << " noenhanced\n"
     << "set ylabel " << quoted(options.ylabel.empty() ? axis_title(options.y) : options.ylabel) << " noenhanced\n"
     << "set xlabel " << quoted(axis_title(options.x)) << " noenhanced\n"
     << "set style data histograms\n"
     << (ranges ? "set style histogram errorbars gap 1 lw 1\n" : "set style histogram clustered gap 1\n")
     << "set style fill solid 0.8 border -1\n"
     // Outside the plot area, so the legend never covers a bar; titled with what tells the bars apart.
     << "set key outside right top noenhanced title " << quoted(axis_title(options.series)) << "\n"
     << "set xtics rotate by -30 noenhanced\nset datafile separator '\\t'\n"
     << "set datafile missing 'NaN'\nset grid ytics\n";
  if (options.log_y)
    gp << "set logscale y\nset yrange [" << log_axis_floor(summary, options.csv_file, options.y) << ":*]\n";
  else
    gp << "set yrange [0:*]\n";
  const std::size_t step = ranges ? 3 : 1, last = 2 + step * (summary.series.size() - 1);
  gp << "plot for [c=2:" << last << ":" << step << "] " << quoted(data.string()) << " using "
     << (ranges ? "c:c+1:c+2" : "c") << ":xtic(1) title columnheader(c)\n";
  return gp.str();
}

int run_plot(const PlotOptions& options)
{
  if (options.csv_file.empty() || options.out_file.empty())
    throw InputError("plot: give --csv (a table with a header line) and --out (a .png or .svg file)");
  require_one_line(options.out_file, "--out");
  require_one_line(options.title, "--title");
  require_one_line(options.ylabel, "--ylabel");
  const std::string extension = fs::path(options.out_file).extension().string();
  if (extension != ".png" && extension != ".svg")
    throw InputError("--out: expected a file ending in .png or .svg, got " + quote(options.out_file));
  check_output(options.out_file, {options.csv_file}, "--out");
  if (!options.table_file.empty())
    check_output(options.table_file, {options.csv_file}, "--table");
  check_distinct_outputs({{"--out", options.out_file}, {"--table", options.table_file}});

  sweep::Row header;
  const auto rows    = sweep::read_csv(options.csv_file, header);
  const auto summary = sweep::summarize(rows, header, {options.x, options.y, options.series, options.average_over},
                                       options.csv_file);
  if (summary.categories.empty())
    throw InputError(options.csv_file + ": no row with a numeric " + quote(options.y) + " to plot");
  if (!options.table_file.empty())
    write_file_atomically(options.table_file, sweep::summary_table(summary, options.x));
  if (!gnuplot_on_path())
    throw BackendUnavailable("plot: gnuplot is not on PATH (scripts/setup.sh installs it)");

  // Error bars where some bar is the mean of several rows (seeds, repeats): their range, least to greatest.
  bool ranges = false;
  for (const auto& line : summary.rows)
    for (int n : line)
      ranges = ranges || n > 1;
  const PrivateFolder folder;
  const fs::path data = folder.path / "data.tsv", script = folder.path / "plot.gp";
  write_file_atomically(data.string(), chart_data(summary, ranges));
  write_file_atomically(script.string(), gnuplot_script(options, summary, data, ranges));
  const int status = run_gnuplot(script);
  if (status != 0)
    throw BackendUnavailable("plot: gnuplot failed (exit status " + std::to_string(status) + ") drawing " +
                             options.out_file);
  std::cout << "plot: " << summary.categories.size() << " " << options.x << " x " << summary.series.size() << " "
            << options.series << (ranges ? " (error bars: the range of the rows averaged)" : "") << " written to "
            << options.out_file << '\n';
  return 0;
}

} // namespace

CommandRunner add_plot_command(CLI::App& app)
{
  auto options      = std::make_shared<PlotOptions>();
  CLI::App* command = app.add_subcommand(
      "plot", "Draw a CSV table (e.g. hetsim sweep results) as a clustered bar chart with gnuplot: the mean of --y "
              "for each --x value and --series value, with error bars over the rows each mean averages.");
  command->add_option("--csv", options->csv_file, "input CSV with a header line");
  command->add_option("--out", options->out_file, "chart file, .png or .svg");
  command->add_option("--x", options->x, "column of the bar groups (default cluster)");
  command->add_option("--y", options->y, "numeric column to plot (default simulated_s)");
  command->add_option("--series", options->series, "column of the bars inside a group (default planner)");
  command->add_option("--title", options->title, "chart title");
  command->add_option("--ylabel", options->ylabel,
                      "y-axis label (default: --y in words with its unit, e.g. simulated iteration time (s))");
  command
      ->add_option("--average-over", options->average_over,
                   "columns whose values may differ among the rows averaged into one bar (e.g. seed); rows of one "
                   "bar that differ in any other column are refused; the bar's error bar spans their values")
      ->delimiter(',');
  command->add_option("--table", options->table_file, "also write the plotted means as a tab-separated table");
  command->add_flag("--log-y", options->log_y, "logarithmic y axis, from the power of ten below the least value");
  return [options] { return run_plot(*options); };
}

} // namespace hetsim::cli
