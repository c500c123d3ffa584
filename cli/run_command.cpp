/// `hetsim run`: run one plan for real with an executor plugin, one process per device, and report like
/// `hetsim simulate` does from the measured trace.

#include "cli/command.hpp"
#include "cli/option_checks.hpp"
#include "cli/progress.hpp"
#include "cli/scenario.hpp"
#include "core/error.hpp"
#include "core/output_file.hpp"
#include "costmodel/kernel_time.hpp"
#include "exec/launcher.hpp"
#include "exec/merge.hpp"
#include "exec/plugin.hpp"
#include "exec/rank.hpp"
#include "exec/rank_environment.hpp"
#include "exec/run_space.hpp"
#include "exec/run_traces.hpp"
#include "exec/store_directory.hpp"
#include "sim/report/report.hpp"
#include "strategies/lowering/lower.hpp"
#include "traces/trace.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

namespace hetsim::cli {
namespace {

namespace fs = std::filesystem;

struct RunOptions {
  ScenarioOptions scenario;
  std::string executor = "cpu";
  bool list_executors  = false;
  int ranks            = 0;
  std::string trace_dir = "hetsim-run";
  double scale          = 1;
  int warmup            = 1;
  int iterations        = 3;
  double timeout_s      = 20;
  bool trace_kernels    = false;
  std::string host_dispatch; ///< --host-dispatch: "eager", microseconds, or empty (none)
  std::vector<std::string> namespaces;
  std::string store_dir;
  std::string bind;
  std::vector<std::string> argv; ///< the command line, re-run by every rank
};

/// Seconds the host spends issuing one kernel (exec::Workload::host_dispatch_s) on a device of `gpu`, from
/// --host-dispatch: "eager" for the cost model's figure, or microseconds; 0 when not given.
double host_dispatch_seconds(const std::string& value, const GpuSpec& gpu)
{
  if (value.empty())
    return 0;
  if (value == "eager")
    return costmodel::kernel_constants(gpu).host_dispatch_s;
  std::size_t used = 0;
  double microseconds = -1;
  try {
    microseconds = std::stod(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || !(microseconds >= 0 && microseconds <= 1e6))
    throw InputError("--host-dispatch: expected 'eager' or microseconds per kernel launch (0 to 1000000), got '" +
                     value + "'");
  return microseconds * 1e-6;
}

/// Makes the trace directory, or checks the one there, before any rank starts: one line naming it when it is a
/// file, cannot be made or cannot be written. True when it made it.
bool prepare_trace_dir(const std::string& dir)
{
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw InputError("--trace-dir " + dir + ": is a file; expected a directory (made when missing)");
  const bool made = fs::create_directories(dir, ec);
  if (ec)
    throw InputError("--trace-dir " + dir + ": cannot make it: " + ec.message());
  if (::access(dir.c_str(), W_OK) != 0)
    throw InputError("--trace-dir " + dir + ": is not writable (" + std::strerror(errno) + ")");
  return made;
}

/// Throws unless `file` is absent or an output of an earlier run that may be replaced: a trace (it begins as
/// traces::write_chrome_trace begins) or a report (JSON with an iteration time).
void check_replaceable(const std::string& file)
{
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(file, ec)))
    return;
  if (!fs::is_regular_file(fs::symlink_status(file, ec))) // a pipe would block the read below, a link mislead
    throw InputError("--trace-dir: " + file + " is not a trace or report of an earlier run; refusing to replace it");
  std::ifstream in(file, std::ios::binary);
  std::string head(64, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  bool ours = head.rfind("{\"displayTimeUnit\"", 0) == 0;
  if (!ours && fs::path(file).filename() == "report.json") {
    in.clear();
    in.seekg(0);
    const nlohmann::json report = nlohmann::json::parse(in, nullptr, false);
    ours = report.is_object() && report.contains("iteration_time_s");
  }
  if (!ours)
    throw InputError("--trace-dir: " + file + " is not a trace or report of an earlier run; refusing to replace it");
}

/// A refused run leaves nothing behind: the trace directory it made goes again (while still empty).
void remove_if_made(const std::string& dir, bool made)
{
  std::error_code ignored;
  if (made)
    fs::remove(dir, ignored); // removes an empty directory only
}

/// The trace directory held by this run until it ends (an exclusive flock on the directory, released when the
/// process exits): a second `hetsim run` into it is refused rather than replacing the first one's traces.
class TraceDirLock {
public:
  explicit TraceDirLock(const std::string& dir) : fd_(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC))
  {
    if (fd_ < 0)
      throw InputError("--trace-dir " + dir + ": cannot open it (" + std::strerror(errno) + ")");
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
      ::close(fd_);
      throw InputError("--trace-dir " + dir + ": another `hetsim run` is writing its traces there; wait for it "
                       "to end, or give another directory");
    }
    // Any other failure (NFS refuses flock on a directory opened for reading) leaves the run unguarded, not
    // refused: the lock only keeps two runs on one machine apart.
  }
  ~TraceDirLock() { ::close(fd_); }
  TraceDirLock(const TraceDirLock&)            = delete;
  TraceDirLock& operator=(const TraceDirLock&) = delete;

private:
  int fd_;
};

