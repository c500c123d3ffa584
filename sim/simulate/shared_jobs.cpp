#include "sim/simulate/shared_jobs.hpp"

#include "core/error.hpp"
#include "sim/report/report_format.hpp"

#include <algorithm>
#include <numeric>
#include <ostream>

namespace hetsim::sim {
namespace {

using strategies::Collective;
using strategies::Schedule;
using strategies::Task;

/// Some jobs' schedules as one on the whole cluster, and where each job's tasks and collectives start in it.
struct JoinedSchedule {
  Schedule schedule;
  std::vector<int> jobs;              ///< indices into the SharedJob list, in join order
  std::vector<int> task_offsets;      ///< per joined job, then the total
  std::vector<int> collective_offsets; ///< the same for collectives

  /// The joined job (index into `jobs`) that owns the task or collective with this joined id.
  static int owner(const std::vector<int>& offsets, int id)
  {
    return static_cast<int>(std::upper_bound(offsets.begin(), offsets.end(), id) - offsets.begin()) - 1;
  }
};

void append_job(const SharedJob& job, JoinedSchedule& joined)
{
  const Schedule& own = *job.schedule;
  Schedule& all       = joined.schedule;
  const int t0        = static_cast<int>(all.tasks.size());
  const int c0        = static_cast<int>(all.collectives.size());
  const auto device   = [&job](int d) { return job.devices[d]; };
  for (Task task : own.tasks) {
    task.id += t0;
    task.device = device(task.device);
    if (task.peer >= 0)
      task.peer = device(task.peer);
    if (task.match >= 0)
      task.match += t0;
    if (task.collective >= 0)
      task.collective += c0;
    for (int& dep : task.deps)
      dep += t0;
    all.tasks.push_back(std::move(task));
  }
  for (Collective collective : own.collectives) {
    for (int& d : collective.devices)
      d = device(d);
    for (int& id : collective.tasks)
      id += t0;
    all.collectives.push_back(std::move(collective));
  }
  for (int d = 0; d < own.device_count; ++d)
    for (int s = 0; s < strategies::kStreamCount; ++s) {
      auto& queue = all.queues[device(d)][s];
      for (int id : own.queues[d][s])
        queue.push_back(id + t0);
    }
}

JoinedSchedule join(const Cluster& cluster, const std::vector<SharedJob>& jobs, const std::vector<int>& which)
{
  JoinedSchedule joined;
  Schedule& all    = joined.schedule;
  const Schedule& first = *jobs[which.front()].schedule;
  // The first job's shape names the tasks in messages (Schedule::task_name); the replay does not read it.
  all.tp = first.tp, all.pp = first.pp, all.dp = first.dp, all.ep = first.ep, all.cp = first.cp;
  all.layer_count    = first.layer_count;
  all.virtual_stages = first.virtual_stages;
  all.stage_starts   = first.stage_starts;
  all.device_count   = cluster.device_count();
  all.queues.resize(all.device_count);
  for (int k : which) {
    joined.jobs.push_back(k);
    joined.task_offsets.push_back(static_cast<int>(all.tasks.size()));
    joined.collective_offsets.push_back(static_cast<int>(all.collectives.size()));
    append_job(jobs[k], joined);
  }
  joined.task_offsets.push_back(static_cast<int>(all.tasks.size()));
  joined.collective_offsets.push_back(static_cast<int>(all.collectives.size()));
  return joined;
}

/// Each job's own replay options, called with its own tasks and collectives.
ReplayOptions joined_options(const JoinedSchedule& joined, const std::vector<ReplayOptions>& own,
                             const std::vector<SharedJob>& jobs, const SimOptions& options)
{
  ReplayOptions replay;
  replay.pipelined_rings = options.pipelined_rings;
  replay.slowdowns       = options.slowdowns;
  replay.progress        = options.progress;
  const Schedule* all    = &joined.schedule;
  replay.compute_seconds = [&joined, &own, &jobs](const Task& task) {
    const int j = JoinedSchedule::owner(joined.task_offsets, task.id);
    const int k = joined.jobs[j];
    return own[k].compute_seconds(jobs[k].schedule->tasks[task.id - joined.task_offsets[j]]);
  };
  // The replay passes collectives by reference into the joined schedule: their index is their address's offset.
  const auto job_collective = [&joined, &jobs, all](const Collective& collective) {
    const int c = static_cast<int>(&collective - all->collectives.data());
    const int j = JoinedSchedule::owner(joined.collective_offsets, c);
    const int k = joined.jobs[j];
    return std::pair<int, const Collective*>(k, &jobs[k].schedule->collectives[c - joined.collective_offsets[j]]);
  };
  replay.analytic_collective_seconds = [&own, job_collective](const Collective& collective) {
    const auto [k, mine] = job_collective(collective);
    return own[k].analytic_collective_seconds ? own[k].analytic_collective_seconds(*mine) : std::nullopt;
  };
  replay.collective_overhead_seconds = [&own, job_collective](const Collective& collective) {
    const auto [k, mine] = job_collective(collective);
    return own[k].collective_overhead_seconds ? own[k].collective_overhead_seconds(*mine) : 0.0;
  };
  replay.collective_compute_shares = [&own, job_collective](const Collective& collective) {
    const auto [k, mine] = job_collective(collective);
    return own[k].collective_compute_shares ? own[k].collective_compute_shares(*mine)
                                            : std::vector<double>(collective.tasks.size(), 0.0);
  };
  return replay;
}

/// Replays the joined schedule of `which`; returns each of those jobs' report (by job index, others empty) and
/// the links' usage.
std::vector<Report> replay_jobs(const Cluster& cluster, const std::vector<SharedJob>& jobs,
                                const std::vector<ReplayOptions>& own, const std::vector<int>& which,
                                const SimOptions& options, std::vector<LinkUsage>& usage)
{
  const JoinedSchedule joined = join(cluster, jobs, which);
  ReplayOptions replay        = joined_options(joined, own, jobs, options);
  replay.link_usage           = &usage;
  const std::vector<TaskTiming> timings = replay_isolated(cluster, joined.schedule, replay);
  std::vector<Report> reports(jobs.size());
  for (std::size_t j = 0; j < joined.jobs.size(); ++j) {
    const SharedJob& job = jobs[joined.jobs[j]];
    const std::vector<TaskTiming> mine(timings.begin() + joined.task_offsets[j],
                                       timings.begin() + joined.task_offsets[j + 1]);
    reports[joined.jobs[j]] = make_report(*job.plan, *job.problem, *job.schedule, mine);
  }
  return reports;
}

void check_jobs(const Cluster& cluster, const std::vector<SharedJob>& jobs)
{
  std::vector<int> owner(cluster.device_count(), -1);
  for (std::size_t k = 0; k < jobs.size(); ++k) {
    const SharedJob& job = jobs[k];
    if (job.plan == nullptr || job.problem == nullptr || job.schedule == nullptr || job.schedule->fold ||
        static_cast<int>(job.devices.size()) != job.schedule->device_count)
      throw InternalError("simulate_shared: job '" + job.name + "' is incomplete or folded");
    for (int d : job.devices) {
      if (d < 0 || d >= cluster.device_count())
        throw InternalError("simulate_shared: job '" + job.name + "' names device " + std::to_string(d));
      if (owner[d] >= 0)
        throw InputError("jobs '" + jobs[owner[d]].name + "' and '" + job.name + "' both use device " +
                         std::to_string(d) + ": jobs that share a cluster need devices of their own");
      owner[d] = static_cast<int>(k);
    }
  }
}

} // namespace

SharedRun simulate_shared(const Cluster& cluster, const std::vector<SharedJob>& jobs, const SimOptions& options)
{
  if (jobs.empty())
    throw InternalError("simulate_shared: no job");
  check_jobs(cluster, jobs);
  std::vector<ReplayOptions> own;
  for (const SharedJob& job : jobs)
    own.push_back(replay_options_for(*job.plan, *job.problem, *job.schedule, options));

  SharedRun run;
  run.alone.resize(jobs.size());
  std::vector<std::vector<LinkUsage>> alone_usage(jobs.size());
  for (int k = 0; k < static_cast<int>(jobs.size()); ++k)
    run.alone[k] = replay_jobs(cluster, jobs, own, {k}, options, alone_usage[k])[k];
  std::vector<int> all(jobs.size());
  std::iota(all.begin(), all.end(), 0);
  std::vector<LinkUsage> together_usage;
  run.together = replay_jobs(cluster, jobs, own, all, options, together_usage);

  for (std::size_t l = 0; l < together_usage.size(); ++l) {
    SharedLink link;
    int users = 0;
    for (std::size_t k = 0; k < jobs.size(); ++k) {
      link.bytes.push_back(alone_usage[k][l].bytes);
      link.busy_alone_s.push_back(alone_usage[k][l].busy_s);
      users += alone_usage[k][l].bytes > 0;
    }
    if (users < 2)
      continue;
    const LinkUsage& usage     = together_usage[l];
    link.label                 = usage.label;
    link.kind                  = std::string(link_kind_name(usage.kind));
    link.bandwidth_bytes_per_s = usage.bandwidth_bytes_per_s >= kUnlimitedBandwidth ? 0 : usage.bandwidth_bytes_per_s;
    link.busy_together_s       = usage.busy_s;
    run.links.push_back(std::move(link));
  }
  std::stable_sort(run.links.begin(), run.links.end(),
                   [](const SharedLink& a, const SharedLink& b) { return a.busy_together_s > b.busy_together_s; });
  return run;
}

nlohmann::json shared_run_to_json(const std::vector<SharedJob>& jobs, const SharedRun& run)
{
  nlohmann::json json;
  for (std::size_t k = 0; k < jobs.size(); ++k)
    json["jobs"].push_back({{"name", jobs[k].name},
                            {"devices", jobs[k].devices},
                            {"alone", report_to_json(run.alone[k])},
                            {"together", report_to_json(run.together[k])},
                            {"slowdown", run.slowdown(k)}});
  json["shared_links"] = nlohmann::json::array();
  for (const SharedLink& link : run.links)
    json["shared_links"].push_back({{"label", link.label},
                                    {"kind", link.kind},
                                    {"bandwidth_bytes_per_s", link.bandwidth_bytes_per_s},
                                    {"bytes", link.bytes},
                                    {"busy_alone_s", link.busy_alone_s},
                                    {"busy_together_s", link.busy_together_s}});
  return json;
}

void print_shared_run(const Cluster& cluster, const std::vector<SharedJob>& jobs, const SharedRun& run,
                      std::ostream& out)
{
  out << "jobs sharing " << cluster.name() << "'s network (each also replayed alone):\n";
  std::vector<std::vector<std::string>> rows{
      {"job", "devices", "alone s", "together s", "slowdown", "tokens/s together"}};
  for (std::size_t k = 0; k < jobs.size(); ++k)
    rows.push_back({jobs[k].name, std::to_string(jobs[k].devices.size()), seconds(run.alone[k].iteration_time_s),
                    seconds(run.together[k].iteration_time_s),
                    format("%.3fx", run.slowdown(k)),
                    with_commas(run.together[k].tokens_per_s)});
  print_table(rows, out);
  if (run.links.empty()) {
    out << "no link carries bytes of two jobs\n";
    return;
  }
  out << "links two or more jobs meet on (" << run.links.size() << "), by busy time together:\n";
  std::vector<std::vector<std::string>> link_rows{{"link", "kind"}};
  for (const SharedJob& job : jobs)
    link_rows.front().push_back(job.name + " GiB");
  link_rows.front().push_back("busy together s");
  link_rows.front().push_back("busy alone s (sum)");
  constexpr std::size_t kPrinted = 10;
  for (std::size_t l = 0; l < std::min(run.links.size(), kPrinted); ++l) {
    const SharedLink& link = run.links[l];
    std::vector<std::string> row{link.label, link.kind};
    for (double bytes : link.bytes)
      row.push_back(gib(bytes));
    row.push_back(seconds(link.busy_together_s));
    row.push_back(seconds(std::accumulate(link.busy_alone_s.begin(), link.busy_alone_s.end(), 0.0)));
    link_rows.push_back(std::move(row));
  }
  print_table(link_rows, out);
  if (run.links.size() > kPrinted)
    out << "  (" << run.links.size() - kPrinted << " more in the report)\n";
}

} // namespace hetsim::sim
