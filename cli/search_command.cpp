/// `hetsim search`: a planner's candidates ranked by the analytic cost model, the best re-scored in the simulator.

#include "cli/command.hpp"
#include "cli/option_checks.hpp"
#include "cli/goodput.hpp"
#include "cli/progress.hpp"
#include "cli/scenario.hpp"
#include "core/cluster_json.hpp"
#include "core/error.hpp"
#include "sim/report/report_format.hpp"
#include "strategies/search/plan_space.hpp"
#include "core/output_file.hpp"
#include "core/software_release.hpp"
#include "core/units.hpp"
#include "costmodel/calibration.hpp"
#include "costmodel/layer_profile.hpp"
#include "launch/plan_export.hpp"
#include "sim/simulate/rescore.hpp"
#include "strategies/lowering/band.hpp"
#include "strategies/lowering/memory.hpp"
#include "strategies/plan/plan_json.hpp"
#include "strategies/planners/registry.hpp"
#include "strategies/profiling/device_profiles.hpp"
#include "strategies/search/search.hpp"

#include <cmath>
#include <functional>
#include <cstdio>
#include <iostream>
#include <optional>

namespace hetsim::cli {
namespace {

struct SearchOptions {
  std::string cluster;
  std::string model;
  int seq_len = 0;
  int global_batch    = 0;
  std::string planner = "amp";
  int top_k           = 10;
  std::string memory_limit;
  std::string workspace;
  std::string dtype; ///< empty: the model's
  std::string framework = "megatron";
  bool framework_given  = false; ///< --framework was on the command line
  bool autocast         = false; ///< --autocast: a plain PyTorch loop's fp32 weights under torch.autocast
  std::string collective_algorithm = "ring"; ///< --collective-algorithm
  std::string pytorch;             ///< the PyTorch release the candidates run with; empty: not said
  std::string out_file;
  std::string best_file;
  std::string profile_file;
  std::string device_profile_file;
  std::string calibration_file;
  std::string failures_file;
  std::string objective = "time"; ///< what orders the simulated candidates: "time" or "goodput" (--failures)
  std::uint64_t seed = 1;
  bool anneal        = false;
  std::vector<std::string> flags;
  bool list                = false;
  bool pipelined_rings     = false;
  bool analytic_intra_node = false;
  bool exact               = false;
};

std::string memory_status(const strategies::Candidate& c)
{
  if (c.fits())
    return "fits";
  char text[96];
  std::snprintf(text, sizeof text, "OOM dev %d (%s) +%.2f GiB", c.memory_overflow->device,
                c.memory_overflow->gpu.c_str(), c.memory_overflow->over_bytes() / units::kGiB);
  return text;
}

/// "12.50 GiB more than its fullest device, 3 (V100-SXM2-16GB), holds", for a candidate that does not fit (other
/// devices may be over too).
std::string overflow_text(const strategies::Candidate& c)
{
  char text[256];
  std::snprintf(text, sizeof text, "%.2f GiB more than its fullest device, %d (%s), holds",
                c.memory_overflow->over_bytes() / units::kGiB, c.memory_overflow->device,
                c.memory_overflow->gpu.c_str());
  return text;
}

std::string join(const std::vector<int>& values)
{
  std::string text;
  for (std::size_t i = 0; i < values.size(); ++i)
    text += (i ? "," : "") + std::to_string(values[i]);
  return text;
}

/// Micro-batch and accumulation, "4x8" when every replica agrees, "2..4 x 8" otherwise.
std::string batch_text(const strategies::Plan& plan)
{
  const auto [mb_min, mb_max] = std::minmax_element(plan.micro_batch.begin(), plan.micro_batch.end());
  const auto [ga_min, ga_max] = std::minmax_element(plan.grad_accum.begin(), plan.grad_accum.end());
  auto range                  = [](int lo, int hi) {
    return lo == hi ? std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi);
  };
  return range(*mb_min, *mb_max) + "x" + range(*ga_min, *ga_max);
}

/// Why `framework`'s own export refuses a plan (PlannerContext::cannot_launch): Megatron-LM's arguments,
/// DeepSpeed's config, Megatron-DeepSpeed's arguments and config, the torchrun launch of an FSDP script. Only refusals of the plan count, which name it
/// "candidate"; one of the model or the cluster refuses every plan alike and is for `hetsim export` to say.
std::function<std::string(const strategies::Plan&)> launch_check(const Cluster& cluster,
                                                                 const models::Workload& workload,
                                                                 strategies::Framework framework,
                                                                 const SearchOptions& options)
{
  launch::ExportFormat format = launch::ExportFormat::megatron;
  if (framework == strategies::Framework::deepspeed)
    format = launch::ExportFormat::deepspeed;
  else if (framework == strategies::Framework::fsdp)
    format = launch::ExportFormat::torchrun;
  else if (framework == strategies::Framework::megatron_deepspeed)
    format = launch::ExportFormat::megatron_deepspeed;
  return [&cluster, &workload, format, model = options.model,
          cluster_file = options.cluster](const strategies::Plan& plan) -> std::string {
    static const std::string origin = "candidate";
    const launch::ExportInputs inputs{&cluster, &workload, &plan, origin, model, cluster_file};
    try {
      (void)launch::export_plan(inputs, format);
    } catch (const InputError& e) {
      const std::string what = e.what(), prefix = origin + ": ";
      if (what.rfind(prefix, 0) == 0)
        return what.substr(prefix.size());
    }
    return {};
  };
}

struct Row {
  const strategies::Candidate* candidate = nullptr;
  std::optional<sim::Report> simulated;
  std::optional<GoodputFigures> goodput; ///< with --failures, of a simulated candidate
  std::optional<costmodel::PredictionBand> band; ///< of a simulated candidate's time
  bool overlaps_best = false; ///< its band reaches into the best's: the measured order may differ
  std::string memory_verdict; ///< "fits", "at risk" or "does not fit" (strategies::memory_verdict)
  std::string memory_risk;    ///< at risk: "memory at risk (97.0% of dev 20, V100-SXM2-32GB)"; else empty
};

nlohmann::json row_to_json(const Row& row, int rank, std::string_view planner)
{
  const auto& c = *row.candidate;
  nlohmann::json json;
  json["rank"]              = rank;
  json["planner"]           = planner;
  json["estimate_s"]        = c.estimate.iteration_time_s;
  json["simulated_s"]       = row.simulated ? nlohmann::json(row.simulated->iteration_time_s) : nlohmann::json();
  json["tokens_per_s"]      = row.simulated ? nlohmann::json(row.simulated->tokens_per_s) : nlohmann::json();
  json["mfu"]               = row.simulated ? nlohmann::json(row.simulated->mfu) : nlohmann::json();
  json["peak_memory_bytes"] = units::whole_bytes(c.peak_memory_bytes);
  json["fits"]              = c.fits();
  json["memory_verdict"]    = row.memory_verdict;
  if (!c.fits())
    json["memory_overflow"] = {{"device", c.memory_overflow->device},
                               {"gpu", c.memory_overflow->gpu},
                               {"needed_bytes", units::whole_bytes(c.memory_overflow->needed_bytes)},
                               {"capacity_bytes", units::whole_bytes(c.memory_overflow->capacity_bytes)}};
  json["note"] = c.note;
  if (row.band) {
    json["iteration_time_s_band"] = {row.band->low, row.band->high};
    json["band_reasons"]          = row.band->reasons;
    json["overlaps_best"]         = row.overlaps_best;
  }
  if (row.goodput)
    json["goodput"] = goodput_to_json(*row.goodput);
  json["plan"] = strategies::plan_to_json(c.plan);
  return json;
}

void print_table(const std::vector<Row>& rows, std::size_t shown, std::ostream& out)
{
  char line[512];
  std::snprintf(line, sizeof line, "%4s %4s %4s %2s %3s %4s %3s %9s %-24s %11s %11s %8s  %s\n", "rank", "tp", "pp",
                "v", "cp", "dp", "ep", "mb x acc", "stage starts", "estimate s", "simulated s", "peak GiB", "memory / note");
  out << line;
  for (std::size_t i = 0; i < rows.size() && i < shown; ++i) {
    const auto& c      = *rows[i].candidate;
    std::string starts = join(c.plan.stage_starts);
    if (starts.size() > 24)
      starts = starts.substr(0, 21) + "...";
    char simulated[32] = "-";
    if (rows[i].simulated)
      std::snprintf(simulated, sizeof simulated, "%.4g", rows[i].simulated->iteration_time_s);
    std::string status = memory_status(c);
    if (!c.note.empty())
      status += "; " + c.note;
    if (!rows[i].memory_risk.empty())
      status += "; " + rows[i].memory_risk;
    if (rows[i].overlaps_best)
      status += "; within the best's band";
    if (rows[i].goodput) {
      char goodput[96];
      std::snprintf(goodput, sizeof goodput, "; goodput %s tokens/s (%.1f%% kept)",
                    sim::with_commas(rows[i].goodput->goodput.tokens_per_s).c_str(),
                    100 * rows[i].goodput->goodput.useful_fraction);
      status += goodput;
    }
    std::snprintf(line, sizeof line, "%4zu %4d %4d %2d %3d %4d %3d %9s %-24s %11.4g %11s %8.2f  %s\n", i + 1,
                  c.plan.tp, c.plan.pp, c.plan.virtual_stages, c.plan.cp, c.plan.replicas(), c.plan.ep,
                  batch_text(c.plan).c_str(),
                  starts.c_str(),
                  c.estimate.iteration_time_s, simulated, c.peak_memory_bytes / units::kGiB, status.c_str());
    out << line;
  }
  if (rows.size() > shown)
    out << "... " << rows.size() - shown << " more in --out\n";
}

int run_search(const SearchOptions& options)
{
  if (options.list) {
    std::size_t width = 0;
    for (const auto& info : strategies::planners())
      width = std::max(width, info.name.size());
    for (const auto& info : strategies::planners()) {
      std::string flags;
      for (std::string_view flag : info.flags)
        flags += (flags.empty() ? " (--flag " : ", ") + std::string(flag);
      std::printf("%-*s  %s%s\n", static_cast<int>(width), std::string(info.name).c_str(),
                  std::string(info.description).c_str(), flags.empty() ? "" : (flags + ")").c_str());
    }
    return 0;
  }
  const auto& info                = strategies::find_planner(options.planner);
  std::vector<std::string> flags = options.flags;
  if (options.anneal)
    flags.push_back("anneal");
  strategies::check_planner_flags(info, flags);
  if (options.cluster.empty() || options.model.empty() || options.global_batch <= 0)
    throw InputError("search: give --cluster, --model and --global-batch (a positive number of sequences)");
  if (options.objective == "goodput" && options.failures_file.empty())
    throw InputError("--objective goodput: expected --failures FILE, the failure rates and checkpoint costs");
  std::vector<std::string> inputs{options.cluster, options.model, options.profile_file, options.calibration_file,
                                  options.device_profile_file, options.failures_file};
  if (!options.out_file.empty())
    check_output(options.out_file, inputs, "--out");
  if (!options.best_file.empty())
    check_output(options.best_file, inputs, "--best");
  check_distinct_outputs({{"--out", options.out_file}, {"--best", options.best_file}});

  const Cluster cluster           = load_cluster(options.cluster);
  const models::Workload given = load_model(options.model, options.seq_len);
  strategies::Problem problem;
  problem.cluster      = &cluster;
  problem.global_batch = options.global_batch;
  problem.dtype = strategies::choose_dtype(options.dtype, "--dtype", cluster, given);
  const models::Workload workload = apply_framework(options.framework, options.autocast, given, problem);
  problem.workload                = &workload;
  if (!strategies::parse_algorithm(options.collective_algorithm, problem.collective_algorithm))
    throw InputError("--collective-algorithm: expected ring, tree, hierarchical or nccl, got '" +
                     options.collective_algorithm + "'");
  apply_memory_options(options.memory_limit, options.workspace, problem);
  if (!options.pytorch.empty()) {
    const auto release = parse_pytorch_release(options.pytorch);
    if (!release)
      throw InputError("--pytorch: expected a PyTorch release \"MAJOR.MINOR\" such as 2.1, got '" +
                       options.pytorch + "'");
    problem.framework.pytorch = *release;
  }

  std::optional<costmodel::Calibration> calibration;
  if (!options.calibration_file.empty()) {
    calibration = costmodel::load_calibration(options.calibration_file);
    report_calibration_match(*calibration, options.calibration_file, cluster);
  }
  print_attention_notes(workload, cluster);
  const int devices = cluster.device_count();
  if (const std::string note = strategies::batch_excludes_data_parallelism(devices, options.global_batch);
      !note.empty())
    std::cerr << "hetsim: note: --global-batch: " << note << '\n';
  std::optional<costmodel::LayerProfile> profile;
  if (!options.profile_file.empty())
    profile = costmodel::load_layer_profile(options.profile_file, workload, cluster);
  std::optional<reliability::FailureModel> failures;
  if (!options.failures_file.empty())
    failures = reliability::load_failure_model(options.failures_file, cluster);
  std::optional<strategies::DeviceProfiles> device_profiles;
  if (!options.device_profile_file.empty())
    device_profiles = strategies::load_device_profiles(options.device_profile_file, workload, cluster);

  strategies::PlannerContext context;
  context.calibration     = calibration ? &*calibration : nullptr;
  context.profile         = profile ? &*profile : nullptr;
  context.device_profiles = device_profiles ? &*device_profiles : nullptr;
  context.seed            = options.seed;
  context.progress        = stderr_progress();
  context.flags           = flags;
  if (options.framework_given) // a framework named is one to launch with: only plans its export writes
    context.cannot_launch = launch_check(cluster, workload, problem.framework.name, options);

  std::cout << "search: planner " << info.name << ", " << workload.name << " on " << cluster.name() << " ("
            << cluster.device_count() << " devices), global batch " << options.global_batch << '\n';
  // A planner's refusal names what it was given; the inputs it came from are the user's to change.
  const std::string given_inputs = " [--cluster " + options.cluster + ", --model " + options.model +
                                   ", --global-batch " + std::to_string(options.global_batch) + "]";
  const auto result = [&] {
    try {
      return strategies::search(*info.make(), problem, context);
    } catch (const InfeasiblePlan& e) {
      throw InfeasiblePlan(e.what() + given_inputs);
    }
  }();

  sim::SimOptions sim_options;
  sim_options.calibration         = context.calibration;
  sim_options.profile             = context.profile;
  sim_options.pipelined_rings     = options.pipelined_rings;
  sim_options.analytic_intra_node = options.analytic_intra_node;
  sim_options.exact               = options.exact;
  const auto rescored             = sim::rescore(result.ranked, options.top_k, problem, sim_options, context.progress);

  // Simulated candidates first, by simulated time (the judge) or, with --objective goodput, by the tokens per
  // second they keep under failures; then the rest by estimate.
  std::vector<std::optional<GoodputFigures>> goodput(rescored.index.size());
  if (failures)
    for (std::size_t k = 0; k < goodput.size(); ++k)
      goodput[k] = goodput_of(*failures, result.ranked[rescored.index[k]].plan, problem, rescored.reports[k]);
  std::vector<std::size_t> order(rescored.index.size());
  for (std::size_t k = 0; k < order.size(); ++k)
    order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (options.objective == "goodput")
      return goodput[a]->goodput.tokens_per_s > goodput[b]->goodput.tokens_per_s;
    return rescored.reports[a].iteration_time_s < rescored.reports[b].iteration_time_s;
  });
  std::vector<Row> rows;
  std::vector<bool> simulated(result.ranked.size(), false);
  for (std::size_t k : order) {
    rows.push_back(Row{&result.ranked[rescored.index[k]], rescored.reports[k], goodput[k], std::nullopt, false, "", ""});
    simulated[rescored.index[k]] = true;
  }
  for (std::size_t i = 0; i < result.ranked.size(); ++i)
    if (!simulated[i])
      rows.push_back(Row{&result.ranked[i], std::nullopt, std::nullopt, std::nullopt, false, "", ""});

  // Each candidate's memory verdict with its margin (a fit within the memory model's error of capacity is at risk).
  for (Row& row : rows) {
    const auto memory                = strategies::plan_memory(row.candidate->plan, problem);
    const strategies::MemoryVerdict v = strategies::memory_verdict(memory);
    row.memory_verdict               = v.name();
    if (v.kind == strategies::MemoryVerdict::Kind::at_risk) {
      char risk[96];
      std::snprintf(risk, sizeof risk, "memory at risk (%.1f%% of dev %d, ", 100 * v.fullest->total_bytes() /
                    v.fullest->capacity_bytes, v.fullest->device);
      row.memory_risk = risk + v.fullest->gpu + ")";
    }
  }
  // Each simulated candidate's band, and whether it reaches the best's: then their measured order may differ.
  const costmodel::ComputeModel compute(context.calibration, context.profile);
  for (Row& row : rows)
    if (row.simulated)
      row.band = strategies::plan_band(row.candidate->plan, problem, compute, row.simulated->iteration_time_s,
                                       sim::exposed_comm_share(*row.simulated));
  if (!rows.empty() && rows.front().band)
    for (std::size_t i = 1; i < rows.size(); ++i)
      rows[i].overlaps_best = rows[i].band && rows[i].candidate->fits() && rows[i].band->low <= rows.front().band->high;

  const std::size_t infeasible = std::count_if(result.ranked.begin(), result.ranked.end(),
                                               [](const strategies::Candidate& c) { return !c.fits(); });
  std::cout << result.proposed << " proposals, " << result.ranked.size() + result.unlaunchable << " distinct, "
            << infeasible << " do not fit in memory; " << rescored.index.size() << " simulated\n";
  if (result.unlaunchable > 0)
    std::cout << result.unlaunchable << " that " << options.framework << " cannot launch left out; the first: "
              << result.first_unlaunchable_reason << '\n';
  if (result.ranked.empty())
    throw InfeasiblePlan("search: planner " + std::string(info.name) + " proposed no plan that " + options.framework +
                         " can launch; the first refused: " + result.first_unlaunchable_reason + given_inputs);
  if (!rescored.too_large.empty())
    std::cout << rescored.too_large.size() << " of the best by estimate are too large to replay and rank by their "
              << "estimate below the simulated ones; the first: " << rescored.too_large.front().second << '\n';
  print_table(rows, static_cast<std::size_t>(std::max(options.top_k, 10)), std::cout);
  if (rows.front().band && rows.front().simulated)
    std::cout << "best's iteration time band: " << rows.front().band->describe(rows.front().simulated->iteration_time_s)
              << '\n';
  if (calibration && !rows.empty())
    print_calibration_confidence(calibration_confidence(*calibration, rows.front().candidate->plan, cluster, workload));

  if (!options.out_file.empty()) {
    nlohmann::json out = nlohmann::json::array();
    for (std::size_t i = 0; i < rows.size(); ++i) {
      out.push_back(row_to_json(rows[i], static_cast<int>(i + 1), info.name));
      if (calibration) // how sure the calibration behind this candidate's figures is
        out.back()["calibration_confidence"] =
            calibration_confidence(*calibration, rows[i].candidate->plan, cluster, workload);
    }
    write_file_atomically(options.out_file, out.dump(1) + "\n");
    std::cout << "candidates written to " << options.out_file << '\n';
  }
  if (!rows.front().candidate->fits()) { // rows is not empty (ranked is not); fitting candidates rank first
    // Then none fits. The fastest may overflow by the whole model; how far the nearest misses says what would help.
    const auto closest = std::min_element(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
      return a.candidate->memory_overflow->over_bytes() < b.candidate->memory_overflow->over_bytes();
    });
    const auto& c = *closest->candidate;
    throw InfeasiblePlan("search: no candidate of planner " + std::string(info.name) +
                         " fits in memory; the closest needs " + overflow_text(c) +
                         strategies::gpu_origin_clause(cluster.device(c.memory_overflow->device).gpu_origin) +
                         given_inputs);
  }
  if (!options.best_file.empty()) {
    write_file_atomically(options.best_file, strategies::plan_to_json(rows.front().candidate->plan).dump(1) + "\n");
    std::cout << "best plan written to " << options.best_file << " (hetsim simulate --plan " << options.best_file
              << ")\n";
  }
  return 0;
}

} // namespace

