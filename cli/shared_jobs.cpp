#include "cli/shared_jobs.hpp"

#include "cli/progress.hpp"
#include "cli/scenario.hpp"
#include "core/cluster_json.hpp"
#include "core/error.hpp"
#include "core/output_file.hpp"
#include "costmodel/calibration.hpp"
#include "costmodel/link_class.hpp"
#include "jobs/jobs_file.hpp"
#include "sim/platform/slowdowns.hpp"
#include "sim/simulate/shared_jobs.hpp"

#include <iostream>
#include <optional>

namespace hetsim::cli {

int run_shared_jobs(const SharedJobsOptions& options)
{
  if (options.cluster.empty())
    throw InputError("--jobs: expected --cluster FILE, the cluster the jobs share");
  std::vector<std::string> inputs{options.cluster, options.jobs_file, options.calibration_file,
                                  options.slowdowns_file};
  const nlohmann::json jobs_json = jobs::read_jobs_file(options.jobs_file); // read once: it may be a pipe
  for (const std::string& named : jobs::files_named(jobs_json, options.jobs_file))
    inputs.push_back(named);
  if (!options.report_file.empty())
    check_output(options.report_file, inputs, "--report");

  Cluster cluster = load_cluster(options.cluster);
  std::optional<costmodel::Calibration> calibration;
  if (!options.calibration_file.empty()) {
    calibration = costmodel::load_calibration(options.calibration_file);
    report_calibration_match(*calibration, options.calibration_file, cluster); // says so when it fits none
    cluster = costmodel::calibrated_cluster(cluster, *calibration);
  }
  std::vector<sim::Slowdown> slowdowns;
  if (!options.slowdowns_file.empty())
    slowdowns = sim::load_slowdowns(options.slowdowns_file, cluster);
  const auto jobs = jobs::load_jobs(jobs_json, options.jobs_file, cluster, options.allow_oom);
  for (const auto& job : jobs) {
    for (const std::string& line : job->workload.assumptions)
      std::cerr << "hetsim: note: job '" << job->name << "': " << line << '\n';
    const auto& plan = job->plan;
    std::cout << "job " << job->name << ": " << job->workload.name << " on " << job->part.cluster.device_count()
              << " devices of " << job->part.nodes.size() << " nodes, tp " << plan.tp << " x pp " << plan.pp
              << " x dp " << plan.replicas() << ", global batch " << plan.global_batch() << " ("
              << job->plan_origin << ")\n";
  }

  sim::SimOptions sim_options;
  sim_options.calibration         = calibration ? &*calibration : nullptr;
  sim_options.analytic_intra_node = options.analytic_intra_node;
  sim_options.pipelined_rings     = options.pipelined_rings;
  sim_options.slowdowns           = slowdowns.empty() ? nullptr : &slowdowns;
  sim_options.progress            = replay_progress();
  const auto shared               = jobs::shared_jobs(jobs);
  const sim::SharedRun run        = sim::simulate_shared(cluster, shared, sim_options);
  sim::print_shared_run(cluster, shared, run, std::cout);
  if (!options.report_file.empty()) {
    write_file_atomically(options.report_file, sim::shared_run_to_json(shared, run).dump(1) + "\n");
    std::cout << "report written to " << options.report_file << '\n';
  }
  return 0;
}

} // namespace hetsim::cli