/// Whether `name` is a file a run writes into its trace directory: rank<i>.json, rank<i>.failed.json,
/// trace.json, report.json.
bool is_run_output(const std::string& name)
{
  if (name == "trace.json" || name == "report.json")
    return true;
  if (!name.starts_with("rank"))
    return false;
  std::size_t digits = 4;
  while (digits < name.size() && std::isdigit(static_cast<unsigned char>(name[digits])))
    ++digits;
  const std::string rest = name.substr(digits);
  return digits > 4 && (rest == ".json" || rest == ".failed.json");
}

/// Removes an earlier run's outputs from `dir` together, each checked to be one (check_replaceable), so that no
/// trace of that run stays beside this one's, and says so.
void clear_earlier_run(const std::string& dir)
{
  std::vector<fs::path> earlier;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (is_run_output(entry.path().filename().string())) {
      check_replaceable(entry.path().string());
      earlier.push_back(entry.path());
    }
  if (earlier.empty())
    return;
  std::cerr << "hetsim: note: --trace-dir " << dir << ": replacing the " << earlier.size()
            << " trace and report files of an earlier run\n";
  for (const fs::path& file : earlier)
    fs::remove(file, ec);
}

/// What sizes the run's traces (exec/run_space.hpp).
exec::Workload sizing_workload(const RunOptions& options, const Scenario& scenario,
                               const strategies::Schedule& schedule)
{
  exec::Workload workload;
  workload.schedule     = &schedule;
  workload.model        = &scenario.workload;
  workload.scale        = options.scale;
  workload.time_kernels = options.trace_kernels;
  return workload;
}

/// A failed run's error, its finished ranks' traces set aside as rank<i>.failed.json (exec/run_traces.hpp).
exec::RankFailure with_traces_set_aside(const exec::RankFailure& failure, const std::string& dir, int ranks)
{
  const int kept = exec::set_aside_rank_traces(dir, ranks);
  if (kept == 0)
    return failure;
  return exec::RankFailure(std::string(failure.what()) + "; the traces of the " + std::to_string(kept) +
                           " ranks that finished are kept as rank<i>.failed.json");
}

/// Merges the rank traces, writes trace.json and report.json, prints the report. Waits up to `wait_s` for rank
/// traces to appear (ranks started by mpirun/srun finish on their own).
void finish(const RunOptions& options, const Scenario& scenario, const strategies::Schedule& schedule, int ranks,
            double wait_s)
{
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  std::vector<traces::Trace> traces;
  for (int r = 0; r < ranks; ++r) {
    const std::string file = exec::rank_trace_file(options.trace_dir, r);
    while (!fs::exists(file) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!fs::exists(file))
      throw exec::RankFailure("run failed: rank " + std::to_string(r) + " wrote no trace (" + file + ")");
    traces.push_back(traces::read_chrome_trace(file));
  }
  const traces::Trace merged = exec::merge_rank_traces(traces, schedule);
  const std::string trace_file  = (fs::path(options.trace_dir) / "trace.json").string();
  const std::string report_file = (fs::path(options.trace_dir) / "report.json").string();
  traces::write_chrome_trace(merged, trace_file);
  const sim::Report report = sim::report_from_trace(scenario.plan, scenario.problem, schedule, merged);
  sim::print_report(report, std::cout, "measured iteration (" + options.executor + " executor, median of " +
                                           std::to_string(options.iterations) + ")");
  write_file_atomically(report_file, sim::report_to_json(report).dump(1) + "\n");
  std::cout << "trace written to " << trace_file << ", per-rank traces beside it; report written to " << report_file
            << '\n';
}