CommandRunner add_search_command(CLI::App& app)
{
  auto options      = std::make_shared<SearchOptions>();
  CLI::App* command = app.add_subcommand(
      "search", "Search parallelization plans for a cluster, a model and a global batch: a planner proposes plans, "
                "the analytic cost model ranks them, the best --top are re-scored in the SimGrid simulator.");
  command->add_option("--cluster", options->cluster, "cluster JSON file, or preset:NAME");
  command->add_option("--model", options->model, "Hugging Face config.json or layer-list JSON, or preset:NAME");
  command->add_option("--global-batch", options->global_batch, "sequences per iteration")
      ->check(finite_in(1, strategies::kMaxGlobalBatch));
  command->add_option("--planner", options->planner, "planner name (see --list-planners; default amp)");
  command->add_flag("--list-planners", options->list, "print the planners of this build and exit");
  command->add_option("--top", options->top_k, "candidates re-scored in the simulator (default 10)")
      ->check(finite_in(0, 100000));
  add_memory_options(*command, options->memory_limit, options->workspace);
  add_seq_len_option(*command, options->seq_len);
  command->add_option("--dtype", options->dtype, "fp16, bf16 or fp32 (default: the model's torch_dtype, else fp16)");
  command->add_option("--framework", options->framework,
                      "megatron (default), deepspeed, fsdp or megatron-deepspeed: what the candidates run under "
                      "(docs/inputs.md, Frameworks); named, each keeps only plans its export can launch")
      ->each([options](const std::string&) { options->framework_given = true; });
  add_autocast_flag(*command, options->autocast);
  command->add_option("--pytorch", options->pytorch,
                      "the PyTorch release the candidates run with (e.g. 2.1): one older than the GPU's constants "
                      "were measured with widens their band");
  command->add_option("--out", options->out_file, "write every candidate, ranked, as JSON");
  command->add_option("--best", options->best_file, "write the best plan as a plan file for hetsim simulate");
  command->add_option("--profile", options->profile_file, "measured per-layer forward times (JSON)");
  command->add_option("--device-profile", options->device_profile_file,
                      "device profiles measured by `hetsim profile` (max batch and step times per GPU type): "
                      "poplar, deepspeed and whale use them instead of the cost model's");
  command->add_option("--calibration", options->calibration_file, "calibration JSON for the cost model");
  add_failures_option(*command, options->failures_file);
  command->add_option("--objective", options->objective,
                      "what ranks the simulated candidates: time (the iteration, default) or goodput (tokens per "
                      "second kept under --failures: a plan whose checkpoint takes longer ranks lower)")
      ->check(CLI::IsMember({"time", "goodput"}));
  command->add_option("--seed", options->seed, "seed of randomised planners (default 1)");
  command->add_flag("--anneal", options->anneal, "amp: add simulated-annealing placements (AMP section 6.3)");
  command->add_option("--flag", options->flags,
                      "planner switch, repeatable: zero=N (poplar, deepspeed, whale: that ZeRO stage only), pp=N (dtfm, "
                      "dtfm-kl, dtfm-random: that pipeline depth only), anneal (amp, as --anneal); "
                      "--list-planners shows each planner's");
  command->add_option("--collective-algorithm", options->collective_algorithm,
                      "how the candidates' collectives run: ring (default), tree, hierarchical, or nccl (NCCL "
                      "chooses per call, priced by its own tuner)");
  command->add_flag("--pipelined-rings", options->pipelined_rings, "simulate ring phases as pipelined flows");
  command->add_flag("--exact", options->exact,
                    "re-score every device's and every micro-batch's tasks instead of folding identical devices "
                    "and repeating a pipeline's steady state (see hetsim simulate)");
  command->add_flag("--analytic-intra-node", options->analytic_intra_node,
                    "simulate collectives inside one node with the alpha-beta model");
  return [options] { return run_search(*options); };
}

} // namespace hetsim::cli