/// Runs as one rank; never returns on failure (other threads may still be inside the executor).
int run_as_rank(const RunOptions& options, const exec::RankIdentity& identity, const Scenario& scenario,
                const strategies::Schedule& schedule)
{
  // A peer that died leaves its sockets closed: writing to one must fail as an error this rank reports (naming
  // the peer), not kill it with SIGPIPE and make it look like the rank that failed first.
  ::signal(SIGPIPE, SIG_IGN);
  if (identity.world_size != scenario.cluster.device_count())
    throw InputError("run: " + std::to_string(identity.world_size) + " ranks were started but the cluster has " +
                     std::to_string(scenario.cluster.device_count()) + " devices; one rank runs each device");
  exec::RankSetup setup;
  setup.rank       = identity.rank;
  setup.world_size = identity.world_size;
  setup.timeout_s  = options.timeout_s;
  // The local launcher's fresh directory wins over a --store-dir that came along in the command line.
  const char* launcher_store  = std::getenv("HETSIM_STORE_DIR");
  const std::string store_dir = identity.from_local_launcher && launcher_store ? launcher_store : options.store_dir;
  if (store_dir.empty())
    throw InputError("--store-dir: ranks started by mpirun or srun need a rendezvous directory shared by all of them");
  setup.store_dir    = exec::rendezvous_dir(store_dir, identity);
  if (!identity.from_local_launcher) // the local launcher checked its own directory and the trace directory
    exec::require_free_space(setup.store_dir, exec::rendezvous_bytes(schedule), "--store-dir");
  // The run's own directory under --store-dir (mpirun, srun), once no rank needs it.
  auto remove_job_directory = [&] {
    std::error_code ignored;
    if (!identity.job.empty())
      fs::remove_all(setup.store_dir, ignored);
  };
  const char* bind   = std::getenv("HETSIM_BIND");
  setup.bind_address = !options.bind.empty() ? options.bind : bind ? bind : exec::default_bind_address();

  auto executor = exec::load_executor(options.executor); // refused before the trace directory is made
  const bool made_trace_dir = prepare_trace_dir(options.trace_dir);
  const std::string file    = exec::rank_trace_file(options.trace_dir, identity.rank);
  try {
    if (!identity.from_local_launcher)
      exec::require_free_space(options.trace_dir, exec::trace_bytes(sizing_workload(options, scenario, schedule)),
                               "--trace-dir");
    check_replaceable(file);
  } catch (const Error&) {
    remove_if_made(options.trace_dir, made_trace_dir);
    throw;
  }
  fs::remove(file); // before the rendezvous, so no rank can mistake an old trace for a new one

  exec::Workload workload;
  workload.schedule = &schedule;
  workload.model    = &scenario.workload;
  workload.dtype    = scenario.plan.dtype;
  workload.scale    = options.scale;
  workload.time_kernels = options.trace_kernels;
  workload.host_dispatch_s = host_dispatch_seconds(options.host_dispatch, scenario.cluster.gpu_of(identity.rank));
  // Threads of a failed iteration may still be blocked inside the executor: a failed rank ends the process at
  // once, without destroying the executor.
  auto end_process = [&](const std::string& message) {
    std::cerr << "hetsim: " << single_line(message) << std::endl;
    // The run is over for every rank: a failed run would otherwise leave a directory behind for each try.
    remove_job_directory();
    std::_Exit(2);
  };
  exec::RunOptions run;
  run.warmup      = options.warmup;
  run.iterations  = options.iterations;
  run.end_process = end_process;
  if (identity.rank == 0) { // one rank speaks for all: they run their iterations in step, a barrier apart
    const std::string what = "running iterations (" + std::to_string(options.warmup) + " warm-up, " +
                             std::to_string(options.iterations) + " timed)";
    run.on_iteration = [what, progress = stderr_progress()](int done, int total) { progress(what, done, total); };
  }
  try {
    const traces::Trace trace = exec::run_rank(*executor, setup, workload, scenario.cluster, run, options.executor);
    traces::write_chrome_trace(trace, file);
  } catch (const Error& e) {
    (void)executor.release();
    end_process(e.what());
  }
  if (!identity.from_local_launcher && identity.rank == 0) {
    try {
      finish(options, scenario, schedule, identity.world_size, 2 * options.timeout_s);
    } catch (const exec::RankFailure& failure) {
      throw with_traces_set_aside(failure, options.trace_dir, identity.world_size);
    }
    remove_job_directory(); // every rank has written its trace, so none uses it any more
  }
  return 0;
}

int run_run(RunOptions& options)
{
  if (options.list_executors) {
    const auto names = exec::list_executors();
    for (const auto& name : names)
      std::cout << name << '\n';
    if (std::find(names.begin(), names.end(), "cuda") == names.end())
      std::cout << "(no cuda executor: this build did not find the CUDA toolkit with NCCL)\n";
    return 0;
  }
  resolve_defaults(options.scenario);
  auto scenario = std::make_unique<Scenario>();
  load_scenario(options.scenario, *scenario);
  const strategies::Schedule schedule = strategies::lower(scenario->plan, scenario->problem, options.scenario.plan);

  if (const auto identity = exec::rank_from_environment())
    return run_as_rank(options, *identity, *scenario, schedule);

  const int devices = scenario->cluster.device_count();
  if (options.ranks != 0 && options.ranks != devices)
    throw InputError("--ranks: the cluster has " + std::to_string(devices) + " devices and one rank runs each, got " +
                     std::to_string(options.ranks));
  if (!options.namespaces.empty() && static_cast<int>(options.namespaces.size()) != devices)
    throw InputError("--netns: expected one network namespace per rank (" + std::to_string(devices) + "), got " +
                     std::to_string(options.namespaces.size()));
  (void)exec::load_executor(options.executor); // fail here, once, when the executor does not exist or cannot run
  (void)host_dispatch_seconds(options.host_dispatch, scenario->cluster.gpu_of(0)); // and when it cannot be read
  exec::StoreDirectory store;
  exec::require_free_space(store.path, exec::rendezvous_bytes(schedule), "the rendezvous directory (under TMPDIR)");
  const bool made_trace_dir = prepare_trace_dir(options.trace_dir);
  std::optional<TraceDirLock> lock;
  try {
    lock.emplace(options.trace_dir);
    for (const char* merged : {"trace.json", "report.json"})
      check_output((fs::path(options.trace_dir) / merged).string(), options.scenario.inputs(), "--trace-dir");
    exec::require_free_space(options.trace_dir, exec::trace_bytes(sizing_workload(options, *scenario, schedule)),
                             "--trace-dir");
    clear_earlier_run(options.trace_dir); // the last check: a refused run leaves an earlier run's files alone
  } catch (const Error&) {
    remove_if_made(options.trace_dir, made_trace_dir);
    throw;
  }
  exec::LaunchOptions launch;
  launch.ranks      = devices;
  launch.command    = options.argv;
  launch.command[0] = fs::read_symlink("/proc/self/exe").string();
  launch.namespaces = options.namespaces;
  launch.store_dir  = store.path;
  launch.grace_s    = options.timeout_s + 5;
  // A stopped rank's peers give up waiting on it after --timeout-s: it may continue until just before, so that
  // the launcher names it rather than their timeouts.
  launch.stop_tolerance_s = 0.9 * options.timeout_s;
  try {
    exec::launch(launch);
    finish(options, *scenario, schedule, devices, 0);
  } catch (const exec::RankFailure& failure) {
    throw with_traces_set_aside(failure, options.trace_dir, devices);
  }
  return 0;
}

} // namespace

CommandRunner add_run_command(CLI::App& app, int argc, char** argv)
{
  auto options = std::make_shared<RunOptions>();
  options->argv.assign(argv, argv + argc);
  CLI::App* command = app.add_subcommand(
      "run", "Run one training iteration of a plan for real with an executor (one process per device of the "
             "cluster), write one trace per rank plus a merged trace, and report as `simulate` does. Under mpirun "
             "or srun each process takes its rank from the environment (then give --store-dir).");
  options->scenario.add_to(*command);
  command->add_option("--executor", options->executor, "executor plugin: cpu (Eigen + Gloo) or cuda (cuBLAS + NCCL)");
  command->add_flag("--list-executors", options->list_executors, "list the executors this build has and exit");
  command->add_option("--ranks", options->ranks, "number of ranks (must equal the cluster's device count)")
      ->check(positive());
  command->add_option("--trace-dir", options->trace_dir, "directory for rank<i>.json, trace.json and report.json")
      ->capture_default_str();
  command->add_flag("--trace-kernels", options->trace_kernels,
                    "time each kernel of every compute task and write them to the traces (the kernels the cost model "
                    "prices; compare with `hetsim simulate --trace-kernels` or `hetsim validate`)");
  command->add_option("--host-dispatch", options->host_dispatch,
                     "before each kernel launch, keep the host busy as an eager framework's does: 'eager' for the "
                     "cost model's figure for the device (28 us per launch on every GPU type), or microseconds; "
                     "default none, kernels back to back");
  command->add_option("--scale", options->scale, "multiply hidden sizes by this (FLOPs and weights by its square)")
      ->check(finite_in(1e-4, 1.0));
  command->add_option("--warmup", options->warmup, "untimed iterations first")->check(non_negative());
  command->add_option("--iterations", options->iterations, "timed iterations (the trace keeps medians)")
      ->check(positive());
  command->add_option("--timeout-s", options->timeout_s,
                      "a rank waiting this long on a peer gives up and names it; the launcher kills what is left "
                      "5 s later")
      ->check(positive());
  command->add_option("--netns", options->namespaces, "network namespace of each rank (comma-separated, in rank order)")
      ->delimiter(',');
  command->add_option("--store-dir", options->store_dir, "rendezvous directory shared by all ranks (mpirun/srun)");
  command->add_option("--bind", options->bind, "address this rank listens on (default: the first non-loopback one)");
  return [options] { return run_run(*options); };
}

} // namespace hetsim::cli
